# SPDX-License-Identifier: GPL-2.0
"""QEMU command lines: the one place that knows machines, IOMMUs and devices.

Every machine boots our build of QEMU 10.0 (testbed/qemu_build.py: Debian
13's source with qemu/patches), with the firmware of Debian's packages, so
that no result depends on two QEMU versions: the IOMMU models we did not
write (intel-iommu, amd-iommu, the SMMUv3) are that build's too.

Everything runs under TCG: /dev/kvm exists on these machines but a Linux
guest hangs under it. TB_KVM=1 asks for KVM anyway (x86_64 on x86_64 only).
"""

from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from . import fdt, qemu_build


@dataclass(frozen=True)
class Machine:
    """A QEMU machine with (or without) one IOMMU in front of its PCI devices."""
    name: str
    qemu: str
    machine: str
    cpu: str
    console: str
    iommu_device: str = ""     # a -device that is the IOMMU, if any
    host_tsc: bool = False     # tell the guest the TSC frequency (see below)
    globals_: tuple[str, ...] = ()  # -global DRIVER.PROP=VALUE settings
    # Device-tree properties taken out of the tree QEMU builds (testbed/fdt.py)
    no_dt_props: tuple[str, ...] = ()

    @property
    def has_iommu(self) -> bool:
        return bool(self.iommu_device) or "iommu=" in self.machine


