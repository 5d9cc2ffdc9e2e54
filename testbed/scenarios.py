# SPDX-License-Identifier: GPL-2.0
"""The boot scenarios, as data: machine, kernel, devices, guest steps, checks."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

# What each IOMMU driver prints for a translation fault (kernel log, ERE).
# QEMU 7.2's amd-iommu blocks the access but delivers no event the driver
# logs (its event encoding was fixed in later QEMU), so there the edu test
# checks memory only.
FAULT_PATTERNS = {
    "intel-iommu": r"\[DMA (Read|Write) NO_PASID\] Request device",
    "amd-iommu": "",
    # Ours says the fault went to report_iommu_fault(), not only the log.
    "virtio-iommu": r"fault from EP [0-9]+ at 0x[0-9a-f]+ \[[RWX]*\]: "
                    r"reported to the IOMMU core",
    "smmuv3": r"event 0x1[0-3] received",
}


# The switch of each IOMMU driver whose page tables come from generic_pt
# or from its old code: a boot parameter that reads back Y or N
# in /sys/module. iommu-info checks it where a scenario sets TB_PT_PARAM.
PT_SWITCH = {
    "intel-iommu": "intel_iommu.generic_pt",
    "amd-iommu": "amd_iommu.generic_pt",
    "smmuv3": "arm_smmu_v3.generic_pt",
}


# The generic_pt format each driver's DMA domains use: iommu-info finds
# their tables counted in /sys/kernel/debug/generic_pt/iommu_tables.
PT_FORMAT = {"intel-iommu": "vtdss", "amd-iommu": "amdv1", "smmuv3": "armv8"}


# The IOMMU drivers that hand their translation faults to the domain's
# handler (report_iommu_fault(): Intel's and SMMUv3's with this series; AMD's
# does too, but QEMU's amd-iommu model raises no event for the edu): the
# VFIO nesting test's faults must each reach it as a record
NEST_FAULT_RECORDS = {"TB_NEST_FAULT_RECORDS": "1"}


def on_generic_pt(iommu: str) -> dict:
    """Scenario env that fails iommu-info unless the driver uses generic_pt:
    its switch reads Y and its maps went through generic_pt's tables."""
    return {"TB_PT_PARAM": PT_SWITCH[iommu], "TB_PT_WANT": "Y",
            "TB_PT_FORMAT": PT_FORMAT[iommu]}


# No scenario has interrupt remapping (QEMU's models offer it only with KVM's
# split irqchip, or not at all), so VFIO (type1, and iommufd for the device
# cdev) must be told to accept that.
VFIO_UNSAFE_IRQS = ("vfio_iommu_type1.allow_unsafe_interrupts=1 "
                    "iommufd.allow_unsafe_interrupts=1")


# virtio-iommu requests and faults, as QEMU's device sees them. Per-DMA
# translation events are left out: they would dwarf everything else.
VIRTIO_IOMMU_TRACE = ("virtio_iommu_attach", "virtio_iommu_detach",
                      "virtio_iommu_map", "virtio_iommu_unmap",
                      "virtio_iommu_report_fault")
# Our QEMU's device stopping its request queue (x-stall-request), on the
# machines that ask for it: the boot checks the stall happened and ended.
STALL_TRACE = ("virtio_iommu_stall", "virtio_iommu_stall_end")


# Two threads of dma_map_benchmark mapping and unmapping on a spare edu in a
# strict domain for a few seconds: our driver's kick combining must have
# made syncs of the two CPUs share exits (dma-bench checks combine_joins).
# Combining is off by default (it loses to plain kicks under TCG); these
# scenarios turn it on with COMBINE_ON to keep its code tested.
COMBINE_CHECK = {"TB_BENCH_GROUP": "DMA", "TB_BENCH_THREADS": "2",
                 "TB_BENCH_SECONDS": "3", "TB_BENCH_EXPECT_COMBINE": "combine_joins"}
COMBINE_ON = " virtio_iommu.combine_wait=200"


@dataclass(frozen=True)
class Scenario:
    name: str
    summary: str
    machine: str                    # a key of qemu.MACHINES
    kernel: str                     # a key of kernel.TARGETS
    steps: tuple[str, ...]          # scripts in guest/steps, run in order
    devices: tuple[str, ...] = ()
    fault: str = ""                 # a key of FAULT_PATTERNS, for the edu test
    append: str = ""                # extra kernel command line
    timeout_s: int = 240
    env: dict = field(default_factory=dict)
    extra_trace: tuple[str, ...] = ()
    trace_times: bool = False       # each trace line stamped (-msg timestamp=on)
    transport: str = "pci"          # of the virtio disk and NIC: "pci" or "mmio"
    # Booted by `make check-full` only: CI's `make check` must finish within
    # its time on a fresh machine (README), and these need kernels that no
    # other scenario boots (see CHECK_KERNELS).
    full_only: bool = False
    # QEMU traces a virtio-iommu's requests (VIRTIO_IOMMU_TRACE). Each
    # traced line is a write to the log: a benchmark whose rows do not
    # count requests turns it off, or the rows that send more (MAP/UNMAP
    # mode) pay for it in their rates.
    device_trace: bool = True

    @property
    def trace(self) -> tuple[str, ...]:
        """QEMU trace events the report and the host checks count."""
        if "virtio-iommu" not in self.machine or not self.device_trace:
            return self.extra_trace
        stall = STALL_TRACE if self.stalls else ()
        return VIRTIO_IOMMU_TRACE + stall + self.extra_trace

    @property
    def solo(self) -> bool:
        """Booted with no other boot beside it (testbed/boot_pool.py): its
        checks time the guest's two vCPUs against each other (kick
        combining in dma-bench, vhost-iommu's busy loop and worker)."""
        return any(s in self.steps for s in ("dma-bench", "vhost-iommu"))

    @property
    def stalls(self) -> bool:
        """Does its virtio-iommu stop the request queue once (x-stall-request)?"""
        from .qemu import MACHINES
        return "x-stall-request=" in (MACHINES[self.machine].iommu_device or "")

    @property
    def arch(self) -> str:
        return "arm64" if self.kernel.startswith("arm64") else "x86_64"


def _sc(*args, **kw) -> Scenario:
    return Scenario(*args, **kw)


# The arm64 kernel's KUnit cases (configs/arm64-kunit.config) that need the
# machine's SMMUv3: they must have run, not skipped for want of a device.
KUNIT_SMMUV3_MUST_RUN = ("arm-smmu-v3-gpt.gpt_test_unmap_only_empty_tables",
                         "arm-smmu-v3-gpt.gpt_test_disjoint_unmap_syncs_first",
                         "arm-smmu-v3-gpt.gpt_test_queued_unmap_merges")


# QEMU puts only PCI functions behind a virtio-iommu; qemu/patches adds
# virtio-mmio transports (endpoint IDs from 0x10000, an "iommus" property in
# the device tree). The disk and NIC sit on those, the edu on PCI: both
# kinds of endpoint behind one IOMMU.
MMIO_STEPS = ("iommu-info", "mmio-endpoints", "blk", "net", "vfio-edu", "viommu-stats",
              "mmio-msi")
