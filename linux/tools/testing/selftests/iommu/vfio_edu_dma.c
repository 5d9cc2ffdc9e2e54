// SPDX-License-Identifier: GPL-2.0-only
/*
 * DMA through a (virtual) IOMMU, driven from userspace with VFIO type1.
 *
 * QEMU's "edu" PCI device copies between its 4 KiB internal buffer and
 * memory by DMA. Bound to vfio-pci, it lets a test program check that what
 * the IOMMU maps is reachable with the right data, and that what it does not
 * map is neither read nor written, and that the IOMMU reports the attempt.
 * The same program runs behind every IOMMU QEMU models (VT-d, AMD-Vi,
 * SMMUv3, virtio-iommu), which walk the page tables the kernel built.
 *
 * The test skips when there is no edu device. EDU_FAULT_PATTERN, an
 * extended regular expression, names the kernel log line the IOMMU driver
 * prints for a translation fault; the fault tests require it to appear.
 * Empty, it leaves the report unchecked, for IOMMU models that do not
 * deliver fault events (QEMU 7.2's amd-iommu); memory is checked regardless.
 *
 * The stress test maps, DMAs through and unmaps EDU_STRESS_OPS times
 * (default STRESS_OPS_DEFAULT) with mixed sizes and alignments, 2 MiB and
 * larger ones backed by huge pages so the IOMMU can use 2 MiB pages; it
 * checks every transfer and that no fault was logged. EDU_STRESS_SEED
 * picks the sequence; EDU_STRESS_NEED_HUGE=1 fails it without huge pages.
 *
 * table_pages_come_back follows the IOMMU's table pages in /proc/vmstat
 * (nr_iommu_pages) through map and unmap cycles in fresh regions and the
 * release of the container: none may be lost.
 *
 * The edu_iommufd tests drive the same device through iommufd and the VFIO
 * device cdev instead: attaches of the device to a populated address space
 * while another thread unmaps and maps in it (EDU_CHURN_ROUNDS rounds),
 * each checked by DMA, then no translation may survive an unmap; and an
 * attach to a domain filled with EDU_REPLAY_MAPS mappings, which must not
 * keep interrupts off for long (the irqsoff tracer measures it); and an
 * unmap of the old address space while the device moves to another one.
 *
 * EDU_FAIL_QUEUE, the IOMMU driver's fault attribute (debugfs) that fails
 * queueing a request, lets a test make an UNMAP fail once.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <regex.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/iommufd.h>
#include <linux/pci_regs.h>
#include <linux/vfio.h>

#include "vfio_edu.h"

/* edu masks DMA addresses to 28 bits: every IOVA stays below 256 MiB. */
#define IOVA_SRC	0x01000000UL
#define IOVA_DST	0x01100000UL
#define IOVA_SECRET	0x01200000UL
#define IOVA_NEVER	0x04000000UL	/* never mapped by anyone */
#define IOVA_LATE	0x01300000UL	/* faulted on first, mapped after */
#define BUF_SIZE	0x10000UL

/*
 * The stress test's mappings: STRESS_SLOTS windows of STRESS_WINDOW bytes
 * from IOVA_STRESS (2 MiB aligned, below the edu's 256 MiB), each holding
 * at most one mapping of memory from a pool of huge pages. The windows keep
 * clear of 0x08000000-0x080fffff, the software MSI window that SMMUv3 and
 * virtio-iommu reserve on Arm: VFIO refuses to map there.
 */
#define SZ_2M		0x200000UL
#define IOVA_STRESS	0x0a000000UL
#define STRESS_SLOTS	8
#define STRESS_WINDOW	(4 * SZ_2M)
#define STRESS_POOL	(8 * SZ_2M)
#define STRESS_OPS_DEFAULT	8

FIXTURE(edu) {
	int container;
	int group;
	int device;
	uint8_t *bar;
	size_t bar_size;
	uint8_t *src;
	uint8_t *dst;
	uint8_t *secret;
	uint64_t granule;	/* smallest size VFIO maps: IOMMU or CPU page */
	uint64_t pgsizes;	/* the IOMMU page sizes VFIO reports */
	int kmsg;
};

/* The IOMMU page sizes of the container's domain, as VFIO reports them. */
static uint64_t iommu_pgsizes(int container)
{
	struct vfio_iommu_type1_info info = { .argsz = sizeof(info) };

	if (ioctl(container, VFIO_IOMMU_GET_INFO, &info) ||
	    !(info.flags & VFIO_IOMMU_INFO_PGSIZES))
		return 0;
	return info.iova_pgsizes;
}

FIXTURE_SETUP(edu)
{
	struct vfio_group_status status = { .argsz = sizeof(status) };
	char path[64];
	int group;

	self->container = -1;
	self->group = -1;
	self->device = -1;
	self->kmsg = -1;
	if (find_edu())
		SKIP(return, "no edu device (QEMU -device edu)");
	ASSERT_EQ(0, bind_vfio_pci()) TH_LOG("cannot bind %s to vfio-pci", edu_bdf);
	group = edu_iommu_group();
	ASSERT_LE(0, group) TH_LOG("%s has no IOMMU group", edu_bdf);

	self->container = open("/dev/vfio/vfio", O_RDWR);
	ASSERT_LE(0, self->container);
	ASSERT_EQ(VFIO_API_VERSION, ioctl(self->container, VFIO_GET_API_VERSION));
	ASSERT_EQ(1, ioctl(self->container, VFIO_CHECK_EXTENSION,
			   VFIO_TYPE1v2_IOMMU));
	snprintf(path, sizeof(path), "/dev/vfio/%d", group);
	self->group = open(path, O_RDWR);
	ASSERT_LE(0, self->group) TH_LOG("open %s: %s", path, strerror(errno));
	ASSERT_EQ(0, ioctl(self->group, VFIO_GROUP_GET_STATUS, &status));
	ASSERT_TRUE(status.flags & VFIO_GROUP_FLAGS_VIABLE);
	ASSERT_EQ(0, ioctl(self->group, VFIO_GROUP_SET_CONTAINER, &self->container));
	ASSERT_EQ(0, ioctl(self->container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU));
	self->pgsizes = iommu_pgsizes(self->container);
	ASSERT_NE(0, self->pgsizes) TH_LOG("VFIO reports no IOMMU page sizes");
	self->granule = self->pgsizes & -self->pgsizes;
	if (self->granule < (uint64_t)getpagesize())
		self->granule = getpagesize();
	self->device = ioctl(self->group, VFIO_GROUP_GET_DEVICE_FD, edu_bdf);
	ASSERT_LE(0, self->device);

	open_bar(_metadata, self->device, &self->bar, &self->bar_size);

	self->src = mmap(NULL, 3 * BUF_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, self->src);
	self->dst = self->src + BUF_SIZE;
	self->secret = self->dst + BUF_SIZE;
	fill(self->src, BUF_SIZE, 1);
	fill(self->dst, BUF_SIZE, 2);
	fill(self->secret, BUF_SIZE, 3);

	self->kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, self->kmsg);
	lseek(self->kmsg, 0, SEEK_END);
}

FIXTURE_TEARDOWN(edu)
{
	int fds[] = { self->device, self->group, self->container, self->kmsg };

	edu_close(self->bar, self->bar_size, fds, ARRAY_SIZE(fds));
}

/* MMIO through the mmap()ed BAR: single, untorn accesses the compiler keeps. */
/*
 * The IOMMU driver must have logged the fault, where the scenario says how
 * it logs one (EDU_FAULT_PATTERN). Where nothing can be seen (QEMU 7.2's
 * amd-iommu delivers no fault event), the memory checks before this were
 * the whole test, and the log check reports a skip, not a pass. The last
 * statement of a test: a skip or failure here ends it.
 */
