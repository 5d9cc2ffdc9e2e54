# SPDX-License-Identifier: GPL-2.0
# The project's commands. Everything generated goes to build/ and out/.
# Each target is a thin call into the test bed (python3 -m testbed).

PY      ?= python3
TB      := $(PY) -m testbed
PYTEST  := $(PY) -m pytest
# Empty: the targets make check boots (testbed/kernel.py, DEFAULT_TARGETS)
KERNELS ?=

.PHONY: help deps tree rebase patches refresh new-patch series kernel images scenarios \
	boot kunit lint check run run-vhost clean qemu bench-pt bench-viommu bench-drivers bench-vhost \
	bench-mmio bench-throughput bench-ab bench-nested check-full check-bisect

help:
	@echo "make deps                install the Debian packages and Python modules (root)"
	@echo "make run                 build what is missing, boot one guest in MAP/UNMAP and page-table mode side by side, report"
	@echo "make run-vhost           the same with vhost-iommu serving it: a nested guest, and who served what"
	@echo "make check               the test command (CI): test bed, series, lint, kunit, boots"
	@echo "make check-full          make check plus the arm64 16K, 64K and debug kernels' boots"
	@echo "make tree                assemble build/tree: base + patches/series + linux/"
	@echo "make rebase VERSION=v    move BASE to linux-source-6.12 v, re-apply the series, list what no longer applies"
	@echo "make patches             write build/tree's commits back to patches/ and linux/"
	@echo "make refresh P=N         fold build/tree's uncommitted edits into patch N"
	@echo "make new-patch SUBJECT='x: y' [BODY='...'|BODY_FILE=f]   make them a new patch"
	@echo "make series              git format-patch the work into out/series/"
	@echo "make kernel [KERNELS=..] build kernels (default: all that make check boots)"
	@echo "make qemu [TB_FULL=1]    build QEMU with qemu/patches: qemu-system-x86_64 (and -aarch64 with TB_FULL=1)"
	@echo "make scenarios           list boot scenarios; make boot S=<name> boots one"
	@echo "make kunit [K=um]        run kunit suites (runs: um x86_64)"
	@echo "make bench-pt [K=bench-um]  generic_pt vs the old page tables -> build/bench/pt.json"
	@echo "make bench-viommu [THREADS=2 SECONDS=20 ROUNDS=3]  6.12's virtio-iommu driver vs ours, with and without kick combining -> build/bench/viommu.json"
	@echo "make bench-drivers [I=amd-iommu] [THREADS=2 SECONDS=20 ROUNDS=3]  each IOMMU driver's old page tables vs generic_pt -> build/bench/drivers.json"
	@echo "make bench-vhost [SECONDS=5 ROUNDS=1]  vhost-iommu MAP/UNMAP at 1, 16, 256 requests a kick, INVALIDATE vs UNMAP, a TRANSLATE in a 1 GiB MAP of 4K pages vs a 4 KiB one, MAP+UNMAP pairs freeing their leaf table vs keeping it -> build/bench/vhost.json, vhost-table.json, vhost-translate.json, vhost-tables.json; nested L2 NIC (download, upload, small HTTP requests, TCP round trips) and dma_map_benchmark: QEMU's virtio-iommu, vhost-iommu without and with posted MAP, no IOMMU, vhost-iommu busy-polling (poll-us=1000), without and with posted MAP -> vhost-guest.json"
	@echo "make bench-throughput [TPUT_SECONDS=5 ROUNDS=3 PROFILE=0 TIMELINE=0 TPUT_ROWS=pt-strict,...]  disk and NIC rates: virtio-iommu in page-table and MAP/UNMAP mode, strict and lazy, vs intel-iommu (strict) and no IOMMU -> build/bench/throughput.json (bench-viommu runs it too)"
	@echo "make bench-ab [AB=virtio_blk.copy_slots PAIRS=5 AB_SECONDS=2 AB_ROW=pt-strict]  one boot, a driver parameter off and on by turns (ABBA): 64 KiB disk reads and writes, on/off by pair -> build/bench/ab.json"
	@echo "make bench-nested [SECONDS=2 ROUNDS=3]  VFIO nesting: a guest map+unmap as a stage-1 entry and INVALIDATE vs a MAP_DMA/UNMAP_DMA (today's userspace VMM), edu DMA through each and with no vIOMMU, behind intel-iommu and amd-iommu -> build/bench/nested.json"
	@echo "make bench-mmio [SECONDS=10 ROUNDS=3 ARCH=all|arm64|x86_64]  virtio-net round trips, virtio-blk random reads: virtio-pci, virtio-mmio wired, virtio-mmio with MSI -> build/bench/mmio.json"
	@echo "make lint                checkpatch --strict, sparse and W=1 over the series"
	@echo "make check-bisect [FROM=N]  the series builds after each patch: x86_64 (with KUnit) and arm64 kernels, the selftests (about an hour)"

