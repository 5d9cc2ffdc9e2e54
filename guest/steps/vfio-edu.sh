# SPDX-License-Identifier: GPL-2.0
# QEMU's edu device through vfio-pci and VFIO type1 (the selftest's own TAP).
modprobe vfio-pci || echo "# modprobe vfio-pci failed"
export EDU_FAULT_PATTERN="$TB_FAULT_PATTERN"
exec /bin/vfio_edu_dma
