# SPDX-License-Identifier: GPL-2.0
# A guest's stage-1 table over a VFIO nesting container's stage 2, shadowed
# by vfio_iommu_type1, judged by QEMU's edu device (the selftest's own TAP).
modprobe vfio-pci || echo "# modprobe vfio-pci failed"
export EDU_FAULT_PATTERN="$TB_FAULT_PATTERN"
# 1 where the IOMMU driver hands its faults to the domain's handler: each
# fault must come to the test as a record too
export NEST_FAULT_RECORDS="$TB_NEST_FAULT_RECORDS"
exec /bin/vfio_nested
