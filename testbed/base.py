# SPDX-License-Identifier: GPL-2.0
"""The base kernel: Debian's linux-source-6.12, fetched with apt and unpacked once."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from . import paths
from .shell import StepError, output, run


def pinned() -> dict[str, str]:
    """The package and version recorded in the project's BASE file."""
    fields = {}
    for line in (paths.ROOT / "BASE").read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            key, val = line.split("=", 1)
            fields[key.strip()] = val.strip()
    return fields


def served_versions(pkg: str) -> list[str]:
    """The versions of @pkg the machine's apt sources offer, newest first."""
    out = output(["apt-cache", "madison", pkg], check=False)
    return [line.split("|")[1].strip() for line in out.splitlines()
            if line.count("|") >= 2]


def fetch(version: str | None = None) -> tuple[Path, str]:
    """Download exactly the version BASE records (once), and return its tarball.

    Debian's archive keeps serving a stable kernel's earlier security
    updates: a fresh machine gets the base the series was tested on, not
    whatever is newest that day.  A version no longer served is an error
    that names those that are (move BASE with `make rebase`).
    """
    pkg = pinned()["package"]
    want = version or pinned()["version"]
    paths.BASE_DIR.mkdir(parents=True, exist_ok=True)
    deb = paths.BASE_DIR / f"{pkg}_{want.replace(':', '%3a')}_all.deb"
    if not deb.exists():
        for old in paths.BASE_DIR.glob(f"{pkg}_*_all.deb"):
            old.unlink()
        if want not in served_versions(pkg):
            raise StepError(
                f"{pkg} {want} (BASE) is not served by this machine's apt "
                f"sources; served: {', '.join(served_versions(pkg)) or 'none'}. "
                "Run `apt-get update`, or move the base with "
                "`make rebase VERSION=<one of those>`")
        run(["apt-get", "download", "-q", f"{pkg}={want}"], cwd=paths.BASE_DIR)
    version = output(["dpkg-deb", "-f", deb, "Version"]).strip()
    if version != want:
        raise StepError(f"{deb.name} holds {pkg} {version}, not {want}")
    unpacked = paths.BASE_DIR / "deb"
    stamp = paths.BASE_DIR / "VERSION"
    if stamp.exists() and stamp.read_text() != f"{pkg} {version}\n":
        shutil.rmtree(unpacked, ignore_errors=True)
    tarballs = list(unpacked.glob("usr/src/linux-source-*.tar.xz"))
    if not tarballs:
        run(["dpkg-deb", "-x", deb, unpacked])
        tarballs = list(unpacked.glob("usr/src/linux-source-*.tar.xz"))
    stamp.write_text(f"{pkg} {version}\n")
    print(f"base: {pkg} {version}", file=sys.stderr)
    return tarballs[0], version


def set_pinned(version: str) -> None:
    """Record @version in BASE, keeping the file's comments."""
    base_file = paths.ROOT / "BASE"
    lines = [f"version={version}" if line.startswith("version=") else line
             for line in base_file.read_text().splitlines()]
    base_file.write_text("\n".join(lines) + "\n")


def unpack(tarball: Path, dest: Path) -> None:
    """Unpack the kernel tarball so that its top directory becomes @dest."""
    tmp = dest.with_name(dest.name + ".unpack")
    if tmp.exists():
        run(["rm", "-rf", tmp])
    tmp.mkdir(parents=True)
    run(["tar", "-xJf", tarball, "-C", tmp])
    (top,) = list(tmp.iterdir())
    top.rename(dest)
    tmp.rmdir()
