# SPDX-License-Identifier: GPL-2.0
"""The series builds after each patch: every commit of build/tree, built in turn.

A reviewer bisecting a regression lands on any patch of the series, so each
must build, not only the last. `make check-bisect` checks out every commit
after `base` into a worktree of build/tree (build/tree-bisect, so build/tree
stays as it is) and, for each, builds two kernels into O= directories of
their own and compiles the selftests the commit has:

- x86_64: the x86_64 target's fragments plus the KUnit suites (kunit.config),
  so the tests of generic_pt and of the virtio-iommu driver build too;
- arm64: the arm64 target (SMMUv3 and its KUnit suite, the GIC's MSI for
  virtio-mmio);
- both with configs/bisect.config: generic_pt and its formats on from the
  patch that adds them (otherwise nothing selects them before the first
  driver that uses them), and its KUnit benchmark.

One commit after another in the same O= directory, so make rebuilds what
the commit changed and what depends on it. The configuration is made again
for each commit from the fragments; a symbol a later patch adds is simply
absent before it (Kconfig warns, the build goes on). A compiler warning
fails the commit as an error does: the finished series is W=1 clean
(`make lint`), so a warning on the way is a patch that leaves something
half done (a function used only by a later patch, say).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import paths
from .initramfs import COMPILER, PROGRAMS
from .kernel import fragment_text, make_args, TARGETS, Target
from .shell import StepError, build_lock, run, step

TREE_BISECT = paths.BUILD / "tree-bisect"
LOGS = paths.LOGS / "bisect"


@dataclass(frozen=True)
class BisectTarget(Target):
    """A kernel target built from build/tree-bisect into its own O= directory."""

    @property
    def source(self) -> Path:
        return TREE_BISECT

    @property
    def outdir(self) -> Path:
        return paths.KBUILD / f"bisect-{self.name}"


def _targets() -> list[BisectTarget]:
    x86, arm = TARGETS["x86_64"], TARGETS["arm64"]
    return [
        BisectTarget(x86.name, x86.arch,
                     x86.fragments + ("kunit.config", "bisect.config"),
                     x86.image, x86.cross),
        BisectTarget(arm.name, arm.arch, arm.fragments + ("bisect.config",),
                     arm.image, arm.cross),
    ]


# A compiler's or the linker's warning, not make's or Kconfig's.
WARNING = re.compile(r"^\S+:\d+(:\d+)?: warning: |^WARNING: modpost: ", re.M)


def _git(*args: str) -> str:
    return subprocess.run(["git", "-C", str(paths.TREE), *args], check=True,
                          text=True, stdout=subprocess.PIPE).stdout


def worktree() -> Path:
    """build/tree-bisect, a detached worktree of build/tree."""
    probe = subprocess.run(["git", "-C", str(TREE_BISECT), "rev-parse", "HEAD"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if TREE_BISECT.exists() and probe.returncode == 0:
        return TREE_BISECT
    if TREE_BISECT.exists():
        shutil.rmtree(TREE_BISECT)      # its build/tree was made again
    run(["git", "-C", paths.TREE, "worktree", "prune"], quiet=True)
    run(["git", "-C", paths.TREE, "worktree", "add", "-q", "--detach",
         TREE_BISECT, "base"])
    return TREE_BISECT


def _build(t: BisectTarget, label: str) -> list[str]:
    """Configure and build @t at the worktree's commit; its warnings."""
    t.outdir.mkdir(parents=True, exist_ok=True)
    frag = t.outdir / "tb-fragment.config"
    frag.write_text(fragment_text(t))
    log = LOGS / f"{label}-{t.name}.log"
    run(make_args(t) + [f"KCONFIG_ALLCONFIG={frag}", "allnoconfig"],
        log=LOGS / f"{label}-{t.name}-config.log")
    run(make_args(t) + [Path(t.image).name, "modules"], log=log)
    return warnings(log.read_text(errors="replace"))


def warnings(build_log: str) -> list[str]:
    """The compiler's and modpost's warnings in a kernel build's output."""
    return [line for line in build_log.splitlines() if WARNING.match(line)]


def _selftests(t: BisectTarget, label: str) -> None:
    """Compile the selftests the commit has against its uAPI headers."""
    run(make_args(t) + ["headers"], log=LOGS / f"{label}-{t.name}-headers.log")
    for src, _name, kernel_include in PROGRAMS:
        if not (t.source / src).exists():
            continue
        inc = [f"-I{t.headers}"] + ([f"-I{t.source}/include"] if kernel_include else [])
        run([COMPILER[t.arch], "-fsyntax-only", "-Wall", "-Werror",
             "-Wno-unused-function", *inc, t.source / src], quiet=True)


def check(first: int = 1) -> None:
    """Build every commit after base from the @first-th; fail on the first bad one."""
    commits = _git("rev-list", "--reverse", "base..HEAD").split()
    if not commits:
        raise StepError("build/tree has no commits after base")
    wt = worktree()
    LOGS.mkdir(parents=True, exist_ok=True)
    targets = _targets()
    with build_lock(paths.BUILD_LOCK):
        for n, sha in enumerate(commits, 1):
            if n < first:
                continue
            subject = _git("log", "-1", "--format=%s", sha).strip()
            label = f"{n:04d}"
            with step(f"bisect {label} {subject}"):
                run(["git", "-C", wt, "checkout", "-q", "-f", "--detach", sha])
                for t in targets:
                    found = _build(t, label)
                    if found:
                        raise StepError(f"patch {label} ({t.name}) builds with "
                                        "warnings:\n  " + "\n  ".join(found))
                _selftests(targets[0], label)
    print(f"bisect: patches {first}-{len(commits)} of {len(commits)} build "
          "(x86_64 with KUnit, arm64, the selftests)")
