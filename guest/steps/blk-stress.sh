# SPDX-License-Identifier: GPL-2.0
# The guest's own DMA under stress: direct I/O to and from virtio-blk with
# mixed request sizes (4 KiB to 4 MiB, one request each, so the DMA API maps
# scatterlists of every length), each write read back and compared. Inputs:
# TB_STRESS_BLK_OPS (how many), TB_STRESS_SEED, and the disk's scratch area
# TB_DISK_SCRATCH_OFF_MB/TB_DISK_SCRATCH_MB that boot.py leaves after the
# regions blk.sh uses.
. /steps/lib.sh
dev=/dev/vda
check "virtio-blk disk present" [ -b $dev ]
[ -b $dev ] || plan
ops=${TB_STRESS_BLK_OPS:-64}
kb_off=$((TB_DISK_SCRATCH_OFF_MB * 1024))
kb_len=$((TB_DISK_SCRATCH_MB * 1024))
# One line per operation: size and offset in KiB, 4 KiB aligned, seeded.
awk -v n="$ops" -v seed="${TB_STRESS_SEED:-1}" -v len="$kb_len" 'BEGIN {
	split("4 8 12 60 64 128 252 1024 2048 3072 4096", sizes)
	srand(seed)
	for (i = 0; i < n; i++) {
		kb = sizes[int(rand() * 11) + 1]
		off = 4 * int(rand() * ((len - kb) / 4 + 1))
		print kb, off
	}
}' > /tmp/blk-stress.ops
# Each write takes a different slice of one random pool: cheaper than
# /dev/urandom per write on a KASAN kernel, and no two writes alike.
pool_kb=8192
dd if=/dev/urandom of=/tmp/bs.pool bs=1024 count=$pool_kb 2>/dev/null
bad=0
done_ops=0
bytes=0
while read -r kb off; do
	dd if=/tmp/bs.pool of=/tmp/bs.w bs=1024 count="$kb" \
		skip=$(((done_ops * 997 + bad) % (pool_kb - kb + 1))) 2>/dev/null
	seek=$(((kb_off + off) / 4))
	if ! dd if=/tmp/bs.w of=$dev bs=4096 seek="$seek" count=$((kb / 4)) \
		oflag=direct conv=notrunc 2>/dev/null; then
		diag "blk-stress: write of ${kb} KiB at ${off} KiB failed"
		bad=$((bad + 1))
		continue
	fi
	# Read back as one request of the same size.
	dd if=$dev of=/tmp/bs.r bs=$((kb * 1024)) skip=$(((kb_off + off) * 1024)) \
		count=1 iflag=direct,skip_bytes 2>/dev/null
	if ! cmp -s /tmp/bs.w /tmp/bs.r; then
		diag "blk-stress: ${kb} KiB at ${off} KiB read back different"
		bad=$((bad + 1))
	fi
	done_ops=$((done_ops + 1))
	bytes=$((bytes + kb))
done < /tmp/blk-stress.ops
diag "blk-stress: $done_ops of $ops writes read back, $bytes KiB, $bad bad"
check "every direct write reads back ($ops, mixed sizes)" [ "$bad" -eq 0 ]
check "all $ops operations ran" [ "$done_ops" -eq "$ops" ]
plan
