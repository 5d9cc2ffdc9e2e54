# SPDX-License-Identifier: GPL-2.0
# `make bench-throughput` (testbed/bench.py): how fast the disk and the NIC
# move data behind the IOMMU, TB_BENCH_SECONDS for each direction. The
# disk: direct I/O over the scratch area in 64 KiB requests (each one a
# DMA map and unmap of 16 pages), written over and over, then read over and
# over; then the same in 1 MiB calls (the bulk passes). The NIC: the
# host's blob downloaded over and over, then the upload posted over and
# over. The timed passes move data only; a checked pass before and after
# them shows the data arrive intact (the host checks each upload's digest
# in every pass), so that hashing in the guest, dear under TCG, is no part
# of the rates. Times from /proc/uptime (centiseconds); the host reads the
# "# tput:" line.
. /steps/lib.sh
dev=/dev/vda
secs=${TB_BENCH_SECONDS:-10}
cs=$((secs * 100))
mb=$TB_DISK_SCRATCH_MB

# profiled PHASE CMD...: timed CMD...; with TB_KPROF set (`make
# bench-throughput PROFILE=1`), the guest kernel's functions sampled
# meanwhile (guest/progs/kprof.c), as "kprof PHASE:" lines
profiled() {
	phase=$1
	shift
	if [ -z "$TB_KPROF" ]; then
		timed "$@"
		return
	fi
	kprof "$secs" 25 > /tmp/kprof &
	timed "$@"
	wait
	while read -r line; do
		diag "kprof $phase:${line#kprof:}"
	done < /tmp/kprof
}

# disk_write KIB, disk_read KIB OUT: the scratch area, in direct calls of
# KIB KiB (a divisor of 1 MiB)
disk_write() {
	dd if=/tmp/tp.w of=$dev bs="$1"k count=$((mb * 1024 / $1)) \
		seek=$((TB_DISK_SCRATCH_OFF_MB * 1024 / $1)) \
		oflag=direct conv=notrunc 2>/dev/null
}

disk_read() {
	dd if=$dev of="$2" bs="$1"k count=$((mb * 1024 / $1)) \
		skip=$((TB_DISK_SCRATCH_OFF_MB * 1024 / $1)) \
		iflag=direct 2>/dev/null
}

disk_sum() {
	disk_read 64 /tmp/tp.r && sha256sum /tmp/tp.r | cut -d' ' -f1
}

check "virtio-blk disk present" [ -b $dev ]
dd if=/dev/urandom of=/tmp/tp.w bs=1M count="$mb" 2>/dev/null
want=$(sha256sum /tmp/tp.w | cut -d' ' -f1)
profiled disk_write disk_write 64
write_mb=$((n * mb))
write_cs=$took
check "direct writes succeeded ($n passes)" [ "$bad" -eq 0 ]
check "the disk holds what was written" [ "$(disk_sum)" = "$want" ]
profiled disk_read disk_read 64 /dev/null
read_mb=$((n * mb))
read_cs=$took
check "direct reads succeeded ($n passes)" [ "$bad" -eq 0 ]
check "the disk still reads back what was written" [ "$(disk_sum)" = "$want" ]

profiled bulk_write disk_write 1024
bulk_write_mb=$((n * mb))
bulk_write_cs=$took
check "bulk direct writes succeeded ($n passes)" [ "$bad" -eq 0 ]
profiled bulk_read disk_read 1024 /dev/null
bulk_read_mb=$((n * mb))
bulk_read_cs=$took
check "bulk direct reads succeeded ($n passes)" [ "$bad" -eq 0 ]
check "the disk reads back what the bulk passes wrote" [ "$(disk_sum)" = "$want" ]
rm -f /tmp/tp.r

net_up
url="http://10.0.2.2:$TB_HTTP_PORT"

down() {
	wget -q -O "$1" "$url/blob"
}

down_sum() {
	down /tmp/tp.d && sha256sum /tmp/tp.d | cut -d' ' -f1
}

check "a download arrives intact" [ "$(down_sum)" = "$TB_NET_SHA256" ]
profiled net_down down /dev/null
down_bytes=$((n * TB_NET_DOWN_MB * 1048576))
down_cs=$took
check "downloads succeeded ($n)" [ "$bad" -eq 0 ]
check "the last download arrives intact" [ "$(down_sum)" = "$TB_NET_SHA256" ]
rm -f /tmp/tp.d

# busybox wget posts its file as a C string: send text (base64), not bytes.
dd if=/dev/urandom bs=1M count="$TB_NET_UP_MB" 2>/dev/null | base64 > /tmp/up
want=$(sha256sum /tmp/up | cut -d' ' -f1)

up() {
	[ "$(wget -q -O - --post-file /tmp/up "$url/sink")" = "$want" ]
}

profiled net_up up
up_bytes=$((n * $(wc -c < /tmp/up)))
up_cs=$took
check "every upload arrived intact ($n)" [ "$bad" -eq 0 ]

diag "tput: disk_write_mb=$write_mb disk_write_cs=$write_cs" \
	"disk_read_mb=$read_mb disk_read_cs=$read_cs" \
	"bulk_write_mb=$bulk_write_mb bulk_write_cs=$bulk_write_cs" \
	"bulk_read_mb=$bulk_read_mb bulk_read_cs=$bulk_read_cs" \
	"net_down_bytes=$down_bytes net_down_cs=$down_cs" \
	"net_up_bytes=$up_bytes net_up_cs=$up_cs"
plan
