// SPDX-License-Identifier: GPL-2.0-only
/*
 * A guest's stage-1 table over a VFIO nesting container's stage 2
 * (Documentation/iommu/vfio-nesting.rst), judged by QEMU's edu device.
 *
 * The test plays the VMM and the guest: a buffer mapped with MAP_DMA at
 * GPA_BASE is "guest memory" (stage 2), a VT-d second-stage table written
 * into it by the small writer below is the guest's stage 1, attached to
 * the edu's group.  No IOMMU QEMU models nests, so the host shadows: the
 * model walks the composed table, and what the edu reads and writes
 * through stage-1 IOVAs shows whether the composition is right.
 *
 * EDU_FAULT_PATTERN, as for vfio_edu_dma, names the IOMMU driver's log
 * line for a translation fault; empty, the fault tests check memory only.
 * NEST_FAULT_RECORDS=1 says the driver reports faults to the domain's
 * handler, so each must also reach the test as a fault record.
 */
#include <poll.h>
#include <sys/eventfd.h>

#include <linux/virtio_iommu.h>

#include "vfio_edu.h"

#define PG		0x1000UL
/*
 * Guest memory: stage 2 maps it at GPA_BASE; tables first, then data.
 * Below the edu's 28 bits too, so that DMA can try guest-physical
 * addresses as IOVAs: with a stage 1 attached, they are not reachable.
 */
#define GPA_BASE	0x04000000UL
#define GUEST_SIZE	0x200000UL
#define TABLES		64	/* pages of table pool at the start */
#define DATA_OFF	(TABLES * PG)
#define GPA_NEVER	0x07f00000UL	/* guest-physical, not in stage 2 */
/* Stage-1 IOVAs: the edu masks addresses to 28 bits */
#define IOVA_SRC	0x01000000UL
#define IOVA_DST	0x01100000UL
#define IOVA_HOLE	0x02000000UL	/* never in stage 1 */
#define IOVA_LARGE	0x00600000UL	/* a 2 MiB stage-1 leaf, when given */
/* A host huge page as 2 MiB more of stage 2, and 2 MiB leaves onto it */
#define HUGE_SZ		0x200000UL
#define GPA_HUGE	0x06000000UL
#define IOVA_HUGE	0x0a000000UL	/* past Arm's MSI window at 0x08000000 */
#define HUGE_LEAVES	140		/* 280 MiB: past 65536 4 KiB pages */

/* VT-d second stage (VIRTIO_IOMMU_PGTF_VTD_SL), 3 levels: ias 39 */
#define S1_R		1ULL
#define S1_W		2ULL
#define S1_PS		0x80ULL		/* bit 7: a large page at level 1 or 2 */
#define S1_ADDR		0x000ffffffffff000ULL
#define S1_LEVELS	3
#define S1_IAS		39

static char edu_bdf[NAME_MAX + 1];

FIXTURE(nest) {
	int container, group, device, group_id, kmsg;
	uint8_t *bar;
	size_t bar_size;
	uint8_t *guest;		/* GUEST_SIZE bytes at GPA_BASE */
	uint64_t root;		/* the stage-1 table */
	unsigned int next_table;
};

static void *gpa_ptr(struct _test_data_nest *self, uint64_t gpa)
{
	return self->guest + (gpa - GPA_BASE);
}

static uint64_t data_gpa(unsigned int page)
{
	return GPA_BASE + DATA_OFF + page * PG;
}

/* The test's own stage-1 writer: VT-d second stage, 4 KiB pages */
static uint64_t s1_new_table(struct _test_data_nest *self)
{
	uint64_t gpa = GPA_BASE + self->next_table++ * PG;

	if (self->next_table > TABLES)
		return 0;
	memset(gpa_ptr(self, gpa), 0, PG);
	return gpa;
}

static uint64_t *s1_slot(struct _test_data_nest *self, uint64_t table,
			 uint64_t iova, unsigned int lvl)
{
	uint64_t *t = gpa_ptr(self, table);

	return &t[(iova >> (12 + 9 * lvl)) & 511];
}

/* Set the 4 KiB leaf of @iova to @entry (0: clear it), making tables */
static int s1_set(struct _test_data_nest *self, uint64_t iova, uint64_t entry)
{
	uint64_t table = self->root;
	unsigned int lvl;

	for (lvl = S1_LEVELS - 1; lvl; lvl--) {
		uint64_t *e = s1_slot(self, table, iova, lvl);

		if (!*e) {
			uint64_t t = s1_new_table(self);

			if (!t)
				return -1;
			*e = t | S1_R | S1_W;
		}
		table = *e & S1_ADDR;
	}
	*s1_slot(self, table, iova, 0) = entry;
	return 0;
}

static int s1_map(struct _test_data_nest *self, uint64_t iova, uint64_t gpa)
{
	return s1_set(self, iova, gpa | S1_R | S1_W);
}

/* Set the 2 MiB leaf (level 1, PS) of @iova to @gpa, making its table */
static int s1_map_2m(struct _test_data_nest *self, uint64_t iova, uint64_t gpa)
{
	uint64_t *e = s1_slot(self, self->root, iova, 2);

	if (!*e) {
		uint64_t t = s1_new_table(self);

		if (!t)
			return -1;
		*e = t | S1_R | S1_W;
	}
	*s1_slot(self, *e & S1_ADDR, iova, 1) = gpa | S1_R | S1_W | S1_PS;
	return 0;
}

static struct vfio_iommu_nesting_attach attach_arg(struct _test_data_nest *self)
{
	struct vfio_iommu_nesting_attach a = {
		.argsz = sizeof(a), .group = self->group_id,
		.format = VIRTIO_IOMMU_PGTF_VTD_SL, .ias = S1_IAS,
		.granule = 12, .root = self->root,
	};

	return a;
}

static int do_ioctl(int fd, unsigned long cmd, void *arg)
{
	return ioctl(fd, cmd, arg) ? -errno : 0;
}

static int attach(struct _test_data_nest *self)
{
	struct vfio_iommu_nesting_attach a = attach_arg(self);

	return do_ioctl(self->container, VFIO_IOMMU_NESTING_ATTACH, &a);
}

static int detach(struct _test_data_nest *self)
{
	struct vfio_iommu_nesting_detach d = {
		.argsz = sizeof(d), .group = self->group_id,
	};

	return do_ioctl(self->container, VFIO_IOMMU_NESTING_DETACH, &d);
}

