# SPDX-License-Identifier: GPL-2.0
"""Our QEMU patches (qemu/patches): signed off, explained, and clean by
QEMU's own checkpatch.pl, from the source tree `make qemu` patched."""

import os
import struct
import subprocess
import tempfile

import pytest

from testbed import qemu_build
from testbed import qtest as qt
from testbed import vhost_user as vu
from testbed.patchfile import message_problems, parse

PATCHES = qemu_build.series()


@pytest.mark.parametrize("patch", PATCHES, ids=[p.name[:40] for p in PATCHES])
def test_qemu_patch(patch):
    assert not message_problems(parse(patch.read_text()))
    checkpatch = qemu_build.SRC / "scripts" / "checkpatch.pl"
    assert checkpatch.exists(), "QEMU's source is not unpacked: make qemu"
    res = subprocess.run(["perl", checkpatch, "--no-tree", patch], text=True,
                         capture_output=True)
    assert res.returncode == 0, res.stdout[-2000:]


def need_emulator(exe: str) -> None:
    """Our build of @exe, or a skip: `make check` builds qemu-system-x86_64
    alone, `make check-full` (TB_FULL=1) the arm one too. The Arm cases
    check our QEMU's SMMU walk of ARM_LPAE tables the test writes; make
    check keeps the format itself checked by KUnit on UML (against
    io-pgtable-arm) and by vhost-iommu's selftests."""
    if exe not in qemu_build.default_exes() and not qemu_build.up_to_date(exe):
        pytest.skip(f"{exe}: make check-full builds it")
    assert qemu_build.binary(exe).exists(), "make qemu"


# Each patched board, with a virtio-mmio device plugged before the IOMMU
REFUSALS = {
    "arm-virt": ("qemu-system-aarch64", "virt,virtio-mmio-iommu=on"),
    "x86-microvm": ("qemu-system-x86_64",
                    "microvm,acpi=on,pcie=on,virtio-mmio-iommu=on"),
}


@pytest.mark.parametrize("board", REFUSALS)
def test_virtio_mmio_device_before_the_iommu_is_refused(board):
    """A virtio-mmio device plugged before the virtio-iommu already chose
    its DMA address space: the board must say so, not boot it untranslated."""
    exe, machine = REFUSALS[board]
    need_emulator(exe)
    qemu = qemu_build.binary(exe)
    res = subprocess.run(
        [qemu, *qemu_build.firmware_args(), "-machine", machine, "-accel", "tcg",
         "-nodefaults", "-display", "none", "-monitor", "none",
         "-netdev", "user,id=n0",
         "-device", "virtio-net-device,netdev=n0,iommu_platform=on",
         "-device", "virtio-iommu-pci"],
        text=True, capture_output=True, timeout=60)
    assert res.returncode != 0
    assert "plugged before the virtio-iommu" in res.stderr


# virtio-iommu's configuration properties (qemu/patches 0006 and later), each value
# the device cannot offer and the message realize gives for it
BAD_CONFIGS = {
    "granule=3k": "granule must be 4k, 8k, 16k, 64k or host",
    "domain-range-start=7,domain-range-end=6": "is above domain-range-end",
    "attach-table-inval-map=on": "attach-table-inval-map needs attach-table=on",
    "attach-table-formats=0x10": "attach-table-formats needs attach-table=on",
    "attach-table-no-cache=on": "attach-table-no-cache needs attach-table=on",
    "attach-table=on,attach-table-inval-map=on,attach-table-no-cache=on":
        "attach-table-no-cache needs attach-table=on, and neither",
    "attach-table-posted-inval=on": "attach-table-posted-inval needs attach-table=on",
    "attach-table=on,attach-table-no-cache=on,attach-table-posted-inval=on":
        "attach-table-posted-inval needs attach-table=on, and none of",
    "attach-table=on,attach-table-formats=0x2":
        "attach-table-formats 0x2: this QEMU walks the formats of mask 0x18 only",
    # patch 0049: the busy loop is the kernel device's worker's
    "poll-us=50": "poll-us needs vhost=on",
}


@pytest.mark.parametrize("props", BAD_CONFIGS)
def test_virtio_iommu_bad_configuration_is_refused(props):
    """A granule the device does not know, or an empty domain range, fails
    realize with a message, instead of a device offering nonsense."""
    qemu = qemu_build.binary("qemu-system-x86_64")
    assert qemu.exists(), "make qemu"
    res = subprocess.run(
        [qemu, *qemu_build.firmware_args(), "-machine", "microvm,acpi=on,pcie=on",
         "-accel", "tcg", "-nodefaults", "-display", "none", "-monitor", "none",
         "-device", f"virtio-iommu-pci,{props}"],
        text=True, capture_output=True, timeout=60)
    assert res.returncode != 0
    assert BAD_CONFIGS[props] in res.stderr



def _q35_with(device, **kw):
    qemu = qemu_build.binary("qemu-system-x86_64")
    assert qemu.exists(), "make qemu"
    return subprocess.run(
        [qemu, *qemu_build.firmware_args(), "-machine", "q35", "-accel", "tcg",
         "-nodefaults", "-display", "none", "-monitor", "none", "-S",
         "-device", device],
        text=True, capture_output=True, timeout=60, **kw)


# virtio-iommu's vhost back end (qemu/patches 0018-0020). The host here has
# no /dev/vhost-iommu: the back end serving a guest is tested in the nested
# test bed (testbed/nested.py); here, that realize refuses every file that
# is not a vhost-iommu instead of offering a device nobody serves.
def test_virtio_iommu_vhost_without_the_kernel_device_is_refused():
    """vhost=on with no /dev/vhost-iommu: realize fails and says what to load."""
    if os.path.exists("/dev/vhost-iommu"):
        pytest.skip("this host has /dev/vhost-iommu")
    res = _q35_with("virtio-iommu-pci,vhost=on")
    assert res.returncode != 0
    assert "cannot open /dev/vhost-iommu (modprobe vhost_iommu)" in res.stderr


def test_virtio_iommu_vhostfd_not_a_vhost_device_is_refused():
    """vhostfd= a file that is no vhost device (/dev/null): the first vhost
    call fails realize."""
    with open("/dev/null") as f:
        res = _q35_with(f"virtio-iommu-pci,vhost=on,vhostfd={f.fileno()}",
                        pass_fds=(f.fileno(),))
    assert res.returncode != 0
    assert "vhost_set_owner failed" in res.stderr


def test_virtio_iommu_vhostfd_not_a_number_is_refused():
    res = _q35_with("virtio-iommu-pci,vhost=on,vhostfd=nofd")
    assert res.returncode != 0
    assert "unable to parse vhostfd" in res.stderr


def test_virtio_iommu_without_vhost_still_realizes():
    """vhost=off (the default) is the userspace device, as before: QEMU
    starts (paused) and quits on its monitor's command."""
    qemu = qemu_build.binary("qemu-system-x86_64")
    res = subprocess.run(
        [qemu, *qemu_build.firmware_args(), "-machine", "q35", "-accel", "tcg",
         "-nodefaults", "-display", "none", "-monitor", "stdio", "-S",
         "-device", "virtio-iommu-pci,vhost=off"],
        input="quit\n", text=True, capture_output=True, timeout=60)
    assert res.returncode == 0, res.stderr


# Page-table sharing (qemu/patches 0009-0017), checked request by request on
# the device alone: the tests drive the virtio-iommu and QEMU's edu device
# over QEMU's qtest protocol (testbed/qtest.py), write the page tables
# themselves, and make the edu DMA through them.

IOMMU_DEVFN, EDU_DEVFN, EDU2_DEVFN = 3 << 3, 4 << 3, 5 << 3
EDU_EP = EDU_DEVFN                  # endpoint ID: the edu's requester ID
EP2 = EDU2_DEVFN                    # a second endpoint (an edu left idle)
TABLES_OFF = 0x200000               # our page tables, from the start of RAM
DATA_OFF = 0x400000                 # the pages they map


