# SPDX-License-Identifier: GPL-2.0
"""spec/: the protocol proposals say the numbers the headers say, and take
none that virtio 1.4 allocated.

The .tex files state their numbers in listings, as the virtio specification
does: `#define NAME VALUE` lines, struct definitions, and for the MMIO
registers the \\mmioreg rows of the register table. They are compared with
the uAPI headers as the series leaves them:

  - linux/<path> when the overlay holds the whole header;
  - else the base's header (build/tree's `base` tag, when the tree was
    assembled) with the series' hunks for it applied in series order;
  - else the lines the series' hunks for it show (context and added lines),
    which hold every line the series adds.

No TeX is needed; the PDF build test runs only where pdflatex exists.
"""

from __future__ import annotations

import ast
import operator
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import pytest

from testbed import paths
from testbed.patchfile import read_series

SPEC = paths.ROOT / "spec"
QEMU_PATCHES = paths.ROOT / "qemu" / "patches"

IOMMU_H = "include/uapi/linux/virtio_iommu.h"
MMIO_H = "include/uapi/linux/virtio_mmio.h"

# Each proposal and the header that holds its numbers
PROPOSALS = {
    "iommu-page-table-sharing.tex": IOMMU_H,
    "iommu-posted-map.tex": IOMMU_H,
    "transport-mmio-msi.tex": MMIO_H,
}

# Sizes the rst (Documentation/iommu/virtio-iommu.rst) gives, head and tail
# included: the wire contract the structs must keep.
STRUCT_SIZES = {
    "virtio_iommu_req_attach_table": 64,
    "virtio_iommu_req_invalidate": 48,
    "virtio_iommu_probe_table_format": 16,
    "virtio_iommu_probe_posted_map": 8,
}

# ---------------------------------------------------------------------------
# What virtio 1.4 (CS01, April 2026) allocated, from
# ../shared/reference/anchors.md, "Where the neighbours stand": nothing in
# the IOMMU device or the MMIO transport changed since 1.3.

V14_IOMMU_FEATURES = {
    0: "INPUT_RANGE", 1: "DOMAIN_RANGE", 2: "MAP_UNMAP", 3: "BYPASS",
    4: "PROBE", 5: "MMIO", 6: "BYPASS_CONFIG",
}
V14_IOMMU_REQUESTS = {1: "ATTACH", 2: "DETACH", 3: "MAP", 4: "UNMAP", 5: "PROBE"}
# 0 is NONE: a property of type 0 ends the list
V14_IOMMU_PROBE_PROPERTIES = {0: "NONE", 1: "RESV_MEM"}
# Device-independent (reserved) feature bits in use; 24 and 27 are legacy
V14_DEVICE_INDEPENDENT_BITS = {
    24: "NOTIFY_ON_EMPTY", 27: "ANY_LAYOUT", 28: "INDIRECT_DESC",
    29: "EVENT_IDX", 32: "VERSION_1", 33: "ACCESS_PLATFORM", 34: "RING_PACKED",
    35: "IN_ORDER", 36: "ORDER_PLATFORM", 37: "SR_IOV",
    38: "NOTIFICATION_DATA", 39: "NOTIF_CONFIG_DATA", 40: "RING_RESET",
    41: "ADMIN_VQ",
}
# Bits for the device type: 0-23 and 50-127; the IOMMU device uses 0-6
DEVICE_TYPE_BITS = set(range(0, 24)) | set(range(50, 128))
# Bits 24-41 are for queue and negotiation extensions (taken up to 41);
# 42-49 and 128 up for future extensions. anchors.md lists 44-49 as the
# reserved bits still free: a transport bit must come from there.
FREE_DEVICE_INDEPENDENT_BITS = set(range(44, 50))
# transport-mmio.tex's register layout, legacy registers included
V14_MMIO_REGISTERS = {
    0x000: "MagicValue", 0x004: "Version", 0x008: "DeviceID",
    0x00c: "VendorID", 0x010: "DeviceFeatures", 0x014: "DeviceFeaturesSel",
    0x020: "DriverFeatures", 0x024: "DriverFeaturesSel",
    0x028: "GuestPageSize (legacy)", 0x030: "QueueSel", 0x034: "QueueNumMax",
    0x038: "QueueNum", 0x03c: "QueueAlign (legacy)", 0x040: "QueuePFN (legacy)",
    0x044: "QueueReady", 0x050: "QueueNotify", 0x060: "InterruptStatus",
    0x064: "InterruptACK", 0x070: "Status", 0x080: "QueueDescLow",
    0x084: "QueueDescHigh", 0x090: "QueueDriverLow", 0x094: "QueueDriverHigh",
    0x0a0: "QueueDeviceLow", 0x0a4: "QueueDeviceHigh", 0x0ac: "SHMSel",
    0x0b0: "SHMLenLow", 0x0b4: "SHMLenHigh", 0x0b8: "SHMBaseLow",
    0x0bc: "SHMBaseHigh", 0x0c0: "QueueReset", 0x0fc: "ConfigGeneration",
}
MMIO_CONFIG_SPACE = 0x100

