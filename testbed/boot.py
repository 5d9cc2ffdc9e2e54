# SPDX-License-Identifier: GPL-2.0
"""Boot one scenario: prepare its inputs, run QEMU with a hard timeout, judge the console."""

from __future__ import annotations

import atexit
import hashlib
import http.server
import json
import os
import random
import re
import subprocess
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from . import initramfs, paths, qemu
from .kernel import TARGETS
from .ktap import Case, Console, parse_console
from .scenarios import BENCH_SCENARIOS, FAULT_PATTERNS, RUN_SCENARIOS, SCENARIOS, Scenario
from .shell import StepError

DISK_READ_MB = 8
DISK_WRITE_MB = 4
# After those, a scratch area for blk-stress.sh's direct I/O
DISK_SCRATCH_MB = 16
NET_DOWN_MB = 4
NET_UP_MB = 1
# The first endpoint ID qemu/patches gives a virtio-mmio transport
PLATFORM_EP_MIN = 0x10000


@dataclass
class Result:
    scenario: Scenario
    console: Console
    log: Path
    seconds: float
    timed_out: bool
    host_checks: list[Case] = field(default_factory=list)
    trace_log: Path | None = None
    cpu_seconds: float = 0.0        # QEMU's user and system time

    def problems(self) -> list[str]:
        """Reasons the boot as a whole failed, beyond any step's own results."""
        out = []
        if self.timed_out:
            out.append(f"timed out after {self.scenario.timeout_s} s")
        if not self.console.booted:
            out.append("the guest never reached /init")
        elif not self.console.done:
            out.append("the guest did not finish its steps")
        out += [f"kernel report: {r}" for r in self.console.reports[:5]]
        out += [f"host check failed: {c.name}" for c in self.host_checks
                if c.status == "fail"]
        return out

    @property
    def ok(self) -> bool:
        steps = [self.console.steps.get(s) for s in self.scenario.steps]
        return not self.problems() and all(s and s.ok for s in steps)

    def summary(self) -> str:
        lines = [f"{self.scenario.name}: {'PASS' if self.ok else 'FAIL'} "
                 f"({self.seconds:.0f} s, {self.cpu_seconds:.0f} s of CPU, "
                 f"log {self.log})"]
        lines += step_lines(self.console, self.scenario.steps)
        for c in self.host_checks:
            lines.append(f"  host: {c.status:4} {c.name}")
        lines += [f"  problem: {p}" for p in self.problems()]
        return "\n".join(lines)


def step_lines(console: Console, names, prefix: str = "") -> list[str]:
    """A summary's lines for steps @names of @console: each step's verdict
    and its cases (@prefix before each step's name)."""
    lines = []
    for name in names:
        step = console.steps.get(name)
        if not step:
            lines.append(f"  {prefix}{name}: did not run")
            continue
        verdict = "ok" if step.ok else f"FAIL (exit {step.exit_status})"
        took = "" if step.centiseconds is None else f" ({step.centiseconds / 100:.1f} s)"
        lines.append(f"  {prefix}{name}: {verdict}{took}")
        for c in step.cases:
            lines.append(f"    {c.status:4} {c.name} {c.detail}".rstrip())
    return lines


class _Blobs(http.server.BaseHTTPRequestHandler):
    """GET /blob serves the download; POST /sink answers the body's SHA-256."""
    blob = b""
    received: list[str] = []

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.blob)))
        self.end_headers()
        self.wfile.write(self.blob)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        digest = hashlib.sha256(body).hexdigest()
        self.received.append(digest)
        self.send_response(200)
        self.send_header("Content-Length", str(len(digest)))
        self.end_headers()
        self.wfile.write(digest.encode())

    def log_message(self, *args):
        pass


def _pattern(seed: int, mb: int) -> bytes:
    return random.Random(seed).randbytes(mb << 20)


