# SPDX-License-Identifier: GPL-2.0
"""A vhost-user back end that serves no packets, for tests of QEMU's vhost
code behind an IOMMU on a host without /dev/vhost-net.

QEMU (the front end) connects to the socket this module listens on, and
drives the back end as it would any vhost-user-net: features, memory
table, rings. This back end answers every message as the vhost-user
specification asks and records what it was told; what the tests look at
are the device IOTLB messages (VHOST_USER_IOTLB_MSG: the translations QEMU
sends and the ranges it invalidates), and it can ask QEMU for a
translation itself, as a back end that met an IOVA it does not know does
(VHOST_USER_BACKEND_IOTLB_MSG, type miss, on the back-end channel).

The numbers are those of the vhost-user specification (QEMU's
docs/interop/vhost-user.rst) and of <linux/vhost_types.h>.
"""

from __future__ import annotations

import array
import os
import socket
import struct
import threading
from dataclasses import dataclass

# Front-end requests this back end answers with more than an ack
GET_FEATURES, SET_FEATURES, SET_OWNER = 1, 2, 3
SET_MEM_TABLE = 5
SET_VRING_BASE, GET_VRING_BASE = 10, 11
GET_PROTOCOL_FEATURES, SET_PROTOCOL_FEATURES, GET_QUEUE_NUM = 15, 16, 17
SET_BACKEND_REQ_FD = 21
IOTLB_MSG = 22
# Back-end requests
BACKEND_IOTLB_MSG = 1

VERSION = 0x1
F_REPLY = 0x4
F_NEED_REPLY = 0x8
HEADER = struct.Struct("<III")      # request, flags, size

# Device features: VHOST_USER_F_PROTOCOL_FEATURES, VIRTIO_F_VERSION_1,
# VIRTIO_F_ACCESS_PLATFORM (QEMU's vhost then keeps a device IOTLB)
FEATURES = 1 << 30 | 1 << 32 | 1 << 33
# Protocol features: REPLY_ACK and BACKEND_REQ, which QEMU requires of a
# back end behind an IOMMU (its misses travel on the back-end channel)
PROTOCOL_FEATURES = 1 << 3 | 1 << 5

# struct vhost_iotlb_msg: iova, size, uaddr, perm, type (32 bytes)
IOTLB = struct.Struct("<QQQBB6x")
IOTLB_MISS, IOTLB_UPDATE, IOTLB_INVALIDATE = 1, 2, 3
ACCESS_RO, ACCESS_WO, ACCESS_RW = 1, 2, 3

# Seconds a reply from QEMU may take before the test fails
TIMEOUT_S = 30


def _read_exact(sock: socket.socket, n: int) -> bytes:
    """@n bytes from @sock (a socket with a timeout may return fewer at a
    time); ConnectionError if the peer closes first."""
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise ConnectionError("QEMU closed the socket")
        data += chunk
    return data


@dataclass(frozen=True)
class Iotlb:
    """One device IOTLB message QEMU sent."""
    kind: int
    iova: int
    size: int
    uaddr: int
    perm: int

    def covers(self, iova: int) -> bool:
        return self.iova <= iova and iova - self.iova < self.size


@dataclass(frozen=True)
class Region:
    """One region of the memory table: guest-physical to QEMU's address."""
    gpa: int
    size: int
    uaddr: int


