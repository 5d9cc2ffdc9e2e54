# SPDX-License-Identifier: GPL-2.0
# The nested test bed's L1 step (testbed/nested.py): this guest runs our
# host kernel; it loads vhost-iommu and vhost-net, puts a tap and an HTTP
# server where the L2 guest's NIC test looks for its host (10.0.2.2), and
# runs our QEMU (TCG) for an L2 guest behind a virtio-iommu, served by
# /dev/vhost-iommu (TB_L2_VHOST=1) or by QEMU (the reference). L2's console
# is copied here with an "L2: " prefix, for the host to judge its steps.
. /steps/lib.sh
# TB_L1_VHOST_MAX_MAPPINGS: the most mappings L2's device may hold
modprobe vhost_iommu ${TB_L1_VHOST_MAX_MAPPINGS:+max_mappings=$TB_L1_VHOST_MAX_MAPPINGS} 2>/dev/null
for m in vhost_net tun; do
	modprobe "$m" 2>/dev/null
done
if [ "$TB_L2_VHOST" = 1 ]; then
	check "/dev/vhost-iommu exists (modprobe vhost_iommu)" [ -c /dev/vhost-iommu ]
fi
check "/dev/vhost-net exists (modprobe vhost_net)" [ -c /dev/vhost-net ]
mkdir -p /dev/net
[ -c /dev/net/tun ] || mknod /dev/net/tun c 10 200
ip link set lo up
check "tap0 created" tunctl -t tap0
ip link set tap0 up
ip addr add 10.0.2.2/24 dev tap0
nc -ll -p "$TB_HTTP_PORT" -e /l2/http.sh &
httpd=$!
# and a one-byte echo for L2's TCP round trips (the bench's net-bench)
io_bench echo "$TB_ECHO_PORT" &
echod=$!

# With -no-reboot a reset would end QEMU: the reset variant goes without
noreboot=-no-reboot
[ -n "$TB_L2_RESET_AFTER" ] && noreboot=
# No IOMMU in L2 (the bench's floor): no -device for it
iommu=
[ -n "$TB_L2_IOMMU" ] && iommu="-device $TB_L2_IOMMU"
# L2's edu: QEMU's own, or (TB_L2_VFIO=1) ours, the edu L0 put behind its
# IOMMU, assigned to L2 with vfio-pci: vhost-iommu then hands L2's domain
# to our VFIO container, and L0's IOMMU walks the composed table. QEMU's
# is TB_L2_EDU: 1 ms a DMA (our QEMU patch 0048), not 100
edu="-device $TB_L2_EDU"
# TB_L2_HOTPLUG=1: a root port for L2's pci-hotplug step to plug an edu in
hotplug=
[ "$TB_L2_HOTPLUG" = 1 ] &&
	hotplug="-device pcie-root-port,id=rp1,bus=pcie.0,chassis=1,slot=1"
if [ "$TB_L2_VFIO" = 1 ]; then
	modprobe vfio-pci 2>/dev/null
	bdf=
	for d in /sys/bus/pci/devices/*; do
		[ "$(cat "$d/vendor")" = 0x1234 ] &&
			[ "$(cat "$d/device")" = 0x11e8 ] && bdf=${d##*/}
	done
	if [ -n "$bdf" ]; then
		[ -e "/sys/bus/pci/devices/$bdf/driver" ] &&
			echo "$bdf" > "/sys/bus/pci/devices/$bdf/driver/unbind"
		echo vfio-pci > "/sys/bus/pci/devices/$bdf/driver_override"
		echo "$bdf" > /sys/bus/pci/drivers_probe
	fi
	check "L1's edu ($bdf) is bound to vfio-pci" \
		[ -n "$bdf" -a -e "/sys/bus/pci/drivers/vfio-pci/$bdf" ]
	edu="-device vfio-pci,host=$bdf"
fi

