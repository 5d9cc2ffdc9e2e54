# SPDX-License-Identifier: GPL-2.0
"""Unit tests of the test bed itself, over recorded consoles and small inputs."""

import struct
import types
from pathlib import Path

import pytest

from testbed import cpio, fdt, ktap
from testbed.patchfile import parse
from testbed.qemu import MACHINES, Guest, command, host_tsc_khz

DATA = Path(__file__).parent / "data"


def test_console_all_steps_pass():
    con = ktap.parse_console((DATA / "console-virtio-iommu-pass.log").read_text())
    assert con.booted and con.done and not con.reports
    assert list(con.steps) == ["iommu-info", "blk", "net", "vfio-edu"]
    assert all(s.ok for s in con.steps.values())
    edu = con.steps["vfio-edu"]
    assert [c.name for c in edu.cases][:2] == ["edu.identify", "edu.dma_round_trip"]
    assert any(d.startswith("disk-write-sha256 ") for d in con.steps["blk"].diagnostics())


def test_console_step_time_is_read_when_given():
    con = ktap.parse_console("TB-BOOTED 6.12\nTB-BEGIN blk\nok 1 disk\n1..1\n"
                             "TB-END blk 0 1234\nTB-BEGIN net\nok 1 up\n1..1\n"
                             "TB-END net 0\nTB-DONE\n")
    assert con.steps["blk"].ok and con.steps["blk"].centiseconds == 1234
    assert con.steps["net"].ok and con.steps["net"].centiseconds is None


def test_console_failure_and_missing_end_are_seen():
    con = ktap.parse_console((DATA / "console-edu-fails-no-done.log").read_text())
    assert not con.done
    edu = con.steps["vfio-edu"]
    assert not edu.ok and edu.exit_status == 1
    assert [c.name for c in edu.cases if c.status == "fail"] == [
        "edu.write_after_unmap_does_not_reach_memory"]


def test_failed_case_keeps_what_it_said():
    """A failed case carries the kselftest lines before its result, so CI says why."""
    con = ktap.parse_console(
        "TB-BEGIN iommu\n#  RUN           v.a ...\n#            OK  v.a\nok 1 v.a\n"
        "#  RUN           v.b ...\n# t.c:548:b:Expected 16 (16) <= skipped (3)\n"
        "# b: Test failed\nnot ok 2 v.b\n1..2\nTB-END iommu 1\n")
    a, b = con.steps["iommu"].cases
    assert a.status == "pass" and a.detail == ""
    assert b.status == "fail" and "Expected 16 (16) <= skipped (3)" in b.detail
    assert "v.a" not in b.detail
    assert con.steps["iommu"].failures() == [f"v.b ({b.detail})"]
    # a step's trailing lines stay out of the next step's first case
    con = ktap.parse_console("TB-BEGIN one\nok 1 x\n# PASSED: 1 / 1\nTB-END one 0\n"
                             "TB-BEGIN two\nnot ok 1 y\nTB-END two 1\n")
    assert con.steps["two"].failures() == ["y"]


def test_console_kernel_warning_and_skip():
    con = ktap.parse_console((DATA / "console-warn.log").read_text())
    assert len(con.reports) == 1 and "WARNING: CPU" in con.reports[0]
    blk = con.steps["blk"]
    assert [c.status for c in blk.cases] == ["pass", "skip"]
    assert blk.ok and not blk.skipped


@pytest.mark.parametrize("line,status,name", [
    ("ok 1 foo", "pass", "foo"),
    ("not ok 12 - bar baz", "fail", "bar baz"),
    ("ok 3 qux # SKIP no device", "skip", "qux"),
    ("not ok 4 quux # TODO later", "pass", "quux"),
])
def test_tap_result_lines(line, status, name):
    case = ktap.parse_result(line)
    assert case and case.status == status and case.name == name


def test_cpio_newc_layout():
    arc = cpio.Archive()
    arc.file("bin/x", b"abc", 0o755)
    arc.chardev("dev/console", 5, 1)
    data = arc.bytes()
    assert data.startswith(b"070701")
    assert data.rstrip(b"\0").endswith(b"TRAILER!!!")
    assert len(data) % 4 == 0
    assert b"bin\0" in data and b"bin/x\0" in data and b"abc" in data


def _tiny_fdt() -> bytes:
    """A root node with an empty dma-coherent and a 4-byte property."""
    strings = b"dma-coherent\0reg\0"
    body = struct.pack(">I", fdt.FDT_BEGIN_NODE) + b"\0\0\0\0"
    body += struct.pack(">III", fdt.FDT_PROP, 0, 0)
    body += struct.pack(">III", fdt.FDT_PROP, 4, 13) + b"\x12\x34\x56\x78"
    body += struct.pack(">II", fdt.FDT_END_NODE, fdt.FDT_END)
    off_struct = 56                 # after the header and an empty reserve map
    off_strings = off_struct + len(body)
    total = off_strings + len(strings)
    head = struct.pack(">IIIIIIIIII", fdt.FDT_MAGIC, total, off_struct,
                       off_strings, 40, 17, 16, 0, len(strings), len(body))
    return head + bytes(16) + body + strings


def test_fdt_drop_turns_the_property_into_nops():
    blob = _tiny_fdt()
    out, dropped = fdt.drop_properties(blob, ("dma-coherent",))
    assert dropped == 1 and len(out) == len(blob)
    nops = struct.pack(">I", fdt.FDT_NOP) * 3
    assert out[64:76] == nops and out[76:92] == blob[76:92]
    assert fdt.drop_properties(out, ("dma-coherent",)) == (out, 0)
    # a blob with room after its strings comes back cut to them
    roomy = bytearray(blob + bytes(64))
    roomy[4:8] = struct.pack(">I", len(roomy))
    assert fdt.drop_properties(bytes(roomy), ("dma-coherent",)) == (out, 1)
    with pytest.raises(ValueError):
        fdt.drop_properties(b"\0" * 40, ("reg",))


def test_patch_file_round_trip():
    text = ("From: A Developer <a@example.org>\nDate: Mon, 1 Jan 2024 00:00:00 +0000\n"
            "Subject: [PATCH] x: do y\n\nBecause z.\n\nSigned-off-by: A <a@example.org>\n"
            "---\nOverlay: drivers/x/y.c\n a | 1 +\n\ndiff --git a/a b/a\n--- a/a\n+++ b/a\n")
    pf = parse(text)
    assert pf.subject == "x: do y" and pf.overlay == ["drivers/x/y.c"]
    assert pf.diff.startswith("diff --git")
    again = parse(pf.render())
    assert (again.subject, again.overlay, again.diff) == (pf.subject, pf.overlay, pf.diff)


def test_patch_file_rejects_missing_separator():
    with pytest.raises(ValueError):
        parse("From: a <a@b>\nSubject: x\n\nno separator\n")


def test_qemu_command_puts_iommu_first_and_virtio_behind_it(tmp_path):
    g = Guest(kernel=tmp_path / "k", initrd=tmp_path / "i", append="",
              console_log=tmp_path / "log", devices=("blk", "edu"),
              disk=tmp_path / "d")
    cmd = command(MACHINES["q35-virtio-iommu"], g)
    devs = [cmd[i + 1] for i, a in enumerate(cmd) if a == "-device"]
    assert devs[0] == "virtio-iommu-pci"
    assert "iommu_platform=on" in devs[1] and devs[2] == "edu,dma-delay-ms=1"
    assert "-accel" in cmd and cmd[cmd.index("-accel") + 1] == "tcg"
    plain = command(MACHINES["q35"], g)
    assert not any("iommu_platform" in a for a in plain)


def test_every_machine_boots_our_qemu_with_debians_firmware(tmp_path, monkeypatch):
    """One QEMU for the test bed: our build, whatever the machine."""
    g = Guest(kernel=tmp_path / "k", initrd=tmp_path / "i", append="",
              console_log=tmp_path / "log")
    from testbed import qemu, qemu_build

    # A machine with no_dt_props runs its command once to dump QEMU's tree
    # (-machine ...,dumpdtb=): the same QEMU, whose dump is kept here
    dumps = []
    monkeypatch.setattr(qemu.subprocess, "run",
                        lambda cmd, **kw: dumps.append(cmd))
    monkeypatch.setattr(qemu.fdt, "drop_properties", lambda blob, names: (blob, 1))
    (tmp_path / "log.dtb").write_bytes(b"")
    for m in MACHINES.values():
        cmd = command(m, g)
        assert cmd[0] == str(qemu_build.binary(m.qemu)), m.name
        assert cmd[0].startswith(str(qemu_build.OBJ)), m.name
        ls = [cmd[i + 1] for i, a in enumerate(cmd) if a == "-L"]
        assert ls == list(qemu_build.FIRMWARE), m.name
        if m.no_dt_props:
            dump = dumps.pop()
            assert dump[0] == cmd[0], m.name
            assert f"dumpdtb={tmp_path / 'log.dtb'}" in dump[dump.index("-machine") + 1]
            assert cmd[cmd.index("-dtb") + 1] == str(tmp_path / "log.dtb"), m.name
    assert not dumps