class Backend:
    """Listens at @path; serves the one front end that connects, in a
    thread, until close()."""

    def __init__(self, path: str):
        self.path = path
        self.listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.listener.bind(path)
        self.listener.listen(1)
        self.lock = threading.Condition()
        self.requests: list[int] = []
        self.iotlb: list[Iotlb] = []
        self.regions: list[Region] = []
        self.vring_base: dict[int, int] = {}
        self.backend_chan: socket.socket | None = None
        self.conn: socket.socket | None = None
        self.error: str | None = None
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    # --- the front end's channel -------------------------------------------
    def _recv(self) -> tuple[int, int, bytes, list[int]] | None:
        assert self.conn
        fds = array.array("i")
        hdr, anc, _, _ = self.conn.recvmsg(HEADER.size,
                                           socket.CMSG_SPACE(8 * fds.itemsize))
        if len(hdr) < HEADER.size:
            return None
        for level, kind, data in anc:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(data[:len(data) - len(data) % fds.itemsize])
        request, flags, size = HEADER.unpack(hdr)
        try:
            payload = _read_exact(self.conn, size)
        except ConnectionError:
            return None
        return request, flags, payload, list(fds)

    def _reply(self, request: int, payload: bytes) -> None:
        assert self.conn
        self.conn.sendall(HEADER.pack(request, VERSION | F_REPLY, len(payload)) + payload)

    def _serve(self) -> None:
        try:
            self.conn, _ = self.listener.accept()
            while (msg := self._recv()) is not None:
                self._handle(*msg)
        except Exception as e:
            # close() ends the thread with an OSError too; a test that
            # needed the back end finds the reason in self.error
            self.error = f"{type(e).__name__}: {e}"
        with self.lock:
            self.lock.notify_all()

    def _handle(self, request: int, flags: int, payload: bytes, fds: list[int]) -> None:
        answer: bytes | None = None
        if request == GET_FEATURES:
            answer = struct.pack("<Q", FEATURES)
        elif request == GET_PROTOCOL_FEATURES:
            answer = struct.pack("<Q", PROTOCOL_FEATURES)
        elif request == GET_QUEUE_NUM:
            answer = struct.pack("<Q", 1)
        elif request == GET_VRING_BASE:
            index, _ = struct.unpack_from("<II", payload)
            answer = struct.pack("<II", index, self.vring_base.get(index, 0))
        elif request == SET_VRING_BASE:     # given back at GET_VRING_BASE
            index, num = struct.unpack_from("<II", payload)
            self.vring_base[index] = num
        elif request == SET_MEM_TABLE:
            count, = struct.unpack_from("<I", payload)
            regions = [struct.unpack_from("<QQQQ", payload, 8 + 32 * i)
                       for i in range(count)]
            with self.lock:
                self.regions = [Region(gpa, size, uaddr)
                                for gpa, size, uaddr, _ in regions]
        elif request == SET_BACKEND_REQ_FD and fds:
            if self.backend_chan:
                self.backend_chan.close()
            self.backend_chan = socket.socket(fileno=fds.pop(0))
        elif request == IOTLB_MSG:
            iova, size, uaddr, perm, kind = IOTLB.unpack_from(payload)
            with self.lock:
                self.iotlb.append(Iotlb(kind, iova, size, uaddr, perm))
        # Memory and eventfds: this back end touches neither
        for fd in fds:
            os.close(fd)
        with self.lock:
            self.requests.append(request)
            self.lock.notify_all()
        if answer is not None:
            self._reply(request, answer)
        elif flags & F_NEED_REPLY:
            self._reply(request, struct.pack("<Q", 0))

    # --- what the tests ask -------------------------------------------------
    def wait_for(self, request: int, after: int = 0) -> None:
        """Wait until QEMU has sent @request (as its @after-th message or
        later)."""
        with self.lock:
            if not self.lock.wait_for(
                    lambda: request in self.requests[after:] or self.error is not None,
                    TIMEOUT_S) or request not in self.requests[after:]:
                raise TimeoutError(f"no vhost-user request {request} "
                                   f"({self.error or 'timed out'})")

    def uaddr(self, gpa: int) -> int:
        """QEMU's address of guest-physical @gpa, from the memory table."""
        with self.lock:
            for r in self.regions:
                if r.gpa <= gpa < r.gpa + r.size:
                    return r.uaddr + gpa - r.gpa
        raise KeyError(f"{gpa:#x} is in no region of the memory table")

    def miss(self, iova: int, write: bool) -> tuple[bool, list[Iotlb]]:
        """Ask QEMU to translate @iova (a device IOTLB miss): whether it
        said it did, and the IOTLB messages it sent meanwhile."""
        assert self.backend_chan, "QEMU gave no back-end channel"
        msg = IOTLB.pack(iova, 1, 0, ACCESS_RW if write else ACCESS_RO, IOTLB_MISS)
        with self.lock:
            seen = len(self.iotlb)
        self.backend_chan.settimeout(TIMEOUT_S)
        self.backend_chan.sendall(HEADER.pack(BACKEND_IOTLB_MSG,
                                              VERSION | F_NEED_REPLY, len(msg)) + msg)
        request, flags, size = HEADER.unpack(_read_exact(self.backend_chan, HEADER.size))
        ret, = struct.unpack("<Q", _read_exact(self.backend_chan, size))
        assert request == BACKEND_IOTLB_MSG and flags & F_REPLY and size == 8
        with self.lock:
            return ret == 0, self.iotlb[seen:]

    def close(self) -> None:
        for s in (self.conn, self.backend_chan, self.listener):
            if s:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                s.close()
        self.thread.join(5)