# paused MONITOR-INPUT QEMU-ARGS...: QEMU builds a small machine, paused,
# runs the monitor commands on its stdin and ends on their quit (its exit
# status in $rc, its output in /tmp/admit.log)
paused() {
	input=$1
	shift
	printf '%b' "$input" | timeout 300 "$TB_L2_QEMU" -L /usr/share/qemu \
		-L /usr/share/seabios -machine "$TB_L2_MACHINE" -accel tcg \
		-m 64 -nodefaults -display none -S -monitor stdio "$@" \
		> /tmp/admit.log 2>&1
	rc=$?
}

# admitted PROPS: QEMU builds a machine with the edu assigned (VFIO) behind
# virtio-iommu-pci,PROPS and ends on the monitor's quit (0), or refuses it
# (1, its reason in /tmp/admit.log)
admitted() {
	paused 'quit\n' -device "virtio-iommu-pci,$1" -device "vfio-pci,host=$bdf"
	diag "virtio-iommu-pci,$1 with VFIO: exit $rc $(grep -m 1 'virtio-iommu with' /tmp/admit.log)"
	return $rc
}

# refused PROPS REASON: admitted() fails, and QEMU says REASON
refused() {
	! admitted "$1" && grep -q -e "$2" /tmp/admit.log
}

# hotplugged PROPS: the machine built and paused, the monitor plugs the edu
# into a root port behind virtio-iommu-pci,PROPS; QEMU goes on to the
# monitor's quit (0), and the machine's peripherals list the edu (hp0) if
# it was admitted. The reason of a refusal is in /tmp/admit.log.
hotplugged() {
	paused "device_add vfio-pci,host=$bdf,bus=rp1,id=hp0\nqom-list /machine/peripheral\nquit\n" \
		-device pcie-root-port,id=rp1,bus=pcie.0,chassis=1,slot=1 \
		-device "virtio-iommu-pci,$1"
	diag "hotplug behind virtio-iommu-pci,$1: exit $rc $(grep -m 1 -e 'Error' /tmp/admit.log)"
	[ "$rc" -eq 0 ] && grep -q 'hp0 (child<vfio-pci>)' /tmp/admit.log
}

# hotplug_refused PROPS REASON: the plug fails with REASON, and QEMU runs on
# to the monitor's quit (0)
hotplug_refused() {
	! hotplugged "$1" && [ "$rc" -eq 0 ] && grep -q -e "$2" /tmp/admit.log
}

# TB_L2_REFUSALS=1: a device that keeps translations of its own (VFIO's
# container) has its IOMMU notifier refused by a virtio-iommu whose guest
# would not tell it of every change (QEMU patches 0032, 0035, 0036): QEMU
# ends with the reason instead of letting the copy go stale. With
# boot-bypass=on (the default) VFIO would ask for its notifier only when
# the guest attaches the edu, so it asks the IOMMU while the edu is
# realized (patch 0037), cold-plugged or hotplugged; with boot-bypass=off
# the edu's address space is the IOMMU's from the start, and the answer is
# the same. The controls: the configuration this scenario's L2 runs with
# is admitted, cold-plugged and hotplugged.
if [ "$TB_L2_REFUSALS" = 1 ]; then
	check "QEMU admits VFIO behind attach-table=on,attach-table-inval-map=on" \
		admitted attach-table=on,attach-table-inval-map=on
	check "QEMU refuses VFIO behind attach-table=on without inval-map (no MAPs told)" \
		refused attach-table=on 'needs attach-table-inval-map=on'
	check "QEMU refuses VFIO behind attach-table-no-cache=on (no INVALIDATE on unmap)" \
		refused attach-table=on,attach-table-no-cache=on \
		'attach-table-no-cache=on tells'
	check "QEMU refuses VFIO behind attach-table-posted-inval=on (INVALIDATEs unnotified)" \
		refused attach-table=on,attach-table-posted-inval=on \
		'attach-table-posted-inval=on lets'
	check "with boot-bypass=off, the refusal fails the edu's realize" \
		refused boot-bypass=off,attach-table=on,attach-table-no-cache=on \
		'vfio-pci,host=.*attach-table-no-cache=on tells'
	check "QEMU admits the edu hotplugged behind attach-table-inval-map=on" \
		hotplugged attach-table=on,attach-table-inval-map=on
	check "QEMU refuses the edu hotplugged behind attach-table-posted-inval=on, and runs on" \
		hotplug_refused attach-table=on,attach-table-posted-inval=on \
		'attach-table-posted-inval=on lets'
