# SPDX-License-Identifier: GPL-2.0
# PCI hotplug behind the IOMMU, with the nested bed's L1 (TB_L2_HOTPLUG=1
# there): this guest asks for each change on its console ("TB-HOTPLUG
# add", "TB-HOTPLUG del") and waits to see it; L1 answers with QEMU's
# device_add and device_del of an edu on the root port rp1, and checks
# that the kernel device gained, lost and regained the edu's endpoint
# (guest/nested/nested-l2.sh). Needs acpiphp (CONFIG_HOTPLUG_PCI_ACPI): q35
# hotplugs its root ports through ACPI.
. /steps/lib.sh

# edus: the edu devices (1234:11e8) this guest sees
edus() {
	grep -l 0x11e8 /sys/bus/pci/devices/*/device 2>/dev/null | wc -l
}

# wait_edus N: up to 120 s for N edus
wait_edus() {
	i=0
	while [ "$(edus)" -ne "$1" ] && [ $i -lt 600 ]; do
		sleep 0.2
		i=$((i + 1))
	done
	[ "$(edus)" -eq "$1" ]
}

n=$(edus)
diag "edus before: $n"
echo "TB-HOTPLUG add"
check "the hotplugged edu appears" wait_edus $((n + 1))
echo "TB-HOTPLUG del"
check "the unplugged edu goes" wait_edus "$n"
# acpiphp removes the device, then ejects it (_EJ0), and QEMU unplugs it
# then: L1 looks at its kernel device's endpoints after that
sleep 3
echo "TB-HOTPLUG add"
check "an edu plugged into the same slot appears" wait_edus $((n + 1))
echo "TB-HOTPLUG done"
plan