# Each namespace the proposals add to: the prefix of its names, what virtio
# 1.4 holds there, and the values the namespace can hold at all.
NAMESPACES = {
    "VIRTIO_IOMMU_F_": ("IOMMU feature bit", V14_IOMMU_FEATURES,
                        DEVICE_TYPE_BITS),
    "VIRTIO_IOMMU_T_": ("IOMMU request type", V14_IOMMU_REQUESTS,
                        set(range(1, 256))),
    "VIRTIO_IOMMU_PROBE_T_": ("IOMMU PROBE property type",
                              V14_IOMMU_PROBE_PROPERTIES, set(range(1, 0x1000))),
    "VIRTIO_MMIO_F_": ("device-independent feature bit",
                       V14_DEVICE_INDEPENDENT_BITS, FREE_DEVICE_INDEPENDENT_BITS),
}


# ---------------------------------------------------------------------------
# C: #define values and struct layouts

_OPS = {ast.LShift: operator.lshift, ast.RShift: operator.rshift,
        ast.BitOr: operator.or_, ast.BitAnd: operator.and_,
        ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


def strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def parse_defines(text: str) -> dict[str, str]:
    """Object-like #defines: name -> the value's text."""
    text = re.sub(r"\\\n", " ", text)
    out = {}
    for line in text.splitlines():
        m = re.match(r"\s*#\s*define\s+([A-Za-z_]\w*)(?!\()\s+(.*?)\s*$", line)
        if m:
            value = strip_comments(m.group(2)).strip()
            if value:
                out[m.group(1)] = value
    return out


def c_int(expr: str, env: dict[str, str], depth: int = 0) -> int:
    """The integer a #define's text stands for; ValueError if it is not one."""
    expr = re.sub(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]+\b", r"\1", expr.strip())
    try:
        tree = ast.parse(expr, mode="eval").body
    except SyntaxError as e:
        raise ValueError(f"not an integer expression: {expr!r}") from e

    def ev(n):
        if isinstance(n, ast.Constant) and isinstance(n.value, int):
            return n.value
        if isinstance(n, ast.BinOp) and type(n.op) in _OPS:
            return _OPS[type(n.op)](ev(n.left), ev(n.right))
        if isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.Invert):
            return ~ev(n.operand)
        if isinstance(n, ast.Name) and n.id in env and depth < 8:
            return c_int(env[n.id], env, depth + 1)
        raise ValueError(f"not an integer expression: {expr!r}")
    return ev(tree)


def int_defines(defines: dict[str, str]) -> dict[str, int]:
    out = {}
    for name, text in defines.items():
        try:
            out[name] = c_int(text, defines)
        except ValueError:
            pass
    return out


@dataclass(frozen=True)
class Field:
    type: str
    name: str
    count: int


def _norm_type(t: str) -> str:
    t = " ".join(t.split())
    return re.sub(r"^__(le|be|u|s)(\d+)$", r"\1\2", t)