def test_q35_and_virt_iommus_keep_qemu_7_2_defaults(tmp_path):
    """QEMU 10.0's machine types changed what the IOMMUs offer the guest:
    the machines set 7.2's values, and only where that IOMMU is."""
    g = Guest(kernel=tmp_path / "k", initrd=tmp_path / "i", append="",
              console_log=tmp_path / "log")

    def globals_of(name):
        cmd = command(MACHINES[name], g)
        return [cmd[i + 1] for i, a in enumerate(cmd) if a == "-global"]

    for name in ("q35-virtio-iommu", "q35-virtio-iommu-pt", "virt-virtio-iommu",
                 "virt-virtio-iommu-pt"):
        assert "virtio-iommu-pci.aw-bits=64" in globals_of(name), name
    assert "intel-iommu.aw-bits=39" in globals_of("q35-intel-iommu")
    assert globals_of("q35-intel-iommu") == ["intel-iommu.aw-bits=39"]
    # microvm's default is 7.2's; no IOMMU, no setting (an unused
    # intel-iommu global would make QEMU warn)
    for name in ("microvm-virtio-iommu-64k", "q35", "q35-amd-iommu", "virt-smmuv3"):
        assert globals_of(name) == [], name
    # The packed rings' setting stays beside them
    assert globals_of("q35-virtio-iommu-pt-invalmap") == [
        "virtio-iommu-pci.aw-bits=64", "virtio-net-pci.packed=on"]


def test_qemu_command_puts_virtio_on_mmio_behind_the_iommu(tmp_path):
    g = Guest(kernel=tmp_path / "k", initrd=tmp_path / "i", append="",
              console_log=tmp_path / "log", devices=("blk", "net", "edu"),
              disk=tmp_path / "d", transport="mmio")
    m = MACHINES["virt-virtio-iommu-mmio"]
    cmd = command(m, g)
    assert cmd[0].endswith("build/qemu/obj/qemu-system-aarch64")
    assert "virtio-mmio-iommu=on" in cmd[cmd.index("-machine") + 1]
    assert "virtio-mmio.force-legacy=false" in cmd
    devs = [cmd[i + 1] for i, a in enumerate(cmd) if a == "-device"]
    assert devs[0] == "virtio-iommu-pci,x-stall-request=200"
    assert devs[1] == "virtio-blk-device,drive=disk0,serial=tb-disk0,iommu_platform=on"
    assert devs[2] == "virtio-net-device,netdev=net0,iommu_platform=on"
    assert devs[3] == "edu,dma-delay-ms=1"     # our build: 1 ms a DMA (0050)


def test_qemu_command_puts_x86_virtio_on_mmio_behind_the_iommu(tmp_path):
    g = Guest(kernel=tmp_path / "k", initrd=tmp_path / "i", append="",
              console_log=tmp_path / "log", devices=("blk", "net", "edu"),
              disk=tmp_path / "d", transport="mmio")
    m = MACHINES["microvm-virtio-iommu-mmio"]
    cmd = command(m, g)
    assert cmd[0].endswith("build/qemu/obj/qemu-system-x86_64")
    # microvm's firmware is Debian's, not in our build tree
    assert cmd[cmd.index("-L") + 1] == "/usr/share/qemu"
    # microvm has PCIe (where the virtio-iommu sits) only with ACPI, which
    # also carries the VIOT table
    opts = cmd[cmd.index("-machine") + 1].split(",")
    assert opts[0] == "microvm"
    assert {"acpi=on", "pcie=on", "virtio-mmio-iommu=on"} <= set(opts)
    # and the transports offer MSI (qemu/patches 0026)
    assert "virtio-mmio-msi=on" in opts
    assert "virtio-mmio.force-legacy=false" in cmd
    append = cmd[cmd.index("-append") + 1]
    assert "console=ttyS0" in append
    # No HPET or PM timer on microvm: the guest is told the TSC frequency
    # (TCG's TSC is the host's), on x86 hosts, which report it
    khz = host_tsc_khz()
    assert (f"tsc_early_khz={khz}" in append.split()) == bool(khz)
    devs = [cmd[i + 1] for i, a in enumerate(cmd) if a == "-device"]
    assert devs == ["virtio-iommu-pci,x-stall-request=200",
                    "virtio-blk-device,drive=disk0,serial=tb-disk0,iommu_platform=on",
                    "virtio-net-device,netdev=net0,iommu_platform=on", "edu,dma-delay-ms=1"]
    # Other machines are not told
    q35 = command(MACHINES["q35-virtio-iommu"], g)
    assert "tsc_early_khz" not in q35[q35.index("-append") + 1]


def test_platform_endpoint_check_reads_the_trace(tmp_path):
    from testbed.boot import _platform_endpoint_check
    from testbed.scenarios import SCENARIOS
    sc = SCENARIOS["arm64-virtio-iommu-mmio"]
    trace = tmp_path / "t"
    trace.write_text("virtio_iommu_attach domain=1 endpoint=65536\n"
                     "virtio_iommu_attach domain=2 endpoint=65537\n"
                     "virtio_iommu_attach domain=3 endpoint=8\n"
                     "virtio_iommu_map domain=1 virt_start=0x0 virt_end=0xfff "
                     "phys_start=0x0 flags=3\n"
                     "virtio_iommu_map domain=3 virt_start=0x0 virt_end=0xfff "
                     "phys_start=0x0 flags=3\n")
    assert _platform_endpoint_check(trace, sc).status == "fail"
    with trace.open("a") as f:
        f.write("virtio_iommu_map domain=2 virt_start=0x0 virt_end=0xfff "
                "phys_start=0x0 flags=3\n")
    assert _platform_endpoint_check(trace, sc).status == "pass"
    assert _platform_endpoint_check(None, sc).status == "fail"


@pytest.mark.parametrize("line,report", [
    ("DMA-API: preallocated 65536 debug entries", False),
    ("DMA-API: debugging enabled by kernel config", False),
    ("DMA-API: virtio-pci 0000:00:02.0: device driver tries to free DMA memory", True),
    ("BUG: KASAN: slab-use-after-free in viommu_map_pages+0x1/0x2", True),
    ("WARNING: possible circular locking dependency detected", True),
    ("virtio_iommu virtio0: page fault from EP 32 at 0x4000000 []", False),
])
def test_kernel_reports(line, report):
    assert bool(ktap.KERNEL_REPORTS.search(line)) == report


def test_bench_lines_parse():
    from testbed import bench
    text = ("    # gpt_bench_armv8_s1: # bench: armv8_s1_4k map 1x4K new_min=19 "
            "new_med=20 old_min=16 old_med=40\n"
            "    # gpt_bench_vtdss: # bench: vtdss_4lvl unmap 1x1G new_min=5 "
            "new_med=6 old_min=-1 old_med=-1\n")
    rows = bench.parse(text)
    assert rows[0] == {"format": "armv8_s1_4k", "op": "map", "case": "1x4K",
                       "new_ns": 20, "old_ns": 40, "new_min_ns": 19,
                       "old_min_ns": 16}
    assert rows[1]["old_ns"] is None and bench.ratio(rows[1]) == "-"
    assert bench.ratio(rows[0]) == "2.00x"


def test_report_reads_the_driver_counters():
    from testbed import report

    text = "\n".join([
        "TB-BOOTED 6.12", "TB-BEGIN viommu-stats", "TAP version 13",
        "# viommu: virtio0 attach 3", "# viommu: virtio0 map 40",
        "# viommu: virtio0 unmap 38", "# viommu: virtio0 kicks 20",
        "# viommu: virtio0 kicked_requests 81", "# viommu: virtio0 faults 3",
        "# viommu: virtio0 faults_reported 3",
        "# viommu: virtio0 domain 1 type=dma-lazy endpoints=1 maps=40",
        "ok 1 counters", "1..1", "TB-END viommu-stats 0", "TB-DONE", ""])
    lines = report.driver_counters(ktap.parse_console(text))
    assert any("40 MAP, 38 UNMAP" in ln for ln in lines)
    assert any("20 kicks, 4.05 requests per kick" in ln for ln in lines)
    assert any("3 faults, 3 reported to the IOMMU core" in ln for ln in lines)
    assert lines[-1].endswith("virtio0 domain 1 type=dma-lazy endpoints=1 maps=40")


def test_make_run_boots_one_workload_in_both_modes():
    """make run's two boots differ in the device's mode alone, on our QEMU."""
    from testbed import qemu
    from testbed.scenarios import RUN_SCENARIOS

    mapu, table = (RUN_SCENARIOS[n] for n in ("x86_64-run-map-unmap",
                                               "x86_64-run-page-table"))
    assert mapu.steps == table.steps and mapu.devices == table.devices
    assert mapu.append == table.append and mapu.trace == table.trace
    assert {k: v for k, v in table.env.items() if not k.startswith("TB_VIOMMU_MODE")
            and k != "TB_VIOMMU_FORMAT"} == mapu.env
    assert "attach-table=on" in qemu.MACHINES[table.machine].iommu_device
    assert "attach-table" not in qemu.MACHINES[mapu.machine].iommu_device


def test_make_run_report_sets_the_modes_side_by_side(tmp_path):
    from testbed import boot, report
    from testbed.scenarios import RUN_SCENARIOS

    def result(name: str, mode: str, counts: dict, trace: str):
        text = "\n".join(["TB-BOOTED 6.12", "TB-BEGIN viommu-stats", "TAP version 13",
                          f"# viommu: virtio0 mode {mode}",
                          *(f"# viommu: virtio0 {k} {v}" for k, v in counts.items()),
                          "ok 1 counters", "1..1", "TB-END viommu-stats 0",
                          "TB-DONE", ""])
        log = tmp_path / f"{name}.trace"
        log.write_text(trace)
        return boot.Result(RUN_SCENARIOS[name], ktap.parse_console(text),
                           tmp_path / f"{name}.log", 60.0, False, trace_log=log)

    mapu = result("x86_64-run-map-unmap", "map-unmap",
                  {"dma_maps": 2000, "map": 2000, "unmap": 1990, "kicks": 3000},
                  "virtio_iommu_map domain=1\n" * 3 + "virtio_iommu_unmap domain=1\n")
    table = result("x86_64-run-page-table", "page-table",
                   {"dma_maps": 1000, "invalidate": 40, "kicks": 50},
                   "virtio_iommu_attach_table domain=1\n" +
                   "virtio_iommu_invalidate domain=1\n" * 40)
    text = report.render([mapu, table], 1.0)
    rows = {ln.split("  ")[0]: ln for ln in text.splitlines()}
    per_map = rows["MAP+UNMAP+INVALIDATE per 1,000 maps"]
    assert per_map.split()[-3:] == ["1995", "|", "40"]
    assert rows["kicks (device notified) per 1,000 maps"].split()[-3:] == \
        ["1500", "|", "50"]
    assert rows["MAP requests served by the device"].split()[-3:] == ["3", "|", "0"]
    assert rows["INVALIDATE requests served"].split()[-3:] == ["0", "|", "40"]
    assert "page-table" in rows["mode the guest driver runs in"]
    # The steps that did not run say so, and the verdict follows them
    assert "did not run" in text and text.endswith("verdict:   FAIL")


