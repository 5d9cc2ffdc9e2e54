// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit benchmark of the generic IOMMU page table library against the code
 * it replaces.
 *
 * Both sides are called at the same level and do the same work for their
 * driver: the old code through its io_pgtable_ops, ours through
 * gpt_iommu_map_pages() and gpt_iommu_unmap_pages(), the entries an
 * iommu_domain_ops would call.  Our unmap adds its range to the gather; the
 * old AMD v1 code leaves that to amd_iommu_unmap_pages(), so its side adds
 * it after the call, as io-pgtable-arm's tlb_add_page does for the Arm
 * rows.  The Intel driver keeps its table code private to its domain ops:
 * the VT-d rows call those ops on two domains, one on the driver's dma_pte
 * code and one on generic_pt, so both pay the driver's bookkeeping.
 *
 * Clocks on some architectures (UML) tick in hundreds of nanoseconds, more
 * than one map of a page takes, so operations are timed in batches: a round
 * maps GPT_BENCH_BATCH disjoint copies of the case's range one after the
 * other, then unmaps them, and each operation's cost is the batch time over
 * the batch size.  A first round builds every intermediate table and is not
 * counted, so the tables are warm as on a busy DMA domain.  The minimum and
 * the median over the rounds are reported.
 *
 * Results are printed as one line per format, case and operation:
 *   # bench: <format> <op> <case> new_min=<ns> new_med=<ns> old_min=<ns> old_med=<ns>
 * with old_* = -1 where the old code is not built (the AMD and Intel
 * drivers on other architectures).
 */
#include <kunit/device.h>
#include <kunit/test.h>
#include <linux/generic_pt/gpt.h>
#include <linux/generic_pt/iommu.h>
#include <linux/io-pgtable.h>
#include <linux/sizes.h>
#include <linux/sort.h>
#include <linux/timekeeping.h>
#include <linux/vmalloc.h>

#include "../iommu-pages.h"
#if IS_BUILTIN(CONFIG_AMD_IOMMU)
#include "../amd/amd_iommu_types.h"
#endif
#include "gpt_compare_vtd.h"

/* The Intel driver's ops are not exported: both must be built in */
#define GPT_BENCH_VTD	(IS_BUILTIN(CONFIG_INTEL_IOMMU) &&		\
			 IS_BUILTIN(CONFIG_IOMMU_PT_KUNIT_BENCH))

#define GPT_BENCH_BATCH		256
#define GPT_BENCH_ROUNDS	40	/* 10240 operations of each kind */
/* Far from 0 so no case shares its tables with another one */
#define GPT_BENCH_IOVA		SZ_4G
#define GPT_BENCH_PA		SZ_8G

struct gpt_bench_case {
	const char *name;
	size_t pgsize;
	size_t pgcount;
};

static const struct gpt_bench_case gpt_bench_cases[] = {
	{ "1x4K", SZ_4K, 1 },
	{ "256x4K", SZ_4K, 256 },
	{ "256x2M", SZ_2M, 256 },
	{ "1x1G", SZ_1G, 1 },
};

/* One side of a comparison: exactly one of gt, ops and dom is set */
struct gpt_bench_side {
	struct gpt_table *gt;		/* ours */
	struct io_pgtable_ops *ops;	/* the old code */
	struct iommu_domain *dom;	/* a driver's domain, either kind */
	/* ops leaves the gather to its driver's unmap_pages (AMD v1) */
	bool driver_gathers;
};

struct gpt_bench_result {
	u64 min;
	u64 med;
};

static int gpt_bench_cmp(const void *a, const void *b)
{
	u64 x = *(const u64 *)a, y = *(const u64 *)b;

	return x < y ? -1 : x > y;
}

static struct gpt_bench_result gpt_bench_stats(u64 *ns, unsigned int n)
{
	sort(ns, n, sizeof(*ns), gpt_bench_cmp, NULL);
	return (struct gpt_bench_result){ .min = ns[0], .med = ns[n / 2] };
}

