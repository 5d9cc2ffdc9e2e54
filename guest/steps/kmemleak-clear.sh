# SPDX-License-Identifier: GPL-2.0
# Forget what boot allocated, so the final kmemleak step judges the tests only.
. /steps/lib.sh
check "kmemleak is enabled" [ -w /sys/kernel/debug/kmemleak ]
echo clear > /sys/kernel/debug/kmemleak
plan
