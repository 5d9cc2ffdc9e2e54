// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests for the generic IOMMU page table library.
 *
 * Every test runs on every configuration in gpt_cfgs[]: each page size,
 * each protection combination, cut, dirty tracking, AMD top level growth,
 * bad input, the iommu core glue, and a long seeded random sequence checked
 * against a page-granular reference model.  Leaks are caught by requiring
 * the table page count to drop to zero at deinit.
 */
#include <kunit/test.h>
#include <linux/completion.h>
#include <linux/generic_pt/gpt.h>
#include <linux/generic_pt/iommu.h>
#include <linux/generic_pt/marks.h>
#include <linux/kthread.h>
#include <linux/moduleparam.h>
#include <linux/sched.h>
#include <linux/sizes.h>
#include <linux/vmalloc.h>

#include "../iommu-pages.h"

struct gpt_test_cfg {
	const char *name;
	enum gpt_format fmt;
	union {
		struct gpt_armv8_cfg arm;
		struct gpt_amdv1_cfg amd;
		struct gpt_vtdss_cfg vtd;
	};
	u64 pgsizes;		/* expected pgsize_bitmap */
	unsigned int ias;	/* expected input bits after init */
};

#define ARM(n, g, st, in_bits, f, sizes)				\
	{ .name = n, .fmt = GPT_FMT_ARMV8, .arm = { .granule = g,	\
	  .stage = st, .ias = in_bits, .oas = 48, .flags = f,		\
	  .nid = NUMA_NO_NODE }, .pgsizes = sizes, .ias = in_bits }

static const struct gpt_test_cfg gpt_cfgs[] = {
	ARM("armv8_s1_4k", SZ_4K, 1, 48, 0, SZ_4K | SZ_2M | SZ_1G),
	ARM("armv8_s1_16k", SZ_16K, 1, 48, 0, SZ_16K | SZ_32M),
	ARM("armv8_s1_64k", SZ_64K, 1, 48, 0, SZ_64K | SZ_512M),
	ARM("armv8_s2_4k", SZ_4K, 2, 48, 0, SZ_4K | SZ_2M | SZ_1G),
	ARM("armv8_s2_4k_40bit_concat", SZ_4K, 2, 40, 0,
	    SZ_4K | SZ_2M | SZ_1G),
	ARM("armv8_s2_16k_concat", SZ_16K, 2, 48, 0, SZ_16K | SZ_32M),
	ARM("armv8_s2_64k", SZ_64K, 2, 48, 0, SZ_64K | SZ_512M),
	ARM("armv8_s1_4k_contig_dbm", SZ_4K, 1, 48,
	    GPT_ARMV8_CONTIG | GPT_ARMV8_DBM,
	    SZ_4K | SZ_64K | SZ_2M | SZ_32M | SZ_1G | 16ULL * SZ_1G),
	ARM("armv8_s2_16k_contig_dbm", SZ_16K, 2, 48,
	    GPT_ARMV8_CONTIG | GPT_ARMV8_DBM,
	    SZ_16K | SZ_2M | SZ_32M | SZ_1G),
	ARM("armv8_s1_64k_contig", SZ_64K, 1, 48, GPT_ARMV8_CONTIG,
	    SZ_64K | SZ_2M | SZ_512M | 16ULL * SZ_1G),
	{ .name = "amdv1_3lvl", .fmt = GPT_FMT_AMDV1,
	  .amd = { .levels = 3, .nid = NUMA_NO_NODE },
	  .pgsizes = GENMASK_ULL(51, 12) ^ SZ_512G, .ias = 39 },
	{ .name = "amdv1_1lvl_grow", .fmt = GPT_FMT_AMDV1,
	  .amd = { .levels = 1, .nid = NUMA_NO_NODE },
	  .pgsizes = GENMASK_ULL(51, 12) ^ SZ_512G, .ias = 21 },
	{ .name = "amdv1_6lvl", .fmt = GPT_FMT_AMDV1,
	  .amd = { .levels = 6, .nid = NUMA_NO_NODE },
	  .pgsizes = GENMASK_ULL(51, 12) ^ SZ_512G, .ias = 64 },
	{ .name = "vtdss_3lvl", .fmt = GPT_FMT_VTDSS,
	  .vtd = { .levels = 3, .nid = NUMA_NO_NODE },
	  .pgsizes = SZ_4K | SZ_2M | SZ_1G, .ias = 39 },
	{ .name = "vtdss_4lvl", .fmt = GPT_FMT_VTDSS,
	  .vtd = { .levels = 4, .flags = GPT_VTDSS_SNP, .nid = NUMA_NO_NODE },
	  .pgsizes = SZ_4K | SZ_2M | SZ_1G, .ias = 48 },
	{ .name = "vtdss_5lvl", .fmt = GPT_FMT_VTDSS,
	  .vtd = { .levels = 5, .nid = NUMA_NO_NODE },
	  .pgsizes = SZ_4K | SZ_2M | SZ_1G, .ias = 57 },
	{ .name = "vtdss_4lvl_no1g", .fmt = GPT_FMT_VTDSS,
	  .vtd = { .levels = 4, .flags = GPT_VTDSS_NO_1G,
		   .nid = NUMA_NO_NODE },
	  .pgsizes = SZ_4K | SZ_2M, .ias = 48 },
};

static void gpt_cfg_desc(const struct gpt_test_cfg *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(gpt_cfgs, gpt_cfgs, gpt_cfg_desc);

static atomic_t gpt_top_changes;

static void gpt_test_top_changed(struct gpt_table *t)
{
	atomic_inc(&gpt_top_changes);
}

static int gpt_test_init(const struct gpt_test_cfg *c, struct gpt_table *t)
{
	struct gpt_amdv1_cfg amd;

	switch (c->fmt) {
	case GPT_FMT_ARMV8:
		return gpt_armv8_init(t, &c->arm, GFP_KERNEL);
	case GPT_FMT_AMDV1:
		amd = c->amd;
		amd.top_changed = gpt_test_top_changed;
		return gpt_amdv1_init(t, &amd, GFP_KERNEL);
	case GPT_FMT_VTDSS:
		return gpt_vtdss_init(t, &c->vtd, GFP_KERNEL);
	}
	return -EINVAL;
}

struct gpt_test {
	struct kunit *test;
	const struct gpt_test_cfg *c;
	struct gpt_table t;
	struct iommu_iotlb_gather gather;
	u64 min;		/* smallest page size */
};

static void gpt_test_setup(struct kunit *test, struct gpt_test *gt)
{
	gt->test = test;
	gt->c = test->param_value;
	KUNIT_ASSERT_EQ(test, gpt_test_init(gt->c, &gt->t), 0);
	KUNIT_EXPECT_EQ(test, gt->t.pgsize_bitmap, gt->c->pgsizes);
	KUNIT_EXPECT_EQ(test, (unsigned int)gt->t.ias, gt->c->ias);
	gt->min = 1ULL << __ffs64(gt->t.pgsize_bitmap);
	iommu_iotlb_gather_init(&gt->gather);
}

/* What an IOMMU driver's iotlb_sync does after the flush */
static void gpt_test_sync(struct gpt_test *gt)
{
	iommu_put_pages_list(&gt->gather.freelist);
	iommu_iotlb_gather_init(&gt->gather);
}

static size_t gpt_test_unmap(struct gpt_test *gt, u64 iova, u64 len)
{
	size_t ret = gpt_unmap(&gt->t, iova, len, &gt->gather);

	gpt_test_sync(gt);
	return ret;
}

/* Everything freed: no table page may survive deinit */
static void gpt_test_teardown(struct gpt_test *gt)
{
	gpt_deinit(&gt->t);
	gpt_test_sync(gt);
	KUNIT_EXPECT_EQ(gt->test, atomic_long_read(&gt->t.nr_tables), 0);
}

/* Largest input address usable in tests of this configuration */
static u64 gpt_test_max_iova(const struct gpt_test_cfg *c)
{
	unsigned int bits = c->fmt == GPT_FMT_AMDV1 ? 64 : c->ias;

	return bits == 64 ? U64_MAX : (1ULL << bits) - 1;
}

static void gpt_test_expect_map(struct gpt_test *gt, u64 iova, u64 pa,
				u64 size, u64 leaf)
{
	struct kunit *test = gt->test;
	phys_addr_t got;
	u64 got_size;

	KUNIT_ASSERT_EQ(test, gpt_lookup(&gt->t, iova, &got, &got_size, NULL),
			0);
	KUNIT_EXPECT_EQ(test, (u64)got, pa);
	KUNIT_EXPECT_EQ(test, got_size, leaf);
	KUNIT_ASSERT_EQ(test, gpt_lookup(&gt->t, iova + size - 1, &got, NULL,
					 NULL), 0);
	KUNIT_EXPECT_EQ(test, (u64)got, pa + size - 1);
	KUNIT_EXPECT_EQ(test, (u64)gpt_iova_to_phys(&gt->t, iova + size / 2),
			pa + size / 2);
}

static void gpt_test_init_deinit(struct kunit *test)
{
	struct gpt_test gt;

	gpt_test_setup(test, &gt);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&gt.t.nr_tables), 1);
	KUNIT_EXPECT_EQ(test, gpt_lookup(&gt.t, 0, NULL, NULL, NULL), -ENOENT);
	gpt_test_teardown(&gt);
}

