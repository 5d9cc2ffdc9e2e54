# SPDX-License-Identifier: GPL-2.0
"""Every boot scenario: one test per guest step, one for the boot as a whole."""

import pytest

from conftest import booted
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
