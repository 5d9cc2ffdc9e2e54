# SPDX-License-Identifier: GPL-2.0
# Devices of the patched qemu-system-aarch64 (testbed/qemu_build.py): the arm
# virt board and what the scenarios put on it, nothing else, so that the
# build takes a fraction of a full one.
CONFIG_ARM_VIRT=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_MMIO=y
CONFIG_VIRTIO_BLK=y
CONFIG_VIRTIO_NET=y
CONFIG_VIRTIO_IOMMU=y
CONFIG_EDU=y
# vfio-pci, for the nested test bed's arm64 L2 (an edu L1 assigns to it)
CONFIG_VFIO_PCI=y
# The TCG pieces (ARM_V7M, semihosting, the GICv3 model and its ITS) come
# with the target and ARM_GIC in QEMU 10.0's Kconfig: nothing to name here.