fi
# The kernel device's own counters and endpoints (debugfs) go with its file
# when QEMU exits, and the endpoints with the reset when L2 powers off:
# keep the last look at them while the device ran, every 2 s
: > /tmp/hotplug.log
snap=
if [ "$TB_L2_VHOST" = 1 ]; then
	while :; do
		cat /sys/kernel/debug/vhost-iommu/[0-9]*/stats > /tmp/vstats.new \
			2>/dev/null && grep -q '^running 1' /tmp/vstats.new &&
			mv /tmp/vstats.new /tmp/vstats
		sleep 2
	done &
	snap=$!
fi
# QEMU's trace of the requests it served, read below to tell who served
# them. The bench's boots go without it (TB_L2_TRACE=0): QEMU writes each
# traced line to the file, which the path whose requests QEMU serves (a
# MAP each) would pay for in its times, the kernel device's not.
trace="-trace enable=virtio_iommu_attach -trace enable=virtio_iommu_map
	-trace enable=virtio_iommu_attach_table
	-trace enable=virtio_iommu_table_sync
	-trace enable=virtio_iommu_vhost_* -trace enable=vhost_iommu_prefetch
	-D /tmp/l2.trace"
traced() { [ "$TB_L2_TRACE" != 0 ]; }
traced || trace=
: > /tmp/l2.trace
t0=$(date +%s)

# migrate_l2: the monitor commands that migrate the running L2 live to
# /tmp/l2.mig (QEMU stops it for the last pass) and end its QEMU, written
# as the migration goes (the monitor's answers, which nc appends to
# /tmp/l2.migrate.log, say when it ended; at most 10 minutes). A VM
# stopped before it would stay stopped in the new QEMU.
migrate_l2() {
	printf '%s\n' 'migrate -d "exec:cat > /tmp/l2.mig"'
	n=0
	while [ $n -lt 600 ]; do
		sleep 1
		echo 'info migrate'
		grep -q -e 'Migration status: completed' \
			-e 'Migration status: failed' /tmp/l2.migrate.log && break
		n=$((n + 1))
		[ $((n % 15)) = 0 ] && echo "L2-MIGRATE $n s: $(tail -c 300 \
			/tmp/l2.migrate.log | tr -d '\r' | tr '\n' ' ')" >&2
	done
	echo quit
	sleep 1
}