/*
 * Every page size the format offers, at an address that makes it the only
 * choice; then cut it down step by step, translation unchanged, and unmap.
 */
static void gpt_test_every_size(struct kunit *test)
{
	const struct gpt_test_cfg *c = test->param_value;
	unsigned long sizes = c->pgsizes;
	unsigned int bit;

	for_each_set_bit(bit, &sizes, 64) {
		u64 size = 1ULL << bit, iova = size * 3, pa = size;
		u64 leaf = size, new_leaf;
		struct gpt_test gt;
		int ret, cuts = 0;

		if (iova + size - 1 > gpt_test_max_iova(c) ||
		    pa + size - 1 >= (1ULL << (c->fmt == GPT_FMT_ARMV8 ? 48 : 52)))
			continue;
		gpt_test_setup(test, &gt);
		KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, iova, pa, size,
					      IOMMU_READ | IOMMU_WRITE,
					      GFP_KERNEL, NULL), 0);
		gpt_test_expect_map(&gt, iova, pa, size, size);
		KUNIT_EXPECT_EQ(test, gpt_lookup(&gt.t, iova - 1, NULL, NULL,
						 NULL), -ENOENT);
		if (iova + size <= gpt_test_max_iova(c))
			KUNIT_EXPECT_EQ(test, gpt_lookup(&gt.t, iova + size,
							 NULL, NULL, NULL),
					-ENOENT);

		/* Unmapping half of it must not happen */
		if (size > gt.min) {
			KUNIT_EXPECT_EQ(test, gpt_test_unmap(&gt, iova,
							     size / 2), 0);
			KUNIT_EXPECT_EQ(test, gpt_test_unmap(&gt, iova + gt.min,
							     size - gt.min), 0);
		}

		/* Cut in the middle until the smallest page */
		for (;;) {
			u64 mid = iova + size / 2;

			ret = gpt_cut(&gt.t, mid, GFP_KERNEL);
			if (ret)
				break;
			cuts++;
			KUNIT_ASSERT_EQ(test, gpt_lookup(&gt.t, mid, NULL,
							 &new_leaf, NULL), 0);
			KUNIT_EXPECT_LT(test, new_leaf, leaf);
			leaf = new_leaf;
			gpt_test_expect_map(&gt, iova, pa, size,
					    gpt_lookup(&gt.t, iova, NULL,
						       &new_leaf, NULL) ?
					    0 : new_leaf);
		}
		if (leaf == gt.min)
			KUNIT_EXPECT_EQ(test, ret, -EEXIST);
		else
			KUNIT_EXPECT_EQ(test, ret, -EOPNOTSUPP);

		KUNIT_EXPECT_EQ(test, gpt_test_unmap(&gt, iova, size), size);
		KUNIT_EXPECT_EQ(test, gpt_lookup(&gt.t, iova + size / 2, NULL,
						 NULL, NULL), -ENOENT);
		KUNIT_EXPECT_EQ(test, gpt_test_unmap(&gt, iova, size), 0);
		gpt_test_teardown(&gt);
	}
}

/* Permission bits as the hardware reads them, decoded from the specs */
static void gpt_test_decode_rw(const struct gpt_test_cfg *c, u64 pte,
			       bool *r, bool *w)
{
	switch (c->fmt) {
	case GPT_FMT_ARMV8:
		if (c->arm.stage == 1) {
			*r = true;
			*w = !(pte & BIT_ULL(7)) ||
			     ((c->arm.flags & GPT_ARMV8_DBM) &&
			      (pte & BIT_ULL(51)));
		} else {
			*r = pte & BIT_ULL(6);
			*w = pte & BIT_ULL(7);
		}
		return;
	case GPT_FMT_AMDV1:
		*r = pte & BIT_ULL(61);
		*w = pte & BIT_ULL(62);
		return;
	case GPT_FMT_VTDSS:
		*r = pte & BIT_ULL(0);
		*w = pte & BIT_ULL(1);
		return;
	}
}

static void gpt_test_prot(struct kunit *test)
{
	const struct gpt_test_cfg *c = test->param_value;
	struct gpt_test gt;
	int prot;

	gpt_test_setup(test, &gt);
	for (prot = 0; prot < 64; prot++) {
		u64 iova = gt.min * (prot + 16), *ptep;
		bool r, w;
		int ret;

		ret = gpt_map(&gt.t, iova, iova, gt.min, prot, GFP_KERNEL,
			      NULL);
		if (!(prot & (IOMMU_READ | IOMMU_WRITE))) {
			KUNIT_EXPECT_EQ(test, ret, -EINVAL);
			continue;
		}
		KUNIT_ASSERT_EQ(test, ret, 0);
		KUNIT_ASSERT_EQ(test, gpt_lookup(&gt.t, iova, NULL, NULL,
						 &ptep), 0);
		gpt_test_decode_rw(c, *ptep, &r, &w);
		KUNIT_EXPECT_EQ(test, r, !!(prot & IOMMU_READ) ||
				(c->fmt == GPT_FMT_ARMV8 && c->arm.stage == 1));
		KUNIT_EXPECT_EQ(test, w, !!(prot & IOMMU_WRITE));
		if (c->fmt == GPT_FMT_ARMV8) {
			/* AF always; XN exactly for NOEXEC */
			KUNIT_EXPECT_TRUE(test, *ptep & BIT_ULL(10));
			KUNIT_EXPECT_EQ(test, !!(*ptep & GENMASK_ULL(54, 53)),
					!!(prot & IOMMU_NOEXEC));
			if (c->arm.stage == 1)
				KUNIT_EXPECT_EQ(test, !(*ptep & BIT_ULL(6)),
						!!(prot & IOMMU_PRIV));
		}
		if (c->fmt == GPT_FMT_VTDSS)
			KUNIT_EXPECT_EQ(test, !!(*ptep & BIT_ULL(11)),
					!!(c->vtd.flags & GPT_VTDSS_SNP));
		if (c->fmt == GPT_FMT_AMDV1)
			KUNIT_EXPECT_EQ(test, *ptep & (BIT_ULL(0) | BIT_ULL(60)),
					BIT_ULL(0) | BIT_ULL(60));
	}
	gpt_test_teardown(&gt);
}

/* What gpt_walk() reported, for gpt_test_walk_sw() */
#define GPT_WALK_MAX	8

struct gpt_walk_log {
	struct gpt_leaf leaf[GPT_WALK_MAX];
	unsigned int n;
	unsigned int stop_after;	/* 0: never stop the walk */
	unsigned int mid_sw;		/* bits seen between first and last */
};

static int gpt_test_walk_fn(const struct gpt_leaf *leaf, void *arg)
{
	struct gpt_walk_log *log = arg;

	/* Past the limit the last slot holds the latest page */
	if (log->n >= 2)
		log->mid_sw |= log->leaf[min(log->n - 1, GPT_WALK_MAX - 1)].sw;
	log->leaf[min(log->n, GPT_WALK_MAX - 1)] = *leaf;
	log->n++;
	return log->n == log->stop_after ? 42 : 0;
}

