# SPDX-License-Identifier: GPL-2.0
"""Where things live: the project's folders and everything generated under build/."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUILD = Path(os.environ.get("TB_BUILD", ROOT / "build"))
OUT = ROOT / "out"

PATCHES = ROOT / "patches"
OVERLAY = ROOT / "linux"
CONFIGS = ROOT / "configs"
GUEST = ROOT / "guest"

BASE_DIR = BUILD / "base"          # downloaded .deb and the unpacked tarball
TREE = BUILD / "tree"              # the assembled git tree (never built in place)
TREE_STOCK = BUILD / "tree-stock"  # worktree of TREE before our virtio-iommu driver
KBUILD = BUILD / "kbuild"          # one O= directory per kernel target
IMAGES = BUILD / "images"          # initramfs images, disk images
LOGS = BUILD / "logs"              # console logs of boots and kunit runs
BENCH = BUILD / "bench"            # benchmark JSON
SERIES_OUT = OUT / "series"        # git format-patch output


# Kernel builds take this lock, so that several checkouts on one machine
# build one at a time (TB_LOCK names a lock shared between them).
BUILD_LOCK = Path(os.environ.get("TB_LOCK", BUILD / ".kbuild.lock"))


def kbuild_dir(target: str) -> Path:
    return KBUILD / target