MMIO = _sc("arm64-virtio-iommu-mmio",
           "arm64 virt + virtio-iommu-pci (DT), disk and NIC on virtio-mmio behind it "
           "(patched QEMU), VFIO edu on PCI",
           "virt-virtio-iommu-mmio", "arm64", MMIO_STEPS,
           devices=("blk", "net", "edu"), transport="mmio", fault="virtio-iommu",
           append=VFIO_UNSAFE_IRQS,
           env={"TB_VIOMMU_DOMAIN": "dma-strict", "TB_MMIO_ENDPOINTS": "2",
                "TB_MMIO_MSI": "0"})
# The same on the arm64 KASAN/lockdep/UBSAN/kmemleak kernel: the driver's
# device tree path (of_xlate, platform device groups) and its arm64 DMA path
# under the debug options, then a kmemleak scan.
MMIO_DEBUG = dataclasses.replace(
    MMIO, name="arm64-virtio-iommu-mmio-debug",
    summary="the arm64 virtio-mmio scenario on the KASAN/lockdep/UBSAN/kmemleak kernel",
    kernel="arm64-debug", steps=("kmemleak-clear", *MMIO_STEPS, "kmemleak"), timeout_s=600,
    full_only=True)


# MSI for virtio-mmio (qemu/patches, Documentation/iommu/virtio-mmio-msi.rst):
# the disk and NIC on transports offering MSI through the GIC ITS. The
# guest's mmio-msi step checks a vector per queue and for configuration
# changes, the queues' vectors firing, no wired interrupt requested, and
# the disk's data through an unbind and bind of its transport and of
# virtio_blk; the host checks in QEMU's trace that the devices sent MSIs,
# never raised the wired line and had InterruptStatus read not once. The
# scenarios above, whose transports offer no MSI, are the fallback: their
# mmio-msi step checks the wired interrupt serves.
MMIO_MSI_TRACE = ("virtio_mmio_msi", "virtio_mmio_setting_irq", "virtio_mmio_read")
MMIO_MSI_ENV = {"TB_MMIO_MSI": "1", "TB_MMIO_MSI_FIRING": "req.0 input.0 output.0"}
MMIO_MSI = _sc("arm64-mmio-msi",
               "arm64 virt, disk and NIC on virtio-mmio with MSI through the GIC ITS "
               "(patched QEMU): a vector per queue, unbind/bind",
               "virt-mmio-msi", "arm64", ("blk", "net", "mmio-msi"),
               devices=("blk", "net"), transport="mmio", timeout_s=120,
               extra_trace=MMIO_MSI_TRACE, env=MMIO_MSI_ENV)
# The same behind the virtio-iommu: the MSI writes go through the IOMMU's
# address space like the devices' DMA, which lets them by because the ITS
# doorbell page is the MSI region the device reports (PROBE RESV_MEM MSI;
# QEMU's virt board sets it), and the transports' rebinds re-attach them.
MMIO_MSI_IOMMU = _sc("arm64-virtio-iommu-mmio-msi",
                     "arm64-mmio-msi with the transports behind virtio-iommu-pci "
                     "(patched QEMU): MSI writes through the IOMMU's MSI region",
                     "virt-virtio-iommu-mmio-msi", "arm64",
                     ("iommu-info", "mmio-endpoints", "blk", "net", "mmio-msi"),
                     devices=("blk", "net"), transport="mmio", timeout_s=120,
                     extra_trace=MMIO_MSI_TRACE,
                     env={"TB_VIOMMU_DOMAIN": "dma-strict", "TB_MMIO_ENDPOINTS": "2",
                          **MMIO_MSI_ENV})


# The same on x86: microvm's virtio-mmio transports behind a virtio-iommu on
# its PCIe bus, described by the ACPI VIOT table (virtio-mmio endpoint
# nodes), the edu on that PCIe bus behind the same IOMMU; the transports
# offer MSI, whose writes into the local APICs' window pass the IOMMU by
# its MSI region (the arm64 scenario above is the wired fallback).
MMIO_X86 = dataclasses.replace(
    MMIO, name="x86_64-virtio-iommu-mmio",
    summary="x86_64 microvm + virtio-iommu-pci (ACPI VIOT), disk and NIC on "
            "virtio-mmio with MSI behind it (patched QEMU), VFIO edu on PCIe",
    machine="microvm-virtio-iommu-mmio", kernel="x86_64", extra_trace=MMIO_MSI_TRACE,
    # x86's default DMA domains are lazy, arm64's strict: both get covered
    env={"TB_VIOMMU_DOMAIN": "dma-lazy", "TB_MMIO_ENDPOINTS": "2", **MMIO_MSI_ENV})
# MSI on x86 without an IOMMU, on the KASAN/lockdep/UBSAN/kmemleak kernel:
# microvm's transports take their vectors from the local APICs' vector
# domain (no firmware names an MSI controller there), then a kmemleak scan.
MMIO_MSI_X86 = dataclasses.replace(
    MMIO_MSI, name="x86_64-mmio-msi-debug",
    summary="x86_64 microvm, disk and NIC on virtio-mmio with MSI to the local "
            "APICs (patched QEMU), on the KASAN/lockdep/UBSAN/kmemleak kernel",
    machine="microvm-mmio-msi", kernel="x86_64-debug",
    steps=("kmemleak-clear", *MMIO_MSI.steps, "kmemleak"), timeout_s=450)


# The MSI scenario on the arm64 KASAN/lockdep/UBSAN/kmemleak kernel: the
# vectors' allocation, rebinds, sharing and fallback under the debug
# options, then a kmemleak scan (make check-full: its kernel is full-only).
MMIO_MSI_DEBUG = dataclasses.replace(
    MMIO_MSI, name="arm64-mmio-msi-debug",
    summary="arm64-mmio-msi on the KASAN/lockdep/UBSAN/kmemleak kernel",
    kernel="arm64-debug", steps=("kmemleak-clear", *MMIO_MSI.steps, "kmemleak"),
    timeout_s=600, full_only=True)


# Device configurations the guest driver cannot fully serve: it must say so once and fall back to bypass, never hand the IOMMU
# core a domain that fails to attach (a WARNING at every probe, vfio-pci
# failing). The disk and NIC must work, through whatever domain they got;
# viommu-limits checks the message, the group types, the domain IDs used
# and that vfio-pci still binds the edu.
LIMITS_STEPS = ("iommu-info", "blk", "net", "viommu-limits")
LIMITS = (
    _sc("x86_64-virtio-iommu-64k-granule",
        "microvm + virtio-iommu-pci offering a 64K granule to a 4K-page guest: "
        "every group bypasses, said once, disk and NIC work (patched QEMU)",
        "microvm-virtio-iommu-64k", "x86_64", LIMITS_STEPS,
        devices=("blk", "net", "edu"), append=VFIO_UNSAFE_IRQS,
        env={"TB_VIOMMU_LIMIT_MSG": "granule 0x10000 is larger than a CPU page",
             "TB_VIOMMU_GROUP_TYPES": "identity identity identity"}),
    _sc("x86_64-virtio-iommu-2-domain-ids",
        "microvm + virtio-iommu-pci offering domain IDs 5-6 for three groups: "
        "one DMA domain, the other groups bypass sharing an ID, said once "
        "(patched QEMU)",
        "microvm-virtio-iommu-2ids", "x86_64", LIMITS_STEPS,
        devices=("blk", "net", "edu"), append=VFIO_UNSAFE_IRQS,
        env={"TB_VIOMMU_LIMIT_MSG": "domain IDs 5-6 run short",
             "TB_VIOMMU_GROUP_TYPES": "DMA identity identity",
             "TB_VIOMMU_DOMAIN_IDS": "5 6"}),
)


