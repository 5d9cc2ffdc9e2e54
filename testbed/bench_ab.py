# SPDX-License-Identifier: GPL-2.0
"""`make bench-ab`: one boot, a driver parameter off and on by turns.

Between boots the same row moves by up to a third under TCG (BENCHMARKS.md),
more than most changes to the DMA path are worth. Within one boot the
machine drifts more slowly, so guest/steps/ab-bench.sh sets a boolean
module parameter off, then on, then on, then off (ABBA: a drift costs both
sides alike), rebinding the disk's driver before each pass, which reads and
then writes the disk in 64 KiB direct requests for TB_BENCH_SECONDS each.
Each off/on pair gives a ratio; the row is the median of those ratios.
Writes build/bench/ab.json.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from . import boot, initramfs, kernel, paths, qemu_build
from .bench import median_of, tput_runs
from .shell import StepError, step

AB_LINE = re.compile(r"ab: value=(?P<value>[01]) read_mb=(?P<read_mb>\d+) "
                     r"read_cs=(?P<read_cs>\d+) write_mb=(?P<write_mb>\d+) "
                     r"write_cs=(?P<write_cs>\d+)")
AB_RATES = ("read_mb_s", "write_mb_s")


def ab_passes(diags: list[str]) -> list[dict]:
    """The step's passes in order: the parameter's value and its rates."""
    out = []
    for m in filter(None, map(AB_LINE.search, diags)):
        v = {k: int(x) for k, x in m.groupdict().items()}
        out.append({"value": v["value"],
                    "read_mb_s": round(v["read_mb"] * 100 / max(v["read_cs"], 1), 2),
                    "write_mb_s": round(v["write_mb"] * 100 / max(v["write_cs"], 1), 2)})
    return out


def ab_summary(param: str, passes: list[dict]) -> dict:
    """Pair the passes two by two (one off, one on, either order), each
    pair's on/off ratio per rate, and their medians. A pair that is not
    one of each is an error: the step's order went wrong."""
    if not passes or len(passes) % 2:
        raise StepError(f"bench-ab: {len(passes)} passes, not pairs")
    pairs = []
    for a, b in zip(passes[0::2], passes[1::2]):
        if {a["value"], b["value"]} != {0, 1}:
            raise StepError(f"bench-ab: a pair of passes with {param}="
                            f"{a['value']} and {b['value']}")
        off, on = (a, b) if a["value"] == 0 else (b, a)
        pairs.append({"off": off, "on": on,
                      **{f"{r}_on_off": round(on[r] / off[r], 3) if off[r] else None
                         for r in AB_RATES}})
    out = {"param": param, "pairs": pairs}
    for r in AB_RATES:
        ratios = [p[f"{r}_on_off"] for p in pairs if p[f"{r}_on_off"] is not None]
        out[f"{r}_on_off"] = median_of(ratios, 3) if ratios else None
        out[f"{r}_on_off_ahead"] = sum(x > 1 for x in ratios)
        for side in ("off", "on"):
            out[f"{r}_{side}"] = median_of([p[side][r] for p in pairs], 2)
    return out


def ab_table(s: dict) -> str:
    out = [f"{s['param']}: {len(s['pairs'])} pairs of passes in one boot, MB/s"]
    for r in AB_RATES:
        ratios = " ".join(f"{p[f'{r}_on_off']:.2f}" for p in s["pairs"])
        out.append(f"  {r}: off {s[f'{r}_off']}, on {s[f'{r}_on']} (medians); "
                   f"on/off {s[f'{r}_on_off']}x, ahead in {s[f'{r}_on_off_ahead']} "
                   f"of {len(s['pairs'])} ({ratios})")
    return "\n".join(out)


def run(param: str = "virtio_blk.copy_slots", pairs: int = 5, seconds: int = 2,
        row: str = "pt-strict", build: bool = True) -> Path:
    """Boot throughput row @row (bench.tput_runs()) with ab-bench alone:
    @pairs pairs of passes with @param (module.name, a boolean the driver
    reads when it probes, or at run time) off and on."""
    from .scenarios import TPUT_SCENARIOS
    (_, sc), = [run_ for run_ in tput_runs(TPUT_SCENARIOS, (row,)) if run_[0][0] != "none"]
    if build:
        kernel.build_all([sc.kernel])
        qemu_build.build()
    initramfs.base_image(sc.kernel)
    sc = dataclasses.replace(
        sc, name=f"bench-ab-{row}", steps=("ab-bench",), device_trace=False,
        timeout_s=pairs * 2 * (2 * seconds + 15) + 240,
        env={**sc.env, "TB_AB_PARAM": param, "TB_AB_PAIRS": str(pairs),
             "TB_BENCH_SECONDS": str(seconds)})
    with step(f"boot {sc.name} ({param}, {pairs} pairs of {seconds} s passes)"):
        result = boot.run_scenario(sc)
    ab = result.console.steps.get("ab-bench")
    if not ab or not ab.ok or result.timed_out:
        raise StepError(f"{sc.name} failed:\n{result.summary()}")
    summary = ab_summary(param, ab_passes(ab.diagnostics()))
    summary.update(row=row, seconds=seconds)
    paths.BENCH.mkdir(parents=True, exist_ok=True)
    out = paths.BENCH / "ab.json"
    out.write_text(json.dumps(summary, indent=1) + "\n")
    print(ab_table(summary))
    print(f"wrote {out}")
    return out
