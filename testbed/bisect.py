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
the commit changed and what depends on it (the commit before the first
checked is built first, unchecked, so that each log shows what its commit
made kbuild compile). The configuration is made again
for each commit from the fragments; a symbol a later patch adds is simply
absent before it (Kconfig warns, the build goes on). A compiler warning
fails the commit as an error does: the finished series is W=1 clean
(`make lint`), so a warning on the way is a patch that leaves something
half done (a function used only by a later patch, say). So does a C file
the commit changes that neither kernel compiled: a patch must compile
what it brings, not leave it to the patch whose driver first selects it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from . import paths
from .initramfs import COMPILER, PROGRAMS
from .kernel import fragment_text, make_args, worktree_at, TARGETS, Target
from .shell import StepError, build_lock, run, step
from .tree import git

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


# A C file kbuild compiled: "  CC      path/x.o" or "  CC [M]  path/x.o"
COMPILED = re.compile(r"^\s+CC(?: \[M\])?\s+(\S+)\.o$", re.M)


def compiled(build_log: str) -> set[str]:
    """The C files (tree paths) a kernel build's output says it compiled."""
    return {m.group(1) + ".c" for m in COMPILED.finditer(build_log)}


def uncompiled(changed: list[str], built: set[str], tree: Path) -> list[str]:
    """The kernel C files of @changed that no build compiled.

    A file another compiled file of its folder includes (a test suite
    built into its driver, say) counts as compiled with it.
    """
    missing = []
    for rel in changed:
        if not rel.endswith(".c") or rel.startswith(("tools/", "scripts/")) or rel in built:
            continue
        folder, name = rel.rpartition("/")[0], rel.rpartition("/")[2]
        include = re.compile(rf'^#include\s+"{re.escape(name)}"', re.M)
        if not any(b.rpartition("/")[0] == folder and
                   include.search((tree / b).read_text(errors="replace"))
                   for b in built):
            missing.append(rel)
    return missing


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
    commits = git("rev-list", "--reverse", "base..HEAD").split()
    if not commits:
        raise StepError("build/tree has no commits after base")
    wt = worktree_at(TREE_BISECT, "base")
    LOGS.mkdir(parents=True, exist_ok=True)
    targets = _targets()
    with build_lock(paths.BUILD_LOCK):
        # The commit before the first one checked, built unchecked: each
        # commit's build log then shows what that commit made kbuild
        # compile, whatever the O= directories held before.
        before = commits[first - 2] if first > 1 else "base"
        with step(f"bisect: start from {'patch %04d' % (first - 1) if first > 1 else 'base'}"):
            run(["git", "-C", wt, "checkout", "-q", "-f", "--detach", before])
            for t in targets:
                _build(t, "start")
        for n, sha in enumerate(commits, 1):
            if n < first:
                continue
            subject = git("log", "-1", "--format=%s", sha).strip()
            label = f"{n:04d}"
            with step(f"bisect {label} {subject}"):
                run(["git", "-C", wt, "checkout", "-q", "-f", "--detach", sha])
                built: set[str] = set()
                for t in targets:
                    found = _build(t, label)
                    if found:
                        raise StepError(f"patch {label} ({t.name}) builds with "
                                        "warnings:\n  " + "\n  ".join(found))
                    built |= compiled((LOGS / f"{label}-{t.name}.log").read_text(
                        errors="replace"))
                changed = git("diff-tree", "--no-commit-id", "-r", "--name-only",
                               "--diff-filter=AM", sha).split()
                missing = uncompiled(changed, built, wt)
                if missing:
                    raise StepError(f"patch {label} changes C files that neither "
                                    "kernel compiled (turn them on in "
                                    "configs/bisect.config): " + ", ".join(missing))
                _selftests(targets[0], label)
    print(f"bisect: patches {first}-{len(commits)} of {len(commits)} build "
          "(x86_64 with KUnit, arm64, the selftests)")
