# SPDX-License-Identifier: GPL-2.0
# The virtio-iommu driver's own counters (debugfs), after the DMA work: what
# it sent, how it batched, and whether the faults reached the IOMMU core.
# The host's report reads the "# viommu:" lines.
. /steps/lib.sh
n=0
for f in /sys/kernel/debug/virtio-iommu/*/stats; do
	[ -e "$f" ] || continue
	n=$((n + 1))
	dev=$(basename "$(dirname "$f")")
	while read -r line; do
		diag "viommu: $dev $line"
	done < "$f"
	get() { awk -v k="$1" '$1 == k { print $2 }' "$f"; }
	check "$dev: MAP and UNMAP requests were sent" \
		[ "$(get map)" -gt 0 -a "$(get unmap)" -gt 0 ]
	check "$dev: no request failed" [ "$(get errors)" -eq 0 ]
	# VIRTIO_RING_F_INDIRECT_DESC (bit 28) refused: with it, the ring
	# would allocate an indirect table for every request
	features=$(cat "/sys/bus/virtio/devices/$dev/features")
	check "$dev: indirect descriptors refused (no allocation per request)" \
		[ "$(echo "$features" | cut -c29)" = 0 ]
	check "$dev: no wait timed out" [ "$(get timeouts)" -eq 0 ]
	# Every request queued was notified: none is left waiting for a
	# kick that never comes. A lazy domain's flush queue may still hold
	# a batch for up to its timeout (10 ms): look again after it.
	sent() { echo $(($(get attach) + $(get detach) + $(get map) + $(get unmap) + $(get probe))); }
	[ "$(get kicked_requests)" -eq "$(sent)" ] || sleep 1
	kicked=$(get kicked_requests)
	queued=$(sent)
	check "$dev: kicks ($(get kicks)) carried every request queued ($kicked of $queued)" \
		[ "$(get kicks)" -gt 0 -a "$kicked" -eq "$queued" ]
	if [ -n "$TB_VIOMMU_DOMAIN" ]; then
		check "$dev: endpoints sit in $TB_VIOMMU_DOMAIN domains" \
			grep -q "^domain [0-9]* type=$TB_VIOMMU_DOMAIN endpoints=[1-9]" "$f"
	fi
	case " $TB_STEPS " in
	*" vfio-edu "*)
		check "$dev: the edu faults reached the IOMMU core" \
			[ "$(get faults_reported)" -gt 0 ] ;;
	esac
done
check "the virtio-iommu driver has debugfs counters" [ "$n" -gt 0 ]
plan