def run_scenario(name: str | Scenario) -> Result:
    """Boot a scenario, by name (SCENARIOS, BENCH_SCENARIOS, RUN_SCENARIOS)
    or as given."""
    known = {**BENCH_SCENARIOS, **RUN_SCENARIOS, **SCENARIOS}
    if isinstance(name, Scenario):
        sc = name
    elif name in known:
        sc = known[name]
    else:
        raise StepError(f"unknown scenario {name!r} (see `make scenarios`)")
    target = TARGETS[sc.kernel]
    if not target.image_path.exists():
        raise StepError(f"kernel {sc.kernel} is not built: make kernel-{sc.kernel}")
    machine = qemu.MACHINES[sc.machine]
    if not Path(qemu.executable(machine)).exists():
        full = " TB_FULL=1" if machine.qemu.endswith("aarch64") else ""
        raise StepError(f"{sc.name} needs our {machine.qemu}: make qemu{full}")
    work = paths.IMAGES / "scenarios" / sc.name
    work.mkdir(parents=True, exist_ok=True)
    log = paths.LOGS / f"{sc.name}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.unlink(missing_ok=True)

    env = {"TB_STEPS": " ".join(sc.steps), **sc.env}
    if sc.stalls:
        env["TB_VIOMMU_STALL"] = "1"
    if machine.has_iommu:
        env["TB_EXPECT_IOMMU"] = "1"
    if sc.fault:
        env["TB_FAULT_PATTERN"] = FAULT_PATTERNS[sc.fault]
    disk = None
    if "blk" in sc.devices:
        disk = work / "disk.img"
        data = _pattern(1, DISK_READ_MB)
        disk.write_bytes(data + bytes((DISK_WRITE_MB + DISK_SCRATCH_MB) << 20))
        env.update(TB_DISK_SHA256=hashlib.sha256(data).hexdigest(),
                   TB_DISK_READ_MB=str(DISK_READ_MB),
                   TB_DISK_WRITE_MB=str(DISK_WRITE_MB),
                   TB_DISK_SCRATCH_OFF_MB=str(DISK_READ_MB + DISK_WRITE_MB),
                   TB_DISK_SCRATCH_MB=str(DISK_SCRATCH_MB),
                   TB_DISK_SERIAL=qemu.DISK_SERIAL)
    server = None
    if "net" in sc.devices:
        handler = type("Blobs", (_Blobs,), {"blob": _pattern(2, NET_DOWN_MB),
                                            "received": []})
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        env.update(TB_HTTP_PORT=str(server.server_address[1]),
                   TB_NET_SHA256=hashlib.sha256(handler.blob).hexdigest(),
                   TB_NET_DOWN_MB=str(NET_DOWN_MB), TB_NET_UP_MB=str(NET_UP_MB))

    base = paths.IMAGES / target.name / "base.cpio"
    if not base.exists():
        initramfs.base_image(target.name)
    initrd = initramfs.scenario_image(base, env, work / "initrd.cpio")
    trace_log = paths.LOGS / f"{sc.name}.trace"
    trace_log.unlink(missing_ok=True)
    guest = qemu.Guest(kernel=target.image_path, initrd=initrd, append=kernel_append(sc),
                       console_log=log, devices=sc.devices, disk=disk,
                       transport=sc.transport, trace=sc.trace, trace_log=trace_log,
                       trace_times=sc.trace_times)
    cmd = qemu.command(machine, guest)
    (work / "qemu-cmdline").write_text(" ".join(cmd) + "\n")

    seconds, timed_out = run_qemu(cmd, work, sc.timeout_s)
    cpu_seconds = last_cpu_seconds()
    record_cost(sc.name, seconds)
    if server:
        server.shutdown()
    text = log.read_text(errors="replace") if log.exists() else ""
    qemu_err = (work / "qemu.out").read_text(errors="replace")
    if qemu_err.strip():
        text += "\n# qemu: " + qemu_err.replace("\n", "\n# qemu: ")
        log.write_text(text)
    console = parse_console(text)
    result = Result(sc, console, log, seconds, timed_out,
                    trace_log=trace_log if trace_log.exists() else None,
                    cpu_seconds=cpu_seconds)
    if disk:
        result.host_checks.append(_disk_check(disk, console))
    if sc.transport == "mmio" and machine.has_iommu:
        result.host_checks.append(_platform_endpoint_check(result.trace_log, sc))
    if "mmio-msi" in sc.steps and sc.env.get("TB_MMIO_MSI") == "1":
        result.host_checks += mmio_msi_checks(result.trace_log)
    if sc.stalls:
        result.host_checks.append(stall_check(result.trace_log))
    return result


