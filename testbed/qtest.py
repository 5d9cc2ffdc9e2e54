# SPDX-License-Identifier: GPL-2.0
"""Drive a QEMU device from the host, without a guest: QEMU's qtest protocol
(-accel qtest -qtest stdio) reads and writes guest memory, I/O ports and
the virtual clock, and this module builds on it a minimal virtio-pci driver
(VirtioPci; VirtioIommu adds the virtio-iommu's requests, and the tests
bring up a virtio-net with it) and a handle on QEMU's edu device, whose
DMA goes through the IOMMU. tests/test_qemu_patches.py uses it to check our device
patches request by request, status by status, with tables it writes itself.

Only what those tests need: q35 (PCI configuration through 0xcf8/0xcfc)
and arm virt (through its ECAM), split virtqueues, no interrupts (the
device serves a queue synchronously when it is notified, and the used ring
is polled).
"""

from __future__ import annotations

import struct
import subprocess
import threading
from dataclasses import dataclass

from . import qemu_build

# Where the tests put things, from the start of RAM (the machine has 128 MiB)
RING_OFF = 0x100000         # request queue rings, event queue rings
BUF_OFF = 0x180000          # request and event buffers
MEM_MB = 128


@dataclass(frozen=True)
class Board:
    """Where a board has RAM, a free PCI memory window, and how it reaches
    PCI configuration space (ECAM address, or None for port I/O)."""
    machine: str
    exe: str
    ram: int
    mmio: int
    ecam: int | None


BOARDS = {
    "q35": Board("q35", "qemu-system-x86_64", 0, 0xc0000000, None),
    # virt: RAM at 1 GiB, the high ECAM (256 buses), the 32-bit PCI window
    "virt": Board("virt,gic-version=3", "qemu-system-aarch64", 0x40000000,
                  0x10000000, 0x4010000000),
}

# virtio-iommu (the numbers of include/uapi/linux/virtio_iommu.h)
T_ATTACH, T_DETACH, T_MAP, T_UNMAP, T_PROBE = 1, 2, 3, 4, 5
T_ATTACH_TABLE, T_INVALIDATE = 6, 7
S_OK, S_IOERR, S_UNSUPP, S_DEVERR, S_INVAL, S_RANGE, S_NOENT = 0, 1, 2, 3, 4, 5, 6
F_ATTACH_TABLE = 7
PROBE_T_RESV_MEM, PROBE_T_PAGE_TABLE_FMT = 1, 6
PGTF_ARM_LPAE, PGTF_VTD_SL, PGTF_AMD_V1 = 1, 3, 4
PGTF_F_INVAL_MAP = 1
PGTF_F_NO_CACHE = 2
PGTF_F_POSTED_INVAL = 4
INVAL_S_DOMAIN, INVAL_S_RANGE = 0, 1
INVAL_F_LEAF = 1
FAULT_R_MAPPING = 2
FAULT_F_READ, FAULT_F_WRITE, FAULT_F_ADDRESS = 1, 2, 0x100

VIRTIO_F_VERSION_1 = 32
VIRTIO_F_ACCESS_PLATFORM = 33
PCI_CAP_VNDR = 0x09
CAP_COMMON, CAP_NOTIFY, CAP_ISR, CAP_DEVICE = 1, 2, 3, 4
QSIZE = 16
# A command QEMU has not answered in this long hangs it: kill it, fail
COMMAND_TIMEOUT_S = 30


class QtestError(Exception):
    pass


