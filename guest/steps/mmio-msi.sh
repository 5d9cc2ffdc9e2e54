# SPDX-License-Identifier: GPL-2.0
# How the virtio-mmio devices interrupt (Documentation/iommu/
# virtio-mmio-msi.rst). TB_MMIO_MSI=1: each device has an MSI vector for
# configuration changes and one per queue, the queues named in
# TB_MMIO_MSI_FIRING have taken interrupts on their own vectors (the blk and
# net steps ran before), and no wired interrupt is requested; then the disk's
# transport is unbound from virtio-mmio and bound again, and virtio_blk
# unbound from the disk and bound again: each time the disk reads back the
# host's data through newly allocated vectors that fire. Then, through
# virtio_mmio.msi_vectors and a rebind of the NIC's transport, two vectors
# (the queues share one) and one (the wired interrupt, said once), the NIC
# fetching the host's blob each time. TB_MMIO_MSI=0 (a device that does not
# offer MSI): every device uses its wired interrupt,
# which fires, and has no vector.
. /steps/lib.sh
msi=${TB_MMIO_MSI:-1}
ncpu=$(head -1 /proc/interrupts | wc -w)

# irq_count NAME: interrupts taken by the handler named NAME (all CPUs),
# empty if no interrupt has a handler of that name
irq_count() {
	awk -v n="$1" -v c="$ncpu" '$NF == n {
		s = 0
		for (i = 2; i <= c + 1; i++)
			s += $i
		print s
	}' /proc/interrupts
}

# vectors DEV: the handler names of DEV's MSI vectors (virtio0-config ...)
vectors() {
	awk -v p="$1-" '{ if (index($NF, p) == 1) print $NF }' /proc/interrupts
}