def stall_check(trace: Path | None) -> Case:
    """The device stopped its request queue once and served it again."""
    text = trace.read_text(errors="replace") if trace else ""
    stalls = len(re.findall(r"\bvirtio_iommu_stall\b", text))
    ends = len(re.findall(r"\bvirtio_iommu_stall_end\b", text))
    return Case("the request queue stopped once and was served again (QEMU trace)",
                "pass" if stalls == 1 and ends == 1 else "fail",
                f"{stalls} stalls, {ends} ends")


# The CPU time (user and system) of the last run_qemu() of each thread
_cpu = threading.local()
# QEMUs running now: killed if the test bed exits first (a boot pool's
# threads are daemons, and nothing else would stop their guests)
_running: set[subprocess.Popen] = set()


@atexit.register
def _kill_running() -> None:
    for proc in list(_running):
        proc.kill()


def run_qemu(cmd: list[str], work: Path, timeout_s: int) -> tuple[float, bool]:
    """Run QEMU, its output in @work/qemu.out, killed after @timeout_s:
    the seconds it ran, and whether it was killed. last_cpu_seconds()
    then gives the CPU time it used (its vCPU threads and its own)."""
    t0 = time.monotonic()
    timed_out = False
    _cpu.seconds = 0.0
    with open(work / "qemu.out", "wb") as out:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=subprocess.STDOUT)
        _running.add(proc)
        try:
            while True:
                pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
                if pid:
                    break
                if not timed_out and time.monotonic() - t0 > timeout_s:
                    timed_out = True
                    proc.kill()
                time.sleep(0.05)
        except BaseException:
            proc.kill()
            proc.wait()
            raise
        finally:
            _running.discard(proc)
        proc.returncode = os.waitstatus_to_exitcode(status)
    _cpu.seconds = usage.ru_utime + usage.ru_stime
    return time.monotonic() - t0, timed_out


def last_cpu_seconds() -> float:
    """The CPU time of this thread's last run_qemu()."""
    return getattr(_cpu, "seconds", 0.0)


def record_cost(name: str, seconds: float) -> None:
    """Write build/logs/<name>.cost: the boot's wall and CPU seconds, which
    testbed/budgets.py's table is made from (python3 -m testbed costs)."""
    paths.LOGS.mkdir(parents=True, exist_ok=True)
    (paths.LOGS / f"{name}.cost").write_text(
        json.dumps({"seconds": round(seconds, 1),
                    "cpu_seconds": round(last_cpu_seconds(), 1)}) + "\n")


def kernel_append(sc: Scenario) -> str:
    """The scenario's command line; a kernel with KUnit suites built in
    (configs/kunit.config, arm64-kunit.config; off by default) runs them
    only where the scenario has the kunit step to report them."""
    append = sc.append
    kunit = any(f.endswith("kunit.config") for f in TARGETS[sc.kernel].fragments)
    if kunit and "kunit" in sc.steps:
        append = f"{append} kunit.enable=1".strip()
    return append


