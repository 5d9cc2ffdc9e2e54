# SPDX-License-Identifier: GPL-2.0
"""Command line of the test bed: python3 -m testbed <command> (the Makefile calls these)."""

from __future__ import annotations

import argparse
from pathlib import Path
import sys

from .shell import StepError


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="testbed")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("tree", help="assemble build/tree from the base and patches/")
    p.add_argument("--force", action="store_true")
    sub.add_parser("patches", help="export the tree's commits to patches/ and linux/")
    p = sub.add_parser("rebase", help="move BASE to another linux-source version "
                       "and report each patch that no longer applies")
    p.add_argument("version")
    p = sub.add_parser("refresh", help="fold the tree's edits into one patch")
    p.add_argument("patch", help="series number or file name")
    p = sub.add_parser("new-patch", help="make the tree's edits a new patch")
    p.add_argument("subject")
    p.add_argument("--body", default="")
    p.add_argument("--body-file", default="",
                   help="read the commit message body from this file")
    sub.add_parser("series", help="git format-patch into out/series")
    p = sub.add_parser("kernel", help="configure and build kernel targets")
    p.add_argument("targets", nargs="*")
    p = sub.add_parser("images", help="build the guest programs and initramfs")
    p.add_argument("targets", nargs="*")
    p = sub.add_parser("boot", help="boot one scenario and print its results")
    p.add_argument("scenario")
    p = sub.add_parser("nested", help="boot one nested scenario (L1 runs L2)")
    p.add_argument("scenario")
    sub.add_parser("qemu", help="build QEMU with qemu/patches")
    sub.add_parser("scenarios", help="list the boot scenarios")
    sub.add_parser("costs", help="each boot's last CPU time beside its budget")
    p = sub.add_parser("kunit", help="run the kunit suites")
    p.add_argument("suites", nargs="*")
    sub.add_parser("lint", help="checkpatch, sparse and W=1 over the series")
    p = sub.add_parser("bisect", help="build the series after each patch "
                       "(x86_64 with KUnit, arm64, the selftests)")
    p.add_argument("--from", dest="first", type=int, default=1,
                   help="start at this patch (series number)")
    p = sub.add_parser("bench-pt", help="generic_pt against the code it replaces")
    p.add_argument("runs", nargs="*", help="bench-um, bench-x86_64 (default both)")
    p = sub.add_parser("bench-viommu",
                       help="6.12's virtio-iommu driver against ours (dma_map_benchmark)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seconds", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3,
                   help="boots of each row, in turn; rows are medians")
    p.add_argument("--no-build", action="store_true",
                   help="boot the kernels as they are built")
    p = sub.add_parser("bench-drivers",
                       help="intel/amd/smmuv3 drivers: old page tables against generic_pt")
    p.add_argument("iommus", nargs="*", help="intel-iommu, amd-iommu, smmuv3 (default all)")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seconds", type=int, default=20)
    p.add_argument("--rounds", type=int, default=3,
                   help="boots of each path, alternating; rows are medians")
    p.add_argument("--no-build", action="store_true",
                   help="boot the kernels as they are built")
    p = sub.add_parser("bench-vhost",
                       help="vhost-iommu MAP/UNMAP at 1, 16, 256 requests a kick; "
                       "the nested guest rows (L2 NIC, dma_map_benchmark)")
    p.add_argument("--seconds", type=float, default=5,
                   help="measuring time per batch size")
    p.add_argument("--rounds", type=int, default=1,
                   help="nested boots of each guest row's path, alternating; medians")
    p.add_argument("--guest-seconds", type=float, default=10,
                   help="L2's dma_map_benchmark time")
    p.add_argument("--no-guest", action="store_true",
                   help="the selftest's rows only, no nested boot")
    p.add_argument("--no-build", action="store_true",
                   help="boot the kernel as it is built")
    p = sub.add_parser("bench-nested",
                       help="VFIO nesting (a stage-1 entry and an INVALIDATE) against "
                            "today's userspace VMM (MAP_DMA/UNMAP_DMA), per IOMMU model")
    p.add_argument("--seconds", type=float, default=2,
                   help="measuring time per path and round")
    p.add_argument("--rounds", type=int, default=3,
                   help="rounds in the one boot of each IOMMU; rows are medians")
    p.add_argument("--no-build", action="store_true",
                   help="boot the kernel as it is built")
    p = sub.add_parser("bench-mmio",
                       help="virtio-net round trips, virtio-blk random reads: "
                            "virtio-pci, virtio-mmio wired, virtio-mmio with MSI")
    p.add_argument("--seconds", type=int, default=10, help="measuring time per test")
    p.add_argument("--rounds", type=int, default=3,
                   help="boots of each row, in turn; rows are medians")
    p.add_argument("--no-build", action="store_true",
                   help="boot the kernel as it is built")
    p.add_argument("--arch", choices=("all", "arm64", "x86_64"), default="all",
                   help="the machines whose rows to boot (default: both)")
    p = sub.add_parser("bench-ab",
                       help="one boot, a driver parameter off and on by turns: "
                            "64 KiB disk reads and writes, on/off by pair")
    p.add_argument("--param", default="virtio_blk.copy_slots",
                   help="a boolean module parameter, module.name")
    p.add_argument("--pairs", type=int, default=5, help="off/on pairs of passes")
    p.add_argument("--seconds", type=int, default=2, help="each pass's reads, and writes")
    p.add_argument("--row", default="pt-strict",
                   help="the throughput row whose machine to boot (bench-throughput --rows)")
    p.add_argument("--no-build", action="store_true", help="boot the kernel as it is built")
    p = sub.add_parser("bench-throughput",
                       help="disk and NIC rates: virtio-iommu in page-table and "
                            "MAP/UNMAP mode, strict and lazy, against no IOMMU")
    p.add_argument("--seconds", type=int, default=5, help="measuring time per direction")
    p.add_argument("--profile", action="store_true",
                   help="sample the guest kernel during each timed pass "
                        "(build/bench/throughput-profile.txt)")
    p.add_argument("--timeline", action="store_true",
                   help="time each disk request's turns from QEMU's trace "
                        "(testbed/timeline.py; the rows gain \"timeline\")")
    p.add_argument("--rows", default="",
                   help="comma-separated rows to boot beside no IOMMU, as "
                        "<iommu>-<mode> (pt-strict,pt-mapped-strict); default: all")
    p.add_argument("--rounds", type=int, default=3,
                   help="boots of each row, in turn; rows are medians")
    p.add_argument("--no-build", action="store_true",
                   help="boot the kernel as it is built")
    sub.add_parser("run", help="build what is missing, boot, report")
    sub.add_parser("run-vhost", help="the same for vhost-iommu: a nested guest "
                   "whose virtio-iommu the L1 kernel serves, and who served what")
    args = ap.parse_args(argv)

    try:
        if args.cmd == "tree":
            from . import tree
            tree.assemble(force=args.force)
        elif args.cmd == "rebase":
            from . import tree
            tree.rebase(args.version)
        elif args.cmd == "patches":
            from . import tree
            tree.export()
        elif args.cmd == "refresh":
            from . import tree
            tree.refresh(args.patch)
        elif args.cmd == "new-patch":
            from . import tree
            body = args.body
            if args.body_file:
                body = Path(args.body_file).read_text()
            tree.new_patch(args.subject, body)
        elif args.cmd == "series":
            from . import tree
            tree.format_series()
        elif args.cmd == "kernel":
            from . import kernel
            kernel.build_all(args.targets or None)
        elif args.cmd == "images":
            from . import initramfs, kernel
            for target in args.targets or kernel.default_targets():
                initramfs.base_image(target)
        elif args.cmd == "qemu":
            from . import qemu_build
            for exe in qemu_build.build():
                print(exe)
        elif args.cmd == "scenarios":
            from .scenarios import SCENARIOS
            for sc in SCENARIOS.values():
                full = " (check-full only)" if sc.full_only else ""
                print(f"{sc.name:30} {sc.kernel:14} {sc.summary}{full}")
            from .nested import NESTED
            for n in NESTED.values():
                full = (" (bench-vhost only)" if n.bench_only else
                        " (check-full only)" if n.full_only else "")
                print(f"{n.name:30} {'x86_64':14} nested: {n.doc}{full}")
        elif args.cmd == "costs":
            from . import budgets
            print(budgets.table())
        elif args.cmd == "nested":
            from . import nested
            result = nested.run(args.scenario)
            print(result.summary())
            return 0 if result.ok else 1
        elif args.cmd == "boot":
            from . import boot
            result = boot.run_scenario(args.scenario)
            print(result.summary())
            return 0 if result.ok else 1
        elif args.cmd == "kunit":
            from . import kunit
            ok = kunit.run_all(args.suites or None)
            return 0 if ok else 1
        elif args.cmd == "bench-pt":
            from . import bench
            bench.pt(args.runs or None)
        elif args.cmd == "bench-viommu":
            from . import bench
            bench.viommu(args.threads, args.seconds, not args.no_build, args.rounds)
        elif args.cmd == "bench-drivers":
            from . import bench
            bench.drivers(args.threads, args.seconds, not args.no_build,
                          args.iommus or None, args.rounds)
        elif args.cmd == "bench-mmio":
            from . import bench
            bench.mmio(args.seconds, not args.no_build, args.rounds, args.arch)
        elif args.cmd == "bench-nested":
            from . import bench_vfio_nesting
            bench_vfio_nesting.run(args.seconds, args.rounds, not args.no_build)
        elif args.cmd == "bench-ab":
            from . import bench_ab
            bench_ab.run(args.param, args.pairs, args.seconds, args.row, not args.no_build)
        elif args.cmd == "bench-throughput":
            from . import bench
            bench.throughput(args.seconds, not args.no_build, args.rounds, args.profile,
                             args.timeline, tuple(r for r in args.rows.split(",") if r))
        elif args.cmd == "bench-vhost":
            from . import bench
            bench.vhost(args.seconds, not args.no_build)
            if not args.no_guest:
                from . import bench_nested
                bench_nested.run(args.rounds, args.guest_seconds,
                                 build=not args.no_build)
        elif args.cmd == "bisect":
            from . import bisect
            bisect.check(args.first)
        elif args.cmd == "lint":
            from . import lint
            return 0 if lint.run_all() else 1
        elif args.cmd == "run":
            from . import report
            return report.main()
        elif args.cmd == "run-vhost":
            from . import report
            return report.main_vhost()
    except StepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