struct gpt_walk_want {
	u64 iova;
	u64 pa;
	int prot;
	unsigned int sw;
};

/*
 * gpt_walk() and the software bits: three ranges (marked, one marked page,
 * unmarked) come back page by page with their addresses and prot, and their
 * marks where the format has room; gpt_set_sw() changes only what it is
 * asked to; a large page cut in pieces keeps its first and last marks.
 */
static void gpt_test_walk_sw(struct kunit *test)
{
	const struct gpt_test_cfg *c = test->param_value;
	bool has_sw = c->fmt != GPT_FMT_VTDSS;
	int rw = IOMMU_READ | IOMMU_WRITE;
	int mark = has_sw ? GPT_PROT_MARK : 0;
	struct gpt_walk_log log = {};
	struct gpt_test gt;
	u64 g, a, pa, big;
	struct gpt_walk_want want[6];
	unsigned int i;

	gpt_test_setup(test, &gt);
	g = gt.min;
	a = 64 * g;
	pa = 1001 * g;		/* odd: every page is a smallest page */
	KUNIT_EXPECT_EQ(test, gpt_map(&gt.t, a, pa, 3 * g, rw | GPT_PROT_MARK,
				      GFP_KERNEL, NULL),
			has_sw ? 0 : -EOPNOTSUPP);
	if (!has_sw)
		KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, a, pa, 3 * g, rw,
					      GFP_KERNEL, NULL), 0);
	KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, a + 5 * g, 2001 * g, g,
				      IOMMU_READ | mark, GFP_KERNEL, NULL), 0);
	KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, a + 7 * g, 3001 * g, 2 * g, rw,
				      GFP_KERNEL, NULL), 0);
	for (i = 0; i < 3; i++)
		want[i] = (struct gpt_walk_want){ a + i * g, pa + i * g, rw,
			i == 0 ? GPT_SW_FIRST : i == 2 ? GPT_SW_LAST : 0 };
	want[3] = (struct gpt_walk_want){ a + 5 * g, 2001 * g, IOMMU_READ,
				     GPT_SW_FIRST | GPT_SW_LAST };
	for (i = 0; i < 2; i++)
		want[4 + i] = (struct gpt_walk_want){ a + (7 + i) * g,
						 (3001 + i) * g, rw, 0 };

	KUNIT_EXPECT_EQ(test, gpt_walk(&gt.t, 0, gpt_test_max_iova(c),
				       gpt_test_walk_fn, &log), 0);
	KUNIT_ASSERT_EQ(test, log.n, 6U);
	for (i = 0; i < 6; i++) {
		KUNIT_EXPECT_EQ(test, log.leaf[i].iova, want[i].iova);
		KUNIT_EXPECT_EQ(test, (u64)log.leaf[i].pa, want[i].pa);
		KUNIT_EXPECT_EQ(test, log.leaf[i].size, g);
		KUNIT_EXPECT_EQ(test, log.leaf[i].prot & rw, want[i].prot);
		KUNIT_EXPECT_EQ(test, log.leaf[i].sw,
				has_sw ? want[i].sw : 0);
	}

	/* From inside a page: that page first; stopped on request */
	log = (struct gpt_walk_log){ .stop_after = 2 };
	KUNIT_EXPECT_EQ(test, gpt_walk(&gt.t, a + g + 1, 100 * g,
				       gpt_test_walk_fn, &log), 42);
	KUNIT_EXPECT_EQ(test, log.n, 2U);
	KUNIT_EXPECT_EQ(test, log.leaf[0].iova, a + g);
	KUNIT_EXPECT_EQ(test, log.leaf[1].iova, a + 2 * g);
	/* A hole has nothing to visit; bad input is refused */
	log = (struct gpt_walk_log){};
	KUNIT_EXPECT_EQ(test, gpt_walk(&gt.t, a + 3 * g, 2 * g,
				       gpt_test_walk_fn, &log), 0);
	KUNIT_EXPECT_EQ(test, log.n, 0U);
	KUNIT_EXPECT_EQ(test, gpt_walk(&gt.t, a, 0, gpt_test_walk_fn, &log),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, gpt_walk(&gt.t, a, g, NULL, NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, gpt_walk(&gt.t, U64_MAX, 2, gpt_test_walk_fn,
				       &log), -EINVAL);

	if (!has_sw) {
		KUNIT_EXPECT_EQ(test, gpt_set_sw(&gt.t, a, GPT_SW_USER, 0),
				-EOPNOTSUPP);
		goto out;
	}
	KUNIT_EXPECT_EQ(test, gpt_set_sw(&gt.t, a, GPT_SW_USER, 0),
			GPT_SW_FIRST);
	KUNIT_EXPECT_EQ(test, gpt_set_sw(&gt.t, a + 1, 0, GPT_SW_USER),
			GPT_SW_FIRST | GPT_SW_USER);
	KUNIT_EXPECT_EQ(test, gpt_set_sw(&gt.t, a + 2 * g, 0, 0),
			GPT_SW_LAST);
	KUNIT_EXPECT_EQ(test, gpt_set_sw(&gt.t, a + 3 * g, GPT_SW_USER, 0),
			-ENOENT);
	KUNIT_EXPECT_EQ(test, gpt_set_sw(&gt.t, a, BIT(5), 0), -EINVAL);
	KUNIT_EXPECT_EQ(test, (u64)gpt_iova_to_phys(&gt.t, a + 1), pa + 1);

	/* The next page size up, cut one step down: marks at both ends */
	big = 1ULL << __ffs64(gt.t.pgsize_bitmap & ~g);
	KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, 16 * big, big, big,
				      rw | GPT_PROT_MARK, GFP_KERNEL, NULL), 0);
	log = (struct gpt_walk_log){};
	KUNIT_EXPECT_EQ(test, gpt_walk(&gt.t, 16 * big, big, gpt_test_walk_fn,
				       &log), 0);
	KUNIT_EXPECT_EQ(test, log.n, 1U);
	KUNIT_EXPECT_EQ(test, log.leaf[0].size, big);
	KUNIT_EXPECT_EQ(test, log.leaf[0].sw, GPT_SW_FIRST | GPT_SW_LAST);
	KUNIT_ASSERT_EQ(test, gpt_cut(&gt.t, 16 * big + g, GFP_KERNEL), 0);
	log = (struct gpt_walk_log){};
	KUNIT_EXPECT_EQ(test, gpt_walk(&gt.t, 16 * big, big, gpt_test_walk_fn,
				       &log), 0);
	KUNIT_EXPECT_GE(test, log.n, 2U);
	KUNIT_EXPECT_EQ(test, log.leaf[0].sw, GPT_SW_FIRST);
	KUNIT_EXPECT_EQ(test, log.leaf[min(log.n, GPT_WALK_MAX) - 1].sw,
			GPT_SW_LAST);
	KUNIT_EXPECT_EQ(test, log.mid_sw, 0U);
	KUNIT_EXPECT_EQ(test, (u64)gpt_iova_to_phys(&gt.t, 16 * big + g + 5),
			big + g + 5);
	gpt_test_unmap(&gt, 16 * big, big);
out:
	gpt_test_unmap(&gt, a, 9 * g);
	KUNIT_EXPECT_EQ(test, gpt_lookup(&gt.t, a + 8 * g, NULL, NULL, NULL),
			-ENOENT);
	gpt_test_teardown(&gt);
}

static int gpt_test_count_fn(const struct gpt_leaf *leaf, void *arg)
{
	(*(unsigned int *)arg)++;
	return 0;
}

/*
 * The lookups of <linux/generic_pt/marks.h>: a marked range is found from
 * any of its pages, as far as asked; whether a range holds a page, the
 * whole input space included (a length cannot say 2^64 in AMD v1).
 */
