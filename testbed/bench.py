# SPDX-License-Identifier: GPL-2.0
"""Benchmarks: run them, collect their lines, write build/bench/<name>.json.

`make bench-viommu` boots the DMA map benchmark scenarios (BENCH_ROW_SCENARIOS:
6.12's virtio-iommu driver, ours, and ours with kick combining on, ours in
page-table mode and in MAP/UNMAP mode behind the patched device that walks
tables, strict and lazy, and no IOMMU) and
writes build/bench/viommu.json; see viommu() below.

`make bench-drivers` boots the same benchmark behind QEMU's intel-iommu,
amd-iommu and smmuv3, each driver once on its old page-table code and once
on generic_pt (DRIVER_BENCH_SCENARIOS), and writes build/bench/drivers.json;
see drivers() below.

`make bench-vhost` boots the vhost-iommu selftest's benchmark (BENCH_VHOST)
and writes build/bench/vhost.json; see vhost() below.

`make bench-mmio` boots round trips over virtio-net and random reads of
virtio-blk on virtio-pci, virtio-mmio wired and virtio-mmio with MSI
(MMIO_BENCH_SCENARIOS) and writes build/bench/mmio.json; see mmio() below.

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

import dataclasses
import json
import re
import socket
import socketserver
import statistics
import sys
import threading
from collections import Counter
from pathlib import Path

from . import boot, initramfs, kernel, kunit, paths, qemu, qemu_build, timeline
from .scenarios import (BENCH_COUNT_SCENARIOS, BENCH_ROW_SCENARIOS, BENCH_ROWS,
                        BENCH_TABLE_DRIVERS, BENCH_VHOST,
                        DRIVER_BENCH_ROWS, DRIVER_BENCH_SCENARIOS, Scenario)
from .shell import StepError, step

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


# --- make bench-viommu -------------------------------------------------------

def dma_bench_run(sc: Scenario, threads: int, seconds: int) -> Scenario:
    """@sc set up for one dma_map_benchmark run of @seconds with @threads
    (bench-viommu and bench-drivers)."""
    return dataclasses.replace(
        sc, timeout_s=seconds + 150,
        env={**sc.env, "TB_BENCH_THREADS": str(threads),
             "TB_BENCH_SECONDS": str(seconds)})


# dma_map_benchmark's output (tools/testing/selftests/dma); the kernel keeps
# whole 100 ns per operation, so a latency is a multiple of 100 ns, rounded down.
LATENCY = re.compile(r"dmabench: average (?P<op>map|unmap) latency\(us\):(?P<us>[0-9.]+)")
ENDPOINT = re.compile(r"dmabench: device \S+ endpoint (?P<ep>\d+)")
STATS = re.compile(r"viommu-(?P<when>before|after): (?P<key>[a-z0-9_]+) (?P<val>\d+)$")
# Our driver's request counters (debugfs stats), by request type.
REQUEST_TYPES = ("attach", "detach", "map", "unmap", "probe", "attach_table", "invalidate")

TRACE = re.compile(r"^(?P<event>virtio_iommu_attach|virtio_iommu_detach|virtio_iommu_map"
                   r"|virtio_iommu_unmap|virtio_iommu_probe|virtio_queue_notify) "
                   r"(?P<args>.*)$")


def trace_counts(text: str, endpoint: int) -> dict:
    """What QEMU's virtio-iommu served while the benchmark ran.

    The window opens at the kick before the first MAP into the benchmark
    device's domain (nothing maps into it before: it has no driver until the
    benchmark binds). pairs: pages mapped into that domain (one page per map
    at granule 1); requests: every request after the window opened;
    kicks: notifies of queue 0, the request queue.
    """
    lines = []
    for line in text.splitlines():
        m = TRACE.match(line)
        if m:
            args = dict(a.split("=", 1) for a in m["args"].replace(" n ", " n=").split()
                        if "=" in a)
            lines.append((m["event"], args))
    domain = None
    for event, args in lines:
        if event == "virtio_iommu_attach" and int(args["endpoint"]) == endpoint:
            domain = args["domain"]
    if domain is None:
        raise StepError(f"trace: endpoint {endpoint} was never attached")
    first = next((i for i, (e, a) in enumerate(lines)
                  if e == "virtio_iommu_map" and a["domain"] == domain), None)
    if first is None:
        raise StepError(f"trace: nothing mapped into domain {domain}")
    start = max((i for i, (e, a) in enumerate(lines[:first])
                 if e == "virtio_queue_notify" and a.get("n") == "0"), default=first)
    got = Counter()
    pages = 0
    for event, args in lines[start:]:
        if event == "virtio_queue_notify":
            if args.get("n") == "0":
                got["kicks"] += 1
            continue
        got["requests"] += 1
        if event == "virtio_iommu_map" and args["domain"] == domain:
            pages += (int(args["virt_end"], 16) - int(args["virt_start"], 16) + 1) >> 12
    return {"pairs": pages, "requests": got["requests"], "kicks": got["kicks"]}


def driver_counts(diags: list[str]) -> dict | None:
    """Our driver's own counters (debugfs) after the benchmark less before."""
    got = {"before": Counter(), "after": Counter()}
    for d in diags:
        m = STATS.match(d)
        if m:
            got[m["when"]][m["key"]] += int(m["val"])
    if not got["after"]:
        return None
    delta = {k: got["after"][k] - got["before"][k] for k in got["after"]}
    return {"requests": sum(delta.get(k, 0) for k in REQUEST_TYPES),
            "kicks": delta.get("kicks", 0), "invalidates": delta.get("invalidate", 0),
            "maps": delta.get("map", 0), "pairs": delta.get("dma_maps", 0),
            "notify_ns": delta.get("notify_ns", 0),
            "answer_wait_ns": delta.get("answer_wait_ns", 0)}


def per_1k(count: int, pairs: int) -> float:
    return round(count * 1000 / pairs, 1)


def latencies(name: str, diags: list[str], log: Path) -> dict:
    """{"map": ns, "unmap": ns} from dma_map_benchmark's lines."""
    lat = {m["op"]: round(float(m["us"]) * 1000) for m in map(LATENCY.search, diags) if m}
    if set(lat) != {"map", "unmap"}:
        raise StepError(f"{name}: no latencies from dma_map_benchmark ({log})")
    return lat


def bench_diags(result: boot.Result) -> list[str]:
    """The dma-bench step's lines of a finished benchmark boot."""
    bench = result.console.steps.get("dma-bench")
    if not result.ok or not bench:
        raise StepError(f"{result.scenario.name} failed:\n{result.summary()}")
    return bench.diagnostics()


