# SPDX-License-Identifier: GPL-2.0
# The virtio-iommu driver's own counters (debugfs), after the DMA work: what
# it sent, how it batched, and whether the faults reached the IOMMU core.
# The host's report reads the "# viommu:" lines.
# TB_VIOMMU_MODE=table: the DMA domains must be table domains (page-table
# sharing) in format TB_VIOMMU_FORMAT, by their own debugfs line, not by a
# module parameter; no MAP or UNMAP sent, INVALIDATEs sent, at most one per
# unmap (fewer in lazy domains); TB_VIOMMU_INVAL_MAP=1: INVALIDATEs after
# maps too; TB_VIOMMU_NO_CACHE=1: unmaps without INVALIDATE;
# TB_VIOMMU_POSTED_INVAL=1: INVALIDATEs left unnotified. Otherwise (MAP/UNMAP mode) no request of page-table sharing may
# have been sent. TB_VIOMMU_POSTED=1: posted MAP negotiated and used.
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
	# Sums of a field over the domain lines that match an ERE
	dsum() { viommu_domain_sum "$f" "$1" "$2"; }
	if [ "$TB_VIOMMU_MODE" = table ]; then
		check "$dev: ATTACH_TABLE negotiated (mode $(get mode))" \
			[ "$(get mode)" = page-table ]
		paging=" type=(dma-strict|dma-lazy|unmanaged) endpoints=[1-9]"
		npaging=$(grep -cE "^domain [0-9]*$paging" "$f")
		ntable=$(grep -cE "^domain [0-9]*$paging.* mode=table format=$TB_VIOMMU_FORMAT " "$f")
		check "$dev: the $npaging attached DMA domains are $TB_VIOMMU_FORMAT table domains ($ntable)" \
			[ "$npaging" -gt 0 -a "$ntable" -eq "$npaging" ]
		check "$dev: ATTACH_TABLE sent ($(get attach_table)), no MAP ($(get map)) nor UNMAP ($(get unmap))" \
			[ "$(get attach_table)" -gt 0 -a "$(get map)" -eq 0 -a "$(get unmap)" -eq 0 ]
		inv=$(dsum invalidates " mode=table ")
		unm=$(dsum unmaps " mode=table ")
		diag "viommu: $dev table domains: $unm unmaps, $inv INVALIDATEs, $(dsum invalidates_map " mode=table ") INVALIDATEs after maps; $(get requests_per_1000_maps) requests per 1000 maps"
		skip=$(dsum invalidates_skipped " mode=table ")
		if [ "$TB_VIOMMU_NO_CACHE" = 1 ]; then
			# Each sync either sends one or skips it
			check "$dev: uncached walks: unmaps went without INVALIDATE ($skip), $inv sent, together at most one per unmap ($unm)" \
				[ "$skip" -gt 0 -a $((inv + skip)) -le "$unm" ]
		else
			check "$dev: INVALIDATEs sent ($(get invalidate)), at most one per unmap ($inv for $unm)" \
				[ "$(get invalidate)" -gt 0 -a "$inv" -gt 0 -a "$inv" -le "$unm" ]
			check "$dev: none skipped (the device caches)" [ "$skip" -eq 0 ]
		fi
		posted=$(dsum invalidates_posted " mode=table ")
		if [ "$TB_VIOMMU_POSTED_INVAL" = 1 ]; then
			# Served before the device's next translation: no kick
			check "$dev: posted INVALIDATEs: $posted of the $inv left unnotified, $(get kicks) kicks in all" \
				[ "$posted" -gt 0 -a "$posted" -le "$inv" -a "$(get kicks)" -lt "$posted" ]
		else
			check "$dev: none posted (the device did not offer it)" [ "$posted" -eq 0 ]
		fi
		if [ "$TB_VIOMMU_DOMAIN" = dma-lazy ]; then
			check "$dev: the flush queue batched: fewer INVALIDATEs than unmaps in lazy domains" \
				[ "$(dsum invalidates " type=dma-lazy .* mode=table ")" -lt \
				  "$(dsum unmaps " type=dma-lazy .* mode=table ")" ]
		fi
		if [ "$TB_VIOMMU_INVAL_MAP" = 1 ]; then
			check "$dev: INVALIDATEs after maps (the device asked for them)" \
				[ "$(dsum invalidates_map " mode=table ")" -gt 0 ]
		else
			check "$dev: no INVALIDATE after maps (the device did not ask)" \
				[ "$(dsum invalidates_map " mode=table ")" -eq 0 ]
		fi
	else
		check "$dev: MAP and UNMAP requests were sent" \
			[ "$(get map)" -gt 0 -a "$(get unmap)" -gt 0 ]
		no_table() { [ "$(get attach_table)" -eq 0 ] && [ "$(get invalidate)" -eq 0 ] &&
			! grep -q " mode=table " "$f"; }
		check "$dev: MAP/UNMAP mode: no ATTACH_TABLE, no INVALIDATE, no table domain" \
			no_table
	fi
	if [ -n "$TB_EDU_OVER_BUDGET_MAPS" ]; then
		# The edu test mapped past the device's room: NOMEM answers
		check "$dev: MAPs past the device's room refused ($(get errors))" \
			[ "$(get errors)" -gt 0 ]
	else
		check "$dev: no request failed" [ "$(get errors)" -eq 0 ]
	fi
	# VIRTIO_RING_F_INDIRECT_DESC (bit 28) refused: with it, the ring
	# would allocate an indirect table for every request
	features=$(cat "/sys/bus/virtio/devices/$dev/features")
	check "$dev: indirect descriptors refused (no allocation per request)" \
		[ "$(echo "$features" | cut -c29)" = 0 ]
	check "$dev: no wait gave up before its answer" [ "$(get gave_up)" -eq 0 ]
	# The device stopped its request queue for seconds once
	# (x-stall-request): a wait outlasted the driver's timeout and went
	# on until the answer came
	if [ "$TB_VIOMMU_STALL" = 1 ]; then
		check "$dev: a wait outlasted the device's stall ($(get late_waits) late)" \
			[ "$(get late_waits)" -ge 1 ]
	fi
	# Every request queued was notified: none is left waiting for a
	# kick that never comes. A lazy domain's flush queue may still hold
	# a batch for up to its timeout (10 ms): look again after it.
	sent() { echo $(($(get attach) + $(get detach) + $(get map) + $(get unmap) + $(get probe) + \
		$(get attach_table) + $(get invalidate))); }
	# With posted MAP, MAPs may wait unnotified for the device to fetch
	# them: they are the only requests left unkicked.
	[ "$(get kicked_requests)" -eq "$(sent)" ] || sleep 1
	kicked=$(get kicked_requests)
	unkicked=$(get unkicked)
	queued=$(sent)
	check "$dev: kicks ($(get kicks)) carried every request queued ($kicked + $unkicked posted of $queued)" \
		[ "$(get kicks)" -gt 0 -a $((kicked + unkicked)) -eq "$queued" ]
	# Posted INVALIDATEs wait unnotified for the device's next
	# translation: with nothing translated since, they stay unkicked
	if [ "$TB_VIOMMU_POSTED_INVAL" = 1 ]; then
		check "$dev: only posted INVALIDATEs left unkicked ($unkicked of ${posted:-0})" \
			[ "$unkicked" -le "${posted:-0}" ]
	elif [ "$(get posted)" != yes ]; then
		check "$dev: no request left unkicked without posted MAP ($unkicked)" \
			[ "$unkicked" -eq 0 ]
	fi
	# TB_VIOMMU_POSTED=1: the device offered posted MAP (vhost-iommu), and
	# MAPs went unnotified
	if [ "$TB_VIOMMU_POSTED" = 1 ]; then
		check "$dev: posted MAP negotiated ($(get posted)), MAPs left for the device to fetch ($(get posted_syncs) syncs)" \
			[ "$(get posted)" = yes -a "$(get posted_syncs)" -gt 0 ]
	fi
	if [ -n "$TB_VIOMMU_DOMAIN" ]; then
		check "$dev: endpoints sit in $TB_VIOMMU_DOMAIN domains" \
			grep -q "^domain [0-9]* type=$TB_VIOMMU_DOMAIN endpoints=[1-9]" "$f"
	fi
	case " $TB_STEPS " in
	*" vfio-edu "*)
		# An edu assigned by a VMM that forwards no fault (QEMU's
		# vfio-pci) faults below this guest: nothing to count here
		if [ -n "$TB_FAULT_PATTERN" ]; then
			check "$dev: the edu faults reached the IOMMU core" \
				[ "$(get faults_reported)" -gt 0 ]
		else
			diag "$dev: the edu's faults are not this guest's to see"
		fi ;;
	esac
done
check "the virtio-iommu driver has debugfs counters" [ "$n" -gt 0 ]
plan