class Qtest:
    """One QEMU run of @board under the qtest accelerator."""

    def __init__(self, board: Board, args: list[str]):
        self.board = board
        self.ram = board.ram
        self.stderr: str | None = None
        extra = ["-cpu", "max"] if board.exe.endswith("aarch64") else []
        self.proc = subprocess.Popen(
            [str(qemu_build.binary(board.exe)), *qemu_build.firmware_args(),
             "-machine", board.machine, *extra,
             "-accel", "qtest", "-qtest", "stdio",
             "-qtest-log", "/dev/null",
             "-nodefaults", "-display", "none", "-monitor", "none",
             "-serial", "none", "-m", str(MEM_MB), *args],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True, bufsize=1)

    def cmd(self, line: str) -> str:
        assert self.proc.stdin and self.proc.stdout
        watchdog = threading.Timer(COMMAND_TIMEOUT_S, self.proc.kill)
        watchdog.start()
        try:
            self.proc.stdin.write(line + "\n")
            self.proc.stdin.flush()
            while True:
                out = self.proc.stdout.readline()
                if not out:
                    err = self.proc.stderr.read() if self.proc.stderr else ""
                    raise QtestError(f"QEMU exited (or hung and was killed) "
                                     f"during {line!r}: {err[-2000:]}")
                if out.startswith("OK"):
                    return out[2:].strip()
                if out.startswith("FAIL") or out.startswith("ERR"):
                    raise QtestError(f"{line!r}: {out.strip()}")
                # IRQ lines and the like: not ours
        finally:
            watchdog.cancel()

    def close(self) -> str:
        """Stop QEMU; its standard error (again on a second call)."""
        if self.stderr is None:
            if self.proc.poll() is None:
                self.proc.kill()
            _, self.stderr = self.proc.communicate()
        return self.stderr

    # memory and ports
    def read(self, addr: int, size: int) -> bytes:
        return bytes.fromhex(self.cmd(f"read {addr:#x} {size:#x}")[2:])

    def write(self, addr: int, data: bytes) -> None:
        if data:
            self.cmd(f"write {addr:#x} {len(data):#x} 0x{data.hex()}")

    def readn(self, addr: int, n: int) -> int:
        suffix = {1: "b", 2: "w", 4: "l", 8: "q"}[n]
        return int(self.cmd(f"read{suffix} {addr:#x}"), 16)

    def writen(self, addr: int, n: int, val: int) -> None:
        suffix = {1: "b", 2: "w", 4: "l", 8: "q"}[n]
        self.cmd(f"write{suffix} {addr:#x} {val:#x}")

    def outl(self, port: int, val: int) -> None:
        self.cmd(f"outl {port:#x} {val:#x}")

    def inl(self, port: int) -> int:
        return int(self.cmd(f"inl {port:#x}"), 16)

    def clock_step(self, ns: int) -> None:
        self.cmd(f"clock_step {ns}")

    # PCI configuration space of bus 0
    def cfg_read(self, devfn: int, off: int, n: int = 4) -> int:
        if self.board.ecam is not None:
            val = self.readn(self.board.ecam + (devfn << 12) + (off & 0xffc), 4)
        else:
            self.outl(0xcf8, 0x80000000 | (devfn << 8) | (off & 0xfc))
            val = self.inl(0xcfc)
        return (val >> ((off & 3) * 8)) & ((1 << (8 * n)) - 1)

    def cfg_write32(self, devfn: int, off: int, val: int) -> None:
        if self.board.ecam is not None:
            self.writen(self.board.ecam + (devfn << 12) + off, 4, val)
            return
        self.outl(0xcf8, 0x80000000 | (devfn << 8) | off)
        self.outl(0xcfc, val)


@dataclass
class Queue:
    index: int
    desc: int
    avail: int
    used: int
    notify: int
    next_avail: int = 0
    last_used: int = 0


