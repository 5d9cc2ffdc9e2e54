# SPDX-License-Identifier: GPL-2.0
"""QEMU with our device-side patches (qemu/patches): Debian's source of the
QEMU this machine runs, patched, built for the targets that need it.

The scenarios use Debian's QEMU, a device we did not write, wherever it has
what a test needs. Where it lacks a device side (virtio-mmio transports
behind virtio-iommu, on arm virt and on x86 microvm), qemu/patches adds it
and only those scenarios boot this build (qemu.Machine.patched).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
from pathlib import Path

from . import paths
from .shell import StepError, build_lock, output, run, step

PATCHES = paths.ROOT / "qemu" / "patches"
TOP = paths.BUILD / "qemu"
SRC = TOP / "src"           # the patched source; unchanged files keep their mtimes
OBJ = TOP / "obj"           # meson/ninja build directory
# The source package of the installed system emulator
PACKAGE = "qemu-system-arm"

# Per target, only the board and the devices the scenarios put on it (the
# file's name inside QEMU's configs/devices, where configure looks for it).
TARGETS = {"aarch64-softmmu": "qemu-system-aarch64",
           "x86_64-softmmu": "qemu-system-x86_64"}
DEVICES = {t: paths.ROOT / "qemu" / f"{t}.mak" for t in TARGETS}
DEVICES_NAME = "testbed"
# Firmware (microvm's qboot.rom, linuxboot_dma.bin) comes from Debian's
# qemu-system-data, q35's SeaBIOS (bios-256k.bin) from its seabios: the
# dfsg source has none and we install nothing. A binary run from its build
# tree searches only the tree (even a configured --firmwarepath is
# relocated into it), so qemu.command passes -L for each of FIRMWARE.
FIRMWARE = ("/usr/share/qemu", "/usr/share/seabios")


def firmware_args() -> list[str]:
    """The -L options our build needs to find Debian's firmware."""
    return [arg for d in FIRMWARE for arg in ("-L", d)]
CONFIGURE = [f"--target-list={','.join(TARGETS)}", "--without-default-features",
             "--without-default-devices", "--enable-fdt=system", "--enable-slirp",
             "--enable-tcg", "--disable-docs", "--disable-werror",
             "--disable-install-blobs",
             # vhost-net, and virtio-iommu's vhost back end (/dev/vhost-iommu),
             # for the nested test bed's L1 (testbed/nested.py)
             "--enable-vhost-kernel", "--enable-vhost-net",
             # vhost-user, for tests/test_qemu_patches.py: a vhost-net
             # device served by a back end of our own (testbed/vhost_user.py)
             # runs on any host, which /dev/vhost-net does not
             "--enable-vhost-user",
             *(f"--with-devices-{t.split('-')[0]}={DEVICES_NAME}" for t in TARGETS)]
# configure writes the compiler into meson's cross file, so meson would not
# add ccache by itself: a rebuild after a reconfigure then hits the cache.
if shutil.which("ccache"):
    CONFIGURE.append("--cc=ccache cc")


def binary(name: str) -> Path:
    """Path of a system emulator in the patched build."""
    return OBJ / name


def series() -> list[Path]:
    """Our QEMU patches, in series order."""
    names = (PATCHES / "series").read_text().split()
    return [PATCHES / n for n in names]


def source_version() -> str:
    """Debian source version of the installed QEMU (what we patch)."""
    ver = output(["dpkg-query", "-W", "-f", "${source:Version}", PACKAGE]).strip()
    if not ver:
        raise StepError(f"{PACKAGE} is not installed: make deps")
    return ver


def _stamp(version: str) -> str:
    h = hashlib.sha256()
    h.update(version.encode())
    for mak in DEVICES.values():
        h.update(mak.read_bytes())
    h.update(" ".join(CONFIGURE).encode())
    for p in series():
        h.update(p.read_bytes())
    return h.hexdigest()


