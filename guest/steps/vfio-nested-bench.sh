# SPDX-License-Identifier: GPL-2.0
# `make bench-nested`: vfio_nested's benchmark on the edu behind this IOMMU,
# TB_BENCH_SECONDS a path and round, TB_BENCH_ROUNDS rounds. The host reads
# the "# bench-nested:" lines.
. /steps/lib.sh
modprobe vfio-pci || diag "modprobe vfio-pci failed"
export VFIO_NESTED_BENCH_SECONDS="${TB_BENCH_SECONDS:-2}"
export VFIO_NESTED_BENCH_ROUNDS="${TB_BENCH_ROUNDS:-3}"
selftest_bench vfio_nested bench bench-nested
plan
