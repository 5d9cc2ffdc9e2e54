# SPDX-License-Identifier: GPL-2.0
# `make bench-ab` (testbed/bench_ab.py): a boolean module parameter
# (TB_AB_PARAM, module.name) off and on by turns in one boot, TB_AB_PAIRS
# pairs in ABBA order (off on, on off, ...: a machine drifting over the
# boot weighs on both sides alike). Before each pass the disk's driver is
# unbound and bound again, for parameters read at probe; the pass reads the
# scratch area in 64 KiB direct requests for TB_BENCH_SECONDS, then writes
# it so. One "ab:" line a pass for the host; at the end the parameter is
# set back and the disk must hold what the last pass wrote.
. /steps/lib.sh
dev=/dev/vda
mb=$TB_DISK_SCRATCH_MB
off=$((TB_DISK_SCRATCH_OFF_MB * 16))
cs=$((${TB_BENCH_SECONDS:-2} * 100))
param=/sys/module/${TB_AB_PARAM%%.*}/parameters/${TB_AB_PARAM#*.}
check "$TB_AB_PARAM is a parameter ($(cat "$param" 2>/dev/null))" [ -e "$param" ]
was=$(cat "$param")
dd if=/dev/urandom of=/tmp/ab.w bs=1M count="$mb" 2>/dev/null
want=$(sha256sum /tmp/ab.w | cut -d' ' -f1)

rd() {
	dd if=$dev of=/dev/null bs=64k count=$((mb * 16)) skip=$off iflag=direct 2>/dev/null
}

wr() {
	dd if=/tmp/ab.w of=$dev bs=64k count=$((mb * 16)) seek=$off oflag=direct \
		conv=notrunc 2>/dev/null
}

failed=0
i=0
while [ $i -lt "${TB_AB_PAIRS:-5}" ]; do
	if [ $((i % 2)) = 0 ]; then order="0 1"; else order="1 0"; fi
	for v in $order; do
		disk_rebind "$param" "$v"
		timed rd
		rmb=$((n * mb))
		rcs=$took
		failed=$((failed + bad))
		timed wr
		failed=$((failed + bad))
		diag "ab: value=$v read_mb=$rmb read_cs=$rcs write_mb=$((n * mb)) write_cs=$took"
	done
	i=$((i + 1))
done
disk_rebind "$param" "$was"
check "every pass's reads and writes succeeded ($failed failed)" [ "$failed" -eq 0 ]
sum=$(dd if=$dev bs=64k count=$((mb * 16)) skip=$off iflag=direct 2>/dev/null |
	sha256sum | cut -d' ' -f1)
check "the disk holds what the passes wrote" [ "$sum" = "$want" ]
plan