# run_l2 [QEMU-ARGS...]: L2's QEMU, its console and stderr read below. A
# migration ends it (TB_L2_MIGRATE_AFTER) and starts it again from the
# saved state (-incoming): each QEMU traces to a file of its own.
run_l2() {
# -serial stdio: each line of L2's console reaches us as it is printed, so
# that the time L2 reached its /init is known here; QEMU's stderr comes in
# the same stream, its lines in order with the console's.
# shellcheck disable=SC2086
timeout "$TB_L2_TIMEOUT" "$TB_L2_QEMU" -L /usr/share/qemu \
	-L /usr/share/seabios -machine "$TB_L2_MACHINE" -accel tcg \
	-cpu "$TB_L2_CPU" -smp 1 -m "$TB_L2_MEM_MB" -nodefaults -display none \
	$noreboot -serial stdio \
	-kernel /l2/kernel -initrd /l2/initrd.cpio \
	-append "console=$TB_L2_CONSOLE panic=-1 $TB_L2_APPEND" \
	$iommu \
	-drive file=/l2/disk.img,if=none,id=disk0,format=raw,cache=unsafe \
	-device virtio-blk-pci,drive=disk0,disable-legacy=on,iommu_platform=on \
	-netdev tap,id=net0,ifname=tap0,script=no,downscript=no,vhost=on \
	-device virtio-net-pci,netdev=net0,romfile=,disable-legacy=on,iommu_platform=on \
	$edu $hotplug $trace "$@" \
	-monitor tcp:127.0.0.1:4444,server=on,wait=off \
	< /dev/null 2>&1 | while IFS= read -r line; do
		case "$line" in
		TB-BOOTED*) echo "L2-TIME booted $(($(date +%s) - t0))" ;;
		# TB_L2_RESET_AFTER=<step>: once that step ended, reset L2
		# (a guest reboot: every device reset under the kernel
		# device's endpoints and vhost-net's binding); it boots and
		# runs its steps again
		"TB-END $TB_L2_RESET_AFTER "*)
			if [ -n "$TB_L2_RESET_AFTER" ] && [ ! -e /tmp/l2.reset ]; then
				touch /tmp/l2.reset
				echo "L2-TIME reset $(($(date +%s) - t0))"
				echo system_reset | nc 127.0.0.1 4444 > /dev/null &
			fi
			;;
		# TB_L2_PAUSE_AFTER=<step>: once that step ended, stop L2's
		# VM for 2 s and let it run again (a snapshot's or a
		# migration's pause): the kernel device must keep every
		# domain and mapping for the steps after it
		"TB-END $TB_L2_PAUSE_AFTER "*)
			if [ -n "$TB_L2_PAUSE_AFTER" ] && [ ! -e /tmp/l2.paused ]; then
				touch /tmp/l2.paused
				echo "L2-TIME paused $(($(date +%s) - t0))"
				(echo stop; sleep 2; echo cont) |
					nc 127.0.0.1 4444 > /dev/null &
			fi
			;;
		# TB_L2_MIGRATE_AFTER=<step>: once that step ended, migrate
		# L2 live to a file (a migration's stream, the kernel device's
		# state in it) and end this QEMU; a new one takes L2 from the
		# file below and L2 runs its next steps there
		"TB-END $TB_L2_MIGRATE_AFTER "*)
			if [ -n "$TB_L2_MIGRATE_AFTER" ] && [ ! -e /tmp/l2.migrating ]; then
				touch /tmp/l2.migrating
				echo "L2-TIME migrating $(($(date +%s) - t0))"
				migrate_l2 | nc 127.0.0.1 4444 \
					> /tmp/l2.migrate.log 2>&1 &
			fi
			;;
		# L2's pci-hotplug step asks for an edu on rp1 and for its
		# unplug; the kernel device's endpoints are noted each time
		# before the change: after the add L2 saw, after the unplug
		# L2 saw, after the second add L2 saw
		TB-HOTPLUG*)
			eps=$(cat /sys/kernel/debug/vhost-iommu/[0-9]*/stats \
				2>/dev/null | grep -c '^endpoint ')
			echo "${line#TB-HOTPLUG } $eps" >> /tmp/hotplug.log
			case "$line" in
			*add*) hmp="device_add $TB_L2_EDU,bus=rp1,id=hp0" ;;
			*del*) hmp="device_del hp0" ;;
			*) hmp= ;;
			esac
			[ -n "$hmp" ] && echo "$hmp" | nc 127.0.0.1 4444 > /dev/null &
			;;
		# QEMU's stderr, in order with L2's console
		qemu-system-*:*)
			echo "$line" >> /tmp/l2.err
			echo "L2-QEMU $(($(date +%s) - t0)) s: $line"
			continue
			;;
		esac
		echo "L2: $line"
		echo "$line" >> /tmp/l2.log
	done
}

run_l2
if [ -e /tmp/l2.migrating ]; then
	diag "l2-migration: $(grep -e 'Migration status' -e 'total time' -e 'downtime' /tmp/l2.migrate.log | tail -n 3 | tr -d '\r' | tr '\n' ' ')$(du -k /tmp/l2.mig 2>/dev/null | cut -f1) KiB"
	grep -q 'Migration status: completed' /tmp/l2.migrate.log ||
		tr -d '\r' < /tmp/l2.migrate.log | tail -n 20 | while read -r line; do
			diag "l2-monitor: $line"
		done
	echo "L2-TIME restored $(($(date +%s) - t0))"
	touch /tmp/l2.migrated
	traced && trace=$(echo "$trace" | sed 's#/tmp/l2.trace#/tmp/l2.trace2#')
	run_l2 -incoming "exec:cat /tmp/l2.mig"
	[ -e /tmp/l2.trace2 ] && cat /tmp/l2.trace2 >> /tmp/l2.trace
	# Why the kernel device refused a state, if it did (its log only)
	dmesg | grep 'vhost-iommu: state' | while read -r line; do
		diag "l1-kernel: $line"
	done