MACHINES = {m.name: m for m in (
    Machine("q35", "qemu-system-x86_64", "q35", "max", "ttyS0"),
    Machine("q35-virtio-iommu", "qemu-system-x86_64", "q35", "max", "ttyS0",
            "virtio-iommu-pci"),
    # The request queue stops for a second before each ATTACH (QEMU patch
    # 0061, x-stall-attach-ms): an endpoint moved to another domain stays
    # in its old one until then, in MAP/UNMAP mode and with page tables.
    Machine("q35-virtio-iommu-stall-attach", "qemu-system-x86_64", "q35", "max",
            "ttyS0", "virtio-iommu-pci,x-stall-attach-ms=1000"),
    Machine("q35-virtio-iommu-pt-stall-attach", "qemu-system-x86_64", "q35",
            "max", "ttyS0",
            "virtio-iommu-pci,attach-table=on,x-stall-attach-ms=1000"),
    # Caching mode: the guest driver must flush on map, as for any software
    # IOMMU. Coherent page walks (ECAP.C, which the model reports with
    # x-coherent-walks, QEMU patch 0056): the VT-d driver builds its
    # second-stage tables with generic_pt only for an IOMMU that says so.
    Machine("q35-intel-iommu", "qemu-system-x86_64", "q35", "max", "ttyS0",
            "intel-iommu,caching-mode=on,x-coherent-walks=on"),
    # The model as QEMU ships it: caching mode, no ECAP.C. Its walks do not
    # say they snoop, so the driver keeps its own tables, which flush the
    # CPU caches they write.
    Machine("q35-intel-iommu-noncoherent", "qemu-system-x86_64", "q35", "max",
            "ttyS0", "intel-iommu,caching-mode=on"),
    Machine("q35-amd-iommu", "qemu-system-x86_64", "q35", "max", "ttyS0",
            "amd-iommu"),
    Machine("virt", "qemu-system-aarch64", "virt,gic-version=3",
            "max,pauth-impdef=on", "ttyAMA0"),
    Machine("virt-smmuv3", "qemu-system-aarch64", "virt,gic-version=3,iommu=smmuv3",
            "max,pauth-impdef=on", "ttyAMA0"),
    Machine("virt-virtio-iommu", "qemu-system-aarch64", "virt,gic-version=3",
            "max,pauth-impdef=on", "ttyAMA0", "virtio-iommu-pci"),
    # qemu/patches: the virtio-mmio transports' DMA goes through the
    # virtio-iommu too, each transport an endpoint named in the device tree.
    # It stops its request queue for 3 s before the 200th UNMAP
    # (x-stall-request, QEMU patch 0055): MAP/UNMAP mode's late answer.
    Machine("virt-virtio-iommu-mmio", "qemu-system-aarch64",
            "virt,gic-version=3,virtio-mmio-iommu=on", "max,pauth-impdef=on",
            "ttyAMA0", "virtio-iommu-pci,x-stall-request=200"),
    # qemu/patches: the virtio-mmio transports offer MSI, their messages
    # going to the GIC ITS (Documentation/iommu/virtio-mmio-msi.rst).
    Machine("virt-mmio-msi", "qemu-system-aarch64",
            "virt,gic-version=3,virtio-mmio-msi=on", "max,pauth-impdef=on",
            "ttyAMA0"),
    # Both: the transports behind the virtio-iommu offer MSI; their writes
    # go through the IOMMU, whose MSI region (the ITS doorbell) lets them by.
    Machine("virt-virtio-iommu-mmio-msi", "qemu-system-aarch64",
            "virt,gic-version=3,virtio-mmio-iommu=on,virtio-mmio-msi=on",
            "max,pauth-impdef=on", "ttyAMA0", "virtio-iommu-pci"),
    # The same on x86: microvm's virtio-mmio transports behind a
    # virtio-iommu on its PCIe bus, each transport an endpoint named in the
    # ACPI VIOT table (qemu/patches; microvm's PCIe needs ACPI).
    # Their transports offer MSI too (qemu/patches 0026): the messages are
    # writes into the local APICs' window, through the IOMMU's MSI region.
    # Its request queue stops for 3 s before the 200th UNMAP
    # (x-stall-request, QEMU patch 0055): MAP/UNMAP mode's late answer.
    Machine("microvm-virtio-iommu-mmio", "qemu-system-x86_64",
            "microvm,acpi=on,pcie=on,virtio-mmio-iommu=on,virtio-mmio-msi=on",
            "max", "ttyS0", "virtio-iommu-pci,x-stall-request=200",
            host_tsc=True),
    # MSI for microvm's virtio-mmio transports, no IOMMU: the guest takes
    # the vectors from the local APICs' vector domain (PCIe for make
    # bench-mmio's virtio-pci row).
    Machine("microvm-mmio-msi", "qemu-system-x86_64",
            "microvm,acpi=on,pcie=on,virtio-mmio-msi=on", "max", "ttyS0",
            host_tsc=True),
    # Device configurations a guest driver must cope with, on microvm's PCIe
    # bus: a 64K granule on 4K guests (QEMU's granule property), and two
    # domain IDs for more groups than that (qemu/patches 0005).
    Machine("microvm-virtio-iommu-64k", "qemu-system-x86_64",
            "microvm,acpi=on,pcie=on", "max", "ttyS0",
            "virtio-iommu-pci,granule=64k", host_tsc=True),
    Machine("microvm-virtio-iommu-2ids", "qemu-system-x86_64",
            "microvm,acpi=on,pcie=on", "max", "ttyS0",
            "virtio-iommu-pci,domain-range-start=5,domain-range-end=6",
            host_tsc=True),
    # Page-table sharing (qemu/patches 0008-0015): the virtio-iommu offers
    # ATTACH_TABLE and walks the guest's tables with the walk of QEMU's
    # own IOMMU model of the format: VT-d second level and AMD v1 on q35
    # (the VT-d and AMD IOMMU models'), Arm long descriptor on virt (the
    # SMMUv3 model's).
    Machine("q35-virtio-iommu-pt", "qemu-system-x86_64", "q35", "max", "ttyS0",
            "virtio-iommu-pci,attach-table=on"),
    Machine("virt-virtio-iommu-pt", "qemu-system-aarch64", "virt,gic-version=3",
            "max,pauth-impdef=on", "ttyAMA0",
            "virtio-iommu-pci,attach-table=on"),
    # The same board saying its DMA does not snoop the CPU caches: no
    # dma-coherent property anywhere in its device tree. The driver must not
    # share tables it writes with plain stores (MAP/UNMAP mode instead).
    Machine("virt-virtio-iommu-pt-noncoherent", "qemu-system-aarch64",
            "virt,gic-version=3", "max,pauth-impdef=on", "ttyAMA0",
            "virtio-iommu-pci,attach-table=on",
            no_dt_props=("dma-coherent",)),
    # The q35 device offering AMD v1 alone (attach-table-formats, bit 4), so
    # that the guest builds AMD v1 tables, walked by the AMD IOMMU model's walk.
    # It stops its request queue for 3 s before the 200th UNMAP or
    # INVALIDATE (x-stall-request, QEMU patch 0055): a late answer, which
    # the guest must wait for (boot.stall_checks).
    Machine("q35-virtio-iommu-pt-amd", "qemu-system-x86_64", "q35", "max", "ttyS0",
            "virtio-iommu-pci,attach-table=on,attach-table-formats=0x10,"
            "x-stall-request=200"),
    # The same device saying it caches non-present entries (INVAL_MAP): the
    # guest must invalidate what it maps, or its device's accesses fault.
    # Its NIC's virtqueues are packed rings: virtio_ring's packed paths
    # behind the IOMMU (the receive fragments mapped once, the sent frames
    # copied into slots) run there.
    Machine("q35-virtio-iommu-pt-invalmap", "qemu-system-x86_64", "q35", "max",
            "ttyS0", "virtio-iommu-pci,attach-table=on,attach-table-inval-map=on",
            globals_=("virtio-net-pci.packed=on",)),
    # The same device caching no translation (NO_CACHE, QEMU patch 0036):
    # the guest sends no INVALIDATE for the leaves it clears.
    Machine("q35-virtio-iommu-pt-nocache", "qemu-system-x86_64", "q35", "max",
            "ttyS0", "virtio-iommu-pci,attach-table=on,attach-table-no-cache=on"),
    # The same device keeping its IOTLB but serving the request queue
    # before each translation (POSTED_INVAL, QEMU patch 0038): the guest
    # leaves the INVALIDATEs of its unmaps unnotified.
    Machine("q35-virtio-iommu-pt-posted", "qemu-system-x86_64", "q35", "max",
            "ttyS0", "virtio-iommu-pci,attach-table=on,attach-table-posted-inval=on"),
    Machine("virt-virtio-iommu-pt-nocache", "qemu-system-aarch64", "virt,gic-version=3",
            "max,pauth-impdef=on", "ttyAMA0",
            "virtio-iommu-pci,attach-table=on,attach-table-no-cache=on"),
    Machine("virt-virtio-iommu-pt-posted", "qemu-system-aarch64", "virt,gic-version=3",
            "max,pauth-impdef=on", "ttyAMA0",
            "virtio-iommu-pci,attach-table=on,attach-table-posted-inval=on"),
)}


