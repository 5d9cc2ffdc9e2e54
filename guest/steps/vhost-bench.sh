# SPDX-License-Identifier: GPL-2.0
# `make bench-vhost`: the vhost-iommu selftest's benchmark, MAP/UNMAP pairs
# at 1, 16 and 256 requests a kick, TB_BENCH_SECONDS for each, then what an
# unmap costs in each mode (UNMAPs against one INVALIDATE of the guest's
# table) at the same batch sizes. The host reads the "# bench-vhost:" and
# "# bench-vhost-table:" lines.
. /steps/lib.sh

check "modprobe vhost_iommu" modprobe vhost_iommu
VHOST_IOMMU_BENCH_SECONDS="${TB_BENCH_SECONDS:-5}" \
	/bin/vhost_iommu -t bench_map_unmap > /tmp/vhost-bench.out 2>&1
status=$?
while read -r line; do
	case "$line" in
	"# bench-vhost:"*) echo "$line" ;;
	*) [ "$status" -eq 0 ] || diag "$line" ;;
	esac
done < /tmp/vhost-bench.out
check "vhost_iommu -t bench_map_unmap (exit $status)" [ "$status" -eq 0 ]
VHOST_IOMMU_BENCH_SECONDS="${TB_BENCH_SECONDS:-5}" \
	/bin/vhost_iommu_table -t bench_invalidate > /tmp/vhost-bench.out 2>&1
status=$?
while read -r line; do
	case "$line" in
	"# bench-vhost-table:"*) echo "$line" ;;
	*) [ "$status" -eq 0 ] || diag "$line" ;;
	esac
done < /tmp/vhost-bench.out
check "vhost_iommu_table -t bench_invalidate (exit $status)" [ "$status" -eq 0 ]
plan
