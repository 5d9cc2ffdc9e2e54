# SPDX-License-Identifier: GPL-2.0
"""The kunit runs (testbed/kunit.py): each suite must pass."""

import pytest

from testbed import kunit


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
    assert data["_returncode"] == 0, "kunit.py failed (see build/logs)"