def viommu_row(driver: str, mode: str, result: boot.Result) -> dict:
    """One row of viommu.json from a finished, untraced benchmark boot: the
    times, and our driver's own counts. 6.12's counts come from the row's
    counting boot (count_row(), merged by add_counts())."""
    name = result.scenario.name
    diags = bench_diags(result)
    lat = latencies(name, diags, result.log)
    row = {"driver": driver, "mode": mode, "map_ns": lat["map"], "unmap_ns": lat["unmap"]}
    if driver == "none":
        return {**row, "requests_per_1k_maps": 0.0, "kicks_per_1k_maps": 0.0}
    if driver == "6.12":
        return row      # no counts unless its counting boots give them
    return counted_by_driver(row, name, diags, result.log,
                             table=driver in BENCH_TABLE_DRIVERS)


def counted_by_driver(row: dict, name: str, diags: list[str], log: Path,
                      table: bool = False) -> dict:
    """@row with our driver's counts over the benchmark: pairs are its
    map_pages() calls (one page each, -g 1; the benchmark device is the
    only one mapping), requests every request it sent, kicks its
    notifications. In page-table mode (@table) a MAP request is an error,
    not a row, and the INVALIDATEs among the requests are given too."""
    counts = driver_counts(diags)
    if not counts or not counts["pairs"]:
        raise StepError(f"{name}: no driver counters or no maps counted ({log})")
    if table and counts["maps"]:
        raise StepError(f"{name}: {counts['maps']} MAP requests in page-table mode ({log})")
    pairs = counts["pairs"]
    row.update(requests_per_1k_maps=per_1k(counts["requests"], pairs),
               kicks_per_1k_maps=per_1k(counts["kicks"], pairs),
               pairs=pairs, counted_by="driver")
    if table:
        row["invalidates_per_1k_maps"] = per_1k(counts["invalidates"], pairs)
    return row


def count_row(driver: str, mode: str, result: boot.Result) -> dict:
    """What QEMU's trace counted in a row's counting boot (its times are
    not used: each traced line costs the boot about 1.3 us)."""
    name = result.scenario.name
    diags = bench_diags(result)
    ep = next((int(m["ep"]) for m in map(ENDPOINT.search, diags) if m), None)
    if ep is None or not result.trace_log:
        raise StepError(f"{name}: no endpoint ID or no QEMU trace ({result.log})")
    counts = trace_counts(result.trace_log.read_text(errors="replace"), ep)
    pairs = counts["pairs"]
    return {"driver": driver, "mode": mode, "pairs": pairs,
            "requests_per_1k_maps": per_1k(counts["requests"], pairs),
            "kicks_per_1k_maps": per_1k(counts["kicks"], pairs)}


def add_counts(row: dict, counted: dict) -> None:
    """Merge a row's counting boots (the median_row() of count_row()s) into
    it: the headline counts for 6.12, QEMU's view beside our driver's own."""
    prefix = "" if row["driver"] == "6.12" else "qemu_"
    for key in ("requests_per_1k_maps", "kicks_per_1k_maps"):
        row[prefix + key] = counted[key]
    row[prefix + "kicks_per_1k_maps_runs"] = counted["kicks_per_1k_maps_runs"]
    row[prefix + "pairs_counted"] = counted["pairs"]
    if not prefix:
        row["counted_by"] = "qemu-trace"


def viommu_table(rows: list[dict]) -> str:
    """The rows, with each driver's cost against 6.12's in the same mode."""
    ref = {r["mode"]: r for r in rows if r["driver"] == "6.12"}
    floor = next((r for r in rows if r["driver"] == "none"), None)

    def x(a: float, b: float) -> str:
        return f"{a / b:.2f}x" if a and b else "-"

    out = [f"{'driver':15} {'mode':6} {'map ns':>8} {'unmap ns':>8} {'req/1k':>8} "
           f"{'kicks/1k':>8}   {'vs 6.12: map':>12} {'unmap':>6} {'kicks':>6}"
           f"   {'vs none: map':>12} {'unmap':>6}"]
    for r in rows:
        base = ref.get(r["mode"])
        # Kicks depend on how the threads interleave, which the trace
        # changes: against 6.12's (counted traced) take the row's own
        # traced count where it has one; * where only the driver counted
        kicks = r.get("qemu_kicks_per_1k_maps", r.get("kicks_per_1k_maps"))
        star = "" if "qemu_kicks_per_1k_maps" in r or not kicks else "*"
        vs = (f"{x(r['map_ns'], base['map_ns']):>12} {x(r['unmap_ns'], base['unmap_ns']):>6} "
              f"{x(kicks, base.get('kicks_per_1k_maps')) + star:>6}"
              if base and r is not base else f"{'':12} {'':6} {'':6}")
        vf = (f"{x(r['map_ns'], floor['map_ns']):>12} {x(r['unmap_ns'], floor['unmap_ns']):>6}"
              if floor and r is not floor else "")
        out.append(f"{r['driver']:15} {r['mode']:6} {r['map_ns']:>8} {r['unmap_ns']:>8} "
                   f"{r.get('requests_per_1k_maps', '-'):>8} "
                   f"{r.get('kicks_per_1k_maps', '-'):>8}   {vs}"
                   f"   {vf}".rstrip())
    out.append("(kicks vs 6.12: QEMU's traced counts of both rows, from their counting "
               "boots; * the driver's count of the untraced boot against 6.12's traced one)")
    return "\n".join(out)


def viommu(threads: int = 2, seconds: int = 20, build: bool = True, rounds: int = 3) -> Path:
    """6.12's virtio-iommu driver against ours, and the no-IOMMU floor.

    The rows' scenarios boot in turn, @rounds times over, and each row is
    the median of its boots (see drivers()): the request and kick counts
    vary with how the two threads interleave, the times with TCG. The
    timed boots run untraced; a row of BENCH_COUNTED boots a second time
    in each round, right after, with QEMU tracing its requests and kicks
    (see scenarios.BENCH_COUNTED), and only those counts are taken from it.
    """
    runs = with_counting_boots([(key, BENCH_ROW_SCENARIOS[key]) for key in BENCH_ROWS],
                               BENCH_COUNT_SCENARIOS)

    def row_of(key: tuple, result: boot.Result) -> dict:
        return count_row(*key[0], result) if is_counting(key) else viommu_row(*key, result)

    measured, errors = measure_rounds(runs, row_of, threads, seconds, rounds, build)
    rows = []
    for key in BENCH_ROWS:
        if key not in measured:
            continue
        row = median_row(measured[key], VIOMMU_MEDIANS)
        counted = measured.get((key, COUNTED))
        if counted:
            add_counts(row, median_row(counted, VIOMMU_MEDIANS))
        rows.append(row)
    for row in rows:
        add_paired_ratios(row, rows)
    out = write_rows("viommu.json", rows, viommu_table, errors, threads, seconds)
    for line in slower_than_612(rows):
        print(f"*** SLOWER THAN 6.12: {line}")
    return out


