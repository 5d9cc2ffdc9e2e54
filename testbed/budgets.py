# SPDX-License-Identifier: GPL-2.0
"""What each boot of `make check` may cost: CPU seconds of its QEMU.

CI has 60 minutes on a fresh machine for `make deps`, the builds and
`make check`; the boots are most of `make check`. Each scenario declares
its cost here, measured on the test bed's machines (2 CPUs, TCG), so that
a new boot or a costlier step shows as a change to this table, and its
sum against CHECK_BOOTS_CPU_S shows what is left. A boot's CPU time, not
its wall time: `make check` boots two scenarios side by side
(testbed/boot_pool.py), which stretches each one's wall time but not the
CPU its guest needs. A boot fails its test when it takes more than SLACK
times its budget (a slower machine, a busy one, a change that made the
boot dearer: then measure again and update the table).
"""

from __future__ import annotations

import json
import os

# Measured by make check on 2026-12-07 (2 CPUs, TCG, two boots side by
# side): each boot's CPU time rounded up to 10 s, plus 20 %, and 30 s at
# least (a boot's own noise). The arm64 tier and the full-only stress boots
# were not measured: their figures are a plain boot's 200 s, a debug one's
# 500 s, a stress run's 900 s. `python3 -m testbed costs` prints the measured table.
BUDGET_CPU_S: dict[str, int] = {
    "x86_64-virtio-iommu": 30,
    "x86_64-virtio-iommu-strict": 30,
    "x86_64-virtio-iommu-identity": 30,
    "x86_64-virtio-iommu-debug": 530,
    "x86_64-virtio-iommu-bounce-debug": 70,
    "x86_64-virtio-iommu-replace-debug": 80,
    "x86_64-virtio-iommu-pt-replace-debug": 70,
    "x86_64-vhost-iommu": 80,
    "x86_64-intel-iommu": 30,
    "x86_64-intel-iommu-noncoherent": 30,  # its kin's, not measured alone
    "x86_64-amd-iommu": 30,
    "x86_64-no-iommu": 30,
    "arm64-smmuv3": 200,  # not measured: make check-full
    "arm64-virtio-iommu": 200,  # not measured: make check-full
    "arm64-virtio-iommu-mmio": 200,  # not measured: make check-full
    "arm64-virtio-iommu-mmio-debug": 500,  # not measured: make check-full
    "arm64-mmio-msi": 200,  # not measured: make check-full
    "arm64-virtio-iommu-mmio-msi": 200,  # not measured: make check-full
    "arm64-mmio-msi-debug": 500,  # not measured: make check-full
    "x86_64-virtio-iommu-mmio": 30,
    "x86_64-mmio-msi-debug": 170,
    "x86_64-virtio-iommu-64k-granule": 30,
    "x86_64-virtio-iommu-2-domain-ids": 30,
    "x86_64-virtio-iommu-pt": 30,
    "x86_64-virtio-iommu-pt-invalmap": 30,
    "arm64-virtio-iommu-pt": 200,  # not measured: make check-full
    "x86_64-virtio-iommu-pt-debug": 430,
    "x86_64-virtio-iommu-pt-nocache": 30,
    "x86_64-virtio-iommu-pt-posted": 30,
    "arm64-virtio-iommu-pt-16k": 200,  # not measured: make check-full
    "arm64-virtio-iommu-pt-64k": 200,  # not measured: make check-full
    "arm64-virtio-iommu-pt-nocache": 200,  # not measured: make check-full
    "arm64-virtio-iommu-pt-posted": 200,  # not measured: make check-full
    "arm64-virtio-iommu-pt-noncoherent": 200,  # make check-full
    "arm64-smmuv3-16k": 200,  # not measured: make check-full
    "arm64-smmuv3-64k": 200,  # not measured: make check-full
    "x86_64-intel-iommu-stress": 550,
    "x86_64-amd-iommu-stress": 900,  # not measured: make check-full
    "arm64-smmuv3-stress": 900,  # not measured: make check-full
    "x86_64-kunit": 140,
}

# What `make check`'s boots may take together, in CPU seconds: today's
# sum, so that a new boot or a dearer one has to move it. With two CPUs
# it is about half of it in wall time; the README ("CI time on a fresh
# machine") says what CI's hour holds besides. 2330 s until three debug
# boots came (the edu moved while the IOMMU answers late, MAP/UNMAP and
# page-table mode; virtio-net where DMA bounces): 16, 16 and 13 s of CPU
# on 2026-12-07's machine, the least budget each; a cold run on a slower
# machine the same evening measured 62, 56 and 54 s beside the other
# debug boots (2,560 s since).
CHECK_BOOTS_CPU_S = 2560

SLACK = float(os.environ.get("TB_BUDGET_SLACK", "2.0"))


def budget(name: str) -> int | None:
    """Scenario @name's budget in CPU seconds, None if it declares none."""
    return BUDGET_CPU_S.get(name)


def measured() -> dict[str, dict]:
    """The last boot of each scenario: build/logs/<name>.cost."""
    from . import paths
    out = {}
    for f in sorted(paths.LOGS.glob("*.cost")):
        out[f.stem] = json.loads(f.read_text())
    return out


def table() -> str:
    """Each scenario's last measured cost beside its budget, and a proposed
    budget (the CPU time rounded up to 10 s, plus 20 %)."""
    from .scenarios import SCENARIOS, selected
    quick = selected(full=False)
    costs = measured()
    lines = [f"{'scenario':40} {'wall s':>7} {'CPU s':>7} {'budget':>7} {'proposed':>8}"]
    total = 0
    for name in SCENARIOS:
        c = costs.get(name)
        if not c:
            lines.append(f"{name:40} {'-':>7} {'-':>7} {budget(name) or '-':>7}")
            continue
        proposed = int(-(-c["cpu_seconds"] * 1.2 // 10) * 10)
        total += proposed if name in quick else 0
        lines.append(f"{name:40} {c['seconds']:7.0f} {c['cpu_seconds']:7.0f} "
                     f"{budget(name) or '-':>7} {proposed:8}")
    lines.append(f"make check's boots, proposed: {total} s of CPU")
    return "\n".join(lines)