static int invalidate(struct _test_data_nest *self, uint64_t iova, uint64_t size)
{
	struct vfio_iommu_nesting_invalidate inv = {
		.argsz = sizeof(inv), .group = self->group_id,
		.flags = size ? VFIO_NESTING_INVAL_RANGE : 0,
		.iova = iova, .size = size,
	};

	return do_ioctl(self->container, VFIO_IOMMU_NESTING_INVALIDATE, &inv);
}

/* Copy @len bytes by DMA from stage-1 IOVA @src to @dst through the edu */
static int copy(struct _test_data_nest *self, uint64_t src, uint64_t dst,
		uint64_t len)
{
	return edu_dma(self->bar, src, EDU_BUFFER, len, false) ?:
	       edu_dma(self->bar, EDU_BUFFER, dst, len, true);
}

/*
 * Has the IOMMU driver logged a fault within 2 s?  1 yes, 0 no, -1 when
 * the scenario names no EDU_FAULT_PATTERN (QEMU 7.2's amd-iommu reports
 * none): the caller checked memory and skips at its end.  Intel's driver
 * logs two lines a fault, ten per five seconds from the first after a
 * pause: fault_window() waits for one, then three faults are all seen.
 */
static int fault_logged(int kmsg)
{
	const char *pattern = getenv("EDU_FAULT_PATTERN");
	char seen[256];

	if (!pattern || !*pattern)
		return -1;
	return fault_reported(kmsg, seen, sizeof(seen));
}

static void fault_window(void)
{
	sleep_ms(5100);
}

/* The edu's PCI requester ID, from its address */
static uint32_t edu_rid(void)
{
	unsigned int bus, dev, fn;

	if (sscanf(edu_bdf, "%*x:%x:%x.%x", &bus, &dev, &fn) != 3)
		return ~0U;
	return bus << 8 | dev << 3 | fn;
}

/* Take every waiting fault record; how many there were */
static int drain_faults(int container)
{
	struct vfio_iommu_nesting_fault f[8];
	struct vfio_iommu_nesting_faults q = {
		.argsz = sizeof(q), .records = (uintptr_t)f,
	};
	int n = 0;

	do {
		q.nr = 8;
		if (ioctl(container, VFIO_IOMMU_NESTING_FAULTS, &q))
			return -1;
		n += q.nr;
	} while (q.nr);
	return n;
}

/*
 * The oldest fault record, waiting for it on the eventfd @efd for up to
 * 2 s: 0, or -1 when none came.
 */
static int next_fault(int container, int efd, struct vfio_iommu_nesting_fault *f)
{
	struct vfio_iommu_nesting_faults q = {
		.argsz = sizeof(q), .records = (uintptr_t)f,
	};
	struct pollfd p = { .fd = efd, .events = POLLIN };
	uint64_t n;
	int i;

	for (i = 0; i < 2; i++) {
		q.nr = 1;
		if (ioctl(container, VFIO_IOMMU_NESTING_FAULTS, &q))
			return -1;
		if (q.nr == 1)
			return 0;
		if (poll(&p, 1, 2000) != 1 || read(efd, &n, sizeof(n)) != sizeof(n))
			return -1;
	}
	return -1;
}

/*
 * Where the IOMMU driver reports its faults to the domain's handler
 * (NEST_FAULT_RECORDS=1: intel-iommu, smmuv3), the fault of a write to
 * @iova must come to userspace: the record names the page, the
 * edu's group and requester ID, a write, reason MAPPING.  Records past the
 * first (a transfer may fault on more than one page) are dropped.
 */
#define EXPECT_FAULT_RECORD(_iova)					\
	do {								\
		struct vfio_iommu_nesting_fault _f;			\
		uint64_t _want = (_iova);				\
									\
		if (!records)						\
			break;						\
		ASSERT_EQ(0, next_fault(self->container, efd, &_f))	\
			TH_LOG("no fault record for %#lx", (unsigned long)_want); \
		EXPECT_EQ(_want, _f.iova & ~(PG - 1));			\
		EXPECT_EQ(self->group_id, _f.group);			\
		EXPECT_EQ(edu_rid(), _f.device);			\
		EXPECT_EQ(VFIO_NESTING_FAULT_WRITE, _f.flags);		\
		EXPECT_EQ(VIRTIO_IOMMU_FAULT_R_MAPPING, _f.reason);	\
		EXPECT_LE(0, drain_faults(self->container));		\
	} while (0)

/* A container of @type with the edu's group in it; -errno of SET_IOMMU */
static int container_of_type(struct __test_metadata *_metadata,
			     struct _test_data_nest *self, unsigned long type)
{
	char path[64];

	self->container = open("/dev/vfio/vfio", O_RDWR);
	if (self->container < 0)
		return -errno;
	snprintf(path, sizeof(path), "/dev/vfio/%d", self->group_id);
	self->group = open(path, O_RDWR);
	if (self->group < 0)
		return -errno;
	if (ioctl(self->group, VFIO_GROUP_SET_CONTAINER, &self->container))
		return -errno;
	return ioctl(self->container, VFIO_SET_IOMMU, type) ? -errno : 0;
}

FIXTURE_SETUP(nest)
{
	self->container = -1;
	self->group = -1;
	self->device = -1;
	self->kmsg = -1;
	if (find_edu())
		SKIP(return, "no edu device (QEMU -device edu)");
	ASSERT_EQ(0, bind_vfio_pci());
	self->group_id = edu_iommu_group();
	ASSERT_LE(0, self->group_id);
	ASSERT_EQ(0, container_of_type(_metadata, self,
				       VFIO_TYPE1_NESTING_IOMMU));
	ASSERT_EQ(1, ioctl(self->container, VFIO_CHECK_EXTENSION,
			   VFIO_TYPE1_NESTING_IOMMU));
	self->device = ioctl(self->group, VFIO_GROUP_GET_DEVICE_FD, edu_bdf);
	ASSERT_LE(0, self->device);
	open_bar(_metadata, self->device, &self->bar, &self->bar_size);

	self->guest = mmap(NULL, GUEST_SIZE, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, self->guest);
	fill(self->guest, GUEST_SIZE, 7);
	ASSERT_EQ(0, map_dma(self->container, self->guest, GPA_BASE,
			     GUEST_SIZE));
	self->root = s1_new_table(self);

	self->kmsg = open("/dev/kmsg", O_RDONLY | O_NONBLOCK);
	ASSERT_LE(0, self->kmsg);
	lseek(self->kmsg, 0, SEEK_END);
}

FIXTURE_TEARDOWN(nest)
{
	int fds[] = { self->device, self->group, self->container, self->kmsg };

	edu_close(self->bar, self->bar_size, fds, ARRAY_SIZE(fds));
}

