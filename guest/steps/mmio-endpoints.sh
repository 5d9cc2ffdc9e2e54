# SPDX-License-Identifier: GPL-2.0
# virtio devices on virtio-mmio transports behind the virtio-iommu (the
# transports' device tree nodes name it in "iommus", or the ACPI VIOT table
# has a virtio-mmio endpoint node for them): each such device must
# have negotiated ACCESS_PLATFORM, so that its DMA goes through the DMA API,
# and its transport must sit in an IOMMU group of the expected type. The
# host then checks in QEMU's trace that their domains received MAPs.
. /steps/lib.sh
want=${TB_MMIO_ENDPOINTS:-1}
case "$TB_VIOMMU_DOMAIN" in
dma-strict) type=DMA ;;
dma-lazy) type=DMA-FQ ;;
bypass) type=identity ;;
*) type= ;;
esac
n=0
for d in /sys/bus/virtio/devices/*; do
	[ -e "$d" ] || continue
	parent=$(readlink -f "$d/..")
	# Named after the device tree node (a000000.virtio_mmio) or the ACPI
	# one (LNRO0005:00): the transport's driver tells.
	case $(basename "$(readlink -f "$parent/driver")") in
	virtio-mmio) ;;
	*) continue ;;
	esac
	n=$((n + 1))
	what="$(basename "$d") (device $(cat "$d/device")) on $(basename "$parent")"
	# features: one character per bit; bit 33 is VIRTIO_F_ACCESS_PLATFORM
	check "$what negotiated ACCESS_PLATFORM" \
		[ "$(cut -c34 "$d/features")" = 1 ]
	check "$what sits in an IOMMU group" [ -e "$parent/iommu_group" ]
	if [ -n "$type" ]; then
		got=$(cat "$parent/iommu_group/type" 2>/dev/null)
		check "$what: its group is $type (got ${got:-none})" [ "$got" = "$type" ]
	fi
done
check "$n virtio-mmio devices found, $want wanted" [ "$n" -ge "$want" ]
plan
