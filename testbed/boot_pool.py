# SPDX-License-Identifier: GPL-2.0
"""Boots run ahead of the tests that read them, several at once.

A boot under TCG keeps about one host CPU busy for most of its time (a
guest's second vCPU idles), so on a machine with two CPUs two boots side
by side take not much longer than one. `make check` boots every scenario
once, in the order its tests ask for them: this pool starts them in that
order, TB_BOOT_JOBS at a time (default: the CPUs, at most 2), and a test
waits only for the boot it reads.

A boot whose checks time the guest's vCPUs against each other takes every
slot (solo): its timings then stay what they are on an idle host. The
nested boots (about 1.2 CPUs each) and the debug kernel's (about one)
share the machine like the others.
"""

from __future__ import annotations

import os
import threading
from typing import Callable, Hashable


def default_jobs() -> int:
    """TB_BOOT_JOBS, or the host's CPUs (at most 2: the test bed's machines)."""
    env = os.environ.get("TB_BOOT_JOBS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return max(1, min(2, os.cpu_count() or 1))


class BootPool:
    """Runs planned jobs in order, @jobs slots at a time; result() waits for one."""

    def __init__(self, jobs: int):
        self.jobs = jobs
        self._cond = threading.Condition()
        self._free = jobs
        self._results: dict[Hashable, object] = {}
        self._errors: dict[Hashable, BaseException] = {}
        self._planned: dict[Hashable, tuple[Callable[[], object], int]] = {}

    def plan(self, jobs: list[tuple[Hashable, Callable[[], object], bool]]) -> None:
        """Start @jobs, (key, function, solo) in the order given, in the background."""
        order = []
        for key, fn, solo in jobs:
            if key not in self._planned:
                self._planned[key] = (fn, self.jobs if solo else 1)
                order.append(key)
        threading.Thread(target=self._dispatch, args=(order,), daemon=True).start()

    def _dispatch(self, order: list[Hashable]) -> None:
        for key in order:
            fn, slots = self._planned[key]
            with self._cond:
                self._cond.wait_for(lambda: self._free >= slots)
                self._free -= slots
            threading.Thread(target=self._run, args=(key, fn, slots),
                             daemon=True).start()

    def _run(self, key: Hashable, fn: Callable[[], object], slots: int) -> None:
        try:
            value = fn()
            error = None
        except BaseException as exc:    # handed to the test that asks
            value, error = None, exc
        with self._cond:
            if error is None:
                self._results[key] = value
            else:
                self._errors[key] = error
            self._free += slots
            self._cond.notify_all()

    def result(self, key: Hashable, fn: Callable[[], object]) -> object:
        """The planned job's result, waited for; an unplanned one runs here."""
        if key not in self._planned:
            self._planned[key] = (fn, 0)
            try:
                self._results[key] = fn()
            except BaseException as exc:
                self._errors[key] = exc
        with self._cond:
            self._cond.wait_for(lambda: key in self._results or key in self._errors)
            if key in self._errors:
                raise self._errors[key]
            return self._results[key]
