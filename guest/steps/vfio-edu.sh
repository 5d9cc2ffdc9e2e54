# SPDX-License-Identifier: GPL-2.0
# QEMU's edu device through vfio-pci and VFIO type1 (the selftest's own TAP).
# The stress scenarios set TB_STRESS_EDU_OPS (its stress test's length) and
# TB_STRESS_NEED_HUGE (2 MiB mappings must be huge-page backed); TB_IOMMU_GRANULE,
# where set, is the smallest IOMMU page size VFIO must report; TB_EDU_FAIL_QUEUE,
# the IOMMU driver's fault attribute that makes an UNMAP fail once;
# TB_EDU_REPLAY_MAPS, how many mappings a filled domain replays at its attach;
# TB_EDU_STALL_ATTACH, how long the IOMMU stops before each ATTACH (ms);
# TB_EDU_OVER_BUDGET_MAPS, how many mappings to make past the room the IOMMU
# has for them, and TB_EDU_TESTS, the only tests to run (names, separated by
# spaces).
modprobe vfio-pci || echo "# modprobe vfio-pci failed"
export EDU_FAULT_PATTERN="$TB_FAULT_PATTERN"
export EDU_STRESS_OPS="$TB_STRESS_EDU_OPS"
export EDU_STRESS_SEED="$TB_STRESS_SEED"
export EDU_STRESS_NEED_HUGE="$TB_STRESS_NEED_HUGE"
export EDU_IOMMU_GRANULE="$TB_IOMMU_GRANULE"
export EDU_FAIL_QUEUE="$TB_EDU_FAIL_QUEUE"
export EDU_REPLAY_MAPS="$TB_EDU_REPLAY_MAPS"
export EDU_STALL_ATTACH="$TB_EDU_STALL_ATTACH"
export EDU_OVER_BUDGET_MAPS="$TB_EDU_OVER_BUDGET_MAPS"
set --
for t in $TB_EDU_TESTS; do
	set -- "$@" -t "$t"
done
exec /bin/vfio_edu_dma "$@"
