# SPDX-License-Identifier: GPL-2.0
"""Every boot scenario: one test per guest step, one for the boot as a whole."""

import pytest

from conftest import booted
from testbed import budgets
from testbed.scenarios import selected

# `make check`: every scenario not marked full_only; `make check-full`
# (TB_FULL=1): all of them.
SCENARIOS = selected()
STEPS = [(sc.name, step) for sc in SCENARIOS.values() for step in sc.steps]


@pytest.mark.parametrize("scenario,step", STEPS, ids=[f"{s}/{t}" for s, t in STEPS])
def test_step(scenario, step):
    result = booted(scenario)
    got = result.console.steps.get(step)
    assert got is not None, f"{step} did not run ({result.log})"
    failed = got.failures()
    assert not failed, f"{step}: failed {failed} (log {result.log})"
    assert got.cases, f"{step} reported no results (log {result.log})"
    assert not got.skipped, f"{step}: every case skipped (log {result.log})"
    assert got.exit_status == 0, f"{step} exited {got.exit_status} ({result.log})"


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_boot_is_clean(scenario):
    """Booted, finished, in time, no kernel report, host-side checks pass."""
    result = booted(scenario)
    assert not result.problems(), "; ".join(result.problems())


@pytest.mark.parametrize("scenario", list(SCENARIOS))
def test_boot_within_budget(scenario):
    """The boot's CPU time is within SLACK times its budget (testbed/budgets.py)."""
    want = budgets.budget(scenario)
    assert want, f"{scenario} declares no budget in testbed/budgets.py"
    result = booted(scenario)
    assert result.cpu_seconds <= budgets.SLACK * want, (
        f"{result.cpu_seconds:.0f} s of CPU, budget {want} s (x{budgets.SLACK}): "
        "measure again and update testbed/budgets.py, or make the boot cheaper")