fi
echo "L2-TIME done $(($(date +%s) - t0))"
kill "$httpd" "$echod" $snap 2>/dev/null
while read -r line; do
	diag "l2-qemu: $line"
done < /tmp/l2.err
check "L2 powered off after its steps" grep -q '^TB-DONE' /tmp/l2.log
if [ -n "$TB_L2_PAUSE_AFTER" ]; then
	check "L2 was stopped and ran on after its $TB_L2_PAUSE_AFTER step" \
		[ -e /tmp/l2.paused ]
fi
migrated() {
	[ -e /tmp/l2.migrated ] &&
		grep -q 'Migration status: completed' /tmp/l2.migrate.log
}
if [ -n "$TB_L2_MIGRATE_AFTER" ]; then
	check "L2 was saved after its $TB_L2_MIGRATE_AFTER step and ran on from the file" \
		migrated
fi
# QEMU's device logs the edu test's faults ("no mapping"), and vfio-pci
# that the edu has no reset to give (no FLR, no PM reset); QEMU 7.2's
# virtio-iommu warns each time VFIO adds the IOMMU region after machine
# init (an attach) that the host's page sizes are not the device's (the
# granule is the same, or it would refuse). Nothing else may come: no
# vhost-net fallback to userspace, no vring error, no VFIO map error
cat > /tmp/l2.expected <<'LIST'
virtio_iommu_translate no mapping for
vfio: Cannot reset device .*, no available reset mechanism
warning: virtio-iommu page mask 0x[0-9a-f]* does not match
LIST
# TB_L2_VHOST_REFUSED=<the device's reason>: the IOMMU refuses vhost-net's
# IOTLB notifier, as it would not tell it of every unmap; vhost-net fails
# to start and virtio-net serves the NIC in QEMU, where translations stay
# right (QEMU patch 0039; QEMU ended before). The NIC's data checks in L2
# and L1's upload check prove the fallback moves data.
if [ -n "$TB_L2_VHOST_REFUSED" ]; then
	check "QEMU refused vhost-net's IOTLB notifier, with the device's reason" \
		grep -q "vhost: the IOMMU refuses the device's IOTLB notifier: .*$TB_L2_VHOST_REFUSED" \
		/tmp/l2.err
	check "vhost-net fell back on userspace virtio, QEMU kept running" \
		grep -q 'unable to start vhost net: .*falling back on userspace virtio' \
		/tmp/l2.err
	cat >> /tmp/l2.expected <<'LIST'
vhost: the IOMMU refuses the device's IOTLB notifier:
unable to start vhost net: .*falling back on userspace virtio
LIST
	what="no other error: no vring error, no VFIO error"
else
	what="no error: no vhost fallback, no vring error, no VFIO error"
fi
check "QEMU reported $what" [ -z "$(grep -v -f /tmp/l2.expected /tmp/l2.err)" ]
# The disk's write region holds what L2 said it wrote
want=$(sed -n 's/^# disk-write-sha256 //p' /tmp/l2.log | tr -d '\r' | tail -n 1)
got=$(dd if=/l2/disk.img bs=1M skip="$TB_DISK_READ_MB" \
	count="$TB_DISK_WRITE_MB" 2>/dev/null | sha256sum | cut -d' ' -f1)
[ "$TB_L2_CHECK_DISK" = 0 ] ||
	check "L2's disk image holds the data it wrote" [ -n "$want" -a "$got" = "$want" ]
[ "$TB_L2_CHECK_NET" = 0 ] ||
	check "L1's server got L2's upload" [ -s /tmp/sink.log ]