def test_bench_viommu_counts():
    """make bench-viommu: QEMU's trace and the driver's counters, per benchmark window."""
    from testbed import bench
    from testbed.scenarios import BENCH_SCENARIOS, SCENARIOS

    trace = "\n".join([
        "virtio_queue_notify vdev 0x1 n 1 vq 0x2",          # event buffers
        "virtio_queue_notify vdev 0x1 n 0 vq 0x3",
        "virtio_iommu_attach domain=0 endpoint=8",          # boot: not counted
        "virtio_queue_notify vdev 0x1 n 0 vq 0x3",
        "virtio_iommu_attach domain=1 endpoint=16",         # the benchmark device
        "virtio_queue_notify vdev 0x1 n 0 vq 0x3",          # window opens
        "virtio_iommu_map domain=1 virt_start=0xfffff000 virt_end=0xffffffff "
        "phys_start=0x1000 flags=3",
        "virtio_iommu_map domain=1 virt_start=0xffffe000 virt_end=0xffffefff "
        "phys_start=0x2000 flags=3",
        "virtio_queue_notify vdev 0x1 n 0 vq 0x3",
        "virtio_iommu_unmap domain=1 virt_start=0xfffff000 virt_end=0xffffffff",
        "virtio_iommu_unmap domain=1 virt_start=0xffffe000 virt_end=0xffffefff",
        ""])
    assert bench.trace_counts(trace, 16) == {"pairs": 2, "requests": 4, "kicks": 2}
    with pytest.raises(Exception):
        bench.trace_counts(trace, 24)
    diags = ["viommu-before: map 1", "viommu-before: kicks 5", "viommu-before: attach 1",
             "viommu-after: map 3", "viommu-after: unmap 2", "viommu-after: attach 1",
             "viommu-after: kicks 8", "viommu-after: domain 1 type=dma-strict maps=2"]
    assert bench.driver_counts(diags) == {"requests": 4, "kicks": 3, "invalidates": 0,
                                          "maps": 2, "pairs": 0, "notify_ns": 0,
                                          "answer_wait_ns": 0}
    timed = diags + ["viommu-before: notify_ns 1000", "viommu-after: notify_ns 4000",
                     "viommu-after: answer_wait_ns 700"]
    assert (bench.driver_counts(timed)["notify_ns"],
            bench.driver_counts(timed)["answer_wait_ns"]) == (3000, 700)
    assert bench.per_1k(3, 2) == 1500.0
    # Page-table mode: pairs are the driver's map_pages() calls, requests
    # its INVALIDATEs; a MAP request there is an error, not a row
    pt = ["viommu-before: dma_maps 10", "viommu-before: invalidate 4",
          "viommu-before: kicks 4", "viommu-after: dma_maps 2010",
          "viommu-after: invalidate 1004", "viommu-after: kicks 1004",
          "viommu-after: map 0"]
    row = bench.counted_by_driver({}, "x", pt, Path("log"), table=True)
    assert (row["requests_per_1k_maps"], row["kicks_per_1k_maps"],
            row["invalidates_per_1k_maps"], row["pairs"]) == (500.0, 500.0, 500.0, 2000)
    with pytest.raises(Exception):
        bench.counted_by_driver({}, "x", pt + ["viommu-after: map 1"], Path("log"),
                                table=True)
    # MAP/UNMAP mode: the same counts, MAPs allowed, no INVALIDATE column
    mu = ["viommu-before: dma_maps 10", "viommu-after: dma_maps 1010",
          "viommu-after: map 1000", "viommu-after: unmap 1000", "viommu-after: kicks 1500"]
    row = bench.counted_by_driver({}, "x", mu, Path("log"))
    assert (row["requests_per_1k_maps"], row["kicks_per_1k_maps"], row["pairs"]) == \
        (2000.0, 1500.0, 1000)
    assert "invalidates_per_1k_maps" not in row
    # Every timed boot runs untraced (each traced line costs its row time);
    # the counted rows have a traced boot of the same kernel, machine and
    # command line beside, and only those rows
    from testbed.scenarios import BENCH_COUNT_SCENARIOS, BENCH_ROW_SCENARIOS, BENCH_ROWS
    for key, sc in BENCH_ROW_SCENARIOS.items():
        assert not sc.trace, key
    assert {d for d, _ in BENCH_COUNT_SCENARIOS} == {"6.12", "ours"}
    for key, cnt in BENCH_COUNT_SCENARIOS.items():
        timed = BENCH_ROW_SCENARIOS[key]
        assert (cnt.kernel, cnt.machine, cnt.append, cnt.env) == \
            (timed.kernel, timed.machine, timed.append, timed.env)
        assert {"virtio_queue_notify", "virtio_iommu_map", "virtio_iommu_attach"} <= \
            set(cnt.trace)
    # Each counted row's counting boot right after its timed one
    runs = bench.with_counting_boots([(k, BENCH_ROW_SCENARIOS[k]) for k in BENCH_ROWS],
                                     BENCH_COUNT_SCENARIOS)
    assert len(runs) == len(BENCH_ROWS) + len(BENCH_COUNT_SCENARIOS)
    for i, (key, sc) in enumerate(runs):
        if bench.is_counting(key):
            assert runs[i - 1][0] == key[0] and sc is BENCH_COUNT_SCENARIOS[key[0]]
    # 6.12's counts come from its counting boots; ours keep the driver's
    # and get QEMU's beside them
    counted = bench.median_row(
        [{"driver": "6.12", "mode": "strict", "pairs": p, "requests_per_1k_maps": 2000.0,
          "kicks_per_1k_maps": k} for p, k in ((900, 2000.0), (1000, 1999.0), (800, 2001.0))],
        bench.VIOMMU_MEDIANS)
    row = {"driver": "6.12", "mode": "strict", "requests_per_1k_maps": 0.0,
           "kicks_per_1k_maps": 0.0}
    bench.add_counts(row, counted)
    assert row == {"driver": "6.12", "mode": "strict", "requests_per_1k_maps": 2000.0,
                   "kicks_per_1k_maps": 2000.0,
                   "kicks_per_1k_maps_runs": [2000.0, 1999.0, 2001.0],
                   "pairs_counted": 900, "counted_by": "qemu-trace"}
    # A 6.12 row whose counting boots failed shows no counts, not zeros
    lone = {"driver": "6.12", "mode": "lazy", "map_ns": 900, "unmap_ns": 800}
    assert " 0.0 " not in bench.viommu_table([lone]).splitlines()[1]
    row = {"driver": "ours", "mode": "strict", "requests_per_1k_maps": 1500.0,
           "kicks_per_1k_maps": 1000.0, "counted_by": "driver"}
    bench.add_counts(row, counted)
    assert (row["requests_per_1k_maps"], row["qemu_requests_per_1k_maps"],
            row["counted_by"]) == (1500.0, 2000.0, "driver")
    for mode in ("strict", "lazy"):
        on = BENCH_SCENARIOS[f"bench-viommu-ours-pt-{mode}"]
        off = BENCH_SCENARIOS[f"bench-viommu-ours-pt-map-{mode}"]
        assert (on.kernel, on.machine) == (off.kernel, off.machine)
        assert off.append == on.append + " virtio_iommu.map_unmap=1"
    # The benchmark boots are not make check's: they need the x86_64-stock kernel.
    assert not set(BENCH_SCENARIOS) & set(SCENARIOS)
    # The combined rows boot our kernel with kick combining on, and only that;
    # the default rows leave it at the driver's default (off)
    for mode in ("strict", "lazy"):
        ours = BENCH_SCENARIOS[f"bench-viommu-ours-{mode}"]
        on = BENCH_SCENARIOS[f"bench-viommu-ours-combined-{mode}"]
        assert (on.kernel, on.machine, on.env) == (ours.kernel, ours.machine, ours.env)
        assert on.append == ours.append + " virtio_iommu.combine_wait=200"
        assert "combine_wait" not in ours.append


