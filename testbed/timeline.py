# SPDX-License-Identifier: GPL-2.0
"""Where a disk request's time goes, from QEMU's trace with timestamps
(-msg timestamp=on): `make bench-throughput TIMELINE=1`.

The throughput bench's disk passes keep one 64 KiB request in flight
(dd, direct I/O), so QEMU's trace of the virtio-blk device reads as a
chain: the guest notifies the queue (virtio_queue_notify), QEMU takes the
request off the ring (virtio_blk_handle_read/_write), the I/O completes and
the request goes back on the used ring (virtio_blk_req_complete), then the
guest has the turn until its next notification: the interrupt, the
completion, the DMA unmap of this request and the map of the next, dd's
next system call. Each request's chain splits into

    pop_us     notification to QEMU taking the request off the ring (the
               ring and the buffers translated through the IOMMU)
    io_us      taken off the ring to put back on the used ring
    guest_us   back on the used ring to the guest's next notification
    cycle_us   one notification to the next

and `iommu_requests` counts the virtio-iommu requests QEMU served in the
guest's turn (MAP, UNMAP, INVALIDATE: this request's unmaps and the next
one's maps). Medians of each, per direction. Only 64 KiB requests make
chains: the bulk passes' 1 MiB calls keep two requests in flight, which
this reading of the trace cannot tell apart.
"""

from __future__ import annotations

import re
import statistics
from pathlib import Path

# What the parser reads; tput rows add them to the scenario's trace.
EVENTS = ("virtio_queue_notify", "virtio_blk_handle_read", "virtio_blk_handle_write",
          "virtio_blk_req_complete", "virtio_iommu_map", "virtio_iommu_unmap",
          "virtio_iommu_invalidate")
IOMMU_REQUESTS = ("virtio_iommu_map", "virtio_iommu_unmap", "virtio_iommu_invalidate")
# The log backend with -msg timestamp=on: "<pid>@<seconds>.<microseconds>:<event> <args>"
LINE = re.compile(r"\d+@(\d+)\.(\d{6}):(\w+) ?(.*)")
SEGMENTS = ("pop_us", "io_us", "guest_us", "cycle_us")
# A 64 KiB request, in 512-byte sectors
CHAIN_SECTORS = 128


def events(text: str) -> list[tuple[int, str, str]]:
    """(microseconds, event, arguments) of each timestamped trace line."""
    out = []
    for line in text.splitlines():
        m = LINE.match(line)
        if m:
            out.append((int(m[1]) * 1_000_000 + int(m[2]), m[3], m[4]))
    return out


def _vdev(args: str) -> str:
    """The "vdev 0x..." argument of a virtio or virtio-blk event."""
    m = re.search(r"vdev (0x[0-9a-f]+)", args)
    return m[1] if m else ""


def chains(evs: list[tuple[int, str, str]]) -> dict[str, list[dict]]:
    """Each disk request followed by one of the same direction, as its
    segments (SEGMENTS, microseconds) and iommu_requests, by direction
    ("read", "write")."""
    blk = next((_vdev(a) for _, e, a in evs if e.startswith("virtio_blk_handle_")), "")
    out: dict[str, list[dict]] = {"read": [], "write": []}
    kick = None         # the disk's last notification
    cur = None          # the request under way: its times and direction
    for t, event, args in evs:
        if event == "virtio_queue_notify" and _vdev(args) == blk:
            if cur and "done" in cur:
                cur["next_kick"] = t
            kick = t
        elif event in ("virtio_blk_handle_read", "virtio_blk_handle_write"):
            kind = event.rsplit("_", 1)[1]
            sectors = re.search(r"nsectors (\d+)", args)
            if not sectors or int(sectors[1]) != CHAIN_SECTORS:
                cur = None      # a bulk pass's request ends the chain
                continue
            if cur and "next_kick" in cur and cur["kind"] == kind:
                out[kind].append({
                    "pop_us": cur["pop"] - cur["kick"],
                    "io_us": cur["done"] - cur["pop"],
                    "guest_us": cur["next_kick"] - cur["done"],
                    "cycle_us": cur["next_kick"] - cur["kick"],
                    "iommu_requests": cur["iommu"],
                })
            cur = {"kind": kind, "kick": kick, "pop": t, "iommu": 0} if kick else None
        elif event == "virtio_blk_req_complete" and cur and "done" not in cur:
            cur["done"] = t
        elif event in IOMMU_REQUESTS and cur and "done" in cur and "next_kick" not in cur:
            cur["iommu"] += 1
    return out


def summary(trace: Path | None) -> dict:
    """Medians of each segment and of iommu_requests, per direction, with
    the number of requests they come from: {"read": {...}, "write": {...}}."""
    text = trace.read_text(errors="replace") if trace and trace.exists() else ""
    out = {}
    for kind, reqs in chains(events(text)).items():
        if not reqs:
            continue
        row = {k: round(statistics.median(r[k] for r in reqs), 1)
               for k in SEGMENTS + ("iommu_requests",)}
        row["requests"] = len(reqs)
        out[kind] = row
    return out
