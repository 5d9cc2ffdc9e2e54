# SPDX-License-Identifier: GPL-2.0
"""pytest glue: the test bed is importable, and a scenario boots once per run."""

import functools
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from testbed import boot  # noqa: E402


@functools.lru_cache(maxsize=None)
def booted(name: str) -> "boot.Result":
    """Boot scenario @name once, however many tests ask for its results."""
    result = boot.run_scenario(name)
    print(result.summary())
    return result