def parse_structs(text: str) -> dict[str, list[Field]]:
    """struct name -> fields, for structs whose fields are plain
    declarations (type name or type name[N])."""
    out = {}
    for m in re.finditer(r"\bstruct\s+(\w+)\s*\{([^{}]*)\}\s*;",
                         strip_comments(text)):
        fields = []
        for decl in m.group(2).split(";"):
            decl = decl.strip()
            if not decl:
                continue
            d = re.fullmatch(r"((?:struct\s+)?\w+)\s+(\w+)\s*(?:\[\s*(\w+)\s*\])?",
                             decl)
            if not d:
                break
            count = d.group(3)
            fields.append(Field(_norm_type(d.group(1)), d.group(2),
                                int(count, 0) if count and count[0].isdigit()
                                else (1 if count is None else -1)))
        else:
            out[m.group(1)] = fields
    return out


_SCALARS = {"u8": 1, "le16": 2, "le32": 4, "le64": 8}
# The virtio headers these structs embed: (size, alignment)
_EMBEDDED = {"struct virtio_iommu_req_head": (4, 1),
             "struct virtio_iommu_req_tail": (4, 1),
             "struct virtio_iommu_probe_property": (4, 2)}


def struct_layout(fields: list[Field]) -> tuple[int, list[str]]:
    """Bytes of a struct's fields laid out with natural alignment, and the
    fields the compiler would pad before (a wire struct must have none)."""
    off, align, holes = 0, 1, []
    for f in fields:
        if f.type in _SCALARS:
            size = align_f = _SCALARS[f.type]
        elif f.type in _EMBEDDED:
            size, align_f = _EMBEDDED[f.type]
        else:
            raise ValueError(f"unknown field type {f.type!r}")
        if off % align_f:
            holes.append(f.name)
            off += align_f - off % align_f
        off += size * max(f.count, 0)
        align = max(align, align_f)
    if off % align:
        holes.append("(end)")
    return off, holes


# ---------------------------------------------------------------------------
# The headers as the series leaves them

@dataclass
class Hunk:
    old_start: int
    lines: list[tuple[str, str]] = field(default_factory=list)


def file_hunks(patch_text: str, rel: str) -> list[Hunk]:
    """The hunks of one patch file that change @rel."""
    hunks, cur, in_file = [], None, False
    for line in patch_text.splitlines():
        if line.startswith("diff --git "):
            in_file = line.split()[-1] == f"b/{rel}"
            cur = None
            continue
        if not in_file:
            continue
        if line == "-- ":               # the mail's signature
            in_file = False
            continue
        m = re.match(r"@@ -(\d+)", line)
        if m:
            cur = Hunk(int(m.group(1)))
            hunks.append(cur)
            continue
        if cur is None or line.startswith("\\"):
            continue
        if line[:1] in ("+", "-", " "):
            cur.lines.append((line[:1], line[1:]))
        elif line == "":
            cur.lines.append((" ", ""))
    return hunks


def series_hunks(patch_dir: Path, rel: str) -> list[Hunk]:
    out = []
    for p in read_series(patch_dir):
        if p.exists():
            out += file_hunks(p.read_text(errors="replace"), rel)
    return out


def apply_hunk(lines: list[str], hunk: Hunk) -> list[str]:
    old = [t for k, t in hunk.lines if k != "+"]
    new = [t for k, t in hunk.lines if k != "-"]
    hint = hunk.old_start - 1
    for i in sorted(range(len(lines) - len(old) + 1), key=lambda i: abs(i - hint)):
        if lines[i:i + len(old)] == old:
            return lines[:i] + new + lines[i + len(old):]
    raise ValueError("hunk does not apply")


@dataclass
class Header:
    rel: str
    source: str
    text: str
    complete: bool
    defines: dict[str, str]

    @property
    def values(self) -> dict[str, int]:
        return int_defines(self.defines)


def _base_text(rel: str) -> str | None:
    tree = paths.TREE
    if not (tree / ".git").exists() or not shutil.which("git"):
        return None
    r = subprocess.run(["git", "-C", str(tree), "show", f"base:{rel}"],
                       capture_output=True, text=True, check=False)
    return r.stdout if r.returncode == 0 else None


