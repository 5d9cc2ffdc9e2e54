# SPDX-License-Identifier: GPL-2.0
# Leaks since kmemleak-clear: scan twice (an object must be seen unreferenced
# in two scans, a few seconds apart), then report whatever is suspected.
. /steps/lib.sh
k=/sys/kernel/debug/kmemleak
check "kmemleak is enabled" [ -w $k ]
echo scan > $k
sleep 6
echo scan > $k
leaks=$(grep -c 'unreferenced object' $k)
if [ "$leaks" -ne 0 ]; then
	sed 's/^/# /' $k | head -60
fi
check "no memory leaks (kmemleak found $leaks)" [ "$leaks" -eq 0 ]
plan
