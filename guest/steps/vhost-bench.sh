# SPDX-License-Identifier: GPL-2.0
# `make bench-vhost`: the vhost-iommu selftest's benchmark, MAP/UNMAP pairs
# at 1, 16 and 256 requests a kick, TB_BENCH_SECONDS for each, then what an
# unmap costs in each mode (UNMAPs against one INVALIDATE of the guest's
# table) at the same batch sizes, and a TRANSLATE in a 4 KiB MAP against
# one in a 1 GiB MAP of 4 KiB pages, and MAP+UNMAP pairs that free their
# leaf table against pairs that keep it. The host reads the "# bench-vhost:",
# "# bench-vhost-table:", "# bench-vhost-translate:" and
# "# bench-vhost-tables:" lines.
. /steps/lib.sh

check "modprobe vhost_iommu" modprobe vhost_iommu
export VHOST_IOMMU_BENCH_SECONDS="${TB_BENCH_SECONDS:-5}"
selftest_bench vhost_iommu bench_map_unmap bench-vhost
selftest_bench vhost_iommu_table bench_invalidate bench-vhost-table
selftest_bench vhost_iommu bench_translate bench-vhost-translate
selftest_bench vhost_iommu bench_table_pairs bench-vhost-tables
plan
