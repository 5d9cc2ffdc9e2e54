# SPDX-License-Identifier: GPL-2.0
# virtio-net copies each frame of up to a standard MTU it sends into a slot
# the ring maps once (virtio_net.tx_copy, on by default, read when the
# driver sets up its queues; virtqueue_set_copy_out()), where the ring
# mapped each packet and unmapped it once sent. The NIC's driver is
# unbound and bound again with it off, then on, and a base64 blob
# (TB_NET_UP_MB MiB of random bytes) posted to the host each time: the
# host answers with the digest of what it received, which must be the
# blob's. QEMU's user network offers no segmentation offload, so every
# frame sent is a standard one. The IOMMU domains' unmaps (the
# virtio-iommu driver's debugfs domain lines, all of the guest's DMA
# meanwhile) are counted against the packets eth0 sent. Mapped, every
# sent packet costs at least one unmap. Copied, a sent packet costs none:
# what is left are the received acknowledgements' page fragments (some
# twenty buffers an unmap, see net-rx-frag), under one per four packets
# sent. Rebinding also frees the slots with the queues and sets them up
# again. With TB_NET_PACKED=1 the NIC must have packed rings, whose path
# copies into the slot of the buffer's ID, not its head descriptor's.
. /steps/lib.sh
viommu_stats_file
dd if=/dev/urandom bs=1M count="$TB_NET_UP_MB" 2>/dev/null | base64 > /tmp/up
want=$(sha256sum /tmp/up | cut -d' ' -f1)

# pass TX_COPY: rebind the NIC's driver with the parameter set so and post
# the blob; sets got, unmapped, rx and tx
pass() {
	nic_rebind tx_copy "$1"
	nic_count_from
	got=$(wget -q -O - --post-file /tmp/up "http://10.0.2.2:$TB_HTTP_PORT/sink")
	nic_count_to
	diag "tx_copy=$1: $unmapped unmaps, $tx packets sent"
}

pass 0
# TB_NET_PACKED=1: the NIC's virtqueues must be packed rings (feature bit
# 34, VIRTIO_F_RING_PACKED), the 35th character of the features file
if [ "$TB_NET_PACKED" = 1 ]; then
	check "eth0's virtqueues are packed rings" \
		[ "$(cut -c35 "/sys/bus/virtio/devices/$nic_vdev/features")" = 1 ]
fi
check "mapped: the upload arrives intact" [ "$got" = "$want" ]
check "mapped: at least one unmap per sent packet ($unmapped for $tx)" \
	[ "$tx" -gt 0 -a "$unmapped" -ge "$tx" ]
pass 1
check "copied: the upload arrives intact" [ "$got" = "$want" ]
check "copied: under one unmap per four sent packets ($unmapped for $tx)" \
	[ "$tx" -gt 0 -a "$unmapped" -le $((tx / 4)) ]
plan