def _fragment_header(rel: str, hunks: list[Hunk], source: str) -> Header:
    """Only the lines the hunks show: every line the series adds, and the
    base's lines around them; a #define a hunk removes is dropped."""
    defines: dict[str, str] = {}
    shown = []
    for h in hunks:
        shown.append("\n".join(t for k, t in h.lines if k != "-"))
        for kind, text in h.lines:
            d = parse_defines(text)
            if kind == "-":
                for name in d:
                    defines.pop(name, None)
            else:
                defines.update(d)
    return Header(rel, source, "\n".join(shown), False, defines)


@lru_cache(maxsize=None)
def linux_header(rel: str) -> Header:
    overlay = paths.OVERLAY / rel
    if overlay.is_file():
        text = overlay.read_text()
        return Header(rel, f"linux/{rel}", text, True, parse_defines(text))
    hunks = series_hunks(paths.PATCHES, rel)
    base = _base_text(rel)
    if base is not None:
        lines = base.splitlines()
        try:
            for h in hunks:
                lines = apply_hunk(lines, h)
        except ValueError:
            pass
        else:
            text = "\n".join(lines) + "\n"
            return Header(rel, f"{rel} (build/tree's base + patches/series)",
                          text, True, parse_defines(text))
    return _fragment_header(rel, hunks, f"{rel} (the hunks of patches/series)")


def added_defines(rel: str) -> dict[str, str]:
    """The #defines the series' hunks add to @rel (and do not remove later)."""
    out: dict[str, str] = {}
    for h in series_hunks(paths.PATCHES, rel):
        for kind, text in h.lines:
            for name, value in parse_defines(text).items():
                if kind == "+":
                    out[name] = value
                elif kind == "-":
                    out.pop(name, None)
    return out


@lru_cache(maxsize=None)
def qemu_defines() -> dict[str, str]:
    """What QEMU's patches define (every file: its copies of the headers and
    the defines of hw/virtio/virtio-mmio.c)."""
    out: dict[str, str] = {}
    for p in read_series(QEMU_PATCHES):
        if not p.exists():
            continue
        for line in p.read_text(errors="replace").splitlines():
            if line.startswith("+") and not line.startswith("+++"):
                out.update(parse_defines(line[1:]))
    return out


# ---------------------------------------------------------------------------
# The proposals

@dataclass
class Proposal:
    name: str
    text: str
    listings: list[str]
    defines: dict[str, str]
    structs: dict[str, list[Field]]
    registers: dict[str, int]           # \mmioreg name -> offset
    items: dict[str, str]               # \item[NAME (value)] -> value

    @property
    def values(self) -> dict[str, int]:
        return int_defines(self.defines)


@lru_cache(maxsize=None)
def proposal(name: str) -> Proposal:
    text = (SPEC / name).read_text()
    listings = re.findall(r"\\begin\{lstlisting\}(.*?)\\end\{lstlisting\}",
                          text, re.S)
    defines: dict[str, str] = {}
    structs: dict[str, list[Field]] = {}
    for block in listings:
        for k, v in parse_defines(block).items():
            assert k not in defines, f"spec/{name} defines {k} twice"
            defines[k] = v
        structs.update(parse_structs(block))
    registers = {m.group(1): int(m.group(2), 16) for m in re.finditer(
        r"\\mmioreg\{(\w+)\}\{[^{}]*\}\{(0x[0-9a-fA-F]+)\}\{(?:R|W|RW)\}", text)}
    items = dict(re.findall(r"\\item\[(VIRTIO_[A-Z0-9_]+) \(([^()]*)\)\]", text))
    return Proposal(name, text, listings, defines, structs, registers, items)


def register_macro(reg: str) -> str:
    """MSIConfigAddrLow -> VIRTIO_MMIO_MSI_CONFIG_ADDR_LOW"""
    words = re.findall(r"[A-Z]+(?=[A-Z][a-z])|[A-Z][a-z0-9]+|[A-Z]+", reg)
    return "VIRTIO_MMIO_" + "_".join(w.upper() for w in words)