static int gpt_bench_map(struct gpt_bench_side *s,
			 const struct gpt_bench_case *c, u64 iova)
{
	int prot = IOMMU_READ | IOMMU_WRITE;
	size_t mapped = 0;

	if (s->gt)
		return gpt_iommu_map_pages(s->gt, iova, GPT_BENCH_PA,
					   c->pgsize, c->pgcount, prot,
					   GFP_KERNEL, &mapped);
	if (s->dom)
		return s->dom->ops->map_pages(s->dom, iova, GPT_BENCH_PA,
					      c->pgsize, c->pgcount, prot,
					      GFP_KERNEL, &mapped);
	return s->ops->map_pages(s->ops, iova, GPT_BENCH_PA, c->pgsize,
				 c->pgcount, prot, GFP_KERNEL, &mapped);
}

static size_t gpt_bench_unmap(struct gpt_bench_side *s,
			      const struct gpt_bench_case *c, u64 iova,
			      struct iommu_iotlb_gather *gather)
{
	size_t unmapped;

	if (s->gt)
		return gpt_iommu_unmap_pages(s->gt, iova, c->pgsize,
					     c->pgcount, gather);
	if (s->dom)
		return s->dom->ops->unmap_pages(s->dom, iova, c->pgsize,
						c->pgcount, gather);
	unmapped = s->ops->unmap_pages(s->ops, iova, c->pgsize, c->pgcount,
				       gather);
	if (s->driver_gathers && unmapped)
		iommu_iotlb_gather_add_range(gather, iova, unmapped);
	return unmapped;
}

/*
 * One round on @s: map GPT_BENCH_BATCH copies of @c, unmap them, and store
 * the cost per operation.  Returns false (after failing the test) if the
 * library or the old code did not do what was asked.
 */
static bool gpt_bench_round(struct kunit *test, struct gpt_bench_side *s,
			    const struct gpt_bench_case *c, u64 *ns_map,
			    u64 *ns_unmap)
{
	size_t len = c->pgsize * c->pgcount;
	struct iommu_iotlb_gather gather;
	size_t unmapped = 0;
	u64 t0, t1, t2;
	unsigned int b;
	int ret = 0;

	iommu_iotlb_gather_init(&gather);
	t0 = ktime_get_ns();
	for (b = 0; b < GPT_BENCH_BATCH; b++)
		ret |= gpt_bench_map(s, c, GPT_BENCH_IOVA + b * len);
	t1 = ktime_get_ns();
	for (b = 0; b < GPT_BENCH_BATCH; b++)
		unmapped += gpt_bench_unmap(s, c, GPT_BENCH_IOVA + b * len,
					    &gather);
	t2 = ktime_get_ns();
	iommu_put_pages_list(&gather.freelist);
	if (ret || unmapped != GPT_BENCH_BATCH * len) {
		KUNIT_FAIL(test, "%s: map %d, unmapped %zu of %zu\n", c->name,
			   ret, unmapped, GPT_BENCH_BATCH * len);
		return false;
	}
	*ns_map = (t1 - t0) / GPT_BENCH_BATCH;
	*ns_unmap = (t2 - t1) / GPT_BENCH_BATCH;
	return true;
}

static void gpt_bench_report(struct kunit *test, const char *fmt,
			     const char *op, const char *name,
			     struct gpt_bench_result *new,
			     struct gpt_bench_result *old)
{
	kunit_info(test, "# bench: %s %s %s new_min=%llu new_med=%llu old_min=%lld old_med=%lld\n",
		   fmt, op, name, new->min, new->med,
		   old ? (s64)old->min : -1LL, old ? (s64)old->med : -1LL);
}

/*
 * Run every case on both sides and print the comparison.  Rounds of the two
 * sides alternate, so that whatever else the machine does weighs on both
 * alike.  Round 0 builds the tables and is not counted.
 */
static void gpt_bench_compare(struct kunit *test, const char *fmt,
			      struct gpt_bench_side *new,
			      struct gpt_bench_side *old)
{
	struct gpt_bench_result nmap, nunmap, omap, ounmap;
	u64 *ns[4], dummy[2];
	unsigned int i, j, r;

	for (j = 0; j < ARRAY_SIZE(ns); j++) {
		ns[j] = kunit_kcalloc(test, GPT_BENCH_ROUNDS, sizeof(u64),
				      GFP_KERNEL);
		KUNIT_ASSERT_NOT_NULL(test, ns[j]);
	}