def test_bench_mmio_counts():
    """make bench-mmio: timed boots untraced, the traps counted in a traced
    boot of the same row, for every virtio-mmio row and no virtio-pci one
    (whose transport has none of the registers counted)."""
    from testbed import bench
    from testbed.scenarios import MMIO_BENCH_SCENARIOS, MMIO_BENCH_TRACE, MMIO_COUNT_SCENARIOS

    assert set(MMIO_COUNT_SCENARIOS) == {row for row, sc in MMIO_BENCH_SCENARIOS.items()
                                         if sc.transport == "mmio"}
    assert MMIO_COUNT_SCENARIOS and "pci" in MMIO_BENCH_SCENARIOS
    for row, sc in MMIO_BENCH_SCENARIOS.items():
        assert sc.trace == ()
        if row not in MMIO_COUNT_SCENARIOS:
            continue
        cnt = MMIO_COUNT_SCENARIOS[row]
        assert cnt.trace == MMIO_BENCH_TRACE
        assert (cnt.machine, cnt.kernel, cnt.append, cnt.transport) == \
            (sc.machine, sc.kernel, sc.append, sc.transport)
    trace = "\n".join([
        "virtio_mmio_read offset 0x60",
        "virtio_mmio_write offset 0x64 value 0x1",
        "virtio_mmio_write offset 0x50 value 0x0",
        "virtio_mmio_read offset 0x70",
        "virtio_mmio_msi addr 0x8090040 data 0x2000 devid 0xffe0", ""])
    assert bench.mmio_trace_counts(trace) == {"status_reads": 1, "acks": 1, "notifies": 1,
                                              "msis": 1}
    # A row whose counting boots failed still prints
    row = {"row": "pci", "rr_per_s": 10, "randread_per_s": 20, "irqs_per_rr": 1.0,
           "irqs_per_read": 1.0}
    assert "pci" in bench.mmio_table([row])


def test_bench_mmio_trap_share():
    """make bench-mmio: the price of a trapped register read puts the traps
    MSI removes in proportion: a round trip of 200 us with 1.5 interrupts,
    each a status read and an ack of 1 us, spends 3 us (1.5 %) in them."""
    from testbed import bench

    m = bench.MMIO_TRAP_LINE.search("# bench-mmio: trap ops=2000000 seconds=2.001 "
                                    "value=0x74726976")
    assert m and int(m["value"], 16) == bench.MMIO_MAGIC
    wired = {"row": "mmio-wired", "rr_per_s": 5000, "randread_per_s": 7000,
             "irqs_per_rr": 1.5, "irqs_per_read": 1.0, "trap_ns": 1000.0}
    assert abs(bench.mmio_trap_share(wired) - 0.015) < 1e-12
    assert bench.mmio_trap_share({k: v for k, v in wired.items() if k != "trap_ns"}) is None
    table = bench.mmio_table([wired, {**wired, "row": "mmio-msi", "irqs_per_rr": 2.0}])
    assert "mmio-wired's status reads and acks: 1000.0 ns each, 3.0 a round trip, " \
           "1.50 % of it" in table


def test_bench_vhost_rows():
    """make bench-vhost: the selftest's lines become {batch, requests_per_s, us_per_kick}."""
    from testbed import bench
    from testbed.scenarios import BENCH_SCENARIOS, SCENARIOS
    from testbed.shell import StepError
    diags = [
        "vhost_iommu.c:123:bench_map_unmap: something else",
        "bench-vhost: batch=1 requests=2000 kicks=2000 seconds=1.000 "
        "requests_per_s=2000 us_per_kick=500.00",
        "bench-vhost: batch=256 requests=51200 kicks=200 seconds=2.000 "
        "requests_per_s=25600 us_per_kick=10000.00",
        "bench-vhost: batch=16 requests=16000 kicks=1000 seconds=0.500 "
        "requests_per_s=32000 us_per_kick=500.00",
    ]
    rows = bench.vhost_rows(diags)
    # In batch order, rates from the counts and the time
    assert rows == [
        {"batch": 1, "requests_per_s": 2000, "us_per_kick": 500.0},
        {"batch": 16, "requests_per_s": 32000, "us_per_kick": 500.0},
        {"batch": 256, "requests_per_s": 25600, "us_per_kick": 10000.0},
    ]
    assert "16.00x" in bench.vhost_table(rows)
    # A batch size missing, or a measurement of nothing, is an error
    with pytest.raises(StepError, match=r"\[16\]"):
        bench.vhost_rows([d for d in diags if "batch=16 " not in d])
    with pytest.raises(StepError, match="empty"):
        bench.vhost_rows(diags + ["bench-vhost: batch=1 requests=0 kicks=0 seconds=0.000 "
                                  "requests_per_s=0 us_per_kick=0.00"])
    # Its boot is not one of make check's
    assert "bench-vhost" in BENCH_SCENARIOS and "bench-vhost" not in SCENARIOS


def test_bench_vhost_table_rows():
    """make bench-vhost's page-table row: UNMAPs against one INVALIDATE a kick."""
    from testbed import bench
    from testbed.shell import StepError
    diags = [
        "bench-vhost-table: batch=16 rounds=10 unmap_us=400.00 invalidate_us=100.00",
        "bench-vhost-table: batch=1 rounds=10 unmap_us=100.00 invalidate_us=110.00",
        "bench-vhost-table: batch=256 rounds=3 unmap_us=5000.00 invalidate_us=120.00",
        "bench-vhost: batch=1 requests=2000 kicks=2000 seconds=1.000 "
        "requests_per_s=2000 us_per_kick=500.00",
    ]
    rows = bench.vhost_table_rows(diags)
    assert [r["batch"] for r in rows] == [1, 16, 256]
    assert rows[1] == {"batch": 16, "unmap_us": 400.0, "invalidate_us": 100.0,
                       "invalidate_vs_unmap": 0.25}
    assert "0.02x" in bench.vhost_unmap_table(rows)
    with pytest.raises(StepError, match=r"\[256\]"):
        bench.vhost_table_rows(diags[:2])
    with pytest.raises(StepError, match="empty"):
        bench.vhost_table_rows(diags + ["bench-vhost-table: batch=1 rounds=0 "
                                        "unmap_us=0.00 invalidate_us=0.00"])


def test_bench_drivers_rows():
    """make bench-drivers: both paths of every IOMMU, on one kernel, switch checked."""
    from testbed import bench
    from testbed.scenarios import DRIVER_BENCH_ROWS, DRIVER_BENCH_SCENARIOS, SCENARIOS

    assert len(DRIVER_BENCH_ROWS) == 6 and not set(DRIVER_BENCH_SCENARIOS) & set(SCENARIOS)
    for iommu in ("intel-iommu", "amd-iommu", "smmuv3"):
        old = DRIVER_BENCH_SCENARIOS[f"bench-drivers-{iommu}-old"]
        new = DRIVER_BENCH_SCENARIOS[f"bench-drivers-{iommu}-generic_pt"]
        assert (old.kernel, old.machine) == (new.kernel, new.machine)
        assert old.env["TB_PT_WANT"] == "N" and new.env["TB_PT_WANT"] == "Y"
        assert old.env["TB_PT_PARAM"] + "=0" in old.append
        assert new.env["TB_PT_PARAM"] + "=1" in new.append
        assert old.steps[0] == "iommu-info"     # the step that checks the switch
    diags = ["dmabench: average map latency(us):1.2 standard deviation:0.4",
             "dmabench: average unmap latency(us):0.9 standard deviation:0.3"]
    assert bench.latencies("x", diags, Path("x.log")) == {"map": 1200, "unmap": 900}
    with pytest.raises(Exception):
        bench.latencies("x", diags[:1], Path("x.log"))
    rows = [{"iommu": "amd-iommu", "path": "old", "map_ns": 2000, "unmap_ns": 1000},
            {"iommu": "amd-iommu", "path": "generic_pt", "map_ns": 1000, "unmap_ns": 1000}]
    table = bench.drivers_table(rows).splitlines()
    assert table[2].split()[-2:] == ["2.00x", "1.00x"]
    # Repeated boots of one path give one row, the median of each time
    runs = [{"iommu": "smmuv3", "path": "old", "map_ns": m, "unmap_ns": u}
            for m, u in ((3000, 900), (1000, 1100), (2000, 1000))]
    assert bench.median_row(runs, bench.DRIVER_MEDIANS) == {
        "iommu": "smmuv3", "path": "old", "map_ns": 2000, "unmap_ns": 1000, "runs": 3,
        "map_ns_runs": [3000, 1000, 2000], "unmap_ns_runs": [900, 1100, 1000]}
    # One rounding rule for every bench: whole numbers stay whole, rates keep
    # the decimals asked for (edu DMA's MB/s would round to 0 at one)
    assert bench.median_of([3000, 1000, 2000, 4000]) == 2500
    assert bench.median_of([0.0095, 0.0094, 0.0097], 4) == 0.0095
    assert bench.median_of([1.25, 1.0, 1.5]) == 1.2
    # bench-viommu rows: the counts are medians too, and stay floats
    runs = [{"driver": "ours", "mode": "strict", "map_ns": 1000, "unmap_ns": 900,
             "kicks_per_1k_maps": k, "requests_per_1k_maps": 2000.0} for k in (1100.5, 900.0, 1000.0)]
    row = bench.median_row(runs, bench.VIOMMU_MEDIANS)
    assert row["kicks_per_1k_maps"] == 1000.0 and row["requests_per_1k_maps"] == 2000.0
    assert row["runs"] == 3


def test_stress_scenarios_run_on_debug_kernels():
    """One stress scenario per IOMMU with its own page tables, KASAN kernels, fixed counts."""
    from testbed.scenarios import SCENARIOS, check_kernels

    stress = [sc for sc in SCENARIOS.values() if sc.name.endswith("-stress")]
    assert {sc.fault for sc in stress} == {"intel-iommu", "amd-iommu", "smmuv3"}
    for sc in stress:
        assert sc.kernel.endswith("-debug") and sc.kernel in check_kernels(full=True)
        assert {"vfio-edu", "blk-stress"} <= set(sc.steps)
        assert int(sc.env["TB_STRESS_EDU_OPS"]) > 0 and int(sc.env["TB_STRESS_BLK_OPS"]) > 0