def slower_than_612(rows: list[dict]) -> list[str]:
    """Every round in which our default driver took longer than 6.12's in
    the same mode and round: a finding to explain, not to hide in a median.
    The other rows of ours (a non-default setting) are not judged."""
    out = []
    for row in rows:
        if row["driver"] != "ours":
            continue
        for key in ("map_vs_612", "unmap_vs_612"):
            slow = [(i + 1, r) for i, r in enumerate(row.get(f"{key}_runs", []))
                    if r is not None and r > 1]
            for rnd, ratio in slow:
                out.append(f"{row['mode']} {key.split('_')[0]}, round {rnd}: {ratio:.2f}x")
    return out


def add_paired_ratios(row: dict, rows: list[dict]) -> None:
    """Each round's time against 6.12's in the same mode and round (booted
    minutes apart, so drifts of the machine cancel), and their medians, as
    "map_vs_612" and "unmap_vs_612"; a second view beside the medians'
    ratio that the table prints."""
    ref = next((r for r in rows if r["driver"] == "6.12" and r["mode"] == row["mode"]), None)
    if not ref or ref is row:
        return
    for key in ("map_ns", "unmap_ns"):
        ratios, median = ratios_by_round(row.get(f"{key}_runs", []),
                                         ref.get(f"{key}_runs", []))
        if median is not None:
            name = key.replace("_ns", "_vs_612")
            row[f"{name}_runs"] = ratios
            row[name] = median


def ratios_by_round(runs: list, refs: list) -> tuple[list, float | None]:
    """Each round's value of @runs over @refs' of the same round, None where
    either has none (a failed boot, see measure_rounds()), and the median
    of the ratios there are (None without any)."""
    ratios = [round(a / b, 2) if a is not None and b else None for a, b in zip(runs, refs)]
    paired = [r for r in ratios if r is not None]
    return ratios, round(statistics.median(paired), 2) if paired else None


# --- make bench-drivers -----------------------------------------------------

def driver_row(iommu: str, path: str, result: boot.Result) -> dict:
    """One row of drivers.json from a finished benchmark boot."""
    name = result.scenario.name
    bench = result.console.steps.get("dma-bench")
    if not result.ok or not bench:
        raise StepError(f"{name} failed:\n{result.summary()}")
    lat = latencies(name, bench.diagnostics(), result.log)
    return {"iommu": iommu, "path": path, "map_ns": lat["map"], "unmap_ns": lat["unmap"]}


def drivers_table(rows: list[dict]) -> str:
    """The rows, with generic_pt's cost against the old path of the same IOMMU."""
    old = {r["iommu"]: r for r in rows if r["path"] == "old"}

    def x(a: int, b: int) -> str:
        return f"{a / b:.2f}x" if a and b else "-"

    out = [f"{'iommu':12} {'path':10} {'map ns':>8} {'unmap ns':>8}   "
           f"{'old/new: map':>12} {'unmap':>6}"]
    for r in rows:
        base = old.get(r["iommu"])
        vs = (f"{x(base['map_ns'], r['map_ns']):>12} {x(base['unmap_ns'], r['unmap_ns']):>6}"
              if base and r is not base else "")
        out.append(f"{r['iommu']:12} {r['path']:10} {r['map_ns']:>8} {r['unmap_ns']:>8}   "
                   f"{vs}".rstrip())
    return "\n".join(out)


# The values a row's boots each measure; the row keeps their medians.
DRIVER_MEDIANS = ("map_ns", "unmap_ns")
VIOMMU_MEDIANS = ("map_ns", "unmap_ns", "requests_per_1k_maps", "kicks_per_1k_maps",
                  "qemu_requests_per_1k_maps", "qemu_kicks_per_1k_maps", "pairs",
                  "invalidates_per_1k_maps")


def median_of(vals: list, digits: int = 1) -> int | float:
    """The median of one metric over the rounds: a whole number when every
    round's value is one (nanoseconds, counts), else rounded to @digits
    decimals (rates: edu DMA's 0.0095 MB/s needs 4). The one rule of every
    bench's rows."""
    med = statistics.median(vals)
    if all(isinstance(v, int) for v in vals):
        return round(med)
    return round(med, digits)


def median_row(runs: list[dict], keys: tuple[str, ...],
               per_round: tuple[str, ...] = ()) -> dict:
    """One row from repeated boots of the same path: the median of each of
    @keys (those the runs have), and each run's times and kicks and each
    of @per_round as "<key>_runs". A boot that failed (None in @runs, see
    measure_rounds()) counts in no median and keeps its round's place in
    the "_runs" lists as None, so that rows pair by round."""
    done = [r for r in runs if r is not None]
    out = dict(done[0])
    for key in keys:
        if key in out:
            out[key] = median_of([r[key] for r in done])
    for key in ("map_ns", "unmap_ns", "kicks_per_1k_maps", *per_round):
        if key in out:
            out[f"{key}_runs"] = [r[key] if r is not None else None for r in runs]
    out["runs"] = len(done)
    return out


COUNTED = "counted"


def with_counting_boots(runs: list[tuple], counting: dict) -> list[tuple]:
    """@runs, each (key, scenario) followed by its counting boot
    (@counting[key], keyed (key, COUNTED)) where it has one: the boot,
    traced, that counts what the untraced timed boot cannot."""
    out = []
    for key, sc in runs:
        out.append((key, sc))
        if key in counting:
            out.append(((key, COUNTED), counting[key]))
    return out


def is_counting(key) -> bool:
    return isinstance(key, tuple) and len(key) == 2 and key[1] == COUNTED


