# SPDX-License-Identifier: GPL-2.0
"""`make bench-nested`: VFIO nesting against today's
userspace VMM, per IOMMU model, in one boot of one kernel each.

The benchmark is a test of the nesting selftest (vfio_nested.c, `bench`),
run by guest/steps/vfio-nested-bench.sh on the edu behind each IOMMU. In
each round it times, for TB_BENCH_SECONDS each, a guest's map+unmap pair
on two paths, one after the other:
- nested: the guest writes a stage-1 entry and sends INVALIDATE, which the
  VMM forwards (VFIO_IOMMU_NESTING_INVALIDATE: the host recomposes the
  page), then clears it and invalidates again;
- vmm: what a userspace VMM does today for a device behind a vIOMMU, a
  VFIO_IOMMU_MAP_DMA of the page's host address at the guest's IOVA per
  guest map and an UNMAP_DMA per unmap;
and edu DMA through each, and through stage 2 alone (none: no vIOMMU, the
device using guest-physical addresses). Rows {iommu, path, map_ns,
unmap_ns, dma_mb_s} (medians over the rounds, each round's values kept)
in build/bench/nested.json; the nested row has its ratios to vmm and none.
The edu completes a DMA on a 100 ms timer, which bounds dma_mb_s on every
path alike.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from . import boot, initramfs, kernel, qemu_build
from .bench import median_of, write_rows
from .scenarios import SCENARIOS
from .shell import StepError, step

# (IOMMU model, the scenario whose machine and kernel the bench boots)
IOMMUS = (("intel-iommu", "x86_64-intel-iommu"), ("amd-iommu", "x86_64-amd-iommu"))
PATHS = ("nested", "vmm", "none")
METRICS = ("map_ns", "unmap_ns", "dma_mb_s")
LINE = re.compile(r"bench-nested: round=(?P<round>\d+) path=(?P<path>\w+) "
                  r"pairs=(?P<pairs>\d+) map_ns=(?P<map_ns>\d+) "
                  r"unmap_ns=(?P<unmap_ns>\d+) dma_mb_s=(?P<dma_mb_s>[0-9.]+)")


def rows_of(iommu: str, diags: list[str], rounds: int) -> list[dict]:
    """One row a path from the step's lines: medians, each round kept."""
    runs: dict[str, list[dict]] = {p: [] for p in PATHS}
    for d in diags:
        m = LINE.search(d)
        if m and m["path"] in runs:
            runs[m["path"]].append({"pairs": int(m["pairs"]),
                                    "map_ns": int(m["map_ns"]),
                                    "unmap_ns": int(m["unmap_ns"]),
                                    "dma_mb_s": float(m["dma_mb_s"])})
    rows = []
    for path, got in runs.items():
        if len(got) != rounds:
            raise StepError(f"bench-nested: {iommu}: {len(got)} of {rounds} "
                            f"rounds of path {path}")
        row = {"iommu": iommu, "path": path, "rounds": rounds,
               "pairs": sum(r["pairs"] for r in got)}
        for k in METRICS:
            vals = [r[k] for r in got]
            row[k] = median_of(vals, 4)
            row[f"{k}_runs"] = vals
        rows.append(row)
    add_ratios(rows)
    return rows


def add_ratios(rows: list[dict]) -> None:
    """On the nested row: map and unmap time against vmm's, round by round
    too (below 1: nesting is cheaper), DMA rate against vmm's and none's."""
    by = {r["path"]: r for r in rows}
    n, v, none = by.get("nested"), by.get("vmm"), by.get("none")
    if not n or not v:
        return
    for k in ("map_ns", "unmap_ns"):
        if v[k]:
            n[f"{k}_vs_vmm"] = round(n[k] / v[k], 3)
            n[f"{k}_vs_vmm_runs"] = [round(a / b, 3) if b else None
                                     for a, b in zip(n[f"{k}_runs"], v[f"{k}_runs"])]
    for ref, row in (("vmm", v), ("none", none)):
        if row and row["dma_mb_s"]:
            n[f"dma_vs_{ref}"] = round(n["dma_mb_s"] / row["dma_mb_s"], 3)


def table(rows: list[dict]) -> str:
    out = [f"{'iommu':12} {'path':7} {'map ns':>9} {'unmap ns':>9} {'DMA MB/s':>9} "
           f"{'map vs vmm (rounds)':>24}"]
    for r in rows:
        rounds = ", ".join(f"{x:.2f}" for x in r.get("map_ns_vs_vmm_runs", []) if x)
        vs = f"{r['map_ns_vs_vmm']:.2f}x ({rounds})" if "map_ns_vs_vmm" in r else ""
        out.append(f"{r['iommu']:12} {r['path']:7} {r['map_ns']:>9} {r['unmap_ns']:>9} "
                   f"{r['dma_mb_s']:>9.4f} {vs:>24}")
    return "\n".join(out)


def run(seconds: float = 2, rounds: int = 3, build: bool = True) -> Path:
    """Boot each IOMMU's scenario with the bench step; write nested.json."""
    if build:
        kernel.build_all(["x86_64"])
        qemu_build.build(["qemu-system-x86_64"])
    initramfs.base_image("x86_64")
    rows, errors = [], []
    for iommu, name in IOMMUS:
        sc = dataclasses.replace(
            SCENARIOS[name], name=f"bench-nested-{iommu}",
            steps=("vfio-nested-bench",), devices=("edu",),
            timeout_s=int(rounds * (2 * seconds + 10)) + 180,
            env={**SCENARIOS[name].env, "TB_BENCH_SECONDS": str(seconds),
                 "TB_BENCH_ROUNDS": str(rounds)})
        with step(f"boot {sc.name} ({rounds} rounds, {seconds} s a path)"):
            result = boot.run_scenario(sc)
        st = result.console.steps.get("vfio-nested-bench")
        if not result.ok or not st:
            errors.append(f"{sc.name}: {result.summary()}")
            print(errors[-1])
            continue
        rows += rows_of(iommu, st.diagnostics(), rounds)
    return write_rows("nested.json", rows, table, errors, 1, seconds)