def test_converted_drivers_boot_on_generic_pt():
    """Every make check boot behind intel-iommu, amd-iommu or smmuv3 checks
    that the driver's tables came from generic_pt (iommu-info reads the switch),
    but the one whose IOMMU walks without snooping: none may come from it."""
    from testbed.scenarios import PT_FORMAT, PT_SWITCH, SCENARIOS

    boots = [sc for sc in SCENARIOS.values() if sc.fault in PT_SWITCH]
    assert {sc.fault for sc in boots} == set(PT_SWITCH)
    noncoherent = [sc for sc in boots if sc.name.endswith("-noncoherent")]
    assert [sc.name for sc in noncoherent] == ["x86_64-intel-iommu-noncoherent"]
    for sc in noncoherent:
        assert sc.env == {"TB_PT_FORMAT": "vtdss", "TB_PT_WANT": "N"}
    for sc in boots:
        assert sc.steps[0] == "iommu-info"
        if sc in noncoherent:
            continue
        assert sc.env["TB_PT_PARAM"] == PT_SWITCH[sc.fault]
        assert sc.env["TB_PT_WANT"] == "Y"
        # not only the switch: the maps counted in generic_pt's format
        assert sc.env["TB_PT_FORMAT"] == PT_FORMAT[sc.fault]


def test_every_scenario_kernel_is_built_by_make_check():
    """make check builds the kernel of every scenario it boots and no other;
    make check-full boots every scenario."""
    from testbed.scenarios import SCENARIOS, check_kernels, selected

    quick = selected(full=False)
    assert set(check_kernels(full=False)) == {sc.kernel for sc in quick.values()}
    assert selected(full=True) == SCENARIOS
    assert set(check_kernels(full=True)) == {sc.kernel for sc in SCENARIOS.values()}
    # Debug options and every x86 IOMMU model stay in CI's run; the arm64
    # tier is make check-full's (testbed/scenarios.py says why)
    assert "x86_64-debug" in check_kernels(full=False)
    assert not any(k.startswith("arm64") for k in check_kernels(full=False))
    assert {sc.machine for sc in quick.values()} >= {
        "q35-virtio-iommu", "q35-intel-iommu", "q35-amd-iommu",
        "microvm-virtio-iommu-mmio", "microvm-mmio-msi", "q35-virtio-iommu-pt"}
    assert {sc.machine for sc in SCENARIOS.values()} >= {
        "virt-smmuv3", "virt-virtio-iommu-mmio", "virt-virtio-iommu-pt"}


def test_kunit_runs_only_in_the_scenarios_that_report_it():
    """The x86_64 debug kernel and the arm64 kernel have KUnit built in:
    only x86_64-kunit and arm64-smmuv3, which have the kunit step, run it."""
    from testbed.boot import kernel_append
    from testbed.scenarios import SCENARIOS

    runners = {"x86_64-kunit", "arm64-smmuv3"}
    for name in runners:
        assert "kunit.enable=1" in kernel_append(SCENARIOS[name]).split()
        assert "TB_KUNIT_MUST_RUN" in SCENARIOS[name].env
    for sc in SCENARIOS.values():
        if sc.name not in runners:
            assert "kunit.enable" not in kernel_append(sc)


@pytest.mark.parametrize("kib,name", [(4, "arm64-smmuv3"), (4, "arm64-smmuv3-stress"),
                                      (16, "arm64-smmuv3-16k"), (64, "arm64-smmuv3-64k")])
def test_smmuv3_granule_scenarios(kib, name):
    """Each SMMUv3 granule: a kernel of that page size (4K is arm64's
    default), and the edu test told to insist on it as the smallest IOMMU
    page, on generic_pt."""
    from testbed.kernel import TARGETS
    from testbed.paths import CONFIGS
    from testbed.scenarios import SCENARIOS

    sc = SCENARIOS[name]
    lines = {line for f in TARGETS[sc.kernel].fragments
             for line in (CONFIGS / f).read_text().splitlines()}
    pages = {16: "CONFIG_ARM64_16K_PAGES=y", 64: "CONFIG_ARM64_64K_PAGES=y"}
    assert {v for v in pages.values() if v in lines} == ({pages[kib]} if kib in pages else set())
    assert int(sc.env["TB_IOMMU_GRANULE"], 0) == kib << 10
    assert sc.env["TB_PT_WANT"] == "Y"


def test_bench_paired_ratios():
    from testbed import bench
    ref = {"driver": "6.12", "mode": "strict", "map_ns_runs": [200, 100, 400],
           "unmap_ns_runs": [100, 100, 100]}
    ours = {"driver": "ours", "mode": "strict", "map_ns_runs": [100, 90, 200],
            "unmap_ns_runs": [150, 50, 80]}
    lazy = {"driver": "ours", "mode": "lazy", "map_ns_runs": [1], "unmap_ns_runs": [1]}
    rows = [ref, ours, lazy]
    for row in rows:
        bench.add_paired_ratios(row, rows)
    assert ours["map_vs_612_runs"] == [0.5, 0.9, 0.5] and ours["map_vs_612"] == 0.5
    assert ours["unmap_vs_612_runs"] == [1.5, 0.5, 0.8] and ours["unmap_vs_612"] == 0.8
    assert "map_vs_612" not in ref and "map_vs_612" not in lazy


def test_bench_viommu_names_every_round_ours_loses():
    """bench-viommu calls out each round where the default driver is slower
    than 6.12's, whatever the medians say; non-default rows are not judged."""
    from testbed import bench

    rows = [{"driver": "6.12", "mode": "strict"},
            {"driver": "ours", "mode": "strict", "map_vs_612_runs": [0.8, 1.2, 0.9],
             "unmap_vs_612_runs": [0.7, 0.9, 0.95]},
            {"driver": "ours-combined", "mode": "strict", "map_vs_612_runs": [1.5]},
            {"driver": "ours", "mode": "lazy", "map_vs_612_runs": [0.5],
             "unmap_vs_612_runs": [1.01]}]
    assert bench.slower_than_612(rows) == ["strict map, round 2: 1.20x",
                                           "lazy unmap, round 1: 1.01x"]


def test_lint_compiles_an_included_test_with_its_includer(tmp_path):
    """A test #included by its driver (arm-smmu-v3-gpt-test.c) is compiled
    as part of the driver's object, not as an object of its own."""
    from testbed.lint import includer

    d = tmp_path / "drivers" / "x"
    d.mkdir(parents=True)
    (d / "drv.c").write_text('int a;\n#ifdef T\n#include "drv-test.c"\n#endif\n')
    (d / "drv-test.c").write_text("int b;\n")
    (d / "other.c").write_text('#include "drv.h"\n')
    assert includer("drivers/x/drv-test.c", tmp_path) == "drivers/x/drv.c"
    assert includer("drivers/x/other.c", tmp_path) == "drivers/x/other.c"


def test_bench_throughput_ratios_and_goal():
    """bench-throughput: tput-bench's line read into MB/s, each rate against
    no IOMMU's round by round (against the two no-IOMMU boots around the
    round, where it has two), and every round in which strict page-table
    mode moves less than 90 % of no IOMMU called out; other rows not judged."""
    from testbed import bench

    line = ("tput: disk_write_mb=64 disk_write_cs=400 disk_read_mb=96 disk_read_cs=300 "
            "bulk_write_mb=80 bulk_write_cs=400 bulk_read_mb=160 bulk_read_cs=400 "
            "net_down_bytes=8388608 net_down_cs=200 net_up_bytes=2000000 net_up_cs=100")
    v = bench.TPUT_LINE.search(line)
    assert v and v["disk_read_cs"] == "300" and v["net_up_bytes"] == "2000000"
    assert v["bulk_read_mb"] == "160"
    result = types.SimpleNamespace(
        console=types.SimpleNamespace(steps={"tput-bench": types.SimpleNamespace(
            ok=True, diagnostics=lambda: ["x", line])}),
        timed_out=False, trace_log=None, scenario=None)
    got = bench.tput_row(("pt", "strict"), result)
    assert (got["disk_read_mb_s"], got["bulk_read_mb_s"], got["net_down_mb_s"]) == \
        (32.0, 40.0, 4.19)
    rates = dict.fromkeys(bench.TPUT_RATES, 10.0)

    def row(iommu, mode, runs):
        return {"iommu": iommu, "mode": mode, **rates,
                **{f"{k}_runs": runs for k in bench.TPUT_RATES}}

    med = bench.median_row([{"iommu": "pt", "mode": "strict", **rates},
                            {"iommu": "pt", "mode": "strict", **rates, "net_up_mb_s": 12.0},
                            {"iommu": "pt", "mode": "strict", **rates, "net_up_mb_s": 11.0}],
                           bench.TPUT_RATES, bench.TPUT_RATES)
    assert med["net_up_mb_s"] == 11.0 and med["net_up_mb_s_runs"] == [10.0, 12.0, 11.0]
    assert med["disk_read_mb_s_runs"] == [10.0] * 3 and med["runs"] == 3
    none = row("none", "-", [10.0, 10.0])
    pt = row("pt", "strict", [9.5, 8.0])
    mu = row("map-unmap", "strict", [1.0, 1.0])
    nc = row("pt-nocache", "strict", [8.5, 9.5])
    posted = row("pt-posted", "strict", [9.0, 8.9])
    lazy = row("pt", "lazy", [1.0, 1.0])
    rows = [pt, mu, nc, posted, lazy, none]
    bench.add_tput_ratios(rows)
    assert pt["disk_read_mb_s_vs_none_runs"] == [0.95, 0.8]
    # The row's ratio: the median of its rounds' (0.95 and 0.8), not 10/10
    assert pt["net_up_mb_s_vs_none"] == 0.88 and "disk_read_mb_s_vs_none" not in none
    # No IOMMU booted first and last in each round: each row's round against
    # the line between the two boots at its place among the five rows
    # (round 1 drifted from 10 MB/s to 4, round 2 did not)
    drift = [row("pt", "strict", [9.0, 9.0]), row("map-unmap", "strict", [1.0, 1.0]),
             row("pt-nocache", "strict", [1.0, 1.0]), row("pt-posted", "strict", [1.0, 1.0]),
             row("pt", "lazy", [1.0, 1.0]), row("none", "-", [10.0, 4.0, 10.0, 10.0])]
    bench.add_tput_ratios(drift)
    assert drift[0]["disk_read_mb_s_vs_none_runs"] == [1.0, 0.9]     # 1/6: 9.0
    assert drift[4]["disk_read_mb_s_vs_none_runs"] == [0.2, 0.1]     # 5/6: 5.0
    assert bench.tput_reference([10.0, 7.0], 2, 1, 5) == [10.0, 7.0]
    # Strict page-table mode on each device is judged, nothing else
    lines = bench.below_goal(rows)
    assert lines == ([f"pt {k}, round 2: 0.80x" for k in bench.TPUT_RATES] +
                     [f"pt-nocache {k}, round 1: 0.85x" for k in bench.TPUT_RATES] +
                     [f"pt-posted {k}, round 2: 0.89x" for k in bench.TPUT_RATES])


