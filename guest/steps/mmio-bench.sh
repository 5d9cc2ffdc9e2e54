# SPDX-License-Identifier: GPL-2.0
# `make bench-mmio` (testbed/bench.py): round trips over the NIC to the
# host's one-byte echo server (TB_RR_PORT), then 4 KiB random reads of the
# disk, TB_BENCH_SECONDS each, one request at a time; with each, the
# interrupts the virtio devices took (/proc/interrupts, every handler
# named virtio*), so the host can put them per request. On virtio-mmio, last,
# what one trapped register access costs: reads of the NIC transport's
# MagicValue register for TB_TRAP_SECONDS (none without it: a boot whose QEMU
# traces the transport's reads would write a line a read), for the host to
# put a price on the traps it counts.
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

# The NIC's transport: its platform device, and the registers the driver
# claimed in that device's name in /proc/iomem ("a003e00-a003fff :
# a003e00.virtio_mmio virtio_mmio@a003e00" on arm64 virt)
transport=$(readlink -f /sys/class/net/eth0/device/..)
if [ "${TB_TRAP_SECONDS:-0}" -gt 0 ] &&
   [ "$(basename "$(readlink -f "$transport/driver")")" = virtio-mmio ]; then
	dev=$(basename "$transport")
	base=$(awk -v n="$dev" '{
		for (i = 3; i <= NF; i++) if ($i == n) {
			split($1, r, "-"); print r[1]; exit
		} }' /proc/iomem)
	check "$dev's registers are in /proc/iomem" [ -n "$base" ]
	out=$(io_bench trap "0x$base" "$TB_TRAP_SECONDS")
	check "reads of $dev's MagicValue at 0x$base ran" [ -n "$out" ]
	diag "$out"
fi
plan
