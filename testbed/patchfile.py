# SPDX-License-Identifier: GPL-2.0
"""One file of patches/: a mail-formatted commit, its upstream diff and its overlay files.

A patch file looks like `git format-patch` output. Between the `---` line and the
diff it may name files it brings in from linux/ (files the base does not have):

    Overlay: tools/testing/selftests/iommu/vfio_edu_dma.c

git am and git apply ignore that region, so the file stays a normal patch; the
tree assembler reads it to build one commit per logical change.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

OVERLAY_TAG = "Overlay: "


@dataclass
class PatchFile:
    author: str
    date: str
    subject: str
    body: str
    overlay: list[str] = field(default_factory=list)
    stat: str = ""
    diff: str = ""

    @property
    def message(self) -> str:
        return f"{self.subject}\n\n{self.body.strip()}\n"

    def render(self) -> str:
        lines = [f"From: {self.author}", f"Date: {self.date}",
                 f"Subject: [PATCH] {self.subject}", "", self.body.strip(), "---"]
        lines += [OVERLAY_TAG + p for p in self.overlay]
        text = "\n".join(lines) + "\n"
        if self.stat:
            text += self.stat.rstrip("\n") + "\n"
        text += "\n" + self.diff
        return text


def parse(text: str) -> PatchFile:
    """Parse a patch file; raises ValueError on a malformed one."""
    head, sep, rest = text.partition("\n\n")
    if not sep:
        raise ValueError("no blank line after the mail header")
    headers: dict[str, str] = {}
    last = None
    for line in head.splitlines():
        if line.startswith(("From ", ">From ")):
            continue
        if line[:1] in " \t" and last:
            headers[last] += " " + line.strip()
            continue
        key, colon, val = line.partition(":")
        if not colon:
            raise ValueError(f"bad header line: {line!r}")
        last = key.strip().lower()
        headers[last] = val.strip()
    for key in ("from", "subject"):
        if key not in headers:
            raise ValueError(f"missing {key.title()}: header")
    subject = re.sub(r"^\[PATCH[^\]]*\]\s*", "", headers["subject"])
    body, sep, tail = rest.partition("\n---\n")
    if not sep:
        raise ValueError("no '---' line after the commit message")
    overlay, stat = [], []
    diff_at = tail.find("diff --git ")
    notes = tail if diff_at < 0 else tail[:diff_at]
    diff = "" if diff_at < 0 else tail[diff_at:]
    for line in notes.splitlines():
        if line.startswith(OVERLAY_TAG):
            overlay.append(line[len(OVERLAY_TAG):].strip())
        elif line.strip():
            stat.append(line)
    diff = re.sub(r"\n-- \n[^\n]*\n*$", "\n", diff)
    return PatchFile(author=headers["from"], date=headers.get("date", ""),
                     subject=subject, body=body, overlay=overlay,
                     stat="\n".join(stat), diff=diff)


def read_series(patch_dir: Path) -> list[Path]:
    """The patches named in patch_dir/series, in order."""
    series = patch_dir / "series"
    if not series.exists():
        return []
    names = []
    for line in series.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            names.append(patch_dir / line.split()[0])
    return names


def slug(subject: str) -> str:
    """The file-name form of a subject, as git format-patch makes it."""
    s = re.sub(r"[^A-Za-z0-9._]+", "-", subject).strip("-.")
    return s[:52].rstrip("-.")


def message_problems(pf: PatchFile) -> list[str]:
    """What a reviewer would refuse in @pf's commit message: no sign-off, or
    too few words to say why."""
    out = []
    if not re.search(r"^Signed-off-by: .+ <.+@.+>$", pf.body, re.M):
        out.append("not signed off")
    if len(pf.body.split("Signed-off-by:")[0].split()) < 20:
        out.append("the commit message explains too little")
    return out
