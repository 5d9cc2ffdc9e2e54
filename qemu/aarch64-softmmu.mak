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
# TCG needs these: target/arm links against the first two, the board asks
# for the GICv3 model (gic-version=3) and its ITS
CONFIG_ARM_V7M=y
CONFIG_ARM_COMPATIBLE_SEMIHOSTING=y
CONFIG_ARM_GICV3_TCG=y
