# SPDX-License-Identifier: GPL-2.0
# `make bench-mmio` (testbed/bench.py): round trips over the NIC to the
# host's one-byte echo server (TB_RR_PORT), then 4 KiB random reads of the
# disk, TB_BENCH_SECONDS each, one request at a time; with each, the
# interrupts the virtio devices took (/proc/interrupts, every handler
# named virtio*), so the host can put them per request.
. /steps/lib.sh
secs=${TB_BENCH_SECONDS:-10}
ncpu=$(head -1 /proc/interrupts | wc -w)

# virtio_irqs: interrupts taken so far by every virtio handler
virtio_irqs() {
	awk -v c="$ncpu" '$NF ~ /^virtio/ {
		for (i = 2; i <= c + 1; i++)
			s += $i
	} END { print s + 0 }' /proc/interrupts
}

net_up
before=$(virtio_irqs)
out=$(io_bench rr 10.0.2.2 "$TB_RR_PORT" "$secs")
check "round trips over the NIC ran" [ -n "$out" ]
diag "$out irqs=$(($(virtio_irqs) - before))"
before=$(virtio_irqs)
out=$(io_bench randread /dev/vda "$secs")
check "random reads of the disk ran" [ -n "$out" ]
diag "$out irqs=$(($(virtio_irqs) - before))"
plan
