# SPDX-License-Identifier: GPL-2.0
# `make bench-vhost`: the vhost-iommu selftest's benchmark, MAP/UNMAP pairs
# at 1, 16 and 256 requests a kick, TB_BENCH_SECONDS for each, then what an
# unmap costs in each mode (UNMAPs against one INVALIDATE of the guest's
# table) at the same batch sizes. The host reads the "# bench-vhost:" and
# "# bench-vhost-table:" lines.
. /steps/lib.sh

# bench PROGRAM TEST TAG: run one benchmark test of a selftest, pass on its
# "# TAG:" lines for the host; the rest of its output only when it failed.
bench() {
	VHOST_IOMMU_BENCH_SECONDS="${TB_BENCH_SECONDS:-5}" \
		"/bin/$1" -t "$2" > /tmp/vhost-bench.out 2>&1
	status=$?
	while read -r line; do
		case "$line" in
		"# $3:"*) echo "$line" ;;
		*) [ "$status" -eq 0 ] || diag "$line" ;;
		esac
	done < /tmp/vhost-bench.out
	check "$1 -t $2 (exit $status)" [ "$status" -eq 0 ]
}

check "modprobe vhost_iommu" modprobe vhost_iommu
bench vhost_iommu bench_map_unmap bench-vhost
bench vhost_iommu_table bench_invalidate bench-vhost-table
plan