def all_tex_values() -> dict[str, tuple[str, int]]:
    out = {}
    for name in PROPOSALS:
        for sym, value in proposal(name).values.items():
            out[sym] = (name, value)
    return out


# ---------------------------------------------------------------------------
# The tests

@pytest.mark.parametrize("name", [*PROPOSALS, "README.md"])
def test_file_exists_with_spdx_line(name):
    path = SPEC / name
    assert path.is_file(), f"spec/{name} is missing"
    first = path.read_text().splitlines()[0]
    assert "SPDX-License-Identifier:" in first, \
        f"spec/{name}: the first line is not an SPDX line: {first!r}"


@pytest.mark.parametrize("name", PROPOSALS)
def test_numbers_are_the_headers(name):
    """Every #define of the proposal's listings is in the header, equal."""
    p = proposal(name)
    header = linux_header(PROPOSALS[name])
    hv = header.values
    assert p.defines, f"spec/{name}: no #define in its listings"
    problems = []
    for sym, text in p.defines.items():
        try:
            ours = c_int(text, p.defines)
        except ValueError:
            problems.append(f"{sym}: spec/{name} gives {text!r}, not a number")
            continue
        if sym not in header.defines:
            problems.append(f"{sym}: defined by spec/{name} ({text}), "
                            f"not by {header.source}")
        elif sym not in hv:
            problems.append(f"{sym}: {header.source} gives "
                            f"{header.defines[sym]!r}, not a number")
        elif hv[sym] != ours:
            problems.append(f"{sym}: spec/{name} says {ours:#x} ({text}), "
                            f"{header.source} says {hv[sym]:#x} "
                            f"({header.defines[sym]})")
    print(f"spec/{name}: {len(p.defines)} symbols checked against {header.source}")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", PROPOSALS)
def test_structs_are_the_headers(name):
    """Every struct of the proposal's listings has the header's fields."""
    p = proposal(name)
    header = linux_header(PROPOSALS[name])
    hs = parse_structs(header.text)
    problems = []
    for sname, fields in p.structs.items():
        if sname not in hs:
            problems.append(f"struct {sname}: in spec/{name}, not in {header.source}")
            continue
        if fields != hs[sname]:
            ours = [f"{f.type} {f.name}[{f.count}]" for f in fields]
            theirs = [f"{f.type} {f.name}[{f.count}]" for f in hs[sname]]
            problems.append(f"struct {sname}: spec/{name} has {ours}, "
                            f"{header.source} has {theirs}")
    assert not problems, "\n".join(problems)


def test_struct_sizes_are_the_wire_contract():
    """The rst's sizes, with no padding (the tail where the device writes)."""
    seen = {}
    for name in PROPOSALS:
        seen.update(proposal(name).structs)
    problems = []
    for sname, size in STRUCT_SIZES.items():
        if sname not in seen:
            problems.append(f"struct {sname}: in no spec/*.tex listing")
            continue
        got, holes = struct_layout(seen[sname])
        if got != size:
            problems.append(f"struct {sname}: {got} bytes, the rst says {size}")
        if holes:
            problems.append(f"struct {sname}: padding before {holes}")
    for sname, fields in seen.items():
        if fields and fields[-1].type == "struct virtio_iommu_req_tail":
            got, _ = struct_layout(fields)
            if got % 8:
                problems.append(f"struct {sname}: {got} bytes, not a multiple of 8")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", PROPOSALS)
def test_prose_numbers_are_the_listings(name):
    r"""\item[NAME (value)] in the prose says what the listing defines."""
    p = proposal(name)
    values = p.values
    problems = []
    for sym, text in p.items.items():
        try:
            said = c_int(text, p.defines)
        except ValueError:
            problems.append(f"{sym}: spec/{name}'s prose gives {text!r}")
            continue
        if sym not in values:
            problems.append(f"{sym}: spec/{name}'s prose gives it ({text}), "
                            f"no listing defines it")
        elif values[sym] != said:
            problems.append(f"{sym}: spec/{name}'s prose says {said}, "
                            f"its listing {values[sym]}")
    assert not problems, "\n".join(problems)


