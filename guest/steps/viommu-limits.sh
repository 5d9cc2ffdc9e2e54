# SPDX-License-Identifier: GPL-2.0
# A virtio-iommu offering what the driver cannot fully serve (a granule
# above the CPU page, too few domain IDs): the driver says so once
# (TB_VIOMMU_LIMIT_MSG), the groups get the domain types it fell back to
# (TB_VIOMMU_GROUP_TYPES, sorted, DMA-FQ counted as DMA), the domains use
# only the IDs offered (TB_VIOMMU_DOMAIN_IDS), and vfio-pci still binds the
# edu: its group got a default domain that attached.
. /steps/lib.sh
n=$(dmesg | grep -c "virtio_iommu.*$TB_VIOMMU_LIMIT_MSG")
check "the driver said \"$TB_VIOMMU_LIMIT_MSG\" once (said $n times)" [ "$n" -eq 1 ]

modprobe vfio-pci || diag "modprobe vfio-pci failed"
edu=$(grep -l 0x11e8 /sys/bus/pci/devices/*/device | head -n 1)
edu=$(basename "$(dirname "$edu")")
echo vfio-pci > "/sys/bus/pci/devices/$edu/driver_override"
echo "$edu" > /sys/bus/pci/drivers_probe
check "vfio-pci binds the edu ($edu)" \
	[ "$(basename "$(readlink "/sys/bus/pci/devices/$edu/driver")")" = vfio-pci ]
group=$(basename "$(readlink "/sys/bus/pci/devices/$edu/iommu_group")")
check "the edu's VFIO group /dev/vfio/$group exists" [ -c "/dev/vfio/$group" ]

types=$(for g in /sys/kernel/iommu_groups/*; do
	[ -n "$(ls "$g/devices")" ] && sed 's/^DMA-FQ$/DMA/' "$g/type"
done | sort | tr '\n' ' ')
check "group types are $TB_VIOMMU_GROUP_TYPES (got $types)" \
	[ "$types" = "$TB_VIOMMU_GROUP_TYPES " ]

if [ -n "$TB_VIOMMU_DOMAIN_IDS" ]; then
	for f in /sys/kernel/debug/virtio-iommu/*/stats; do
		grep '^domain ' "$f" | while read -r line; do diag "$line"; done
		ids=$(awk '$1 == "domain" { print $2 }' "$f" | sort -un | tr '\n' ' ')
		check "domains use only IDs $TB_VIOMMU_DOMAIN_IDS (used $ids)" \
			[ "$ids" = "$TB_VIOMMU_DOMAIN_IDS " ]
	done
fi
plan
