# SPDX-License-Identifier: GPL-2.0
"""Kernel targets: which fragments make each config, and the O= builds of build/tree."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import paths
from .shell import StepError, build_lock, output, run, step


@dataclass(frozen=True)
class Target:
    name: str
    arch: str                      # kernel ARCH=
    fragments: tuple[str, ...]     # files in configs/, applied over allnoconfig
    image: str                     # path of the boot image inside the O= directory
    cross: str = ""                # CROSS_COMPILE=
    stock: bool = False            # built from TREE_STOCK (6.12's virtio-iommu)

    @property
    def source(self) -> Path:
        return paths.TREE_STOCK if self.stock else paths.TREE

    @property
    def outdir(self) -> Path:
        return paths.kbuild_dir(self.name)

    @property
    def image_path(self) -> Path:
        return self.outdir / self.image

    @property
    def modules_root(self) -> Path:
        return self.outdir / "modroot"

    @property
    def headers(self) -> Path:
        return self.outdir / "usr" / "include"


TARGETS = {t.name: t for t in (
    Target("x86_64", "x86", ("common.config", "x86_64.config", "vhost-iommu.config"),
           "arch/x86/boot/bzImage"),
    # Also the kernel of the KUnit suites (the x86_64-kunit scenario)
    Target("x86_64-debug", "x86",
           ("common.config", "x86_64.config", "vhost-iommu.config", "debug.config",
            "kunit.config"),
           "arch/x86/boot/bzImage"),
    # With the KUnit suite that needs a live SMMUv3 (the arm64-smmuv3
    # scenario runs it)
    Target("arm64", "arm64", ("common.config", "arm64.config", "arm64-kunit.config",
                              "vhost-iommu.config"),
           "arch/arm64/boot/Image", cross="aarch64-linux-gnu-"),
    # The SMMUv3 stress scenario's kernel (KASAN, lockdep, UBSAN, ...)
    Target("arm64-debug", "arm64", ("common.config", "arm64.config", "debug.config"),
           "arch/arm64/boot/Image", cross="aarch64-linux-gnu-"),
    # 16 and 64 KiB pages: SMMUv3 then walks generic_pt's ARMv8 tables of
    # that granule
    Target("arm64-16k", "arm64", ("common.config", "arm64.config", "arm64-16k.config"),
           "arch/arm64/boot/Image", cross="aarch64-linux-gnu-"),
    Target("arm64-64k", "arm64", ("common.config", "arm64.config", "arm64-64k.config"),
           "arch/arm64/boot/Image", cross="aarch64-linux-gnu-"),
    # The 6.12 virtio-iommu driver, for `make bench-viommu` only (see stock_tree).
    Target("x86_64-stock", "x86", ("common.config", "x86_64.config"),
           "arch/x86/boot/bzImage", stock=True),
)}



def default_targets() -> tuple[str, ...]:
    """The targets `make check` boots (`make check-full`'s with TB_FULL=1)."""
    from .scenarios import check_kernels
    return check_kernels()


def make_args(t: Target) -> list[str]:
    args = ["make", "-C", str(t.source), f"O={t.outdir}", f"ARCH={t.arch}",
            f"-j{os.cpu_count() or 2}"]
    if t.cross:
        args.append(f"CROSS_COMPILE={t.cross}")
    if shutil.which("ccache"):
        args += [f"CC=ccache {t.cross}gcc", "HOSTCC=ccache gcc"]
    # Reproducible version strings keep ccache hits across rebuilds.
    args += ["KBUILD_BUILD_USER=tb", "KBUILD_BUILD_HOST=tb",
             "KBUILD_BUILD_TIMESTAMP=2000-01-01"]
    return args


def fragment_text(t: Target) -> str:
    return "".join((paths.CONFIGS / f).read_text() for f in t.fragments)


def wanted_symbols(text: str) -> dict[str, str]:
    want = {}
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("CONFIG_") and "=" in line:
            key, val = line.split("=", 1)
            want[key] = val
        elif line.startswith("# CONFIG_") and line.endswith(" is not set"):
            want[line[2:-len(" is not set")]] = "n"
    return want


def configure(t: Target) -> None:
    """allnoconfig plus the target's fragments; fail if Kconfig dropped a symbol."""
    text = fragment_text(t)
    digest = hashlib.sha256(text.encode()).hexdigest()
    stamp = t.outdir / ".tb-config"
    config = t.outdir / ".config"
    if config.exists() and stamp.exists() and stamp.read_text() == digest:
        return
    t.outdir.mkdir(parents=True, exist_ok=True)
    frag = t.outdir / "tb-fragment.config"
    frag.write_text(text)
    run(make_args(t) + [f"KCONFIG_ALLCONFIG={frag}", "allnoconfig"],
        log=paths.LOGS / f"config-{t.name}.log")
    have = {}
    for line in config.read_text().splitlines():
        if line.startswith("CONFIG_"):
            key, val = line.split("=", 1)
            have[key] = val
    missing = [f"{k}={v} (got {have.get(k, 'n')})"
               for k, v in wanted_symbols(text).items() if have.get(k, "n") != v]
    if missing:
        raise StepError(f"{t.name}: Kconfig did not take: " + ", ".join(missing))
    stamp.write_text(digest)


# Files our guest driver replaces: the stock tree stops before the first
# patch that touches them.
DRIVER_FILES = ("drivers/iommu/virtio-iommu.c", "include/uapi/linux/virtio_iommu.h")


def stock_commit() -> str:
    """The commit of build/tree just before the series touches DRIVER_FILES."""
    tree = str(paths.TREE)
    first = output(["git", "-C", tree, "rev-list", "--reverse", "base..HEAD",
                    "--", *DRIVER_FILES]).split()
    if not first:
        raise StepError("no commit after base touches the virtio-iommu driver")
    return output(["git", "-C", tree, "rev-parse", f"{first[0]}^"]).strip()


def stock_tree() -> Path:
    """build/tree-stock: a git worktree of build/tree at stock_commit().

    It has the series' patches before our driver (the VFIO selftest and
    generic_pt, which the 6.12 driver does not use) and 6.12's
    virtio-iommu.c. It follows build/tree: a re-assembled tree moves it to
    the new commit; a tree made from scratch gets a new worktree.
    """
    return worktree_at(paths.TREE_STOCK, stock_commit())


def worktree_at(wt: Path, sha: str) -> Path:
    """@wt, a detached git worktree of build/tree, checked out at @sha.

    A worktree whose build/tree was made again from scratch is made anew.
    """
    head = subprocess.run(["git", "-C", str(wt), "rev-parse", "HEAD"], text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    if wt.exists() and head.returncode == 0:
        if head.stdout.strip() != sha:
            run(["git", "-C", wt, "checkout", "-q", "-f", "--detach", sha])
        return wt
    if wt.exists():
        shutil.rmtree(wt)
    run(["git", "-C", paths.TREE, "worktree", "prune"], quiet=True)
    run(["git", "-C", paths.TREE, "worktree", "add", "-q", "--detach", wt, sha])
    return wt


def build(t: Target) -> None:
    """Configure, build the image and modules, install modules and uAPI headers."""
    if t.stock:
        stock_tree()
    with step(f"kernel {t.name}"), build_lock(paths.BUILD_LOCK):
        configure(t)
        log = paths.LOGS / f"build-{t.name}.log"
        run(make_args(t) + [Path(t.image).name, "modules"], log=log)
        if t.modules_root.exists():
            shutil.rmtree(t.modules_root)
        run(make_args(t) + [f"INSTALL_MOD_PATH={t.modules_root}",
                            "INSTALL_MOD_STRIP=1", "modules_install"],
            log=paths.LOGS / f"modules-{t.name}.log")
        run(make_args(t) + ["headers"], log=paths.LOGS / f"headers-{t.name}.log")


def build_all(names: list[str] | None = None) -> None:
    for name in names or default_targets():
        if name not in TARGETS:
            raise StepError(f"unknown kernel target {name!r} "
                            f"(known: {', '.join(TARGETS)})")
        build(TARGETS[name])


def release(t: Target) -> str:
    return (t.outdir / "include" / "config" / "kernel.release").read_text().strip()