static void expect_fault_logged(struct __test_metadata *_metadata, int kmsg)
{
	const char *pattern = getenv("EDU_FAULT_PATTERN");
	char seen[256];

	if (!pattern || !*pattern)
		SKIP(return, "memory checked; no EDU_FAULT_PATTERN for the log");
	ASSERT_TRUE(fault_reported(kmsg, seen, sizeof(seen)))
		TH_LOG("no IOMMU fault matching EDU_FAULT_PATTERN was logged");
	TH_LOG("fault: %s", seen);
}

TEST_F(edu, identify)
{
	uint32_t id = rd32(self->bar, EDU_ID);

	ASSERT_EQ(0xed, id & 0xff) TH_LOG("edu id register %#x", id);
	wr32(self->bar, EDU_LIVENESS, 0x12345678);
	ASSERT_EQ(~0x12345678u, rd32(self->bar, EDU_LIVENESS));
}

static unsigned long env_ulong(const char *name, unsigned long def)
{
	const char *val = getenv(name);

	return val && *val ? strtoul(val, NULL, 0) : def;
}

/*
 * The IOMMU's page sizes reach VFIO: a scenario that must run on a given
 * IOMMU granule (SMMUv3's 4, 16 or 64 KiB) sets EDU_IOMMU_GRANULE. The
 * smallest page size must be that, and the block one table of that granule
 * maps (granule / 8 entries) must be offered too: VFIO rounds sizes below
 * the CPU page up to it, so the smallest alone cannot tell a 4 KiB granule
 * on a 64 KiB-page kernel from a 64 KiB one.
 */
TEST_F(edu, iommu_page_sizes)
{
	unsigned long want = env_ulong("EDU_IOMMU_GRANULE", 0);
	uint64_t smallest = self->pgsizes & -self->pgsizes;

	TH_LOG("IOMMU page sizes %#llx, smallest %#llx",
	       (unsigned long long)self->pgsizes,
	       (unsigned long long)smallest);
	if (!want)
		SKIP(return, "no EDU_IOMMU_GRANULE: the page sizes are not checked");
	ASSERT_EQ(want, smallest);
	ASSERT_NE(0, self->pgsizes & ((uint64_t)want * (want / 8)))
		TH_LOG("no %#llx block: not a %#lx granule table",
		       (unsigned long long)want * (want / 8), want);
}

/* Map src and dst, copy src to dst through the edu, and check the copy. */
static void map_and_copy(struct __test_metadata *_metadata, int container,
			 uint8_t *bar, uint8_t *src, uint8_t *dst)
{
	ASSERT_EQ(0, map_dma(container, src, IOVA_SRC, BUF_SIZE));
	ASSERT_EQ(0, map_dma(container, dst, IOVA_DST, BUF_SIZE));
	ASSERT_EQ(0, edu_dma(bar, IOVA_SRC, EDU_BUFFER, EDU_MAX_XFER, false));
	ASSERT_EQ(0, edu_dma(bar, EDU_BUFFER, IOVA_DST, EDU_MAX_XFER, true));
	ASSERT_EQ(0, memcmp(src, dst, EDU_MAX_XFER));
}

/* Memory -> edu -> memory through two mappings: the data arrives unchanged. */
TEST_F(edu, dma_round_trip)
{
	static const struct { uint64_t off, len; } xfer[] = {
		{ 0, 1 }, { 0, 64 }, { 1, 255 }, { 4000, 200 },
		{ 0, EDU_MAX_XFER }, { BUF_SIZE - EDU_MAX_XFER, EDU_MAX_XFER },
	};
	unsigned int i;

	ASSERT_EQ(0, map_dma(self->container, self->src, IOVA_SRC, BUF_SIZE));
	ASSERT_EQ(0, map_dma(self->container, self->dst, IOVA_DST, BUF_SIZE));
	for (i = 0; i < ARRAY_SIZE(xfer); i++) {
		uint64_t off = xfer[i].off, len = xfer[i].len;

		fill(self->src + off, len, 100 + i);
		ASSERT_EQ(0, edu_dma(self->bar, IOVA_SRC + off, EDU_BUFFER, len, false));
		ASSERT_EQ(0, edu_dma(self->bar, EDU_BUFFER, IOVA_DST + off, len, true));
		ASSERT_EQ(0, memcmp(self->src + off, self->dst + off, len))
			TH_LOG("transfer %u (offset %llu, %llu bytes) corrupted",
			       i, (unsigned long long)off, (unsigned long long)len);
	}
	ASSERT_EQ(0, unmap_dma(self->container, IOVA_SRC, BUF_SIZE));
	ASSERT_EQ(0, unmap_dma(self->container, IOVA_DST, BUF_SIZE));
}

/* A write to an IOVA nobody mapped faults and changes no memory we own. */
TEST_F(edu, write_to_unmapped_iova_faults)
{
	ASSERT_EQ(0, map_dma(self->container, self->src, IOVA_SRC, BUF_SIZE));
	ASSERT_EQ(0, map_dma(self->container, self->dst, IOVA_DST, BUF_SIZE));
	ASSERT_EQ(0, edu_dma(self->bar, IOVA_SRC, EDU_BUFFER, EDU_MAX_XFER, false));
	ASSERT_EQ(0, edu_dma(self->bar, EDU_BUFFER, IOVA_NEVER, EDU_FAULT_XFER,
			     true));
	fill(self->secret, BUF_SIZE, 2);
	ASSERT_EQ(0, memcmp(self->dst, self->secret, BUF_SIZE))
		TH_LOG("a mapped buffer changed although nothing was sent to it");
	expect_fault_logged(_metadata, self->kmsg);
}

/*
 * After UNMAP the IOMMU must forget the mapping at once: a write to the old
 * IOVA must not reach the pages, which are still allocated and would show it.
 */
TEST_F(edu, write_after_unmap_does_not_reach_memory)
{
	uint8_t *expect = self->secret;

	map_and_copy(_metadata, self->container, self->bar, self->src, self->dst);

	memcpy(expect, self->dst, BUF_SIZE);
	ASSERT_EQ(0, unmap_dma(self->container, IOVA_DST, BUF_SIZE));
	fill(self->src, EDU_MAX_XFER, 77);
	ASSERT_EQ(0, edu_dma(self->bar, IOVA_SRC, EDU_BUFFER, EDU_MAX_XFER, false));
	ASSERT_EQ(0, edu_dma(self->bar, EDU_BUFFER, IOVA_DST, EDU_FAULT_XFER,
			     true));
	ASSERT_EQ(0, memcmp(self->dst, expect, BUF_SIZE))
		TH_LOG("DMA reached memory after VFIO_IOMMU_UNMAP_DMA");
	expect_fault_logged(_metadata, self->kmsg);
}

