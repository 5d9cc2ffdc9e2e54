# SPDX-License-Identifier: GPL-2.0
"""Running commands: one place that logs what runs and how long each step took."""

from __future__ import annotations

import fcntl
import shlex
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Sequence


class StepError(RuntimeError):
    """A command the test bed depends on failed."""


def run(cmd: Sequence[str | Path], cwd: Path | None = None, quiet: bool = False,
        check: bool = True, env: dict | None = None,
        log: Path | None = None) -> subprocess.CompletedProcess:
    """Run @cmd; with @log, send its output there instead of the terminal."""
    argv = [str(c) for c in cmd]
    if not quiet:
        print("  $ " + shlex.join(argv), file=sys.stderr, flush=True)
    if log:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "wb") as f:
            res = subprocess.run(argv, cwd=cwd, env=env, stdout=f,
                                 stderr=subprocess.STDOUT)
    else:
        res = subprocess.run(argv, cwd=cwd, env=env)
    if check and res.returncode:
        where = f" (log: {log})" if log else ""
        raise StepError(f"{argv[0]} failed with status {res.returncode}{where}")
    return res


def output(cmd: Sequence[str | Path], cwd: Path | None = None,
           check: bool = True, env: dict | None = None) -> str:
    """Run @cmd and return its standard output as text."""
    res = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, text=True,
                         stdout=subprocess.PIPE)
    if check and res.returncode:
        raise StepError(f"{cmd[0]} failed with status {res.returncode}")
    return res.stdout


@contextmanager
def step(name: str) -> Iterator[None]:
    """Announce a build step and how long it took."""
    print(f"==> {name}", file=sys.stderr, flush=True)
    t0 = time.monotonic()
    try:
        yield
    finally:
        print(f"<== {name} ({time.monotonic() - t0:.0f} s)", file=sys.stderr,
              flush=True)


@contextmanager
def build_lock(lockfile: Path) -> Iterator[None]:
    """Serialise kernel builds: two at once on two cores only slow each other."""
    lockfile.parent.mkdir(parents=True, exist_ok=True)
    with open(lockfile, "w") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
