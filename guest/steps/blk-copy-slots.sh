# SPDX-License-Identifier: GPL-2.0
# virtio-blk gives each of its queues copy slots (virtio_blk.copy_slots, on
# by default, read when the driver sets up its queues;
# virtqueue_set_copy_out()), and a request that virtio_ring maps by the
# list (see ring-map-sg) puts its indirect table in the slot of its head
# descriptor, then each direction whose buffers fit after it: a direct
# read's header (the device reads it), a write's status and a GET_ID
# request's serial number and status (the device writes them, and the
# ring copies them back to the driver's buffers when the request
# completes). The disk's driver is unbound and bound again with the slots
# off, then on, each time:
# - the disk's serial number (GET_ID, ten times) reads as QEMU was given it
#   (TB_DISK_SERIAL): in the slot, what the device wrote comes back. Off,
#   a GET_ID costs the IOMMU domains two unmaps (its table and header, its
#   serial and status); on, it maps nothing (two unmaps at most for the ten,
#   for other DMA meanwhile);
# - the disk's first TB_DISK_READ_MB MiB read in 64 KiB direct requests of
#   16 scattered pages are the bytes the host wrote (TB_DISK_SHA256), and
#   cost the domains (the virtio-iommu driver's debugfs domain lines: its
#   unmap_pages() calls) at least one unmap a request fewer on than off:
#   the table and the header's range. In a strict page-table domain on a
#   device that caches translations (TB_VIOMMU_MODE=table,
#   TB_VIOMMU_DOMAIN=dma-strict, no TB_VIOMMU_NO_CACHE) an unmap is an
#   INVALIDATE: a read costs two mapped, exactly one in the slots (its
#   data's and status's), give or take other DMA meanwhile. Elsewhere
#   (lazy domains batch them, a device that caches nothing asks for none,
#   MAP/UNMAP mode sends UNMAPs) the INVALIDATEs are only reported.
. /steps/lib.sh
param=/sys/module/virtio_blk/parameters/copy_slots
dev=/dev/vda
reqs=$((TB_DISK_READ_MB * 16))
check "virtio_blk.copy_slots is there and on ($(cat $param 2>/dev/null))" \
	[ "$(cat $param 2>/dev/null)" = Y ]
viommu_stats_file

unmaps() {
	viommu_domain_sum "$stats" unmaps
}

invalidates() {
	viommu_domain_sum "$stats" invalidates " type=dma-strict .* mode=table "
}

# pass COPY_SLOTS: rebind the disk's driver with the parameter set so, read
# the serial number ten times and the disk; sets serial, id_unmaps, sum,
# read_unmaps and read_invs
pass() {
	disk_rebind $param "$1"
	u0=$(unmaps)
	for n in 1 2 3 4 5 6 7 8 9 10; do
		serial=$(cat /sys/block/vda/serial)
	done
	id_unmaps=$(($(unmaps) - u0))
	u0=$(unmaps)
	i0=$(invalidates)
	sum=$(scatter_read $dev "$TB_DISK_READ_MB" | sha256sum | cut -d' ' -f1)
	read_unmaps=$(($(unmaps) - u0))
	read_invs=$(($(invalidates) - i0))
	diag "copy_slots=$1: GET_ID x10 $id_unmaps unmaps; $reqs reads $read_unmaps unmaps, $read_invs strict INVALIDATEs"
}

pass 0
check "mapped: the serial number reads back ($serial)" [ "$serial" = "$TB_DISK_SERIAL" ]
check "mapped: two unmaps a GET_ID at least ($id_unmaps for 10)" [ "$id_unmaps" -ge 20 ]
check "mapped: the disk reads back the host's data" [ "$sum" = "$TB_DISK_SHA256" ]
off_unmaps=$read_unmaps
off_invs=$read_invs
pass 1
check "in the slots: the serial number reads back ($serial)" [ "$serial" = "$TB_DISK_SERIAL" ]
check "in the slots: a GET_ID maps nothing ($id_unmaps unmaps for 10)" [ "$id_unmaps" -le 2 ]
check "in the slots: the disk reads back the host's data" [ "$sum" = "$TB_DISK_SHA256" ]
check "in the slots: a read unmaps one range fewer ($read_unmaps against $off_unmaps for $reqs)" \
	[ $((off_unmaps - read_unmaps)) -ge $((reqs * 9 / 10)) ]
if [ "$TB_VIOMMU_MODE" = table ] && [ "$TB_VIOMMU_DOMAIN" = dma-strict ] &&
   [ "$TB_VIOMMU_NO_CACHE" != 1 ]; then
	check "mapped: two strict INVALIDATEs a read ($off_invs for $reqs)" \
		[ "$off_invs" -ge $((reqs * 2)) -a "$off_invs" -le $((reqs * 2 + reqs / 10)) ]
	check "in the slots: one strict INVALIDATE a read ($read_invs for $reqs)" \
		[ "$read_invs" -ge "$reqs" -a "$read_invs" -le $((reqs + reqs / 10)) ]
fi
plan
