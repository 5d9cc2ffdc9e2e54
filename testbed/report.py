# SPDX-License-Identifier: GPL-2.0
"""make run: build what is missing, then boot one guest workload twice,
side by side, behind our QEMU's virtio-iommu: in MAP/UNMAP mode (a request
for each mapping and each unmapping, what 6.12's driver and QEMU's device
do) and sharing the guest's page tables with the device (no MAP at all;
INVALIDATE after unmaps). The report puts the two columns beside each
other: the requests the device served (QEMU's trace), the driver's own
counters per 1,000 IOMMU maps, the data each workload checked, the faults.

make run-vhost does the same for vhost-iommu: it boots the nested bed's
x86_64-nested-vhost-iommu (an L1 guest running our kernel and QEMU, an L2
guest behind virtio-iommu-pci,vhost=on) and reports who served the
requests (the kernel device's counters, QEMU's trace), the endpoints and
their modes, and L2's driver's counters.
"""

from __future__ import annotations

import re
import time
from functools import partial

from . import boot, initramfs, kernel, qemu_build, tree
from .boot_pool import BootPool, default_jobs
from .shell import step

RUN = ("x86_64-run-map-unmap", "x86_64-run-page-table")
# What each of make run's steps checks, as its report line says it
STEP_WHAT = {
    "iommu-info": "IOMMU found, every device in a group",
    "blk": "disk read and written, checksums compared",
    "net": "NIC download and upload, checksums compared",
    "vfio-edu": "VFIO edu DMA compared, unmapped DMA faults",
    "viommu-stats": "driver: no request failed or left unkicked",
}


def driver_stats(con) -> dict[str, dict[str, int]]:
    """The guest driver's numeric counters per device (viommu-stats)."""
    st = con.steps.get("viommu-stats")
    stats: dict[str, dict[str, int]] = {}
    for d in st.diagnostics() if st else []:
        if d.startswith("viommu: "):
            dev, _, rest = d[len("viommu: "):].partition(" ")
            key, _, val = rest.partition(" ")
            if val.isdigit():
                stats.setdefault(dev, {})[key] = int(val)
    return stats


def driver_counters(con) -> list[str]:
    """The guest driver's own counters, from the viommu-stats step's lines."""
    st = con.steps.get("viommu-stats")
    stats: dict[str, dict[str, int]] = {}
    modes: dict[str, str] = {}
    domains: list[str] = []
    for d in st.diagnostics() if st else []:
        if not d.startswith("viommu: "):
            continue
        dev, _, rest = d[len("viommu: "):].partition(" ")
        key, _, val = rest.partition(" ")
        if key == "domain":
            domains.append(f"{dev} domain {val}")
        elif key == "mode":
            modes[dev] = val
        elif val.isdigit():
            stats.setdefault(dev, {})[key] = int(val)
    lines = []
    for dev, c in sorted(stats.items()):
        kicks = c.get("kicks", 0)
        per_kick = c.get("kicked_requests", 0) / kicks if kicks else 0.0
        lines.append(f"mode:      {dev}: {mode_of(modes.get(dev, '?'), domains, dev)}")
        lines.append(f"driver:    {dev}: {c.get('attach', 0)} ATTACH, "
                     f"{c.get('detach', 0)} DETACH, {c.get('map', 0)} MAP, "
                     f"{c.get('unmap', 0)} UNMAP, {c.get('probe', 0)} PROBE, "
                     f"{c.get('attach_table', 0)} ATTACH_TABLE, "
                     f"{c.get('invalidate', 0)} INVALIDATE, "
                     f"{c.get('errors', 0)} failed")
        lines.append(f"driver:    {dev}: {c.get('dma_maps', 0)} DMA maps, "
                     f"{c.get('requests_per_1000_maps', 0)} MAP/UNMAP/INVALIDATE "
                     f"requests per 1000 of them")
        lines.append(f"driver:    {dev}: {kicks} kicks, {per_kick:.2f} requests "
                     f"per kick, {c.get('polls', 0)} polls, "
                     f"{c.get('sleeps', 0)} sleeps, {c.get('late_waits', 0)} waits "
                     f"past their timeout, {c.get('gave_up', 0)} given up")
        lines.append(f"driver:    {dev}: {c.get('faults', 0)} faults, "
                     f"{c.get('faults_reported', 0)} reported to the IOMMU core")
    lines += [f"driver:    {d}" for d in domains]
    return lines