TEST_F(nest, info)
{
	struct vfio_iommu_nesting_info info = { .argsz = sizeof(info) };

	ASSERT_EQ(0, do_ioctl(self->container, VFIO_IOMMU_NESTING_INFO, &info));
	TH_LOG("flags %#x formats %#x max_pages %u max_walk %u", info.flags,
	       info.formats, info.max_pages, info.max_walk);
	ASSERT_EQ(VFIO_NESTING_INFO_SHADOW, info.flags);
	ASSERT_TRUE(info.formats & (1 << VIRTIO_IOMMU_PGTF_VTD_SL));
	ASSERT_NE(0, info.max_pages);
	ASSERT_NE(0, info.max_walk);
	info.argsz = 8;
	ASSERT_EQ(-EINVAL, do_ioctl(self->container, VFIO_IOMMU_NESTING_INFO,
				    &info));
}

/*
 * Stage 1 sends IOVA_SRC and IOVA_DST to data pages 1 and 5: the edu's
 * copy lands in page 5 with page 1's bytes, and no other page changes.
 * Without the stage 1, the same IOVAs are stage 2's: nothing there.
 */
TEST_F(nest, dma_through_stage1)
{
	uint8_t *before = malloc(GUEST_SIZE);

	ASSERT_NE(NULL, before);
	ASSERT_EQ(0, s1_map(self, IOVA_SRC, data_gpa(1)));
	ASSERT_EQ(0, s1_map(self, IOVA_DST, data_gpa(5)));
	ASSERT_EQ(0, s1_map(self, IOVA_DST + PG, data_gpa(2)));
	ASSERT_EQ(0, attach(self));
	memcpy(before, self->guest, GUEST_SIZE);

	ASSERT_EQ(0, copy(self, IOVA_SRC + 8, IOVA_DST + 16, EDU_MAX_XFER));
	ASSERT_EQ(0, memcmp(gpa_ptr(self, data_gpa(5)) + 16,
			    gpa_ptr(self, data_gpa(1)) + 8, EDU_MAX_XFER))
		TH_LOG("the copy did not land in the page stage 1 names");
	/* Everything but those bytes of page 5 is as it was */
	memcpy(before + DATA_OFF + 5 * PG + 16,
	       gpa_ptr(self, data_gpa(5)) + 16, EDU_MAX_XFER);
	ASSERT_EQ(0, memcmp(before, self->guest, GUEST_SIZE));

	/* A copy across the two stage-1 pages: two guest pages, in order */
	ASSERT_EQ(0, copy(self, IOVA_SRC, IOVA_DST + PG - 1024, EDU_MAX_XFER));
	ASSERT_EQ(0, memcmp(gpa_ptr(self, data_gpa(5)) + PG - 1024,
			    gpa_ptr(self, data_gpa(1)), 1024));
	ASSERT_EQ(0, memcmp(gpa_ptr(self, data_gpa(2)),
			    gpa_ptr(self, data_gpa(1)) + 1024, 1024));
	free(before);
}

/*
 * A 2 MiB stage-1 leaf (the PS bit at level 1) over all of guest memory:
 * DMA through any of its pages lands at the same offset of guest memory,
 * and what DMA through 4 KiB leaves wrote is read back through it.
 */
TEST_F(nest, dma_through_stage1_2m_leaf)
{
	uint64_t l1 = s1_new_table(self), *t;

	ASSERT_NE(0, l1);
	/* Level 2 entry to a level-1 table whose entry is the 2 MiB leaf */
	*s1_slot(self, self->root, IOVA_LARGE, 2) = l1 | S1_R | S1_W;
	t = s1_slot(self, l1, IOVA_LARGE, 1);
	*t = GPA_BASE | S1_R | S1_W | S1_PS;
	ASSERT_EQ(0, s1_map(self, IOVA_SRC, data_gpa(1)));
	ASSERT_EQ(0, attach(self));

	/* In through the large leaf, from page 1 to page 6 */
	fill(gpa_ptr(self, data_gpa(1)), EDU_MAX_XFER, 21);
	ASSERT_EQ(0, copy(self, IOVA_LARGE + DATA_OFF + PG,
			  IOVA_LARGE + DATA_OFF + 6 * PG + 32, EDU_MAX_XFER));
	ASSERT_EQ(0, memcmp(gpa_ptr(self, data_gpa(6)) + 32,
			    gpa_ptr(self, data_gpa(1)), EDU_MAX_XFER));
	/* From a 4 KiB leaf to the last page of the large one */
	fill(gpa_ptr(self, data_gpa(1)), EDU_MAX_XFER, 22);
	ASSERT_EQ(0, copy(self, IOVA_SRC,
			  IOVA_LARGE + GUEST_SIZE - PG, EDU_MAX_XFER));
	ASSERT_EQ(0, memcmp(gpa_ptr(self, GPA_BASE + GUEST_SIZE - PG),
			    gpa_ptr(self, data_gpa(1)), EDU_MAX_XFER));

	/* Cleared and invalidated: the whole 2 MiB translates no more */
	*t = 0;
	ASSERT_EQ(0, invalidate(self, IOVA_LARGE, GUEST_SIZE));
	memset(gpa_ptr(self, data_gpa(7)), 0x5a, PG);
	ASSERT_EQ(0, copy(self, IOVA_SRC,
			  IOVA_LARGE + DATA_OFF + 7 * PG, EDU_FAULT_XFER));
	EXPECT_EQ(0x5a, *(uint8_t *)gpa_ptr(self, data_gpa(7)));
}

/*
 * 2 MiB composed pages (vfio-nesting.rst: "large pages where both stages
 * allow"): 2 MiB stage-1 leaves onto 2 MiB of guest memory that stage 2
 * backs with one host huge page compose as one page each.  So a stage 1
 * of 140 such leaves (280 MiB, which would be 71680 pages of 4 KiB, past
 * the bound of 65536) attaches, DMA through two of them lands where they
 * say, and an UNMAP_DMA of the huge page takes every one of them out.
 */