static void gpt_test_marks(struct kunit *test)
{
	const struct gpt_test_cfg *c = test->param_value;
	int mark = IOMMU_READ | IOMMU_WRITE | GPT_PROT_MARK;
	u64 top = gpt_test_max_iova(c);
	struct gpt_leaf page;
	struct gpt_test gt;
	unsigned int n = 0;
	u64 g, a;

	if (c->fmt == GPT_FMT_VTDSS)
		kunit_skip(test, "no software bits in this format");
	gpt_test_setup(test, &gt);
	g = gt.min;
	a = 64 * g;
	/* Four pages of their own (odd output), and a range of one after */
	KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, a, 1001 * g, 4 * g, mark,
				      GFP_KERNEL, NULL), 0);
	KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, a + 4 * g, 2001 * g, g, mark,
				      GFP_KERNEL, NULL), 0);

	KUNIT_EXPECT_FALSE(test, gpt_marks_page(&gt.t, a - 1, &page));
	KUNIT_ASSERT_TRUE(test, gpt_marks_page(&gt.t, a + g + 5, &page));
	KUNIT_EXPECT_EQ(test, page.iova, a + g);
	KUNIT_EXPECT_EQ(test, page.sw, 0U);
	/* To the page marked last, never into the range after it */
	KUNIT_EXPECT_EQ(test, gpt_marks_end(&gt.t, &page, top), a + 4 * g - 1);
	/* As far as asked: up to the page that holds the limit */
	KUNIT_EXPECT_EQ(test, gpt_marks_end(&gt.t, &page, a + 2 * g),
			a + 3 * g - 1);
	KUNIT_EXPECT_EQ(test, gpt_marks_end(&gt.t, &page, a + g),
			a + 2 * g - 1);
	KUNIT_ASSERT_TRUE(test, gpt_marks_page(&gt.t, a + 4 * g, &page));
	KUNIT_EXPECT_EQ(test, page.sw, GPT_SW_FIRST | GPT_SW_LAST);
	KUNIT_EXPECT_EQ(test, gpt_marks_end(&gt.t, &page, top), a + 5 * g - 1);

	KUNIT_EXPECT_TRUE(test, gpt_marks_any(&gt.t, 0, top));
	KUNIT_EXPECT_TRUE(test, gpt_marks_any(&gt.t, a + 5 * g - 1,
					      a + 5 * g - 1));
	KUNIT_EXPECT_FALSE(test, gpt_marks_any(&gt.t, a + 5 * g, top));
	KUNIT_EXPECT_FALSE(test, gpt_marks_any(&gt.t, 0, a - 1));

	/* A page at the very top, alone: a lookup of everything sees it */
	KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, top - g + 1, 3001 * g, g, mark,
				      GFP_KERNEL, NULL), 0);
	gpt_test_unmap(&gt, a, 5 * g);
	KUNIT_EXPECT_TRUE(test, gpt_marks_any(&gt.t, 0, top));
	KUNIT_EXPECT_TRUE(test, gpt_marks_any(&gt.t, top, top));
	KUNIT_EXPECT_FALSE(test, gpt_marks_any(&gt.t, 0, top - g));
	KUNIT_EXPECT_EQ(test, gpt_marks_walk(&gt.t, 0, top, gpt_test_count_fn,
					     &n), 0);
	KUNIT_EXPECT_EQ(test, n, 1U);
	gpt_test_unmap(&gt, top - g + 1, g);
	KUNIT_EXPECT_FALSE(test, gpt_marks_any(&gt.t, 0, top));
	gpt_test_teardown(&gt);
}

/*
 * gpt_unmap() of a single page keeps its tables; gpt_unmap_prune() frees
 * every one it leaves empty, up to the top, and none that holds a page.
 */
static void gpt_test_unmap_prune(struct kunit *test)
{
	int rw = IOMMU_READ | IOMMU_WRITE;
	struct gpt_test gt;
	long one, both;
	u64 g, a;

	gpt_test_setup(test, &gt);
	g = gt.min;
	/* Far from 0: no table below the top in common */
	a = (1ULL << (min_t(unsigned int,
			    fls64(gpt_test_max_iova(gt.c)), 48) - 1)) + 7 * g;
	/* AMD v1 grows its top to reach it: once, before counting */
	KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, a, 5 * g, g, rw, GFP_KERNEL,
				      NULL), 0);
	KUNIT_EXPECT_EQ(test, gpt_unmap_prune(&gt.t, a, g, &gt.gather), g);
	gpt_test_sync(&gt);
	KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, 0, 9 * g, g, rw, GFP_KERNEL,
				      NULL), 0);
	one = atomic_long_read(&gt.t.nr_tables);
	KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, a, 5 * g, g, rw, GFP_KERNEL,
				      NULL), 0);
	both = atomic_long_read(&gt.t.nr_tables);
	KUNIT_EXPECT_GT(test, both, one);

	KUNIT_EXPECT_EQ(test, gpt_test_unmap(&gt, a, g), g);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&gt.t.nr_tables), both);
	KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, a, 5 * g, g, rw, GFP_KERNEL,
				      NULL), 0);
	KUNIT_EXPECT_EQ(test, gpt_unmap_prune(&gt.t, a, g, &gt.gather), g);
	gpt_test_sync(&gt);
	KUNIT_EXPECT_EQ(test, gpt_lookup(&gt.t, a, NULL, NULL, NULL), -ENOENT);
	gpt_test_expect_map(&gt, 0, 9 * g, g, g);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&gt.t.nr_tables), one);
	KUNIT_EXPECT_EQ(test, gpt_unmap_prune(&gt.t, 0, g, &gt.gather), g);
	gpt_test_sync(&gt);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&gt.t.nr_tables), 1);
	KUNIT_EXPECT_EQ(test, gpt_lookup(&gt.t, 0, NULL, NULL, NULL), -ENOENT);
	gpt_test_teardown(&gt);
}

/*
 * With gpt_keep_spares(), the tables an unmap empties stay counted, up to
 * GPT_MAX_SPARES of the smallest size, instead of going to the gather: the
 * same maps and unmap as on a table without spares put fewer pages on the
 * freelist. A map takes them back, and finds them empty (its neighbours
 * unmapped).
 */
static void gpt_test_spares(struct kunit *test)
{
	int rw = IOMMU_READ | IOMMU_WRITE;
	struct gpt_test gt, ref;
	size_t kept, freed;
	u64 g, a;
	long both;

	gpt_test_setup(test, &gt);
	gpt_test_setup(test, &ref);
	gpt_keep_spares(&gt.t);
	g = gt.min;
	a = (1ULL << (min_t(unsigned int,
			    fls64(gpt_test_max_iova(gt.c)), 48) - 1)) + 7 * g;
	KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, 0, 9 * g, g, rw, GFP_KERNEL,
				      NULL), 0);
	KUNIT_ASSERT_EQ(test, gpt_map(&ref.t, 0, 9 * g, g, rw, GFP_KERNEL,
				      NULL), 0);
	KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, a, 5 * g, g, rw, GFP_KERNEL,
				      NULL), 0);
	KUNIT_ASSERT_EQ(test, gpt_map(&ref.t, a, 5 * g, g, rw, GFP_KERNEL,
				      NULL), 0);
	both = atomic_long_read(&gt.t.nr_tables);
	KUNIT_EXPECT_EQ(test, gpt_unmap_prune(&gt.t, a, g, &gt.gather), g);
	KUNIT_EXPECT_EQ(test, gpt_unmap_prune(&ref.t, a, g, &ref.gather), g);
	kept = list_count_nodes(&gt.gather.freelist);
	freed = list_count_nodes(&ref.gather.freelist);
	KUNIT_EXPECT_GT(test, freed, 0);
	if (g <= PAGE_SIZE)
		KUNIT_EXPECT_LT(test, kept, freed);
	else
		KUNIT_EXPECT_EQ(test, kept, freed);
	gpt_test_sync(&gt);
	gpt_test_sync(&ref);
	/* Taken again, and empty: only the new page translates */
	KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, a + g, 3 * g, g, rw, GFP_KERNEL,
				      NULL), 0);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&gt.t.nr_tables), both);
	gpt_test_expect_map(&gt, a + g, 3 * g, g, g);
	KUNIT_EXPECT_EQ(test, gpt_lookup(&gt.t, a, NULL, NULL, NULL), -ENOENT);
	KUNIT_EXPECT_EQ(test, gpt_lookup(&gt.t, a + 2 * g, NULL, NULL, NULL),
			-ENOENT);
	gpt_test_teardown(&ref);
	gpt_test_teardown(&gt);
}

