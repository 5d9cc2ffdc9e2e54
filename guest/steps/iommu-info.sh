# SPDX-License-Identifier: GPL-2.0
# Which IOMMU the kernel found, its groups (domain types) and their devices.
# The host's report reads the "# iommu:" and "# group:" lines.
. /steps/lib.sh
n=0
for i in /sys/class/iommu/*; do
	[ -e "$i" ] || continue
	n=$((n + 1))
	diag "iommu: $(basename "$i")"
done
for g in /sys/kernel/iommu_groups/*; do
	[ -e "$g" ] || continue
	devs=$(ls "$g/devices" | tr '\n' ' ')
	diag "group: $(basename "$g") type=$(cat "$g/type" 2>/dev/null) devices=$devs"
done
if [ -n "$TB_EXPECT_IOMMU" ]; then
	check "an IOMMU is registered" [ "$n" -gt 0 ]
	# The devices the scenario put behind the IOMMU and a driver has
	# bound: virtio (1af4) and edu (1234). Host bridges may sit outside
	# (VIOT), so does the virtio-iommu itself (1af4:1057), and with VIOT a
	# device joins its group only when a driver binds it.
	check "every bound virtio and edu device sits in an IOMMU group" sh -c '
		for d in /sys/bus/pci/devices/*; do
			[ -e "$d/driver" ] || continue
			case $(cat $d/vendor):$(cat $d/device) in
			0x1af4:0x1057) continue ;;
			0x1af4:*|0x1234:*) ;;
			*) continue ;;
			esac
			[ -e "$d/iommu_group" ] || { echo "# no group: $d"; exit 1; }
		done'
else
	check "no IOMMU is registered" [ "$n" -eq 0 ]
fi
# A driver with two page-table paths says which one this boot runs
# (TB_PT_PARAM, e.g. amd_iommu.generic_pt, must read TB_PT_WANT).
if [ -n "$TB_PT_PARAM" ]; then
	p=/sys/module/${TB_PT_PARAM%%.*}/parameters/${TB_PT_PARAM#*.}
	got=$(cat "$p" 2>/dev/null)
	check "$TB_PT_PARAM reads $TB_PT_WANT (got ${got:-nothing})" \
		[ "$got" = "$TB_PT_WANT" ]
fi
# And the maps really went through generic_pt in that format (the boot's
# DMA already made some): a silent fallback to the old code maps through no
# table of it.
if [ -n "$TB_PT_FORMAT" ]; then
	tables=$(awk -v f="$TB_PT_FORMAT" '$1 == f { print $2 }' \
		/sys/kernel/debug/generic_pt/iommu_tables 2>/dev/null)
	diag "generic_pt $TB_PT_FORMAT tables that mapped: ${tables:-none}"
	if [ "$TB_PT_WANT" = N ]; then
		check "no map went through generic_pt's $TB_PT_FORMAT tables" \
			[ "${tables:-0}" -eq 0 ]
	else
		check "maps went through generic_pt's $TB_PT_FORMAT tables" \
			[ "${tables:-0}" -gt 0 ]
	fi
fi
plan