TEST_F(nest, stage1_2m_leaves_compose_large)
{
	struct vfio_iommu_type1_info info = { .argsz = sizeof(info) };
	uint64_t last = IOVA_HUGE + 16 * HUGE_SZ;	/* within 28 bits */
	uint8_t *huge;
	unsigned int i;

	ASSERT_EQ(0, ioctl(self->container, VFIO_IOMMU_GET_INFO, &info));
	if (!(info.flags & VFIO_IOMMU_INFO_PGSIZES) ||
	    !(info.iova_pgsizes & HUGE_SZ))
		SKIP(return, "the IOMMU has no 2 MiB page");
	write_str("/proc/sys/vm/nr_hugepages", "2");
	huge = mmap(NULL, HUGE_SZ, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | MAP_POPULATE,
		    -1, 0);
	if (huge == MAP_FAILED)
		SKIP(return, "no 2 MiB huge page (vm.nr_hugepages)");
	ASSERT_EQ(0, map_dma(self->container, huge, GPA_HUGE, HUGE_SZ));
	for (i = 0; i < HUGE_LEAVES; i++)
		ASSERT_EQ(0, s1_map_2m(self, IOVA_HUGE + i * HUGE_SZ, GPA_HUGE));
	ASSERT_EQ(0, attach(self))
		TH_LOG("2 MiB leaves did not compose as 2 MiB pages");

	fill(huge, PG, 31);
	memset(huge + 8 * PG, 0, PG);
	ASSERT_EQ(0, copy(self, IOVA_HUGE, last + 8 * PG, EDU_MAX_XFER));
	EXPECT_EQ(0, memcmp(huge + 8 * PG, huge, EDU_MAX_XFER));

	/* Stage 2 gives the huge page back: no leaf reaches it any more */
	ASSERT_EQ(0, unmap_dma(self->container, GPA_HUGE, HUGE_SZ));
	memset(huge + 16 * PG, 0x5a, PG);
	ASSERT_EQ(0, edu_dma(self->bar, EDU_BUFFER, last + 16 * PG,
			     EDU_FAULT_XFER, true));
	for (i = 0; i < EDU_FAULT_XFER; i++)
		EXPECT_EQ(0x5a, huge[16 * PG + i]);
	munmap(huge, HUGE_SZ);
}

/*
 * A stage-1 change takes effect at INVALIDATE, range or whole, and the
 * old translation is gone: the page it named sees no more writes.
 */
TEST_F(nest, invalidate_moves_a_page)
{
	uint8_t old[PG];

	ASSERT_EQ(0, s1_map(self, IOVA_SRC, data_gpa(1)));
	ASSERT_EQ(0, s1_map(self, IOVA_DST, data_gpa(5)));
	ASSERT_EQ(0, attach(self));
	ASSERT_EQ(0, copy(self, IOVA_SRC, IOVA_DST, EDU_MAX_XFER));
	ASSERT_EQ(0, memcmp(gpa_ptr(self, data_gpa(5)),
			    gpa_ptr(self, data_gpa(1)), EDU_MAX_XFER));

	/* Move IOVA_DST to page 6, by range */
	ASSERT_EQ(0, s1_map(self, IOVA_DST, data_gpa(6)));
	ASSERT_EQ(0, invalidate(self, IOVA_DST, PG));
	fill(gpa_ptr(self, data_gpa(1)), EDU_MAX_XFER, 11);
	memcpy(old, gpa_ptr(self, data_gpa(5)), PG);
	ASSERT_EQ(0, copy(self, IOVA_SRC, IOVA_DST, EDU_MAX_XFER));
	ASSERT_EQ(0, memcmp(gpa_ptr(self, data_gpa(6)),
			    gpa_ptr(self, data_gpa(1)), EDU_MAX_XFER));
	ASSERT_EQ(0, memcmp(old, gpa_ptr(self, data_gpa(5)), PG))
		TH_LOG("the old translation survived INVALIDATE");

	/* And to page 7, invalidating everything */
	ASSERT_EQ(0, s1_map(self, IOVA_DST, data_gpa(7)));
	ASSERT_EQ(0, invalidate(self, 0, 0));
	fill(gpa_ptr(self, data_gpa(1)), EDU_MAX_XFER, 12);
	memcpy(old, gpa_ptr(self, data_gpa(6)), PG);
	ASSERT_EQ(0, copy(self, IOVA_SRC, IOVA_DST, EDU_MAX_XFER));
	ASSERT_EQ(0, memcmp(gpa_ptr(self, data_gpa(7)),
			    gpa_ptr(self, data_gpa(1)), EDU_MAX_XFER));
	ASSERT_EQ(0, memcmp(old, gpa_ptr(self, data_gpa(6)), PG));

	/* Cleared and invalidated: the write faults, no page changes */
	ASSERT_EQ(0, s1_set(self, IOVA_DST, 0));
	ASSERT_EQ(0, invalidate(self, IOVA_DST, PG));
	memcpy(old, gpa_ptr(self, data_gpa(7)), PG);
	ASSERT_EQ(0, copy(self, IOVA_SRC, IOVA_DST, EDU_FAULT_XFER));
	ASSERT_EQ(0, memcmp(old, gpa_ptr(self, data_gpa(7)), PG));
}

/*
 * DMA to an IOVA stage 1 does not map, to one whose stage-1 entry names
 * guest-physical memory outside stage 2, or to a guest-physical address
 * used as an IOVA, faults: guest memory is untouched, the IOMMU driver
 * logs each, and each reaches userspace as a fault record, the eventfd
 * signalled (VFIO_IOMMU_NESTING_FAULT_FD, VFIO_IOMMU_NESTING_FAULTS).
 */
