# SPDX-License-Identifier: GPL-2.0
# The virtio-iommu's driver unbound while iommufd holds one of its domains
# (the edu test iommu_removed_under_domain): nothing may touch the device's
# freed state (KASAN on the debug kernel). The IOMMU core lets an IOMMU go
# only when no driver uses a device behind it, so every other such
# device's driver is unbound first (the test unbinds the edu's), and once
# the IOMMU is gone no device behind it may DMA: it would bypass it. Run
# it last.
edu=$(grep -l 0x11e8 /sys/bus/pci/devices/*/device | head -n 1)
edu=$(dirname "$edu")
for d in /sys/bus/pci/devices/*; do
	[ -e "$d/iommu_group" ] && [ -e "$d/driver" ] && [ "$d" != "$edu" ] ||
		continue
	drv=$(readlink -f "$d/driver")
	echo "# unbinding $(basename "$d") from $(basename "$drv")"
	basename "$d" > "$drv/unbind"
done
iommu=$(ls /sys/bus/virtio/drivers/virtio_iommu | grep "^virtio" | head -n 1)
modprobe vfio-pci || echo "# modprobe vfio-pci failed"
export EDU_REMOVE_IOMMU="$iommu"
exec /bin/vfio_edu_dma -t iommu_removed_under_domain
