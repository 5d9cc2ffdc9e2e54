# SPDX-License-Identifier: GPL-2.0
"""make run: build what is missing, boot the virtio-iommu guest, and report.

The report says which IOMMU the guest found, its domains and endpoints, what
DMA work went through it, which mode the virtio-iommu ran in (MAP/UNMAP or
page-table sharing, and each domain's), how many requests the device served
(from QEMU's trace of virtio-iommu: INVALIDATEs too), the faults, and how
long each part took. TB_RUN_SCENARIO boots another scenario than the
default (x86_64-virtio-iommu-pt for page-table sharing, which needs our
patched QEMU: make qemu).

make run-vhost does the same for vhost-iommu: it boots the nested bed's
x86_64-nested-vhost-iommu (an L1 guest running our kernel and QEMU, an L2
guest behind virtio-iommu-pci,vhost=on) and reports who served the
requests (the kernel device's counters, QEMU's trace), the endpoints and
their modes, and L2's driver's counters.
"""

from __future__ import annotations

import os
import re
import time

from . import boot, initramfs, kernel, qemu, qemu_build, tree
from .shell import step

SCENARIO = os.environ.get("TB_RUN_SCENARIO") or "x86_64-virtio-iommu"


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


def render(result: boot.Result, build_s: float) -> str:
    con = result.console
    info = con.steps.get("iommu-info")
    diags = info.diagnostics() if info else []
    events, domains, _ = boot.trace_counts(result.trace_log)
    lines = [f"== {result.scenario.summary}"]
    lines += [f"IOMMU:     {d.split(': ', 1)[1]}" for d in diags if d.startswith("iommu:")]
    lines += [f"group:     {d.split(': ', 1)[1]}" for d in diags if d.startswith("group:")]
    for dom in sorted(domains):
        eps = ", ".join(str(e) for e in sorted(domains[dom]))
        lines.append(f"domain {dom}:  endpoints {eps}")
    lines.append(f"requests:  {events['attach']} ATTACH, {events['detach']} DETACH, "
                 f"{events['map']} MAP, {events['unmap']} UNMAP, "
                 f"{events['attach_table']} ATTACH_TABLE, "
                 f"{events['invalidate']} INVALIDATE (QEMU trace)")
    lines.append(f"faults:    {events['report_fault']} reported by the device")
    lines += driver_counters(con)
    for name in result.scenario.steps:
        st = con.steps.get(name)
        if not st:
            lines.append(f"{name + ':':10} did not run")
            continue
        npass = sum(c.status == "pass" for c in st.cases)
        lines.append(f"{name + ':':10} {'ok' if st.ok else 'FAILED'} "
                     f"({npass}/{len(st.cases)} checks)")
    for c in result.host_checks:
        lines.append(f"host:      {c.status} {c.name}")
    lines += [f"problem:   {p}" for p in result.problems()]
    lines.append(f"time:      build {build_s:.0f} s, boot and tests {result.seconds:.0f} s")
    lines.append(f"console:   {result.log}")
    lines.append("verdict:   " + ("PASS" if result.ok else "FAIL"))
    return "\n".join(lines)


def build(target_name: str, patched_qemu: bool) -> float:
    """Assemble the tree, build the kernel @target_name, our QEMU if asked,
    and the guest image; the seconds it took."""
    t0 = time.monotonic()
    with step("tree"):
        tree.assemble()
    kernel.build(kernel.TARGETS[target_name])
    if patched_qemu:
        qemu_build.build()
    with step("guest image"):
        initramfs.base_image(target_name)
    return time.monotonic() - t0


def main() -> int:
    sc = boot.SCENARIOS[SCENARIO]
    build_s = build(sc.kernel, qemu.MACHINES[sc.machine].patched)
    with step(f"boot {SCENARIO}"):
        result = boot.run_scenario(SCENARIO)
    print(render(result, build_s))
    return 0 if result.ok else 1


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
    build_s = build("x86_64", True)
    with step(f"boot {VHOST_SCENARIO}"):
        result = nested.run(VHOST_SCENARIO)
    print(render_vhost(result, build_s))
    return 0 if result.ok else 1