def test_register_table_is_the_listing():
    p = proposal("transport-mmio-msi.tex")
    values = p.values
    assert p.registers, "spec/transport-mmio-msi.tex: no \\mmioreg row"
    problems = []
    for reg, off in p.registers.items():
        sym = register_macro(reg)
        if values.get(sym) != off:
            got = values.get(sym)
            problems.append(f"register {reg} at {off:#05x}: the listing's {sym} "
                            f"is {'missing' if got is None else hex(got)}")
    listed = {register_macro(r) for r in p.registers}
    for sym, value in values.items():
        if re.fullmatch(r"VIRTIO_MMIO_MSI_(CONTROL|(CONFIG|QUEUE)_\w+)", sym) \
                and sym not in listed:
            problems.append(f"{sym} ({value:#05x}): no row of the register table")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("rel", [IOMMU_H, MMIO_H])
def test_every_number_the_series_adds_is_specified(rel):
    """A number the series adds to a virtio uAPI header is wire protocol:
    some spec/*.tex must define it."""
    tex = all_tex_values()
    added = {k: v for k, v in added_defines(rel).items()
             if k.startswith(("VIRTIO_IOMMU_", "VIRTIO_MMIO_"))}
    assert added, f"the series adds no #define to {rel}"
    missing = [f"{sym} ({value})" for sym, value in added.items() if sym not in tex]
    assert not missing, (f"defined by the series in {rel}, in no spec/*.tex "
                         f"listing: {', '.join(missing)}")


def test_nothing_virtio_1_4_allocated_is_taken():
    tex = all_tex_values()
    problems = []
    for prefix, (what, v14, possible) in NAMESPACES.items():
        ours = {s: v for s, v in tex.items()
                if s.startswith(prefix) and not any(
                    s.startswith(p) for p in NAMESPACES if len(p) > len(prefix))}
        for sym, (name, value) in ours.items():
            short = sym[len(prefix):]
            if short in v14.values():
                problems.append(f"{sym}: virtio 1.4 has {what} {short} "
                                f"already (spec/{name})")
            if value in v14:
                problems.append(f"{sym} = {value}: virtio 1.4's {what} "
                                f"{value} is {v14[value]} (spec/{name})")
            elif value not in possible:
                problems.append(f"{sym} = {value}: not a free {what} "
                                f"(spec/{name})")
        by_value: dict[int, list[str]] = {}
        for sym, (_, value) in ours.items():
            by_value.setdefault(value, []).append(sym)
        problems += [f"{' and '.join(syms)}: the same {what} {value}"
                     for value, syms in by_value.items() if len(syms) > 1]
    assert not problems, "\n".join(problems)


# Linux's names where they are not the specification's
_LINUX_REGISTER_NAMES = {
    "QueueDriverLow": "VIRTIO_MMIO_QUEUE_AVAIL_LOW",
    "QueueDriverHigh": "VIRTIO_MMIO_QUEUE_AVAIL_HIGH",
    "QueueDeviceLow": "VIRTIO_MMIO_QUEUE_USED_LOW",
    "QueueDeviceHigh": "VIRTIO_MMIO_QUEUE_USED_HIGH",
}