def measure_rounds(runs: list[tuple[tuple, Scenario]], row_of, threads: int, seconds: int,
                   rounds: int, build: bool, prepare=None
                   ) -> tuple[dict[tuple, list[dict]], list[str]]:
    """Boot each of @runs' scenarios in turn, @rounds times over, and turn
    each finished boot into a row with @row_of(key, result): a key's rows
    in boot order. A boot that fails is reported, the others still count,
    and its row is None: the rows of different keys then still pair by
    round (a key booted twice a round has two places a round). A key with
    no finished boot has no rows. @prepare(sc, threads, seconds) gives the
    scenario to boot (default: the DMA map benchmark's)."""
    targets = sorted({sc.kernel for _, sc in runs})
    if build:
        kernel.build_all(targets)
        qemu_build.build(sorted({qemu.MACHINES[sc.machine].qemu for _, sc in runs}))
    for target in targets:
        initramfs.base_image(target)
    measured: dict[tuple, list[dict]] = {}
    errors = []
    for n in range(1, rounds + 1):
        for key, sc in runs:
            sc = (prepare or dma_bench_run)(sc, threads, seconds)
            with step(f"boot {sc.name} ({threads} threads, {seconds} s, round {n}/{rounds})"):
                try:
                    row = row_of(key, boot.run_scenario(sc))
                except StepError as exc:
                    errors.append(str(exc))
                    print(f"error: {exc}", file=sys.stderr)
                    row = None
                measured.setdefault(key, []).append(row)
    return {k: v for k, v in measured.items() if any(r is not None for r in v)}, errors


def write_rows(name: str, rows: list[dict], table_of, errors: list[str], threads: int,
               seconds: int) -> Path:
    """build/bench/@name from @rows, printed as @table_of shows them."""
    if not rows:
        raise StepError("no benchmark row: " + "; ".join(errors))
    for r in rows:
        r.update(threads=threads, seconds=seconds)
    paths.BENCH.mkdir(parents=True, exist_ok=True)
    out = paths.BENCH / name
    out.write_text(json.dumps(rows, indent=1) + "\n")
    print(table_of(rows))
    print(f"wrote {out}")
    if errors:
        raise StepError(f"{len(errors)} benchmark boot(s) failed, see above")
    return out


def drivers(threads: int = 2, seconds: int = 20, build: bool = True,
            iommus: list[str] | None = None, rounds: int = 3) -> Path:
    """Each converted IOMMU driver, old page tables against generic_pt.

    Both paths of an IOMMU boot the same kernel, alternately, @rounds times
    each, and each row is the median of its boots: under TCG one boot's
    time swings by tens of percent (the IOTLB invalidations QEMU emulates
    dominate), the alternation and the median keep the ratio honest.
    """
    runs = [((iommu, path), DRIVER_BENCH_SCENARIOS[f"bench-drivers-{iommu}-{path}"])
            for iommu, path in DRIVER_BENCH_ROWS if not iommus or iommu in iommus]
    if not runs:
        raise StepError(f"no benchmark for {iommus}")
    measured, errors = measure_rounds(runs, lambda key, result: driver_row(*key, result),
                                      threads, seconds, rounds, build)
    rows = [median_row(measured[key], DRIVER_MEDIANS) for key, _ in runs if key in measured]
    return write_rows("drivers.json", rows, drivers_table, errors, threads, seconds)


# --- make bench-vhost --------------------------------------------------------

# The selftest's line per batch size (vhost_iommu.c, bench_map_unmap)
VHOST_LINE = re.compile(
    r"bench-vhost: batch=(?P<batch>\d+) requests=(?P<requests>\d+) "
    r"kicks=(?P<kicks>\d+) seconds=(?P<seconds>[0-9.]+) "
    r"requests_per_s=(?P<rps>[0-9.]+) us_per_kick=(?P<us>[0-9.]+)")
VHOST_BATCHES = (1, 16, 256)


def vhost_rows(diags: list[str]) -> list[dict]:
    """Rows {batch, requests_per_s, us_per_kick} from the benchmark's lines.

    The rates are recomputed from the counts and the time, which the
    selftest prints in full, so a row is consistent whatever its rounding.
    """
    rows = {}
    for d in diags:
        m = VHOST_LINE.search(d)
        if not m:
            continue
        seconds, requests, kicks = float(m["seconds"]), int(m["requests"]), int(m["kicks"])
        if seconds <= 0 or not kicks:
            raise StepError(f"bench-vhost: an empty measurement: {d}")
        rows[int(m["batch"])] = {
            "batch": int(m["batch"]),
            "requests_per_s": round(requests / seconds),
            "us_per_kick": round(seconds * 1e6 / kicks, 2),
        }
    missing = [b for b in VHOST_BATCHES if b not in rows]
    if missing:
        raise StepError(f"bench-vhost: no line for batch size(s) {missing}")
    return [rows[b] for b in VHOST_BATCHES]


def _matches(diags: list[str], line: re.Pattern) -> list[re.Match]:
    """The matches of @line among a step's diagnostic lines."""
    return [m for m in map(line.search, diags) if m]


# The page-table row (vhost_iommu_table.c, bench_invalidate): what unmapping
# a batch costs a kick, UNMAPs against one INVALIDATE of the guest's table
VHOST_TABLE_LINE = re.compile(
    r"bench-vhost-table: batch=(?P<batch>\d+) rounds=(?P<rounds>\d+) "
    r"unmap_us=(?P<unmap>[0-9.]+) invalidate_us=(?P<inval>[0-9.]+)")


def vhost_table_rows(diags: list[str]) -> list[dict]:
    """Rows {batch, unmap_us, invalidate_us, invalidate_vs_unmap}."""
    rows = {}
    for m in _matches(diags, VHOST_TABLE_LINE):
        unmap, inval = float(m["unmap"]), float(m["inval"])
        if not int(m["rounds"]) or unmap <= 0 or inval <= 0:
            raise StepError(f"bench-vhost: an empty measurement: {m[0]}")
        rows[int(m["batch"])] = {
            "batch": int(m["batch"]), "unmap_us": unmap,
            "invalidate_us": inval,
            "invalidate_vs_unmap": round(inval / unmap, 3),
        }
    missing = [b for b in VHOST_BATCHES if b not in rows]
    if missing:
        raise StepError(f"bench-vhost: no page-table line for batch size(s) {missing}")
    return [rows[b] for b in VHOST_BATCHES]


# A TRANSLATE in a 4 KiB MAP against one in a 1 GiB MAP of 4 KiB pages
# (vhost_iommu.c, bench_translate): a lookup's cost must not grow with the
# mapping's size
VHOST_TRANSLATE_LINE = re.compile(
    r"bench-vhost-translate: mapping=(?P<mapping>\w+) translates=(?P<n>\d+) "
    r"seconds=(?P<seconds>[0-9.]+) us_per_translate=(?P<us>[0-9.]+)")
VHOST_TRANSLATE_MAPPINGS = ("4K", "4M", "1G")


