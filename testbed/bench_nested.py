# SPDX-License-Identifier: GPL-2.0
"""`make bench-vhost`'s guest rows: an L2 guest on the nested test bed
(testbed/nested.py), the same L1 kernel and run, behind
(a) QEMU's userspace virtio-iommu (vhost-net through QEMU's device IOTLB),
(b) vhost-iommu (/dev/vhost-iommu in L1's kernel), L2's driver told not
to use posted MAP (virtio_iommu.posted_map=0),
(c) vhost-iommu with posted MAP (the driver's default),
(d) no IOMMU,
(e) vhost-iommu with its worker busy-polling the emptied request queue
for up to 1 ms (poll-us=1000, QEMU patch 0051), posted MAP off as in (b),
(f) both: posted MAP as in (c) and the busy loop as in (e).
L2 times a download and an upload through vhost-net, a run of small HTTP
requests, one-byte TCP round trips to L1's echo server for the bench's
seconds (guest/steps/net-bench.sh), then dma_map_benchmark on its spare
edu (guest/steps/dma-bench.sh, one thread: L2 has one CPU, strict
domains). The paths boot in turn, @rounds times over; each row is the
median of its boots, with every boot's value kept. Ratios (b)/(a),
(b)/(d), (c)/(b), (c)/(d), (e)/(b), (e)/(a), (f)/(e) and (f)/(a) are of
the rows' values (a rate above 1 is
the first faster; a latency above 1 is it slower). Behind an IOMMU the
row also has L2's driver's notifications per 1000 map+unmap pairs of
dma_map_benchmark (its debugfs counters before and after), and where a
pair's time went: notifying, waiting for answers, and L2's own path;
behind vhost-iommu, the time its worker spent on each request.
Everything runs under TCG inside TCG: the numbers compare paths on this
bed, not what hardware would give.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from . import boot, kernel, nested, qemu_build
from .bench import REQUEST_TYPES, driver_counts, latencies, median_of, per_1k, write_rows
from .shell import StepError, step

# (key, nested scenario, the group type the edu must sit in, more of L2's
# command line)
PATHS = (("a", "x86_64-nested-viommu", "DMA", ""),
         ("b", "x86_64-nested-vhost-iommu", "DMA", "virtio_iommu.posted_map=0"),
         ("c", "x86_64-nested-vhost-iommu", "DMA", ""),
         ("d", "x86_64-nested-noiommu", "none", ""),
         ("e", "x86_64-nested-vhost-iommu", "DMA", "virtio_iommu.posted_map=0"),
         ("f", "x86_64-nested-vhost-iommu", "DMA", ""))
LABELS = {"a": "(a) QEMU virtio-iommu", "b": "(b) vhost-iommu",
          "c": "(c) vhost, posted MAP", "d": "(d) no IOMMU",
          "e": "(e) vhost, poll-us", "f": "(f) vhost, posted+poll"}
# The paths' IOMMU device where it is not their scenario's
BUSY_LOOP = f"virtio-iommu-pci,vhost=on,poll-us={nested.BUSY_LOOP_US}"
IOMMU = {"e": BUSY_LOOP, "f": BUSY_LOOP}
METRICS = ("down_MBps", "up_MBps", "rr_per_s", "tcp_rr_per_s", "map_ns", "unmap_ns")
# L2's driver's notifications per 1000 map+unmap pairs, behind an IOMMU
KICKS = "kicks_per_1k_pairs"
# Where a map+unmap pair's time goes, from the same counters: L2's driver's
# notifications (a device that serves the queue in the notifying thread,
# QEMU's, does its work there), its waits for answers (a device serving
# from a thread of its own, vhost-iommu's worker), and the rest, L2's own
# path, which no device takes away. CEILING is the pair's time over that
# rest: what an instant device would give over this path, in rate.
NOTIFY = "notify_ns_per_pair"
WAIT = "answer_wait_ns_per_pair"
GUEST = "guest_ns_per_pair"
CEILING = "instant_device_x"
DRIVER_KEYS = (KICKS, NOTIFY, WAIT, GUEST, CEILING)
# Behind vhost-iommu: the time its worker spent on a request, from taking
# it off the ring to its used entry (the module's serve_ns over the
# requests it served, the whole boot), the part of WAIT that is its work
SERVE = "device_serve_ns_per_request"
REQUESTS = ("unanswered",) + REQUEST_TYPES
# (row, reference): the ratios written on the row
RATIOS = (("b", "a"), ("b", "d"), ("c", "b"), ("c", "d"), ("e", "b"),
          ("e", "a"), ("f", "e"), ("f", "a"))
# io_bench rr's line: one-byte TCP round trips to L1's echo server
TCP_RR = re.compile(r"bench-mmio: rr ops=(?P<ops>\d+) seconds=(?P<s>[0-9.]+)")
NETBENCH = re.compile(r"netbench: down_bytes=(?P<db>\d+) down_cs=(?P<dc>\d+) "
                      r"up_bytes=(?P<ub>\d+) up_cs=(?P<uc>\d+) rr=(?P<rr>\d+) "
                      r"rr_cs=(?P<rc>\d+)")


def bench_nested(name: str, group: str, seconds: float, rr: int,
                 append: str = "") -> nested.Nested:
    """Nested scenario @name with the bench's L2 steps, @append on L2's
    command line."""
    n = nested.NESTED[name]
    env = (("TB_BENCH_GROUP", group), ("TB_BENCH_THREADS", "1"),
           ("TB_BENCH_SECONDS", str(int(seconds))), ("TB_NET_RR", str(rr)),
           ("TB_NET_TCP_RR_SECONDS", str(int(seconds))))
    strict = "iommu.strict=1" if group != "none" else ""
    # Untraced: QEMU would write a line per MAP it serves, path (a)'s
    return dataclasses.replace(
        n, l2_steps=("net-bench", "dma-bench"), l2_env=n.l2_env + env,
        l2_append=" ".join(a for a in (strict, append) if a), device_trace=False,
        net_down_mb=boot.NET_DOWN_MB)


def _rate(amount: float, cs: int) -> float:
    if cs <= 0:
        raise StepError(f"bench-vhost guest: a measurement of {cs} cs")
    return round(amount * 100 / cs, 2)


def net_row(diags: list[str]) -> dict:
    """{down_MBps, up_MBps, rr_per_s, tcp_rr_per_s} from net-bench's lines."""
    m = next((m for m in map(NETBENCH.search, diags) if m), None)
    t = next((t for t in map(TCP_RR.search, diags) if t), None)
    if not m or not t:
        raise StepError("bench-vhost guest: no netbench or TCP round-trip line")
    mb = 1 << 20
    if float(t["s"]) <= 0:
        raise StepError(f"bench-vhost guest: a measurement of {t['s']} s")
    return {"down_MBps": _rate(int(m["db"]) / mb, int(m["dc"])),
            "up_MBps": _rate(int(m["ub"]) / mb, int(m["uc"])),
            "rr_per_s": _rate(int(m["rr"]), int(m["rc"])),
            "tcp_rr_per_s": round(int(t["ops"]) / float(t["s"]), 1)}


