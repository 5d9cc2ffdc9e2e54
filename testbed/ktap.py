# SPDX-License-Identifier: GPL-2.0
"""Parsing a guest console: framed steps with TAP/KTAP results, and kernel reports.

A guest prints `TB-BEGIN <step>`, the step's TAP output, `TB-END <step> <status>
<centiseconds>` for each step (a line without the time parses too), then
`TB-DONE`. Kernel messages may be interleaved anywhere.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

RESULT = re.compile(r"^\s*(not ok|ok) (\d+)(?: -)? ?([^#]*?)\s*(?:#\s*(SKIP|TODO)\b(.*))?$")
BEGIN = re.compile(r"TB-BEGIN (\S+)")
END = re.compile(r"TB-END (\S+) (\d+)(?: (\d+))?")
# How many of a failed case's last diagnostic lines its detail keeps.
FAIL_DETAIL_LINES = 8

# Kernel reports that fail a boot whatever the tests said.
KERNEL_REPORTS = re.compile(
    r"(BUG: |WARNING: |Oops|Kernel panic|KASAN: |UBSAN: |"
    r"possible (recursive|circular) locking|inconsistent lock state|"
    r"suspicious RCU usage|INFO: task .* blocked|hung_task|"
    r"DMA-API: .*device driver|general protection fault|Unable to handle kernel)")


@dataclass
class Case:
    name: str
    status: str                 # "pass", "fail", "skip"
    detail: str = ""


@dataclass
class Step:
    name: str
    exit_status: int | None = None      # None: the step never finished
    centiseconds: int | None = None     # its time in the guest, if it said
    cases: list[Case] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return (self.exit_status == 0 and bool(self.cases)
                and all(c.status != "fail" for c in self.cases))

    @property
    def skipped(self) -> bool:
        return bool(self.cases) and all(c.status == "skip" for c in self.cases)

    def failures(self) -> list[str]:
        """The failed cases, each with what it said before failing."""
        return [f"{c.name} ({c.detail})" if c.detail else c.name
                for c in self.cases if c.status == "fail"]

    def diagnostics(self) -> list[str]:
        return [d for d in map(diagnostic, self.lines) if d is not None]


@dataclass
class Console:
    booted: bool = False
    done: bool = False
    steps: dict[str, Step] = field(default_factory=dict)
    reports: list[str] = field(default_factory=list)


def diagnostic(line: str) -> str | None:
    """A TAP diagnostic line's text ("# " and the indent dropped), else None."""
    line = line.strip()
    return line[2:] if line.startswith("# ") else None


def parse_result(line: str) -> Case | None:
    m = RESULT.match(line)
    if not m:
        return None
    verdict, _, name, directive, reason = m.groups()
    if directive == "SKIP":
        return Case(name or "(unnamed)", "skip", (reason or "").strip())
    status = "pass" if verdict == "ok" or directive == "TODO" else "fail"
    return Case(name or "(unnamed)", status)


def parse_console(text: str) -> Console:
    """Split a console log into steps and collect kernel reports."""
    con = Console()
    current: Step | None = None
    said: list[str] = []            # a step's diagnostics since its last result
    for raw in text.splitlines():
        line = raw.replace("\r", "")
        if "TB-BOOTED" in line:
            con.booted = True
        if line.strip() == "TB-DONE":
            con.done = True
        if KERNEL_REPORTS.search(line):
            con.reports.append(line.strip())
        m = BEGIN.search(line)
        if m:
            current = con.steps.setdefault(m.group(1), Step(m.group(1)))
            said = []
            continue
        m = END.search(line)
        if m and current and m.group(1) == current.name:
            current.exit_status = int(m.group(2))
            if m.group(3) is not None:
                current.centiseconds = int(m.group(3))
            current = None
            continue
        if current is None:
            continue
        current.lines.append(line)
        case = parse_result(line)
        if case is None:
            if (d := diagnostic(line)) is not None:
                said.append(d)
            continue
        # Nested (indented) results are a subtest's own; its parent line counts.
        if not line.startswith((" ", "\t")):
            if case.status == "fail":
                # What the case said before failing: kselftest's
                # "file:line:test:Expected ..." lines and its TH_LOGs.
                case.detail = "; ".join(said[-FAIL_DETAIL_LINES:])
            current.cases.append(case)
        said = []
    return con
