# SPDX-License-Identifier: GPL-2.0
"""KUnit runs through the tree's own tools/testing/kunit/kunit.py.

Each run is data: an architecture, the .kunitconfig fragments it merges, and
extra options. kunit.py builds out of tree into build/kunit/<run> and writes
its parsed results as JSON, which the pytest layer turns into one test per
suite.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from . import paths
from .shell import StepError, build_lock, run, step


@dataclass(frozen=True)
class KunitRun:
    name: str
    arch: str
    kunitconfigs: tuple[str, ...]       # in the tree, or configs/kunit/...
    kconfig_add: tuple[str, ...] = ()
    cross_compile: str = ""
    timeout_s: int = 900
    in_check: bool = True               # part of `make kunit` / `make check`

    @property
    def build_dir(self) -> Path:
        return paths.BUILD / "kunit" / self.name

    @property
    def json_path(self) -> Path:
        return paths.LOGS / f"kunit-{self.name}.json"


# Options shared by the runs that check memory safety and locking.
DEBUG = ("CONFIG_KASAN=y", "CONFIG_KASAN_GENERIC=y", "CONFIG_PROVE_LOCKING=y",
         "CONFIG_DEBUG_KERNEL=y", "CONFIG_UBSAN=y", "CONFIG_UBSAN_BOUNDS=y")

RUNS = {r.name: r for r in (
    # UML runs at native speed: the bulk of the suites live here.
    KunitRun("um", "um", ("configs/kunit/common.kunitconfig",
                          "drivers/iommu/generic_pt/.kunitconfig",
                          "drivers/iommu/.kunitconfig")),
    # x86_64 under QEMU, for suites that need x86 code (the AMD driver's
    # page table), with KASAN, lockdep and UBSAN on. `make check` runs these
    # suites on its x86_64 debug kernel instead (the x86_64-kunit scenario),
    # which saves a kernel build; `make kunit K=x86_64` still runs this.
    KunitRun("x86_64", "x86_64", ("configs/kunit/common.kunitconfig",
                                  "drivers/iommu/generic_pt/.kunitconfig",
                                  "drivers/iommu/.kunitconfig",
                                  "configs/kunit/x86_64.kunitconfig"),
             kconfig_add=DEBUG, in_check=False),
    # `make bench-pt`: no debug options, which would weigh unevenly on the
    # two sides. ARMv8 against io-pgtable-arm at native speed on UML; AMD v1
    # against the AMD driver's page table on x86_64.
    KunitRun("bench-um", "um", ("configs/kunit/bench-pt.kunitconfig",),
             in_check=False),
    KunitRun("bench-x86_64", "x86_64", ("configs/kunit/bench-pt.kunitconfig",
                                        "configs/kunit/x86_64.kunitconfig"),
             in_check=False, timeout_s=1800),
)}

CHECK_RUNS = [name for name, r in RUNS.items() if r.in_check]


def _resolve(cfg: str) -> Path:
    """A kunitconfig named relative to the project, else to the tree."""
    here = paths.ROOT / cfg
    return here if here.exists() else paths.TREE / cfg


def command(r: KunitRun) -> list[str]:
    cmd = [sys.executable, "tools/testing/kunit/kunit.py", "run",
           f"--arch={r.arch}", f"--build_dir={r.build_dir}",
           f"--jobs={os.cpu_count() or 2}", f"--timeout={r.timeout_s}",
           f"--json={r.json_path}"]
    for cfg in r.kunitconfigs:
        path = _resolve(cfg)
        if path.exists():
            cmd.append(f"--kunitconfig={path}")
    cmd += [f"--kconfig_add={opt}" for opt in r.kconfig_add]
    if r.cross_compile:
        cmd.append(f"--cross_compile={r.cross_compile}")
    if shutil.which("ccache") and r.arch != "um":
        cmd.append(f"--make_options=CC=ccache {r.cross_compile}gcc")
    return cmd


def test_log(r: KunitRun) -> Path:
    """The kernel's raw output of the last run (kunit.py keeps it there)."""
    return r.build_dir / "test.log"


def run_one(r: KunitRun) -> dict:
    """Build and run one kunit configuration; return kunit.py's JSON results."""
    r.build_dir.mkdir(parents=True, exist_ok=True)
    r.json_path.unlink(missing_ok=True)
    log = paths.LOGS / f"kunit-{r.name}.log"
    with step(f"kunit {r.name}"), build_lock(paths.BUILD_LOCK):
        res = run(command(r), cwd=paths.TREE, log=log, check=False)
    if not r.json_path.exists():
        raise StepError(f"kunit {r.name} produced no results (log: {log})")
    data = json.loads(r.json_path.read_text())
    data["_returncode"] = res.returncode
    return data


def suites(data: dict) -> list[tuple[str, str, list[tuple[str, str]]]]:
    """(suite, status, [(case, status)]) for every suite in kunit.py's JSON.

    kunit.py records a status per case only; a suite fails when one of its
    cases did not pass or skip, and is skipped when all of them skipped.
    """
    out = []

    def cases_of(group: dict, prefix: str = "") -> list[tuple[str, str]]:
        cases = [(prefix + c["name"], c["status"]) for c in group.get("test_cases", [])]
        for sub in group.get("sub_groups", []):
            cases += cases_of(sub, f"{prefix}{sub['name']}.")
        return cases

    for suite in data.get("sub_groups", []):
        cases = cases_of(suite)
        statuses = {st for _, st in cases}
        if statuses - {"PASS", "SKIP"} or not cases:
            status = "FAIL"
        elif statuses == {"SKIP"}:
            status = "SKIP"
        else:
            status = "PASS"
        out.append((suite["name"], status, cases))
    return out


def run_all(names: list[str] | None = None) -> bool:
    ok = True
    for name in names or CHECK_RUNS:
        if name not in RUNS:
            raise StepError(f"unknown kunit run {name!r} (known: {', '.join(RUNS)})")
        data = run_one(RUNS[name])
        for suite, status, cases in suites(data):
            npass = sum(1 for _, s in cases if s == "PASS")
            print(f"kunit {name}: {suite}: {status} ({npass}/{len(cases)} cases)")
            ok &= status in ("PASS", "SKIP")
        ok &= data["_returncode"] == 0
    return ok