@dataclass
class Guest:
    """What one boot needs besides the machine."""
    kernel: Path
    initrd: Path
    append: str
    console_log: Path
    devices: tuple[str, ...] = ()   # "blk", "net", "edu"
    transport: str = "pci"          # of blk and net: "pci" or "mmio"
    disk: Path | None = None
    memory_mb: int = 1024
    cpus: int = 2
    trace: tuple[str, ...] = ()     # QEMU trace events to record
    trace_log: Path | None = None
    trace_times: bool = False       # -msg timestamp=on: the trace's lines timed


def _virtio(m: Machine, g: Guest, kind: str, extra: str) -> str:
    """A virtio device (kind "blk" or "net") on the guest's transport."""
    # ACCESS_PLATFORM (iommu_platform) makes the guest use the DMA API and
    # QEMU translate the device's accesses through the IOMMU.
    if g.transport == "mmio":
        model, opts = f"virtio-{kind}-device", ""
    else:
        model, opts = f"virtio-{kind}-pci", ",disable-legacy=on"
    if m.has_iommu:
        opts += ",iommu_platform=on"
    return f"{model},{extra}{opts}"


# The disk's serial number: the guest reads it back (GET_ID) in blk-copy-slots
DISK_SERIAL = "tb-disk0"


# Our build's edu takes 1 ms a DMA (QEMU patch 0050), not 100: the VFIO
# selftests wait for each of theirs, some hundreds a boot (the nested bed's
# L2 QEMU, ours too, gets the same as TB_L2_EDU)
EDU = "edu,dma-delay-ms=1"

# Settings of an IOMMU (-global) where QEMU 10.0's default on the board is
# not 7.2's, which the scenarios and the benchmarks' earlier rows were made
# against and which their guests see. Since QEMU 9.0 the q35 machine type
# gives virtio-iommu-pci a 39-bit input range and virt a 48-bit one (the
# guest's domains end there): 7.2 offered the full 64 bits, in which the
# driver's tests and the VFIO selftests place their IOVAs. Since 9.2
# intel-iommu reports a 48-bit address width, on which the VT-d driver
# builds 4-level tables: 7.2's was 39 bits, 3 levels. Keyed by board and
# device type, and given only where that device is: an unused -global of a
# device that cannot be hotplugged (intel-iommu) makes QEMU warn.
IOMMU_DEFAULTS = {
    ("q35", "virtio-iommu-pci"): ("aw-bits=64",),
    ("q35", "intel-iommu"): ("aw-bits=39",),
    ("virt", "virtio-iommu-pci"): ("aw-bits=64",),
}