/* A read from an unmapped IOVA must not fetch the data that was there. */
TEST_F(edu, read_after_unmap_does_not_leak)
{
	ASSERT_EQ(0, map_dma(self->container, self->src, IOVA_SRC, BUF_SIZE));
	ASSERT_EQ(0, map_dma(self->container, self->dst, IOVA_DST, BUF_SIZE));
	ASSERT_EQ(0, map_dma(self->container, self->secret, IOVA_SECRET, BUF_SIZE));
	ASSERT_EQ(0, unmap_dma(self->container, IOVA_SECRET, BUF_SIZE));
	/* Load the edu buffer with known data, then read from the old IOVA. */
	ASSERT_EQ(0, edu_dma(self->bar, IOVA_SRC, EDU_BUFFER, EDU_MAX_XFER, false));
	ASSERT_EQ(0, edu_dma(self->bar, IOVA_SECRET, EDU_BUFFER, EDU_FAULT_XFER,
			     false));
	ASSERT_EQ(0, edu_dma(self->bar, EDU_BUFFER, IOVA_DST, EDU_MAX_XFER, true));
	ASSERT_NE(0, memcmp(self->dst, self->secret, EDU_FAULT_XFER))
		TH_LOG("the device read an unmapped buffer");
	/* What the faulting read did not touch is the data loaded before. */
	ASSERT_EQ(0, memcmp(self->dst + EDU_FAULT_XFER, self->src + EDU_FAULT_XFER,
			    EDU_MAX_XFER - EDU_FAULT_XFER));
	expect_fault_logged(_metadata, self->kmsg);
}

/*
 * A map must be seen at once even where a DMA faulted just before: an
 * IOMMU may remember a failed walk (a virtio-iommu walking the guest's
 * table with VIRTIO_IOMMU_PGTF_F_INVAL_MAP does), and then the driver
 * owes it an invalidation after the map, or the DMA faults again.
 * After the other fault tests: its fault would use up what is left of the
 * IOMMU drivers' fault message allowance (intel-iommu's) for them.
 */
TEST_F(edu, map_after_fault_is_seen)
{
	ASSERT_EQ(0, map_dma(self->container, self->src, IOVA_SRC, BUF_SIZE));
	/*
	 * Its report is not waited for: write_to_unmapped_iova_faults checks
	 * reports, and intel-iommu has no message left for this one.
	 */
	ASSERT_EQ(0, edu_dma(self->bar, EDU_BUFFER, IOVA_LATE, EDU_FAULT_XFER,
			     true));

	/*
	 * Short, as a transfer that faults: when the map is missed, the
	 * fault messages of a long one would silence the next tests'.
	 * dst starts different from what is sent.
	 */
	ASSERT_EQ(0, map_dma(self->container, self->dst, IOVA_LATE, BUF_SIZE));
	fill(self->src, EDU_FAULT_XFER, 88);
	memcpy(self->dst, self->src, EDU_FAULT_XFER);
	self->dst[0] ^= 0xff;
	ASSERT_EQ(0, edu_dma(self->bar, IOVA_SRC, EDU_BUFFER, EDU_FAULT_XFER,
			     false));
	ASSERT_EQ(0, edu_dma(self->bar, EDU_BUFFER, IOVA_LATE, EDU_FAULT_XFER,
			     true));
	ASSERT_EQ(0, memcmp(self->src, self->dst, EDU_FAULT_XFER))
		TH_LOG("a DMA to an IOVA that faulted before its map missed the map");
	ASSERT_EQ(0, unmap_dma(self->container, IOVA_LATE, BUF_SIZE));
	ASSERT_EQ(0, unmap_dma(self->container, IOVA_SRC, BUF_SIZE));
}

/*
 * Arm the IOMMU driver's fault attribute at @attr (the kernel's fault
 * injection, debugfs) to fail once, in this thread only; or disarm it.
 */
static int fail_once(const char *attr, bool arm)
{
	static const char * const knobs[][2] = {
		{ "probability", "100" }, { "interval", "1" }, { "times", "1" },
		{ "space", "0" }, { "verbose", "0" }, { "task-filter", "Y" },
	};
	char path[PATH_MAX];
	unsigned int i;

	for (i = 0; arm && i < ARRAY_SIZE(knobs); i++) {
		snprintf(path, sizeof(path), "%s/%s", attr, knobs[i][0]);
		if (write_str(path, knobs[i][1]))
			return -EIO;
	}
	return write_str("/proc/thread-self/make-it-fail", arm ? "1" : "0");
}

/* The number a sysfs, debugfs or tracefs file holds; -errno if none */
static long read_long(const char *path)
{
	char buf[32] = "";
	int fd = open(path, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 ? strtol(buf, NULL, 10) : -EIO;
}

/* How many more failures the fault attribute at @attr would inject */
static long fail_times_left(const char *attr)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/times", attr);
	return read_long(path);
}

/*
 * An UNMAP the IOMMU driver could not send to the device must unmap
 * nothing, and say so: a caller told it went through unpins pages the
 * device still reaches. EDU_FAIL_QUEUE names the driver's fault attribute
 * that fails queueing a request (virtio-iommu: debugfs
 * virtio-iommu/fail_queue); the test makes the first UNMAP of
 * VFIO_IOMMU_UNMAP_DMA fail. VFIO type1 then unmaps page by page, which
 * goes through: once the ioctl returns, the device must not reach the
 * buffer. Had the driver reported the failed UNMAP as done, the
 * translation would stay and the write below would land.
 */
TEST_F(edu, unmap_the_driver_could_not_send)
{
	const char *attr = getenv("EDU_FAIL_QUEUE");
	uint8_t *expect = self->secret;
	int ret;

	if (!attr || !*attr)
		SKIP(return, "no EDU_FAIL_QUEUE: the driver's fault attribute");
	map_and_copy(_metadata, self->container, self->bar, self->src, self->dst);
	memcpy(expect, self->dst, BUF_SIZE);

	ASSERT_EQ(0, fail_once(attr, true)) TH_LOG("cannot arm %s", attr);
	ret = unmap_dma(self->container, IOVA_DST, BUF_SIZE);
	ASSERT_EQ(0, fail_once(attr, false));
	ASSERT_EQ(0, fail_times_left(attr))
		TH_LOG("the UNMAP did not fail: the test tried nothing");
	ASSERT_EQ(0, ret) TH_LOG("VFIO_IOMMU_UNMAP_DMA: %s", strerror(-ret));

	fill(self->src, EDU_MAX_XFER, 78);
	ASSERT_EQ(0, edu_dma(self->bar, IOVA_SRC, EDU_BUFFER, EDU_MAX_XFER, false));
	ASSERT_EQ(0, edu_dma(self->bar, EDU_BUFFER, IOVA_DST, EDU_FAULT_XFER,
			     true));
	ASSERT_EQ(0, memcmp(self->dst, expect, BUF_SIZE))
		TH_LOG("DMA reached memory after an UNMAP that failed once");
	expect_fault_logged(_metadata, self->kmsg);
}

/* How many faults matching EDU_FAULT_PATTERN the log holds by now (no wait). */
static int faults_logged(int kmsg)
{
	const char *pattern = getenv("EDU_FAULT_PATTERN");
	char rec[1024];
	int count = 0;
	regex_t re;
	ssize_t n;

	if (!pattern || !*pattern)
		return 0;
	if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB))
		return -EINVAL;
	for (;;) {
		n = read(kmsg, rec, sizeof(rec) - 1);
		if (n < 0 && errno == EPIPE)
			continue;	/* records were overwritten: go on */
		if (n < 0)
			break;
		rec[n] = '\0';
		if (!regexec(&re, rec, 0, NULL, 0))
			count++;
	}
	regfree(&re);
	return count;
}

/*
 * A pool of huge pages for the stress test, so that mappings of 2 MiB and
 * more are physically contiguous and 2 MiB aligned, as a 2 MiB IOMMU page
 * needs. Reserves the pages first; NULL if the kernel has none to give.
 */
