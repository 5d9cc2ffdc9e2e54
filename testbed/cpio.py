# SPDX-License-Identifier: GPL-2.0
"""A writer for the "newc" cpio format the kernel unpacks as its initramfs.

Written here rather than calling cpio(1) so device nodes and modes come out
right without root and the archive is the same byte for byte on every run.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass, field


@dataclass
class Archive:
    entries: list[tuple[str, int, bytes, int]] = field(default_factory=list)
    _dirs: set[str] = field(default_factory=set)

    def _parents(self, path: str) -> None:
        parts = path.strip("/").split("/")[:-1]
        for i in range(1, len(parts) + 1):
            d = "/".join(parts[:i])
            if d not in self._dirs:
                self._dirs.add(d)
                self.entries.append((d, stat.S_IFDIR | 0o755, b"", 0))

    def dir(self, path: str) -> None:
        self._parents(path + "/x")

    def file(self, path: str, data: bytes, mode: int = 0o644) -> None:
        self._parents(path)
        self.entries.append((path.strip("/"), stat.S_IFREG | mode, data, 0))

    def symlink(self, path: str, target: str) -> None:
        self._parents(path)
        self.entries.append((path.strip("/"), stat.S_IFLNK | 0o777,
                             target.encode(), 0))

    def chardev(self, path: str, major: int, minor: int, mode: int = 0o600) -> None:
        self._parents(path)
        self.entries.append((path.strip("/"), stat.S_IFCHR | mode, b"",
                             (major << 8) | minor))

    def bytes(self) -> bytes:
        out = bytearray()
        ino = 1000
        for name, mode, data, rdev in self.entries + [("TRAILER!!!", 0, b"", 0)]:
            ino += 1
            nlink = 2 if stat.S_ISDIR(mode) else 1
            fields = (ino, mode, 0, 0, nlink, 0, len(data), 0, 0,
                      rdev >> 8, rdev & 0xff, len(name) + 1, 0)
            out += b"070701" + b"".join(b"%08X" % f for f in fields)
            out += name.encode() + b"\0"
            out += b"\0" * (-len(out) % 4)
            out += data
            out += b"\0" * (-len(out) % 4)
        return bytes(out)