def _disk_check(disk: Path, console: Console) -> Case:
    """The disk image holds exactly what the guest said it wrote."""
    name = "disk image holds the data the guest wrote"
    step = console.steps.get("blk")
    want = None
    for d in step.diagnostics() if step else []:
        if d.startswith("disk-write-sha256 "):
            want = d.split()[1]
    if not want:
        return Case(name, "fail", "the guest did not report its write")
    with open(disk, "rb") as f:
        f.seek(DISK_READ_MB << 20)
        got = hashlib.sha256(f.read(DISK_WRITE_MB << 20)).hexdigest()
    return Case(name, "pass" if got == want else "fail")


def trace_counts(trace: Path | None) -> tuple[Counter, dict[int, set[int]], Counter]:
    """From QEMU's virtio-iommu trace: events per type, the endpoints
    attached to each domain, and the MAPs into each domain."""
    events: Counter = Counter()
    domains: dict[int, set[int]] = {}
    maps: Counter = Counter()
    for line in trace.read_text(errors="replace").splitlines() if trace else []:
        m = re.search(r"virtio_iommu_(\w+)\s*(.*)", line)
        if not m:
            continue
        name, args = m.group(1), m.group(2)
        events[name] += 1
        fields = dict(kv.split("=", 1) for kv in args.split() if "=" in kv)
        if name == "attach":
            domains.setdefault(int(fields["domain"]), set()).add(int(fields["endpoint"]))
        elif name == "map":
            maps[int(fields["domain"])] += 1
    return events, domains, maps


def mmio_msi_counts(trace: Path | None) -> Counter:
    """From QEMU's virtio-mmio trace: MSI writes ("msi"), and raisings of
    the wired line ("irq") and reads of InterruptStatus ("status_read")
    before the last MSI write and after it ("irq_after", ...)."""
    events = []
    for line in trace.read_text(errors="replace").splitlines() if trace else []:
        if "virtio_mmio_msi " in line:
            events.append("msi")
        elif re.search(r"virtio_mmio_setting_irq .*IRQ 1\b", line):
            events.append("irq")
        elif re.search(r"virtio_mmio_read offset 0x60\b", line):
            events.append("status_read")
    last = max((i for i, e in enumerate(events) if e == "msi"), default=-1)
    counts: Counter = Counter(events[:last + 1])
    counts.update(f"{e}_after" for e in events[last + 1:])
    return counts


def mmio_msi_checks(trace: Path | None) -> list[Case]:
    """While the transports signalled by MSI (up to the last MSI write; the
    guest's last phase falls back to the wired interrupt on purpose), the
    wired line never rose and no interrupt was acknowledged by register."""
    c = mmio_msi_counts(trace)
    detail = (f"{c['msi']} MSIs, then {c['irq']} wired raises and "
              f"{c['status_read']} status reads before the last of them, "
              f"{c['irq_after']} and {c['status_read_after']} after")
    return [Case("virtio-mmio devices sent MSIs (QEMU trace)",
                 "pass" if c["msi"] > 0 else "fail", detail),
            Case("no wired interrupt raised while MSI was on (QEMU trace)",
                 "pass" if c["msi"] and c["irq"] == 0 else "fail", detail),
            Case("InterruptStatus not read while MSI was on (QEMU trace)",
                 "pass" if c["msi"] and c["status_read"] == 0 else "fail", detail)]


def _platform_endpoint_check(trace: Path | None, sc: Scenario) -> Case:
    """QEMU's virtio-iommu served MAPs in the domains of platform endpoints
    (IDs from 0x10000: the virtio-mmio transports), one per virtio device
    the scenario put there."""
    want = sum(d in ("blk", "net") for d in sc.devices)
    name = f"MAPs reached the domains of {want} virtio-mmio endpoints (QEMU trace)"
    _, domains, maps = trace_counts(trace)
    got = {ep for dom, eps in domains.items() if maps[dom]
           for ep in eps if ep >= PLATFORM_EP_MIN}
    detail = f"endpoints {sorted(hex(e) for e in got)}"
    return Case(name, "pass" if len(got) >= want else "fail", detail)
