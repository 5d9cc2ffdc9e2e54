# SPDX-License-Identifier: GPL-2.0
# `make bench-viommu`: the kernel's DMA map benchmark (CONFIG_DMA_MAP_BENCHMARK)
# on a spare edu device (the first no driver holds), bound to the
# dma_map_benchmark driver by driver_override. Inputs: TB_BENCH_THREADS,
# TB_BENCH_SECONDS, TB_BENCH_GROUP (the iommu group type the device must sit
# in: DMA, DMA-FQ, or none). TB_BENCH_SET_GROUP first gives the device's
# group that type (bind, unbind, write the type, bind again).
# TB_BENCH_EXPECT_COMBINE (strict domains, our driver) names the kick
# combining counter that must grow while the two threads run: combine_joins
# (their syncs shared exits) or, where each map takes far longer than the
# longest combining wait (the debug kernel), combine_waits (they tried).
# `make bench-drivers` runs iommu-info first, which checks the driver's
# page-table switch (TB_PT_PARAM).
# The host reads the "# dmabench:" lines (the tool's output, the device's
# endpoint ID) and, with our driver, the "# viommu-before:"/"# viommu-after:"
# copies of its debugfs counters.
. /steps/lib.sh

stats() {
	for f in /sys/kernel/debug/virtio-iommu/*/stats; do
		[ -e "$f" ] || continue
		while read -r line; do
			diag "viommu-$1: $line"
		done < "$f"
	done
}

# counter NAME: the sum of one counter over every virtio-iommu device
counter() {
	cat /sys/kernel/debug/virtio-iommu/*/stats 2>/dev/null |
		awk -v k="$1" '$1 == k { n += $2 } END { print n + 0 }'
}

dev=
for d in /sys/bus/pci/devices/*; do
	if [ "$(cat "$d/vendor")" = 0x1234 ] && [ "$(cat "$d/device")" = 0x11e8 ] &&
	   [ ! -e "$d/driver" ]; then
		dev=$d
		break
	fi
done
check "a spare PCI device (edu) to benchmark" [ -n "$dev" ]
[ -n "$dev" ] || plan
bdf=$(basename "$dev")
# The virtio-iommu endpoint ID of a PCI device is its requester ID.
bus=$(echo "$bdf" | cut -d: -f2)
slot=$(echo "$bdf" | cut -d: -f3 | cut -d. -f1)
fn=$(echo "$bdf" | cut -d. -f2)
diag "dmabench: device $bdf endpoint $(((0x$bus << 8) | (0x$slot << 3) | fn))"

echo dma_map_benchmark > "$dev/driver_override"
echo "$bdf" > /sys/bus/pci/drivers_probe
if [ -n "$TB_BENCH_SET_GROUP" ]; then
	echo "$bdf" > "$dev/driver/unbind"
	echo "$TB_BENCH_SET_GROUP" > "$dev/iommu_group/type"
	echo "$bdf" > /sys/bus/pci/drivers_probe
fi
check "$bdf bound to dma_map_benchmark" \
	[ "$(basename "$(readlink "$dev/driver")")" = dma_map_benchmark ]
# The device joins its iommu group when a driver binds (the IOMMU came up
# after PCI enumeration).
group=none
[ -e "$dev/iommu_group/type" ] && group=$(cat "$dev/iommu_group/type")
check "$bdf sits in a ${TB_BENCH_GROUP:-?} iommu group (got $group)" \
	[ "$group" = "$TB_BENCH_GROUP" ]

stats before
combine=$TB_BENCH_EXPECT_COMBINE
[ -n "$combine" ] && before=$(counter "$combine")
dma_map_benchmark -t "${TB_BENCH_THREADS:-2}" -s "${TB_BENCH_SECONDS:-20}" \
	-g 1 > /tmp/dmabench.out 2>&1
status=$?
while read -r line; do
	diag "dmabench: $line"
done < /tmp/dmabench.out
check "dma_map_benchmark ran (exit $status)" [ "$status" -eq 0 ]
# Lazy domains flush their queued invalidations from a timer (10 ms).
sleep 1
stats after
if [ -n "$combine" ]; then
	grew=$(($(counter "$combine") - before))
	check "the two CPUs combined their kicks ($combine +$grew)" [ "$grew" -gt 0 ]
fi
plan
