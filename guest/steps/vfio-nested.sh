# SPDX-License-Identifier: GPL-2.0
# A guest's stage-1 table over a VFIO nesting container's stage 2, shadowed
# by vfio_iommu_type1, judged by QEMU's edu device (the selftest's own TAP).
modprobe vfio-pci || echo "# modprobe vfio-pci failed"
export EDU_FAULT_PATTERN="$TB_FAULT_PATTERN"
exec /bin/vfio_nested
