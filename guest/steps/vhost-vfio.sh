# SPDX-License-Identifier: GPL-2.0
# vhost-iommu forwarding the table of a VFIO endpoint (the edu) to its
# nesting container, judged by the edu's DMA (the selftest's own TAP).
modprobe vfio-pci || echo "# modprobe vfio-pci failed"
modprobe vhost_iommu || echo "# modprobe vhost_iommu failed"
# 1 where the IOMMU driver hands its faults to the domain's handler: each
# fault must come back to the guest as a fault event
export NEST_FAULT_RECORDS="$TB_NEST_FAULT_RECORDS"
exec /bin/vhost_iommu_vfio
