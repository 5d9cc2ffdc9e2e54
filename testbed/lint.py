# SPDX-License-Identifier: GPL-2.0
"""The lint gate: checkpatch --strict over the series, sparse (C=2) and W=1
over every kernel C file the series adds or touches.

A checkpatch warning is either fixed or explained in configs/checkpatch-allow
(one line each: patch-name-glob, checkpatch type, reason). A compiler or
sparse message fails the gate when it points at a line the series added.
"""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from . import paths, tree
from .kernel import TARGETS, make_args
from .shell import output

ALLOW = paths.CONFIGS / "checkpatch-allow"
CP_MSG = re.compile(r"^(ERROR|WARNING|CHECK):([A-Z_0-9]+): (.*)$")
# Files only an arm64 kernel compiles (UML's build cannot)
ARM64_ONLY = ("arch/arm64/", "drivers/iommu/arm/", "drivers/irqchip/")
CC_MSG = re.compile(r"^([^\s:]+\.[ch]):(\d+):(?:\d+:)? (warning|error|.*?)[: ](.*)$")


@dataclass
class Finding:
    where: str
    kind: str
    text: str
    allowed_because: str = ""


@dataclass
class Report:
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if not f.allowed_because]


def _allowlist() -> list[tuple[str, str, str]]:
    rules = []
    if ALLOW.exists():
        for line in ALLOW.read_text().splitlines():
            line = line.strip()
            if line and not line.startswith("#"):
                glob, kind, reason = line.split(None, 2)
                rules.append((glob, kind, reason))
    return rules


def _checkpatch_one(patch: Path) -> str:
    res = subprocess.run(["perl", "scripts/checkpatch.pl", "--strict",
                          "--show-types", "--no-summary", "--color=never", str(patch)],
                         cwd=paths.TREE, text=True, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT)
    return res.stdout


def checkpatch(patches: list[Path]) -> Report:
    """checkpatch --strict over @patches, one perl per CPU at a time: over
    the whole series it is about two minutes of a single core."""
    rep = Report()
    rules = _allowlist()
    patches = [p for p in patches if not p.name.startswith("0000-")]
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        outputs = list(pool.map(_checkpatch_one, patches))
    for p, out in zip(patches, outputs):
        for line in out.splitlines():
            m = CP_MSG.match(line)
            if not m:
                continue
            level, kind, text = m.groups()
            f = Finding(p.name, f"{level}:{kind}", text)
            if level != "ERROR":
                for glob, allowed, reason in rules:
                    if fnmatch.fnmatch(p.name, glob) and allowed == kind:
                        f.allowed_because = reason
            rep.findings.append(f)
        rep.notes.append(f"checkpatch: {p.name}")
    return rep


def added_lines() -> dict[str, set[int]]:
    """Per C file the series touches, the line numbers it added (new side)."""
    diff = output(["git", "-C", paths.TREE, "diff", "-U0", "base..HEAD", "--",
                   "*.c", "*.h"])
    lines: dict[str, set[int]] = {}
    current = None
    for line in diff.splitlines():
        if line.startswith("+++ "):
            current = line[6:] if line.startswith("+++ b/") else None
            if current:
                lines.setdefault(current, set())
        elif line.startswith("@@") and current:
            m = re.search(r"\+(\d+)(?:,(\d+))?", line)
            start, count = int(m.group(1)), int(m.group(2) or 1)
            lines[current].update(range(start, start + count))
    return lines


def _um_kunit_args() -> list[str] | None:
    """make arguments for the UML kunit build, if it has been configured."""
    from .kunit import RUNS
    outdir = RUNS["um"].build_dir
    if not (outdir / ".config").exists():
        return None
    return ["make", "-C", str(paths.TREE), f"O={outdir}", "ARCH=um",
            f"-j{os.cpu_count() or 2}"]


def includer(f: str, tree: Path | None = None) -> str:
    """The file that compiles @f: the .c file of its directory that
    #includes it (a test built into its driver, as ext4's mballoc.c
    includes its test), else @f itself. Such a file is no object of its own."""
    tree = tree or paths.TREE
    name = Path(f).name
    needle = f'#include "{name}"'
    for c in sorted((tree / f).parent.glob("*.c")):
        if c.name != name and needle in c.read_text(errors="replace"):
            return str(c.relative_to(tree))
    return f


def _kernel_objects(files: list[str]) -> dict[str, list[str]]:
    """Which build compiles each touched .c file.

    The first kernel target whose build has the object; else the UML kunit
    build, which compiles a single object even when its configuration does
    not select it (tests, benchmarks, code no target enables yet).
    """
    plan: dict[str, list[str]] = {}
    um = _um_kunit_args()
    for f in files:
        if not f.endswith(".c") or f.startswith(("tools/", "scripts/", "samples/")):
            continue
        obj = includer(f)[:-2] + ".o"
        if any(obj in objs for objs in plan.values()):
            continue
        for name in ("x86_64", "arm64"):
            d, base = Path(obj).parent, Path(obj).name
            if (TARGETS[name].outdir / d / f".{base}.cmd").exists():
                plan.setdefault(name, []).append(obj)
                break
        else:
            if f.startswith(ARM64_ONLY):
                # make check builds no arm64 kernel; make check-full does
                plan.setdefault("", []).append(f"{f} (arm64 only, no arm64 build)")
                continue
            plan.setdefault("kunit-um" if um else "", []).append(
                obj if um else f)
    return plan


def compile_checks() -> Report:
    rep = Report()
    touched = added_lines()
    plan = _kernel_objects(sorted(touched))
    for f in plan.pop("", []):
        rep.notes.append(f"not built by any kernel target, not compiled: {f}")
    for name, objs in plan.items():
        args = _um_kunit_args() if name == "kunit-um" else make_args(TARGETS[name])
        res = subprocess.run(args + ["W=1", "C=2", *objs], text=True,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        for line in res.stdout.splitlines():
            m = CC_MSG.match(line)
            if not m:
                continue
            path, lineno = m.group(1), int(m.group(2))
            path = path.split(str(paths.TREE) + "/")[-1]
            if lineno in touched.get(path, set()):
                rep.findings.append(Finding(f"{path}:{lineno}", "compile", line))
        if res.returncode:
            rep.findings.append(Finding(name, "build", "W=1 C=2 build failed"))
        rep.notes.append(f"W=1 C=2 ({name}): {' '.join(objs)}")
    return rep


def run_all() -> bool:
    tree.assemble()
    patches = tree.format_series()
    reports = [checkpatch(patches), compile_checks()]
    ok = True
    for rep in reports:
        for note in rep.notes:
            print(f"lint: {note}")
        for f in rep.findings:
            if f.allowed_because:
                print(f"lint: allowed {f.where}: {f.kind}: {f.text} "
                      f"({f.allowed_because})")
            else:
                print(f"lint: FAIL {f.where}: {f.kind}: {f.text}")
                ok = False
    print(f"lint: {'clean' if ok else 'FAILED'}")
    return ok