static void gpt_test_bad_input(struct kunit *test)
{
	const struct gpt_test_cfg *c = test->param_value;
	int rw = IOMMU_READ | IOMMU_WRITE;
	struct gpt_test gt;
	u64 m, big = 0;
	size_t mapped;

	gpt_test_setup(test, &gt);
	m = gt.min;
	KUNIT_EXPECT_EQ(test, gpt_map(&gt.t, m / 2, 0, m, rw, GFP_KERNEL,
				      NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, gpt_map(&gt.t, 0, m / 2, m, rw, GFP_KERNEL,
				      NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, gpt_map(&gt.t, 0, 0, m / 2, rw, GFP_KERNEL,
				      NULL), -EINVAL);
	KUNIT_EXPECT_EQ(test, gpt_map(&gt.t, 0, 0, 0, rw, GFP_KERNEL, NULL),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, gpt_map(&gt.t, 0, 0, m, 0, GFP_KERNEL, NULL),
			-EINVAL);
	KUNIT_EXPECT_EQ(test, gpt_map(&gt.t, -m, 0, 2 * m, rw, GFP_KERNEL,
				      NULL), -ERANGE);
	KUNIT_EXPECT_EQ(test, gpt_map(&gt.t, 0, 1ULL << 52, m, rw, GFP_KERNEL,
				      NULL), -ERANGE);
	if (c->fmt != GPT_FMT_AMDV1) {
		KUNIT_EXPECT_EQ(test, gpt_map(&gt.t, 1ULL << c->ias, 0, m, rw,
					      GFP_KERNEL, NULL), -ERANGE);
		KUNIT_EXPECT_EQ(test, gpt_lookup(&gt.t, 1ULL << c->ias, NULL,
						 NULL, NULL), -ERANGE);
		KUNIT_EXPECT_EQ(test, gpt_cut(&gt.t, 1ULL << c->ias,
					      GFP_KERNEL), -ERANGE);
	}
	KUNIT_EXPECT_EQ(test, gpt_test_unmap(&gt, 0, m), 0);
	KUNIT_EXPECT_EQ(test, gpt_test_unmap(&gt, m / 2, m), 0);
	KUNIT_EXPECT_EQ(test, gpt_unmap(&gt.t, 0, m, NULL), 0);
	KUNIT_EXPECT_EQ(test, gpt_cut(&gt.t, 0, GFP_KERNEL), -ENOENT);

	/* Overlap: the part before the conflict is mapped and reported */
	KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, 4 * m, 0, m, rw, GFP_KERNEL,
				      NULL), 0);
	mapped = 0;
	KUNIT_EXPECT_EQ(test, gpt_map(&gt.t, 2 * m, 0, 4 * m, rw, GFP_KERNEL,
				      &mapped), -EADDRINUSE);
	KUNIT_EXPECT_EQ(test, mapped, 2 * m);
	KUNIT_EXPECT_EQ(test, gpt_test_unmap(&gt, 2 * m, mapped), 2 * m);
	KUNIT_EXPECT_EQ(test, gpt_map(&gt.t, 4 * m, 0, m, rw, GFP_KERNEL,
				      NULL), -EADDRINUSE);
	KUNIT_EXPECT_EQ(test, gpt_cut(&gt.t, 4 * m, GFP_KERNEL), -EEXIST);

	/* A large page over small ones and small ones inside a large one */
	for (m = gt.min << 1; m && !(gt.t.pgsize_bitmap & m); m <<= 1)
		;
	if (m && m <= SZ_1G) {
		u64 base = m * 8;

		big = m;
		KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, base + gt.min, 0, gt.min,
					      rw, GFP_KERNEL, NULL), 0);
		mapped = 0;
		KUNIT_EXPECT_EQ(test, gpt_map(&gt.t, base, 0, big, rw,
					      GFP_KERNEL, &mapped),
				-EADDRINUSE);
		if (mapped)
			KUNIT_EXPECT_EQ(test, gpt_test_unmap(&gt, base, mapped),
					mapped);
		KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, base + big, 0, big, rw,
					      GFP_KERNEL, NULL), 0);
		KUNIT_EXPECT_EQ(test, gpt_map(&gt.t, base + big + gt.min, 0,
					      gt.min, rw, GFP_KERNEL, NULL),
				-EADDRINUSE);
		/* Small pages then a partly covered large page: stop there */
		KUNIT_EXPECT_EQ(test, gpt_test_unmap(&gt, base,
						     big + gt.min), big);
		KUNIT_EXPECT_EQ(test, gpt_iova_to_phys(&gt.t,
						       base + big + gt.min),
				gt.min);
	}

	if (c->fmt == GPT_FMT_ARMV8 && !(c->arm.flags & GPT_ARMV8_DBM)) {
		struct iommu_dirty_bitmap d = {};

		KUNIT_EXPECT_EQ(test, gpt_read_and_clear_dirty(&gt.t, 0, m, 0,
							       &d),
				-EOPNOTSUPP);
	}
	gpt_test_teardown(&gt);
}

static void gpt_test_bad_cfg(struct kunit *test)
{
	struct gpt_armv8_cfg arm = { .granule = SZ_4K, .stage = 1, .ias = 48,
				     .oas = 48 };
	struct gpt_vtdss_cfg vtd = { .levels = 4 };
	struct gpt_amdv1_cfg amd = { .levels = 3 };
	struct gpt_table t;

	arm.granule = SZ_8K;
	KUNIT_EXPECT_EQ(test, gpt_armv8_init(&t, &arm, GFP_KERNEL), -EINVAL);
	arm.granule = SZ_4K;
	arm.stage = 3;
	KUNIT_EXPECT_EQ(test, gpt_armv8_init(&t, &arm, GFP_KERNEL), -EINVAL);
	arm.stage = 1;
	arm.ias = 49;
	KUNIT_EXPECT_EQ(test, gpt_armv8_init(&t, &arm, GFP_KERNEL), -EINVAL);
	arm.ias = 48;
	arm.oas = 52;
	KUNIT_EXPECT_EQ(test, gpt_armv8_init(&t, &arm, GFP_KERNEL), -EINVAL);
	arm.oas = 48;
	arm.flags = BIT(7);
	KUNIT_EXPECT_EQ(test, gpt_armv8_init(&t, &arm, GFP_KERNEL), -EINVAL);
	vtd.levels = 2;
	KUNIT_EXPECT_EQ(test, gpt_vtdss_init(&t, &vtd, GFP_KERNEL), -EINVAL);
	vtd.levels = 6;
	KUNIT_EXPECT_EQ(test, gpt_vtdss_init(&t, &vtd, GFP_KERNEL), -EINVAL);
	amd.levels = 0;
	KUNIT_EXPECT_EQ(test, gpt_amdv1_init(&t, &amd, GFP_KERNEL), -EINVAL);
	amd.levels = 7;
	KUNIT_EXPECT_EQ(test, gpt_amdv1_init(&t, &amd, GFP_KERNEL), -EINVAL);
}

/* AMD v1: the top level follows the highest address mapped */
static void gpt_test_grow(struct kunit *test)
{
	const struct gpt_test_cfg *c = test->param_value;
	int rw = IOMMU_READ | IOMMU_WRITE;
	unsigned int lvl, start;
	struct gpt_test gt;

	if (c->fmt != GPT_FMT_AMDV1)
		kunit_skip(test, "only AMD v1 grows");
	atomic_set(&gpt_top_changes, 0);
	gpt_test_setup(test, &gt);
	start = gpt_top_level(&gt.t);
	KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, SZ_4K, SZ_4K, SZ_4K, rw,
				      GFP_KERNEL, NULL), 0);
	KUNIT_EXPECT_EQ(test, gpt_top_level(&gt.t), start);
	for (lvl = 1; lvl <= 5; lvl++) {
		u64 iova = 1ULL << (12 + 9 * lvl);

		/* Not mapped yet, but within what the table may grow to */
		if (lvl > gpt_top_level(&gt.t))
			KUNIT_EXPECT_EQ(test, gpt_lookup(&gt.t, iova, NULL,
							 NULL, NULL), -ENOENT);
		KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, iova, SZ_8K, SZ_4K, rw,
					      GFP_KERNEL, NULL), 0);
		KUNIT_EXPECT_EQ(test, gpt_top_level(&gt.t), max(lvl, start));
		KUNIT_EXPECT_EQ(test, gpt_iova_to_phys(&gt.t, iova), SZ_8K);
		KUNIT_EXPECT_EQ(test, gpt_iova_to_phys(&gt.t, SZ_4K), SZ_4K);
	}
	KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, 0xfffffffffffff000ULL, SZ_16K,
				      SZ_4K, rw, GFP_KERNEL, NULL), 0);
	KUNIT_EXPECT_EQ(test, gpt_top_level(&gt.t), 5U);
	KUNIT_EXPECT_EQ(test, gpt_iova_to_phys(&gt.t, U64_MAX), SZ_16K + 0xfff);
	KUNIT_EXPECT_EQ(test, atomic_read(&gpt_top_changes), 5 - (int)start);
	KUNIT_EXPECT_EQ(test, gpt_test_unmap(&gt, 0xfffffffffffff000ULL,
					     SZ_4K), SZ_4K);
	gpt_test_teardown(&gt);
}