def vhost_translate_rows(diags: list[str]) -> list[dict]:
    """Rows {mapping, translates, us_per_translate, vs_4k}."""
    rows = {}
    for m in _matches(diags, VHOST_TRANSLATE_LINE):
        if not int(m["n"]) or float(m["us"]) <= 0:
            raise StepError(f"bench-vhost: an empty measurement: {m[0]}")
        rows[m["mapping"]] = {"mapping": m["mapping"], "translates": int(m["n"]),
                              "us_per_translate": float(m["us"])}
    missing = [k for k in VHOST_TRANSLATE_MAPPINGS if k not in rows]
    if missing:
        raise StepError(f"bench-vhost: no TRANSLATE line for mapping(s) {missing}")
    small = rows["4K"]["us_per_translate"]
    for r in rows.values():
        r["vs_4k"] = round(r["us_per_translate"] / small, 3)
    return [rows[k] for k in VHOST_TRANSLATE_MAPPINGS]


def vhost_translate_table(rows: list[dict]) -> str:
    out = [f"{'mapping':>8} {'translates':>11} {'us each':>9} {'vs 4K':>7}"]
    for r in rows:
        out.append(f"{r['mapping']:>8} {r['translates']:>11} "
                   f"{r['us_per_translate']:>9.2f} {r['vs_4k']:>6.2f}x")
    return "\n".join(out)


# MAP+UNMAP pairs whose UNMAP frees the leaf table the MAP allocated,
# against pairs whose table stays (vhost_iommu.c, bench_table_pairs)
VHOST_TABLES_LINE = re.compile(
    r"bench-vhost-tables: pairs=(?P<pairs>\d+) freed_us_per_pair=(?P<freed>[0-9.]+) "
    r"kept_us_per_pair=(?P<kept>[0-9.]+) ratio=(?P<ratio>[0-9.]+)")


def vhost_tables_row(diags: list[str]) -> dict:
    """{pairs_a_kick, freed_us_per_pair, kept_us_per_pair, freed_vs_kept}."""
    for m in _matches(diags, VHOST_TABLES_LINE):
        freed, kept = float(m["freed"]), float(m["kept"])
        if freed <= 0 or kept <= 0:
            raise StepError(f"bench-vhost: an empty measurement: {m[0]}")
        return {"pairs_a_kick": int(m["pairs"]), "freed_us_per_pair": freed,
                "kept_us_per_pair": kept, "freed_vs_kept": round(freed / kept, 3)}
    raise StepError("bench-vhost: no table-pair line")


def vhost_unmap_table(rows: list[dict]) -> str:
    out = [f"{'batch':>6} {'UNMAPs us/kick':>15} {'INVALIDATE us':>14} {'ratio':>7}"]
    for r in rows:
        out.append(f"{r['batch']:>6} {r['unmap_us']:>15.2f} {r['invalidate_us']:>14.2f} "
                   f"{r['invalidate_vs_unmap']:>6.2f}x")
    return "\n".join(out)


def vhost_table(rows: list[dict]) -> str:
    one = rows[0]["requests_per_s"]
    out = [f"{'batch':>6} {'requests/s':>11} {'us/kick':>9} {'vs batch 1':>10}"]
    for r in rows:
        out.append(f"{r['batch']:>6} {r['requests_per_s']:>11} {r['us_per_kick']:>9} "
                   f"{r['requests_per_s'] / one:>9.2f}x")
    return "\n".join(out)


def vhost(seconds: float = 5, build: bool = True) -> Path:
    """vhost-iommu's request rate at 1, 16 and 256 requests a kick."""
    sc = BENCH_VHOST
    if build:
        kernel.build_all([sc.kernel])
        qemu_build.build([qemu.MACHINES[sc.machine].qemu])
    initramfs.base_image(sc.kernel)
    sc = dataclasses.replace(sc, timeout_s=int(3 * seconds) + 120,
                             env={**sc.env, "TB_BENCH_SECONDS": str(seconds)})
    with step(f"boot {sc.name} ({seconds} s a batch size)"):
        result = boot.run_scenario(sc)
    bench = result.console.steps.get("vhost-bench")
    if not result.ok or not bench:
        raise StepError(f"{sc.name} failed:\n{result.summary()}")
    rows = vhost_rows(bench.diagnostics())
    trows = vhost_table_rows(bench.diagnostics())
    xrows = vhost_translate_rows(bench.diagnostics())
    prow = vhost_tables_row(bench.diagnostics())
    paths.BENCH.mkdir(parents=True, exist_ok=True)
    out = paths.BENCH / "vhost.json"
    out.write_text(json.dumps(rows, indent=1) + "\n")
    tout = paths.BENCH / "vhost-table.json"
    tout.write_text(json.dumps(trows, indent=1) + "\n")
    xout = paths.BENCH / "vhost-translate.json"
    xout.write_text(json.dumps(xrows, indent=1) + "\n")
    pout = paths.BENCH / "vhost-tables.json"
    pout.write_text(json.dumps(prow, indent=1) + "\n")
    print(vhost_table(rows))
    print(vhost_unmap_table(trows))
    print(vhost_translate_table(xrows))
    print(f"MAP+UNMAP pairs, {prow['pairs_a_kick']} a kick: {prow['freed_us_per_pair']} us "
          f"freeing the leaf table, {prow['kept_us_per_pair']} us keeping it "
          f"({prow['freed_vs_kept']:.2f}x)")
    print(f"wrote {out}, {tout}, {xout} and {pout}")
    return out


# --- make bench-mmio ---------------------------------------------------------

# io_bench's line, with the interrupts the step counted around it
MMIO_LINE = re.compile(r"bench-mmio: (?P<mode>rr|randread) ops=(?P<ops>\d+) "
                       r"seconds=(?P<seconds>[0-9.]+) irqs=(?P<irqs>-?\d+)")
# io_bench trap's line: reads of a virtio-mmio transport's MagicValue
MMIO_TRAP_LINE = re.compile(r"bench-mmio: trap ops=(?P<ops>\d+) seconds=(?P<seconds>[0-9.]+) "
                            r"value=(?P<value>0x[0-9a-f]+)")
# What MagicValue reads: "virt" in little-endian ASCII (virtio 1.3, 4.2.2)
MMIO_MAGIC = 0x74726976
# The seconds of a timed boot's trap test: millions of reads at 0.1-0.25 us each
MMIO_TRAP_SECONDS = 2
# virtio-mmio registers whose accesses the benchmark counts (QEMU's trace)
MMIO_TRAPS = {"status_reads": ("read", 0x60), "acks": ("write", 0x64),
              "notifies": ("write", 0x50)}
# A counting boot's seconds of each test (at most the timed boots')
MMIO_COUNT_SECONDS = 3
MMIO_MEDIANS = ("rr_per_s", "randread_per_s", "irqs_per_rr", "irqs_per_read",
                "trap_ns", "traps_per_request", "status_reads", "acks", "notifies", "msis")


class _Echo(socketserver.BaseRequestHandler):
    """The host end of the round trips: each byte back as it comes."""

    def handle(self):
        self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        while data := self.request.recv(64):
            self.request.sendall(data)