TEST_F(nest, stage1_faults)
{
	const char *pattern = getenv("EDU_FAULT_PATTERN");
	const char *want_records = getenv("NEST_FAULT_RECORDS");
	struct vfio_iommu_nesting_fault_fd fd = { .argsz = sizeof(fd) };
	struct vfio_iommu_nesting_faults q = {
		.argsz = sizeof(q), .nr = 1, .records = 8,
	};
	uint8_t *before = malloc(GUEST_SIZE);
	bool records = want_records && !strcmp(want_records, "1");
	int logged, efd;

	ASSERT_NE(NULL, before);
	efd = eventfd(0, EFD_NONBLOCK);
	ASSERT_LE(0, efd);
	fd.fd = efd;
	ASSERT_EQ(0, do_ioctl(self->container, VFIO_IOMMU_NESTING_FAULT_FD, &fd));
	ASSERT_EQ(0, s1_map(self, IOVA_SRC, data_gpa(1)));
	ASSERT_EQ(0, s1_map(self, IOVA_DST, GPA_NEVER));
	ASSERT_EQ(0, attach(self));
	memcpy(before, self->guest, GUEST_SIZE);
	if (pattern && *pattern)
		fault_window();

	ASSERT_EQ(0, copy(self, IOVA_SRC, IOVA_HOLE, EDU_FAULT_XFER));
	ASSERT_EQ(0, memcmp(before, self->guest, GUEST_SIZE));
	logged = fault_logged(self->kmsg);
	EXPECT_NE(0, logged) TH_LOG("no fault logged for a stage-1 hole");
	/* A record userspace cannot take stays waiting */
	if (records) {
		sleep_ms(500);
		EXPECT_EQ(-EFAULT, do_ioctl(self->container,
					    VFIO_IOMMU_NESTING_FAULTS, &q));
	}
	EXPECT_FAULT_RECORD(IOVA_HOLE);

	ASSERT_EQ(0, copy(self, IOVA_SRC, IOVA_DST, EDU_FAULT_XFER));
	ASSERT_EQ(0, memcmp(before, self->guest, GUEST_SIZE));
	EXPECT_NE(0, fault_logged(self->kmsg))
		TH_LOG("no fault logged for an entry outside stage 2");
	EXPECT_FAULT_RECORD(IOVA_DST);

	ASSERT_EQ(0, copy(self, IOVA_SRC, data_gpa(5), EDU_FAULT_XFER));
	ASSERT_EQ(0, memcmp(before, self->guest, GUEST_SIZE));
	EXPECT_NE(0, fault_logged(self->kmsg))
		TH_LOG("no fault logged for a guest-physical address");
	EXPECT_FAULT_RECORD(data_gpa(5));
	/* DMA through stage 1 that works makes no record */
	ASSERT_EQ(0, s1_map(self, IOVA_DST, data_gpa(2)));
	ASSERT_EQ(0, invalidate(self, IOVA_DST, PG));
	ASSERT_EQ(0, copy(self, IOVA_SRC, IOVA_DST, EDU_FAULT_XFER));
	EXPECT_EQ(0, memcmp(gpa_ptr(self, data_gpa(2)),
			    gpa_ptr(self, data_gpa(1)), EDU_FAULT_XFER));
	EXPECT_EQ(0, drain_faults(self->container));
	close(efd);
	free(before);
	if (logged < 0)
		SKIP(return, "memory checked; no EDU_FAULT_PATTERN for the log");
}

/*
 * UNMAP_DMA of stage 2 under a live stage 1: the edu cannot reach the
 * pages VFIO unpinned (the test still owns and checks them), and an
 * INVALIDATE does not bring them back.
 */
TEST_F(nest, unmap_dma_under_stage1)
{
	const uint64_t gpa_extra = GPA_BASE + 2 * GUEST_SIZE;
	uint8_t old[PG];
	uint8_t *extra;

	extra = mmap(NULL, PG, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, extra);
	fill(extra, PG, 9);
	ASSERT_EQ(0, map_dma(self->container, extra, gpa_extra, PG));
	ASSERT_EQ(0, s1_map(self, IOVA_SRC, data_gpa(1)));
	ASSERT_EQ(0, s1_map(self, IOVA_DST, gpa_extra));
	ASSERT_EQ(0, attach(self));

	/* The extra page works while stage 2 maps it... */
	ASSERT_EQ(0, copy(self, IOVA_SRC, IOVA_DST, EDU_MAX_XFER));
	ASSERT_EQ(0, memcmp(extra, gpa_ptr(self, data_gpa(1)), EDU_MAX_XFER));
	/* ...and is out of reach once UNMAP_DMA took it away */
	ASSERT_EQ(0, unmap_dma(self->container, gpa_extra, PG));
	memcpy(old, extra, PG);
	fill(gpa_ptr(self, data_gpa(1)), EDU_MAX_XFER, 13);
	ASSERT_EQ(0, copy(self, IOVA_SRC, IOVA_DST, EDU_FAULT_XFER));
	ASSERT_EQ(0, memcmp(old, extra, PG))
		TH_LOG("DMA reached a page after UNMAP_DMA of its stage 2");
	ASSERT_EQ(0, invalidate(self, 0, 0));
	ASSERT_EQ(0, copy(self, IOVA_SRC, IOVA_DST, EDU_FAULT_XFER));
	ASSERT_EQ(0, memcmp(old, extra, PG));
	munmap(extra, PG);
}

/* Detach gives the group stage 2 back; replace swaps the table */
TEST_F(nest, detach_and_replace)
{
	ASSERT_EQ(0, s1_map(self, IOVA_SRC, data_gpa(1)));
	ASSERT_EQ(0, s1_map(self, IOVA_DST, data_gpa(5)));
	ASSERT_EQ(0, attach(self));
	/* A second table, IOVA_DST to page 8 */
	self->root = s1_new_table(self);
	ASSERT_EQ(0, s1_map(self, IOVA_SRC, data_gpa(1)));
	ASSERT_EQ(0, s1_map(self, IOVA_DST, data_gpa(8)));
	ASSERT_EQ(0, attach(self));
	ASSERT_EQ(0, copy(self, IOVA_SRC, IOVA_DST, EDU_MAX_XFER));
	ASSERT_EQ(0, memcmp(gpa_ptr(self, data_gpa(8)),
			    gpa_ptr(self, data_gpa(1)), EDU_MAX_XFER));
	ASSERT_NE(0, memcmp(gpa_ptr(self, data_gpa(5)),
			    gpa_ptr(self, data_gpa(1)), EDU_MAX_XFER));

	ASSERT_EQ(0, detach(self));
	ASSERT_EQ(-ENOENT, detach(self));
	/* Stage 2 alone: guest-physical addresses are the IOVAs again */
	fill(gpa_ptr(self, data_gpa(1)), EDU_MAX_XFER, 14);
	ASSERT_EQ(0, copy(self, data_gpa(1), data_gpa(9), EDU_MAX_XFER));
	ASSERT_EQ(0, memcmp(gpa_ptr(self, data_gpa(9)),
			    gpa_ptr(self, data_gpa(1)), EDU_MAX_XFER));
	ASSERT_EQ(-ENOENT, invalidate(self, 0, 0));
}

/*
 * Hostile tables cost bounded work: a table whose every entry points back
 * at the root, and one whose 512 x 512 x 512 entries all reach the same
 * pages (2^27 pages), are refused (E2BIG) or attached in bounded time.
 */
