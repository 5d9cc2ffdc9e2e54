# SPDX-License-Identifier: GPL-2.0
"""make lint: checkpatch --strict, sparse and W=1 over the series."""

from testbed import lint


def test_lint_gate():
    assert lint.run_all(), "lint found problems (see the output above)"
