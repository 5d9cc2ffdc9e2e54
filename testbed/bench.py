# SPDX-License-Identifier: GPL-2.0
"""Benchmarks: run them, collect their lines, write build/bench/<name>.json.

`make bench-pt` runs the generic_pt KUnit benchmark (gpt_bench.c), which
prints one line per format, operation and case:

    # bench: <format> <op> <case> new_min=N new_med=N old_min=N old_med=N

(old_* = -1 where the old code cannot be called at the same level). ARMv8 is
taken from the UML run, where it runs at native speed; AMD v1 from x86_64,
the only place the AMD driver's page table builds. Both sides of a row are
measured in the same run, so their ratio holds even where absolute times
(TCG) mean little.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from . import kunit, paths
from .shell import StepError

BENCH_LINE = re.compile(
    r"# bench: (?P<format>\S+) (?P<op>\S+) (?P<case>\S+) "
    r"new_min=(?P<new_min>-?\d+) new_med=(?P<new_med>-?\d+) "
    r"old_min=(?P<old_min>-?\d+) old_med=(?P<old_med>-?\d+)")

# Which run's numbers count for which format
PT_RUNS = {"bench-um": ("armv8_",), "bench-x86_64": ("amdv1", "vtdss")}


def parse(text: str) -> list[dict]:
    """Rows {format, op, case, new_ns, old_ns, new_min_ns, old_min_ns}."""
    rows = []
    for m in BENCH_LINE.finditer(text):
        def ns(key: str) -> int | None:
            v = int(m[key])
            return None if v < 0 else v
        rows.append({"format": m["format"], "op": m["op"], "case": m["case"],
                     "new_ns": ns("new_med"), "old_ns": ns("old_med"),
                     "new_min_ns": ns("new_min"), "old_min_ns": ns("old_min")})
    return rows


def ratio(row: dict) -> str:
    if not row["old_ns"] or not row["new_ns"]:
        return "-"
    return f"{row['old_ns'] / row['new_ns']:.2f}x"


def table(rows: list[dict]) -> str:
    out = [f"{'format':14} {'op':6} {'case':7} {'new ns':>8} {'old ns':>8} "
           f"{'old/new':>8}"]
    for r in rows:
        old = "-" if r["old_ns"] is None else str(r["old_ns"])
        out.append(f"{r['format']:14} {r['op']:6} {r['case']:7} "
                   f"{r['new_ns']:>8} {old:>8} {ratio(r):>8}")
    return "\n".join(out)


def pt(runs: list[str] | None = None) -> Path:
    """Run the generic_pt benchmark; return the JSON file written."""
    rows = []
    for name in runs or list(PT_RUNS):
        r = kunit.RUNS[name]
        data = kunit.run_one(r)
        failed = [s for s, st, _ in kunit.suites(data) if st == "FAIL"]
        if failed:
            raise StepError(f"{name}: benchmark suite failed: {failed}")
        got = [row for row in parse(kunit.test_log(r).read_text(errors="replace"))
               if row["format"].startswith(PT_RUNS[name])]
        if not got:
            raise StepError(f"{name}: no '# bench:' lines in {kunit.test_log(r)}")
        for row in got:
            row["run"] = name
        rows += got
    paths.BENCH.mkdir(parents=True, exist_ok=True)
    out = paths.BENCH / "pt.json"
    out.write_text(json.dumps(rows, indent=1) + "\n")
    print(table(rows))
    print(f"wrote {out}")
    return out