def test_bench_rounds_keep_their_places_when_a_boot_fails(monkeypatch):
    """A boot that fails leaves None in its round's place (measure_rounds()),
    so rows still pair by round: no IOMMU's first and last boots of each
    round (the last of round 1 failed: its first alone is the reference),
    6.12's rounds against ours in bench-viommu (ours failed round 1: no
    ratio and no "slower" line for it), and a key whose every boot failed
    has no row."""
    from testbed import bench
    from testbed.shell import StepError
    monkeypatch.setattr(bench.initramfs, "base_image", lambda target: None)
    # Boot order: none, pt, none, gone; none, pt, none, gone
    rates = iter([10.0, 9.0, None, None, 8.0, 3.0, 4.0, None])
    monkeypatch.setattr(bench.boot, "run_scenario", lambda sc: next(rates))

    def row_of(key, rate):
        if rate is None:
            raise StepError(f"{key[0]} failed")
        return {"iommu": key[0], "mode": key[1],
                **dict.fromkeys(bench.TPUT_RATES, rate)}

    sc = types.SimpleNamespace(kernel="x86_64", name="bench")
    floor, pt, gone = (("none", "-"), sc), (("pt", "strict"), sc), (("gone", "-"), sc)
    measured, errors = bench.measure_rounds([floor, pt, floor, gone], row_of, 1, 1, 2,
                                            False, prepare=lambda sc, threads, secs: sc)
    assert len(errors) == 3 and sorted(measured) == [("none", "-"), ("pt", "strict")]
    assert measured[("none", "-")][1] is None
    rows = [bench.median_row(measured[key], bench.TPUT_RATES, bench.TPUT_RATES)
            for key in (("pt", "strict"), ("none", "-"))]
    assert rows[1]["disk_read_mb_s_runs"] == [10.0, None, 8.0, 4.0]
    assert rows[1]["disk_read_mb_s"] == 8.0 and rows[1]["runs"] == 3
    bench.add_tput_ratios(rows)
    # Round 1: 9 against the first boot's 10; round 2: 3 against 6, half
    # way from 8 to 4
    assert rows[0]["disk_read_mb_s_vs_none_runs"] == [0.9, 0.5]
    assert bench.tput_reference([None, None, 8.0, 4.0], 2, 1, 1) == [None, 6.0]
    ours = bench.median_row([None, {"driver": "ours", "mode": "strict", "map_ns": 300,
                                    "unmap_ns": 100}], bench.VIOMMU_MEDIANS)
    theirs = bench.median_row([{"driver": "6.12", "mode": "strict", "map_ns": 100,
                                "unmap_ns": 100}] * 2, bench.VIOMMU_MEDIANS)
    bench.add_paired_ratios(ours, [ours, theirs])
    assert ours["map_vs_612_runs"] == [None, 3.0] and ours["map_vs_612"] == 3.0
    assert bench.slower_than_612([ours, theirs]) == ["strict map, round 2: 3.00x"]


def test_timeline_splits_each_disk_request_into_turns(tmp_path):
    """TIMELINE=1: QEMU's timed trace of the disk read as a chain of
    requests; each one followed by one of the same direction splits into
    QEMU's turns (notification to pop, pop to completion) and the guest's
    (completion to next notification), with the virtio-iommu requests
    served in the guest's turn; other devices' events, a request without a
    successor of its direction, the bulk passes' requests (two in flight, not
    64 KiB) and lines without a time are left out."""
    from testbed import bench, timeline

    blk, net = "0x55aa00", "0x55bb00"
    lines = [
        "virtio_queue_notify vdev 0x55aa00 n 0 vq 0x1",     # untimed
        f"7@100.000000:virtio_queue_notify vdev {blk} n 0 vq 0x1",
        f"7@100.000010:virtio_blk_handle_read vdev {blk} req 0x9 sector 0 nsectors 128",
        f"7@100.000040:virtio_blk_req_complete vdev {blk} req 0x9 status 0",
        "8@100.000050:virtio_iommu_invalidate domain=1 scope=1 flags=1 virt_start=0x0 virt_end=0xf",
        f"8@100.000060:virtio_queue_notify vdev {net} n 1 vq 0x2",
        "8@100.000070:virtio_iommu_invalidate domain=1 scope=1 flags=1 virt_start=0x0 virt_end=0xf",
        f"8@100.000140:virtio_queue_notify vdev {blk} n 0 vq 0x1",
        f"7@100.000146:virtio_blk_handle_read vdev {blk} req 0x9 sector 128 nsectors 128",
        f"7@100.000176:virtio_blk_req_complete vdev {blk} req 0x9 status 0",
        f"8@100.000300:virtio_queue_notify vdev {blk} n 0 vq 0x1",
        f"7@100.000302:virtio_blk_handle_read vdev {blk} req 0x9 sector 256 nsectors 128",
        f"7@100.000330:virtio_blk_req_complete vdev {blk} req 0x9 status 0",
        # a bulk pass: two requests in flight, no chain
        f"8@100.000350:virtio_queue_notify vdev {blk} n 0 vq 0x1",
        f"7@100.000352:virtio_blk_handle_read vdev {blk} req 0xa sector 0 nsectors 2032",
        f"7@100.000353:virtio_blk_handle_read vdev {blk} req 0xb sector 2032 nsectors 16",
        f"7@100.000380:virtio_blk_req_complete vdev {blk} req 0xa status 0",
        f"7@100.000382:virtio_blk_req_complete vdev {blk} req 0xb status 0",
        f"8@100.000400:virtio_queue_notify vdev {blk} n 0 vq 0x1",
        f"7@100.000401:virtio_blk_handle_write vdev {blk} req 0x9 sector 0 nsectors 128",
        f"7@100.000450:virtio_blk_req_complete vdev {blk} req 0x9 status 0",
    ]
    trace = tmp_path / "trace"
    trace.write_text("\n".join(lines) + "\n")
    reads = timeline.chains(timeline.events(trace.read_text()))["read"]
    assert reads == [
        {"pop_us": 10, "io_us": 30, "guest_us": 100, "cycle_us": 140, "iommu_requests": 2},
        {"pop_us": 6, "io_us": 30, "guest_us": 124, "cycle_us": 160, "iommu_requests": 0}]
    got = timeline.summary(trace)
    assert got == {"read": {"pop_us": 8, "io_us": 30, "guest_us": 112, "cycle_us": 150,
                            "iommu_requests": 1, "requests": 2}}
    assert timeline.summary(tmp_path / "missing") == {}
    # The rounds' medians, every round kept
    med = bench.median_timeline([{"timeline": got}, {"timeline": {}},
                                 {"timeline": {"read": {**got["read"], "pop_us": 12}}}])
    assert med["read"]["pop_us"] == 10 and med["read"]["pop_us_runs"] == [8, 12]
    assert "write" not in med