def test_virtio_1_4_list_agrees_with_the_headers():
    """The list above against the base's own definitions: a typo in it
    would let a collision through."""
    iommu, mmio = linux_header(IOMMU_H), linux_header(MMIO_H)
    if not (iommu.complete and mmio.complete):
        pytest.skip("the whole headers need the assembled tree (make tree)")
    problems = []
    for prefix, table in (("VIRTIO_IOMMU_F_", V14_IOMMU_FEATURES),
                          ("VIRTIO_IOMMU_T_", V14_IOMMU_REQUESTS),
                          ("VIRTIO_IOMMU_PROBE_T_", V14_IOMMU_PROBE_PROPERTIES)):
        for value, short in table.items():
            got = iommu.values.get(prefix + short)
            if got != value:
                problems.append(f"{prefix}{short}: virtio 1.4 {value}, "
                                f"{iommu.source} {got}")
    found = 0
    for off, reg in V14_MMIO_REGISTERS.items():
        reg = reg.split()[0]
        sym = _LINUX_REGISTER_NAMES.get(reg, register_macro(reg))
        if sym not in mmio.values:
            continue                    # QueueReset: 6.12 does not name it
        found += 1
        if mmio.values[sym] != off:
            problems.append(f"{sym}: virtio 1.4 {off:#05x}, {mmio.source} "
                            f"{mmio.values[sym]:#05x}")
    if mmio.values.get("VIRTIO_MMIO_CONFIG") != MMIO_CONFIG_SPACE:
        problems.append(f"VIRTIO_MMIO_CONFIG: not {MMIO_CONFIG_SPACE:#x}")
    assert found >= len(V14_MMIO_REGISTERS) - 1, \
        f"only {found} of virtio 1.4's registers found in {mmio.source}"
    assert not problems, "\n".join(problems)


def test_registers_are_free_words_of_virtio_1_4():
    regs = proposal("transport-mmio-msi.tex").registers
    problems = []
    taken = dict(V14_MMIO_REGISTERS)
    for reg, off in sorted(regs.items(), key=lambda r: r[1]):
        if off % 4:
            problems.append(f"{reg} at {off:#05x}: not 32-bit aligned")
        if off + 4 > MMIO_CONFIG_SPACE:
            problems.append(f"{reg} at {off:#05x}: in the device configuration "
                            f"space (0x100 up)")
        if off in taken:
            problems.append(f"{reg} at {off:#05x}: virtio 1.4's {taken[off]} "
                            f"is there")
        taken[off] = reg
    assert not problems, "\n".join(problems)


def test_table_formats_are_distinct_and_skip_the_reserved_value():
    values = proposal("iommu-page-table-sharing.tex").values
    fmts = {s: v for s, v in values.items()
            if re.fullmatch(r"VIRTIO_IOMMU_PGTF_[A-Z0-9_]+", s)
            and not s.startswith("VIRTIO_IOMMU_PGTF_F_")}
    assert fmts, "no VIRTIO_IOMMU_PGTF_* format in the listing"
    assert len(set(fmts.values())) == len(fmts), f"formats share a value: {fmts}"
    assert 0 not in fmts.values() and 2 not in fmts.values(), \
        f"format 0 is none, 2 is reserved (the drafts' SMMUv3 table): {fmts}"


def test_qemu_patches_agree():
    """QEMU's copies (test bed's qemu/patches) say what the proposals say."""
    q = qemu_defines()
    qv = int_defines(q)
    problems = [f"{sym}: spec/{name} says {value:#x}, qemu/patches say {q[sym]}"
                for sym, (name, value) in all_tex_values().items()
                if sym in qv and qv[sym] != value]
    assert not problems, "\n".join(problems)


_PREAMBLE = r"""\documentclass[10pt]{report}
\usepackage[T1]{fontenc}
\usepackage{listings}
\usepackage{longtable}
\usepackage{underscore}
\usepackage{hyperref}
\lstset{basicstyle=\ttfamily\small,columns=fullflexible,keepspaces=true}
% commands.tex of the virtio specification
\newcommand{\field}[1]{\emph{#1}}
\newcommand{\drivernormative}[3]{#1{Driver Requirements: #2}\label{drivernormative:#3}}
\newcommand{\devicenormative}[3]{#1{Device Requirements: #2}\label{devicenormative:#3}}
\begin{document}
"""


@pytest.mark.skipif(not shutil.which("pdflatex"), reason="no pdflatex here")
def test_tex_builds(tmp_path):
    body = "".join(f"\\input{{{SPEC / n}}}\n" for n in PROPOSALS)
    (tmp_path / "spec.tex").write_text(_PREAMBLE + body + "\\end{document}\n")
    r = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error",
                        "spec.tex"], cwd=tmp_path, capture_output=True,
                       text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stdout[-3000:]