def mmio_trace_counts(text: str) -> dict:
    """Accesses to the counted virtio-mmio registers, and MSIs sent."""
    counts = dict.fromkeys([*MMIO_TRAPS, "msis"], 0)
    want = {(kind, off): name for name, (kind, off) in MMIO_TRAPS.items()}
    for m in re.finditer(r"virtio_mmio_(read|write) offset 0x([0-9a-f]+)|"
                         r"(virtio_mmio_msi) ", text):
        if m[3]:
            counts["msis"] += 1
        elif (name := want.get((m[1], int(m[2], 16)))):
            counts[name] += 1
    return counts


def mmio_lines(result: boot.Result) -> dict[str, tuple[int, float, int]]:
    """The mmio-bench step's (operations, seconds, interrupts) per mode."""
    # The disk check of the host does not apply: the step writes nothing
    step_ = result.console.steps.get("mmio-bench")
    if not step_ or not step_.ok or result.timed_out:
        raise StepError(f"{result.scenario.name} failed:\n{result.summary()}")
    got = {}
    for d in step_.diagnostics():
        if m := MMIO_LINE.search(d):
            got[m["mode"]] = (int(m["ops"]), float(m["seconds"]), int(m["irqs"]))
    if set(got) != {"rr", "randread"}:
        raise StepError(f"{result.scenario.name}: no line for {set(('rr', 'randread')) - set(got)}")
    return got


def mmio_trap_ns(result: boot.Result) -> float | None:
    """What one read of a virtio-mmio register cost the guest in a timed
    boot (ns), None where it ran no trap test (a virtio-pci row)."""
    step_ = result.console.steps.get("mmio-bench")
    for d in step_.diagnostics() if step_ else ():
        if m := MMIO_TRAP_LINE.search(d):
            if int(m["value"], 16) != MMIO_MAGIC:
                raise StepError(f"{result.scenario.name}: the trap test read "
                                f"{m['value']}, not MagicValue")
            return round(float(m["seconds"]) * 1e9 / int(m["ops"]), 1)
    return None


def mmio_row(row: str, result: boot.Result) -> dict:
    """A row's rates and interrupts from an untraced, timed boot, and on
    virtio-mmio what a trapped register read cost."""
    got = mmio_lines(result)
    (rr, rr_s, rr_irqs), (rd, rd_s, rd_irqs) = got["rr"], got["randread"]
    out = {"row": row, "rr_per_s": round(rr / rr_s), "randread_per_s": round(rd / rd_s),
           "irqs_per_rr": round(rr_irqs / rr, 2), "irqs_per_read": round(rd_irqs / rd, 2)}
    if (ns := mmio_trap_ns(result)) is not None:
        out["trap_ns"] = ns
    return out


def mmio_trap_share(wired: dict) -> float | None:
    """The share of the wired row @wired's round trip its virtio-mmio traps
    take that MSI removes: the InterruptStatus read and the InterruptACK
    write of each interrupt, at what a trapped register read cost in the
    same boots. The goal of 1.8x over wired asks MSI to take 44 % off a round
    trip, which the seed's traps did where each is an exit to the VMM."""
    if "trap_ns" not in wired or not wired.get("rr_per_s"):
        return None
    return 2 * wired["irqs_per_rr"] * wired["trap_ns"] * wired["rr_per_s"] / 1e9


def mmio_count_row(row: str, result: boot.Result) -> dict:
    """The register accesses and MSIs QEMU traced in a row's counting boot,
    and the traps a request of that boot cost."""
    got = mmio_lines(result)
    trace = result.trace_log.read_text(errors="replace") if result.trace_log else ""
    traps = mmio_trace_counts(trace)
    requests = got["rr"][0] + got["randread"][0]
    return {"row": row, **traps,
            "traps_per_request": round(sum(traps[k] for k in MMIO_TRAPS) / requests, 2)}


def mmio_table(rows: list[dict]) -> str:
    from .scenarios import MMIO_BENCH_MACHINES
    by = {r["row"]: r for r in rows}
    out = [f"{'row':19} {'rr/s':>7} {'reads/s':>8} {'irq/rr':>7} {'irq/read':>8} "
           f"{'status':>7} {'acks':>7} {'notify':>7} {'traps/req':>9} {'trap ns':>7}"]
    for r in rows:
        out.append(f"{r['row']:19} {r['rr_per_s']:>7} {r['randread_per_s']:>8} "
                   f"{r['irqs_per_rr']:>7} {r['irqs_per_read']:>8} "
                   f"{r.get('status_reads', '-'):>7} {r.get('acks', '-'):>7} "
                   f"{r.get('notifies', '-'):>7} {r.get('traps_per_request', '-'):>9} "
                   f"{r.get('trap_ns', '-'):>7}")
    # the ratios within each machine (its rows' prefix)
    pairs = (("mmio-msi", "pci"), ("mmio-msi", "mmio-wired"),
             ("mmio-msi-shared", "pci"), ("mmio-msi-shared", "mmio-wired"))
    for prefix in MMIO_BENCH_MACHINES:
        for row, other in pairs:
            a, b = by.get(prefix + row), by.get(prefix + other)
            if a and b:
                out.append(f"{prefix}{row} / {prefix}{other}: round trips "
                           f"{a['rr_per_s'] / b['rr_per_s']:.2f}x, random reads "
                           f"{a['randread_per_s'] / b['randread_per_s']:.2f}x")
        wired = by.get(prefix + "mmio-wired")
        if wired and (share := mmio_trap_share(wired)) is not None:
            out.append(f"{prefix}mmio-wired's status reads and acks: {wired['trap_ns']} ns "
                       f"each, {2 * wired['irqs_per_rr']:.1f} a round trip, "
                       f"{100 * share:.2f} % of it")
    secs = min([r["seconds"] for r in rows if "seconds" in r] + [MMIO_COUNT_SECONDS])
    out.append(f"(status, acks, notify: what QEMU traced in a row's counting boots, "
               f"{secs} s a test; traps/req their sum per request)")
    return "\n".join(out)