class VirtioPci:
    """A modern virtio-pci device at @devfn, BAR 4 at @bar, brought up to
    DRIVER_OK with @features (and VERSION_1) and @queues queues of QSIZE,
    their rings from @ring_off in RAM. No interrupts: the used rings are
    polled."""

    def __init__(self, q: Qtest, devfn: int, bar: int, features: set[int],
                 queues: int, ring_off: int = RING_OFF):
        self.q = q
        self.devfn = devfn
        self.ring_off = ring_off
        # 64-bit memory BAR 4 (the modern virtio-pci region), then enable
        q.cfg_write32(devfn, 0x20, bar)
        q.cfg_write32(devfn, 0x24, 0)
        q.cfg_write32(devfn, 0x04, 0x6)      # memory space, bus master
        self.caps = self._caps(bar)
        self.queues = self.start(features, queues)

    def start(self, features: set[int], queues: int) -> list[Queue]:
        """Reset the device and bring it up again (what a driver's probe
        does): negotiate, set up the queues, DRIVER_OK."""
        q, c = self.q, self.caps[CAP_COMMON]
        q.writen(c + 0x14, 1, 0)             # reset
        q.writen(c + 0x14, 1, 1 | 2)         # ACKNOWLEDGE | DRIVER
        offered = 0
        for sel in (0, 1):
            q.writen(c + 0x00, 4, sel)
            offered |= q.readn(c + 0x04, 4) << (32 * sel)
        self.offered = offered
        want = sum(1 << f for f in features | {VIRTIO_F_VERSION_1}) & offered
        for sel in (0, 1):
            q.writen(c + 0x08, 4, sel)
            q.writen(c + 0x0c, 4, (want >> (32 * sel)) & 0xffffffff)
        q.writen(c + 0x14, 1, 1 | 2 | 8)     # FEATURES_OK
        if not q.readn(c + 0x14, 1) & 8:
            raise QtestError("features refused")
        self.negotiated = want
        vqs = [self._queue(i) for i in range(queues)]
        q.writen(c + 0x14, 1, 1 | 2 | 8 | 4)  # DRIVER_OK
        return vqs

    def device_status(self) -> int:
        return self.q.readn(self.caps[CAP_COMMON] + 0x14, 1)

    def reset(self) -> None:
        """Write 0 to the device status: the device resets."""
        self.q.writen(self.caps[CAP_COMMON] + 0x14, 1, 0)

    def _caps(self, bar: int) -> dict[int, int]:
        q, caps = self.q, {}
        pos = q.cfg_read(self.devfn, 0x34, 1)
        while pos:
            cap_id = q.cfg_read(self.devfn, pos, 1)
            nxt = q.cfg_read(self.devfn, pos + 1, 1)
            if cap_id == PCI_CAP_VNDR:
                cfg_type = q.cfg_read(self.devfn, pos + 3, 1)
                barno = q.cfg_read(self.devfn, pos + 4, 1)
                offset = q.cfg_read(self.devfn, pos + 8)
                if barno == 4 and cfg_type not in caps:
                    caps[cfg_type] = bar + offset
                    if cfg_type == CAP_NOTIFY:
                        self.notify_mult = q.cfg_read(self.devfn, pos + 16)
            pos = nxt
        return caps

    def _queue(self, index: int) -> Queue:
        q, c = self.q, self.caps[CAP_COMMON]
        q.writen(c + 0x16, 2, index)         # queue_select
        q.writen(c + 0x18, 2, QSIZE)         # queue_size
        base = q.ram + self.ring_off + index * 0x4000
        desc, avail, used = base, base + 0x1000, base + 0x2000
        q.write(base, bytes(0x3000))
        for off, val in ((0x20, desc), (0x28, avail), (0x30, used)):
            q.writen(c + off, 4, val & 0xffffffff)
            q.writen(c + off + 4, 4, val >> 32)
        notify_off = q.readn(c + 0x1e, 2)
        q.writen(c + 0x1c, 2, 1)             # queue_enable
        return Queue(index, desc, avail, used,
                     self.caps[CAP_NOTIFY] + notify_off * self.notify_mult)