def test_bench_vhost_guest_rows_and_ratios():
    from testbed import bench_nested as bn, nested
    # The bench's L2 QEMU runs untraced, make check's traced (its L1 step
    # reads the trace to tell who served the requests)
    for key, name, group, append in bn.PATHS:
        assert not bn.bench_nested(name, group, 1, 1, append).device_trace
        assert nested.NESTED[name].device_trace
    line = ("netbench: down_bytes=4194304 down_cs=200 up_bytes=1048576 "
            "up_cs=50 rr=20 rr_cs=400")
    tcp = "bench-mmio: rr ops=1234 seconds=10.000"
    assert bn.net_row(["x", line, tcp]) == {"down_MBps": 2.0, "up_MBps": 2.0,
                                            "rr_per_s": 5.0, "tcp_rr_per_s": 123.4}
    with pytest.raises(Exception):
        bn.net_row([line.replace("down_cs=200", "down_cs=0"), tcp])
    with pytest.raises(Exception):      # no TCP round trips measured
        bn.net_row([line])

    def run(down, map_ns):
        return {"down_MBps": down, "up_MBps": 1.0, "rr_per_s": 4.0,
                "tcp_rr_per_s": 50.0, "map_ns": map_ns, "unmap_ns": 100}
    # medians over rounds: the middle of three, each round's values kept
    rows = bn.median_rows({"a": [run(1.0, 900), run(3.0, 700), run(2.0, 800)],
                           "b": [run(4.0, 400)], "d": [run(8.0, 0)]})
    a, b, d = rows
    assert (a["down_MBps"], a["map_ns"]) == (2.0, 800)
    assert a["down_MBps_runs"] == [1.0, 3.0, 2.0] and a["runs"] == 3
    bn.add_ratios(rows)
    assert b["vs_a"]["down_MBps"] == 2.0 and b["vs_a"]["map_ns"] == 0.5
    assert b["vs_d"]["down_MBps"] == 0.5 and b["vs_d"]["map_ns"] is None
    assert "vs_a" not in a and "vs_d" not in d
    even = bn.median_rows({"a": [run(1.0, 701), run(2.0, 800)]})[0]
    assert even["map_ns"] == 750 and isinstance(even["map_ns"], int)
    text = bn.table(rows)
    assert "(b)/(a)" in text and "2.00x" in text and "0.50x" in text
    # posted MAP: (c) against (b) and (d); the notifications per 1000
    # pairs where every boot has them
    kicked = [dict(run(4.0, 400), kicks_per_1k_pairs=2000.0)]
    posted = [dict(run(4.0, 100), kicks_per_1k_pairs=1001.0),
              dict(run(4.0, 100), kicks_per_1k_pairs=999.0)]
    rows = bn.median_rows({"b": kicked, "c": posted, "d": [run(8.0, 0)]})
    b, c, d = rows
    assert c["kicks_per_1k_pairs"] == 1000.0 and "kicks_per_1k_pairs" not in d
    bn.add_ratios(rows)
    assert c["vs_b"]["map_ns"] == 0.25 and c["vs_d"]["down_MBps"] == 0.5
    assert "vs_a" not in b and "(c)/(b)" in bn.table(rows)
    # where a pair's time goes: notifying, waiting, and L2's own rest;
    # an instant device would give the pair's time over that rest
    counts = {"pairs": 1000, "kicks": 2000, "notify_ns": 300_000_000,
              "answer_wait_ns": 20_000_000}
    timed = bn.driver_row(counts, 400_000)
    assert (timed["kicks_per_1k_pairs"], timed["notify_ns_per_pair"],
            timed["answer_wait_ns_per_pair"], timed["guest_ns_per_pair"],
            timed["instant_device_x"]) == (2000.0, 300_000, 20_000, 80_000, 5.0)
    assert bn.driver_row(dict(counts, notify_ns=500_000_000), 400_000)[
        "instant_device_x"] is None
    rows = bn.median_rows({"a": [dict(run(4.0, 200), **timed)], "d": [run(8.0, 0)]})
    assert rows[0]["guest_ns_per_pair"] == 80_000 and "guest_ns_per_pair" not in rows[1]
    assert "80000" in bn.table(rows) and "5.0" in bn.table(rows)
    # the kernel device's own time a request, from the module's totals
    totals = ["vhost-iommu-totals: map 30", "vhost-iommu-totals: unmap 10",
              "vhost-iommu-totals: misses 99", "vhost-iommu-totals: serve_ns 2000000",
              "vhost-iommu-device: serve_ns 5"]
    assert bn.serve_ns(totals) == 50_000
    assert bn.serve_ns(totals[:2]) is None and bn.serve_ns(totals[2:]) is None
    rows = bn.median_rows({"b": [dict(run(4.0, 200), device_serve_ns_per_request=50_000)],
                           "d": [run(8.0, 0)]})
    assert rows[0]["device_serve_ns_per_request"] == 50_000
    assert "device_serve_ns_per_request" not in rows[1]
    # the busy loop: (e) boots the vhost scenario with poll-us on its
    # device, against (b) and (a)
    assert "vhost=on" in bn.IOMMU["e"] and "poll-us=" in bn.IOMMU["e"]
    assert [p[1:] for p in bn.PATHS if p[0] == "e"] == \
        [p[1:] for p in bn.PATHS if p[0] == "b"]
    rows = bn.median_rows({"a": [run(2.0, 800)], "b": kicked,
                           "e": [dict(run(4.0, 200), kicks_per_1k_pairs=200.0)]})
    bn.add_ratios(rows)
    e = rows[-1]
    assert e["vs_b"]["map_ns"] == 0.5 and e["vs_a"]["map_ns"] == 0.25
    assert "(e)/(b)" in bn.table(rows) and "(e)/(a)" in bn.table(rows)
    # both: (f) is (c)'s L2 (posted MAP) behind (e)'s device (the loop)
    assert bn.IOMMU["f"] == bn.IOMMU["e"]
    assert [p[1:] for p in bn.PATHS if p[0] == "f"] == \
        [p[1:] for p in bn.PATHS if p[0] == "c"]
    rows = bn.median_rows({"a": [run(2.0, 800)],
                           "e": [dict(run(4.0, 200), kicks_per_1k_pairs=200.0)],
                           "f": [dict(run(4.0, 100), kicks_per_1k_pairs=100.0)]})
    bn.add_ratios(rows)
    f = rows[-1]
    assert f["vs_e"]["map_ns"] == 0.5 and f["vs_a"]["map_ns"] == 0.12
    assert "(f)/(e)" in bn.table(rows) and "(f)/(a)" in bn.table(rows)


def test_run_vhost_reads_the_kernel_devices_counters():
    from testbed import report

    class Step:
        def __init__(self, diags):
            self._d = diags

        def diagnostics(self):
            return self._d

    class Con:
        def __init__(self, diags):
            self.steps = {"nested-l2": Step(diags)}

    diags = ["vhost-iommu-device: posted_map 1",
             "vhost-iommu-device: endpoint 8 domain=1 mode=map dma=vhost posted=yes",
             "vhost-iommu-totals: attach 4", "vhost-iommu-totals: map 120",
             "vhost-iommu-totals: fetched 17", "vhost-iommu-totals: misses 9",
             "qemu-trace: attach=0 map=0 vhost-endpoints=4"]
    lines = report.kernel_device(Con(diags))
    assert "4 ATTACH" in lines[0] and "120 MAP" in lines[0]
    assert "9 vhost-net misses" in lines[1]
    assert "posted MAP on" in lines[2] and "served 17 requests" in lines[2]
    assert lines[3] == "endpoint:  8 domain=1 mode=map dma=vhost posted=yes"
    assert "attach=0 map=0" in report.qemu_trace(Con(diags))[0]
    assert report.kernel_device(Con([])) == ["kernel:    no counters from the kernel device"]
    # the busy loop's line only where the worker looped (poll-us)
    assert not any("busy loop" in line for line in lines)
    polled = report.kernel_device(Con(diags + ["vhost-iommu-totals: busy_polls 50",
                                               "vhost-iommu-totals: busy_poll_hits 40"]))
    assert "busy loop (poll-us): 40 of 50 looks" in polled[3]


def test_bench_nested_rows_and_ratios():
    from testbed import bench_vfio_nesting as bn

    def line(r, path, m, u, mb):
        return (f"bench-nested: round={r} path={path} pairs=10 map_ns={m} "
                f"unmap_ns={u} dma_mb_s={mb}")
    diags = [line(1, "nested", 100, 300, 0.02), line(1, "vmm", 400, 600, 0.02),
             line(1, "none", 0, 0, 0.04), line(2, "nested", 120, 280, 0.03),
             line(2, "vmm", 200, 700, 0.03), line(2, "none", 0, 0, 0.04), "noise"]
    rows = bn.rows_of("intel-iommu", diags, 2)
    n, v, none = rows
    assert (n["path"], n["map_ns"], n["pairs"]) == ("nested", 110, 20)
    assert n["map_ns_runs"] == [100, 120] and v["unmap_ns"] == 650
    # round by round against the vmm path's same round
    assert n["map_ns_vs_vmm_runs"] == [0.25, 0.6]
    assert n["map_ns_vs_vmm"] == round(110 / 300, 3)
    assert n["dma_vs_none"] == round(0.025 / 0.04, 3)
    assert "nested" in bn.table(rows) and "0.37x" in bn.table(rows)
    # a path missing a round is an error, not a shorter median
    with pytest.raises(Exception):
        bn.rows_of("amd-iommu", diags[:5], 2)


def test_device_trace_off_leaves_only_the_scenarios_own_events():
    """A benchmark row that counts no request boots QEMU without the
    virtio-iommu request trace: each traced request is a write to the log,
    which the rows that send more (MAP/UNMAP mode) would pay in their rates."""
    import dataclasses

    from testbed.scenarios import TPUT_SCENARIOS, VIRTIO_IOMMU_TRACE

    sc = TPUT_SCENARIOS[("map-unmap", "strict")]
    assert set(VIRTIO_IOMMU_TRACE) <= set(sc.trace)
    assert dataclasses.replace(sc, device_trace=False).trace == ()
    timed = dataclasses.replace(sc, device_trace=False, extra_trace=("virtio_queue_notify",))
    assert timed.trace == ("virtio_queue_notify",)


def test_bench_throughput_rows_pick_the_named_beside_no_iommu():
    from testbed import bench
    from testbed.scenarios import TPUT_SCENARIOS
    every = bench.tput_runs(TPUT_SCENARIOS)
    assert [k for k, _ in every] == list(TPUT_SCENARIOS)
    two = bench.tput_runs(TPUT_SCENARIOS, ("pt-strict", "pt-mapped-strict"))
    assert sorted(k for k, _ in two) == [("none", "-"), ("pt", "strict"),
                                         ("pt-mapped", "strict")]
    from testbed.shell import StepError
    with pytest.raises(StepError, match="no throughput row pt-bogus"):
        bench.tput_runs(TPUT_SCENARIOS, ("pt-bogus",))