# Who served the requests: QEMU's trace of its userspace device
attach=$(grep -c 'virtio_iommu_attach ' /tmp/l2.trace)
maps=$(grep -c 'virtio_iommu_map ' /tmp/l2.trace)
tables=$(grep -c 'virtio_iommu_attach_table ' /tmp/l2.trace)
# QEMU's scans of L2's tables for MAP notifiers (VFIO): the leaves mapped
scans=$(grep -c 'virtio_iommu_table_sync ' /tmp/l2.trace)
synced=$(sed -n 's/.*virtio_iommu_table_sync .* mapped=\([0-9]*\).*/\1/p' \
	/tmp/l2.trace | awk '{ n += $1 } END { print n + 0 }')
eps=$(grep -c 'virtio_iommu_vhost_endpoint .*added=1' /tmp/l2.trace)
tr=$(grep -c 'virtio_iommu_vhost_translate ' /tmp/l2.trace)
dels=$(grep -c 'virtio_iommu_vhost_endpoint .*added=0' /tmp/l2.trace)
traced && diag "qemu-trace: attach=$attach map=$maps attach-table=$tables table-scans=$scans leaves-mapped=$synced vhost-endpoints=$eps deleted=$dels vhost-translate=$tr"
if [ "$TB_L2_VHOST" = 1 ]; then
	if traced; then
		check "QEMU served no request (the kernel device did)" \
			[ "$attach" -eq 0 -a "$maps" -eq 0 ]
		check "QEMU registered the endpoints with the kernel device" \
			[ "$eps" -ge 3 ]
		check "emulated devices' DMA was translated by the kernel device" \
			[ "$tr" -gt 0 ]
		# Its used rings' translations went into its IOTLB before its
		# backend was set (QEMU patch 0034), so that needed no retry
		pre=$(grep -c 'vhost_iommu_prefetch .* ret 0' /tmp/l2.trace)
		check "QEMU prefetched vhost-net's used rings from the kernel device ($pre)" \
			[ "$pre" -gt 0 ]
	fi
	# Who served the requests, by the kernel device's own counters: its
	# last look while QEMU ran, and the module's totals since it loaded
	vstat() { awk -v k="$1" '$1 == k { v = $2 } END { print v + 0 }' "$2"; }
	totals=/sys/kernel/debug/vhost-iommu/totals
	[ -e /tmp/vstats ] || : > /tmp/vstats
	[ -e "$totals" ] || totals=/dev/null
	while read -r line; do
		diag "vhost-iommu-device: $line"
	done < /tmp/vstats
	while read -r line; do
		diag "vhost-iommu-totals: $line"
	done < "$totals"
	check "the kernel device served ATTACH ($(vstat attach "$totals") + $(vstat attach_table "$totals") ATTACH_TABLE) and MAP or INVALIDATE ($(vstat map "$totals"), $(vstat invalidate "$totals"))" \
		[ $(($(vstat attach "$totals") + $(vstat attach_table "$totals"))) -gt 0 -a \
		  $(($(vstat map "$totals") + $(vstat invalidate "$totals"))) -gt 0 ]
	check "the kernel device translated vhost-net's misses ($(vstat misses "$totals")) and QEMU's lookups ($(vstat translates "$totals"))" \
		[ "$(vstat misses "$totals")" -gt 0 -a "$(vstat translates "$totals")" -gt 0 ]
	check "vhost-net was bound to its endpoint (dma=vhost)" grep -q ' dma=vhost ' /tmp/vstats
	if [ "$TB_L2_VFIO" = 1 ]; then
		check "the edu was a VFIO endpoint of the kernel device (dma=vfio, in a domain)" \
			grep -q 'domain=[0-9].* dma=vfio ' /tmp/vstats
	fi
	# poll-us (QEMU patch 0049): the worker's busy loop found requests
	# L2 did not notify; without it the worker never loops
	case "$TB_L2_IOMMU" in
	*poll-us=*)
		check "the worker's busy loop served requests L2 did not notify ($(vstat busy_poll_hits "$totals") of $(vstat busy_polls "$totals") looks)" \
			[ "$(vstat busy_poll_hits "$totals")" -gt 0 ]
		;;
	*)
		check "no busy loop without poll-us ($(vstat busy_polls "$totals") looks)" \
			[ "$(vstat busy_polls "$totals")" -eq 0 ]
		;;
	esac
	# Posted MAP: lookups found MAPs L2 had not notified, and served them
	if [ "$(vstat posted_map /tmp/vstats)" = 1 ] &&
	   grep -q ' mode=map ' /tmp/vstats; then
		check "lookups served MAPs L2 left unnotified ($(vstat fetches "$totals") fetches, $(vstat fetched "$totals") requests)" \
			[ "$(vstat fetched "$totals")" -gt 0 ]
	fi
	if [ "$TB_L2_HOTPLUG" = 1 ]; then
		# The endpoints L1's kernel device had as L2 asked for each
		# change: add (before), del (the edu in), add (the edu gone),
		# done (the edu in again: a device plugged into a slot used
		# before is registered too)
		while read -r what n; do
			diag "hotplug: before $what: $n endpoints"
		done < /tmp/hotplug.log
		# shellcheck disable=SC2046
		set -- $(awk '{ print $2 } END { for (; NR < 4; NR++) print -9 }' \
			/tmp/hotplug.log)
		check "the hotplugged edu became an endpoint of the kernel device" \
			[ "$2" -eq $(($1 + 1)) ]
		check "its unplug deleted the endpoint (nothing left behind)" \
			[ "$3" -eq "$1" ]
		# QEMU added that slot's endpoint twice (not the one left
		# behind counted again)
		twice=$(grep -o 'virtio_iommu_vhost_endpoint endpoint 0x[0-9a-f]* added=1' \
			/tmp/l2.trace | sort | uniq -d | wc -l)
		check "an edu plugged into the same slot is an endpoint again (added twice: $twice)" \
			[ "$4" -eq $(($1 + 1)) -a "$twice" -eq 1 ]
	fi
	if [ -n "$TB_L2_RESET_AFTER" ]; then
		check "L2 was reset and booted again" \
			[ "$(grep -c '^TB-BOOTED' /tmp/l2.log)" -eq 2 ]
		# The reset deleted the endpoints, the second boot added them
		# again (an ADD of one left behind fails: QEMU's stderr): two
		# boots of four endpoints (the trace shows two starts of the
		# device a boot), every one deleted again
		check "the reset deleted every endpoint, the boot added them again" \
			[ "$eps" -ge 8 -a "$eps" -eq "$dels" ]
	fi