static uint8_t *huge_pool(size_t size)
{
	char want[16];
	void *p;

	snprintf(want, sizeof(want), "%zu", size / SZ_2M);
	write_str("/proc/sys/vm/nr_hugepages", want);
	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

struct stress_map {
	uint64_t iova;
	uint64_t size;
	uint8_t *va;
};

/*
 * Copy a random piece of a mapping to another place in it through the edu
 * buffer and check it arrived: the IOMMU translates both ends of the mapping
 * right, whatever was mapped and unmapped around it since.
 */
static int stress_dma(uint8_t *bar, const struct stress_map *m, uint32_t seed,
		      char *why, size_t why_len)
{
	static uint8_t want[EDU_MAX_XFER];
	uint64_t len = 1 + seed % EDU_MAX_XFER;
	uint64_t src = (uint64_t)rand() % (m->size - len + 1);
	uint64_t dst = (uint64_t)rand() % (m->size - len + 1);

	fill(want, len, seed);
	memcpy(m->va + src, want, len);
	if (edu_dma(bar, m->iova + src, EDU_BUFFER, len, false) ||
	    edu_dma(bar, EDU_BUFFER, m->iova + dst, len, true)) {
		snprintf(why, why_len, "edu DMA timed out");
		return -ETIMEDOUT;
	}
	if (memcmp(m->va + dst, want, len)) {
		snprintf(why, why_len,
			 "%llu bytes from IOVA %#llx to %#llx (map %#llx+%#llx) corrupted",
			 (unsigned long long)len,
			 (unsigned long long)(m->iova + src),
			 (unsigned long long)(m->iova + dst),
			 (unsigned long long)m->iova,
			 (unsigned long long)m->size);
		return -EIO;
	}
	return 0;
}

/*
 * Map, DMA through and unmap in a loop, with sizes from 4 KiB to 8 MiB
 * (2 MiB multiples on 2 MiB boundaries of IOVA and memory, so the IOMMU can
 * use 2 MiB pages, and smaller ones anywhere, straddling 2 MiB boundaries;
 * sizes and places are rounded up to the granule, 64 KiB on some IOMMUs),
 * up to STRESS_SLOTS mappings alive at once. Every mapping carries a checked
 * transfer when it is made and another just before it is unmapped; no fault
 * may be logged. Each transfer takes the edu 100 ms of virtual time, and the
 * debug kernels are slow: the harness's 30 s default would not do.
 */
TEST_F_TIMEOUT(edu, stress_map_dma_unmap, 1200)
{
	static const uint64_t sizes[] = {
		0x1000, 0x3000, 0x10000, 0x100000, SZ_2M, 2 * SZ_2M, 4 * SZ_2M,
	};
	unsigned long ops = env_ulong("EDU_STRESS_OPS", STRESS_OPS_DEFAULT);
	unsigned long seed = env_ulong("EDU_STRESS_SEED", 1);
	struct stress_map live[STRESS_SLOTS] = {};
	unsigned long op, maps = 0, huge = 0;
	size_t pool_size = STRESS_POOL;
	struct timespec t0, t1;
	char why[160];
	uint8_t *pool;
	int faults;

	pool = huge_pool(pool_size);
	if (!pool) {
		ASSERT_NE(1, env_ulong("EDU_STRESS_NEED_HUGE", 0))
			TH_LOG("no huge pages for the pool");
		TH_LOG("no huge pages: the IOMMU gets 4 KiB pages only");
		pool = mmap(NULL, pool_size, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
		ASSERT_NE(MAP_FAILED, pool);
	}
	srand(seed);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	faults_logged(self->kmsg);	/* only what happens from here counts */

	for (op = 0; op < ops; op++) {
		struct stress_map *m = &live[rand() % STRESS_SLOTS];
		unsigned int slot = m - live;

		if (m->size) {
			ASSERT_EQ(0, stress_dma(self->bar, m, seed + op, why,
						sizeof(why)))
				TH_LOG("op %lu, before unmap: %s", op, why);
			ASSERT_EQ(0, unmap_dma(self->container, m->iova, m->size))
				TH_LOG("op %lu: unmap %#llx+%#llx", op,
				       (unsigned long long)m->iova,
				       (unsigned long long)m->size);
			m->size = 0;
			continue;
		}
		m->size = sizes[rand() % ARRAY_SIZE(sizes)];
		m->size = (m->size + self->granule - 1) & ~(self->granule - 1);
		if (m->size >= SZ_2M) {
			m->iova = IOVA_STRESS + slot * STRESS_WINDOW +
				  SZ_2M * (rand() % ((STRESS_WINDOW - m->size) / SZ_2M + 1));
			m->va = pool + SZ_2M * (rand() % ((pool_size - m->size) / SZ_2M + 1));
			huge++;
		} else {
			uint64_t g = self->granule;

			m->iova = IOVA_STRESS + slot * STRESS_WINDOW + g *
				  (rand() % ((STRESS_WINDOW - m->size) / g + 1));
			m->va = pool + g * (rand() % ((pool_size - m->size) / g + 1));
		}
		ASSERT_EQ(0, map_dma(self->container, m->va, m->iova, m->size))
			TH_LOG("op %lu: map %#llx+%#llx", op,
			       (unsigned long long)m->iova,
			       (unsigned long long)m->size);
		maps++;
		ASSERT_EQ(0, stress_dma(self->bar, m, seed + op, why, sizeof(why)))
			TH_LOG("op %lu, after map: %s", op, why);
	}
	for (op = 0; op < STRESS_SLOTS; op++) {
		if (live[op].size)
			ASSERT_EQ(0, unmap_dma(self->container, live[op].iova,
					       live[op].size));
	}
	faults = faults_logged(self->kmsg);
	ASSERT_EQ(0, faults) TH_LOG("%d IOMMU faults logged during the stress", faults);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	TH_LOG("stress: %lu ops, %lu maps (%lu of 2 MiB or more), seed %lu, %ld s",
	       ops, maps, huge, seed, (long)(t1.tv_sec - t0.tv_sec));
	munmap(pool, pool_size);
}

/* VFIO refuses maps the IOMMU cannot honour, and the device keeps working. */
TEST_F(edu, bad_maps_are_refused)
{
	ASSERT_EQ(-EINVAL, map_dma(self->container, self->src, IOVA_SRC + 1, BUF_SIZE));
	ASSERT_EQ(-EINVAL, map_dma(self->container, self->src, IOVA_SRC, 0));
	ASSERT_EQ(0, map_dma(self->container, self->src, IOVA_SRC, BUF_SIZE));
	ASSERT_EQ(-EEXIST, map_dma(self->container, self->dst, IOVA_SRC, BUF_SIZE));
	ASSERT_EQ(0, unmap_dma(self->container, IOVA_SRC, BUF_SIZE));
}

/*
 * The IOMMU's page table pages, from /proc/vmstat; -1 if not counted. Each
 * CPU batches its changes to the count (by up to its stat threshold, 16 or
 * more pages), so fold them in first: stat_refresh does, for root.
 */
static long iommu_table_pages(void)
{
	char line[128];
	long n = -1;
	FILE *f;

	if (write_str("/proc/sys/vm/stat_refresh", "1"))
		return -1;
	f = fopen("/proc/vmstat", "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "nr_iommu_pages %ld", &n) == 1)
			break;
	fclose(f);
	return n;
}

/*
 * Wait up to two seconds for nr_iommu_pages to come down to @limit: a
 * driver may free table pages after a grace period (virtio-iommu lets
 * concurrent walkers finish first). Returns the last count read.
 */
static long iommu_pages_settle(long limit)
{
	long n = iommu_table_pages();
	int i;

	for (i = 0; i < 200 && n > limit; i++) {
		sleep_ms(10);
		n = iommu_table_pages();
	}
	return n;
}

/*
 * The count once what earlier tests released has been freed: the same
 * for 100 ms, within two seconds.
 */
static long iommu_pages_quiet(void)
{
	long n = iommu_table_pages(), last = -2;
	int i;

	for (i = 0; i < 20 && n != last; i++) {
		sleep_ms(100);
		last = n;
		n = iommu_table_pages();
	}
	return n;
}

/* One huge page of @size bytes, if that is the kernel's huge page size */
static uint8_t *huge_page(uint64_t size)
{
	unsigned long long kb = 0;
	char line[128];
	void *p;
	FILE *f;

	f = fopen("/proc/meminfo", "r");
	if (!f)
		return NULL;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Hugepagesize: %llu kB", &kb) == 1)
			break;
	fclose(f);
	if (kb * 1024 != size)
		return NULL;
	write_str("/proc/sys/vm/nr_hugepages", "1");
	p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

#define TABLE_REGIONS	64	/* fresh regions of one leaf table each */
#define TABLE_BIG	4	/* fresh regions of one table of tables each */
#define TABLE_ROUNDS	32	/* tables filled, then freed by one unmap */
#define TABLE_SLACK	8	/* pages other users may take meanwhile */

/*
 * Table pages of the container's domain come back. VFIO type1 unmaps
 * exactly what was mapped, so a one-page unmap leaves the leaf table of
 * its region linked but empty (generic_pt, like io-pgtable, frees a table
 * when one unmap covers its whole span): single-page map and unmap cycles,
 * each in a fresh region, keep one table per region and must not keep
 * more. A table is freed when one unmap covers it: through the iotlb
 * gather's freelist, which the driver must release after its flush, one
 * page a round lost otherwise. Then the release of the container frees the
 * domain, which must give back every page it held. (An unmap of a range
 * holding only empty tables cannot be asked for through VFIO, which
 * unmaps only what it mapped: a freelist with an empty range is not
 * reached here.)
 *
 * The regions are the spans of a leaf table (2 MiB with 4 KiB pages) and
 * of a table one level up (1 GiB), whatever the granule, below 512 GiB
 * (QEMU's VT-d translates 39 bits): with 64 KiB pages the second kind
 * (4 TiB) is left out. Only the table pages of this domain are expected
 * to move; TABLE_SLACK allows for other devices' DMA domains meanwhile.
 */
TEST_F(edu, table_pages_come_back)
{
	uint64_t g = self->granule, leaf = g * (g / 8), big = leaf * (g / 8);
	bool bigs = (3 + TABLE_BIG) * big <= 1ULL << 39;
	uint64_t first = bigs ? big : 1ULL << 38;
	uint64_t rounds = bigs ? (2 + TABLE_BIG) * big :
			  first + TABLE_REGIONS * leaf;
	long base, n, grown;
	uint8_t *huge;
	unsigned int i;

	base = iommu_pages_quiet();
	if (base < 0)
		SKIP(return, "no nr_iommu_pages in /proc/vmstat, or no stat_refresh");

	/* One page in each fresh region, unmapped at once */
	for (i = 0; i < TABLE_REGIONS; i++) {
		ASSERT_EQ(0, map_dma(self->container, self->src, first + i * leaf, g));
		ASSERT_EQ(0, unmap_dma(self->container, first + i * leaf, g));
	}
	for (i = 0; bigs && i < TABLE_BIG; i++) {
		ASSERT_EQ(0, map_dma(self->container, self->src, (2 + i) * big, g));
		ASSERT_EQ(0, unmap_dma(self->container, (2 + i) * big, g));
	}
	n = iommu_table_pages();
	grown = n - base;
	TH_LOG("%d one-page cycles in fresh regions: %ld table pages more",
	       TABLE_REGIONS + TABLE_BIG, grown);
	/* The count sees this domain: each region added its leaf table */
	ASSERT_LE(TABLE_REGIONS, grown);
	ASSERT_GE(TABLE_REGIONS + 1 + 2 * TABLE_BIG + TABLE_SLACK, grown)
		TH_LOG("more than the tables of the emptied regions stayed");

	/*
	 * A huge page mapped over a table emptied but kept, then unmapped:
	 * generic_pt maps it as small pages in the kept table, which the
	 * unmap of the whole span then frees through the freelist. Needs
	 * huge pages of a leaf table's span.
	 */
	huge = huge_page(leaf);
	if (huge) {
		for (i = 0; i < TABLE_ROUNDS; i++) {
			uint64_t iova = rounds + i * leaf;

			ASSERT_EQ(0, map_dma(self->container, self->src, iova, g));
			ASSERT_EQ(0, unmap_dma(self->container, iova, g));
			ASSERT_EQ(0, map_dma(self->container, huge, iova, leaf));
			ASSERT_EQ(0, unmap_dma(self->container, iova, leaf));
		}
		munmap(huge, leaf);
		/* The table of tables above them stays */
		grown = iommu_pages_settle(n + 1 + TABLE_SLACK) - n;
		TH_LOG("%d tables filled and unmapped whole: %ld table pages more",
		       TABLE_ROUNDS, grown);
		ASSERT_GE(1 + TABLE_SLACK, grown)
			TH_LOG("tables unmapped whole were not freed");
	} else {
		TH_LOG("no huge page of %#llx bytes: no table unmapped whole",
		       (unsigned long long)leaf);
	}

	/* The domain goes with the container: all its pages come back */
	munmap(self->bar, self->bar_size);
	self->bar = NULL;
	close(self->device);
	self->device = -1;
	close(self->group);
	self->group = -1;
	close(self->container);
	self->container = -1;
	n = iommu_pages_settle(base + TABLE_SLACK);
	TH_LOG("container released: %ld table pages against %ld before", n, base);
	ASSERT_GE(base + TABLE_SLACK, n)
		TH_LOG("table pages lost: not freed with the domain");
}

/*
 * iommufd: the device cdev bound to an iommufd, attached to and detached
 * from an IOAS while another thread unmaps and maps areas of it. Each
 * attach makes a new domain filled from the IOAS, so an IOMMU driver that
 * sends mappings to a device (virtio-iommu) replays them while the unmaps
 * go on: each round's DMA through a stable area must carry the data, and
 * at the end a write to any unmapped area must reach no memory.
 */
#define CHURN_AREAS	32		/* churned: half of them */
#define CHURN_AREA	0x10000UL
#define IOVA_CHURN	0x02000000UL
#define CHURN_ROUNDS_DEFAULT	10

FIXTURE(edu_iommufd) {
	int iommufd;
	int device;
	uint32_t dev_id;
	uint32_t ioas;
	uint8_t *bar;
	size_t bar_size;
	uint8_t *mem;
};

/* What the churning thread works on, and what it reports */
struct churn {
	int iommufd;
	uint32_t ioas;
	uint8_t *mem;
	int stop;		/* __atomic: set by the test when it is done */
	unsigned int rounds;
	int err;
};

/* /dev/vfio/devices/vfioN of the edu, or -ENOENT without the cdev */
static int edu_cdev(void)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *dir;
	int fd = -ENOENT;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vfio-dev", edu_bdf);
	dir = opendir(path);
	if (!dir)
		return -ENOENT;
	while ((de = readdir(dir))) {
		if (strncmp(de->d_name, "vfio", 4))
			continue;
		snprintf(path, sizeof(path), "/dev/vfio/devices/%s", de->d_name);
		fd = open(path, O_RDWR);
		if (fd < 0)
			fd = -errno;
		break;
	}
	closedir(dir);
	return fd;
}

static int ioas_map(int iommufd, uint32_t ioas, void *va, uint64_t iova,
		    uint64_t len)
{
	struct iommu_ioas_map map = {
		.size = sizeof(map),
		.flags = IOMMU_IOAS_MAP_FIXED_IOVA | IOMMU_IOAS_MAP_READABLE |
			 IOMMU_IOAS_MAP_WRITEABLE,
		.ioas_id = ioas,
		.user_va = (uintptr_t)va,
		.length = len,
		.iova = iova,
	};

	return ioctl(iommufd, IOMMU_IOAS_MAP, &map) ? -errno : 0;
}

static int ioas_unmap(int iommufd, uint32_t ioas, uint64_t iova, uint64_t len)
{
	struct iommu_ioas_unmap unmap = {
		.size = sizeof(unmap),
		.ioas_id = ioas,
		.iova = iova,
		.length = len,
	};

	return ioctl(iommufd, IOMMU_IOAS_UNMAP, &unmap) ? -errno : 0;
}

static uint64_t churn_iova(unsigned int i)
{
	return IOVA_CHURN + i * CHURN_AREA;
}

FIXTURE_SETUP(edu_iommufd)
{
	struct vfio_device_bind_iommufd bind = { .argsz = sizeof(bind) };
	struct iommu_ioas_alloc alloc = { .size = sizeof(alloc) };
	unsigned int i;

	self->iommufd = -1;
	self->device = -1;
	if (find_edu())
		SKIP(return, "no edu device (QEMU -device edu)");
	ASSERT_EQ(0, bind_vfio_pci()) TH_LOG("cannot bind %s to vfio-pci", edu_bdf);
	self->device = edu_cdev();
	if (self->device == -ENOENT)
		SKIP(return, "no VFIO device cdev (CONFIG_VFIO_DEVICE_CDEV)");
	ASSERT_LE(0, self->device) TH_LOG("open the edu's cdev: %s",
					  strerror(-self->device));
	self->iommufd = open("/dev/iommu", O_RDWR);
	ASSERT_LE(0, self->iommufd) TH_LOG("open /dev/iommu: %s", strerror(errno));
	bind.iommufd = self->iommufd;
	ASSERT_EQ(0, ioctl(self->device, VFIO_DEVICE_BIND_IOMMUFD, &bind))
		TH_LOG("VFIO_DEVICE_BIND_IOMMUFD: %s", strerror(errno));
	self->dev_id = bind.out_devid;
	ASSERT_EQ(0, ioctl(self->iommufd, IOMMU_IOAS_ALLOC, &alloc));
	self->ioas = alloc.out_ioas_id;

	open_bar(_metadata, self->device, &self->bar, &self->bar_size);

	/* Every area mapped, each its own mapping in the IOMMU's domain */
	self->mem = mmap(NULL, CHURN_AREAS * CHURN_AREA, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, self->mem);
	for (i = 0; i < CHURN_AREAS; i++) {
		fill(self->mem + i * CHURN_AREA, CHURN_AREA, 100 + i);
		ASSERT_EQ(0, ioas_map(self->iommufd, self->ioas,
				      self->mem + i * CHURN_AREA, churn_iova(i),
				      CHURN_AREA));
	}
}

FIXTURE_TEARDOWN(edu_iommufd)
{
	int fds[] = { self->device, self->iommufd };

	edu_close(self->bar, self->bar_size, fds, ARRAY_SIZE(fds));
}

/* The other thread: unmap and map again the upper half, area by area */
static void *churn_thread(void *arg)
{
	struct churn *c = arg;
	unsigned int i = CHURN_AREAS / 2;
	int ret;

	while (!__atomic_load_n(&c->stop, __ATOMIC_RELAXED)) {
		ret = ioas_unmap(c->iommufd, c->ioas, churn_iova(i), CHURN_AREA);
		if (!ret)
			ret = ioas_map(c->iommufd, c->ioas, c->mem + i * CHURN_AREA,
				       churn_iova(i), CHURN_AREA);
		if (ret) {
			c->err = ret;
			break;
		}
		c->rounds++;
		if (++i == CHURN_AREAS)
			i = CHURN_AREAS / 2;
	}
	return NULL;
}

static int edu_attach(int device, uint32_t pt_id)
{
	struct vfio_device_attach_iommufd_pt attach = {
		.argsz = sizeof(attach),
		.pt_id = pt_id,
	};

	return ioctl(device, VFIO_DEVICE_ATTACH_IOMMUFD_PT, &attach) ? -errno : 0;
}

static int edu_detach(int device)
{
	struct vfio_device_detach_iommufd_pt detach = { .argsz = sizeof(detach) };

	return ioctl(device, VFIO_DEVICE_DETACH_IOMMUFD_PT, &detach) ? -errno : 0;
}

TEST_F_TIMEOUT(edu_iommufd, attach_races_unmap, 600)
{
	unsigned long rounds = env_ulong("EDU_CHURN_ROUNDS", CHURN_ROUNDS_DEFAULT);
	uint8_t *src = self->mem, *dst = self->mem + CHURN_AREA;
	struct churn c = {
		.iommufd = self->iommufd, .ioas = self->ioas, .mem = self->mem,
	};
	uint8_t *expect;
	pthread_t thread;
	unsigned long r;
	unsigned int i;

	expect = malloc(CHURN_AREA);
	ASSERT_NE(NULL, expect);
	ASSERT_EQ(0, pthread_create(&thread, NULL, churn_thread, &c));
	for (r = 0; r < rounds && !c.err; r++) {
		ASSERT_EQ(0, edu_attach(self->device, self->ioas))
			TH_LOG("round %lu: attach: %s", r, strerror(errno));
		fill(src, EDU_MAX_XFER, 1000 + r);
		ASSERT_EQ(0, edu_dma(self->bar, churn_iova(0), EDU_BUFFER,
				     EDU_MAX_XFER, false));
		ASSERT_EQ(0, edu_dma(self->bar, EDU_BUFFER, churn_iova(1),
				     EDU_MAX_XFER, true));
		ASSERT_EQ(0, memcmp(src, dst, EDU_MAX_XFER))
			TH_LOG("round %lu: the DMA through the new domain lost data", r);
		ASSERT_EQ(0, edu_detach(self->device));
	}
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELAXED);
	pthread_join(thread, NULL);
	ASSERT_EQ(0, c.err) TH_LOG("unmap/map: %s", strerror(-c.err));
	TH_LOG("%lu attaches, %u unmaps and maps meanwhile", r, c.rounds);

	/* Attached once more, every churned area unmapped: none may be reached */
	ASSERT_EQ(0, edu_attach(self->device, self->ioas));
	for (i = CHURN_AREAS / 2; i < CHURN_AREAS; i++)
		ASSERT_EQ(0, ioas_unmap(self->iommufd, self->ioas, churn_iova(i),
					CHURN_AREA));
	fill(src, EDU_MAX_XFER, 7);
	ASSERT_EQ(0, edu_dma(self->bar, churn_iova(0), EDU_BUFFER, EDU_MAX_XFER,
			     false));
	for (i = CHURN_AREAS / 2; i < CHURN_AREAS; i += 4) {
		uint8_t *area = self->mem + i * CHURN_AREA;

		memcpy(expect, area, CHURN_AREA);
		ASSERT_EQ(0, edu_dma(self->bar, EDU_BUFFER, churn_iova(i),
				     EDU_FAULT_XFER, true));
		ASSERT_EQ(0, memcmp(area, expect, CHURN_AREA))
			TH_LOG("DMA reached area %u after IOMMU_IOAS_UNMAP", i);
	}
	ASSERT_EQ(0, edu_detach(self->device));
	free(expect);
}

/*
 * The device moved to another address space's domain (iommufd's replace)
 * while the IOMMU has not yet taken the ATTACH: until it has, the device
 * translates through the old domain, whose unmaps must still reach the
 * IOMMU. EDU_STALL_ATTACH (ms) says that the IOMMU stops that long before
 * each ATTACH (our QEMU's x-stall-attach-ms); unset, the test skips. While
 * it is stopped, another thread unmaps an area of the old address space and
 * has the edu write to it: once the unmap has returned, the write must not
 * reach the area's memory.
 */
#define REPLACE_ROUNDS	3

struct replace_race {
	int iommufd;
	uint32_t ioas;
	uint8_t *bar;
	uint64_t iova;
	long delay_ms;
	int go;			/* __atomic: the replace is about to start */
	int err;
};

static void *replace_unmapper(void *arg)
{
	struct replace_race *r = arg;

	while (!__atomic_load_n(&r->go, __ATOMIC_ACQUIRE))
		sleep_ms(1);
	sleep_ms(r->delay_ms);
	r->err = ioas_unmap(r->iommufd, r->ioas, r->iova, CHURN_AREA);
	if (!r->err)
		r->err = edu_dma(r->bar, EDU_BUFFER, r->iova, EDU_FAULT_XFER,
				 true);
	return NULL;
}

TEST_F_TIMEOUT(edu_iommufd, replace_unmaps_the_old_domain, 300)
{
	unsigned long stall_ms = env_ulong("EDU_STALL_ATTACH", 0);
	struct iommu_ioas_alloc alloc = { .size = sizeof(alloc) };
	uint8_t *expect;
	pthread_t thread;
	unsigned int i;

	if (!stall_ms)
		SKIP(return, "EDU_STALL_ATTACH unset: the IOMMU answers at once");
	ASSERT_EQ(0, ioctl(self->iommufd, IOMMU_IOAS_ALLOC, &alloc));
	expect = malloc(CHURN_AREA);
	ASSERT_NE(NULL, expect);

	for (i = 0; i < REPLACE_ROUNDS; i++) {
		unsigned int area = CHURN_AREAS / 2 + i;
		struct replace_race r = {
			.iommufd = self->iommufd, .ioas = self->ioas,
			.bar = self->bar, .iova = churn_iova(area),
			.delay_ms = stall_ms / 4,
		};

		/*
		 * In the old address space: the area read once (an IOMMU
		 * that caches translations holds it now), the edu's buffer
		 * loaded
		 */
		ASSERT_EQ(0, edu_attach(self->device, self->ioas));
		ASSERT_EQ(0, edu_dma(self->bar, r.iova, EDU_BUFFER,
				     EDU_MAX_XFER, false));
		fill(self->mem, EDU_MAX_XFER, 500 + i);
		ASSERT_EQ(0, edu_dma(self->bar, churn_iova(0), EDU_BUFFER,
				     EDU_MAX_XFER, false));
		memcpy(expect, self->mem + area * CHURN_AREA, CHURN_AREA);

		ASSERT_EQ(0, pthread_create(&thread, NULL, replace_unmapper, &r));
		__atomic_store_n(&r.go, 1, __ATOMIC_RELEASE);
		ASSERT_EQ(0, edu_attach(self->device, alloc.out_ioas_id))
			TH_LOG("round %u: replace: %s", i, strerror(errno));
		pthread_join(thread, NULL);
		ASSERT_EQ(0, r.err) TH_LOG("round %u: unmap or DMA: %s", i,
					   strerror(-r.err));
		ASSERT_EQ(0, memcmp(self->mem + area * CHURN_AREA, expect,
				    CHURN_AREA))
			TH_LOG("round %u: the edu wrote to area %u after its unmap returned",
			       i, area);
	}
	ASSERT_EQ(0, edu_detach(self->device));
	free(expect);
}

/*
 * A domain that iommufd filled before the device's attach: an IOMMU driver
 * that sends mappings to a device (virtio-iommu in MAP/UNMAP mode) replays
 * every one of them at the attach, and must not keep interrupts off while
 * it waits for the device, however many there are. EDU_REPLAY_MAPS 4 KiB
 * mappings (unset: the test skips), all of one page; the irqsoff tracer
 * watches for a stretch with interrupts off longer than EDU_IRQSOFF_MAX_US
 * across the attach (a kernel without the tracer skips). The tracer keeps
 * one maximum for all CPUs, and drops a stretch that ends after another
 * CPU raised it: it starts at the limit, not at 0, so that the other CPU's
 * short stretches leave it alone. DMA then checks that a mapping far into
 * the replay reached the device.
 */
#define IOVA_REPLAY		0x02200000UL	/* above the churned areas */
#define EDU_DMA_LIMIT		0x10000000UL	/* the edu's 28 address bits */
#define IRQSOFF_MAX_US_DEFAULT	200000
#define TRACEFS			"/sys/kernel/tracing"

static bool irqsoff_tracer(void)
{
	char buf[4096] = "";
	int fd = open(TRACEFS "/available_tracers", O_RDONLY);

	if (fd < 0)
		return false;
	if (read(fd, buf, sizeof(buf) - 1) < 0)
		buf[0] = 0;
	close(fd);
	return strstr(buf, "irqsoff");
}

TEST_F_TIMEOUT(edu_iommufd, attach_replays_with_interrupts_on, 1200)
{
	unsigned long n = env_ulong("EDU_REPLAY_MAPS", 0);
	unsigned long max_us = env_ulong("EDU_IRQSOFF_MAX_US",
					 IRQSOFF_MAX_US_DEFAULT);
	struct iommu_hwpt_alloc hwpt = { .size = sizeof(hwpt) };
	struct iommu_destroy destroy = { .size = sizeof(destroy) };
	unsigned long i, checked;
	char limit[32];
	uint8_t *page;
	long irqsoff_us;

	if (!n)
		SKIP(return, "EDU_REPLAY_MAPS unset");
	if (!irqsoff_tracer())
		SKIP(return, "no irqsoff tracer (CONFIG_IRQSOFF_TRACER)");
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, page);
	memset(page, 0, 4096);
	for (i = 0; i < n; i++)
		ASSERT_EQ(0, ioas_map(self->iommufd, self->ioas, page,
				      IOVA_REPLAY + i * 4096, 4096))
			TH_LOG("mapping %lu: %s", i, strerror(errno));

	/* Filled now, with no device attached: nothing sent yet */
	hwpt.dev_id = self->dev_id;
	hwpt.pt_id = self->ioas;
	ASSERT_EQ(0, ioctl(self->iommufd, IOMMU_HWPT_ALLOC, &hwpt))
		TH_LOG("IOMMU_HWPT_ALLOC: %s", strerror(errno));
	snprintf(limit, sizeof(limit), "%lu", max_us);
	ASSERT_EQ(0, write_str(TRACEFS "/current_tracer", "irqsoff"));
	ASSERT_EQ(0, write_str(TRACEFS "/tracing_max_latency", limit));
	ASSERT_EQ(0, write_str(TRACEFS "/tracing_on", "1"));
	ASSERT_EQ(0, edu_attach(self->device, hwpt.out_hwpt_id))
		TH_LOG("attach: %s", strerror(errno));
	irqsoff_us = read_long(TRACEFS "/tracing_max_latency");
	write_str(TRACEFS "/current_tracer", "nop");

	/* Area 0's data, through the edu, into the last page it can reach */
	checked = n - 1;
	if (IOVA_REPLAY + n * 4096 > EDU_DMA_LIMIT)
		checked = (EDU_DMA_LIMIT - IOVA_REPLAY) / 4096 - 1;
	fill(self->mem, EDU_MAX_XFER, 77);
	ASSERT_EQ(0, edu_dma(self->bar, churn_iova(0), EDU_BUFFER,
			     EDU_MAX_XFER, false));
	ASSERT_EQ(0, edu_dma(self->bar, EDU_BUFFER, IOVA_REPLAY + checked * 4096,
			     EDU_MAX_XFER, true));
	ASSERT_EQ(0, memcmp(self->mem, page, EDU_MAX_XFER))
		TH_LOG("mapping %lu of %lu was not replayed", checked, n);

	/* Detached first, so that the unmaps send nothing */
	ASSERT_EQ(0, edu_detach(self->device));
	ASSERT_EQ(0, ioas_unmap(self->iommufd, self->ioas, IOVA_REPLAY, n * 4096));
	destroy.id = hwpt.out_hwpt_id;
	ASSERT_EQ(0, ioctl(self->iommufd, IOMMU_DESTROY, &destroy));
	munmap(page, 4096);

	ASSERT_LE(0, irqsoff_us) TH_LOG("tracing_max_latency: %s",
					strerror(-irqsoff_us));
	ASSERT_GE(max_us, (unsigned long)irqsoff_us)
		TH_LOG("interrupts off for %ld us (at most %lu)", irqsoff_us,
		       max_us);
	TH_LOG("%lu mappings replayed; interrupts never off for over %lu us",
	       n, max_us);
}

/*
 * A MAP the IOMMU refused after its driver had returned (virtio-iommu's
 * posted MAP: the device found no room for it) must be sent again once an
 * unmap made room, and DMA through it then reach memory. The scenario gives
 * the IOMMU less room than EDU_OVER_BUDGET_MAPS 4 KiB mappings (unset, the
 * test skips). The test maps page after page until a map fails or all are
 * made: once the driver saw a refusal, it waits for each MAP's answer, so
 * the maps that succeeded include the posted ones the device refused, the
 * last among them. Unmapping the first half makes room for them.
 */
TEST_F_TIMEOUT(edu_iommufd, refused_map_is_sent_again, 600)
{
	unsigned long n = env_ulong("EDU_OVER_BUDGET_MAPS", 0);
	unsigned long mapped;
	uint64_t last;
	uint8_t *page;
	int tries;

	if (!n)
		SKIP(return, "EDU_OVER_BUDGET_MAPS unset");
	ASSERT_GE((EDU_DMA_LIMIT - IOVA_REPLAY) / 4096, n);
	page = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, page);
	memset(page, 0, 4096);
	ASSERT_EQ(0, edu_attach(self->device, self->ioas))
		TH_LOG("attach: %s", strerror(errno));
	for (mapped = 0; mapped < n; mapped++)
		if (ioas_map(self->iommufd, self->ioas, page,
			     IOVA_REPLAY + mapped * 4096, 4096))
			break;
	ASSERT_LT(1, mapped) TH_LOG("no room at all");
	TH_LOG("%lu of %lu mappings made", mapped, n);

	/* Area 0's data, through the edu, to the last mapping made */
	last = IOVA_REPLAY + (mapped - 1) * 4096;
	fill(self->mem, EDU_MAX_XFER, 77);
	ASSERT_EQ(0, edu_dma(self->bar, churn_iova(0), EDU_BUFFER,
			     EDU_MAX_XFER, false));
	ASSERT_EQ(0, edu_dma(self->bar, EDU_BUFFER, last, EDU_MAX_XFER, true));
	ASSERT_NE(0, memcmp(self->mem, page, EDU_MAX_XFER))
		TH_LOG("the last mapping made was not refused: more room than the scenario says");

	/* Room again: the refused MAP goes to the device and the DMA through */
	ASSERT_EQ(0, ioas_unmap(self->iommufd, self->ioas, IOVA_REPLAY,
				mapped / 2 * 4096));
	for (tries = 0; tries < 100; tries++) {
		ASSERT_EQ(0, edu_dma(self->bar, EDU_BUFFER, last, EDU_MAX_XFER,
				     true));
		if (!memcmp(self->mem, page, EDU_MAX_XFER))
			break;
		usleep(50000);
	}
	EXPECT_GT(100, tries) TH_LOG("the refused MAP of %#llx was not sent again",
				     (unsigned long long)last);
	TH_LOG("through after %d tries", tries + 1);

	ASSERT_EQ(0, edu_detach(self->device));
	ASSERT_EQ(0, ioas_unmap(self->iommufd, self->ioas,
				IOVA_REPLAY + mapped / 2 * 4096,
				(mapped - mapped / 2) * 4096));
	munmap(page, 4096);
}