# Page-table sharing: the patched QEMU's virtio-iommu offers
# VIRTIO_IOMMU_F_ATTACH_TABLE and walks the guest's tables with QEMU's own
# walkers (the VT-d second-level one on q35, the SMMU stage-1 one on virt).
# viommu-stats checks that the DMA domains really are table domains of the
# format (their debugfs line), that no MAP or UNMAP was sent and that
# INVALIDATEs were, at most one per unmap; the edu test DMAs right after
# unmaps (the device's IOTLB must have been invalidated) and to an unmapped
# IOVA, whose fault must reach the IOMMU core. Lazy on x86 (its default),
# strict on arm64 (its default) and in the invalidate-after-map scenario,
# whose device caches non-present entries (attach-table-inval-map=on) and in
# the one whose device caches nothing (attach-table-no-cache=on: no
# INVALIDATE for cleared leaves, the edu test's DMAs right after unmaps
# must fault all the same); the
# debug kernel once, strict, with an INVALIDATE that fails to queue (the
# driver must invalidate the whole domain before the unmap returns), on a
# device that offers AMD v1 alone (attach-table-formats): the x86 driver's
# fallback format, walked by the AMD IOMMU model's walk. ring-map-sg: the
# disk's direct reads cost the domain one unmap per direction of a request,
# its descriptor table going with the out buffers, not one per page
# (virtio_ring.map_sg), and page by page again with it off. blk-copy-slots:
# with virtio_blk.copy_slots off, then on (the driver rebound), the disk's
# serial number and data read back, a GET_ID maps nothing in the slots and
# a direct read one range fewer (its table and header in the slot: one
# strict INVALIDATE a read). net-rx-frag: the NIC's received
# packets cost the domain an unmap per page fragment (some twenty buffers),
# not one per buffer (virtio_net.map_rx_frags), and one per buffer again
# with it off. net-tx-copy: the NIC's sent frames cost the domain no unmap
# (virtio_net.tx_copy: copied into slots the ring maps once), and one a
# packet at least with it off.
PT_STEPS = ("iommu-info", "blk", "ring-map-sg", "blk-copy-slots", "net", "net-rx-frag", "net-tx-copy",
            "vfio-edu", "viommu-stats")
PT_TRACE = ("virtio_iommu_attach_table", "virtio_iommu_invalidate")
PT_X86_ENV = {"TB_VIOMMU_MODE": "table", "TB_VIOMMU_FORMAT": "VTD_SL"}
PT = (
    _sc("x86_64-virtio-iommu-pt",
        "q35 + virtio-iommu-pci walking the guest's VT-d second-stage tables "
        "(patched QEMU): disk, NIC, VFIO edu, lazy domains",
        "q35-virtio-iommu-pt", "x86_64", PT_STEPS,
        devices=("blk", "net", "edu"), fault="virtio-iommu",
        append=VFIO_UNSAFE_IRQS, extra_trace=PT_TRACE,
        env={**PT_X86_ENV, "TB_VIOMMU_DOMAIN": "dma-lazy"}),
    _sc("x86_64-virtio-iommu-pt-invalmap",
        "x86_64-virtio-iommu-pt, strict, the device asking for INVALIDATEs "
        "after maps (attach-table-inval-map=on), the NIC on packed rings",
        "q35-virtio-iommu-pt-invalmap", "x86_64", PT_STEPS,
        devices=("blk", "net", "edu"), fault="virtio-iommu",
        append=VFIO_UNSAFE_IRQS + " iommu.strict=1", extra_trace=PT_TRACE,
        env={**PT_X86_ENV, "TB_VIOMMU_DOMAIN": "dma-strict",
             "TB_VIOMMU_INVAL_MAP": "1", "TB_NET_PACKED": "1"}),
    _sc("arm64-virtio-iommu-pt",
        "arm64 virt + virtio-iommu-pci walking the guest's ARMv8 stage-1 tables "
        "(patched QEMU): disk, NIC, VFIO edu, strict domains",
        "virt-virtio-iommu-pt", "arm64", PT_STEPS,
        devices=("blk", "net", "edu"), fault="virtio-iommu",
        append=VFIO_UNSAFE_IRQS, extra_trace=PT_TRACE,
        env={"TB_VIOMMU_MODE": "table", "TB_VIOMMU_FORMAT": "ARM_LPAE",
             "TB_VIOMMU_DOMAIN": "dma-strict"}),
    _sc("x86_64-virtio-iommu-pt-debug",
        "x86_64-virtio-iommu-pt on the KASAN/lockdep/UBSAN/kmemleak kernel, "
        "AMD v1 tables (the device offers no other), strict, an INVALIDATE "
        "failing to queue, the driver unbound under iommufd",
        "q35-virtio-iommu-pt-amd", "x86_64-debug",
        ("kmemleak-clear", *PT_STEPS, "viommu-remove", "kmemleak"),
        devices=("blk", "net", "edu"), fault="virtio-iommu",
        append=VFIO_UNSAFE_IRQS + " iommu.strict=1", extra_trace=PT_TRACE,
        # 364 s beside another boot on 2026-12-07: room for a slower host
        timeout_s=900,
        env={**PT_X86_ENV, "TB_VIOMMU_FORMAT": "AMD_V1",
             "TB_VIOMMU_DOMAIN": "dma-strict",
             "TB_EDU_FAIL_QUEUE": "/sys/kernel/debug/virtio-iommu/fail_queue"}),
)


# The device offers tables, the board's device tree says its DMA does not
# snoop the CPU caches: the driver must stay in MAP/UNMAP mode (viommu-stats
# checks no request of page-table sharing went), DMA as usual
PT += (_sc("arm64-virtio-iommu-pt-noncoherent",
           "arm64 virt without dma-coherent, virtio-iommu-pci offering page "
           "tables: the driver serves it in MAP/UNMAP mode",
           "virt-virtio-iommu-pt-noncoherent", "arm64",
           ("iommu-info", "blk", "net", "viommu-stats"),
           devices=("blk", "net"), full_only=True),)