class VirtioIommu(VirtioPci):
    """The virtio-iommu-pci at @devfn, BAR 4 at @bar, driven by the tests."""

    def __init__(self, q: Qtest, devfn: int, bar: int, features: set[int]):
        super().__init__(q, devfn, bar, features, 2)
        self.req, self.evt = self.queues
        cfg = self.caps[CAP_DEVICE]
        self.probe_size = q.readn(cfg + 0x20, 4)
        self.page_size_mask = q.readn(cfg + 0x00, 8)
        self.domain_range = (q.readn(cfg + 0x18, 4), q.readn(cfg + 0x1c, 4))
        self.buf = q.ram + BUF_OFF
        self.event_buf = q.ram + BUF_OFF + 0x40000

    def _post(self, vq: Queue, bufs: list[tuple[int, int, bool]]) -> None:
        """Chain @bufs (address, length, device-writable) and make it
        available."""
        head = (vq.next_avail * 2) % QSIZE if vq is self.req else vq.next_avail % QSIZE
        for i, (addr, length, writable) in enumerate(bufs):
            idx = (head + i) % QSIZE
            last = i == len(bufs) - 1
            flags = (0 if last else 1) | (2 if writable else 0)
            nxt = (head + i + 1) % QSIZE
            self.q.write(vq.desc + 16 * idx, struct.pack("<QIHH", addr, length, flags, nxt))
        slot = vq.next_avail % QSIZE
        self.q.writen(vq.avail + 4 + 2 * slot, 2, head)
        vq.next_avail += 1
        self.q.writen(vq.avail + 2, 2, vq.next_avail & 0xffff)

    def _offer(self, req: bytes, answer: int, at: int) -> int:
        """Make one request (without its tail) available, its buffers at
        @at and @at + 0x1000 (returned: where the answer goes)."""
        out, inb = at, at + 0x1000
        self.q.write(out, req)
        self.q.write(inb, b"\xff" * answer)
        self._post(self.req, [(out, len(req), False), (inb, answer, True)])
        return inb

    def _answered(self) -> bool:
        """Whether the device used another request buffer (taking it)."""
        used = self.q.readn(self.req.used + 2, 2)
        if used == self.req.last_used:
            return False
        self.req.last_used = used
        return True

    def request(self, req: bytes, answer: int = 4) -> bytes:
        """Send one request (without its tail); the device-writable part
        it got back (the tail, or the probe properties and tail)."""
        inb = self._offer(req, answer, self.buf)
        self.q.writen(self.req.notify, 2, 0)
        if not self._answered():
            raise QtestError("the device did not answer")
        return self.q.read(inb, answer)

    def post(self, req: bytes) -> None:
        """Make one request (without its tail) available and do not notify
        the device: a posted INVALIDATE. Its answer: posted_status()."""
        self._offer(req, 4, self.buf + 0x2000)

    def posted_status(self) -> int | None:
        """The status of the request post() made available, None while
        the device has not served it."""
        return self.q.read(self.buf + 0x3000, 1)[0] if self._answered() else None

    def used_len(self) -> int:
        """The used length of the last request answered."""
        slot = (self.req.last_used - 1) % QSIZE
        return self.q.readn(self.req.used + 4 + 8 * slot + 4, 4)

    def status(self, req: bytes) -> int:
        return self.request(req)[0]

    def post_events(self, n: int) -> None:
        """Give the device @n event buffers for its fault reports."""
        for _ in range(n):
            addr = self.event_buf + 0x40 * (self.evt.next_avail % QSIZE)
            self._post(self.evt, [(addr, 0x40, True)])
        self.q.writen(self.evt.notify, 2, 1)

    def faults(self) -> list[tuple[int, int, int, int]]:
        """The fault records written since the last call:
        (reason, flags, endpoint, address)."""
        used = self.q.readn(self.evt.used + 2, 2)
        out = []
        while self.evt.last_used != used:
            slot = self.evt.last_used % QSIZE
            desc_id = self.q.readn(self.evt.used + 4 + 8 * slot, 4)
            addr = self.q.readn(self.evt.desc + 16 * desc_id, 8)
            reason, flags, ep, address = struct.unpack("<B3xII4xQ", self.q.read(addr, 24))
            out.append((reason, flags, ep, address))
            self.evt.last_used += 1
        if out:
            self.post_events(len(out))
        return out

    def isr_peek(self) -> int:
        """The ISR status (reading it clears it)."""
        return self.q.readn(self.caps[CAP_ISR], 1)

    def probe(self, ep: int) -> list[tuple[int, bytes]]:
        """The endpoint's PROBE properties: (type, body)."""
        ans = self.request(struct.pack("<B3xI64x", T_PROBE, ep), self.probe_size + 4)
        if ans[self.probe_size] != S_OK:
            raise QtestError(f"PROBE status {ans[self.probe_size]}")
        props, pos = [], 0
        while pos + 4 <= self.probe_size:
            ptype, length = struct.unpack_from("<HH", ans, pos)
            if ptype & 0xfff == 0:
                break
            props.append((ptype & 0xfff, ans[pos + 4:pos + 4 + length]))
            pos += 4 + length
        return props