TEST_F(nest, hostile_tables)
{
	uint64_t *root = gpa_ptr(self, self->root);
	uint64_t mid = s1_new_table(self), leafs = s1_new_table(self);
	uint64_t *m = gpa_ptr(self, mid), *l = gpa_ptr(self, leafs);
	struct timespec t0, t1;
	int i, ret;

	/* Every entry of every level back to the root: a cycle */
	for (i = 0; i < 512; i++)
		root[i] = self->root | S1_R | S1_W;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = attach(self);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	TH_LOG("self-referencing table: %d in %ld ms", ret,
	       (t1.tv_sec - t0.tv_sec) * 1000 +
	       (t1.tv_nsec - t0.tv_nsec) / 1000000);
	ASSERT_TRUE(ret == 0 || ret == -E2BIG);
	ASSERT_LT(t1.tv_sec - t0.tv_sec, 30);

	/* Fan-out: everything reaches data page 1 */
	for (i = 0; i < 512; i++) {
		root[i] = mid | S1_R | S1_W;
		m[i] = leafs | S1_R | S1_W;
		l[i] = data_gpa(1) | S1_R | S1_W;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = invalidate(self, 0, 0);
	if (ret == -ENOENT)	/* the cycle was refused: attach this one */
		ret = attach(self);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	TH_LOG("fan-out to 2^27 pages: %d in %ld ms", ret,
	       (t1.tv_sec - t0.tv_sec) * 1000 +
	       (t1.tv_nsec - t0.tv_nsec) / 1000000);
	ASSERT_EQ(-E2BIG, ret);
	ASSERT_LT(t1.tv_sec - t0.tv_sec, 60);

	/* A misaligned or out-of-range root is refused up front */
	self->root += 8;
	ASSERT_EQ(-EINVAL, attach(self));
}

/* Arm fail-nth @fd for the @n-th fault site from now (0: disarm) */
static void fail_nth_set(int fd, unsigned int n)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%u", n);
	if (pwrite(fd, buf, strlen(buf), 0) < 0)
		perror("fail-nth");
}

/* Did the armed failure happen?  Disarms. */
static bool fail_nth_hit(int fd)
{
	char buf[16] = "";

	if (pread(fd, buf, sizeof(buf) - 1, 0) <= 0)
		return false;
	fail_nth_set(fd, 0);
	return atoi(buf) == 0;
}

/*
 * Every allocation of ATTACH (a replace: the group has a table) and of a
 * whole INVALIDATE fails once in turn (fail-nth, on kernels with fault
 * injection): each returns 0 or ENOMEM, and afterwards the last call that
 * succeeded is what the edu sees.  The debug kernel's KASAN and kmemleak
 * watch the error paths.
 */
TEST_F(nest, fail_nth)
{
	int fd = open("/proc/thread-self/fail-nth", O_RDWR);
	unsigned int n, hits = 0;
	int ret;

	if (fd < 0)
		SKIP(return, "no fail-nth (CONFIG_FAULT_INJECTION)");
	write_str("/sys/kernel/debug/failslab/ignore-gfp-wait", "N");
	write_str("/sys/kernel/debug/failslab/verbose", "0");
	write_str("/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait", "N");
	write_str("/sys/kernel/debug/fail_page_alloc/min-order", "0");
	write_str("/sys/kernel/debug/fail_page_alloc/verbose", "0");
	ASSERT_EQ(0, s1_map(self, IOVA_SRC, data_gpa(1)));
	ASSERT_EQ(0, s1_map(self, IOVA_DST, data_gpa(5)));
	ASSERT_EQ(0, attach(self));
	for (n = 1; n < 400; n++) {
		fail_nth_set(fd, n);
		ret = attach(self);
		if (!fail_nth_hit(fd))
			break;
		hits++;
		ASSERT_TRUE(ret == 0 || ret == -ENOMEM) TH_LOG("%d at %u", ret, n);
	}
	ASSERT_EQ(0, ret);
	ASSERT_EQ(0, copy(self, IOVA_SRC, IOVA_DST, EDU_MAX_XFER));
	ASSERT_EQ(0, memcmp(gpa_ptr(self, data_gpa(5)),
			    gpa_ptr(self, data_gpa(1)), EDU_MAX_XFER));

	ASSERT_EQ(0, s1_map(self, IOVA_DST, data_gpa(6)));
	for (n = 1; n < 400; n++) {
		fail_nth_set(fd, n);
		ret = invalidate(self, 0, 0);
		if (!fail_nth_hit(fd))
			break;
		hits++;
		ASSERT_TRUE(ret == 0 || ret == -ENOMEM) TH_LOG("%d at %u", ret, n);
	}
	ASSERT_EQ(0, ret);
	fill(gpa_ptr(self, data_gpa(1)), EDU_MAX_XFER, 15);
	ASSERT_EQ(0, copy(self, IOVA_SRC, IOVA_DST, EDU_MAX_XFER));
	ASSERT_EQ(0, memcmp(gpa_ptr(self, data_gpa(6)),
			    gpa_ptr(self, data_gpa(1)), EDU_MAX_XFER));
	TH_LOG("%u allocations failed in turn", hits);
	ASSERT_LT(0, hits);
	close(fd);
}

