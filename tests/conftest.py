# SPDX-License-Identifier: GPL-2.0
"""pytest glue: the test bed is importable, and a scenario boots once per run,
ahead of its tests and beside other boots (testbed/boot_pool.py)."""

import functools
import sys
import threading
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from testbed import boot, boot_pool, nested  # noqa: E402
from testbed.scenarios import SCENARIOS  # noqa: E402

POOL = boot_pool.BootPool(boot_pool.default_jobs())
# The nested boots start when the first nested test asks: the tests between
# (KUnit's and the lint's builds) keep the CPUs busy themselves.
_NESTED_JOBS = []
_NESTED_PLANNED = threading.Event()
_SHOWN = set()


def _result(key, fn):
    """A planned boot's result; its summary printed once, in the test that
    first reads it (pytest shows it with that test's output)."""
    result = POOL.result(key, fn)
    if key not in _SHOWN:
        _SHOWN.add(key)
        print(result.summary())
    return result


def booted(name: str) -> "boot.Result":
    """Scenario @name's boot, once, however many tests ask for its results."""
    return _result(("boot", name), functools.partial(boot.run_scenario, name))


def nested_booted(name: str) -> "nested.NestedResult":
    """Nested scenario @name's boot, once."""
    if not _NESTED_PLANNED.is_set():
        _NESTED_PLANNED.set()
        POOL.plan(_NESTED_JOBS)
    return _result(("nested", name), functools.partial(nested.run, name))


def pytest_collection_finish(session):
    """Plan every boot the collected tests read, in their order."""
    jobs = []
    for item in session.items:
        params = getattr(getattr(item, "callspec", None), "params", {})
        name = params.get("scenario")
        if not name:
            continue
        if item.module.__name__.endswith("test_nested"):
            # L1 runs L2 under TCG: about 1.2 host CPUs a boot (measured
            # 2026-12-07), so two side by side still gain
            _NESTED_JOBS.append((("nested", name), functools.partial(nested.run, name),
                                 False))
        elif name in SCENARIOS:
            jobs.append((("boot", name), functools.partial(boot.run_scenario, name),
                         SCENARIOS[name].solo))
    if jobs:
        POOL.plan(jobs)
