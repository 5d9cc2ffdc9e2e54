# SPDX-License-Identifier: GPL-2.0
"""Guest images: static busybox, our statically linked test programs, the
kernel's modules and the guest scripts, as an initramfs per kernel target."""

from __future__ import annotations

import subprocess
from pathlib import Path

from . import paths
from .cpio import Archive
from .kernel import TARGETS, Target, release
from .shell import StepError, run

DEB_ARCH = {"x86": "amd64", "arm64": "arm64"}
COMPILER = {"x86": "gcc", "arm64": "aarch64-linux-gnu-gcc"}

# Guest test programs, built from the target's source tree: (source, binary
# name, whether it also needs the tree's include/ after the uAPI headers, as
# the selftest's own Makefile has it).
PROGRAMS = (
    ("tools/testing/selftests/iommu/vfio_edu_dma.c", "vfio_edu_dma", False),
    # a guest's stage 1 over a VFIO nesting container (shadowed)
    ("tools/testing/selftests/iommu/vfio_nested.c", "vfio_nested", False),
    # vhost-iommu: the device, what a guest may cost, vhost-net bound to it,
    # page-table sharing, posted MAP, the state saved and restored
    ("tools/testing/selftests/iommu/vhost_iommu.c", "vhost_iommu", False),
    ("tools/testing/selftests/iommu/vhost_iommu_limits.c", "vhost_iommu_limits", False),
    ("tools/testing/selftests/iommu/vhost_iommu_net.c", "vhost_iommu_net", False),
    ("tools/testing/selftests/iommu/vhost_iommu_table.c", "vhost_iommu_table", False),
    ("tools/testing/selftests/iommu/vhost_iommu_posted.c", "vhost_iommu_posted", False),
    ("tools/testing/selftests/iommu/vhost_iommu_state.c", "vhost_iommu_state", False),
    # vhost-iommu forwarding a VFIO endpoint's table to its container
    ("tools/testing/selftests/iommu/vhost_iommu_vfio.c", "vhost_iommu_vfio", False),
    # `make bench-viommu` (linux/map_benchmark.h is not uAPI in 6.12)
    ("tools/testing/selftests/dma/dma_map_benchmark.c", "dma_map_benchmark", True),
)
# The test bed's own guest programs (guest/progs/<name>.c), not the kernel's:
# `make bench-mmio`'s round trips and random reads, the guest kernel's
# profile `make bench-throughput PROFILE=1` takes, and the ring-map-sg
# step's scattered direct reads.
GUEST_PROGRAMS = ("io_bench", "kprof", "scatter_read")


def busybox(arch: str) -> Path:
    """Debian's busybox-static for @arch, fetched with apt-get download."""
    deb_arch = DEB_ARCH[arch]
    where = paths.BASE_DIR / f"busybox-{deb_arch}"
    binary = where / "bin" / "busybox"
    if binary.exists():
        return binary
    paths.BASE_DIR.mkdir(parents=True, exist_ok=True)
    debs = list(paths.BASE_DIR.glob(f"busybox-static_*_{deb_arch}.deb"))
    if not debs:
        run(["apt-get", "download", "-q", f"busybox-static:{deb_arch}"],
            cwd=paths.BASE_DIR)
        debs = list(paths.BASE_DIR.glob(f"busybox-static_*_{deb_arch}.deb"))
    if not debs:
        raise StepError(f"cannot fetch busybox-static:{deb_arch} (is the "
                        f"architecture added with dpkg --add-architecture?)")
    run(["dpkg-deb", "-x", debs[0], where], quiet=True)
    return binary


def build_programs(t: Target) -> dict[str, Path]:
    """Compile the guest test programs statically against the tree's uAPI."""
    outdir = paths.IMAGES / t.name / "bin"
    outdir.mkdir(parents=True, exist_ok=True)
    built = {}
    for src, name, kernel_include in PROGRAMS:
        if t.stock and not (t.source / src).exists():
            continue                # added by a patch after the stock commit
        out = outdir / name
        inc = [f"-I{t.headers}"] + ([f"-I{t.source}/include"] if kernel_include else [])
        # The flags of the selftests' Makefile: helpers in a shared header
        # are not all used by every program.
        run([COMPILER[t.arch], "-static", "-O2", "-Wall", "-Werror",
             "-Wno-unused-function", *inc,
             "-o", out, t.source / src], quiet=True)
        built[name] = out
    for name in GUEST_PROGRAMS:
        out = outdir / name
        run([COMPILER[t.arch], "-static", "-O2", "-Wall", "-Werror", "-o", out,
             paths.GUEST / "progs" / f"{name}.c"], quiet=True)
        built[name] = out
    return built


def base_archive(t: Target) -> Archive:
    """Everything a guest of target @t needs, except the scenario's inputs."""
    arc = Archive()
    for d in ("proc", "sys", "dev", "tmp", "etc", "root", "sbin", "usr/bin",
              "usr/sbin"):
        arc.dir(d)
    arc.chardev("dev/console", 5, 1)
    arc.chardev("dev/null", 1, 3, 0o666)
    arc.file("bin/busybox", busybox(t.arch).read_bytes(), 0o755)
    # Both architectures come from the same busybox version, so the host's
    # copy can tell which applets to link.
    applets = subprocess.run([str(busybox("x86")), "--list"], check=True,
                             text=True, stdout=subprocess.PIPE).stdout
    for applet in applets.split():
        if applet != "busybox":
            arc.symlink(f"bin/{applet}", "busybox")
    arc.file("init", (paths.GUEST / "init").read_bytes(), 0o755)
    for script in sorted((paths.GUEST / "steps").glob("*.sh")):
        arc.file(f"steps/{script.name}", script.read_bytes(), 0o755)
    for name, binary in build_programs(t).items():
        arc.file(f"bin/{name}", binary.read_bytes(), 0o755)
    modroot = t.modules_root
    if modroot.exists():
        for f in sorted(modroot.rglob("*")):
            rel = str(f.relative_to(modroot))
            if f.is_symlink():
                continue        # build/source links point into the host
            if f.is_file():
                arc.file(rel, f.read_bytes())
    return arc


def base_image(target: str) -> Path:
    """Write build/images/<target>/base.cpio and return its path."""
    if target not in TARGETS:
        raise StepError(f"unknown kernel target {target!r}")
    t = TARGETS[target]
    out = paths.IMAGES / t.name / "base.cpio"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(base_archive(t).bytes())
    print(f"initramfs: {out} (kernel {release(t)})")
    return out


def scenario_image(base: Path, env: dict[str, str], out: Path) -> Path:
    """The base image with /etc/tb.env appended as a second cpio archive."""
    arc = Archive()
    text = "".join(f"export {k}='{v}'\n" for k, v in sorted(env.items()))
    arc.file("etc/tb.env", text.encode())
    out.write_bytes(base.read_bytes() + arc.bytes())
    return out