/* Every new ioctl refuses bad arguments */
TEST_F(nest, bad_arguments)
{
	struct vfio_iommu_nesting_detach d, detach_ok = {
		.argsz = sizeof(d), .group = self->group_id,
	};
	/* Both scopes of INVALIDATE, each valid as it stands */
	struct vfio_iommu_nesting_invalidate inv, whole = {
		.argsz = sizeof(inv), .group = self->group_id,
	}, range = {
		.argsz = sizeof(inv), .group = self->group_id,
		.flags = VFIO_NESTING_INVAL_RANGE, .size = PG,
	};
	struct vfio_iommu_nesting_fault_fd ffd, ffd_ok = {
		.argsz = sizeof(ffd), .fd = -1,
	};
	struct vfio_iommu_nesting_fault rec[4];
	struct vfio_iommu_nesting_faults fq, fq_ok = {
		.argsz = sizeof(fq), .nr = 4, .records = (uintptr_t)rec,
	};
	int c = self->container;

/*
 * @req on a copy of the valid @ok with only @field set to @val must fail
 * with @err: each case starts again from arguments the ioctl takes.
 */
#define BAD(err, req, ok, field, val)					\
	do {								\
		typeof(ok) bad = ok;					\
		bad.field = val;					\
		EXPECT_EQ(err, do_ioctl(c, req, &bad))			\
			TH_LOG(#req ": " #field " = " #val);		\
	} while (0)
#define BAD_ATTACH(err, field, val)					\
	BAD(err, VFIO_IOMMU_NESTING_ATTACH, attach_arg(self), field, val)
#define BAD_DETACH(err, field, val)					\
	BAD(err, VFIO_IOMMU_NESTING_DETACH, detach_ok, field, val)
#define BAD_INVAL(err, ok, field, val)					\
	BAD(err, VFIO_IOMMU_NESTING_INVALIDATE, ok, field, val)

	BAD_ATTACH(-EINVAL, argsz, 8);
	BAD_ATTACH(-EINVAL, flags, 1);
	BAD_ATTACH(-EINVAL, reserved[0], 1);
	BAD_ATTACH(-EINVAL, reserved[1], 1);
	BAD_ATTACH(-EOPNOTSUPP, format, 0);
	BAD_ATTACH(-EOPNOTSUPP, format, 2);
	BAD_ATTACH(-EOPNOTSUPP, format, 0xffff);
	BAD_ATTACH(-EINVAL, ias, 40);
	BAD_ATTACH(-EINVAL, ias, 65);
	BAD_ATTACH(-EINVAL, granule, 13);
	BAD_ATTACH(-EINVAL, granule, 16);
	BAD_ATTACH(-EINVAL, granule, 255);
	BAD_ATTACH(-EINVAL, root, self->root + 8);
	BAD_ATTACH(-EINVAL, root, 1ULL << 60);
	BAD_ATTACH(-ENOENT, group, self->group_id + 1000);

	/* Nothing attached yet */
	d = detach_ok;
	EXPECT_EQ(-ENOENT, do_ioctl(c, VFIO_IOMMU_NESTING_DETACH, &d));
	BAD_DETACH(-EINVAL, flags, 1);
	BAD_DETACH(-EINVAL, reserved, 1);
	BAD_DETACH(-EINVAL, argsz, 4);

	inv = whole;
	EXPECT_EQ(-ENOENT, do_ioctl(c, VFIO_IOMMU_NESTING_INVALIDATE, &inv));
	ASSERT_EQ(0, attach(self));
	BAD_INVAL(-EINVAL, whole, flags, 2);
	/* The whole scope takes no range */
	BAD_INVAL(-EINVAL, whole, iova, PG);
	/* An empty range, one that wraps */
	BAD_INVAL(-EINVAL, range, size, 0);
	BAD_INVAL(-EINVAL, range, iova, ~0ULL - PG + 2);
	BAD_INVAL(-EINVAL, range, reserved, 1);
	BAD_INVAL(-EINVAL, range, argsz, 12);
	BAD_INVAL(-ENOENT, range, group, self->group_id + 1000);
	/* Beyond the input size: nothing to do, not an error */
	inv = range;
	inv.iova = 1ULL << S1_IAS;
	EXPECT_EQ(0, do_ioctl(c, VFIO_IOMMU_NESTING_INVALIDATE, &inv));

	/* Faults: an eventfd or -1, no flags; none waiting to be read */
	ffd = ffd_ok;
	EXPECT_EQ(0, do_ioctl(c, VFIO_IOMMU_NESTING_FAULT_FD, &ffd));
	BAD(-EINVAL, VFIO_IOMMU_NESTING_FAULT_FD, ffd_ok, argsz, 8);
	BAD(-EINVAL, VFIO_IOMMU_NESTING_FAULT_FD, ffd_ok, flags, 1);
	BAD(-EINVAL, VFIO_IOMMU_NESTING_FAULT_FD, ffd_ok, reserved, 1);
	BAD(-EINVAL, VFIO_IOMMU_NESTING_FAULT_FD, ffd_ok, fd, -2);
	BAD(-EINVAL, VFIO_IOMMU_NESTING_FAULT_FD, ffd_ok, fd, c);
	BAD(-EBADF, VFIO_IOMMU_NESTING_FAULT_FD, ffd_ok, fd, 1000);
	fq = fq_ok;
	EXPECT_EQ(0, do_ioctl(c, VFIO_IOMMU_NESTING_FAULTS, &fq));
	EXPECT_EQ(0, fq.nr);
	EXPECT_EQ(0, fq.dropped);
	BAD(-EINVAL, VFIO_IOMMU_NESTING_FAULTS, fq_ok, argsz, 8);
	BAD(-EINVAL, VFIO_IOMMU_NESTING_FAULTS, fq_ok, flags, 1);
}

/* Nanoseconds of CLOCK_MONOTONIC */
static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000000000ULL + t.tv_nsec;
}

#define BENCH_IOVA	0x08000000UL	/* the guest's mappings go here */
#define BENCH_PAGES	64		/* cycled through */
#define BENCH_XFER	EDU_MAX_XFER	/* bytes an edu copy moves */
#define BENCH_COPIES	8		/* copies a DMA measurement makes */

/*
 * One path's guest map and unmap: @map gives page @i (IOVA BENCH_IOVA + i
 * pages) the guest page @gpa, @unmap takes it away.
 */
struct bench_path {
	const char *name;
	int (*map)(struct _test_data_nest *self, unsigned int i, uint64_t gpa);
	int (*unmap)(struct _test_data_nest *self, unsigned int i);
};

/* Nesting: the guest writes its stage 1 and sends INVALIDATE, forwarded */
static int nested_map(struct _test_data_nest *self, unsigned int i, uint64_t gpa)
{
	uint64_t iova = BENCH_IOVA + i * PG;

	return s1_map(self, iova, gpa) ?: invalidate(self, iova, PG);
}

static int nested_unmap(struct _test_data_nest *self, unsigned int i)
{
	uint64_t iova = BENCH_IOVA + i * PG;

	return s1_set(self, iova, 0) ?: invalidate(self, iova, PG);
}

/*
 * Today's userspace VMM: each guest MAP becomes a MAP_DMA of the page's
 * host address at the guest's IOVA (the VMM composes), each UNMAP an
 * UNMAP_DMA; the group has no stage 1.
 */
static int vmm_map(struct _test_data_nest *self, unsigned int i, uint64_t gpa)
{
	return map_dma(self->container, gpa_ptr(self, gpa), BENCH_IOVA + i * PG,
		       PG);
}

static int vmm_unmap(struct _test_data_nest *self, unsigned int i)
{
	return unmap_dma(self->container, BENCH_IOVA + i * PG, PG);
}

/*
 * Map and unmap pages for @secs seconds; the mean of each in @map_ns and
 * @unmap_ns, and how many pairs.
 */
static long bench_pairs(struct _test_data_nest *self,
			const struct bench_path *p, double secs,
			uint64_t *map_ns, uint64_t *unmap_ns)
{
	uint64_t end = now_ns() + secs * 1e9, t, tm = 0, tu = 0;
	long n;

	for (n = 0; now_ns() < end; n++) {
		unsigned int i = n % BENCH_PAGES;

		t = now_ns();
		if (p->map(self, i, data_gpa(8 + i)))
			return -1;
		tm += now_ns() - t;
		t = now_ns();
		if (p->unmap(self, i))
			return -1;
		tu += now_ns() - t;
	}
	*map_ns = n ? tm / n : 0;
	*unmap_ns = n ? tu / n : 0;
	return n;
}

