# SPDX-License-Identifier: GPL-2.0
# now_cs: centiseconds since boot, from /proc/uptime. /init times each step
# with it, the benchmark steps their passes (sourced by /init and lib.sh).
now_cs() {
	awk '{ printf "%d\n", $1 * 100 }' /proc/uptime
}