_PT_ARM64 = next(sc for sc in PT if sc.name == "arm64-virtio-iommu-pt")
_PT_INVALMAP = next(sc for sc in PT if sc.name == "x86_64-virtio-iommu-pt-invalmap")
# The device caching nothing (attach-table-no-cache=on): the strict x86
# scenario's steps with no INVALIDATE for cleared leaves; on arm64 (make
# check-full, below) ARMv8 tables, the SMMU walk at every translation, and
# the driver's barrier in place of the INVALIDATE on a weakly ordered guest.
PT += (dataclasses.replace(
    _PT_INVALMAP, name="x86_64-virtio-iommu-pt-nocache", machine="q35-virtio-iommu-pt-nocache",
    summary="x86_64-virtio-iommu-pt, strict, the device caching no translation "
            "(attach-table-no-cache=on): no INVALIDATE for cleared leaves",
    env={**PT_X86_ENV, "TB_VIOMMU_DOMAIN": "dma-strict", "TB_VIOMMU_NO_CACHE": "1"}),)
# The device that keeps its IOTLB and serves the request queue before it
# translates (attach-table-posted-inval=on): each unmap's INVALIDATE left
# unnotified, and the edu's DMAs right after unmaps fault; the driver goes
# away with posted requests on its queue. On the plain kernel: the debug
# kernel's boots keep both of a guest's vCPUs busy (about 320 s of CPU
# each), and x86_64-virtio-iommu-pt-debug already takes the table paths
# through KASAN, lockdep and an INVALIDATE that fails to queue.
_PT_DEBUG = next(sc for sc in PT if sc.name == "x86_64-virtio-iommu-pt-debug")
PT += (dataclasses.replace(
    _PT_DEBUG, name="x86_64-virtio-iommu-pt-posted", machine="q35-virtio-iommu-pt-posted",
    summary="x86_64-virtio-iommu-pt's steps, strict, VT-d tables, the device serving the "
            "queue before it translates (attach-table-posted-inval=on): INVALIDATEs "
            "unnotified; then the driver unbound under iommufd",
    kernel="x86_64", steps=(*PT_STEPS, "viommu-remove"), timeout_s=240,
    env={**PT_X86_ENV, "TB_VIOMMU_DOMAIN": "dma-strict", "TB_VIOMMU_POSTED_INVAL": "1"}),)
# Page-table mode on the 16K and 64K kernels (make check-full): the guest
# builds ARMv8 stage-1 tables of its own granule, and QEMU's SMMU walk
# (smmu_ptw()) reads them at that granule.
PT += tuple(dataclasses.replace(
    _PT_ARM64, name=f"arm64-virtio-iommu-pt-{kib}k", kernel=f"arm64-{kib}k", full_only=True,
    summary=f"arm64-virtio-iommu-pt on {kib} KiB pages: {kib}K-granule stage-1 tables",
    env={**_PT_ARM64.env, "TB_IOMMU_GRANULE": hex(kib << 10)})
    for kib in (16, 64))
# The two devices that spare the guest its INVALIDATE traps, on arm64 (make
# check-full): the driver's barrier (and, posted, the ring's publication)
# orders the cleared descriptors on a weakly ordered guest.
_ARM64_SPARING = {
    "nocache": ("the device caching no translation (attach-table-no-cache=on): "
                "no INVALIDATE for cleared leaves", "TB_VIOMMU_NO_CACHE"),
    "posted": ("the device serving the queue before it translates "
               "(attach-table-posted-inval=on): INVALIDATEs unnotified",
               "TB_VIOMMU_POSTED_INVAL"),
}
PT += tuple(dataclasses.replace(
    _PT_ARM64, name=f"arm64-virtio-iommu-pt-{kind}", machine=f"virt-virtio-iommu-pt-{kind}",
    full_only=True, summary=f"arm64-virtio-iommu-pt, {what}", env={**_PT_ARM64.env, var: "1"})
    for kind, (what, var) in _ARM64_SPARING.items())


def _smmuv3_granule(kib: int) -> Scenario:
    """SMMUv3 on a kernel with @kib KiB pages: the driver takes the granule
    of the CPU page size, so its tables are generic_pt's ARMv8 format at
    that granule; the edu test checks VFIO reports it as the smallest IOMMU
    page, and its stress test maps and unmaps 40 times at that granule."""
    return _sc(f"arm64-smmuv3-{kib}k",
               f"arm64-smmuv3 on {kib} KiB pages: the {kib}K-granule tables",
               "virt-smmuv3", f"arm64-{kib}k", ("iommu-info", "blk", "vfio-edu"),
               devices=("blk", "edu"), fault="smmuv3", append=VFIO_UNSAFE_IRQS,
               env={**on_generic_pt("smmuv3"), "TB_IOMMU_GRANULE": hex(kib << 10),
                    "TB_STRESS_EDU_OPS": "40"}, full_only=True)


