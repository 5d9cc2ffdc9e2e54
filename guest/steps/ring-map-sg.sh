# SPDX-License-Identifier: GPL-2.0
# virtio_ring maps an indirect request's buffers with one dma_map_sg() per
# direction when the device is behind an IOMMU (virtio_ring.map_sg, on by
# default), where it mapped them page by page. The disk's first
# TB_DISK_READ_MB MiB read in 64 KiB direct requests of 16 scattered pages
# (guest/progs/scatter_read.c), both ways: the same bytes as the host wrote
# (TB_DISK_SHA256), and the IOMMU domains' unmaps (the virtio-iommu
# driver's debugfs domain lines: its unmap_pages() calls, one per page size
# of a range) at most 4 a request by the list (the indirect table with the
# header, the data and status: 2, or 3 where the 68 KiB of data and status
# unmap as 64 KiB and 4 KiB pages, AMD v1's and MAP/UNMAP mode's; 1 or 2
# with virtio-blk's copy slots, see blk-copy-slots; other DMA meanwhile)
# against at least 16 page by page (16 data pages, the header, the status
# and the table: 19).
. /steps/lib.sh
param=/sys/module/virtio_ring/parameters/map_sg
dev=/dev/vda
reqs=$((TB_DISK_READ_MB * 16))
check "virtio_ring.map_sg is there and on ($(cat $param 2>/dev/null))" \
	[ "$(cat $param 2>/dev/null)" = Y ]
viommu_stats_file

unmaps() {
	viommu_domain_sum "$stats" unmaps
}

# pass MAP_SG: read with map_sg set so; sets sum and unmapped
pass() {
	echo "$1" > $param
	u0=$(unmaps)
	sum=$(scatter_read $dev "$TB_DISK_READ_MB" | sha256sum | cut -d' ' -f1)
	unmapped=$(($(unmaps) - u0))
}

pass 0
check "page by page: the disk reads back the host's data" [ "$sum" = "$TB_DISK_SHA256" ]
check "page by page: at least 16 unmaps a request ($unmapped for $reqs)" \
	[ "$unmapped" -ge $((reqs * 16)) ]
pass 1
check "by the list: the disk reads back the host's data" [ "$sum" = "$TB_DISK_SHA256" ]
check "by the list: at most 4 unmaps a request ($unmapped for $reqs)" \
	[ "$unmapped" -gt 0 -a "$unmapped" -le $((reqs * 4)) ]
plan