def mode_of(device_mode: str, domains: list[str], dev: str) -> str:
    """What the device negotiated and the mode its paging domains ran in
    (their own debugfs line says it: mode=table format=..., or mode=map)."""
    kinds: dict[str, int] = {}
    for d in domains:
        if not d.startswith(f"{dev} ") or not re.search(
                r"type=(dma-strict|dma-lazy|unmanaged) ", d):
            continue
        m = re.search(r" mode=(\w+) format=(\w+)", d)
        kind = "MAP/UNMAP" if not m or m.group(1) != "table" else f"table {m.group(2)}"
        kinds[kind] = kinds.get(kind, 0) + 1
    said = {"page-table": "page-table sharing negotiated",
            "map-unmap": "MAP/UNMAP mode"}.get(device_mode, device_mode)
    doms = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    return f"{said}; DMA/VFIO domains: {doms or 'none left'}"


def _per_1000(n: int, maps: int) -> str:
    return f"{n * 1000 / maps:.0f}" if maps else "-"


def _checks(st) -> str:
    """A step's verdict and what it counted: checks passed of those run."""
    if not st:
        return "did not run"
    npass = sum(c.status == "pass" for c in st.cases)
    nskip = sum(c.status == "skip" for c in st.cases)
    said = f"{'ok' if st.ok else 'FAILED'}, {npass}/{len(st.cases) - nskip} checks"
    return said + (f" ({nskip} skipped)" if nskip else "")


def column(result: boot.Result) -> dict[str, str]:
    """One mode's column of make run's table."""
    con = result.console
    events, _, _ = boot.trace_counts(result.trace_log)
    stats = driver_stats(con)
    c = next(iter(stats.values()), {})
    maps = c.get("dma_maps", 0)
    col = {
        "mode": next((d.split(" mode ", 1)[1] for d in
                      (con.steps["viommu-stats"].diagnostics()
                       if "viommu-stats" in con.steps else [])
                      if d.startswith("viommu: ") and " mode " in d), "?"),
        "maps": f"{maps}",
        "map": f"{events['map']}", "unmap": f"{events['unmap']}",
        "attach_table": f"{events['attach_table']}",
        "invalidate": f"{events['invalidate']}",
        "attach": f"{events['attach']}",
        "req_1000": _per_1000(c.get("map", 0) + c.get("unmap", 0) +
                              c.get("invalidate", 0), maps),
        "kicks_1000": _per_1000(c.get("kicks", 0), maps),
        "faults": f"{events['report_fault']}",
        "disk": next((c.status for c in result.host_checks
                      if c.name.startswith("disk")), "-"),
        "time": f"{result.seconds:.0f} s",
        "verdict": "PASS" if result.ok else "FAIL",
    }
    for name in result.scenario.steps:
        col[name] = _checks(con.steps.get(name))
    return col


ROWS = (
    ("mode", "mode the guest driver runs in"),
    ("maps", "IOMMU maps in the guest (DMA API, VFIO)"),
    ("map", "MAP requests served by the device"),
    ("unmap", "UNMAP requests served by the device"),
    ("attach_table", "ATTACH_TABLE requests served"),
    ("invalidate", "INVALIDATE requests served"),
    ("attach", "ATTACH requests served"),
    ("req_1000", "MAP+UNMAP+INVALIDATE per 1,000 maps"),
    ("kicks_1000", "kicks (device notified) per 1,000 maps"),
    ("faults", "faults reported (edu's, expected)"),
)


def render(results: list[boot.Result], build_s: float) -> str:
    """make run's report: one row per count, one column per mode."""
    cols = [column(r) for r in results]
    head = ["MAP/UNMAP mode", "page-table sharing"][:len(cols)]
    width = 44
    lines = ["== make run: one guest, disk + NIC + VFIO edu behind our QEMU's "
             "virtio-iommu-pci (x86_64, lazy DMA domains), in two modes",
             f"{'':{width}} " + " | ".join(f"{h:>28}" for h in head)]
    rows = list(ROWS) + [(name, STEP_WHAT.get(name, name))
                         for name in results[0].scenario.steps]
    rows += [("disk", "disk writes checked by the host"),
             ("time", "boot and workload (wall clock)"), ("verdict", "verdict")]
    for key, what in rows:
        vals = [col.get(key, "-") for col in cols]
        lines.append(f"{what:{width}} " + " | ".join(f"{v:>28}" for v in vals))
    for r in results:
        lines += [f"problem:   {r.scenario.name}: {p}" for p in r.problems()]
        lines.append(f"console:   {r.log}")
    lines.append(f"time:      build {build_s:.0f} s")
    lines.append("verdict:   " + ("PASS" if all(r.ok for r in results) else "FAIL"))
    return "\n".join(lines)