_ALL = (
    _sc("x86_64-virtio-iommu", "q35 + virtio-iommu-pci (ACPI VIOT): disk, NIC, VFIO edu",
        "q35-virtio-iommu", "x86_64",
        ("iommu-info", "blk", "net", "vfio-edu", "viommu-stats"),
        devices=("blk", "net", "edu"), fault="virtio-iommu",
        append=VFIO_UNSAFE_IRQS, env={"TB_VIOMMU_DOMAIN": "dma-lazy"}),
    _sc("x86_64-virtio-iommu-strict",
        "the virtio-iommu scenario with strict DMA domains (iommu.strict=1), "
        "and two CPUs mapping side by side combining their kicks",
        "q35-virtio-iommu", "x86_64",
        ("iommu-info", "blk", "ring-map-sg", "blk-copy-slots", "net", "net-rx-frag",
         "net-tx-copy", "vfio-edu", "dma-bench", "viommu-stats"),
        devices=("blk", "net", "edu", "edu"), fault="virtio-iommu",
        append=VFIO_UNSAFE_IRQS + " iommu.strict=1" + COMBINE_ON,
        env={"TB_VIOMMU_DOMAIN": "dma-strict", **COMBINE_CHECK}),
    _sc("x86_64-virtio-iommu-identity",
        "the virtio-iommu scenario with identity domains (iommu.passthrough=1)",
        "q35-virtio-iommu", "x86_64",
        ("iommu-info", "blk", "net", "vfio-edu", "viommu-stats"),
        devices=("blk", "net", "edu"), fault="virtio-iommu",
        append=VFIO_UNSAFE_IRQS + " iommu.passthrough=1",
        env={"TB_VIOMMU_DOMAIN": "bypass"}),
    _sc("x86_64-virtio-iommu-debug",
        "the virtio-iommu scenario on the KASAN/lockdep/UBSAN/kmemleak kernel, "
        "kick combining on a strict domain included",
        "q35-virtio-iommu", "x86_64-debug",
        ("kmemleak-clear", "iommu-info", "blk", "net", "vfio-edu", "dma-bench",
         "viommu-stats", "vhost-iommu", "viommu-remove", "kmemleak"),
        devices=("blk", "net", "edu", "edu"), fault="virtio-iommu",
        append=VFIO_UNSAFE_IRQS + COMBINE_ON, timeout_s=900,
        # The vhost-iommu selftests: their fail-nth sweeps must run here
        # (the kernel has fault injection). Under KASAN the random run goes
        # about 3,000 requests a second against 40,000 elsewhere, where it
        # checks a million: here 30,000 (every request type some thousands
        # of times, 10 s); the races (DEL_ENDPOINT against SET_IOMMU, files
        # closed while misses are in flight) run shorter too. The step took
        # 164 s of a quiet host with 100,000 and a 20 s race; a loaded
        # host has taken 600 s.
        # The combining wait runs under KASAN and lockdep; each map takes
        # too long there for the other CPU to come within it, so the check is
        # that CPUs waited (combine_waits), not that they met.
        # The kernel has fault injection: an UNMAP the driver cannot queue
        # must unmap nothing (the edu test's unmap_the_driver_could_not_send).
        env={"VHOST_IOMMU_NEED_FAIL_NTH": "1", "VHOST_IOMMU_RANDOM": "30000",
             "TB_EDU_FAIL_QUEUE": "/sys/kernel/debug/virtio-iommu/fail_queue",
             # and the replay of a filled domain keeps interrupts on (the
             # kernel has the irqsoff tracer)
             "TB_EDU_REPLAY_MAPS": "100000",
             "VHOST_IOMMU_DEL_RACE_SECONDS": "10", "VHOST_IOMMU_CLOSE_ROUNDS": "20",
             **COMBINE_CHECK, "TB_BENCH_SET_GROUP": "DMA",
             "TB_BENCH_EXPECT_COMBINE": "combine_waits"}),
    # The edu moved to another address space's domain while the IOMMU has
    # not yet taken the ATTACH (stopped a second before each): the old
    # domain's unmaps must reach it meanwhile
    *(_sc(f"x86_64-virtio-iommu{pt}-replace-debug",
          f"virtio-iommu{' with page tables' if pt else ''} answering each "
          "ATTACH a second late, on the debug kernel: an unmap of the old "
          "domain while the edu moves to another one",
          f"q35-virtio-iommu{pt}-stall-attach", "x86_64-debug", ("vfio-edu",),
          devices=("edu",), fault="virtio-iommu", append=VFIO_UNSAFE_IRQS,
          env={"TB_EDU_STALL_ATTACH": "1000",
               "TB_EDU_TESTS": "replace_unmaps_the_old_domain"})
      for pt in ("", "-pt")),
    # DMA-API debugging tells the sizes of the NIC's live mappings
    _sc("x86_64-virtio-iommu-bounce-debug",
        "virtio-net where the DMA API bounces (swiotlb=force, identity "
        "domain), on the debug kernel: receive buffers mapped one by one, "
        "never a whole page fragment",
        "q35-virtio-iommu", "x86_64-debug", ("net-rx-frag-bounce",),
        devices=("net",), append="iommu.passthrough=1 swiotlb=force"),
    _sc("x86_64-vhost-iommu",
        "vhost-iommu: the selftests play VMM and guest against /dev/vhost-iommu",
        "q35", "x86_64", ("vhost-iommu",)),
    _sc("x86_64-intel-iommu", "q35 + intel-iommu: disk, VFIO edu DMA and faults, "
        "VFIO nesting, vhost-iommu forwarding to it",
        "q35-intel-iommu", "x86_64",
        ("iommu-info", "blk", "vfio-edu", "vfio-nested", "vhost-vfio"),
        devices=("blk", "edu"), fault="intel-iommu", append=VFIO_UNSAFE_IRQS,
        env={**on_generic_pt("intel-iommu"), **NEST_FAULT_RECORDS}),
    # Caching mode says nothing of snooping: without ECAP.C the driver must
    # not hand generic_pt's tables (written without cache flushes) to the
    # IOMMU, and its old code's tables must carry the DMA.
    _sc("x86_64-intel-iommu-noncoherent",
        "q35 + intel-iommu without coherent page walks (no ECAP.C): the "
        "driver's own tables, disk and VFIO edu DMA and faults",
        "q35-intel-iommu-noncoherent", "x86_64", ("iommu-info", "blk", "vfio-edu"),
        devices=("blk", "edu"), fault="intel-iommu", append=VFIO_UNSAFE_IRQS,
        env={"TB_PT_FORMAT": PT_FORMAT["intel-iommu"], "TB_PT_WANT": "N"}),
    _sc("x86_64-amd-iommu", "q35 + amd-iommu: disk, VFIO edu DMA and faults, "
        "VFIO nesting, vhost-iommu forwarding to it",
        "q35-amd-iommu", "x86_64",
        ("iommu-info", "blk", "vfio-edu", "vfio-nested", "vhost-vfio"),
        devices=("blk", "edu"), fault="amd-iommu", append=VFIO_UNSAFE_IRQS,
        env=on_generic_pt("amd-iommu")),
    _sc("x86_64-no-iommu", "q35 without an IOMMU: disk and NIC, the floor",
        "q35", "x86_64", ("iommu-info", "blk", "net"), devices=("blk", "net")),
    # The kunit step: arm-smmu-v3-gpt's cases ran at boot on this SMMUv3
    # (paths no user of the IOMMU API reaches)
    _sc("arm64-smmuv3", "arm64 virt,iommu=smmuv3: disk, VFIO edu DMA and faults, "
        "the SMMUv3 unmap-gather KUnit cases, VFIO nesting over the SMMU",
        "virt-smmuv3", "arm64",
        ("iommu-info", "kunit", "blk", "vfio-edu", "vfio-nested", "vhost-vfio"),
        devices=("blk", "edu"), fault="smmuv3", append=VFIO_UNSAFE_IRQS,
        env={**on_generic_pt("smmuv3"), "TB_IOMMU_GRANULE": "0x1000",
             "TB_KUNIT_MUST_RUN": " ".join(KUNIT_SMMUV3_MUST_RUN),
             **NEST_FAULT_RECORDS}),
    _sc("arm64-virtio-iommu", "arm64 virt + virtio-iommu-pci (DT): disk, NIC, VFIO edu",
        "virt-virtio-iommu", "arm64",
        ("iommu-info", "blk", "net", "vfio-edu", "viommu-stats"),
        devices=("blk", "net", "edu"), fault="virtio-iommu",
        append=VFIO_UNSAFE_IRQS, env={"TB_VIOMMU_DOMAIN": "dma-strict"}),
    MMIO,
    MMIO_DEBUG,
    MMIO_MSI,
    MMIO_MSI_IOMMU,
    MMIO_MSI_DEBUG,
    MMIO_X86,
    MMIO_MSI_X86,
    *LIMITS,
    *PT,
    _smmuv3_granule(16),
    _smmuv3_granule(64),
)


# The stress scenarios, one per IOMMU QEMU models with its own page-table
# code in the guest: on the KASAN/lockdep/UBSAN kernel, the edu
# selftest's stress test (map, DMA, check, unmap, 4 KiB to 8 MiB, 2 MiB ones
# on huge pages) and direct I/O of mixed sizes to virtio-blk, a fixed count
# of each; any fault, corruption or kernel report fails them.
STRESS_STEPS = ("iommu-info", "blk", "vfio-edu", "blk-stress")
STRESS_ENV = {"TB_STRESS_EDU_OPS": "100", "TB_STRESS_BLK_OPS": "64",
              "TB_STRESS_SEED": "1", "TB_STRESS_NEED_HUGE": "1"}