/* Make @pte dirty the way the IOMMU would */
static void gpt_test_set_dirty(const struct gpt_test_cfg *c, u64 *ptep)
{
	switch (c->fmt) {
	case GPT_FMT_ARMV8:
		if (c->arm.stage == 1)
			*ptep &= ~BIT_ULL(7);
		else
			*ptep |= BIT_ULL(7);
		return;
	case GPT_FMT_AMDV1:
		*ptep |= BIT_ULL(6);
		return;
	case GPT_FMT_VTDSS:
		*ptep |= BIT_ULL(9);
		return;
	}
}

static unsigned long gpt_test_read_dirty(struct gpt_test *gt, u64 iova,
					 u64 len, unsigned long flags,
					 unsigned long *end)
{
	struct iommu_iotlb_gather g;
	struct iommu_dirty_bitmap d;

	iommu_iotlb_gather_init(&g);
	iommu_dirty_bitmap_init(&d, NULL, &g);
	KUNIT_EXPECT_EQ(gt->test, gpt_read_and_clear_dirty(&gt->t, iova, len,
							   flags, &d), 0);
	*end = g.end;
	return g.start;
}

static void gpt_test_dirty(struct kunit *test)
{
	const struct gpt_test_cfg *c = test->param_value;
	int rw = IOMMU_READ | IOMMU_WRITE;
	unsigned long start, end;
	struct gpt_test gt;
	u64 m, base, *ptep;
	int i;

	if (c->fmt == GPT_FMT_ARMV8 && !(c->arm.flags & GPT_ARMV8_DBM))
		kunit_skip(test, "no DBM");
	gpt_test_setup(test, &gt);
	m = gt.min;
	base = 64 * m;
	/* 16 single pages: the pa alignment rules out anything larger */
	for (i = 0; i < 16; i++)
		KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, base + i * m,
					      (2 * i + 1) * m, m, rw,
					      GFP_KERNEL, NULL), 0);
	/* Start clean (ARM DBM leaves start writable, i.e. dirty) */
	gpt_test_read_dirty(&gt, base, 16 * m, 0, &end);
	start = gpt_test_read_dirty(&gt, base, 16 * m, 0, &end);
	KUNIT_EXPECT_EQ(test, start, ULONG_MAX);

	KUNIT_ASSERT_EQ(test, gpt_lookup(&gt.t, base + 3 * m, NULL, NULL,
					 &ptep), 0);
	gpt_test_set_dirty(c, ptep);
	start = gpt_test_read_dirty(&gt, base, 16 * m, IOMMU_DIRTY_NO_CLEAR,
				    &end);
	KUNIT_EXPECT_EQ(test, start, base + 3 * m);
	KUNIT_EXPECT_EQ(test, end, base + 4 * m - 1);
	start = gpt_test_read_dirty(&gt, base, 16 * m, 0, &end);
	KUNIT_EXPECT_EQ(test, start, base + 3 * m);
	start = gpt_test_read_dirty(&gt, base, 16 * m, 0, &end);
	KUNIT_EXPECT_EQ(test, start, ULONG_MAX);
	/* Still translating and writable after cleaning */
	KUNIT_EXPECT_EQ(test, gpt_iova_to_phys(&gt.t, base + 3 * m), 7 * m);

	/* A run of entries: marking its last entry reports the whole page */
	if (c->fmt == GPT_FMT_AMDV1 ||
	    (c->fmt == GPT_FMT_ARMV8 && (c->arm.flags & GPT_ARMV8_CONTIG))) {
		u64 big = 1ULL << __ffs64(gt.t.pgsize_bitmap & ~m);
		u64 iova = big * 256, leaf;

		KUNIT_ASSERT_EQ(test, gpt_map(&gt.t, iova, big, big, rw,
					      GFP_KERNEL, NULL), 0);
		gpt_test_read_dirty(&gt, iova, big, 0, &end);
		KUNIT_ASSERT_EQ(test, gpt_lookup(&gt.t, iova + big - m, NULL,
						 &leaf, &ptep), 0);
		KUNIT_EXPECT_EQ(test, leaf, big);
		gpt_test_set_dirty(c, ptep);
		start = gpt_test_read_dirty(&gt, iova + m, m, 0, &end);
		KUNIT_EXPECT_EQ(test, start, iova);
		KUNIT_EXPECT_EQ(test, end, iova + big - 1);
		start = gpt_test_read_dirty(&gt, iova, big, 0, &end);
		KUNIT_EXPECT_EQ(test, start, ULONG_MAX);
	}
	gpt_test_teardown(&gt);
}

/* The iommu core path: iommu_map()/iommu_unmap() on the generated ops */
struct gpt_test_domain {
	struct iommu_domain domain;
	struct gpt_table pt;
};

static struct gpt_table *gpt_test_to_pt(struct iommu_domain *d)
{
	return &container_of(d, struct gpt_test_domain, domain)->pt;
}

GPT_IOMMU_DEFINE_OPS(gpt_test, gpt_test_to_pt);

static void gpt_test_iotlb_sync(struct iommu_domain *domain,
				struct iommu_iotlb_gather *gather)
{
	iommu_put_pages_list(&gather->freelist);
}

static const struct iommu_domain_ops gpt_test_domain_ops = {
	GPT_IOMMU_DOMAIN_OPS(gpt_test),
	.iotlb_sync = gpt_test_iotlb_sync,
};

