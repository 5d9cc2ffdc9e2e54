# SPDX-License-Identifier: GPL-2.0
"""QEMU with our device-side patches (qemu/patches): Debian 13's source of
QEMU 10.0 (the version qemu/VERSION pins), patched, built for the targets
that need it.

Every scenario, benchmark and the nested bed boot this build (testbed/qemu.py),
so that no result depends on two QEMU versions: where a test needs a device
we did not write (intel-iommu, amd-iommu, the SMMUv3, virtio-iommu as QEMU
ships it), it is this build's, with our patches' options left off. Only the
firmware is Debian's (FIRMWARE).
"""

from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path

from . import paths
from .shell import StepError, build_lock, output, run, step

PATCHES = paths.ROOT / "qemu" / "patches"
VERSION_FILE = paths.ROOT / "qemu" / "VERSION"
TOP = paths.BUILD / "qemu"
SRC = TOP / "src"           # the patched source; unchanged files keep their mtimes
OBJ = TOP / "obj"           # meson/ninja build directory
APT = TOP / "apt"           # the private apt list, its index and cache
ARCHIVE = "http://deb.debian.org/debian"
KEYRING = "/usr/share/keyrings/debian-archive-keyring.gpg"

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


def pinned() -> dict[str, str]:
    """The package, suite and version qemu/VERSION records."""
    fields = {}
    for line in VERSION_FILE.read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            key, val = line.split("=", 1)
            fields[key.strip()] = val.strip()
    return fields


def source_version() -> str:
    """Debian source version of the QEMU we patch (qemu/VERSION)."""
    return pinned()["version"]


def _apt_options() -> list[str]:
    """apt options that read only our list of the pinned suite's deb-src
    index and keep its state under APT: the system's apt sources, lists
    and caches stay untouched."""
    suite = pinned()["suite"]
    lst = APT / "sources.list"
    line = f"deb-src [signed-by={KEYRING}] {ARCHIVE} {suite} main\n"
    for d in (APT / "lists" / "partial", APT / "cache" / "archives" / "partial"):
        d.mkdir(parents=True, exist_ok=True)
    if not lst.exists() or lst.read_text() != line:
        lst.write_text(line)
    return ["-o", f"Dir::Etc::SourceList={lst}", "-o", "Dir::Etc::SourceParts=-",
            "-o", f"Dir::State::Lists={APT / 'lists'}",
            "-o", f"Dir::Cache={APT / 'cache'}"]


def _served(opts: list[str], pkg: str) -> list[str]:
    """The source versions of @pkg our apt list serves."""
    out = output(["apt-cache", *opts, "showsrc", pkg], check=False)
    return [line.split(":", 1)[1].strip() for line in out.splitlines()
            if line.startswith("Version:")]


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
    """Fetch exactly the pinned source package (once), check it and unpack
    it (Debian's patches applied) into @dest.

    apt checks the index's signature against debian-archive-keyring and
    each downloaded file against the index's SHA256; dpkg-source checks
    the files against the .dsc's checksums. It cannot check the .dsc's own
    signature: that is the uploader's key, in debian-keyring (not installed),
    not the archive's, so dpkg-source warns and goes on, with apt's check
    of the .dsc standing for it."""
    pkg = pinned()["package"]
    dl = TOP / "dl"
    dl.mkdir(parents=True, exist_ok=True)
    dsc = dl / f"{pkg}_{version.split(':')[-1]}.dsc"
    if not dsc.exists():
        opts = _apt_options()
        log = paths.LOGS / "qemu-source.log"
        run(["apt-get", *opts, "-q", "update"], log=log)
        served = _served(opts, pkg)
        if version not in served:
            raise StepError(
                f"{pkg} {version} (qemu/VERSION) is not served by "
                f"{ARCHIVE} {pinned()['suite']}; served: "
                f"{', '.join(served) or 'none'}")
        for old in dl.iterdir():
            old.unlink()
        run(["apt-get", *opts, "-q", "source", "--download-only",
             f"{pkg}={version}"], cwd=dl, log=log)
    if dest.exists():
        shutil.rmtree(dest)
    log = paths.LOGS / "qemu-unpack.log"
    res = run(["dpkg-source", "--require-strong-checksums", "-x", dsc, dest],
              log=log, check=False)
    if res.returncode:
        shutil.rmtree(dest, ignore_errors=True)
        why = [line for line in log.read_text(errors="replace").splitlines()
               if "error" in line]
        raise StepError(f"{dsc.name} does not unpack: "
                        f"{why[0] if why else 'see ' + str(log)}")


def _patched_source(version: str) -> None:
    """SRC = the package source plus our series; files our patches did not
    change keep their mtimes from the last build, so ninja rebuilds little."""
    fresh = TOP / "src.new"
    _unpack(version, fresh)
    for p in series():
        log = paths.LOGS / f"qemu-patch-{p.stem}.log"
        # No fuzz: the series is made against this very source.
        res = run(["patch", "-p1", "--batch", "--quiet", "--fuzz=0", "-i", p],
                  cwd=fresh, log=log, check=False)
        if res.returncode:
            shutil.rmtree(fresh)
            raise StepError(f"qemu/patches/{p.name} does not apply to qemu "
                            f"{version} (log: {log})")
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
        # TB_QEMU_JOBS: ninja's jobs (default 2), fewer beside a kernel build
        jobs = os.environ.get("TB_QEMU_JOBS", "2")
        run(["ninja", f"-j{jobs}", *(e.name for e in exes)], cwd=OBJ,
            log=paths.LOGS / "qemu-build.log")
        for e in exes:
            _exe_stamp(e.name).write_text(stamp)
    return exes
