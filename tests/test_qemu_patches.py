# SPDX-License-Identifier: GPL-2.0
"""Our QEMU patches (qemu/patches): signed off, explained, and clean by
QEMU's own checkpatch.pl, from the source tree `make qemu` patched."""

import subprocess

import pytest

from testbed import qemu_build
from testbed.patchfile import message_problems, parse

PATCHES = qemu_build.series()


@pytest.mark.parametrize("patch", PATCHES, ids=[p.name[:40] for p in PATCHES])
def test_qemu_patch(patch):
    assert not message_problems(parse(patch.read_text()))
    checkpatch = qemu_build.SRC / "scripts" / "checkpatch.pl"
    assert checkpatch.exists(), "QEMU's source is not unpacked: make qemu"
    res = subprocess.run(["perl", checkpatch, "--no-tree", patch], text=True,
                         capture_output=True)
    assert res.returncode == 0, res.stdout[-2000:]


# Each patched board, with a virtio-mmio device plugged before the IOMMU
REFUSALS = {
    "arm-virt": ("qemu-system-aarch64", "virt,virtio-mmio-iommu=on"),
    "x86-microvm": ("qemu-system-x86_64",
                    "microvm,acpi=on,pcie=on,virtio-mmio-iommu=on"),
}


@pytest.mark.parametrize("board", REFUSALS)
def test_virtio_mmio_device_before_the_iommu_is_refused(board):
    """A virtio-mmio device plugged before the virtio-iommu already chose
    its DMA address space: the board must say so, not boot it untranslated."""
    exe, machine = REFUSALS[board]
    qemu = qemu_build.binary(exe)
    assert qemu.exists(), "make qemu"
    res = subprocess.run(
        [qemu, *qemu_build.firmware_args(), "-machine", machine, "-accel", "tcg",
         "-nodefaults", "-display", "none", "-monitor", "none",
         "-netdev", "user,id=n0",
         "-device", "virtio-net-device,netdev=n0,iommu_platform=on",
         "-device", "virtio-iommu-pci"],
        text=True, capture_output=True, timeout=60)
    assert res.returncode != 0
    assert "plugged before the virtio-iommu" in res.stderr


# virtio-iommu's configuration properties (qemu/patches 0006), each value
# the device cannot offer and the message realize gives for it
BAD_CONFIGS = {
    "granule=3k": "granule must be 4k, 8k, 16k, 64k or host",
    "domain-range-start=7,domain-range-end=6": "is above domain-range-end",
}


@pytest.mark.parametrize("props", BAD_CONFIGS)
def test_virtio_iommu_bad_configuration_is_refused(props):
    """A granule the device does not know, or an empty domain range, fails
    realize with a message, instead of a device offering nonsense."""
    qemu = qemu_build.binary("qemu-system-x86_64")
    assert qemu.exists(), "make qemu"
    res = subprocess.run(
        [qemu, *qemu_build.firmware_args(), "-machine", "microvm,acpi=on,pcie=on",
         "-accel", "tcg", "-nodefaults", "-display", "none", "-monitor", "none",
         "-device", f"virtio-iommu-pci,{props}"],
        text=True, capture_output=True, timeout=60)
    assert res.returncode != 0
    assert BAD_CONFIGS[props] in res.stderr
