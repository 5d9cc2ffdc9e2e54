# SPDX-License-Identifier: GPL-2.0
# virtio-net behind the IOMMU, on QEMU's user network: fetch a blob from the
# host's HTTP server (10.0.2.2) and compare its digest, then POST one back;
# the server answers with the digest of what it received.
. /steps/lib.sh
net_up
sum=$(blob_sha256)
check "download through the NIC arrives intact" [ "$sum" = "$TB_NET_SHA256" ]
# busybox wget posts its file as a C string: send text (base64), not bytes.
dd if=/dev/urandom bs=1M count="$TB_NET_UP_MB" 2>/dev/null | base64 > /tmp/up
want=$(sha256sum /tmp/up | cut -d' ' -f1)
got=$(wget -q -O - --post-file /tmp/up "http://10.0.2.2:$TB_HTTP_PORT/sink")
check "upload through the NIC arrives intact" [ "$got" = "$want" ]
plan