	for (i = 0; i < ARRAY_SIZE(gpt_bench_cases); i++) {
		const struct gpt_bench_case *c = &gpt_bench_cases[i];

		if (!gpt_bench_round(test, new, c, &dummy[0], &dummy[1]) ||
		    (old && !gpt_bench_round(test, old, c, &dummy[0],
					     &dummy[1])))
			return;
		for (r = 0; r < GPT_BENCH_ROUNDS; r++) {
			if (!gpt_bench_round(test, new, c, &ns[0][r], &ns[1][r]))
				return;
			if (old && !gpt_bench_round(test, old, c, &ns[2][r],
						    &ns[3][r]))
				return;
			cond_resched();
		}
		nmap = gpt_bench_stats(ns[0], GPT_BENCH_ROUNDS);
		nunmap = gpt_bench_stats(ns[1], GPT_BENCH_ROUNDS);
		if (old) {
			omap = gpt_bench_stats(ns[2], GPT_BENCH_ROUNDS);
			ounmap = gpt_bench_stats(ns[3], GPT_BENCH_ROUNDS);
		}
		gpt_bench_report(test, fmt, "map", c->name, &nmap,
				 old ? &omap : NULL);
		gpt_bench_report(test, fmt, "unmap", c->name, &nunmap,
				 old ? &ounmap : NULL);
	}
}

/*
 * What an SMMU driver does per unmapped page: record it in the gather.
 * The flush itself is the caller's and not part of the page table cost.
 */
static void gpt_bench_tlb_add_page(struct iommu_iotlb_gather *gather,
				   unsigned long iova, size_t granule,
				   void *cookie)
{
	iommu_iotlb_gather_add_range(gather, iova, granule);
}

static void gpt_bench_tlb_flush_all(void *cookie)
{
}

static void gpt_bench_tlb_flush_walk(unsigned long iova, size_t size,
				     size_t granule, void *cookie)
{
}

static const struct iommu_flush_ops gpt_bench_flush_ops = {
	.tlb_flush_all = gpt_bench_tlb_flush_all,
	.tlb_flush_walk = gpt_bench_tlb_flush_walk,
	.tlb_add_page = gpt_bench_tlb_add_page,
};

static void gpt_bench_armv8(struct kunit *test, unsigned int stage)
{
	struct gpt_armv8_cfg gcfg = {
		.granule = SZ_4K, .stage = stage, .ias = 48, .oas = 48,
		.nid = NUMA_NO_NODE,
	};
	struct gpt_bench_side new = {}, old = {};
	struct io_pgtable_cfg cfg = {
		.pgsize_bitmap = SZ_4K | SZ_2M | SZ_1G,
		.ias = 48,
		.oas = 48,
		.coherent_walk = true,
		.tlb = &gpt_bench_flush_ops,
	};
	struct gpt_table *t;
	struct device *dev;

	t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	KUNIT_ASSERT_EQ(test, gpt_armv8_init(t, &gcfg, GFP_KERNEL), 0);
	new.gt = t;

	if (!IS_ENABLED(CONFIG_IOMMU_IO_PGTABLE_LPAE)) {
		gpt_bench_compare(test, stage == 1 ? "armv8_s1_4k" :
				  "armv8_s2_4k", &new, NULL);
		gpt_deinit(t);
		return;
	}
	dev = kunit_device_register(test, "gpt-bench");
	KUNIT_ASSERT_FALSE(test, IS_ERR_OR_NULL(dev));
	cfg.iommu_dev = dev;
	old.ops = alloc_io_pgtable_ops(stage == 1 ? ARM_64_LPAE_S1 :
				       ARM_64_LPAE_S2, &cfg, t);
	if (!old.ops) {
		gpt_deinit(t);
		KUNIT_FAIL(test, "io-pgtable-arm refused the configuration\n");
		return;
	}
	gpt_bench_compare(test, stage == 1 ? "armv8_s1_4k" : "armv8_s2_4k",
			  &new, &old);
	free_io_pgtable_ops(old.ops);
	gpt_deinit(t);
}

static void gpt_bench_armv8_s1(struct kunit *test)
{
	gpt_bench_armv8(test, 1);
}

static void gpt_bench_armv8_s2(struct kunit *test)
{
	gpt_bench_armv8(test, 2);
}

