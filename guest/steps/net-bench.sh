# SPDX-License-Identifier: GPL-2.0
# The nested bench's NIC rows (testbed/bench_nested.py): the net step's
# download and upload timed, then TB_NET_RR small requests one after the
# other (a request/response rate: each is a TCP connection and one HTTP
# exchange with L1's server). Times from /proc/uptime (centiseconds).
# With TB_NET_TCP_RR_SECONDS, one-byte TCP round trips to L1's echo server
# (io_bench rr) for that long: a request/response rate no server's fork
# bounds. The host reads the "# netbench:" and "# bench-mmio: rr" lines.
. /steps/lib.sh
net_up
url="http://10.0.2.2:$TB_HTTP_PORT"

dd if=/dev/urandom bs=1M count="$TB_NET_UP_MB" 2>/dev/null | base64 > /tmp/up
want=$(sha256sum /tmp/up | cut -d' ' -f1)
t0=$(now_cs)
wget -q -O /tmp/down "$url/blob"
t1=$(now_cs)
got=$(wget -q -O - --post-file /tmp/up "$url/sink")
t2=$(now_cs)
sum=$(sha256sum /tmp/down | cut -d' ' -f1)
check "download through the NIC arrives intact" [ "$sum" = "$TB_NET_SHA256" ]
check "upload through the NIC arrives intact" [ "$got" = "$want" ]
n=${TB_NET_RR:-20}
i=0
ok=0
t3=$(now_cs)
while [ "$i" -lt "$n" ]; do
	wget -q -O /dev/null "$url/sink" --post-data x 2>/dev/null && ok=$((ok + 1))
	i=$((i + 1))
done
t4=$(now_cs)
check "every small request answered ($ok of $n)" [ "$ok" -eq "$n" ]
diag "netbench: down_bytes=$(wc -c < /tmp/down) down_cs=$((t1 - t0)) up_bytes=$(wc -c < /tmp/up) up_cs=$((t2 - t1)) rr=$ok rr_cs=$((t4 - t3))"
if [ -n "$TB_NET_TCP_RR_SECONDS" ]; then
	io_bench rr 10.0.2.2 "$TB_ECHO_PORT" "$TB_NET_TCP_RR_SECONDS" > /tmp/rr.out 2>&1
	status=$?
	diag "$(cat /tmp/rr.out)"
	check "TCP round trips to L1's echo server (exit $status)" [ "$status" -eq 0 ]
fi
plan