/*
 * The IOMMU's driver unbound while iommufd holds a domain of it that no
 * device uses any more: the domain outlives the device, and unmapping and
 * destroying it must not touch the device's state, freed with it (the
 * debug kernel's KASAN reports any such access). The IOMMU core lets an
 * IOMMU go only when no driver uses a device behind it: the edu's cdev is
 * closed and vfio-pci unbound from it first (the caller unbinds the other
 * devices' drivers). EDU_REMOVE_IOMMU names the IOMMU on the virtio bus
 * (virtio-iommu), whose driver the test unbinds; unset, the test skips.
 * Run it alone and last: the IOMMU is gone after it.
 */
TEST_F(edu_iommufd, iommu_removed_under_domain)
{
	const char *iommu = getenv("EDU_REMOVE_IOMMU");
	struct vfio_device_attach_iommufd_pt attach = { .argsz = sizeof(attach) };
	struct iommu_hwpt_alloc hwpt = { .size = sizeof(hwpt) };
	struct iommu_destroy destroy = { .size = sizeof(destroy) };
	char path[PATH_MAX];

	if (!iommu || !*iommu)
		SKIP(return, "no EDU_REMOVE_IOMMU: the IOMMU stays");
	hwpt.dev_id = self->dev_id;
	hwpt.pt_id = self->ioas;
	ASSERT_EQ(0, ioctl(self->iommufd, IOMMU_HWPT_ALLOC, &hwpt))
		TH_LOG("IOMMU_HWPT_ALLOC: %s", strerror(errno));
	attach.pt_id = hwpt.out_hwpt_id;
	ASSERT_EQ(0, ioctl(self->device, VFIO_DEVICE_ATTACH_IOMMUFD_PT, &attach));
	/* The domain translates: area 0 to area 1 through the edu */
	ASSERT_EQ(0, edu_dma(self->bar, churn_iova(0), EDU_BUFFER, EDU_MAX_XFER,
			     false));
	ASSERT_EQ(0, edu_dma(self->bar, EDU_BUFFER, churn_iova(1), EDU_MAX_XFER,
			     true));
	ASSERT_EQ(0, memcmp(self->mem, self->mem + CHURN_AREA, EDU_MAX_XFER));

	/* The device leaves iommufd (the BAR's mapping holds it too) */
	munmap(self->bar, self->bar_size);
	self->bar = NULL;
	close(self->device);
	self->device = -1;
	ASSERT_EQ(0, write_str("/sys/bus/pci/drivers/vfio-pci/unbind", edu_bdf));

	snprintf(path, sizeof(path), "/sys/bus/virtio/devices/%s/driver/unbind",
		 iommu);
	ASSERT_EQ(0, write_str(path, iommu)) TH_LOG("cannot unbind %s", iommu);
	ASSERT_EQ(0, ioas_unmap(self->iommufd, self->ioas, churn_iova(0),
				CHURN_AREA));
	destroy.id = hwpt.out_hwpt_id;
	ASSERT_EQ(0, ioctl(self->iommufd, IOMMU_DESTROY, &destroy));
}

TEST_HARNESS_MAIN