/* Bytes per second of edu copies from @src to @dst, data checked */
static double bench_dma(struct _test_data_nest *self, uint64_t src,
			uint64_t dst, uint64_t src_gpa, uint64_t dst_gpa)
{
	uint64_t t = now_ns();
	int i;

	for (i = 0; i < BENCH_COPIES; i++) {
		fill(gpa_ptr(self, src_gpa), BENCH_XFER, i);
		if (copy(self, src, dst, BENCH_XFER) ||
		    memcmp(gpa_ptr(self, src_gpa), gpa_ptr(self, dst_gpa),
			   BENCH_XFER))
			return -1;
	}
	return (double)BENCH_COPIES * BENCH_XFER * 1e9 / (now_ns() - t);
}

/* One path's result for the host (testbed/bench_vfio_nesting.py) */
static void bench_line(unsigned int round, const char *path, long pairs,
		       uint64_t map_ns, uint64_t unmap_ns, double mb)
{
	printf("# bench-nested: round=%u path=%s pairs=%ld ", round, path,
	       pairs);
	printf("map_ns=%llu unmap_ns=%llu dma_mb_s=%.4f\n",
	       (unsigned long long)map_ns, (unsigned long long)unmap_ns, mb);
}

/*
 * make bench-nested (VFIO_NESTED_BENCH_SECONDS, VFIO_NESTED_BENCH_ROUNDS):
 * what a guest's map+unmap pair costs the host through nesting (a stage-1
 * entry and an INVALIDATE, recomposed) against today's userspace VMM (a
 * MAP_DMA and an UNMAP_DMA per guest map), and edu DMA through each and
 * through stage 2 alone (no vIOMMU).  The paths alternate within each
 * round; one "# bench-nested:" line per path and round.
 */
TEST_F_TIMEOUT(nest, bench, 3600)
{
	static const struct bench_path paths[] = {
		{ "nested", nested_map, nested_unmap },
		{ "vmm", vmm_map, vmm_unmap },
	};
	const char *env = getenv("VFIO_NESTED_BENCH_SECONDS");
	double secs = env ? atof(env) : 0, mb;
	unsigned int rounds = 1, r, k;
	uint64_t map_ns, unmap_ns;
	long n;

	if (!(secs > 0))
		SKIP(return, "a benchmark: set VFIO_NESTED_BENCH_SECONDS");
	if (getenv("VFIO_NESTED_BENCH_ROUNDS"))
		rounds = atoi(getenv("VFIO_NESTED_BENCH_ROUNDS")) ?: 1;
	/* Every table the nested path needs, and its DMA pages */
	for (k = 0; k < BENCH_PAGES; k++)
		ASSERT_EQ(0, s1_map(self, BENCH_IOVA + k * PG, data_gpa(8)));
	ASSERT_EQ(0, s1_map(self, IOVA_SRC, data_gpa(1)));
	ASSERT_EQ(0, s1_map(self, IOVA_DST, data_gpa(2)));
	for (k = 0; k < BENCH_PAGES; k++)
		ASSERT_EQ(0, s1_set(self, BENCH_IOVA + k * PG, 0));

	for (r = 0; r < rounds; r++) {
		for (k = 0; k < ARRAY_SIZE(paths); k++) {
			const struct bench_path *p = &paths[k];
			bool nested = p->map == nested_map;

			if (nested) {
				ASSERT_EQ(0, attach(self));
			} else {
				ASSERT_EQ(0, detach(self));
				ASSERT_EQ(0, map_dma(self->container,
						     gpa_ptr(self, data_gpa(1)),
						     IOVA_SRC, PG));
				ASSERT_EQ(0, map_dma(self->container,
						     gpa_ptr(self, data_gpa(2)),
						     IOVA_DST, PG));
			}
			n = bench_pairs(self, p, secs, &map_ns, &unmap_ns);
			ASSERT_LT(0, n) TH_LOG("%s: no pair", p->name);
			mb = bench_dma(self, IOVA_SRC, IOVA_DST, data_gpa(1),
				       data_gpa(2)) / 1e6;
			ASSERT_LT(0, mb) TH_LOG("%s: DMA failed", p->name);
			bench_line(r + 1, p->name, n, map_ns, unmap_ns, mb);
			if (!nested) {
				ASSERT_EQ(0, unmap_dma(self->container,
						       IOVA_SRC, PG));
				ASSERT_EQ(0, unmap_dma(self->container,
						       IOVA_DST, PG));
			}
		}
		/* No vIOMMU: the device uses guest-physical addresses */
		mb = bench_dma(self, data_gpa(1), data_gpa(2), data_gpa(1),
			       data_gpa(2)) / 1e6;
		ASSERT_LT(0, mb) TH_LOG("none: DMA failed");
		bench_line(r + 1, "none", 0, 0, 0, mb);
	}
}

/* A container that is not a nesting one has none of it */
TEST(not_nesting)
{
	struct _test_data_nest s = { .container = -1, .group = -1 }, *self = &s;
	struct vfio_iommu_nesting_info info = { .argsz = sizeof(info) };
	struct vfio_iommu_nesting_fault_fd ffd = {
		.argsz = sizeof(ffd), .fd = -1,
	};
	struct vfio_iommu_nesting_faults q = { .argsz = sizeof(q) };
	struct vfio_iommu_nesting_attach a;

	if (find_edu())
		SKIP(return, "no edu device (QEMU -device edu)");
	ASSERT_EQ(0, bind_vfio_pci());
	self->group_id = edu_iommu_group();
	ASSERT_LE(0, self->group_id);
	ASSERT_EQ(0, container_of_type(_metadata, self, VFIO_TYPE1v2_IOMMU));
	a = attach_arg(self);
	EXPECT_EQ(-ENODEV, do_ioctl(self->container, VFIO_IOMMU_NESTING_INFO,
				    &info));
	EXPECT_EQ(-ENODEV, do_ioctl(self->container, VFIO_IOMMU_NESTING_ATTACH,
				    &a));
	EXPECT_EQ(-ENODEV, do_ioctl(self->container,
				    VFIO_IOMMU_NESTING_FAULT_FD, &ffd));
	EXPECT_EQ(-ENODEV, do_ioctl(self->container, VFIO_IOMMU_NESTING_FAULTS,
				    &q));
	close(self->group);
	close(self->container);
}

TEST_HARNESS_MAIN