class Tables:
    """A small writer of the formats, ours (not the walkers'): VT-d second
    level and AMD v1 with 3 or 4 levels, and Arm long descriptor (stage 1,
    4K, 16K or 64K granule)."""

    def __init__(self, q: qt.Qtest, fmt: int, ias: int, granule: int = 12):
        self.q, self.fmt, self.ias, self.granule = q, fmt, ias, granule
        self.next = q.ram + TABLES_OFF
        self.bits = granule - 3
        # levels, numbered down to 1 for the leaf level of pages
        self.levels = -(-(ias - granule) // self.bits)
        self.root = self.alloc()

    def alloc(self) -> int:
        page = self.next
        self.next += 1 << self.granule
        self.q.write(page, bytes(1 << self.granule))
        return page

    def _shift(self, level: int) -> int:
        return self.granule + self.bits * (level - 1)

    def _table(self, addr: int, level: int) -> int:
        """An entry pointing at the table @addr of level @level."""
        if self.fmt == qt.PGTF_AMD_V1:  # PR, next level, IR, IW
            return addr | 1 | level << 9 | 3 << 61
        return addr | 3         # VT-d R|W; Arm valid table descriptor

    def _leaf(self, phys: int, level: int, read: bool, write: bool) -> int:
        if self.fmt == qt.PGTF_AMD_V1:  # PR, next level 0: a page of the level
            return phys | 1 | int(read) << 61 | int(write) << 62
        if self.fmt == qt.PGTF_VTD_SL:
            return phys | int(read) | (2 if write else 0) | ((1 << 7) if level > 1 else 0)
        ap2 = 0 if write else 1 << 7
        kind = 3 if level == 1 else 1           # page, or block
        return phys | kind | (1 << 10) | ap2    # AF set

    def entry_addr(self, iova: int, level: int) -> int:
        """The address of the entry for @iova at @level (creating tables
        down to it)."""
        table = self.root
        for lvl in range(self.levels, level, -1):
            slot = table + 8 * ((iova >> self._shift(lvl)) & ((1 << self.bits) - 1))
            pte = self.q.readn(slot, 8)
            if not pte & 1:
                pte = self._table(self.alloc(), lvl - 1)
                self.q.writen(slot, 8, pte)
            table = pte & ~((1 << self.granule) - 1) & ((1 << 48) - 1)
        return table + 8 * ((iova >> self._shift(level)) & ((1 << self.bits) - 1))

    def map(self, iova: int, phys: int, level: int = 1, read: bool = True,
            write: bool = True) -> int:
        slot = self.entry_addr(iova, level)
        self.q.writen(slot, 8, self._leaf(phys, level, read, write))
        return slot

    def set(self, slot: int, value: int) -> None:
        self.q.writen(slot, 8, value)


class Rig:
    """A board with a virtio-iommu (@props) and two edus behind it, the
    first doing the DMA."""

    def __init__(self, board: str, props: str = "attach-table=on",
                 features: frozenset = frozenset({qt.F_ATTACH_TABLE}),
                 events: int = 8, extra: tuple[str, ...] = ()):
        self.board = qt.BOARDS[board]
        need_emulator(self.board.exe)
        self.q = qt.Qtest(self.board, [
            "-device", f"virtio-iommu-pci,addr={IOMMU_DEVFN >> 3:#x}.0,{props}",
            "-device", f"edu,addr={EDU_DEVFN >> 3:#x}.0",
            "-device", f"edu,addr={EDU2_DEVFN >> 3:#x}.0", *extra])
        # INPUT_RANGE, DOMAIN_RANGE, MAP_UNMAP (for the MAP domain cases), PROBE
        self.v = qt.VirtioIommu(self.q, IOMMU_DEVFN, self.board.mmio,
                                {0, 1, 2, 4} | set(features))
        self.edu = qt.Edu(self.q, EDU_DEVFN, self.board.mmio + 0x1000000)
        if events:
            self.v.post_events(events)
        self.ram = self.board.ram

    def data(self, n: int) -> int:
        return self.ram + DATA_OFF + n * 0x10000

    def copy(self, src_iova: int, dst_iova: int, count: int) -> None:
        """The edu reads @count bytes at @src_iova and writes them to
        @dst_iova."""
        self.edu.read_from(src_iova, count)
        self.edu.write_to(dst_iova, count)

    def close(self) -> str:
        return self.q.close()


@pytest.fixture
def rig_factory():
    rigs = []

    def make(*args, **kw):
        rigs.append(Rig(*args, **kw))
        return rigs[-1]
    yield make
    for r in rigs:
        r.close()


PROBE_FORMATS = {
    # board: {format: (ias, oas, granules, max_levels, asid_bits)}
    "q35": {qt.PGTF_VTD_SL: (48, 48, 1 << 12, 4, 0),
            qt.PGTF_AMD_V1: (57, 52, 1 << 12, 5, 0)},
    "virt": {qt.PGTF_ARM_LPAE: (48, 48, (1 << 12) | (1 << 14) | (1 << 16), 4, 16)},
}


@pytest.mark.parametrize("board", PROBE_FORMATS)
@pytest.mark.parametrize("props", ["attach-table=on",
                                   "attach-table=on,attach-table-inval-map=on",
                                   "attach-table=on,attach-table-no-cache=on",
                                   "attach-table=on,attach-table-posted-inval=on"])
def test_table_format_probe_property(rig_factory, board, props):
    """With the feature negotiated, PROBE lists the formats the target's
    IOMMU models walk, each 16 bytes (length 12) with its walker's limits,
    and INVAL_MAP, NO_CACHE or POSTED_INVAL exactly when asked."""
    r = rig_factory(board, props)
    assert r.v.negotiated >> qt.F_ATTACH_TABLE & 1
    tables = [body for t, body in r.v.probe(EDU_EP) if t == qt.PROBE_T_PAGE_TABLE_FMT]
    assert all(len(body) == 12 for body in tables)
    got = {}
    for body in tables:
        fmt, ias, oas, granules, levels, asid_bits, flags = struct.unpack("<HBBIBBH", body)
        got[fmt] = (ias, oas, granules, levels, asid_bits)
        assert flags == (qt.PGTF_F_INVAL_MAP if "inval-map" in props else
                         qt.PGTF_F_NO_CACHE if "no-cache" in props else
                         qt.PGTF_F_POSTED_INVAL if "posted-inval" in props else 0)
    assert got == PROBE_FORMATS[board]


@pytest.mark.parametrize("fmt", [qt.PGTF_VTD_SL, qt.PGTF_AMD_V1])
def test_attach_table_formats_chooses_the_offer(rig_factory, fmt):
    """attach-table-formats=<mask>: PROBE lists the chosen format alone,
    and ATTACH_TABLE takes it and refuses the other (UNSUPP)."""
    other = qt.PGTF_AMD_V1 if fmt == qt.PGTF_VTD_SL else qt.PGTF_VTD_SL
    r = rig_factory("q35", f"attach-table=on,attach-table-formats={1 << fmt:#x}")
    tables = [body for t, body in r.v.probe(EDU_EP) if t == qt.PROBE_T_PAGE_TABLE_FMT]
    assert [struct.unpack_from("<H", body)[0] for body in tables] == [fmt]
    assert r.v.status(_at(fmt=other)) == qt.S_UNSUPP
    assert r.v.status(_at(fmt=fmt)) == qt.S_OK


@pytest.mark.parametrize("props", ["", "attach-table=on"])
def test_attach_table_needs_the_feature(rig_factory, props):
    """Offered only with attach-table=on; not negotiated, ATTACH_TABLE and
    INVALIDATE are UNSUPP and PROBE lists no table format."""
    r = rig_factory("q35", props or "boot-bypass=on", features=frozenset())
    assert bool(r.v.offered >> qt.F_ATTACH_TABLE & 1) == bool(props)
    assert not r.v.negotiated >> qt.F_ATTACH_TABLE & 1
    assert qt.PROBE_T_PAGE_TABLE_FMT not in [t for t, _ in r.v.probe(EDU_EP)]
    root = r.ram + TABLES_OFF
    assert r.v.status(qt.attach_table(1, EDU_EP, qt.PGTF_VTD_SL, root, 48)) == qt.S_UNSUPP
    assert r.v.status(qt.invalidate(1)) == qt.S_UNSUPP


ROOT = TABLES_OFF                   # q35: RAM starts at 0
GOOD = dict(fmt=qt.PGTF_VTD_SL, root=ROOT, ias=48)


def _at(domain=1, ep=EDU_EP, **kw):
    return qt.attach_table(domain, ep, **{**GOOD, **kw})


# name: (requests that must succeed first, the request, its status); each
# on a fresh q35 with domain IDs 0-100 (domain-range-end)
STATUSES = {
    "attach_table ok": ([], _at(), qt.S_OK),
    "attach_table 39-bit (3 levels) ok": ([], _at(ias=39), qt.S_OK),
    "reserved0 set": ([], _at(reserved0=b"\0\1"), qt.S_INVAL),
    "reserved1 set": ([], _at(reserved1=b"\0\0\0\1"), qt.S_INVAL),
    "reserved2 set": ([], _at(reserved2=bytes(15) + b"\1" + bytes(4)), qt.S_INVAL),
    "reserved2 set in its last byte": ([], _at(reserved2=bytes(19) + b"\1"), qt.S_INVAL),
    "asid outside ARM_LPAE": ([], _at(asid=1), qt.S_INVAL),
    "mair outside ARM_LPAE": ([], _at(mair=0xff), qt.S_INVAL),
    "unknown endpoint": ([], _at(ep=0x999), qt.S_NOENT),
    "domain outside domain_range": ([], _at(domain=101), qt.S_RANGE),
    "format not offered (ARM_LPAE on q35)": ([], _at(fmt=qt.PGTF_ARM_LPAE), qt.S_UNSUPP),
    "unknown format": ([], _at(fmt=2), qt.S_UNSUPP),
    "ias 40": ([], _at(ias=40), qt.S_RANGE),
    "AMD_V1 ok": ([], _at(fmt=qt.PGTF_AMD_V1), qt.S_OK),
    "AMD_V1 ias 40": ([], _at(fmt=qt.PGTF_AMD_V1, ias=40), qt.S_RANGE),
    "AMD_V1 ias 66 (6 levels, above the property's 57)": (
        [], _at(fmt=qt.PGTF_AMD_V1, ias=66), qt.S_RANGE),
    "asid for AMD_V1": ([], _at(fmt=qt.PGTF_AMD_V1, asid=1), qt.S_INVAL),
    "domain with another format": ([_at()], _at(ep=EP2, fmt=qt.PGTF_AMD_V1), qt.S_INVAL),
    "ias 57 (above the property's 48)": ([], _at(ias=57), qt.S_RANGE),
    "granule 16K": ([], _at(granule=14), qt.S_RANGE),
    "root misaligned": ([], _at(root=ROOT + 0x800), qt.S_RANGE),
    "root above oas": ([], _at(root=1 << 48), qt.S_RANGE),
    "domain of ATTACH": ([qt.attach(1, EDU_EP)], _at(), qt.S_INVAL),
    "bypass domain": ([qt.attach(1, EDU_EP, flags=1)], _at(), qt.S_INVAL),
    "domain with another root": ([_at()], _at(ep=EP2, root=ROOT + 0x1000), qt.S_INVAL),
    "domain with another ias": ([_at()], _at(ep=EP2, ias=39), qt.S_INVAL),
    "domain with the same table": ([_at()], _at(ep=EP2), qt.S_OK),
    "endpoint already in the domain": ([_at()], _at(), qt.S_OK),
    "MAP on a table domain": ([_at()], qt.map_req(1, 0, 0xfff, 0x1000), qt.S_INVAL),
    "UNMAP on a table domain": ([_at()], qt.unmap_req(1, 0, 0xfff), qt.S_INVAL),
    "ATTACH to a table domain": ([_at()], qt.attach(1, EP2), qt.S_INVAL),
    "invalidate domain": ([_at()], qt.invalidate(1), qt.S_OK),
    "invalidate range, leaf": ([_at()], qt.invalidate(1, qt.INVAL_S_RANGE, 0x1000,
                                                      0x1fff, qt.INVAL_F_LEAF), qt.S_OK),
    "invalidate unknown domain": ([_at()], qt.invalidate(2), qt.S_NOENT),
    "invalidate a MAP domain": ([qt.attach(1, EDU_EP)], qt.invalidate(1), qt.S_INVAL),
    "invalidate unknown scope": ([_at()], qt.invalidate(1, 2), qt.S_INVAL),
    "invalidate unknown flag": ([_at()], qt.invalidate(1, flags=2), qt.S_INVAL),
    "invalidate reserved0 set": ([_at()], qt.invalidate(1, reserved0=b"\1\0\0\0"),
                                 qt.S_INVAL),
    "invalidate reserved1 set": ([_at()], qt.invalidate(1, reserved1=bytes(7) + b"\1" +
                                                        bytes(4)), qt.S_INVAL),
    "invalidate reserved1 set in its last byte": (
        [_at()], qt.invalidate(1, reserved1=bytes(11) + b"\1"), qt.S_INVAL),
    "invalidate end below start": ([_at()], qt.invalidate(1, qt.INVAL_S_RANGE, 0x2000,
                                                          0x1fff), qt.S_INVAL),
    # The domain goes with its last endpoint; the endpoint left for ATTACH's
    "table domain gone with its endpoint": ([_at(), qt.attach(2, EDU_EP)],
                                            qt.invalidate(1), qt.S_NOENT),
}


@pytest.mark.parametrize("case", STATUSES)
def test_page_table_request_status(rig_factory, case):
    """Each rule of the text's ATTACH_TABLE and INVALIDATE sections, with
    the status it names."""
    setup, req, want = STATUSES[case]
    r = rig_factory("q35", "attach-table=on,domain-range-end=100")
    for s in setup:
        assert r.v.status(s) == qt.S_OK
    assert r.v.status(req) == want


# board, format, ias, granule
WALKS = {
    "q35-vtd-4level": ("q35", qt.PGTF_VTD_SL, 48, 12),
    "q35-vtd-3level": ("q35", qt.PGTF_VTD_SL, 39, 12),
    "q35-amd-4level": ("q35", qt.PGTF_AMD_V1, 48, 12),
    "q35-amd-3level": ("q35", qt.PGTF_AMD_V1, 39, 12),
    "virt-lpae-4k": ("virt", qt.PGTF_ARM_LPAE, 48, 12),
    "virt-lpae-16k": ("virt", qt.PGTF_ARM_LPAE, 47, 14),
    "virt-lpae-64k": ("virt", qt.PGTF_ARM_LPAE, 42, 16),
}
IOVA = 0x4000000                    # below the edu's 28-bit DMA mask


def _table_rig(rig_factory, walk, props="attach-table=on"):
    board, fmt, ias, granule = WALKS[walk]
    r = rig_factory(board, props)
    t = Tables(r.q, fmt, ias, granule)
    extra = dict(asid=1, mair=0xff) if fmt == qt.PGTF_ARM_LPAE else {}
    assert r.v.status(qt.attach_table(1, EDU_EP, fmt, t.root, ias, granule,
                                      **extra)) == qt.S_OK
    return r, t


@pytest.mark.parametrize("walk", WALKS)
def test_table_walk_dma(rig_factory, walk):
    """The edu's DMA goes where the table says: a read through one page
    and a write through another arrive, a write to an unmapped address or
    through a read-only entry is a MAPPING fault on the event queue (the
    endpoint, the address, the access) and writes nothing."""
    r, t = _table_rig(rig_factory, walk)
    g = 1 << t.granule
    src, dst, ro = r.data(0), r.data(1), r.data(2)
    t.map(IOVA, src)
    t.map(IOVA + g, dst)
    t.map(IOVA + 2 * g, ro, write=False)
    pattern = bytes(range(256)) * 2
    r.q.write(src, pattern)
    r.q.write(ro, bytes(len(pattern)))
    r.copy(IOVA, IOVA + g, len(pattern))
    assert r.q.read(dst, len(pattern)) == pattern
    assert r.v.faults() == []

    r.edu.write_to(IOVA + 2 * g, 4)             # read-only
    r.edu.write_to(IOVA + 3 * g, 4)             # nothing there
    assert r.q.read(ro, 64) == bytes(64)
    faults = {(reason, flags, ep, addr & ~(g - 1)) for reason, flags, ep, addr in r.v.faults()}
    w = qt.FAULT_F_WRITE | qt.FAULT_F_ADDRESS
    assert faults == {(qt.FAULT_R_MAPPING, w, EDU_EP, IOVA + 2 * g),
                      (qt.FAULT_R_MAPPING, w, EDU_EP, IOVA + 3 * g)}
    # Reading through the read-only entry is fine
    r.edu.read_from(IOVA + 2 * g, 64)
    assert r.v.faults() == []


@pytest.mark.parametrize("walk", ["q35-vtd-4level", "q35-amd-4level", "virt-lpae-4k"])
def test_table_walk_large_page(rig_factory, walk):
    """A 2 MiB leaf one level up (VT-d PS, an AMD level-2 entry of next
    level 0, an Arm level-2 block)."""
    r, t = _table_rig(rig_factory, walk)
    big = r.ram + 0x800000                      # 2 MiB aligned
    t.map(IOVA + 0x200000, big, level=2)
    r.q.write(big + 0x12340, b"large page")
    r.edu.read_from(IOVA + 0x200000 + 0x12340, 10)
    t.map(IOVA, r.data(0))
    r.edu.write_to(IOVA, 10)
    assert r.q.read(r.data(0), 10) == b"large page"
    assert r.v.faults() == []


# walk: what makes an entry unusable, applied to the leaf's entry
MALFORMED = {
    # VT-d: bit 50 is above the 48-bit host address width: reserved
    "vtd-reserved-bit": ("q35-vtd-4level", lambda pte, slot: pte | (1 << 50), 1),
    # VT-d: PS in a level-4 entry is reserved
    "vtd-ps-at-level-4": ("q35-vtd-4level", lambda pte, slot: pte | (1 << 7), 4),
    # Arm: a level-3 descriptor of type block (0b01) is reserved
    "lpae-l3-block": ("virt-lpae-4k", lambda pte, slot: (pte & ~3) | 1, 1),
    # Arm: a block at level 0 of a 4K table does not exist
    "lpae-l0-block": ("virt-lpae-4k", lambda pte, slot: (pte & ~3) | 1, 4),
    # AMD: a leaf without PR (its IR and IW still set)
    "amd-leaf-absent": ("q35-amd-4level", lambda pte, slot: pte & ~1, 1),
    # AMD: a level-3 entry pointing at its own table as level 3 (a walk
    # that follows it never ends)
    "amd-table-points-at-itself": ("q35-amd-4level",
                                   lambda pte, slot: (slot & ~0xfff) | 1 | 3 << 9 | 3 << 61,
                                   3),
    # Arm 16K: a block at level 1 needs 52-bit addresses
    "lpae-16k-l1-block": ("virt-lpae-16k", lambda pte, slot: (pte & ~3) | 1, 3),
    # AMD: next level 7 encodes the page size in the address bits (one
    # more than the run of ones from bit 12); at level 2 (2 MiB pages) only
    # 4 MiB to 512 MiB are pages of that level (vhost-iommu.rst, "The
    # formats"): every address bit set (2^53 bytes), 8 KiB (bit 12 clear)
    # and 1 GiB (bits 12 to 28 set) are not
    "amd-size-2^53": ("q35-amd-4level", lambda pte, slot: _amd_sized(40), 2),
    "amd-size-below-its-level": ("q35-amd-4level", lambda pte, slot: _amd_sized(0), 2),
    "amd-size-of-the-level-above": ("q35-amd-4level",
                                    lambda pte, slot: _amd_sized(17), 2),
}


def _amd_sized(ones: int, base: int = 0) -> int:
    """An AMD v1 leaf of next level 7 at @base whose address bits from
    bit 12 hold @ones ones, then a zero: a page of 2^(13 + @ones) bytes."""
    return base | ((1 << ones) - 1) << 12 | 1 | 7 << 9 | 3 << 61


@pytest.mark.parametrize("case", MALFORMED)
def test_malformed_entry_faults(rig_factory, case):
    """An entry the walker cannot use gives the same fault as a missing
    one, and the DMA does not happen."""
    walk, spoil, level = MALFORMED[case]
    r, t = _table_rig(rig_factory, walk)
    t.map(IOVA, r.data(0))
    r.q.write(r.data(0), bytes(16))
    slot = t.entry_addr(IOVA, level)
    t.set(slot, spoil(r.q.readn(slot, 8), slot))
    r.edu.write_to(IOVA, 16)
    assert r.q.read(r.data(0), 16) == bytes(16)
    faults = r.v.faults()
    assert faults and all(f[0] == qt.FAULT_R_MAPPING and f[2] == EDU_EP for f in faults)


def test_amd_size_encoded_leaf_translates(rig_factory):
    """A 32 KiB AMD v1 page (next level 7, bits 12 and 13 set) in every
    level-1 entry it covers translates the whole page: the sizes a level
    can hold still walk."""
    r, t = _table_rig(rig_factory, "q35-amd-4level")
    page, g = r.data(0), 1 << t.granule          # data(0) is 64 KiB aligned
    for i in range(8):
        t.set(t.entry_addr(IOVA + i * g, 1), _amd_sized(2, page))
    r.q.write(page + 0x5123, b"32K page")
    r.edu.read_from(IOVA + 0x5123, 8)
    t.map(IOVA + 0x100000, r.data(1))
    r.edu.write_to(IOVA + 0x100000, 8)
    assert r.q.read(r.data(1), 8) == b"32K page"
    assert r.v.faults() == []


def _one_leaf_rig(rig_factory, walk, props="attach-table=on"):
    """A table with a read-only leaf at IOVA onto data page 0 ("old page";
    page 1 holds "new page") and page 2 writable at IOVA + 1 MiB; fetch()
    copies 8 bytes from IOVA through the edu and returns what arrived."""
    r, t = _table_rig(rig_factory, walk, props)
    out = r.data(2)
    r.q.write(r.data(0), b"old page")
    r.q.write(r.data(1), b"new page")
    slot = t.map(IOVA, r.data(0), write=False)
    t.map(IOVA + 0x100000, out)

    def fetch() -> bytes:
        r.copy(IOVA, IOVA + 0x100000, 8)
        return r.q.read(out, 8)
    assert fetch() == b"old page"
    return r, t, slot, fetch


@pytest.mark.parametrize("walk", ["q35-vtd-4level", "q35-amd-4level", "virt-lpae-4k"])
def test_invalidate_drops_the_iotlb(rig_factory, walk):
    """The device keeps what it walked until INVALIDATE: a leaf changed
    without one still translates the old way, a range that misses it
    changes nothing, one that covers it (or the whole domain) does."""
    r, t, slot, fetch = _one_leaf_rig(rig_factory, walk)
    t.set(slot, t._leaf(r.data(1), 1, True, False))
    assert fetch() == b"old page"
    assert r.v.status(qt.invalidate(1, qt.INVAL_S_RANGE, IOVA + 0x1000,
                                    IOVA + 0x1fff)) == qt.S_OK
    assert fetch() == b"old page"
    assert r.v.status(qt.invalidate(1, qt.INVAL_S_RANGE, IOVA, IOVA,
                                    qt.INVAL_F_LEAF)) == qt.S_OK
    assert fetch() == b"new page"
    t.set(slot, t._leaf(r.data(0), 1, True, False))
    assert r.v.status(qt.invalidate(1)) == qt.S_OK
    assert fetch() == b"old page"
    assert r.v.faults() == []


@pytest.mark.parametrize("walk", ["q35-vtd-4level", "q35-vtd-3level", "q35-amd-4level",
                                  "virt-lpae-4k"])
def test_table_invalidate_without_leaf_hint_drops_cached_tables(rig_factory, walk):
    """A leaf table replaced by another (the level-2 entry pointed at a new
    table): an INVALIDATE without the leaf hint makes the device walk the
    new one, as the text requires of cached table entries. One with the hint
    (a driver that broke its rule) leaves the VT-d walker resuming from the
    old table, its walk cache: it still translates the old way. The AMD and
    Arm walkers keep no such cache (no walk_from): for them the test checks
    only that after the INVALIDATE without the hint the walk reaches the new
    table."""
    r, t, slot, fetch = _one_leaf_rig(rig_factory, walk)
    g = 1 << t.granule
    entries = 1 << t.bits
    # The new leaf table: IOVA read-only onto page 1, the output page kept
    new = t.alloc()
    t.set(new + 8 * ((IOVA >> t.granule) % entries), t._leaf(r.data(1), 1, True, False))
    out = IOVA + 0x100000
    t.set(new + 8 * ((out >> t.granule) % entries), t._leaf(r.data(2), 1, True, True))
    assert out >> (t.granule + t.bits) == IOVA >> (t.granule + t.bits), "one leaf table"
    t.set(t.entry_addr(IOVA, 2), t._table(new, 1))
    assert r.v.status(qt.invalidate(1, qt.INVAL_S_RANGE, IOVA, out + g - 1,
                                    qt.INVAL_F_LEAF)) == qt.S_OK
    if WALKS[walk][1] == qt.PGTF_VTD_SL:
        assert fetch() == b"old page"
    assert r.v.status(qt.invalidate(1, qt.INVAL_S_RANGE, IOVA, IOVA)) == qt.S_OK
    assert fetch() == b"new page"
    assert r.v.faults() == []


@pytest.mark.parametrize("walk", ["q35-vtd-4level", "q35-amd-4level", "virt-lpae-4k"])
def test_no_cache_walks_every_access(rig_factory, walk):
    """attach-table-no-cache=on (PGTF_F_NO_CACHE): the device keeps nothing,
    so a leaf changed or cleared without an INVALIDATE takes effect at the
    next DMA, which a device with an IOTLB would not do (the test above);
    an INVALIDATE is still answered."""
    r, t, slot, fetch = _one_leaf_rig(rig_factory, walk,
                                      "attach-table=on,attach-table-no-cache=on")
    t.set(slot, t._leaf(r.data(1), 1, True, False))
    assert fetch() == b"new page"
    assert r.v.faults() == []
    t.set(slot, 0)
    r.q.write(r.data(2), bytes(8))
    assert fetch() == bytes(8)
    faults = r.v.faults()
    assert faults and all(f[0] == qt.FAULT_R_MAPPING and f[2] == EDU_EP for f in faults)
    assert r.v.status(qt.invalidate(1, qt.INVAL_S_RANGE, IOVA, IOVA,
                                    qt.INVAL_F_LEAF)) == qt.S_OK
    t.set(slot, t._leaf(r.data(0), 1, True, False))
    assert fetch() == b"old page"


@pytest.mark.parametrize("walk", ["q35-vtd-4level", "q35-amd-4level", "virt-lpae-4k"])
def test_posted_invalidate_is_served_before_translating(rig_factory, walk):
    """attach-table-posted-inval=on (PGTF_F_POSTED_INVAL): the device still
    keeps what it walked, but serves the request queue before it
    translates: an INVALIDATE made available and not notified takes effect
    at the next DMA, and is answered then. A leaf changed with none made
    available still translates the old way."""
    r, t, slot, fetch = _one_leaf_rig(rig_factory, walk,
                                      "attach-table=on,attach-table-posted-inval=on")
    t.set(slot, t._leaf(r.data(1), 1, True, False))
    assert fetch() == b"old page"
    r.v.post(qt.invalidate(1, qt.INVAL_S_RANGE, IOVA, IOVA, qt.INVAL_F_LEAF))
    assert r.v.posted_status() is None
    assert fetch() == b"new page"
    assert r.v.posted_status() == qt.S_OK
    assert r.v.faults() == []
    # A cleared leaf: the DMA after the posted INVALIDATE faults
    t.set(slot, 0)
    r.v.post(qt.invalidate(1, qt.INVAL_S_RANGE, IOVA, IOVA, qt.INVAL_F_LEAF))
    r.q.write(r.data(2), bytes(8))
    assert fetch() == bytes(8)
    assert r.v.posted_status() == qt.S_OK
    faults = r.v.faults()
    assert faults and all(f[0] == qt.FAULT_R_MAPPING and f[2] == EDU_EP for f in faults)


@pytest.mark.parametrize("inval_map", [False, True])
def test_inval_map_caches_non_present(rig_factory, inval_map):
    """attach-table-inval-map=on: an address that faulted keeps faulting
    after the guest maps it, until an INVALIDATE covers it; without it, the
    map alone is enough."""
    props = "attach-table=on" + (",attach-table-inval-map=on" if inval_map else "")
    r, t = _table_rig(rig_factory, "q35-vtd-4level", props)
    r.q.write(r.data(0), b"mapped late")
    r.edu.read_from(IOVA, 11)
    assert r.v.faults()
    t.map(IOVA, r.data(0), write=False)
    t.map(IOVA + 0x100000, r.data(1))
    r.edu.read_from(IOVA, 11)
    assert bool(r.v.faults()) == inval_map
    assert r.v.status(qt.invalidate(1, qt.INVAL_S_RANGE, IOVA,
                                    IOVA + 0x100fff)) == qt.S_OK
    r.copy(IOVA, IOVA + 0x100000, 11)
    assert r.q.read(r.data(1), 11) == b"mapped late"
    assert r.v.faults() == []


def test_table_in_device_memory_is_not_read(rig_factory):
    """A root pointing at a device's registers faults without reading
    them: here the virtio-iommu's own ISR, which a read clears. The
    device has no event buffer, so nothing but a read could clear it."""
    r = rig_factory("q35", events=0)
    isr = r.v.caps[qt.CAP_ISR]
    assert isr % 0x1000 == 0
    # ATTACH_TABLE's completion raises the ISR; the walk must leave it
    assert r.v.status(qt.attach_table(1, EDU_EP, qt.PGTF_VTD_SL, isr, 48)) == qt.S_OK
    r.edu.write_to(0, 8)
    assert r.v.isr_peek() & 1, "the walk read the ISR: it is not guest RAM"


@pytest.mark.parametrize("walk", ["q35-vtd-4level", "q35-amd-4level", "virt-lpae-4k",
                                  "virt-lpae-64k"])
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_tables_fault_or_translate(rig_factory, walk, seed):
    """Tables of random entries, some pointing into the tables, some
    outside RAM, some at themselves: every DMA either translates or
    faults, and the device keeps answering requests."""
    import random
    rnd = random.Random(seed)
    r, t = _table_rig(rig_factory, walk)
    pages = [t.root] + [t.alloc() for _ in range(7)]
    g = 1 << t.granule
    for page in pages:
        # Addresses below the edu's 28 bits use entry 0 of the top levels:
        # mostly a valid link, so that walks go deep
        words = [rnd.choice(pages) | rnd.choice((3, 3, 3, rnd.randrange(1 << 12)))]
        for _ in range(g // 8 - 1):
            kind = rnd.randrange(4)
            if kind == 0:       # another table page, any type bits
                words.append(rnd.choice(pages) | rnd.randrange(1 << 12))
            elif kind == 1:     # anywhere in 48 bits
                words.append(rnd.getrandbits(48))
            elif kind == 2:     # anything at all
                words.append(rnd.getrandbits(64))
            else:
                words.append(0)
        r.q.write(page, struct.pack(f"<{len(words)}Q", *words))
    for _ in range(16):
        iova = rnd.randrange(1 << 28) & ~7
        if rnd.randrange(2):
            r.edu.read_from(iova, 8)
        else:
            r.edu.write_to(iova, 8)
        r.v.faults()
    assert r.v.status(qt.invalidate(1)) == qt.S_OK


def test_refused_attach_table_changes_nothing(rig_factory):
    """An ATTACH_TABLE refused (here a misaligned root, then a MAP domain's
    ID), or an ATTACH naming its table domain, leaves the endpoint where it was: in its table domain, translating
    by that table; then in its MAP domain, translating by its MAPs."""
    r, t = _table_rig(rig_factory, "q35-vtd-4level")
    t.map(IOVA, r.data(0), write=False)
    t.map(IOVA + 0x1000, r.data(1))
    r.q.write(r.data(0), b"still here")
    assert r.v.status(qt.attach_table(2, EDU_EP, qt.PGTF_VTD_SL, t.root + 8, 48)) == qt.S_RANGE
    r.copy(IOVA, IOVA + 0x1000, 10)
    assert r.q.read(r.data(1), 10) == b"still here"
    # Nor does an ATTACH naming the table domain move it anywhere
    r.q.write(r.data(0), b"still there")
    assert r.v.status(qt.attach(1, EDU_EP)) == qt.S_INVAL
    r.copy(IOVA, IOVA + 0x1000, 11)
    assert r.q.read(r.data(1), 11) == b"still there"

    assert r.v.status(qt.attach(3, EDU_EP)) == qt.S_OK
    assert r.v.status(qt.map_req(3, IOVA, IOVA + 0xfff, r.data(2), 1)) == qt.S_OK
    assert r.v.status(qt.map_req(3, IOVA + 0x1000, IOVA + 0x1fff, r.data(3), 3)) == qt.S_OK
    r.q.write(r.data(2), b"map domain")
    assert r.v.status(qt.attach_table(3, EDU_EP, qt.PGTF_VTD_SL, t.root, 48)) == qt.S_INVAL
    r.copy(IOVA, IOVA + 0x1000, 10)
    assert r.q.read(r.data(3), 10) == b"map domain"
    assert r.v.faults() == []


def _probe(ep=EDU_EP):
    return struct.pack("<B3xI64x", qt.T_PROBE, ep)


@pytest.mark.parametrize("room", [4, 8, 12, 256])
def test_probe_buffer_below_probe_size_is_inval(rig_factory, room):
    """A PROBE whose properties are shorter than probe_size (QEMU aborted
    on an assertion): INVAL in the last 4 bytes, zeroes before them, no
    property, the whole writable part used (as vhost-iommu answers)."""
    r = rig_factory("q35")
    ans = r.v.request(_probe(), room)
    assert room < r.v.probe_size + 4
    assert ans == bytes(room - 4) + bytes([qt.S_INVAL, 0, 0, 0])
    assert r.v.used_len() == room
    assert qt.PROBE_T_PAGE_TABLE_FMT in [t for t, _ in r.v.probe(EDU_EP)]


# Each request, complete and valid on a q35 with attach-table=on
WHOLE = {
    "attach": qt.attach(1, EDU_EP),
    "detach": struct.pack("<B3xII8x", qt.T_DETACH, 1, EDU_EP),
    "map": qt.map_req(1, 0, 0xfff, 0x1000),
    "unmap": qt.unmap_req(1, 0, 0xfff),
    "attach_table": _at(),
    "invalidate": qt.invalidate(1),
    "probe": _probe(),
}


@pytest.mark.parametrize("cut", [1, "head"])
@pytest.mark.parametrize("kind", WHOLE)
def test_readable_part_shorter_than_the_request_is_inval(rig_factory, kind, cut):
    """A readable part that stops before the request's end, by a byte or
    right after the head: INVAL, and the queue goes on."""
    r = rig_factory("q35")
    req = WHOLE[kind]
    short = req[:4] if cut == "head" else req[:-cut]
    room = r.v.probe_size + 4 if kind == "probe" else 4
    assert r.v.request(short, room)[-4] == qt.S_INVAL
    assert r.v.status(qt.attach(2, EDU_EP)) == qt.S_OK


@pytest.mark.parametrize("kind", WHOLE)
@pytest.mark.parametrize("side", ["writable 3 bytes", "readable 3 bytes"])
def test_no_room_for_head_or_tail_is_used_len_0(rig_factory, kind, side):
    """A writable part with no room for the tail, or a readable part with
    none for the head: the buffer comes back unwritten with used length
    0, and the queue goes on (QEMU used to mark the device broken)."""
    r = rig_factory("q35")
    req = WHOLE[kind]
    if side.startswith("writable"):
        ans = r.v.request(req, 3)
    else:
        ans = r.v.request(req[:3])
    assert ans == b"\xff" * len(ans)
    assert r.v.used_len() == 0
    assert r.v.status(qt.attach(2, EDU_EP)) == qt.S_OK


# A vhost device running when an IOMMU region appears under it (qemu/patches
# 0039): a guest puts an endpoint that was in bypass into a page-table
# domain while its vhost-net runs. Linux does not (it unbinds the driver,
# which resets the device, first); a hostile guest may. The vhost-net here
# is served by testbed/vhost_user.py, which records the device IOTLB
# messages and asks for translations as a back end does.
NET_DEVFN = 6 << 3
NET_EP = NET_DEVFN
NET_RINGS = 0x110000                # its rings, after the virtio-iommu's
NEEDS_RESET = 0x40
VHOST_ATTACH = {
    # the device caches walks and notifies unmaps: the notifier is taken
    "caching": ("attach-table=on", True),
    # the device would tell vhost of no unmap: the notifier is refused
    "no-cache": ("attach-table=on,attach-table-no-cache=on", False),
    "posted-inval": ("attach-table=on,attach-table-posted-inval=on", False),
}


@pytest.fixture
def vhost_user_backend():
    # A short directory of its own: a socket's path has 107 bytes at most
    with tempfile.TemporaryDirectory(prefix="tb-vu-", dir="/tmp") as d:
        backend = vu.Backend(os.path.join(d, "sock"))
        yield backend
        backend.close()


def _vhost_net_rig(rig_factory, props, backend, board="q35"):
    """A rig with a virtio-net-pci on vhost-user (@backend) behind the
    virtio-iommu as well; its memory shared, as vhost-user needs."""
    return rig_factory(board, props, extra=(
        "-object", f"memory-backend-memfd,id=mem,size={qt.MEM_MB}M,share=on",
        "-machine", "memory-backend=mem",
        "-chardev", f"socket,id=vu0,path={backend.path}",
        "-netdev", "vhost-user,id=n0,chardev=vu0",
        "-device", f"virtio-net-pci,addr={NET_DEVFN >> 3:#x}.0,netdev=n0,"
                   "disable-legacy=on,iommu_platform=on,romfile="))


def _start_net(r, backend):
    """Bring the NIC up (DRIVER_OK starts vhost) and wait for vhost."""
    net = qt.VirtioPci(r.q, NET_DEVFN, r.board.mmio + 0x2000000,
                       {qt.VIRTIO_F_ACCESS_PLATFORM}, 2, NET_RINGS)
    assert net.negotiated >> qt.VIRTIO_F_ACCESS_PLATFORM & 1
    backend.wait_for(vu.SET_MEM_TABLE)
    return net


def _net_tables(r, fmt, ias, granule=12):
    """Tables for the NIC's endpoint, its rings mapped where they are (so
    that vhost's start finds them)."""
    t = Tables(r.q, fmt, ias, granule)
    for off in range(NET_RINGS, NET_RINGS + 0x8000, 1 << granule):
        t.map(r.ram + off, r.ram + off)
    return t


def _net_map_domain(r):
    """Domain 1 a MAP domain of the NIC's endpoint, its rings mapped where
    they are (so that vhost's start finds them)."""
    rings = r.ram + NET_RINGS
    assert r.v.status(qt.attach(1, NET_EP)) == qt.S_OK
    assert r.v.status(qt.map_req(1, rings, rings + 0x7fff, rings)) == qt.S_OK


def _dropped(sent, iova):
    return any(m.kind == vu.IOTLB_INVALIDATE and m.covers(iova) for m in sent)


@pytest.mark.parametrize("walk", ["q35-vtd-4level", "q35-amd-4level", "virt-lpae-4k"])
def test_invalidate_reaches_vhost_iotlb(rig_factory, vhost_user_backend, walk):
    """vhost's device IOTLB follows the guest's table through INVALIDATE:
    a miss is answered through the table; a leaf moved and its range
    invalidated is dropped from vhost's IOTLB and the next miss finds the
    new page; a leaf cleared and the domain invalidated, the next miss
    gets no translation; DETACH drops vhost's IOTLB again and the next
    miss is the bypass's. The endpoint is attached before the NIC starts,
    as a Linux guest does."""
    board, fmt, ias, granule = WALKS[walk]
    b = vhost_user_backend
    r = _vhost_net_rig(rig_factory, "attach-table=on", b, board)
    t = _net_tables(r, fmt, ias, granule)
    slot = t.map(IOVA, r.data(0), write=False)
    extra = dict(asid=1, mair=0xff) if fmt == qt.PGTF_ARM_LPAE else {}
    assert r.v.status(qt.attach_table(1, NET_EP, fmt, t.root, ias, granule,
                                      **extra)) == qt.S_OK
    _start_net(r, b)

    ok, sent = b.miss(IOVA, write=False)
    assert ok and [m.kind for m in sent] == [vu.IOTLB_UPDATE]
    assert (sent[0].iova, sent[0].uaddr, sent[0].perm) == \
        (IOVA, b.uaddr(r.data(0)), vu.ACCESS_RO)

    t.set(slot, t._leaf(r.data(1), 1, True, True))
    seen = len(b.iotlb)
    assert r.v.status(qt.invalidate(1, qt.INVAL_S_RANGE, IOVA, IOVA + 0xfff,
                                    qt.INVAL_F_LEAF)) == qt.S_OK
    assert _dropped(b.iotlb[seen:], IOVA)
    ok, sent = b.miss(IOVA, write=True)
    assert ok and (sent[0].iova, sent[0].uaddr, sent[0].perm) == \
        (IOVA, b.uaddr(r.data(1)), vu.ACCESS_RW)

    t.set(slot, 0)
    seen = len(b.iotlb)
    assert r.v.status(qt.invalidate(1)) == qt.S_OK
    assert _dropped(b.iotlb[seen:], IOVA)
    ok, sent = b.miss(IOVA, write=False)
    assert not ok and sent == []

    # DETACH: vhost's IOTLB dropped, and the endpoint is in bypass again
    seen = len(b.iotlb)
    assert r.v.status(qt.detach(1, NET_EP)) == qt.S_OK
    assert _dropped(b.iotlb[seen:], IOVA)
    ok, sent = b.miss(r.data(1), write=True)
    assert ok and sent[0].uaddr + r.data(1) - sent[0].iova == b.uaddr(r.data(1))


@pytest.mark.parametrize("case", VHOST_ATTACH)
def test_iommu_region_under_running_vhost_device(rig_factory, vhost_user_backend, case):
    """The endpoint of a running vhost-net leaves bypass for a page-table
    domain. The device's IOTLB, which holds the bypass's translations, is
    dropped (an INVALIDATE of everything). Where the IOMMU takes vhost's
    notifier, the next miss is answered through the guest's table. Where it
    refuses (it would tell vhost of no unmap), QEMU goes on: misses go
    unanswered, the device is marked NEEDS_RESET, and after the guest's
    reset vhost does not start again (virtio-net serves the device in QEMU).
    QEMU used to exit here."""
    props, notified = VHOST_ATTACH[case]
    b = vhost_user_backend
    r = _vhost_net_rig(rig_factory, props, b)
    net = _start_net(r, b)
    data0, data1 = r.data(0), r.data(1)
    # In bypass, a miss is answered with the identity
    ok, sent = b.miss(data0, write=True)
    assert ok and [m.kind for m in sent] == [vu.IOTLB_UPDATE]
    assert sent[0].covers(data0)
    assert sent[0].uaddr + data0 - sent[0].iova == b.uaddr(data0)

    t = Tables(r.q, qt.PGTF_VTD_SL, 48)
    t.map(IOVA, data1)
    seen = len(b.iotlb)
    assert r.v.status(qt.attach_table(1, NET_EP, qt.PGTF_VTD_SL, t.root, 48)) == qt.S_OK
    dropped = [m for m in b.iotlb[seen:] if m.kind == vu.IOTLB_INVALIDATE]
    assert dropped and dropped[0].iova == 0 and dropped[0].size >= 1 << 63
    ok, sent = b.miss(IOVA, write=True)
    if notified:
        assert ok and [m.kind for m in sent] == [vu.IOTLB_UPDATE]
        assert sent[0].iova == IOVA and sent[0].uaddr == b.uaddr(data1)
        assert not net.device_status() & NEEDS_RESET
        return
    assert not ok and sent == []
    # Set from a bottom half: QEMU's main loop runs it between commands
    assert any(net.device_status() & NEEDS_RESET for _ in range(50))
    # The guest resets the device: vhost stops, and does not start again
    # under a domain whose IOMMU refuses its notifier
    stop = len(b.requests)
    net.reset()
    b.wait_for(vu.GET_VRING_BASE, stop)
    assert net.device_status() == 0
    net.start({qt.VIRTIO_F_ACCESS_PLATFORM}, 2)
    assert net.device_status() & 4 and not net.device_status() & NEEDS_RESET
    assert vu.SET_MEM_TABLE not in b.requests[stop:]
    err = r.close()
    assert "refuses the running device's IOTLB notifier" in err
    assert "vhost: the IOMMU refuses the device's IOTLB notifier" in err
    assert "falling back on userspace virtio" in err



def test_unmap_reaches_vhost_iotlb(rig_factory, vhost_user_backend):
    """MAP/UNMAP mode, the same path: a MAP's translation reaches vhost on
    a miss, UNMAP drops it from vhost's IOTLB, the next miss gets none."""
    b = vhost_user_backend
    r = _vhost_net_rig(rig_factory, "attach-table=on", b)
    _net_map_domain(r)
    assert r.v.status(qt.map_req(1, IOVA, IOVA + 0xfff, r.data(0))) == qt.S_OK
    _start_net(r, b)
    ok, sent = b.miss(IOVA, write=True)
    assert ok and (sent[0].iova, sent[0].uaddr, sent[0].perm) == \
        (IOVA, b.uaddr(r.data(0)), vu.ACCESS_RW)
    seen = len(b.iotlb)
    assert r.v.status(qt.unmap_req(1, IOVA, IOVA + 0xfff)) == qt.S_OK
    assert _dropped(b.iotlb[seen:], IOVA)
    ok, sent = b.miss(IOVA, write=False)
    assert not ok and sent == []

# What the guest's entry allows, per kind of domain: a read-only leaf or
# MAP reaches vhost read-only, and vhost's write misses it and faults;
# bypass is read-write (qemu/patches 0044-0046; before them, every entry
# vhost got was read-write)
VHOST_PERMS = ["table", "map", "bypass"]


@pytest.mark.parametrize("domain", VHOST_PERMS)
def test_vhost_iotlb_entry_keeps_the_permission(rig_factory, vhost_user_backend,
                                                domain):
    """A read miss gets the entry's permission, not read-write: read-only
    for a read-only leaf or MAP, so that the entry does not cover a write
    (a back end that asks for one is refused, with a MAPPING fault on the
    event queue), and read-write for a read-write one; read-write in
    bypass."""
    b = vhost_user_backend
    r = _vhost_net_rig(rig_factory, "attach-table=on", b)
    iova = r.data(0) if domain == "bypass" else IOVA
    if domain == "table":
        t = _net_tables(r, qt.PGTF_VTD_SL, 48)
        t.map(IOVA, r.data(0), write=False)
        t.map(IOVA + 0x1000, r.data(1))
        assert r.v.status(qt.attach_table(1, NET_EP, qt.PGTF_VTD_SL, t.root, 48)) == qt.S_OK
    elif domain == "map":
        _net_map_domain(r)
        assert r.v.status(qt.map_req(1, IOVA, IOVA + 0xfff, r.data(0), 1)) == qt.S_OK
        assert r.v.status(qt.map_req(1, IOVA + 0x1000, IOVA + 0x1fff, r.data(1))) == qt.S_OK
    _start_net(r, b)
    r.v.faults()

    ok, sent = b.miss(iova, write=False)
    assert ok and (sent[0].uaddr + iova - sent[0].iova) == b.uaddr(r.data(0))
    if domain == "bypass":
        assert sent[0].perm == vu.ACCESS_RW
        return
    assert sent[0].perm == vu.ACCESS_RO
    # A read of a read-write entry: read-write (a ring vhost reads and writes)
    ok, sent = b.miss(IOVA + 0x1000, write=False)
    assert ok and sent[0].perm == vu.ACCESS_RW
    ok, sent = b.miss(iova, write=True)
    assert not ok and sent == []
    faults = r.v.faults()
    assert faults and all(f[0] == qt.FAULT_R_MAPPING and f[2] == NET_EP and
                          f[1] & qt.FAULT_F_WRITE for f in faults)



# A table entry above a read-write leaf that withholds an access: (walk,
# access withheld, the entry's bits cleared, the entry's bits set)
WITHHELD = {
    "amd-read": ("q35-amd-4level", "read", 1 << 61, 0),      # IR clear
    "amd-write": ("q35-amd-4level", "write", 1 << 62, 0),    # IW clear
    "lpae-write": ("virt-lpae-4k", "write", 0, 1 << 62),     # APTable[1]
}


@pytest.mark.parametrize("case", WITHHELD)
def test_table_entry_withholding_an_access(rig_factory, vhost_user_backend, case):
    """AMD v1: a table entry above a read-write leaf without IR (or IW)
    withholds that access; ARMv8 stage 1: a table descriptor with
    APTable[1] set withholds write. The models' walks check it when asked
    for that access; the entry they give for the other access leaves it
    out (qemu/patches 0050, 0051; the virtio-iommu's walkers walked a
    second time for it before 0052), so vhost's entry does not carry it,
    and asking for it is refused with a fault."""
    walk, withheld, clear, set_ = WITHHELD[case]
    board, fmt, ias, granule = WALKS[walk]
    b = vhost_user_backend
    r = _vhost_net_rig(rig_factory, "attach-table=on", b, board)
    t = _net_tables(r, fmt, ias, granule)
    t.map(IOVA, r.data(0))
    pde = t.entry_addr(IOVA, 2)
    t.set(pde, (r.q.readn(pde, 8) & ~clear) | set_)
    extra = dict(asid=1, mair=0xff) if fmt == qt.PGTF_ARM_LPAE else {}
    assert r.v.status(qt.attach_table(1, NET_EP, fmt, t.root, ias, granule,
                                      **extra)) == qt.S_OK
    _start_net(r, b)
    r.v.faults()
    ok, sent = b.miss(IOVA, write=withheld == "read")
    assert ok and sent[0].perm == (vu.ACCESS_WO if withheld == "read" else vu.ACCESS_RO)
    ok, sent = b.miss(IOVA, write=withheld == "write")
    assert not ok and sent == []
    assert r.v.faults()

# MAP's ranges on granule boundaries (the virtio-iommu's granule is 4K
# here): virt_start, phys_start and virt_end + 1, else RANGE (qemu/patches
# 0047; QEMU 7.2 took them, and an entry, a whole granule, then carried
# the permission of whichever mapping it was made from)
MAP_ALIGNMENT = {
    "aligned": (IOVA, IOVA + 0xfff, 0x400000, qt.S_OK),
    "virt_start": (IOVA + 0x800, IOVA + 0xfff, 0x400000, qt.S_RANGE),
    "virt_end + 1": (IOVA, IOVA + 0x7ff, 0x400000, qt.S_RANGE),
    "phys_start": (IOVA, IOVA + 0xfff, 0x400800, qt.S_RANGE),
}


@pytest.mark.parametrize("case", MAP_ALIGNMENT)
def test_map_not_on_the_granule_is_range(rig_factory, case):
    start, end, phys, want = MAP_ALIGNMENT[case]
    r = rig_factory("q35")
    assert r.v.status(qt.attach(1, EDU_EP)) == qt.S_OK
    assert r.v.status(qt.map_req(1, start, end, r.ram + phys)) == want


@pytest.mark.parametrize("delay_ms", [None, 2])
def test_edu_dma_delay(delay_ms):
    """Patch 0048: dma-delay-ms is how long an edu DMA takes in virtual
    time, 100 ms by default: a millisecond before the delay has passed
    the transfer has not happened, once it has the data is there."""
    board = qt.BOARDS["q35"]
    prop = "" if delay_ms is None else f",dma-delay-ms={delay_ms}"
    q = qt.Qtest(board, ["-device", f"edu,addr={EDU_DEVFN >> 3:#x}.0{prop}"])
    delay_ns = (delay_ms or 100) * 1_000_000
    src, dst = board.ram + DATA_OFF, board.ram + DATA_OFF + 0x1000
    try:
        edu = qt.Edu(q, EDU_DEVFN, board.mmio + 0x1000000)
        q.write(src, b"edu-dma!")
        q.write(dst, bytes(8))
        # guest memory into the edu's buffer, then the buffer out again
        for frm, to, to_memory in ((src, edu.BUF, False), (edu.BUF, dst, True)):
            edu.start(frm, to, 8, to_memory)
            q.clock_step(delay_ns - 1_000_000)
            assert edu.running(), "the DMA ran before its delay"
            assert q.read(dst, 8) == bytes(8)
            q.clock_step(1_000_000)
            assert not edu.running(), "the DMA did not run"
        assert q.read(dst, 8) == b"edu-dma!"
    finally:
        q.close()