def driver_row(counts: dict, pair_ns: int) -> dict:
    """DRIVER_KEYS of one boot from L2's driver's counters (@counts, a
    difference over the benchmark) and its benchmark's map+unmap time."""
    pairs = counts["pairs"]
    notify = round(counts["notify_ns"] / pairs)
    wait = round(counts["answer_wait_ns"] / pairs)
    guest = pair_ns - notify - wait
    return {KICKS: per_1k(counts["kicks"], pairs), NOTIFY: notify, WAIT: wait,
            GUEST: guest, CEILING: round(pair_ns / guest, 2) if guest > 0 else None}


def serve_ns(diags: list[str]) -> int | None:
    """vhost-iommu's serve_ns over its requests, from the module totals the
    L1 step prints (None without them or without a request)."""
    totals = {k: int(v) for k, v in nested.kernel_device_lines(diags, nested.TOTALS_LINES)
              if v.isdigit()}
    served = sum(totals.get(k, 0) for k in REQUESTS)
    if "serve_ns" not in totals or not served:
        return None
    return round(totals["serve_ns"] / served)


def median_rows(measured: dict[str, list[dict]]) -> list[dict]:
    """One row a path: each metric's median over its boots, the boots'
    values kept as <metric>_runs."""
    rows = []
    for key, runs in measured.items():
        row = {"iommu": key, "label": LABELS[key], "runs": len(runs)}
        have = METRICS + tuple(k for k in DRIVER_KEYS + (SERVE,)
                               if all(r.get(k) is not None for r in runs))
        for k in have:
            vals = [r[k] for r in runs]
            # latencies stay whole ns, rates two decimals
            row[k] = median_of(vals, 2)
            row[f"{k}_runs"] = vals
        rows.append(row)
    return rows