deps:
	.ci/install-deps

tree:
	$(TB) tree $(if $(FORCE),--force)

patches:
	$(TB) patches

rebase:
	$(TB) rebase "$(VERSION)"

refresh:
	$(TB) refresh $(P)

new-patch:
	$(TB) new-patch "$(SUBJECT)" --body "$(BODY)" --body-file "$(BODY_FILE)"

series: tree
	$(TB) series

kernel: tree
	$(TB) kernel $(KERNELS)

kernel-%: tree
	$(TB) kernel $*

images: kernel
	$(TB) images $(KERNELS)

qemu:
	$(TB) qemu

scenarios:
	$(TB) scenarios

boot: tree
	$(TB) boot $(S)

kunit: tree
	$(TB) kunit $(K)

bench-pt: tree
	$(TB) bench-pt $(K)

# Builds the x86_64-stock kernel (6.12's driver) too; make check never does.
bench-viommu: tree
	$(TB) bench-viommu $(if $(THREADS),--threads $(THREADS)) $(if $(SECONDS),--seconds $(SECONDS)) $(if $(ROUNDS),--rounds $(ROUNDS))
	$(TB) bench-throughput --no-build $(if $(TPUT_SECONDS),--seconds $(TPUT_SECONDS)) $(if $(ROUNDS),--rounds $(ROUNDS))

# The throughput rows alone
bench-throughput: tree
	$(TB) bench-throughput $(if $(TPUT_SECONDS),--seconds $(TPUT_SECONDS)) $(if $(ROUNDS),--rounds $(ROUNDS)) $(if $(filter 1,$(PROFILE)),--profile) $(if $(filter 1,$(TIMELINE)),--timeline) $(if $(TPUT_ROWS),--rows $(TPUT_ROWS))

# A driver parameter's effect measured within one boot (testbed/bench_ab.py)
bench-ab: tree
	$(TB) bench-ab $(if $(AB),--param $(AB)) $(if $(PAIRS),--pairs $(PAIRS)) $(if $(AB_SECONDS),--seconds $(AB_SECONDS)) $(if $(AB_ROW),--row $(AB_ROW))

bench-drivers: tree
	$(TB) bench-drivers $(I) $(if $(THREADS),--threads $(THREADS)) $(if $(SECONDS),--seconds $(SECONDS)) $(if $(ROUNDS),--rounds $(ROUNDS))

bench-vhost: tree
	$(TB) bench-vhost $(if $(SECONDS),--seconds $(SECONDS)) $(if $(ROUNDS),--rounds $(ROUNDS))

bench-nested: tree
	$(TB) bench-nested $(if $(SECONDS),--seconds $(SECONDS)) $(if $(ROUNDS),--rounds $(ROUNDS))

# Boots both of our QEMU emulators and the arm64 kernel.
bench-mmio: export TB_FULL = 1
bench-mmio: tree qemu
	$(TB) bench-mmio $(if $(SECONDS),--seconds $(SECONDS)) $(if $(ROUNDS),--rounds $(ROUNDS)) $(if $(ARCH),--arch $(ARCH))

lint: tree
	$(TB) lint

# Not in make check (an hour of builds on two cores): run it after
# changing the series' order or splitting a patch.
check-bisect: tree
	$(TB) bisect $(if $(FROM),--from $(FROM))

# The README's test command: builds what it needs, then one pytest run
# whose summary lists every test, and the 40 slowest with their times (a
# boot's time is its first test's: CI's 90 minutes are mostly boots).
check: images qemu
	$(PYTEST) -v -ra --durations=40 tests/

# Everything make check runs, and the scenarios marked full_only
# (testbed/scenarios.py): they need three more kernels, which CI's time
# on a fresh machine has no room for (README).
check-full: export TB_FULL = 1
check-full: images qemu
	$(PYTEST) -v -ra --durations=40 tests/
run:
	$(TB) run

# A nested boot (1.5-2 minutes under TCG inside TCG), so not part of make run
run-vhost:
	$(TB) run-vhost

clean:
	rm -rf build/kbuild build/kunit build/images build/logs out
