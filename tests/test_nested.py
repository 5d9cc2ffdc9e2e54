# SPDX-License-Identifier: GPL-2.0
"""The nested test bed (testbed/nested.py): L1 runs our kernel and QEMU, L2
runs behind a virtio-iommu served by /dev/vhost-iommu or by QEMU. One test
per L1 and L2 step, one for the boot as a whole."""

import pytest

from conftest import nested_booted
from testbed import nested

NESTED = nested.selected()
STEPS = [(n.name, level, step) for n in NESTED.values()
         for level, steps in (("L1", ("nested-l2",)), ("L2", n.l2_steps))
         for step in steps]


def booted(name: str) -> "nested.NestedResult":
    return nested_booted(name)


@pytest.mark.parametrize("scenario,level,step", STEPS,
                         ids=[f"{s}/{lv}/{t}" for s, lv, t in STEPS])
def test_nested_step(scenario, level, step):
    result = booted(scenario)
    console = result.l1 if level == "L1" else result.l2
    got = console.steps.get(step)
    assert got is not None, f"{level} {step} did not run ({result.log})"
    failed = got.failures()
    assert not failed, f"{level} {step}: failed {failed} (log {result.log})"
    assert got.cases, f"{level} {step} reported no results (log {result.log})"
    assert got.exit_status == 0, f"{level} {step} exited {got.exit_status}"


@pytest.mark.parametrize("scenario", list(NESTED))
def test_nested_boot_is_clean(scenario):
    """Both levels booted and finished in time, no kernel report in either."""
    result = booted(scenario)
    assert not result.problems(), "; ".join(result.problems())


def test_l2_console_is_split_out_of_l1s():
    """L2's lines (prefixed "L2: " by L1, after whatever the serial port put
    before them) make a console of their own; L2-TIME marks give the times;
    L1's lines stay out."""
    l1 = ("TB-BOOTED 6.12\nTB-BEGIN nested-l2\nTAP version 13\n"
          "[   12.0] L2: TB-BOOTED 6.12\nL2-TIME booted 54\n"
          "L2: TB-BEGIN blk\nL2: TAP version 13\nL2: ok 1 disk present\n"
          "L2: 1..1\nL2: TB-END blk 0\nL2: TB-DONE\nL2-TIME done 151\n"
          "L2-QEMU 52 s: qemu-system-x86_64: something\n"
          "ok 1 L2 powered off\n1..1\nTB-END nested-l2 0\nTB-DONE\n")
    text, times = nested.l2_console(l1)
    assert times == {"booted": 54, "done": 151}
    assert "ok 1 L2 powered off" not in text
    assert "something" not in text
    con = nested.parse_console(text)
    assert con.booted and con.done
    assert list(con.steps) == ["blk"] and con.steps["blk"].ok


def test_qemu_libraries_include_the_loader():
    """ldd's list carries the dynamic loader (its line has no "=>")."""
    libs = nested._libraries(nested.qemu_build.binary("qemu-system-x86_64"))
    assert any(p.name.startswith("ld-linux") for p in libs)
    assert any(p.name.startswith("libglib-2.0") for p in libs)