# Requests, laid out as include/uapi/linux/virtio_iommu.h has them (the
# device-readable part: everything before the 4-byte tail at the end)
def attach(domain: int, ep: int, flags: int = 0) -> bytes:
    return struct.pack("<B3xIII4x", T_ATTACH, domain, ep, flags)


def detach(domain: int, ep: int) -> bytes:
    return struct.pack("<B3xII8x", T_DETACH, domain, ep)


def map_req(domain: int, start: int, end: int, phys: int, flags: int = 3) -> bytes:
    return struct.pack("<B3xIQQQI", T_MAP, domain, start, end, phys, flags)


def unmap_req(domain: int, start: int, end: int) -> bytes:
    return struct.pack("<B3xIQQ4x", T_UNMAP, domain, start, end)


def attach_table(domain: int, ep: int, fmt: int, root: int, ias: int,
                 granule: int = 12, asid: int = 0, mair: int = 0,
                 reserved0: bytes = bytes(2), reserved1: bytes = bytes(4),
                 reserved2: bytes = bytes(20)) -> bytes:
    """ATTACH_TABLE: 60 bytes out, as a driver sends sizeof(struct) - 4
    (reserved2 and the struct's tail member, 20 bytes, all zero)."""
    return (struct.pack("<B3xIIH", T_ATTACH_TABLE, domain, ep, fmt) + reserved0 +
            struct.pack("<QBBH", root, ias, granule, asid) + reserved1 +
            struct.pack("<Q", mair) + reserved2)


def invalidate(domain: int, scope: int = INVAL_S_DOMAIN, start: int = 0,
               end: int = 0, flags: int = 0, reserved0: bytes = bytes(4),
               reserved1: bytes = bytes(12)) -> bytes:
    """INVALIDATE: 44 bytes out (reserved1 and the struct's tail member)."""
    return (struct.pack("<B3xHHI", T_INVALIDATE, scope, flags, domain) + reserved0 +
            struct.pack("<QQ", start, end) + reserved1)


class Edu:
    """QEMU's edu device at @devfn, BAR 0 at @bar: DMA of up to 4 KiB
    between guest memory (through the IOMMU) and its own buffer."""
    BUF = 0x40000

    def __init__(self, q: Qtest, devfn: int, bar: int):
        self.q = q
        q.cfg_write32(devfn, 0x10, bar)
        q.cfg_write32(devfn, 0x04, 0x6)
        self.bar = bar

    def start(self, src: int, dst: int, count: int, to_memory: bool) -> None:
        """Start a DMA of @count bytes from @src to @dst: its timer runs it
        dma-delay-ms of virtual time later (100 ms unless set)."""
        q = self.q
        q.writen(self.bar + 0x80, 8, src)
        q.writen(self.bar + 0x88, 8, dst)
        q.writen(self.bar + 0x90, 8, count)
        q.writen(self.bar + 0x98, 8, 1 | (2 if to_memory else 0))

    def running(self) -> bool:
        """A DMA started and not run yet."""
        return bool(self.q.readn(self.bar + 0x98, 8) & 1)

    def _dma(self, src: int, dst: int, count: int, to_memory: bool) -> None:
        self.start(src, dst, count, to_memory)
        self.q.clock_step(200_000_000)
        if self.running():
            raise QtestError("edu DMA did not run")

    def read_from(self, iova: int, count: int) -> None:
        """DMA @count bytes at @iova into the edu's buffer."""
        self._dma(iova, self.BUF, count, False)

    def write_to(self, iova: int, count: int) -> None:
        """DMA @count bytes of the edu's buffer to @iova."""
        self._dma(self.BUF, iova, count, True)

