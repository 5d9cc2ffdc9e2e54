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
viommu_stats_file

# pass MAP_RX_FRAGS: rebind the NIC's driver with the parameter set so and
# download the blob; sets sum, unmapped, rx and tx
pass() {
	nic_rebind map_rx_frags "$1"
	nic_count_from
	sum=$(blob_sha256)
	nic_count_to
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