def _stress(arch: str, iommu: str, machine: str, kernel: str,
            full_only: bool = False, more: tuple[str, ...] = (),
            more_summary: str = "", counts: dict[str, str] | None = None) -> Scenario:
    return _sc(f"{arch}-{iommu}-stress",
               f"{iommu} under stress on the debug kernel: VFIO edu map/DMA/unmap "
               f"with 2 MiB pages, direct disk I/O of mixed sizes{more_summary}",
               machine, kernel, STRESS_STEPS + more, devices=("blk", "edu"), fault=iommu,
               # x86_64's took 494 s beside another boot on 2026-12-07
               append=VFIO_UNSAFE_IRQS, timeout_s=1200,
               env={**STRESS_ENV, **(counts or {}), **on_generic_pt(iommu),
                    "TB_IOMMU_GRANULE": "0x1000",
                    **(NEST_FAULT_RECORDS if "vfio-nested" in more else {}),
                    # the debug kernel has fault injection: vhost_iommu_vfio's
                    # fail-nth sweep must run, not skip
                    **({"VHOST_IOMMU_NEED_FAIL_NTH": "1"} if "vhost-vfio" in more else {})},
               full_only=full_only)


_ALL += (
    # VFIO nesting on the debug kernel: KASAN and lockdep over
    # its paths, fail-nth over every allocation of ATTACH and INVALIDATE,
    # kmemleak over what the test allocated and freed; behind intel-iommu,
    # whose faults also come to the test as records. Shorter runs of the
    # two stress tests than make check-full's other two stress scenarios
    # (40 edu rounds, 24 disk writes): on a 2-core machine with a cold
    # ccache, CI's 90 minutes had 7 to spare (2026-11-29), and the full
    # counts took 3 of them
    _stress("x86_64", "intel-iommu", "q35-intel-iommu", "x86_64-debug",
            more=("kmemleak-clear", "vfio-nested", "vhost-vfio", "kmemleak"),
            counts={"TB_STRESS_EDU_OPS": "40", "TB_STRESS_BLK_OPS": "24"},
            more_summary=", VFIO nesting (vfio_nested, fail-nth, kmemleak) and "
                         "vhost-iommu forwarding to it"),
    # make check-full: three minutes CI's cold hour has no room for; the
    # AMD driver's generic_pt tables stay in make check in x86_64-amd-iommu
    # and in x86_64-kunit's comparisons on the debug kernel
    _stress("x86_64", "amd-iommu", "q35-amd-iommu", "x86_64-debug", full_only=True),
    _stress("arm64", "smmuv3", "virt-smmuv3", "arm64-debug", full_only=True),
)

# The KUnit suites on the x86_64 debug kernel (KASAN, lockdep, UBSAN): they
# are built in (configs/kunit.config) and run at boot, before /init; the
# kunit step reports each case from debugfs. Sharing the debug kernel saves
# a kernel build of its own. Cases that must have run, not been skipped:
# the bit-for-bit comparisons with the tables the AMD and Intel drivers' own
# code builds (on UML the io-pgtable-arm ones, tests/test_kunit.py).
KUNIT_X86_MUST_RUN = ("generic_pt_compare.gpt_cmp_amd_test",
                      "generic_pt_compare.gpt_cmp_vtd_test")
# generic_pt's random test, 100,000 operations a format by default (on UML,
# tests/test_kunit.py), took 160 of this boot's 195 s under KASAN: here a
# tenth; the step checks the kernel took the parameter
KUNIT_X86_RANDOM_OPS = "10000"
_ALL += (
    _sc("x86_64-kunit",
        "the KUnit suites on the x86_64 KASAN/lockdep/UBSAN kernel, the "
        "bit-for-bit comparisons with the AMD and Intel drivers' tables "
        "included",
        "q35", "x86_64-debug", ("kunit",), timeout_s=900,
        append=f"gpt_kunit.random_ops={KUNIT_X86_RANDOM_OPS}",
        env={"TB_KUNIT_MUST_RUN": " ".join(KUNIT_X86_MUST_RUN),
             "TB_KUNIT_RANDOM_OPS": KUNIT_X86_RANDOM_OPS}),
)

# The arm64 tier boots under `make check-full` only. Its kernel is a cold
# build of 12-14 minutes on two CPUs, which CI's 60 minutes on a fresh
# machine cannot hold beside the two x86_64 kernels and our QEMU
# (README, "CI time on a fresh machine"). What `make check` keeps of it, at
# a smaller scale: the ARMv8 formats at every granule bit for bit against
# io-pgtable-arm (KUnit on UML); ARM_LPAE tables walked by our QEMU's SMMU
# walk (tests/test_qemu_patches.py, virt-lpae-*) and by vhost-iommu
# (vhost_iommu_table.c, both formats); virtio-mmio behind the virtio-iommu
# and MSI for virtio-mmio on x86 microvm (x86_64-virtio-iommu-mmio,
# x86_64-mmio-msi-debug). What only the full run has: the SMMUv3 driver
# on generic_pt and its KUnit suite, the device-tree paths, GICv3 ITS
# MSIs, a weakly ordered guest.
_ALL = tuple(dataclasses.replace(s, full_only=True) if s.arch == "arm64" else s
             for s in _ALL)

SCENARIOS = {s.name: s for s in _ALL}

# `make run`: one workload (disk, NIC, VFIO edu, every byte checked) behind
# our QEMU's virtio-iommu-pci twice, side by side: in MAP/UNMAP mode (what
# 6.12 and QEMU's device do) and sharing the guest's VT-d second-stage
# tables (attach-table=on). Lazy DMA domains, the distributions' default.
# Both trace every request type, so the report counts the same events.
# Not booted by make check: the same device paths boot there as
# x86_64-virtio-iommu and x86_64-virtio-iommu-pt.
RUN_STEPS = ("iommu-info", "blk", "net", "vfio-edu", "viommu-stats")
RUN_SCENARIOS = {s.name: s for s in (
    _sc("x86_64-run-map-unmap",
        "MAP/UNMAP mode: a MAP and an UNMAP request for each DMA mapping",
        "q35-virtio-iommu", "x86_64", RUN_STEPS,
        devices=("blk", "net", "edu"), fault="virtio-iommu",
        append=VFIO_UNSAFE_IRQS, extra_trace=PT_TRACE,
        env={"TB_VIOMMU_DOMAIN": "dma-lazy"}),
    _sc("x86_64-run-page-table",
        "page-table sharing: the device walks the guest's VT-d tables",
        "q35-virtio-iommu-pt", "x86_64", RUN_STEPS,
        devices=("blk", "net", "edu"), fault="virtio-iommu",
        append=VFIO_UNSAFE_IRQS, extra_trace=PT_TRACE,
        env={**PT_X86_ENV, "TB_VIOMMU_DOMAIN": "dma-lazy"}),
)}