def add_ratios(rows: list[dict]) -> None:
    """RATIOS of each metric: on row (b) vs_a and vs_d, on (c) vs_b and
    vs_d, on (e) vs_b and vs_a, on (f) vs_e and vs_a."""
    by = {r["iommu"]: r for r in rows}
    for key, ref in RATIOS:
        if key in by and ref in by:
            row, base = by[key], by[ref]
            row[f"vs_{ref}"] = {k: round(row[k] / base[k], 2) if base[k] else None
                                for k in METRICS}


def table(rows: list[dict]) -> str:
    out = [f"{'L2 behind':22} {'down MB/s':>9} {'up MB/s':>8} {'req/s':>7} "
           f"{'RTT/s':>7} {'map ns':>8} {'unmap ns':>8} {'kicks/1k':>8} "
           f"{'notify':>7} {'wait':>7} {'L2 own':>7} {'instant':>7} {'serve':>6}"]
    for r in rows:
        out.append(f"{r['label']:22} {r['down_MBps']:>9} {r['up_MBps']:>8} "
                   f"{r['rr_per_s']:>7} {r['tcp_rr_per_s']:>7} {r['map_ns']:>8} "
                   f"{r['unmap_ns']:>8} {r.get(KICKS, '-'):>8} "
                   f"{r.get(NOTIFY, '-'):>7} {r.get(WAIT, '-'):>7} "
                   f"{r.get(GUEST, '-'):>7} {r.get(CEILING, '-'):>7} "
                   f"{r.get(SERVE, '-'):>6}")
    by = {r["iommu"]: r for r in rows}
    for key, ref in RATIOS:
        v = by.get(key, {}).get(f"vs_{ref}")
        if v:
            out.append(f"{'(' + key + ')/(' + ref + ')':22} " + " ".join(
                f"{(f'{v[k]:.2f}x' if v[k] is not None else '-'):>{w}}"
                for k, w in zip(METRICS, (9, 8, 7, 7, 8, 8))))
    return "\n".join(out)


def run(rounds: int = 1, seconds: float = 10, rr: int = 20, build: bool = True) -> Path:
    """Boot the PATHS in turn, @rounds times; write vhost-guest.json."""
    if build:
        kernel.build_all(["x86_64"])
        qemu_build.build(["all"])
    measured: dict[str, list[dict]] = {}
    errors = []
    for i in range(rounds):
        for key, name, group, append in PATHS:
            n = bench_nested(name, group, seconds, rr, append)
            if key in IOMMU:
                n = dataclasses.replace(n, iommu=IOMMU[key])
            with step(f"boot {name} for the bench (round {i + 1} of {rounds})"):
                result = nested.run(n, tag="-bench")
            net = result.l2.steps.get("net-bench")
            dma = result.l2.steps.get("dma-bench")
            if not result.ok or not net or not dma:
                errors.append(f"{name}: {result.summary()}")
                print(errors[-1])
                continue
            lat = latencies(name, dma.diagnostics(), result.log)
            row = {**net_row(net.diagnostics()), "map_ns": lat["map"],
                   "unmap_ns": lat["unmap"], "boot_s": round(result.seconds)}
            counts = driver_counts(dma.diagnostics())
            if counts and counts["pairs"]:
                row.update(driver_row(counts, row["map_ns"] + row["unmap_ns"]))
            l1 = result.l1.steps.get("nested-l2")
            served = serve_ns(l1.diagnostics()) if l1 else None
            if served is not None:
                row[SERVE] = served
            measured.setdefault(key, []).append(row)
    rows = median_rows(measured)
    if rows:
        add_ratios(rows)
    for r in rows:
        r.update(rounds=rounds, requests=rr)
    # L2 has one CPU: dma_map_benchmark runs one thread
    return write_rows("vhost-guest.json", rows, table, errors, 1, seconds)