elif ! traced; then
	: # who served the requests is the trace's to tell
elif [ -n "$TB_L2_IOMMU" ] && [ -z "${TB_L2_IOMMU##*attach-table=on*}" ]; then
	check "QEMU's device served ATTACH_TABLE ($tables) and no MAP ($maps)" \
		[ "$tables" -gt 0 -a "$maps" -eq 0 ]
	if [ "$TB_L2_VFIO" = 1 ]; then
		# The edu's DMA went through L1's VFIO container: its mappings
		# can only have come from QEMU's scans of L2's tables
		check "QEMU mapped L2's table leaves into VFIO ($scans scans, $synced leaves)" \
			[ "$scans" -gt 0 -a "$synced" -gt 0 ]
	fi
elif [ -n "$TB_L2_IOMMU" ]; then
	check "QEMU's device served ATTACH and MAP" [ "$attach" -gt 0 -a "$maps" -gt 0 ]
fi
# L0's IOMMU faulted the edu's DMA to an IOVA L2 never mapped (its test
# checks its memory; QEMU's vfio-pci tells L2 of no fault): L1 logged it
l1_fault_logged() { dmesg | grep -Eq "$TB_L1_FAULT_PATTERN"; }
if [ -n "$TB_L1_FAULT_PATTERN" ]; then
	check "L1's IOMMU driver logged the edu's fault" l1_fault_logged
fi
# QEMU closed its files: nothing L2 left behind (a domain, a binding, an
# endpoint) may still hold the modules
check "vhost_net unloads once QEMU is gone" rmmod vhost_net
if [ "$TB_L2_VHOST" = 1 ]; then
	check "vhost_iommu unloads once QEMU is gone" rmmod vhost_iommu
fi
plan