#if IS_BUILTIN(CONFIG_AMD_IOMMU)
/*
 * The AMD code finds its domain (lock, flush) around the embedded
 * io_pgtable.  Ranges below 512G never grow the table and a map over empty
 * entries flushes nothing, so a domain with no device attached is all it
 * needs here.
 */
static struct io_pgtable_ops *gpt_bench_amdv1_old(struct kunit *test)
{
	struct protection_domain *dom;

	dom = kunit_kzalloc(test, sizeof(*dom), GFP_KERNEL);
	if (!dom)
		return NULL;
	spin_lock_init(&dom->lock);
	INIT_LIST_HEAD(&dom->dev_list);
	INIT_LIST_HEAD(&dom->dev_data_list);
	xa_init(&dom->iommu_array);
	dom->iop.pgtbl.cfg.amd.nid = NUMA_NO_NODE;
	return alloc_io_pgtable_ops(AMD_IOMMU_V1, &dom->iop.pgtbl.cfg, dom);
}
#else
static struct io_pgtable_ops *gpt_bench_amdv1_old(struct kunit *test)
{
	return NULL;
}
#endif

static void gpt_bench_amdv1(struct kunit *test)
{
	struct gpt_amdv1_cfg gcfg = { .levels = 3, .nid = NUMA_NO_NODE };
	struct gpt_bench_side new = {}, old = {};
	struct gpt_table *t;

	t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	KUNIT_ASSERT_EQ(test, gpt_amdv1_init(t, &gcfg, GFP_KERNEL), 0);
	new.gt = t;
	old.ops = gpt_bench_amdv1_old(test);
	/* amd_iommu_unmap_pages() adds the range after the table's unmap */
	old.driver_gathers = true;
	if (IS_BUILTIN(CONFIG_AMD_IOMMU) && !old.ops) {
		gpt_deinit(t);
		KUNIT_FAIL(test, "AMD v1 io-pgtable allocation failed\n");
		return;
	}
	gpt_bench_compare(test, "amdv1", &new, old.ops ? &old : NULL);
	if (old.ops)
		free_io_pgtable_ops(old.ops);
	gpt_deinit(t);
}

/*
 * Four levels (48 bits), 2M and 1G pages, no SNP: the configuration of a
 * typical server IOMMU.  Without the Intel driver there is nothing to
 * compare with, and generic_pt runs alone.
 */
static void gpt_bench_vtdss(struct kunit *test)
{
	struct gpt_vtdss_cfg gcfg = { .levels = 4, .nid = NUMA_NO_NODE };
	struct gpt_bench_side new = {}, old = {};
	struct gpt_table *t;

	if (GPT_BENCH_VTD) {
		new.dom = gpt_cmp_vtd_gpt_domain(48, 2, false);
		old.dom = gpt_cmp_vtd_domain(48, 2, false);
		if (new.dom && old.dom)
			gpt_bench_compare(test, "vtdss_4lvl", &new, &old);
		else
			KUNIT_FAIL(test, "VT-d domain allocation failed\n");
		if (new.dom)
			new.dom->ops->free(new.dom);
		if (old.dom)
			old.dom->ops->free(old.dom);
		return;
	}
	t = kunit_kzalloc(test, sizeof(*t), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, t);
	KUNIT_ASSERT_EQ(test, gpt_vtdss_init(t, &gcfg, GFP_KERNEL), 0);
	new.gt = t;
	gpt_bench_compare(test, "vtdss_4lvl", &new, NULL);
	gpt_deinit(t);
}

static struct kunit_case gpt_bench_cases_list[] = {
	KUNIT_CASE_SLOW(gpt_bench_armv8_s1),
	KUNIT_CASE_SLOW(gpt_bench_armv8_s2),
	KUNIT_CASE_SLOW(gpt_bench_amdv1),
	KUNIT_CASE_SLOW(gpt_bench_vtdss),
	{}
};

static struct kunit_suite gpt_bench_suite = {
	.name = "generic_pt_bench",
	.test_cases = gpt_bench_cases_list,
};

kunit_test_suites(&gpt_bench_suite);

MODULE_DESCRIPTION("KUnit benchmark of the generic IOMMU page tables");
MODULE_LICENSE("GPL");
