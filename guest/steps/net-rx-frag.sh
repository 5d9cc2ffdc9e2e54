# SPDX-License-Identifier: GPL-2.0
# virtio-net maps each receive page fragment once for the buffers carved
# from it (virtio_net.map_rx_frags, on by default, read when the driver
# sets up its queues), where the ring mapped each buffer on its own. The
# NIC's driver is unbound and bound again with it off, then on, and the
# host's blob (TB_NET_DOWN_MB MiB) downloaded each time: the same bytes
# as the host served (TB_NET_SHA256), and the IOMMU domains' unmaps (the
# virtio-iommu driver's debugfs domain lines, all of the guest's DMA
# meanwhile) counted against the packets eth0 received and sent. Buffer by
# buffer, every received packet costs at least one unmap (a buffer each).
# By fragment, a 32 KiB fragment holds some twenty 1.5 KiB buffers: the
# unmaps left once at most two per sent packet are taken away (one for a
# packet of one entry or mapped by the list with its indirect table, two
# for one of two entries mapped page by page) stay under one per four
# received packets. Rebinding also runs the driver's teardown with fragments still
# mapped, and its setup again.
. /steps/lib.sh
param=/sys/module/virtio_net/parameters/map_rx_frags
drv=/sys/bus/virtio/drivers/virtio_net
check "virtio_net.map_rx_frags is there and on ($(cat $param 2>/dev/null))" \
	[ "$(cat $param 2>/dev/null)" = Y ]
viommu_stats_file
vdev=$(basename "$(readlink /sys/class/net/eth0/device)")
check "eth0 is virtio device $vdev, bound to virtio_net" [ -e "$drv/$vdev" ]

unmaps() {
	viommu_domain_sum "$stats" unmaps
}

netstat() {
	cat "/sys/class/net/eth0/statistics/$1"
}

# pass MAP_RX_FRAGS: rebind the NIC's driver with the parameter set so and
# download the blob; sets sum, unmapped, rx and tx
pass() {
	echo "$1" > $param
	echo "$vdev" > $drv/unbind
	echo "$vdev" > $drv/bind
	net_up
	u0=$(unmaps)
	rx0=$(netstat rx_packets)
	tx0=$(netstat tx_packets)
	sum=$(blob_sha256)
	unmapped=$(($(unmaps) - u0))
	rx=$(($(netstat rx_packets) - rx0))
	tx=$(($(netstat tx_packets) - tx0))
	diag "map_rx_frags=$1: $unmapped unmaps, $rx packets received, $tx sent"
}

pass 0
check "buffer by buffer: the download arrives intact" [ "$sum" = "$TB_NET_SHA256" ]
check "buffer by buffer: at least one unmap per received packet ($unmapped for $rx)" \
	[ "$rx" -gt 0 -a "$unmapped" -ge "$rx" ]
pass 1
check "by fragment: the download arrives intact" [ "$sum" = "$TB_NET_SHA256" ]
check "by fragment: under one unmap per four received packets ($unmapped - 2 x $tx sent, for $rx)" \
	[ "$rx" -gt 0 -a $((unmapped - 2 * tx)) -le $((rx / 4)) ]
plan