def build(target_name: str) -> float:
    """Assemble the tree, build the kernel @target_name, our QEMU and the
    guest image; the seconds it took."""
    t0 = time.monotonic()
    with step("tree"):
        tree.assemble()
    kernel.build(kernel.TARGETS[target_name])
    qemu_build.build()
    with step("guest image"):
        initramfs.base_image(target_name)
    return time.monotonic() - t0


def main() -> int:
    from .scenarios import RUN_SCENARIOS

    build_s = build("x86_64")
    # Two boots side by side: each keeps about one CPU busy
    pool = BootPool(default_jobs())
    pool.plan([(n, partial(boot.run_scenario, RUN_SCENARIOS[n]), False) for n in RUN])
    with step(f"boot {' and '.join(RUN)}"):
        results = [pool.result(n, None) for n in RUN]
    print(render(results, build_s))
    return 0 if all(r.ok for r in results) else 1


# make run-vhost: the nested bed's vhost-iommu scenario
VHOST_SCENARIO = "x86_64-nested-vhost-iommu"


def kernel_device(con) -> list[str]:
    """vhost-iommu's own counters and endpoints, from the L1 step's lines:
    the device's last look while QEMU ran, and the module's totals."""
    from .nested import DEVICE_LINES, TOTALS_LINES, kernel_device_lines

    st = con.steps.get("nested-l2")
    diags = st.diagnostics() if st else []
    dev: dict[str, str] = {}
    endpoints = []
    for key, val in kernel_device_lines(diags, DEVICE_LINES):
        if key == "endpoint":
            endpoints.append(val)
        else:
            dev[key] = val
    totals = dict(kernel_device_lines(diags, TOTALS_LINES))
    if not totals:
        return ["kernel:    no counters from the kernel device"]
    g = totals.get
    lines = [f"kernel:    served {g('attach')} ATTACH, {g('detach')} DETACH, "
             f"{g('map')} MAP, {g('unmap')} UNMAP, {g('probe')} PROBE, "
             f"{g('attach_table')} ATTACH_TABLE, {g('invalidate')} INVALIDATE; "
             f"{g('failed')} not OK, {g('unanswered')} unanswered",
             f"kernel:    {g('misses')} vhost-net misses ({g('miss_faults')} faulted), "
             f"{g('translates')} lookups for QEMU's emulated devices "
             f"({g('translate_faults')} failed)",
             f"kernel:    posted MAP {'on' if dev.get('posted_map') == '1' else 'off'}: "
             f"{g('fetches')} lookups served {g('fetched')} requests L2 had not notified"]
    if g("busy_polls", "0") != "0":
        lines.append(f"kernel:    busy loop (poll-us): {g('busy_poll_hits')} of "
                     f"{g('busy_polls')} looks at the emptied request queue found "
                     f"a request")
    lines += [f"endpoint:  {e}" for e in endpoints]
    return lines


def qemu_trace(con) -> list[str]:
    st = con.steps.get("nested-l2")
    return [f"qemu:      {d.split(': ', 1)[1]} (QEMU's trace: it served nothing itself)"
            for d in (st.diagnostics() if st else []) if d.startswith("qemu-trace:")]


def render_vhost(result, build_s: float) -> str:
    lines = [f"== {result.nested.name}: {result.nested.doc}"]
    lines += kernel_device(result.l1)
    lines += qemu_trace(result.l1)
    lines += driver_counters(result.l2)
    lines += result.summary().splitlines()[1:]
    lines.append(f"time:      build {build_s:.0f} s, nested boot {result.seconds:.0f} s "
                 f"({', '.join(f'L2 {k} after {v} s' for k, v in result.times.items())})")
    lines.append(f"console:   {result.log}")
    lines.append("verdict:   " + ("PASS" if result.ok else "FAIL"))
    return "\n".join(lines)


def main_vhost() -> int:
    from . import nested
    # L1 runs our QEMU; L1 and L2 both boot the x86_64 kernel
    build_s = build("x86_64")
    with step(f"boot {VHOST_SCENARIO}"):
        result = nested.run(VHOST_SCENARIO)
    print(render_vhost(result, build_s))
    return 0 if result.ok else 1