static void gpt_test_iommu_glue(struct kunit *test)
{
	const struct gpt_test_cfg *c = test->param_value;
	int rw = IOMMU_READ | IOMMU_WRITE;
	struct gpt_test_domain *d;
	u64 m;

	d = kunit_kzalloc(test, sizeof(*d), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, d);
	KUNIT_ASSERT_EQ(test, gpt_test_init(c, &d->pt), 0);
	d->domain.type = IOMMU_DOMAIN_UNMANAGED;
	d->domain.ops = &gpt_test_domain_ops;
	d->domain.pgsize_bitmap = d->pt.pgsize_bitmap;
	m = 1ULL << __ffs64(d->pt.pgsize_bitmap);

	KUNIT_ASSERT_EQ(test, iommu_map(&d->domain, 0x40000000UL, 0x80000000UL,
					SZ_4M, rw, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, iommu_iova_to_phys(&d->domain,
						 0x40000000UL + SZ_2M + 8),
			0x80000000UL + SZ_2M + 8);
	KUNIT_EXPECT_EQ(test, iommu_map(&d->domain, 0x40000000UL + SZ_1M, 0,
					m, rw, GFP_KERNEL), -EADDRINUSE);
	KUNIT_EXPECT_EQ(test, iommu_unmap(&d->domain, 0x40000000UL, SZ_4M),
			SZ_4M);
	KUNIT_EXPECT_EQ(test, iommu_iova_to_phys(&d->domain, 0x40000000UL), 0);

	/*
	 * Part of a large page: exactly that part goes, the rest stays (what
	 * VFIO type1's probe of two pages, one of them unmapped, checks).
	 */
	KUNIT_ASSERT_EQ(test, iommu_map(&d->domain, 0x40000000UL, 0x80000000UL,
					SZ_2M, rw, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, iommu_unmap(&d->domain, 0x40000000UL + SZ_1M, m),
			m);
	KUNIT_EXPECT_EQ(test, iommu_iova_to_phys(&d->domain,
						 0x40000000UL + SZ_1M), 0);
	KUNIT_EXPECT_EQ(test, iommu_iova_to_phys(&d->domain,
						 0x40000000UL + SZ_1M - m),
			0x80000000UL + SZ_1M - m);
	KUNIT_EXPECT_EQ(test, iommu_iova_to_phys(&d->domain,
						 0x40000000UL + SZ_1M + m),
			0x80000000UL + SZ_1M + m);
	KUNIT_EXPECT_EQ(test, iommu_map(&d->domain, 0x40000000UL, 0,
					2 * m, rw, GFP_KERNEL), -EADDRINUSE);
	KUNIT_EXPECT_EQ(test, iommu_map(&d->domain, 0x40000000UL + SZ_1M,
					0x80000000UL + SZ_1M, m, rw, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, iommu_unmap(&d->domain, 0x40000000UL, SZ_2M),
			SZ_2M);
	KUNIT_EXPECT_EQ(test, iommu_iova_to_phys(&d->domain,
						 0x40000000UL + SZ_1M + m), 0);
	gpt_deinit(&d->pt);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&d->pt.nr_tables), 0);
}

/*
 * Seeded random map/unmap/cut against a page-granular model of a window
 * of the address space; the touched range is compared after every step.
 */
#define GPT_RAND_OPS		100000
#define GPT_RAND_PAGES		4096
#define GPT_MODEL_MAPPED	BIT_ULL(0)

/*
 * GPT_RAND_OPS by default; under TCG each format's run then takes seconds,
 * ten with KASAN, and a debug kernel's boot asks for fewer
 * (gpt_kunit.random_ops=).
 */
static unsigned long random_ops = GPT_RAND_OPS;
module_param(random_ops, ulong, 0444);
MODULE_PARM_DESC(random_ops, "operations of each format's random test");

struct gpt_rand {
	struct gpt_test gt;
	u64 *model;		/* pa | GPT_MODEL_MAPPED per small page */
	u64 state;
	u64 sizes;		/* page sizes that fit the window */
	unsigned long failures;
};

static u64 gpt_rand_next(struct gpt_rand *r)
{
	/* xorshift64*: reproducible on every architecture */
	r->state ^= r->state >> 12;
	r->state ^= r->state << 25;
	r->state ^= r->state >> 27;
	return r->state * 0x2545f4914f6cdd1dULL;
}

static u64 gpt_rand_below(struct gpt_rand *r, u64 n)
{
	return gpt_rand_next(r) % n;
}

/* A random page size from those that fit the window, small ones likelier */
static u64 gpt_rand_size(struct gpt_rand *r)
{
	unsigned long sizes = r->sizes;
	unsigned int n = hweight64(sizes), pick, bit, i = 0;

	pick = gpt_rand_below(r, 4) ? 0 : gpt_rand_below(r, n);
	for_each_set_bit(bit, &sizes, 64)
		if (i++ == pick)
			return 1ULL << bit;
	return r->gt.min;
}

static bool gpt_rand_check(struct gpt_rand *r, u64 first, u64 npages,
			   unsigned long op)
{
	struct kunit *test = r->gt.test;
	u64 m = r->gt.min, i;

	for (i = first; i < first + npages && i < GPT_RAND_PAGES; i++) {
		phys_addr_t pa;
		int ret = gpt_lookup(&r->gt.t, i * m, &pa, NULL, NULL);
		u64 want = r->model[i];

		if (want & GPT_MODEL_MAPPED ?
		    (ret || pa != (want & ~GPT_MODEL_MAPPED)) : ret != -ENOENT) {
			KUNIT_FAIL(test,
				   "op %lu: page %llu model %llx got %d/%llx\n",
				   op, i, want, ret, (u64)pa);
			return false;
		}
	}
	return true;
}

/* The range and @margin pages on either side of it */
static bool gpt_rand_check_around(struct gpt_rand *r, u64 first, u64 npages,
				  u64 margin, unsigned long op)
{
	u64 lo = first > margin ? first - margin : 0;

	return gpt_rand_check(r, lo, first - lo + npages + margin, op);
}

static bool gpt_rand_any_mapped(struct gpt_rand *r, u64 first, u64 n)
{
	u64 i;

	for (i = first; i < first + n; i++)
		if (r->model[i] & GPT_MODEL_MAPPED)
			return true;
	return false;
}

static bool gpt_rand_step(struct gpt_rand *r, unsigned long op)
{
	struct kunit *test = r->gt.test;
	struct gpt_table *t = &r->gt.t;
	u64 m = r->gt.min, size, first, n, i, len, leaf, after;
	unsigned int kind = gpt_rand_below(r, 10);
	int rw = IOMMU_READ | IOMMU_WRITE;
	int ret;

	size = gpt_rand_size(r);
	n = size / m * (1 + gpt_rand_below(r, size == m ? 64 : 2));
	/* A ragged tail now and then: the last large page must not fit */
	if (size > m && !gpt_rand_below(r, 4))
		n += 1 + gpt_rand_below(r, size / m - 1);
	if (n > GPT_RAND_PAGES)
		n = size / m;
	first = gpt_rand_below(r, GPT_RAND_PAGES - n + 1);
	first &= ~(size / m - 1);
	len = n * m;

	if (kind < 5) {
		/* Map, pa aligned like the iova half of the time */
		u64 pa = gpt_rand_below(r, SZ_1G / size) * size;
		size_t mapped = 0;

		if (gpt_rand_below(r, 2))
			pa += gpt_rand_below(r, size / m) * m;
		ret = gpt_map(t, first * m, pa, len, rw, GFP_KERNEL, &mapped);
		if (gpt_rand_any_mapped(r, first, n)) {
			KUNIT_EXPECT_EQ(test, ret, -EADDRINUSE);
			if (mapped)
				KUNIT_EXPECT_EQ(test, gpt_test_unmap(&r->gt,
								     first * m,
								     mapped),
						mapped);
		} else {
			KUNIT_EXPECT_EQ(test, ret, 0);
			KUNIT_EXPECT_EQ(test, mapped, len);
			for (i = 0; i < n; i++)
				r->model[first + i] = (pa + i * m) |
						      GPT_MODEL_MAPPED;
		}
		return gpt_rand_check_around(r, first, n, size / m, op);
	}
	if (kind < 9) {
		size_t done = gpt_test_unmap(&r->gt, first * m, len);
		bool any = gpt_rand_any_mapped(r, first, n);
		u64 q = first * m + done;
		phys_addr_t pa;

		KUNIT_EXPECT_LE(test, done, len);
		KUNIT_EXPECT_EQ(test, done % m, 0);
		if (!any)
			KUNIT_EXPECT_EQ(test, done, 0);
		for (i = 0; i < done / m; i++)
			r->model[first + i] = 0;
		if (any && done < len) {
			/* Stopped at a large page that crosses the range */
			u64 start;

			for (i = done / m; i < n; i++)
				if (r->model[first + i] & GPT_MODEL_MAPPED)
					break;
			q = (first + i) * m;
			if (i == n || gpt_lookup(t, q, &pa, &leaf, NULL)) {
				KUNIT_FAIL(test, "op %lu: unmap stopped at hole\n",
					   op);
				return false;
			}
			start = q & ~(leaf - 1);
			KUNIT_EXPECT_TRUE(test, start < first * m ||
					  start + leaf > first * m + len);
		}
		return gpt_rand_check_around(r, first, n, size / m, op);
	}

	/* Cut the page under a random address */
	i = gpt_rand_below(r, GPT_RAND_PAGES);
	if (!(r->model[i] & GPT_MODEL_MAPPED)) {
		KUNIT_EXPECT_EQ(test, gpt_cut(t, i * m, GFP_KERNEL), -ENOENT);
		return true;
	}
	KUNIT_ASSERT_EQ(test, gpt_lookup(t, i * m, NULL, &leaf, NULL), 0);
	ret = gpt_cut(t, i * m, GFP_KERNEL);
	KUNIT_ASSERT_EQ(test, gpt_lookup(t, i * m, NULL, &after, NULL), 0);
	if (leaf == m)
		KUNIT_EXPECT_EQ(test, ret, -EEXIST);
	else if (!ret)
		KUNIT_EXPECT_LT(test, after, leaf);
	first = (i * m & ~(leaf - 1)) / m;
	return gpt_rand_check(r, first, leaf / m, op);
}

static void gpt_test_random(struct kunit *test)
{
	const struct gpt_test_cfg *c = test->param_value;
	unsigned long op;
	struct gpt_rand *r;
	u64 window;

	r = kunit_kzalloc(test, sizeof(*r), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, r);
	r->model = vzalloc(GPT_RAND_PAGES * sizeof(*r->model));
	KUNIT_ASSERT_NOT_NULL(test, r->model);
	gpt_test_setup(test, &r->gt);
	r->state = 0x9e3779b97f4a7c15ULL ^ c->fmt;
	window = r->gt.min * GPT_RAND_PAGES;
	r->sizes = r->gt.t.pgsize_bitmap & (window / 4 * 2 - 1);

	for (op = 0; op < random_ops; op++) {
		if (!gpt_rand_step(r, op))
			break;
		if (!(op % 10000) && !gpt_rand_check(r, 0, GPT_RAND_PAGES, op))
			break;
	}
	KUNIT_EXPECT_EQ(test, op, random_ops);
	gpt_rand_check(r, 0, GPT_RAND_PAGES, op);
	kunit_info(test, "%lu ops, seed %llx, %ld tables live\n", op,
		   0x9e3779b97f4a7c15ULL ^ c->fmt,
		   atomic_long_read(&r->gt.t.nr_tables));
	/* Everything in the window goes, large pages lie wholly inside */
	gpt_test_unmap(&r->gt, 0, window);
	memset(r->model, 0, GPT_RAND_PAGES * sizeof(*r->model));
	gpt_rand_check(r, 0, GPT_RAND_PAGES, op);
	gpt_test_teardown(&r->gt);
	vfree(r->model);
}

/*
 * Concurrency: the library takes no lock, and calls on disjoint ranges may
 * run at once. Threads map, walk, partly unmap (cutting large pages) and
 * unmap regions of their own in one table. Two share every table above
 * their last level, so they race to install the same entries and free
 * tables beside each other (cmpxchg losers); two map far up, so an AMD
 * table that starts low grows under them at once. Each thread checks its
 * own region after every step; at the end no table may be left.
 */
#define GPT_CONC_THREADS	4
#define GPT_CONC_ROUNDS		200

struct gpt_conc {
	struct gpt_table *t;
	u64 base, size, pa;
	unsigned int errors;
	int last_err;
	struct completion done;
};

static int gpt_conc_sum(const struct gpt_leaf *leaf, void *arg)
{
	*(u64 *)arg += leaf->size;
	return 0;
}

/* One step's check: count a failure, keep the first error's line */
static bool gpt_conc_ok(struct gpt_conc *x, bool ok, int line)
{
	if (!ok && !x->errors++)
		x->last_err = line;
	return ok;
}

static int gpt_conc_thread(void *arg)
{
	struct gpt_conc *x = arg;
	int rw = IOMMU_READ | IOMMU_WRITE;
	struct iommu_iotlb_gather gather;
	unsigned int round;
	u64 min = 1ULL << __ffs64(x->t->pgsize_bitmap);
	u64 seen, cut;

	for (round = 0; round < GPT_CONC_ROUNDS && !x->errors; round++) {
		/* The whole region: large pages where the format has them */
		if (!gpt_conc_ok(x, !gpt_map(x->t, x->base, x->pa, x->size, rw,
					     GFP_KERNEL, NULL), __LINE__))
			break;
		seen = 0;
		gpt_walk(x->t, x->base, x->size, gpt_conc_sum, &seen);
		gpt_conc_ok(x, seen == x->size, __LINE__);
		/* A part below a page boundary the round picks: cuts */
		cut = x->base + (1 + round * 7919 % (x->size / min - 1)) * min;
		iommu_iotlb_gather_init(&gather);
		gpt_conc_ok(x, gpt_iommu_unmap_pages(x->t, x->base, min,
						     (cut - x->base) / min,
						     &gather) == cut - x->base,
			    __LINE__);
		iommu_put_pages_list(&gather.freelist);
		gpt_conc_ok(x, gpt_iova_to_phys(x->t, cut) ==
			       x->pa + (cut - x->base), __LINE__);
		gpt_conc_ok(x, !gpt_iova_to_phys(x->t, x->base), __LINE__);
		/* The rest, and nothing left */
		iommu_iotlb_gather_init(&gather);
		gpt_conc_ok(x, gpt_unmap(x->t, cut, x->base + x->size - cut,
					 &gather) == x->base + x->size - cut,
			    __LINE__);
		iommu_put_pages_list(&gather.freelist);
		seen = 0;
		gpt_walk(x->t, x->base, x->size, gpt_conc_sum, &seen);
		gpt_conc_ok(x, !seen, __LINE__);
		/* On a kernel without preemption the others run here */
		if (!(round % 8))
			schedule_timeout_uninterruptible(1);
		else
			cond_resched();
	}
	complete(&x->done);
	return 0;
}

static void gpt_test_concurrent(struct kunit *test)
{
	struct gpt_conc *x;
	struct gpt_test gt;
	u64 region, far;
	unsigned int i;

	gpt_test_setup(test, &gt);
	x = kunit_kcalloc(test, GPT_CONC_THREADS, sizeof(*x), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, x);
	/* What one last-level table maps: whole blocks on most formats */
	region = gt.min << 9;
	far = min_t(u64, 1ULL << 44, (gpt_test_max_iova(gt.c) >> 1) + 1);
	for (i = 0; i < GPT_CONC_THREADS; i++) {
		struct task_struct *task;

		x[i].t = &gt.t;
		x[i].size = region;
		x[i].base = i < 2 ? (i + 1) * region : far + (i - 2) * SZ_1G;
		x[i].pa = SZ_1G + i * region;
		init_completion(&x[i].done);
		task = kthread_run(gpt_conc_thread, &x[i], "gpt_conc/%u", i);
		KUNIT_ASSERT_FALSE(test, IS_ERR(task));
	}
	for (i = 0; i < GPT_CONC_THREADS; i++) {
		wait_for_completion(&x[i].done);
		KUNIT_EXPECT_EQ_MSG(test, x[i].errors, 0,
				    "thread %u at %#llx: first failure at line %d",
				    i, x[i].base, x[i].last_err);
	}
	gpt_test_teardown(&gt);
}

static struct kunit_case gpt_test_cases[] = {
	KUNIT_CASE_PARAM(gpt_test_init_deinit, gpt_cfgs_gen_params),
	KUNIT_CASE_PARAM(gpt_test_every_size, gpt_cfgs_gen_params),
	KUNIT_CASE_PARAM(gpt_test_prot, gpt_cfgs_gen_params),
	KUNIT_CASE_PARAM(gpt_test_walk_sw, gpt_cfgs_gen_params),
	KUNIT_CASE_PARAM(gpt_test_marks, gpt_cfgs_gen_params),
	KUNIT_CASE_PARAM(gpt_test_unmap_prune, gpt_cfgs_gen_params),
	KUNIT_CASE_PARAM(gpt_test_spares, gpt_cfgs_gen_params),
	KUNIT_CASE_PARAM(gpt_test_bad_input, gpt_cfgs_gen_params),
	KUNIT_CASE(gpt_test_bad_cfg),
	KUNIT_CASE_PARAM(gpt_test_grow, gpt_cfgs_gen_params),
	KUNIT_CASE_PARAM(gpt_test_dirty, gpt_cfgs_gen_params),
	KUNIT_CASE_PARAM(gpt_test_iommu_glue, gpt_cfgs_gen_params),
	KUNIT_CASE_PARAM(gpt_test_concurrent, gpt_cfgs_gen_params),
	KUNIT_CASE_PARAM_ATTR(gpt_test_random, gpt_cfgs_gen_params,
			      { .speed = KUNIT_SPEED_SLOW }),
	{}
};

static struct kunit_suite gpt_test_suite = {
	.name = "generic_pt",
	.test_cases = gpt_test_cases,
};

kunit_test_suites(&gpt_test_suite);

MODULE_DESCRIPTION("KUnit tests for the generic IOMMU page table library");
MODULE_LICENSE("GPL");
