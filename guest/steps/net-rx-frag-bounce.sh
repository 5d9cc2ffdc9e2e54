# SPDX-License-Identifier: GPL-2.0
# virtio-net's receive buffers where the DMA API bounces (swiotlb=force
# behind an identity domain): a page fragment mapped once for the buffers
# carved from it would be bounced whole, and its unmap, when the device
# returns the last of them, would copy the bounce buffer back over the
# packets already delivered from it. The driver must map buffer by buffer
# there. DMA-API debugging lists the mappings alive: after a download, with
# the receive ring filled again, none of the NIC's may be larger than a page
# (a fragment is 32 KiB), and some must be its buffers, or the list does
# not see the NIC at all.
. /steps/lib.sh
dump=/sys/kernel/debug/dma-api/dump
check "every DMA is bounced (swiotlb=force)" grep -qw swiotlb=force /proc/cmdline
check "DMA-API debugging lists the live mappings" [ -r $dump ]
net_up
sum=$(blob_sha256)
check "the download arrives intact" [ "$sum" = "$TB_NET_SHA256" ]
# eth0's virtio device sits on the PCI function that does its DMA
nic_pci=$(basename "$(dirname "$(readlink -f /sys/class/net/eth0/device)")")
all=0
big=0
for len in $(grep " $nic_pci " $dump | grep DMA_FROM_DEVICE |
	     sed -n 's/.* L=\([0-9a-f]*\) .*/\1/p'); do
	all=$((all + 1))
	[ $((0x$len)) -gt 4096 ] && big=$((big + 1))
done
diag "$nic_pci: $all receive mappings alive, $big larger than a page"
check "the NIC's receive buffers are mapped ($all)" [ "$all" -gt 0 ]
check "no receive mapping is a whole fragment ($big of $all)" [ "$big" -eq 0 ]
plan
