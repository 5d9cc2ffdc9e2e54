# SPDX-License-Identifier: GPL-2.0
# Devices of the patched qemu-system-x86_64 (testbed/qemu_build.py): the
# microvm board (it brings its virtio-mmio transports, the GPEX PCIe host,
# the ISA serial port and the ACPI tables, VIOT included) and what the
# scenarios put on it, nothing else, so that the build stays small. And q35
# with the VT-d and AMD IOMMU models: the virtio-iommu walks VT-d
# second-level and AMD v1 tables with their code (page-table sharing), on
# the board x86 guests use it on. vfio-pci, for the nested test bed's L2
# guest with a device assigned behind the vhost-backed virtio-iommu, and
# pcie-root-port, for its hotplug step.
CONFIG_MICROVM=y
CONFIG_Q35=y
CONFIG_VTD=y
CONFIG_AMD_IOMMU=y
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_BLK=y
CONFIG_VIRTIO_NET=y
CONFIG_VIRTIO_IOMMU=y
CONFIG_EDU=y
CONFIG_VFIO_PCI=y
CONFIG_PCIE_PORT=y
