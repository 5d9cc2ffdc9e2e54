# SPDX-License-Identifier: GPL-2.0
"""Take properties out of a flattened device tree (the DTB QEMU builds).

A machine that QEMU describes with a property the test must not have (virt's
``dma-coherent``: a board whose DMA does not snoop the CPU caches) boots from
QEMU's own tree, dumped with ``-machine ...,dumpdtb=`` and edited here. Each
property taken out is overwritten with FDT_NOP tokens, which every reader
skips, so that no offset in the blob moves and nothing else needs rewriting.
The blob is then cut to what it holds: QEMU dumps its whole 1 MiB buffer,
and an arm64 guest handed that with -dtb prints nothing at all. The format:
the Devicetree Specification, "Flattened Devicetree (DTB) Format".
"""

from __future__ import annotations

import struct

FDT_MAGIC = 0xD00DFEED
FDT_BEGIN_NODE = 1
FDT_END_NODE = 2
FDT_PROP = 3
FDT_NOP = 4
FDT_END = 9


def _align4(n: int) -> int:
    return (n + 3) & ~3


def drop_properties(blob: bytes, names: tuple[str, ...]) -> tuple[bytes, int]:
    """@blob without the properties called one of @names, in any node.

    Returns the new blob and how many properties went.
    """
    head = list(struct.unpack_from(">10I", blob))
    magic, totalsize, off_struct, off_strings, off_rsvmap = head[:5]
    size_strings = head[8]
    if magic != FDT_MAGIC or totalsize > len(blob):
        raise ValueError("not a flattened device tree")
    # QEMU's layout: the header, the reserve map, the structure, the strings
    if not off_rsvmap < off_struct < off_strings:
        raise ValueError("blocks not in QEMU's order")
    head[1] = off_strings + size_strings
    out = bytearray(struct.pack(">10I", *head) + blob[40:head[1]])
    want = {n.encode() for n in names}
    pos = off_struct
    dropped = 0
    while True:
        (token,) = struct.unpack_from(">I", out, pos)
        if token == FDT_BEGIN_NODE:
            end = out.index(b"\0", pos + 4)
            pos = _align4(end + 1)
        elif token == FDT_PROP:
            length, nameoff = struct.unpack_from(">II", out, pos + 4)
            name_at = off_strings + nameoff
            name = bytes(out[name_at:out.index(b"\0", name_at)])
            size = 12 + _align4(length)
            if name in want:
                out[pos:pos + size] = struct.pack(">I", FDT_NOP) * (size // 4)
                dropped += 1
            pos += size
        elif token in (FDT_END_NODE, FDT_NOP):
            pos += 4
        elif token == FDT_END:
            return bytes(out), dropped
        else:
            raise ValueError(f"bad token {token:#x} at {pos:#x}")