def selected(full: bool | None = None) -> dict[str, Scenario]:
    """The scenarios a run boots: all for `make check-full` (TB_FULL=1),
    else those not marked full_only."""
    if full is None:
        full = os.environ.get("TB_FULL", "") not in ("", "0")
    return {n: s for n, s in SCENARIOS.items() if full or not s.full_only}


def check_kernels(full: bool | None = None) -> tuple[str, ...]:
    """The kernel targets the selected scenarios boot, x86_64 ones first."""
    names = {s.kernel for s in selected(full).values()}
    return tuple(sorted(names, key=lambda n: (not n.startswith("x86_64"), n)))


# `make bench-viommu` (testbed/bench.py), not part of `make check`: the DMA
# map benchmark on a spare edu device, with 6.12's driver (kernel
# x86_64-stock) and ours (also with its kick combining off), strict and
# lazy, and without an IOMMU. The timed boots run untraced: QEMU writes and
# flushes each traced line, about 1.3 us of the vCPU's time, which a row
# would pay per request and per kick. The rows of BENCH_COUNTED have a
# second, counting boot in every round, traced, whose times are not used:
# 6.12's driver has no counters, so QEMU's trace is what counts its
# requests and kicks; ours is counted by its debugfs counters, and QEMU's
# count of its counting boot is kept beside them (qemu_* in the row). The edu is the only device besides the IOMMU, so every
# virtio queue notify QEMU traces is a kick of the IOMMU (queue 0 requests,
# queue 1 events).
BENCH_TRACE = ("virtio_queue_notify",)
BENCH_COUNTED = ("6.12", "ours")
BENCH_MODES = {"strict": ("iommu.strict=1", "DMA"), "lazy": ("iommu.strict=0", "DMA-FQ")}
# driver: (kernel target, extra command line). ours-combined is our driver
# with kick combining on (see viommu_kick(); off by default), to show what
# it costs and saves. ours-pt is our driver in page-table mode, behind the
# patched QEMU's device that walks the guest's tables, and ours-pt-map the
# same kernel and device in MAP/UNMAP mode (virtio_iommu.map_unmap=1): the
# two modes on one device; ours-pt-nocache page-table mode on the device that
# caches nothing (attach-table-no-cache=on), where unmaps send no INVALIDATE;
# ours-pt-posted on the device that serves its queue before it translates
# (attach-table-posted-inval=on), where unmaps notify none.
BENCH_DRIVERS = {"6.12": ("x86_64-stock", ""), "ours": ("x86_64", ""),
                 "ours-combined": ("x86_64", COMBINE_ON),
                 "ours-pt": ("x86_64", ""),
                 "ours-pt-nocache": ("x86_64", ""),
                 "ours-pt-posted": ("x86_64", ""),
                 "ours-pt-map": ("x86_64", " virtio_iommu.map_unmap=1")}
# The machine of the rows whose device is not QEMU's own virtio-iommu
BENCH_MACHINES = {"ours-pt": "q35-virtio-iommu-pt", "ours-pt-map": "q35-virtio-iommu-pt",
                  "ours-pt-nocache": "q35-virtio-iommu-pt-nocache",
                  "ours-pt-posted": "q35-virtio-iommu-pt-posted"}
# The rows in page-table mode, counted by the driver alone (QEMU's trace
# has no MAP to count pairs by)
BENCH_TABLE_DRIVERS = ("ours-pt", "ours-pt-nocache", "ours-pt-posted")


def _bench(driver: str, mode: str, counted: bool = False) -> Scenario:
    """A bench-viommu row's timed boot, or with @counted its counting boot."""
    if driver == "none":
        return _sc("bench-viommu-none", "DMA map benchmark without an IOMMU (floor)",
                   "q35", "x86_64", ("dma-bench",), devices=("edu",),
                   env={"TB_BENCH_GROUP": "none"})
    append, group = BENCH_MODES[mode]
    kernel, extra = BENCH_DRIVERS[driver]
    return _sc(f"bench-viommu-{driver}-{mode}" + ("-counted" if counted else ""),
               f"DMA map benchmark, {driver} virtio-iommu driver, {mode} domains"
               + (", QEMU tracing its requests and kicks" if counted else ""),
               BENCH_MACHINES.get(driver, "q35-virtio-iommu"), kernel, ("dma-bench",),
               devices=("edu",), append=append + extra, env={"TB_BENCH_GROUP": group},
               extra_trace=BENCH_TRACE if counted else (), device_trace=counted)


# (driver, mode) of each row of build/bench/viommu.json, in table order
BENCH_ROWS = (("6.12", "strict"), ("ours", "strict"), ("ours-combined", "strict"),
              ("ours-pt-map", "strict"), ("ours-pt", "strict"),
              ("ours-pt-nocache", "strict"), ("ours-pt-posted", "strict"),
              ("6.12", "lazy"), ("ours", "lazy"), ("ours-combined", "lazy"),
              ("ours-pt-map", "lazy"), ("ours-pt", "lazy"),
              ("none", "-"))
# (driver, mode) -> the timed boot of that row
BENCH_ROW_SCENARIOS = {(d, m): _bench(d, m) for d, m in BENCH_ROWS}
BENCH_SCENARIOS = {sc.name: sc for sc in BENCH_ROW_SCENARIOS.values()}
# (driver, mode) -> the counting boot of that row
BENCH_COUNT_SCENARIOS = {(d, m): _bench(d, m, counted=True)
                         for d, m in BENCH_ROWS if d in BENCH_COUNTED}
BENCH_SCENARIOS.update({sc.name: sc for sc in BENCH_COUNT_SCENARIOS.values()})

# `make bench-throughput` (also run by `make bench-viommu`): disk and NIC
# transfer rates (guest/steps/tput-bench.sh) behind our driver in
# page-table mode and in MAP/UNMAP mode, on one device and kernel (the
# patched QEMU's virtio-iommu offering ATTACH_TABLE;
# virtio_iommu.map_unmap=1 for MAP/UNMAP mode), strict and lazy, against
# no IOMMU on the same QEMU binary.
TPUT_ROWS = {("pt", "strict"): ("q35-virtio-iommu-pt", "iommu.strict=1"),
             # the device caching nothing: no INVALIDATE per unmap
             ("pt-nocache", "strict"): ("q35-virtio-iommu-pt-nocache",
                                        "iommu.strict=1"),
             # the device that serves the queue first: INVALIDATEs unnotified
             ("pt-posted", "strict"): ("q35-virtio-iommu-pt-posted",
                                       "iommu.strict=1"),
             # page-table strict with no copy slot: virtio-net's sent
             # frames, virtio-blk's tables, headers and statuses mapped,
             # not copied into the ring's slots: what the copies save
             ("pt-mapped", "strict"): ("q35-virtio-iommu-pt",
                                       "iommu.strict=1 virtio_net.tx_copy=0 "
                                       "virtio_blk.copy_slots=0"),
             # page-table strict with virtio_ring mapping page by page and
             # virtio-net each buffer, as 6.12 does: what one dma_map_sg()
             # per direction, one map per receive page fragment and the
             # copy slots save
             ("pt-paged", "strict"): ("q35-virtio-iommu-pt",
                                      "iommu.strict=1 virtio_ring.map_sg=0 "
                                      "virtio_net.map_rx_frags=0 "
                                      "virtio_net.tx_copy=0 "
                                      "virtio_blk.copy_slots=0"),
             ("map-unmap", "strict"): ("q35-virtio-iommu-pt",
                                       "iommu.strict=1 virtio_iommu.map_unmap=1"),
             ("pt", "lazy"): ("q35-virtio-iommu-pt", "iommu.strict=0"),
             ("map-unmap", "lazy"): ("q35-virtio-iommu-pt",
                                     "iommu.strict=0 virtio_iommu.map_unmap=1"),
             # The reference beside them: an emulated hardware IOMMU, whose
             # guest driver does the same DMA API work (strict: QEMU's
             # intel-iommu has caching mode, which the driver makes strict)
             ("intel-iommu", "strict"): ("q35-intel-iommu", ""),
             ("none", "-"): ("q35", "")}