# The virtio devices on virtio-mmio transports
mmio_devices() {
	for d in /sys/bus/virtio/devices/*; do
		[ -e "$d" ] || continue
		drv=$(basename "$(readlink -f "$d/../driver")")
		[ "$drv" = virtio-mmio ] && basename "$d"
	done
}

disk_sum() {
	dd if=/dev/vda bs=1M count="$TB_DISK_READ_MB" iflag=direct 2>/dev/null |
		sha256sum | cut -d' ' -f1
}

# wait_disk: up to 10 s for /dev/vda to come back
wait_disk() {
	i=0
	while [ ! -b /dev/vda ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	[ -b /dev/vda ]
}

# disk_vectors_fire WHAT: the disk reads back the host's data, and its
# queue vector took interrupts doing it
disk_vectors_fire() {
	check "$1: the disk is back" wait_disk
	dev=$(basename "$(readlink -f /sys/block/vda/device)")
	check "$1: the disk reads back the host's data" \
		[ "$(disk_sum)" = "$TB_DISK_SHA256" ]
	n=$(irq_count "$dev-req.0")
	diag "$1: $dev-req.0 took ${n:-no} interrupts"
	check "$1: $dev's request queue has its own vector, which fired" \
		[ "${n:-0}" -gt 0 ]
	check "$1: $dev has a configuration vector" \
		[ -n "$(irq_count "$dev-config")" ]
	check "$1: $dev requested no wired interrupt" [ -z "$(irq_count "$dev")" ]
}

devs=$(mmio_devices)
check "virtio devices on virtio-mmio found" [ -n "$devs" ]
fired=""
for dev in $devs; do
	if [ "$msi" = 0 ]; then
		n=$(irq_count "$dev")
		diag "$dev: wired interrupt took ${n:-no} interrupts"
		check "$dev uses its wired interrupt, which fired" [ "${n:-0}" -gt 0 ]
		check "$dev has no MSI vector" [ -z "$(vectors "$dev")" ]
		continue
	fi
	check "$dev requested no wired interrupt" [ -z "$(irq_count "$dev")" ]
	check "$dev has a configuration vector" [ -n "$(irq_count "$dev-config")" ]
	nq=0
	for v in $(vectors "$dev"); do
		n=$(irq_count "$v")
		diag "$v: $n interrupts"
		[ "$v" = "$dev-config" ] && continue
		nq=$((nq + 1))
		[ "$n" -gt 0 ] && fired="$fired ${v#"$dev"-}"
	done
	check "$dev has a vector per queue ($nq)" [ "$nq" -gt 0 ]
done
[ "$msi" = 0 ] && plan

for q in $TB_MMIO_MSI_FIRING; do
	case " $fired " in
	*" $q "*) ok "queue $q took interrupts on its own vector" ;;
	*) fail "queue $q took interrupts on its own vector (fired:$fired)" ;;
	esac
done
check "no device fell back to the wired interrupt" \
	sh -c '! dmesg | grep -q "using the wired interrupt"'

# The disk's transport, unbound from virtio-mmio and bound again: remove
# frees the vectors, probe allocates them again.
pdev=$(basename "$(dirname "$(readlink -f /sys/block/vda/device)")")
echo "$pdev" > /sys/bus/platform/drivers/virtio-mmio/unbind
check "unbinding $pdev from virtio-mmio removes the disk" [ ! -e /sys/block/vda ]
echo "$pdev" > /sys/bus/platform/drivers/virtio-mmio/bind
disk_vectors_fire "$pdev rebound"

# virtio_blk unbound from the disk and bound again: the device is reset,
# its vectors freed and allocated again by the same transport.
vdev=$(basename "$(readlink -f /sys/block/vda/device)")
echo "$vdev" > /sys/bus/virtio/drivers/virtio_blk/unbind
check "unbinding virtio_blk from $vdev removes the disk" [ ! -e /sys/block/vda ]
echo "$vdev" > /sys/bus/virtio/drivers/virtio_blk/bind
disk_vectors_fire "virtio_blk rebound to $vdev"

# net_works WHAT: eth0 fetches the host's blob intact
net_works() {
	ip link set eth0 up
	ip addr add 10.0.2.15/24 dev eth0 2>/dev/null
	sum=$(blob_sha256)
	check "$1: download through the NIC arrives intact" [ "$sum" = "$TB_NET_SHA256" ]
}

# rebind_net: the NIC's transport unbound and bound again (it picks up
# virtio_mmio.msi_vectors); prints the NIC's new virtio device
net_pdev=$(basename "$(dirname "$(readlink -f /sys/class/net/eth0/device)")")
rebind_net() {
	echo "$net_pdev" > /sys/bus/platform/drivers/virtio-mmio/unbind
	echo "$net_pdev" > /sys/bus/platform/drivers/virtio-mmio/bind
	i=0
	while [ ! -e /sys/class/net/eth0 ] && [ $i -lt 100 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	basename "$(readlink -f /sys/class/net/eth0/device)"
}

# Fewer vectors than queues: with two, the NIC's three queues share one.
echo 2 > /sys/module/virtio_mmio/parameters/msi_vectors
ndev=$(rebind_net)
net_works "two vectors"
n=$(irq_count "$ndev-virtqueues")
diag "two vectors: $ndev-virtqueues took ${n:-no} interrupts"
check "two vectors: the queues share one vector, which fired" [ "${n:-0}" -gt 0 ]
check "two vectors: no queue has a vector of its own" \
	[ "$(vectors "$ndev" | grep -cv -e -config -e -virtqueues)" -eq 0 ]

# None: the wired interrupt, said once.
echo 1 > /sys/module/virtio_mmio/parameters/msi_vectors
dmesg -c > /dev/null
ndev=$(rebind_net)
net_works "no vectors"
n=$(irq_count "$ndev")
diag "no vectors: the wired interrupt took ${n:-no} interrupts"
check "no vectors: the wired interrupt serves the NIC" [ "${n:-0}" -gt 0 ]
check "no vectors: $ndev has no MSI vector" [ -z "$(vectors "$ndev")" ]
check "no vectors: the fallback is said once" \
	[ "$(dmesg | grep -c "using the wired interrupt")" -eq 1 ]
echo 0 > /sys/module/virtio_mmio/parameters/msi_vectors
plan
