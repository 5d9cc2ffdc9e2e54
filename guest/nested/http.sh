#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# The L1 side of the nested bed's NIC test, one HTTP request on stdin and
# stdout (busybox nc -ll -e): the L2 guest's net step expects what the host
# serves in single-level scenarios (testbed/boot.py): GET /blob the
# download, POST /sink answers the SHA-256 of the body.
read -r method path _
len=0
while read -r line; do
	line=$(printf '%s' "$line" | tr -d '\r')
	[ -z "$line" ] && break
	case "$line" in
	[Cc]ontent-[Ll]ength:*) len=${line#*:}; len=$((len + 0)) ;;
	esac
done
case "$method $path" in
"GET /blob")
	printf 'HTTP/1.0 200 OK\r\nContent-Length: %s\r\n\r\n' \
		"$(wc -c < /l2/blob)"
	cat /l2/blob
	;;
"POST /sink")
	sum=$(head -c "$len" | sha256sum | cut -d' ' -f1)
	echo "$sum" >> /tmp/sink.log
	printf 'HTTP/1.0 200 OK\r\nContent-Length: %s\r\n\r\n%s' "${#sum}" "$sum"
	;;
*)
	printf 'HTTP/1.0 404 Not Found\r\nContent-Length: 0\r\n\r\n'
	;;
esac
