# SPDX-License-Identifier: GPL-2.0
# virtio-blk behind the IOMMU: read what the host wrote, write data back.
# The host filled the disk with a seeded pattern (TB_DISK_SHA256 of the first
# TB_DISK_READ_MB MiB) and checks the region we write once the guest is off.
. /steps/lib.sh
dev=/dev/vda
check "virtio-blk disk present" [ -b $dev ]
sum=$(dd if=$dev bs=1M count="$TB_DISK_READ_MB" 2>/dev/null | sha256sum | cut -d' ' -f1)
check "disk reads back the host's data" [ "$sum" = "$TB_DISK_SHA256" ]
dd if=/dev/urandom of=/tmp/w bs=1M count="$TB_DISK_WRITE_MB" 2>/dev/null
want=$(sha256sum /tmp/w | cut -d' ' -f1)
diag "disk-write-sha256 $want"
check "write to disk" dd if=/tmp/w of=$dev bs=1M seek="$TB_DISK_READ_MB" conv=fsync 2>/dev/null
echo 3 > /proc/sys/vm/drop_caches
got=$(dd if=$dev bs=1M skip="$TB_DISK_READ_MB" count="$TB_DISK_WRITE_MB" 2>/dev/null | sha256sum | cut -d' ' -f1)
check "written data reads back" [ "$got" = "$want" ]
plan
