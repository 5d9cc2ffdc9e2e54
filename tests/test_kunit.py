# SPDX-License-Identifier: GPL-2.0
"""The kunit runs (testbed/kunit.py): each suite must pass."""

import pytest

from testbed import kunit

# Cases a run must pass, not skip: a comparison whose reference code stopped
# building would otherwise pass as a skip. (The AMD and Intel drivers'
# comparisons run on the x86_64 debug kernel: scenario x86_64-kunit.)
MUST_RUN = {"um": ("generic_pt_compare.gpt_cmp_arm_test",)}


@pytest.mark.parametrize("run", kunit.CHECK_RUNS)
def test_kunit(run):
    data = kunit.run_one(kunit.RUNS[run])
    suites = kunit.suites(data)
    for suite, status, cases in suites:
        print(f"{run}: {suite}: {status} "
              f"({sum(s == 'PASS' for _, s in cases)}/{len(cases)} cases)")
    assert suites, "kunit ran no suites"
    bad = [f"{s}.{c}" for s, _, cases in suites for c, st in cases
           if st not in ("PASS", "SKIP")]
    assert not bad, f"failed: {bad}"
    status = {f"{s}.{c}": st for s, _, cases in suites for c, st in cases}
    for case in MUST_RUN.get(run, ()):
        # a parameterised case reports each parameter as case.param
        got = {n: st for n, st in status.items() if n == case or n.startswith(case + ".")}
        assert got, f"{case}: did not run"
        assert set(got.values()) == {"PASS"}, f"{case}: {got}"
    assert data["_returncode"] == 0, "kunit.py failed (see build/logs)"
