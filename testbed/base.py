# SPDX-License-Identifier: GPL-2.0
"""The base kernel: Debian's linux-source-6.12, fetched with apt and unpacked once."""

from __future__ import annotations

import sys
from pathlib import Path

from . import paths
from .shell import output, run


def pinned() -> dict[str, str]:
    """The package and version recorded in the project's BASE file."""
    fields = {}
    for line in (paths.ROOT / "BASE").read_text().splitlines():
        if line and not line.startswith("#") and "=" in line:
            key, val = line.split("=", 1)
            fields[key.strip()] = val.strip()
    return fields


def fetch() -> tuple[Path, str]:
    """Download the source package (once) and return its tarball and version."""
    pkg = pinned()["package"]
    paths.BASE_DIR.mkdir(parents=True, exist_ok=True)
    debs = sorted(paths.BASE_DIR.glob(f"{pkg}_*_all.deb"))
    if not debs:
        run(["apt-get", "download", "-q", pkg], cwd=paths.BASE_DIR)
        debs = sorted(paths.BASE_DIR.glob(f"{pkg}_*_all.deb"))
    deb = debs[-1]
    version = output(["dpkg-deb", "-f", deb, "Version"]).strip()
    want = pinned()["version"]
    if version != want:
        print(f"warning: base is {pkg} {version}, BASE records {want}",
              file=sys.stderr)
    unpacked = paths.BASE_DIR / "deb"
    tarballs = list(unpacked.glob("usr/src/linux-source-*.tar.xz"))
    if not tarballs:
        run(["dpkg-deb", "-x", deb, unpacked])
        tarballs = list(unpacked.glob("usr/src/linux-source-*.tar.xz"))
    (paths.BASE_DIR / "VERSION").write_text(f"{pkg} {version}\n")
    print(f"base: {pkg} {version}", file=sys.stderr)
    return tarballs[0], version


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
