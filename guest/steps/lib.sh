# SPDX-License-Identifier: GPL-2.0
# TAP helpers for the shell steps: ok/fail record one test each, plan ends.
. /steps/clock.sh
TB_N=0
TB_FAILED=0
echo "TAP version 13"

ok() {
	TB_N=$((TB_N + 1))
	echo "ok $TB_N $*"
}

fail() {
	TB_N=$((TB_N + 1))
	TB_FAILED=1
	echo "not ok $TB_N $*"
}

# check NAME CMD...: one test that passes when CMD succeeds
check() {
	name=$1
	shift
	if "$@"; then ok "$name"; else fail "$name"; fi
}

diag() {
	echo "# $*"
}

plan() {
	echo "1..$TB_N"
	exit $TB_FAILED
}

# net_up: loopback and the NIC on QEMU's user network (the guest 10.0.2.15,
# the host 10.0.2.2), with one test that eth0 came up
net_up() {
	ip link set lo up
	ip link set eth0 up
	ip addr add 10.0.2.15/24 dev eth0
	check "eth0 is up" ip link show eth0
}

# blob_sha256: the SHA-256 of the host's blob fetched through the NIC
blob_sha256() {
	wget -q -O - "http://10.0.2.2:$TB_HTTP_PORT/blob" | sha256sum | cut -d' ' -f1
}

# viommu_stats_file: sets stats to the first virtio-iommu's debugfs
# counters, with one test that there is one
viommu_stats_file() {
	set -- /sys/kernel/debug/virtio-iommu/*/stats
	stats=$1
	check "the virtio-iommu driver has debugfs counters" [ -e "$stats" ]
}

# selftest_bench PROGRAM TEST TAG: run one benchmark test of a selftest
# (its settings exported by the caller), pass on its "# TAG:" lines for the
# host, the rest of its output only when it failed; one test that it passed
selftest_bench() {
	"/bin/$1" -t "$2" > /tmp/selftest-bench.out 2>&1
	status=$?
	while read -r line; do
		case "$line" in
		"# $3:"*) echo "$line" ;;
		*) [ "$status" -eq 0 ] || diag "$line" ;;
		esac
	done < /tmp/selftest-bench.out
	check "$1 -t $2 (exit $status)" [ "$status" -eq 0 ]
}

# viommu_domain_sum STATS FIELD [ERE]: the sum of FIELD=<n> over the domain
# lines of the virtio-iommu driver's debugfs STATS file that match ERE (all
# of them without one)
viommu_domain_sum() {
	awk -v re="$3" -v k="$2=" '$1 == "domain" && $0 ~ re {
		for (i = 2; i <= NF; i++) if (index($i, k) == 1)
			n += substr($i, length(k) + 1) } END { print n + 0 }' "$1"
}

# nic_rebind PARAM VALUE: set virtio_net's parameter PARAM (one the driver
# reads when it sets up its queues), unbind eth0's virtio device from
# virtio_net and bind it again, and bring eth0 up. One test that PARAM was
# there and on before, and that eth0 is bound to virtio_net, the first time.
nic_rebind() {
	nic_drv=/sys/bus/virtio/drivers/virtio_net
	if [ -z "$nic_vdev" ]; then
		check "virtio_net.$1 is there and on ($(cat /sys/module/virtio_net/parameters/$1 2>/dev/null))" \
			[ "$(cat /sys/module/virtio_net/parameters/$1 2>/dev/null)" = Y ]
		nic_vdev=$(basename "$(readlink /sys/class/net/eth0/device)")
		check "eth0 is virtio device $nic_vdev, bound to virtio_net" [ -e "$nic_drv/$nic_vdev" ]
	fi
	echo "$2" > "/sys/module/virtio_net/parameters/$1"
	echo "$nic_vdev" > $nic_drv/unbind
	echo "$nic_vdev" > $nic_drv/bind
	net_up
}

# disk_rebind FILE VALUE: write VALUE to the module parameter FILE (one
# virtio_blk reads when it sets up its queues), unbind vda's virtio device
# from virtio_blk and bind it again, and wait (5 s at most) for /dev/vda.
# The first time, one test that vda is bound to virtio_blk.
disk_rebind() {
	disk_drv=/sys/bus/virtio/drivers/virtio_blk
	if [ -z "$disk_vdev" ]; then
		disk_vdev=$(basename "$(readlink /sys/block/vda/device)")
		check "vda is virtio device $disk_vdev, bound to virtio_blk" \
			[ -e "$disk_drv/$disk_vdev" ]
	fi
	echo "$2" > "$1"
	echo "$disk_vdev" > $disk_drv/unbind
	echo "$disk_vdev" > $disk_drv/bind
	k=0
	while [ ! -b /dev/vda ] && [ $k -lt 50 ]; do
		sleep 0.1
		k=$((k + 1))
	done
}

# timed CMD...: CMD over and over until $cs centiseconds (the caller's)
# have passed; sets n (the passes), took (centiseconds) and bad (the passes
# that failed)
timed() {
	n=0
	bad=0
	t0=$(now_cs)
	while [ $(($(now_cs) - t0)) -lt "$cs" ]; do
		"$@" || bad=$((bad + 1))
		n=$((n + 1))
	done
	took=$(($(now_cs) - t0))
}

# eth0_stat NAME: eth0's counter NAME (/sys/class/net/eth0/statistics)
eth0_stat() {
	cat "/sys/class/net/eth0/statistics/$1"
}

# nic_count_from / nic_count_to: what passed between the two, set by the
# second: unmapped, the unmaps of the virtio-iommu domains ($stats, see
# viommu_stats_file; all of the guest's DMA), and rx and tx, the packets
# eth0 received and sent
nic_count_from() {
	u0=$(viommu_domain_sum "$stats" unmaps)
	rx0=$(eth0_stat rx_packets)
	tx0=$(eth0_stat tx_packets)
}
nic_count_to() {
	unmapped=$(($(viommu_domain_sum "$stats" unmaps) - u0))
	rx=$(($(eth0_stat rx_packets) - rx0))
	tx=$(($(eth0_stat tx_packets) - tx0))
}