TPUT_SCENARIOS = {
    key: _sc(f"bench-tput-{key[0]}-{key[1]}".rstrip("-"),
             f"disk and NIC throughput, IOMMU {key[0]}, {key[1]} domains",
             machine, "x86_64", ("tput-bench",), devices=("blk", "net"), append=append)
    for key, (machine, append) in TPUT_ROWS.items()}
BENCH_SCENARIOS.update({sc.name: sc for sc in TPUT_SCENARIOS.values()})

# `make bench-vhost`: the vhost-iommu selftest's MAP/UNMAP benchmark (the
# selftest plays the guest), TB_BENCH_SECONDS per batch size.
BENCH_VHOST = _sc("bench-vhost",
                  "vhost-iommu: MAP/UNMAP pairs at 1, 16, 256 requests a kick",
                  "q35", "x86_64", ("vhost-bench",))
BENCH_SCENARIOS[BENCH_VHOST.name] = BENCH_VHOST

# `make bench-drivers`: dma_map_benchmark on a spare edu behind each IOMMU
# whose driver builds its tables with generic_pt, once per page-table path
# of the same kernel, chosen on the command line: (iommu, machine, kernel,
# the driver's switch, the DMA domain type). Lazy domains where the driver
# allows them, so that the time is the page tables' and not the IOTLB
# invalidation's, which both paths share; the VT-d and AMD drivers force
# strict domains on an IOMMU that says it is virtual (caching mode, NpCache),
# as QEMU's do.
DRIVER_BENCH = (
    ("intel-iommu", "q35-intel-iommu", "x86_64", PT_SWITCH["intel-iommu"], "DMA"),
    ("amd-iommu", "q35-amd-iommu", "x86_64", PT_SWITCH["amd-iommu"], "DMA"),
    ("smmuv3", "virt-smmuv3", "arm64", PT_SWITCH["smmuv3"], "DMA-FQ"),
)
DRIVER_PATHS = {"old": ("0", "N"), "generic_pt": ("1", "Y")}


def _driver_bench(iommu: str, machine: str, kernel: str, param: str,
                  group: str, path: str) -> Scenario:
    value, want = DRIVER_PATHS[path]
    return _sc(f"bench-drivers-{iommu}-{path}",
               f"DMA map benchmark, {iommu}, {path} page tables",
               machine, kernel, ("iommu-info", "dma-bench"), devices=("edu",),
               append=f"iommu.strict=0 {param}={value}",
               env={"TB_BENCH_GROUP": group, "TB_PT_PARAM": param,
                    "TB_PT_WANT": want, "TB_PT_FORMAT": PT_FORMAT[iommu]})


# (iommu, path) of each row of build/bench/drivers.json, in table order
DRIVER_BENCH_ROWS = tuple((b[0], p) for b in DRIVER_BENCH for p in DRIVER_PATHS)
DRIVER_BENCH_SCENARIOS = {
    sc.name: sc for sc in (_driver_bench(*b, p) for b in DRIVER_BENCH for p in DRIVER_PATHS)}
BENCH_SCENARIOS.update(DRIVER_BENCH_SCENARIOS)

# `make bench-mmio`: round trips over virtio-net and 4 KiB random reads of
# virtio-blk, one at a time (guest/progs/io_bench.c), on one arm64 machine
# and kernel, and on one x86_64 machine (microvm, rows prefixed "x86-") and
# kernel: the devices on virtio-pci (MSI-X through the ITS or to the local
# APICs), on
# virtio-mmio with the wired interrupt (virtio_mmio.msi_vectors=1: the
# transports still offer MSI, the driver leaves it off) and on virtio-mmio
# with MSI. QEMU's trace counts the register accesses of the virtio-mmio
# transports: InterruptStatus reads (0x060), InterruptACK writes (0x064)
# and QueueNotify writes (0x050), and the MSIs they send. It does so in a
# counting boot of each virtio-mmio row (MMIO_COUNT_SCENARIOS), one a
# round, whose rates are not used: QEMU writes and flushes each traced
# line, which the timed boots would pay per access and per MSI. The
# virtio-pci rows have no such registers, and no counting boot.
MMIO_BENCH_TRACE = ("virtio_mmio_read", "virtio_mmio_write_offset", "virtio_mmio_msi")
MMIO_BENCH_ROWS = {"pci": ("pci", ""), "mmio-wired": ("mmio", "virtio_mmio.msi_vectors=1"),
                   "mmio-msi": ("mmio", ""),
                   # one vector for all of a device's queues, as the wired line
                   # is: what the per-queue vectors cost in interrupts
                   "mmio-msi-shared": ("mmio", "virtio_mmio.msi_vectors=2")}
MMIO_BENCH_MACHINES = {"": ("virt-mmio-msi", "arm64"), "x86-": ("microvm-mmio-msi", "x86_64")}


def _mmio_bench(prefix: str, row: str, counted: bool = False) -> Scenario:
    """A bench-mmio row's timed boot, or with @counted its counting boot."""
    machine, kernel = MMIO_BENCH_MACHINES[prefix]
    transport, append = MMIO_BENCH_ROWS[row]
    return _sc(f"bench-mmio-{prefix}{row}" + ("-counted" if counted else ""),
               f"round trips and random reads, {kernel} {row}"
               + (", QEMU tracing the transport" if counted else ""),
               machine, kernel, ("mmio-bench",), devices=("blk", "net"),
               transport=transport, append=append,
               extra_trace=MMIO_BENCH_TRACE if counted else ())


MMIO_BENCH_SCENARIOS = {prefix + row: _mmio_bench(prefix, row)
                        for prefix in MMIO_BENCH_MACHINES for row in MMIO_BENCH_ROWS}
MMIO_COUNT_SCENARIOS = {prefix + row: _mmio_bench(prefix, row, counted=True)
                        for prefix in MMIO_BENCH_MACHINES for row in MMIO_BENCH_ROWS
                        if MMIO_BENCH_ROWS[row][0] == "mmio"}