def mmio(seconds: int = 10, build: bool = True, rounds: int = 3, arch: str = "all") -> Path:
    """virtio-net round trips and virtio-blk 4 KiB random reads on virtio-pci,
    virtio-mmio wired and virtio-mmio with MSI: one kernel, one machine per
    architecture (@arch: "arm64", "x86_64" or "all"), the rows booted in
    turn @rounds times, medians."""
    from .scenarios import MMIO_BENCH_SCENARIOS, MMIO_COUNT_SCENARIOS
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = {"TB_RR_PORT": str(server.server_address[1])}

    def run_for(sc: Scenario, secs: int, trap_secs: int = 0) -> Scenario:
        return dataclasses.replace(sc, env={**sc.env, **port, "TB_BENCH_SECONDS": str(secs),
                                            "TB_TRAP_SECONDS": str(trap_secs)},
                                   timeout_s=2 * secs + trap_secs + 180)

    # The counting boots are shorter: traps per request need no seconds,
    # and they time no trap (QEMU would trace every read)
    runs = with_counting_boots(
        [(row, run_for(sc, seconds, MMIO_TRAP_SECONDS)) for row, sc in MMIO_BENCH_SCENARIOS.items()
         if arch in ("all", sc.kernel)],
        {row: run_for(sc, min(seconds, MMIO_COUNT_SECONDS))
         for row, sc in MMIO_COUNT_SCENARIOS.items()})

    def row_of(key, result: boot.Result) -> dict:
        return mmio_count_row(key[0], result) if is_counting(key) else mmio_row(key, result)

    try:
        measured, errors = measure_rounds(runs, row_of, 1, seconds, rounds, build,
                                          prepare=lambda sc, threads, secs: sc)
    finally:
        server.shutdown()
    rows = []
    for row, _ in runs:
        if is_counting(row) or row not in measured:
            continue
        out = median_row(measured[row], MMIO_MEDIANS, ("rr_per_s", "randread_per_s", "trap_ns"))
        counted = measured.get((row, COUNTED))
        if counted:
            traps = median_row(counted, MMIO_MEDIANS, ("traps_per_request",))
            out.update({k: traps[k] for k in (*MMIO_TRAPS, "msis", "traps_per_request",
                                               "traps_per_request_runs")})
        rows.append(out)
    return write_rows("mmio.json", rows, mmio_table, errors, 1, seconds)


# --- make bench-throughput ---------------------------------------------------

# tput-bench's line: what moved and in how many centiseconds
TPUT_LINE = re.compile(
    r"tput: disk_write_mb=(?P<disk_write_mb>\d+) disk_write_cs=(?P<disk_write_cs>\d+) "
    r"disk_read_mb=(?P<disk_read_mb>\d+) disk_read_cs=(?P<disk_read_cs>\d+) "
    r"bulk_write_mb=(?P<bulk_write_mb>\d+) bulk_write_cs=(?P<bulk_write_cs>\d+) "
    r"bulk_read_mb=(?P<bulk_read_mb>\d+) bulk_read_cs=(?P<bulk_read_cs>\d+) "
    r"net_down_bytes=(?P<net_down_bytes>\d+) net_down_cs=(?P<net_down_cs>\d+) "
    r"net_up_bytes=(?P<net_up_bytes>\d+) net_up_cs=(?P<net_up_cs>\d+)")
# kprof's lines, "kprof PHASE: ..." (guest/progs/kprof.c)
KPROF_LINE = re.compile(r"(kprof \w+:.*)")
# The disk in 64 KiB requests one at a time, in 1 MiB calls (bulk), the NIC
TPUT_RATES = ("disk_write_mb_s", "disk_read_mb_s", "bulk_write_mb_s", "bulk_read_mb_s",
              "net_down_mb_s", "net_up_mb_s")
# The goal: strict page-table mode moves at least 90 % of what the
# same machine moves without an IOMMU.
TPUT_GOAL = 0.9


def tput_row(key: tuple[str, str], result: boot.Result) -> dict:
    """One boot's rates in MB/s (MiB for the disk, 10^6 bytes for the NIC,
    as its transfers are counted in bytes)."""
    # The host's disk check does not apply: the step writes the scratch area
    step_ = result.console.steps.get("tput-bench")
    if not step_ or not step_.ok or result.timed_out:
        raise StepError(f"{result.scenario.name} failed:\n{result.summary()}")
    m = next((m for m in map(TPUT_LINE.search, step_.diagnostics()) if m), None)
    if not m:
        raise StepError(f"{result.scenario.name}: no tput line ({result.log})")
    v = {k: int(x) for k, x in m.groupdict().items()}
    row = {"iommu": key[0], "mode": key[1]}
    # PROFILE=1: the guest kernel's profile of each timed pass
    profile = [m[1] for m in map(KPROF_LINE.search, step_.diagnostics()) if m]
    if profile:
        row["kprof"] = profile
    for what in ("disk_write", "disk_read", "bulk_write", "bulk_read"):
        row[f"{what}_mb_s"] = round(v[f"{what}_mb"] * 100 / max(v[f"{what}_cs"], 1), 2)
    for what in ("net_down", "net_up"):
        row[f"{what}_mb_s"] = round(v[f"{what}_bytes"] / 1e4 / max(v[f"{what}_cs"], 1), 2)
    # TIMELINE=1: each disk request's turns, from QEMU's timed trace
    turns = timeline.summary(result.trace_log)
    if turns:
        row["timeline"] = turns
    return row


def median_timeline(runs: list[dict]) -> dict:
    """The rounds' disk request turns (timeline.summary()), as the median
    of each over the rounds, and every round's in "<segment>_runs"."""
    out: dict[str, dict] = {}
    for kind in ("read", "write"):
        rounds = [r["timeline"][kind] for r in runs
                  if r is not None and kind in r.get("timeline", {})]
        if not rounds:
            continue
        out[kind] = {}
        for key in rounds[0]:
            vals = [r[key] for r in rounds]
            out[kind][key] = median_of(vals)
            out[kind][f"{key}_runs"] = vals
    return out


def write_profiles(measured: dict[tuple, list[dict]]) -> Path:
    """Every round's guest kernel profile of each row, as kprof printed it,
    to a file of its own: the profiles leave the rows (which hold rates)."""
    out = paths.BENCH / "throughput-profile.txt"
    text = []
    for key, runs in measured.items():
        for n, row in enumerate(runs):
            text.append(f"== {key[0]} {key[1]}, boot {n + 1} of {len(runs)}"
                        + (" (failed)" if row is None else ""))
            text.extend(row.pop("kprof", []) if row is not None else [])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(text) + "\n")
    print(f"guest kernel profiles: {out}")
    return out


def tput_reference(floor_runs: list, rounds: int, position: int, rows: int) -> list:
    """No IOMMU's rates to hold a row's @rounds against, one a round (None
    where there is none). With one no-IOMMU boot a round, that boot's. With
    two a round (@floor_runs in boot order: the round's first boot and its
    last, the @rows rows booted between them), the line between the two at
    the row's @position in the round (1 for the first row): a machine that
    drifts over a round moves the reference with it, and the two boots'
    own noise halves. Where one of the two failed (None, see
    measure_rounds()), the other alone."""
    if len(floor_runs) != 2 * rounds:
        return list(floor_runs)
    out = []
    for first, last in zip(floor_runs[0::2], floor_runs[1::2]):
        if first and last:
            out.append(first + (last - first) * position / (rows + 1))
        else:
            out.append(first or last or None)
    return out