def iommu_globals(machine: str, iommu_device: str) -> tuple[str, ...]:
    """The -global settings that keep 7.2's defaults for IOMMU -device
    @iommu_device on -machine @machine."""
    board, dev = machine.split(",")[0], iommu_device.split(",")[0]
    return tuple(f"{dev}.{prop}" for prop in IOMMU_DEFAULTS.get((board, dev), ()))


def device_args(m: Machine, g: Guest, dev: str) -> list[str]:
    if dev == "blk":
        return ["-drive", f"file={g.disk},if=none,id=disk0,format=raw,cache=unsafe",
                "-device", _virtio(m, g, "blk", f"drive=disk0,serial={DISK_SERIAL}")]
    if dev == "net":
        extra = "netdev=net0" + (",romfile=" if g.transport == "pci" else "")
        return ["-netdev", "user,id=net0", "-device", _virtio(m, g, "net", extra)]
    if dev == "edu":
        return ["-device", EDU]
    raise ValueError(f"unknown device {dev!r}")


def host_tsc_khz() -> int | None:
    """The host's TSC frequency in kHz, as its kernel reports it."""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("cpu MHz"):
                return int(float(line.split(":")[1]) * 1000)
    except (OSError, ValueError):
        pass
    return None


def executable(m: Machine) -> str:
    """Our build of @m's system emulator (testbed/qemu_build.py)."""
    return str(qemu_build.binary(m.qemu))


def command(m: Machine, g: Guest) -> list[str]:
    """The full QEMU command line for guest @g on machine @m."""
    accel = "tcg"
    if os.environ.get("TB_KVM") == "1" and m.qemu.endswith("x86_64"):
        accel = "kvm"
    append = f"console={m.console} panic=-1 {g.append}".strip()
    # microvm has neither HPET nor ACPI PM timer: when the guest's PIT
    # calibration of the TSC misses its window under TCG (it does, now and
    # then, on a busy host), the kernel has no clock to fall back on and
    # hangs at boot. TCG's TSC is the host's: give the guest its frequency.
    khz = host_tsc_khz() if m.host_tsc and accel == "tcg" else None
    if khz:
        append += f" tsc_early_khz={khz}"
    cmd = [executable(m), "-machine", m.machine, "-accel", accel,
           "-cpu", "host" if accel == "kvm" else m.cpu,
           "-smp", str(g.cpus), "-m", str(g.memory_mb),
           "-nodefaults", "-display", "none", "-monitor", "none", "-no-reboot",
           "-serial", f"file:{g.console_log}",
           "-kernel", str(g.kernel), "-initrd", str(g.initrd),
           "-append", append]
    # Run from its build tree, our QEMU looks for firmware there only: take
    # Debian's (q35 boots with SeaBIOS, microvm with qboot.rom, both with
    # linuxboot_dma.bin).
    cmd += qemu_build.firmware_args()
    if m.iommu_device:
        # The IOMMU goes first: QEMU wants it before the devices it serves.
        cmd += ["-device", m.iommu_device]
    if g.transport == "mmio":
        # Legacy virtio-mmio (QEMU's default) has no ACCESS_PLATFORM bit.
        cmd += ["-global", "virtio-mmio.force-legacy=false"]
    for setting in (*iommu_globals(m.machine, m.iommu_device), *m.globals_):
        cmd += ["-global", setting]
    for dev in g.devices:
        cmd += device_args(m, g, dev)
    if g.trace and g.trace_log:
        for event in g.trace:
            cmd += ["-trace", f"enable={event}"]
        cmd += ["-D", str(g.trace_log)]
        if g.trace_times:
            cmd += ["-msg", "timestamp=on"]
    if m.no_dt_props:
        cmd += ["-dtb", str(edited_device_tree(m, g, cmd))]
    return cmd


def edited_device_tree(m: Machine, g: Guest, cmd: list[str]) -> Path:
    """The device tree QEMU builds for @cmd, without @m's no_dt_props."""
    dtb = Path(g.console_log).with_suffix(".dtb")
    dump = list(cmd)
    dump[dump.index("-machine") + 1] = f"{m.machine},dumpdtb={dtb}"
    subprocess.run(dump, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    blob, dropped = fdt.drop_properties(dtb.read_bytes(), m.no_dt_props)
    if not dropped:
        raise RuntimeError(f"{m.name}: no {', '.join(m.no_dt_props)} in QEMU's tree")
    dtb.write_bytes(blob)
    return dtb