def test_bench_ab_pairs_passes_either_order():
    from testbed import bench_ab
    from testbed.shell import StepError
    diags = ["ab: value=0 read_mb=400 read_cs=200 write_mb=200 write_cs=200",
             "ab: value=1 read_mb=440 read_cs=200 write_mb=190 write_cs=200",
             "ab: value=1 read_mb=420 read_cs=200 write_mb=200 write_cs=200",
             "ab: value=0 read_mb=400 read_cs=200 write_mb=200 write_cs=200",
             "other line"]
    passes = bench_ab.ab_passes(diags)
    assert [p["value"] for p in passes] == [0, 1, 1, 0]
    assert passes[0]["read_mb_s"] == 200.0
    s = bench_ab.ab_summary("virtio_blk.copy_slots", passes)
    assert [p["read_mb_s_on_off"] for p in s["pairs"]] == [1.1, 1.05]
    assert [p["write_mb_s_on_off"] for p in s["pairs"]] == [0.95, 1.0]
    assert s["read_mb_s_on_off_ahead"] == 2 and s["write_mb_s_on_off_ahead"] == 0
    assert s["read_mb_s_off"] == 200.0 and s["read_mb_s_on"] == 215.0
    assert "ahead in 2 of 2" in bench_ab.ab_table(s)
    with pytest.raises(StepError, match="not pairs"):
        bench_ab.ab_summary("p", passes[:3])
    with pytest.raises(StepError, match="a pair of passes"):
        bench_ab.ab_summary("p", [passes[1], passes[2]])


def test_bisect_sees_compiler_and_modpost_warnings_only():
    from testbed.bisect import warnings
    log = """  CC      drivers/vfio/vfio_iommu_type1.o
../drivers/vfio/vfio_iommu_type1.c:3120:13: warning: 'vfio_nest_large_at' defined but not used [-Wunused-function]
WARNING: modpost: missing MODULE_DESCRIPTION() in drivers/vhost/vhost_iommu.o
drivers/vfio/Kconfig:55:warning: symbol GENERIC_PT does not exist
make[2]: warning: jobserver unavailable
  LD [M]  drivers/vhost/vhost_iommu.ko
"""
    found = warnings(log)
    assert len(found) == 2
    assert "defined but not used" in found[0] and "modpost" in found[1]
    assert warnings("  CC      mm/slub.o\n  LD      vmlinux\n") == []


def test_bisect_finds_changed_c_files_no_build_compiled(tmp_path):
    from testbed.bisect import compiled, uncompiled
    log = """  CC      drivers/iommu/arm/arm-smmu-v3/arm-smmu-v3.o
  CC [M]  drivers/vhost/iommu.o
  AS      arch/x86/entry/entry_64.o
  HOSTCC  scripts/kallsyms
"""
    built = compiled(log)
    assert built == {"drivers/iommu/arm/arm-smmu-v3/arm-smmu-v3.c",
                     "drivers/vhost/iommu.c"}
    smmu = tmp_path / "drivers/iommu/arm/arm-smmu-v3"
    smmu.mkdir(parents=True)
    (smmu / "arm-smmu-v3.c").write_text('int x;\n#include "arm-smmu-v3-gpt-test.c"\n')
    changed = ["drivers/vhost/iommu.c",
               "drivers/iommu/arm/arm-smmu-v3/arm-smmu-v3-gpt-test.c",
               "drivers/iommu/generic_pt/gpt_pages.c",
               "tools/testing/selftests/iommu/vfio_nested.c",
               "Documentation/iommu/vfio-nesting.rst"]
    # Only the library nothing compiled: the included test suite came with
    # its driver, the selftest and the text are not kernel C files.
    assert uncompiled(changed, built, tmp_path) == ["drivers/iommu/generic_pt/gpt_pages.c"]


def test_testbed_python_has_no_undefined_names():
    """pyflakes over the test bed and its tests: a name a refactor left
    undefined fails here, not in the one benchmark that calls it."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    got = subprocess.run([sys.executable, "-m", "pyflakes", "testbed", "tests"], cwd=root,
                         text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    assert got.returncode == 0, got.stdout


def test_base_fetch_refuses_a_version_not_served(tmp_path, monkeypatch):
    """The base is the version BASE records, or a clear error naming those served."""
    from testbed import base, paths
    from testbed.shell import StepError

    monkeypatch.setattr(paths, "BASE_DIR", tmp_path)
    monkeypatch.setattr(base, "pinned", lambda: {"package": "linux-source-6.12",
                                                 "version": "6.12.1-1"})
    monkeypatch.setattr(base, "served_versions", lambda pkg: ["6.12.9-1", "6.12.8-1"])
    monkeypatch.setattr(base, "run", lambda *a, **kw: pytest.fail("downloaded"))
    with pytest.raises(StepError, match=r"6\.12\.1-1 \(BASE\) is not served.*6\.12\.9-1, "
                                        r"6\.12\.8-1.*make rebase"):
        base.fetch()


def test_base_set_pinned_keeps_the_comments(tmp_path, monkeypatch):
    from testbed import base, paths

    (tmp_path / "BASE").write_text("# why\npackage=p\nversion=1\n")
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    base.set_pinned("2")
    assert (tmp_path / "BASE").read_text() == "# why\npackage=p\nversion=2\n"
    assert base.pinned() == {"package": "p", "version": "2"}


def test_stall_check_wants_one_stall_and_its_end(tmp_path):
    from testbed.boot import stall_check
    from testbed.scenarios import SCENARIOS

    trace = tmp_path / "t"
    trace.write_text("123@virtio_iommu_stall request queue stopped\n"
                     "456@virtio_iommu_stall_end request queue served again\n")
    assert stall_check(trace).status == "pass"
    trace.write_text("123@virtio_iommu_stall request queue stopped\n")
    assert stall_check(trace).status == "fail"
    assert stall_check(None).status == "fail"
    # The machines that stall trace the stall
    stalling = [sc for sc in SCENARIOS.values() if sc.stalls]
    assert {sc.name for sc in stalling} >= {"x86_64-virtio-iommu-pt-debug",
                                            "x86_64-virtio-iommu-mmio",
                                            "arm64-virtio-iommu-mmio"}
    assert all("virtio_iommu_stall" in sc.trace for sc in stalling)


def test_every_boot_has_a_budget_and_make_check_fits():
    """Each scenario declares its CPU budget; make check's fit their total."""
    from testbed import budgets
    from testbed.scenarios import SCENARIOS, selected

    assert set(budgets.BUDGET_CPU_S) == set(SCENARIOS), (
        "testbed/budgets.py must list every scenario, no other")
    quick = sum(budgets.BUDGET_CPU_S[name] for name in selected(full=False))
    assert quick <= budgets.CHECK_BOOTS_CPU_S, (
        f"make check's boots need {quick} s of CPU, "
        f"CHECK_BOOTS_CPU_S allows {budgets.CHECK_BOOTS_CPU_S}")


def test_qemu_source_refuses_a_version_not_served(tmp_path, monkeypatch):
    """make qemu fetches the version qemu/VERSION pins, or stops with one
    line naming it and the versions trixie serves, before downloading."""
    from testbed import qemu_build
    from testbed.shell import StepError

    monkeypatch.setattr(qemu_build, "TOP", tmp_path)
    monkeypatch.setattr(qemu_build, "APT", tmp_path / "apt")
    monkeypatch.setattr(qemu_build, "_served",
                        lambda opts, pkg: ["1:10.0.14+ds-0+deb13u1"])
    calls = []
    monkeypatch.setattr(qemu_build, "run",
                        lambda cmd, **kw: calls.append([str(c) for c in cmd]))
    with pytest.raises(StepError) as err:
        qemu_build._unpack("1:10.0.13+ds-0+deb13u1", tmp_path / "src")
    assert "\n" not in str(err.value)
    assert "qemu 1:10.0.13+ds-0+deb13u1 (qemu/VERSION) is not served" in str(err.value)
    assert "served: 1:10.0.14+ds-0+deb13u1" in str(err.value)
    # Only the private list's update ran, with the machine's sources left out
    assert len(calls) == 1 and calls[0][:2] == ["apt-get", "-o"]
    assert "Dir::Etc::SourceParts=-" in calls[0] and "update" in calls[0]
    assert (tmp_path / "apt" / "sources.list").read_text().startswith(
        "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] "
        "http://deb.debian.org/debian trixie main")


def test_qemu_patch_that_does_not_apply_stops_make_qemu(tmp_path, monkeypatch):
    """A patch of qemu/patches that no longer applies stops make qemu with
    one line naming it, before anything is configured or built."""
    from testbed import qemu_build
    from testbed.shell import StepError

    patches = tmp_path / "patches"
    patches.mkdir()
    (patches / "0001-a.patch").write_text(
        "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-one\n+two\n")
    (patches / "series").write_text("0001-a.patch\n")

    def unpack(version, dest):
        dest.mkdir(parents=True)
        (dest / "f").write_text("three\n")

    monkeypatch.setattr(qemu_build, "PATCHES", patches)
    monkeypatch.setattr(qemu_build.paths, "LOGS", tmp_path / "logs")
    monkeypatch.setattr(qemu_build, "TOP", tmp_path / "top")
    monkeypatch.setattr(qemu_build, "SRC", tmp_path / "top" / "src")
    monkeypatch.setattr(qemu_build, "_unpack", unpack)
    with pytest.raises(StepError, match=r"^qemu/patches/0001-a\.patch does not apply "
                                        r"to qemu 1:10\.0\.13\+ds-0\+deb13u1"):
        qemu_build._patched_source("1:10.0.13+ds-0+deb13u1")
    assert not (tmp_path / "top" / "src").exists()