def add_tput_ratios(rows: list[dict]) -> None:
    """Each rate against no IOMMU's round by round, against tput_reference()
    (@rows in their boot order within a round, no IOMMU's row among them),
    and the median of those ratios: not the ratio of the two rows' medians,
    which on a machine that drifts over a run holds boots of different
    times against each other."""
    floor = next((r for r in rows if r["iommu"] == "none"), None)
    if not floor:
        return
    judged = [r for r in rows if r is not floor]
    for position, row in enumerate(judged, 1):
        for rate in TPUT_RATES:
            runs = row[f"{rate}_runs"]
            ref = tput_reference(floor[f"{rate}_runs"], len(runs), position, len(judged))
            ratios, median = ratios_by_round(runs, ref)
            row[f"{rate}_vs_none_runs"] = ratios
            if median is not None:
                row[f"{rate}_vs_none"] = median


def tput_table(rows: list[dict]) -> str:
    heads = ("disk w", "disk r", "bulk w", "bulk r", "net dn", "net up")
    out = [f"{'iommu':10} {'mode':6} " + " ".join(f"{h:>7}" for h in heads) +
           "   MB/s; vs none: " + " ".join(f"{h:>6}" for h in heads)]
    for r in rows:
        vs = " ".join(f"{r[f'{k}_vs_none']:>5}x" if f"{k}_vs_none" in r else f"{'':6}"
                      for k in TPUT_RATES)
        out.append(f"{r['iommu']:10} {r['mode']:6} " +
                   " ".join(f"{r[k]:>7}" for k in TPUT_RATES) + f"   {'':14} {vs}")
    if any("timeline" in r for r in rows):
        out += ["", f"{'iommu':10} {'mode':6} {'disk':5} " +
                " ".join(f"{k:>9}" for k in timeline.SEGMENTS) +
                f" {'iommu req':>9}   medians, microseconds a 64 KiB request"]
        for r in rows:
            for kind, t in r.get("timeline", {}).items():
                out.append(f"{r['iommu']:10} {r['mode']:6} {kind:5} " +
                           " ".join(f"{t[k]:>9}" for k in timeline.SEGMENTS) +
                           f" {t['iommu_requests']:>9}")
    return "\n".join(out)


def below_goal(rows: list[dict]) -> list[str]:
    """Every round in which strict page-table mode (on each device: the
    default one, which caches, the one that does not, and the one that
    serves posted INVALIDATEs) moved less than TPUT_GOAL of what no IOMMU
    moved: the goal is judged round by round."""
    out = []
    for row in rows:
        if row["mode"] != "strict" or row["iommu"] not in ("pt", "pt-nocache", "pt-posted"):
            continue
        for rate in TPUT_RATES:
            for rnd, ratio in enumerate(row.get(f"{rate}_vs_none_runs", []), 1):
                if ratio is not None and ratio < TPUT_GOAL:
                    out.append(f"{row['iommu']} {rate}, round {rnd}: {ratio:.2f}x")
    return out


def tput_runs(scenarios: dict, rows: tuple[str, ...] = ()) -> list[tuple]:
    """The (key, scenario) pairs of `make bench-throughput`, no IOMMU's
    always, the others' only those named "<iommu>-<mode>" in @rows (all
    without any): a change's two rows, paired in more rounds for the time
    every row's rounds take. An unknown name is an error."""
    names = {f"{k[0]}-{k[1]}": k for k in scenarios}
    unknown = [r for r in rows if r not in names]
    if unknown:
        raise StepError(f"no throughput row {', '.join(unknown)} (rows: {', '.join(names)})")
    return [(k, sc) for k, sc in scenarios.items()
            if k[0] == "none" or not rows or f"{k[0]}-{k[1]}" in rows]


def throughput(seconds: int = 5, build: bool = True, rounds: int = 3,
               profile: bool = False, turns: bool = False,
               rows_: tuple[str, ...] = ()) -> Path:
    """Disk and NIC rates behind our driver in page-table and MAP/UNMAP mode,
    strict and lazy, against QEMU's intel-iommu (strict) and no IOMMU: one
    kernel, one QEMU binary, the rows booted in turn @rounds times, each
    round between two no-IOMMU boots, medians. With
    @profile, the guest also samples its kernel during each timed pass
    (which costs the rates a little): every boot's profile goes to
    build/bench/throughput-profile.txt. With @turns, QEMU
    traces the disk with timestamps (which costs the rates a little) and
    each row gains "timeline": where a disk request's time went, in the
    guest and in QEMU (testbed/timeline.py), medians and every round. With
    @rows_, those rows alone beside no IOMMU (tput_runs())."""
    from .scenarios import TPUT_SCENARIOS
    env = {"TB_BENCH_SECONDS": str(seconds), **({"TB_KPROF": "1"} if profile else {})}

    def timed(sc: Scenario) -> Scenario:
        sc = dataclasses.replace(sc, env={**sc.env, **env}, timeout_s=4 * seconds + 240,
                                 device_trace=False)
        if turns:
            sc = dataclasses.replace(sc, extra_trace=sc.extra_trace + timeline.EVENTS,
                                     trace_times=True)
        return sc

    # No IOMMU opens and closes every round: each row's round is held
    # against the two boots around it (tput_reference())
    runs = [(key, timed(sc)) for key, sc in tput_runs(TPUT_SCENARIOS, rows_)]
    floor = [run for run in runs if run[0][0] == "none"]
    judged = [run for run in runs if run[0][0] != "none"]
    measured, errors = measure_rounds(floor + judged + floor, tput_row, 1, seconds, rounds,
                                      build, prepare=lambda sc, threads, secs: sc)
    if profile:
        write_profiles(measured)
    rows = []
    for key, _ in judged + floor:
        if key in measured:
            row = median_row(measured[key], TPUT_RATES, TPUT_RATES)
            row.pop("timeline", None)   # the first round's: the row has medians
            turns_ = median_timeline(measured[key])
            if turns_:
                row["timeline"] = turns_
            rows.append(row)
    add_tput_ratios(rows)
    out = write_rows("throughput.json", rows, tput_table, errors, 1, seconds)
    for line in below_goal(rows):
        print(f"*** BELOW {TPUT_GOAL:.0%} OF NO IOMMU (strict page-table mode): {line}")
    return out