def _unpack(version: str, dest: Path) -> None:
    """Fetch and unpack the source package (Debian's patches applied)."""
    dl = TOP / "dl"
    dl.mkdir(parents=True, exist_ok=True)
    exact = dl / f"qemu_{version.split(':')[-1]}.dsc"
    if not exact.exists():
        # Needs a deb-src line (.ci/install-deps writes one). The archive
        # may have moved on from the installed version: then take its
        # newest source of QEMU (bookworm keeps 7.2, which the patches fit).
        log = paths.LOGS / "qemu-source.log"
        got = run(["apt-get", "source", "--download-only", f"qemu={version}"],
                  cwd=dl, log=log, check=False)
        if got.returncode:
            print(f"warning: no source of qemu {version}, taking the newest",
                  file=sys.stderr)
            run(["apt-get", "source", "--download-only", "qemu"], cwd=dl, log=log)
    # The installed version's, or else the one just fetched
    dsc = exact if exact.exists() else max(dl.glob("qemu_*.dsc"),
                                           key=lambda p: p.stat().st_mtime)
    if dest.exists():
        shutil.rmtree(dest)
    run(["dpkg-source", "--no-check", "-x", dsc, dest],
        log=paths.LOGS / "qemu-unpack.log")


def _patched_source(version: str) -> None:
    """SRC = the package source plus our series; files our patches did not
    change keep their mtimes from the last build, so ninja rebuilds little."""
    fresh = TOP / "src.new"
    _unpack(version, fresh)
    for p in series():
        run(["patch", "-p1", "--batch", "--quiet", "-i", p], cwd=fresh,
            log=paths.LOGS / f"qemu-patch-{p.stem}.log")
    for target, mak in DEVICES.items():
        shutil.copy(mak, fresh / "configs" / "devices" / target / f"{DEVICES_NAME}.mak")
    SRC.mkdir(parents=True, exist_ok=True)
    # No -t: rsync leaves a file whose content matches alone.
    run(["rsync", "-rlp", "--checksum", "--delete", f"{fresh}/", f"{SRC}/"],
        quiet=True)
    shutil.rmtree(fresh)


def default_exes() -> list[str]:
    """What `make qemu` builds: both emulators for `make check-full`
    (TB_FULL=1), only qemu-system-x86_64 for `make check`, whose boots are
    all x86 (testbed/scenarios.py: the arm64 tier); configure knows both,
    so a later build of the other is ninja's incremental one."""
    if os.environ.get("TB_FULL", "") not in ("", "0"):
        return list(TARGETS.values())
    return ["qemu-system-x86_64"]


def _exe_stamp(name: str) -> Path:
    return TOP / f"stamp-{name}"


def up_to_date(name: str) -> bool:
    """Is our @name built from today's source and patches?"""
    stamp = _exe_stamp(name)
    return (binary(name).exists() and stamp.exists() and
            stamp.read_text() == _stamp(source_version()))


def build(names: list[str] | None = None) -> list[Path]:
    """Build the patched system emulators @names (default_exes(); "all":
    every target) unless they are up to date."""
    if names == ["all"]:
        names = list(TARGETS.values())
    names = names or default_exes()
    exes = [binary(name) for name in names]
    version = source_version()
    stamp = _stamp(version)
    if all(up_to_date(e.name) for e in exes):
        return exes
    with step(f"qemu {version} + {len(series())} patches: {' '.join(names)}"), \
            build_lock(paths.BUILD_LOCK):
        _patched_source(version)
        configured = OBJ / "tb-configure"
        if not configured.exists() or configured.read_text() != " ".join(CONFIGURE):
            shutil.rmtree(OBJ, ignore_errors=True)
            OBJ.mkdir(parents=True)
            run([SRC / "configure", *CONFIGURE], cwd=OBJ,
                log=paths.LOGS / "qemu-configure.log")
            configured.write_text(" ".join(CONFIGURE))
        run(["ninja", "-j2", *(e.name for e in exes)], cwd=OBJ,
            log=paths.LOGS / "qemu-build.log")
        for e in exes:
            _exe_stamp(e.name).write_text(stamp)
    return exes
