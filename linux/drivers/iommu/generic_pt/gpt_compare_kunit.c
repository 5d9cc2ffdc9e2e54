// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit: generic_pt tables compared bit for bit with the page tables the
 * kernel builds today for the same operations.
 *
 * The references are io-pgtable-arm (ARMv8 stage 1 and stage 2, 4K, 16K and
 * 64K granules), the AMD driver's v1 io-pgtable and the Intel driver's own
 * second-stage (dma_pte) code, the one intel_iommu.generic_pt=0 keeps.  Each
 * configuration runs one sequence of maps (several page sizes and
 * protections), partial unmaps and maps into the holes on both, the
 * reference driven the way the iommu core drives it (page size and count
 * per call, then the driver's iotlb_sync), and after every step walks
 * both tables from the root and compares every entry.  Table descriptors
 * are compared without their address field, which names a different page
 * in each table, and the walk descends into both: tables must have the same
 * contents, not the same address.
 *
 * Deliberate differences, each masked as narrowly as it can be:
 *  - the ARM contiguous hint (bit 52), which io-pgtable-arm never sets: on
 *    configurations with GPT_ARMV8_CONTIG the bit is ignored in leaves and
 *    every run that carries it is checked against the architecture's rules
 *    instead (aligned, complete, same attributes, consecutive addresses);
 *  - AMD v1: the 6.12 driver never frees a table on unmap, generic_pt frees
 *    tables whose whole span was unmapped; an empty reference table facing
 *    an empty entry of ours is accepted and counted.
 *  - VT-d: the 6.12 driver sets R (bit 0) in every leaf, since it ORs its
 *    first-stage present bit into second-stage leaves too, so its
 *    write-only mappings are readable; ours grant what was asked.  In the
 *    ranges the sequence maps write-only, our leaf must be W without R and
 *    the reference's must be the same plus R.
 *  - VT-d: a super page mapped over a table that unmaps emptied but kept
 *    (the unmaps did not cover its whole span): the 6.12 driver frees the
 *    table and writes the super page, generic_pt fills the table with the
 *    next smaller pages.  Our table is compared, entry by entry, with the
 *    reference's super page split into those pages; accepted and counted.
 * Nothing is masked in VT-d entries: neither side sets A, D or an ignored
 * bit.
 * A built-in self-check flips single bits in our table and requires the
 * walk to report them, so the comparison is known to be able to fail.
 */
#include <kunit/test.h>
#include <linux/device.h>
#include <linux/generic_pt/gpt.h>
#include <linux/io-pgtable.h>
#include <linux/sizes.h>

#include "../iommu-pages.h"

#define GPT_CMP_ARM	IS_ENABLED(CONFIG_IOMMU_IO_PGTABLE_LPAE)
#define GPT_CMP_AMD	IS_BUILTIN(CONFIG_AMD_IOMMU)
/* The Intel driver's domain ops are not exported: built in, on both sides */
#define GPT_CMP_VTD	(IS_BUILTIN(CONFIG_INTEL_IOMMU) &&	\
			 IS_BUILTIN(CONFIG_IOMMU_PT_KUNIT_TEST))

#define GPT_CMP_RW	(IOMMU_READ | IOMMU_WRITE)

#if GPT_CMP_AMD
#include "../amd/amd_iommu_types.h"
#endif
#if GPT_CMP_VTD
#include "gpt_compare_vtd.h"
#endif

#define GPT_CMP_ANY	(GPT_CMP_ARM || GPT_CMP_AMD || GPT_CMP_VTD)

#if GPT_CMP_ANY

struct gpt_cmp_cfg {
	const char *name;
	enum io_pgtable_fmt fmt;
	unsigned int granule;	/* ARM only */
	unsigned int ias;	/* ARM; VT-d: the address width */
	unsigned int oas;	/* ARM only */
	unsigned int flags;	/* GPT_ARMV8_*, GPT_VTDSS_* */
	unsigned long quirks;	/* IO_PGTABLE_QUIRK_* of the reference */
};

static void gpt_cmp_desc(const struct gpt_cmp_cfg *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

struct gpt_cmp_range {
	u64 start, end;
};

struct gpt_cmp {
	struct kunit *test;
	const struct gpt_cmp_cfg *c;
	const char *step;		/* named in failure messages */

	/* The table under test */
	struct gpt_table t;
	struct iommu_iotlb_gather gather;

	/* The reference: an io-pgtable, or a driver's domain (VT-d) */
	struct io_pgtable_ops *ops;
	struct iommu_domain *dom;
	u64 pgsizes;			/* its page sizes */
	u64 *ref_root;
	unsigned int ref_lvl;		/* top level, 0 is the leaf level */
	unsigned int ref_top_nents;

	/* Sizes the sequence is written in */
	u64 g;				/* smallest page */
	u64 r;				/* first block size */
	u64 big;			/* second block size, 0 if none */
	u64 pa_base;

	/* Format, for the walker */
	bool amd;
	bool vtd;
	unsigned int gshift;		/* ARM granule shift */
	unsigned int bits;		/* index bits of a non-top table */
	u64 table_addr;			/* address field of a table entry */
	u64 leaf_mask;			/* leaf bits not compared on purpose */
	/*
	 * VT-d: where the deliberate differences may show, [start, end):
	 * ranges mapped write-only, and super pages mapped over a table that
	 * unmaps emptied but kept.
	 */
	struct gpt_cmp_range wo[2], kept[2];
	unsigned int nr_wo, nr_kept;

	/* Walk results */
	bool quiet;			/* count mismatches, do not fail */
	unsigned long mismatches;
	unsigned long empty_tables;
	unsigned long runs;
	unsigned long wo_leaves;	/* VT-d: write-only leaves seen */
	unsigned long split;		/* VT-d: super pages we mapped in a table */
	/* Totals over the checks of the sequence */
	unsigned long walks, total_runs, total_empty, total_wo, total_split;
};

#define GPT_CMP_MAX_REPORTS	8

static void gpt_cmp_mismatch(struct gpt_cmp *x, unsigned int lvl, u64 iova,
			     u64 ref, u64 ours, const char *what)
{
	x->mismatches++;
	if (x->quiet || x->mismatches > GPT_CMP_MAX_REPORTS)
		return;
	KUNIT_FAIL(x->test,
		   "%s, after %s: level %u iova %#llx: reference %016llx ours %016llx (%s)\n",
		   x->c->name, x->step, lvl, iova, ref, ours, what);
}

#define GPT_CMP_VTD_R	BIT_ULL(0)
#define GPT_CMP_VTD_W	BIT_ULL(1)
#define GPT_CMP_VTD_PS	BIT_ULL(7)
#define GPT_CMP_VTD_SNP	BIT_ULL(11)

static bool gpt_cmp_present(const struct gpt_cmp *x, u64 pte)
{
	/* VT-d second stage: R or W; ARM: V; AMD: PR */
	if (x->vtd)
		return pte & (GPT_CMP_VTD_R | GPT_CMP_VTD_W);
	return pte & BIT_ULL(0);
}

/*
 * Decoded from the specifications, not from either implementation: ARM
 * descriptors with bits[1:0] = 0b11 above the last level, AMD entries with
 * a NextLevel of 1 to 6, VT-d entries without PS above the last level.
 */
static bool gpt_cmp_is_table(const struct gpt_cmp *x, u64 pte,
			     unsigned int lvl)
{
	u64 nl;

	if (!lvl || !gpt_cmp_present(x, pte))
		return false;
	if (x->vtd)
		return !(pte & GPT_CMP_VTD_PS);
	if (!x->amd)
		return (pte & 3) == 3;
	nl = (pte >> 9) & 7;
	return nl && nl != 7;
}

static u64 *gpt_cmp_table_va(const struct gpt_cmp *x, u64 pte)
{
	return phys_to_virt(pte & x->table_addr);
}

static unsigned int gpt_cmp_shift(const struct gpt_cmp *x, unsigned int lvl)
{
	return x->gshift + lvl * x->bits;
}

static unsigned int gpt_cmp_nents(const struct gpt_cmp *x, unsigned int lvl)
{
	return 1U << x->bits;
}

/* Entries of a contiguous run at @lvl: Arm ARM, "the Contiguous bit" */
static unsigned int gpt_cmp_contig_n(const struct gpt_cmp *x,
				     unsigned int lvl)
{
	switch (x->gshift) {
	case 14:
		return lvl ? 32 : 128;
	case 16:
		return 32;
	default:
		return 16;
	}
}

#define GPT_CMP_CONTIG	BIT_ULL(52)
#define GPT_CMP_ARM_OA	GENMASK_ULL(47, 12)

/*
 * Our leaf at @i carries the contiguous hint: the run it belongs to must
 * be complete, aligned in the table and in the output address, made of
 * leaves of the same type and attributes whose addresses follow each
 * other.  Checked once per run, at its first entry.
 */
static void gpt_cmp_check_run(struct gpt_cmp *x, u64 *ours, unsigned int i,
			      unsigned int lvl, u64 iova)
{
	unsigned int n = gpt_cmp_contig_n(x, lvl), j;
	unsigned int first = i & ~(n - 1);
	u64 span = 1ULL << gpt_cmp_shift(x, lvl);
	u64 o0 = ours[first];

	if (i != first) {
		if (!(o0 & GPT_CMP_CONTIG))
			gpt_cmp_mismatch(x, lvl, iova, 0, ours[i],
					 "contiguous entry outside a run");
		return;
	}
	if ((o0 & GPT_CMP_ARM_OA) & (n * span - 1))
		gpt_cmp_mismatch(x, lvl, iova, 0, o0,
				 "contiguous run output address misaligned");
	for (j = 1; j < n; j++) {
		u64 o = ours[first + j];

		if (!(o & GPT_CMP_CONTIG) ||
		    (o & ~GPT_CMP_ARM_OA) != (o0 & ~GPT_CMP_ARM_OA) ||
		    (o & GPT_CMP_ARM_OA) != (o0 & GPT_CMP_ARM_OA) + j * span)
			gpt_cmp_mismatch(x, lvl, iova + j * span, o0, o,
					 "broken contiguous run");
	}
	x->runs++;
}

/* True if no leaf is reachable from the table entry @pte at @lvl */
static bool gpt_cmp_subtree_empty(struct gpt_cmp *x, u64 pte, unsigned int lvl)
{
	u64 *table = gpt_cmp_table_va(x, pte);
	unsigned int i;

	for (i = 0; i < gpt_cmp_nents(x, lvl - 1); i++) {
		if (!gpt_cmp_present(x, table[i]))
			continue;
		if (!gpt_cmp_is_table(x, table[i], lvl - 1) ||
		    !gpt_cmp_subtree_empty(x, table[i], lvl - 1))
			return false;
	}
	return true;
}

static bool gpt_cmp_in(const struct gpt_cmp_range *ranges, unsigned int n,
		       u64 iova)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		if (iova >= ranges[i].start && iova < ranges[i].end)
			return true;
	return false;
}

static void gpt_cmp_level(struct gpt_cmp *x, u64 *ref, u64 *ours,
			  unsigned int lvl, unsigned int nents, u64 iova);

/*
 * VT-d: the reference has the super page @r at @lvl where we kept the table
 * @o.  Compare our table with @r split into the pages one level down: the
 * same attributes, PS above the last level, consecutive addresses.
 */
static void gpt_cmp_vtd_split(struct gpt_cmp *x, u64 r, u64 o,
			      unsigned int lvl, u64 iova)
{
	unsigned int n = gpt_cmp_nents(x, lvl - 1), i;
	u64 span = 1ULL << gpt_cmp_shift(x, lvl - 1);
	u64 attr = r & ~(x->table_addr | GPT_CMP_VTD_PS);
	u64 *split;

	/* Table descriptors of both sides are R and W */
	if ((o & ~x->table_addr) != (GPT_CMP_VTD_R | GPT_CMP_VTD_W))
		gpt_cmp_mismatch(x, lvl, iova, r, o, "table descriptor");
	split = kcalloc(n, sizeof(*split), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(x->test, split);
	for (i = 0; i < n; i++)
		split[i] = ((r & x->table_addr) + i * span) | attr |
			   (lvl > 1 ? GPT_CMP_VTD_PS : 0);
	x->split++;
	gpt_cmp_level(x, split, gpt_cmp_table_va(x, o), lvl - 1, n, iova);
	kfree(split);
}

static void gpt_cmp_level(struct gpt_cmp *x, u64 *ref, u64 *ours,
			  unsigned int lvl, unsigned int nents, u64 iova)
{
	unsigned int shift = gpt_cmp_shift(x, lvl), i;

	for (i = 0; i < nents; i++) {
		u64 r = READ_ONCE(ref[i]), o = READ_ONCE(ours[i]), want = o;
		u64 va = iova + ((u64)i << shift);
		bool rt = gpt_cmp_is_table(x, r, lvl);
		bool ot = gpt_cmp_is_table(x, o, lvl);

		if (rt && ot) {
			if ((r ^ o) & ~x->table_addr)
				gpt_cmp_mismatch(x, lvl, va, r, o,
						 "table descriptor");
			gpt_cmp_level(x, gpt_cmp_table_va(x, r),
				      gpt_cmp_table_va(x, o), lvl - 1,
				      gpt_cmp_nents(x, lvl - 1), va);
			continue;
		}
		if (rt && !o && x->amd && gpt_cmp_subtree_empty(x, r, lvl)) {
			/* The AMD driver keeps tables it emptied */
			x->empty_tables++;
			continue;
		}
		if (ot && x->vtd && gpt_cmp_present(x, r) && !rt &&
		    gpt_cmp_in(x->kept, x->nr_kept, va)) {
			gpt_cmp_vtd_split(x, r, o, lvl, va);
			continue;
		}
		if (rt || ot) {
			gpt_cmp_mismatch(x, lvl, va, r, o,
					 "table on one side only");
			continue;
		}
		/* The reference's write-only leaves are readable too */
		if (x->vtd && gpt_cmp_present(x, o) &&
		    gpt_cmp_in(x->wo, x->nr_wo, va)) {
			if (o & GPT_CMP_VTD_R)
				gpt_cmp_mismatch(x, lvl, va, r, o,
						 "write-only leaf readable");
			want |= GPT_CMP_VTD_R;
			x->wo_leaves++;
		}
		/* Leaves and empty entries: every bit but the masked ones */
		if ((r ^ want) & ~x->leaf_mask)
			gpt_cmp_mismatch(x, lvl, va, r, o, "entry");
		if (!x->amd && (o & x->leaf_mask & GPT_CMP_CONTIG) &&
		    gpt_cmp_present(x, o))
			gpt_cmp_check_run(x, ours, i, lvl, va);
	}
}

static void gpt_cmp_ref_root(struct gpt_cmp *x);

/* Walk both tables from their roots; returns the number of mismatches */
static unsigned long gpt_cmp_walk(struct gpt_cmp *x)
{
	unsigned long top = READ_ONCE(x->t.top);

	x->mismatches = 0;
	x->empty_tables = 0;
	x->runs = 0;
	x->wo_leaves = 0;
	x->split = 0;
	gpt_cmp_ref_root(x);
	if (gpt_top_level(&x->t) != x->ref_lvl) {
		gpt_cmp_mismatch(x, x->ref_lvl, 0, x->ref_lvl,
				 gpt_top_level(&x->t), "number of levels");
		return x->mismatches;
	}
	gpt_cmp_level(x, x->ref_root, (u64 *)(top & ~GPT_TOP_LEVEL_MASK),
		      x->ref_lvl, x->ref_top_nents, 0);
	return x->mismatches;
}

static void gpt_cmp_check(struct gpt_cmp *x, const char *step)
{
	x->step = step;
	x->quiet = false;
	KUNIT_EXPECT_EQ_MSG(x->test, gpt_cmp_walk(x), 0,
			    "%s: tables differ after %s", x->c->name, step);
	x->walks++;
	x->total_runs += x->runs;
	x->total_empty += x->empty_tables;
	x->total_wo += x->wo_leaves;
	x->total_split += x->split;
}

/*
 * What the iommu core does before calling map_pages/unmap_pages: the
 * largest page size that the alignment of @iova | @pa and the length allow,
 * and as many of them as fit before the next larger size could take over.
 */
static u64 gpt_cmp_pgsize(u64 bitmap, u64 iova, u64 pa, u64 len,
			  size_t *count)
{
	u64 sizes = bitmap & GENMASK_ULL(fls64(len) - 1, 0);
	u64 larger, next, n;
	unsigned int bit;

	if (iova | pa)
		sizes &= GENMASK_ULL(__ffs64(iova | pa), 0);
	bit = fls64(sizes) - 1;
	n = len >> bit;
	larger = bit < 63 ? bitmap & ~GENMASK_ULL(bit, 0) : 0;
	if (larger) {
		next = 1ULL << __ffs64(larger);
		n = min(n, (next - (iova & (next - 1))) >> bit);
	}
	*count = n;
	return 1ULL << bit;
}

static u64 gpt_cmp_pa(struct gpt_cmp *x, u64 iova, u64 skew)
{
	return x->pa_base + (iova & (x->pa_base - 1)) + skew;
}

/* One map_pages call of the reference, and the sync iommu_map() adds */
static int gpt_cmp_ref_map(struct gpt_cmp *x, u64 iova, u64 pa, u64 pgsize,
			   size_t count, int prot, size_t *mapped)
{
	const struct iommu_domain_ops *ops;
	int ret;

	if (!x->dom)
		return x->ops->map_pages(x->ops, iova, pa, pgsize, count, prot,
					 GFP_KERNEL, mapped);
	ops = x->dom->ops;
	ret = ops->map_pages(x->dom, iova, pa, pgsize, count, prot,
			     GFP_KERNEL, mapped);
	if (!ret && ops->iotlb_sync_map)
		ret = ops->iotlb_sync_map(x->dom, iova, *mapped);
	return ret;
}

static size_t gpt_cmp_ref_unmap(struct gpt_cmp *x, u64 iova, u64 pgsize,
				size_t count,
				struct iommu_iotlb_gather *gather)
{
	if (!x->dom)
		return x->ops->unmap_pages(x->ops, iova, pgsize, count, gather);
	return x->dom->ops->unmap_pages(x->dom, iova, pgsize, count, gather);
}

/* Map on both, then compare.  @skew moves the output address off @iova's */
static void gpt_cmp_map(struct gpt_cmp *x, const char *step, u64 iova,
			u64 len, int prot, u64 skew)
{
	struct kunit *test = x->test;
	u64 pa = gpt_cmp_pa(x, iova, skew), done = 0;
	size_t mapped = 0;

	while (done < len) {
		size_t count, m = 0;
		u64 pgsize = gpt_cmp_pgsize(x->pgsizes, iova + done, pa + done,
					    len - done, &count);

		KUNIT_ASSERT_EQ_MSG(test, gpt_cmp_ref_map(x, iova + done,
							  pa + done, pgsize,
							  count, prot, &m),
				    0, "%s: reference map failed", step);
		KUNIT_ASSERT_NE_MSG(test, m, 0, "%s: reference mapped 0", step);
		done += m;
	}
	KUNIT_ASSERT_EQ_MSG(test, gpt_map(&x->t, iova, pa, len, prot,
					  GFP_KERNEL, &mapped), 0,
			    "%s: gpt_map failed", step);
	KUNIT_ASSERT_EQ(test, (u64)mapped, len);
	gpt_cmp_check(x, step);
}

/*
 * How every sequence starts, in the smallest page @g and the next size @r
 * (a block or a super page; AMD: the 2M of a run of 512): a page, 17 pages,
 * 3 pages then @r then 2 pages, 2 * @r, and a table of pages whose output
 * address is off by a page; several protections.
 */
static void gpt_cmp_map_start(struct gpt_cmp *x)
{
	u64 g = x->g, r = x->r;

	gpt_cmp_map(x, "map one page", r, g, IOMMU_READ, 0);
	gpt_cmp_map(x, "map 17 pages", r + 16 * g, 17 * g, GPT_CMP_RW, 0);
	gpt_cmp_map(x, "map 3 pages, r, 2 pages", 3 * r - 3 * g, r + 5 * g,
		    GPT_CMP_RW | IOMMU_CACHE, 0);
	gpt_cmp_map(x, "map 2r of device memory", 6 * r, 2 * r,
		    GPT_CMP_RW | IOMMU_NOEXEC | IOMMU_MMIO, 0);
	gpt_cmp_map(x, "map a table of pages, pa off by a page", 9 * r, r,
		    GPT_CMP_RW | IOMMU_PRIV, g);
}

/*
 * io-pgtable-arm splits a block when an unmap covers part of it; with
 * generic_pt the caller cuts first (see gpt_unmap()).  Cut until the leaf
 * under @a starts at @a.
 */
static void gpt_cmp_cut_at(struct gpt_cmp *x, u64 a)
{
	u64 size;

	while (!gpt_lookup(&x->t, a, NULL, &size, NULL) && (a & (size - 1)))
		KUNIT_ASSERT_EQ(x->test, gpt_cut(&x->t, a, GFP_KERNEL), 0);
}

static void gpt_cmp_unmap(struct gpt_cmp *x, const char *step, u64 iova,
			  u64 len)
{
	struct kunit *test = x->test;
	struct iommu_iotlb_gather gather;
	u64 done = 0;

	/* One gather for the whole range, as iommu_unmap() does */
	iommu_iotlb_gather_init(&gather);
	while (done < len) {
		size_t count, n;
		u64 pgsize = gpt_cmp_pgsize(x->pgsizes, iova + done, 0,
					    len - done, &count);

		n = gpt_cmp_ref_unmap(x, iova + done, pgsize, count, &gather);
		KUNIT_ASSERT_NE_MSG(test, n, 0, "%s: reference unmapped 0",
				    step);
		done += n;
	}
	/* The driver frees the tables it unlinked after the flush */
	if (x->dom)
		iommu_iotlb_sync(x->dom, &gather);
	KUNIT_ASSERT_EQ_MSG(test, done, len, "%s: reference unmapped more",
			    step);

	gpt_cmp_cut_at(x, iova);
	gpt_cmp_cut_at(x, iova + len);
	KUNIT_ASSERT_EQ_MSG(test, (u64)gpt_unmap(&x->t, iova, len, &x->gather),
			    len, "%s: gpt_unmap", step);
	iommu_put_pages_list(&x->gather.freelist);
	iommu_iotlb_gather_init(&x->gather);
	gpt_cmp_check(x, step);
}

/* Our entry at @lvl on the walk to @iova */
static u64 *gpt_cmp_our_entry(struct gpt_cmp *x, u64 iova, unsigned int lvl)
{
	unsigned int l = gpt_top_level(&x->t);
	unsigned int nents = x->ref_top_nents;
	u64 *table = (u64 *)(x->t.top & ~GPT_TOP_LEVEL_MASK);

	for (;;) {
		u64 *p = &table[(iova >> gpt_cmp_shift(x, l)) & (nents - 1)];

		if (l == lvl || !gpt_cmp_is_table(x, *p, l))
			return p;
		table = gpt_cmp_table_va(x, *p);
		nents = gpt_cmp_nents(x, --l);
	}
}

static void gpt_cmp_expect_flip(struct gpt_cmp *x, u64 *p, u64 flip,
				unsigned long want, const char *what)
{
	u64 old = *p;

	WRITE_ONCE(*p, old ^ flip);
	x->quiet = true;
	KUNIT_EXPECT_EQ_MSG(x->test, gpt_cmp_walk(x), want,
			    "%s: flipped %s not detected", x->c->name, what);
	WRITE_ONCE(*p, old);
	x->quiet = false;
	KUNIT_EXPECT_EQ(x->test, gpt_cmp_walk(x), 0);
}

/*
 * The comparison must be able to fail: flip single bits in our table (a
 * leaf attribute, an empty entry, a table descriptor, the contiguous hint
 * of one entry of a run) and require exactly one mismatch each.  @leaf is
 * a single mapped page whose neighbour @leaf + g is not mapped; @run, if
 * not 0, is the first page of a run of smallest pages.
 */
static void gpt_cmp_selfcheck(struct gpt_cmp *x, u64 leaf, u64 run)
{
	u64 *p;

	x->step = "self-check";
	KUNIT_ASSERT_EQ(x->test, gpt_lookup(&x->t, leaf, NULL, NULL, &p), 0);
	/* ARM AF, AMD IW, VT-d SNP */
	gpt_cmp_expect_flip(x, p, x->vtd ? GPT_CMP_VTD_SNP :
			    x->amd ? BIT_ULL(62) : BIT_ULL(10), 1,
			    "leaf attribute");
	gpt_cmp_expect_flip(x, p + 1, BIT_ULL(2), 1, "bit of an empty entry");
	/* ARM NSTable, AMD IR of a directory entry, VT-d W of a table */
	p = gpt_cmp_our_entry(x, leaf, 1);
	KUNIT_ASSERT_TRUE(x->test, gpt_cmp_is_table(x, *p, 1));
	gpt_cmp_expect_flip(x, p, x->vtd ? GPT_CMP_VTD_W :
			    x->amd ? BIT_ULL(61) : BIT_ULL(63), 1,
			    "table descriptor attribute");
	if (run && (x->leaf_mask & GPT_CMP_CONTIG)) {
		u64 last = run + (gpt_cmp_contig_n(x, 0) - 1) * x->g;

		KUNIT_ASSERT_EQ(x->test, gpt_lookup(&x->t, last, NULL, NULL,
						    &p), 0);
		KUNIT_ASSERT_TRUE(x->test, *p & GPT_CMP_CONTIG);
		gpt_cmp_expect_flip(x, p, GPT_CMP_CONTIG, 1,
				    "contiguous hint of one entry");
	}
}

static void gpt_cmp_deinit(void *data)
{
	struct gpt_cmp *x = data;

	gpt_deinit(&x->t);
	iommu_put_pages_list(&x->gather.freelist);
}

static void gpt_cmp_free_ref(void *ops)
{
	free_io_pgtable_ops(ops);
}

static void gpt_cmp_free_dom(void *dom)
{
	struct iommu_domain *d = dom;

	d->ops->free(d);
}

/* Release both tables; every table page of ours must be accounted for */
static void gpt_cmp_finish(struct gpt_cmp *x)
{
	kunit_info(x->test,
		   "%s: %lu walks; contiguous runs checked %lu, empty reference tables accepted %lu, write-only leaves %lu, super pages split %lu (summed over walks)\n",
		   x->c->name, x->walks, x->total_runs, x->total_empty,
		   x->total_wo, x->total_split);
	/* The masked bit must not have hidden a missing check */
	if (x->leaf_mask & GPT_CMP_CONTIG)
		KUNIT_EXPECT_GT(x->test, x->total_runs, 0);
	/* Nor the accepted differences: the sequence makes both happen */
	if (x->vtd) {
		KUNIT_EXPECT_GT(x->test, x->total_wo, 0);
		KUNIT_EXPECT_GT(x->test, x->total_split, 0);
	}
	if (x->dom)
		kunit_release_action(x->test, gpt_cmp_free_dom, x->dom);
	else
		kunit_release_action(x->test, gpt_cmp_free_ref, x->ops);
	kunit_release_action(x->test, gpt_cmp_deinit, x);
	KUNIT_EXPECT_EQ(x->test, atomic_long_read(&x->t.nr_tables), 0);
}

#if GPT_CMP_AMD || GPT_CMP_VTD
/* AMD v1 and VT-d: 4K pages, tables of 512 entries, 52-bit addresses */
static void gpt_cmp_x86_geometry(struct gpt_cmp *x)
{
	x->gshift = 12;
	x->bits = 9;
	x->table_addr = GENMASK_ULL(51, 12);
	x->g = SZ_4K;
	x->r = SZ_2M;
	x->big = SZ_1G;
	x->pa_base = 1ULL << 42;
}
#endif

#endif /* GPT_CMP_ANY */

#if GPT_CMP_ARM

#define ARM(n, f, g, i, o, fl, q)					\
	{ .name = n, .fmt = f, .granule = g, .ias = i, .oas = o,	\
	  .flags = fl, .quirks = q }

static const struct gpt_cmp_cfg gpt_cmp_arm_cfgs[] = {
	ARM("arm_s1_4k_48", ARM_64_LPAE_S1, SZ_4K, 48, 48, 0, 0),
	ARM("arm_s1_4k_39_oas40", ARM_64_LPAE_S1, SZ_4K, 39, 40, 0, 0),
	ARM("arm_s1_16k_48", ARM_64_LPAE_S1, SZ_16K, 48, 48, 0, 0),
	ARM("arm_s1_16k_36", ARM_64_LPAE_S1, SZ_16K, 36, 48, 0, 0),
	ARM("arm_s1_64k_48", ARM_64_LPAE_S1, SZ_64K, 48, 48, 0, 0),
	ARM("arm_s1_64k_42", ARM_64_LPAE_S1, SZ_64K, 42, 48, 0, 0),
	ARM("arm_s2_4k_48", ARM_64_LPAE_S2, SZ_4K, 48, 48, 0, 0),
	ARM("arm_s2_4k_40_concat2", ARM_64_LPAE_S2, SZ_4K, 40, 40, 0, 0),
	ARM("arm_s2_4k_42_concat8", ARM_64_LPAE_S2, SZ_4K, 42, 48, 0, 0),
	ARM("arm_s2_16k_48_concat2", ARM_64_LPAE_S2, SZ_16K, 48, 48, 0, 0),
	ARM("arm_s2_16k_40", ARM_64_LPAE_S2, SZ_16K, 40, 48, 0, 0),
	ARM("arm_s2_64k_48", ARM_64_LPAE_S2, SZ_64K, 48, 48, 0, 0),
	/* generic_pt's DBM is io-pgtable-arm's HD quirk (stage 1 only) */
	ARM("arm_s1_4k_48_dbm", ARM_64_LPAE_S1, SZ_4K, 48, 48, GPT_ARMV8_DBM,
	    IO_PGTABLE_QUIRK_ARM_HD),
	/* The contiguous hint: bit 52 masked, runs checked instead */
	ARM("arm_s1_4k_48_contig", ARM_64_LPAE_S1, SZ_4K, 48, 48,
	    GPT_ARMV8_CONTIG, 0),
	ARM("arm_s2_16k_48_contig", ARM_64_LPAE_S2, SZ_16K, 48, 48,
	    GPT_ARMV8_CONTIG, 0),
	ARM("arm_s1_64k_48_contig", ARM_64_LPAE_S1, SZ_64K, 48, 48,
	    GPT_ARMV8_CONTIG, 0),
};

KUNIT_ARRAY_PARAM(gpt_cmp_arm_cfgs, gpt_cmp_arm_cfgs, gpt_cmp_desc);

static void gpt_cmp_tlb_flush_all(void *cookie)
{
}

static void gpt_cmp_tlb_flush_walk(unsigned long iova, size_t size,
				   size_t granule, void *cookie)
{
}

static void gpt_cmp_tlb_add_page(struct iommu_iotlb_gather *gather,
				 unsigned long iova, size_t granule,
				 void *cookie)
{
}

/* No IOMMU walks either table: nothing to invalidate */
static const struct iommu_flush_ops gpt_cmp_flush_ops = {
	.tlb_flush_all = gpt_cmp_tlb_flush_all,
	.tlb_flush_walk = gpt_cmp_tlb_flush_walk,
	.tlb_add_page = gpt_cmp_tlb_add_page,
};

struct gpt_cmp_arm {
	struct gpt_cmp x;
	struct io_pgtable_cfg cfg;
	struct device dev;	/* only asked for its NUMA node */
};

/*
 * The reference root as an SMMU would find it: TTBR/VTTBR, and the start
 * level and size of the top table from T0SZ, the granule and (stage 2)
 * SL0, as io-pgtable-arm programmed them.
 */
static void gpt_cmp_arm_root(struct gpt_cmp *x)
{
	struct gpt_cmp_arm *a = container_of(x, struct gpt_cmp_arm, x);
	unsigned int ias, start;
	phys_addr_t root;

	if (x->c->fmt == ARM_64_LPAE_S1) {
		ias = 64 - a->cfg.arm_lpae_s1_cfg.tcr.tsz;
		start = 4 - DIV_ROUND_UP(ias - x->gshift, x->bits);
		root = a->cfg.arm_lpae_s1_cfg.ttbr;
	} else {
		ias = 64 - a->cfg.arm_lpae_s2_cfg.vtcr.tsz;
		start = (x->gshift == 12 ? 2 : 3) -
			a->cfg.arm_lpae_s2_cfg.vtcr.sl;
		root = a->cfg.arm_lpae_s2_cfg.vttbr;
	}
	x->ref_root = phys_to_virt(root);
	x->ref_lvl = 3 - start;
	x->ref_top_nents = 1U << (ias - gpt_cmp_shift(x, x->ref_lvl));
}

static struct gpt_cmp *gpt_cmp_arm_setup(struct kunit *test)
{
	const struct gpt_cmp_cfg *c = test->param_value;
	struct gpt_armv8_cfg ac = {
		.granule = c->granule,
		.stage = c->fmt == ARM_64_LPAE_S1 ? 1 : 2,
		.ias = c->ias,
		.oas = c->oas,
		.flags = c->flags,
		.nid = NUMA_NO_NODE,
	};
	struct gpt_cmp_arm *a;
	struct gpt_cmp *x;

	a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, a);
	x = &a->x;
	x->test = test;
	x->c = c;
	set_dev_node(&a->dev, NUMA_NO_NODE);
	a->cfg.quirks = c->quirks;
	a->cfg.ias = c->ias;
	a->cfg.oas = c->oas;
	a->cfg.coherent_walk = true;
	a->cfg.tlb = &gpt_cmp_flush_ops;
	a->cfg.iommu_dev = &a->dev;
	a->cfg.pgsize_bitmap = c->granule == SZ_4K ? SZ_4K | SZ_2M | SZ_1G :
			       c->granule == SZ_16K ? SZ_16K | SZ_32M :
			       SZ_64K | SZ_512M;
	x->ops = alloc_io_pgtable_ops(c->fmt, &a->cfg, x);
	KUNIT_ASSERT_NOT_NULL(test, x->ops);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, gpt_cmp_free_ref,
							x->ops), 0);
	x->pgsizes = a->cfg.pgsize_bitmap;

	iommu_iotlb_gather_init(&x->gather);
	KUNIT_ASSERT_EQ(test, gpt_armv8_init(&x->t, &ac, GFP_KERNEL), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, gpt_cmp_deinit,
							x), 0);
	/* The hint adds page sizes; the others must be the same */
	if (c->flags & GPT_ARMV8_CONTIG)
		KUNIT_EXPECT_EQ(test, x->t.pgsize_bitmap & x->pgsizes,
				x->pgsizes);
	else
		KUNIT_EXPECT_EQ(test, x->t.pgsize_bitmap, x->pgsizes);
	KUNIT_EXPECT_EQ(test, (unsigned int)x->t.ias, a->cfg.ias);

	x->gshift = ilog2(c->granule);
	x->bits = x->gshift - 3;
	x->table_addr = GENMASK_ULL(47, x->gshift);
	x->leaf_mask = c->flags & GPT_ARMV8_CONTIG ? GPT_CMP_CONTIG : 0;
	x->g = c->granule;
	x->r = 1ULL << (x->gshift + x->bits);
	x->big = x->gshift == 12 ? SZ_1G : 0;
	x->pa_base = 1ULL << 36;
	return x;
}

static void gpt_cmp_arm_test(struct kunit *test)
{
	struct gpt_cmp *x = gpt_cmp_arm_setup(test);
	u64 g = x->g, r = x->r, big = x->big;
	u64 top = 1ULL << x->c->ias;

	gpt_cmp_check(x, "init");

	/* Several page sizes and protections */
	gpt_cmp_map_start(x);
	gpt_cmp_map(x, "map write-only pages", 11 * r + 2 * g, 3 * g,
		    IOMMU_WRITE, 0);
	gpt_cmp_map(x, "map half a block of pages", 13 * r, r / 2,
		    IOMMU_READ | IOMMU_NOEXEC, 0);
	gpt_cmp_map(x, "map 33 blocks", 64 * r, 33 * r,
		    GPT_CMP_RW | IOMMU_CACHE | IOMMU_PRIV, 0);
	gpt_cmp_map(x, "map at the top of the input range", top - r - 2 * g,
		    r + 2 * g, GPT_CMP_RW | IOMMU_CACHE | IOMMU_NOEXEC, 0);
	if (big) {
		gpt_cmp_map(x, "map a 1G block", 2 * big, big,
			    IOMMU_READ | IOMMU_CACHE | IOMMU_PRIV |
			    IOMMU_NOEXEC, 0);
		gpt_cmp_map(x, "map 17 1G blocks", 16 * big, 17 * big,
			    GPT_CMP_RW | IOMMU_CACHE, 0);
	}

	gpt_cmp_selfcheck(x, r, 13 * r);

	/* Partial unmaps, blocks split on the way */
	gpt_cmp_unmap(x, "unmap from the middle of 17 pages", r + 20 * g,
		      5 * g);
	gpt_cmp_unmap(x, "unmap two leading pages", 3 * r - 3 * g, 2 * g);
	gpt_cmp_unmap(x, "unmap one of two blocks", 6 * r, r);
	gpt_cmp_unmap(x, "unmap a whole table of pages", 9 * r, r);
	gpt_cmp_unmap(x, "unmap a page out of a block", 3 * r + 7 * g, g);
	gpt_cmp_unmap(x, "unmap a page out of 33 blocks", 69 * r + 3 * g, g);
	if (big)
		gpt_cmp_unmap(x, "unmap a page out of a 1G block",
			      2 * big + 3 * r + 2 * g, g);

	/* Maps into the holes, other output addresses and protections */
	gpt_cmp_map(x, "map into the hole of the 17 pages", r + 20 * g, 5 * g,
		    IOMMU_READ | IOMMU_NOEXEC, 32 * r);
	gpt_cmp_map(x, "map a block where a block was", 6 * r, r,
		    GPT_CMP_RW | IOMMU_CACHE, 2 * r);
	gpt_cmp_map(x, "map a block where a table was freed", 9 * r, r,
		    GPT_CMP_RW, 0);
	gpt_cmp_map(x, "map back into the split block", 3 * r + 7 * g, g,
		    GPT_CMP_RW | IOMMU_CACHE, 0);
	gpt_cmp_map(x, "map back into the split blocks", 69 * r + 3 * g, g,
		    IOMMU_WRITE | IOMMU_PRIV, 0);

	/* Everything goes; tables only partly unmapped stay on both sides */
	gpt_cmp_unmap(x, "unmap the page", r, g);
	gpt_cmp_unmap(x, "unmap the 17 pages", r + 16 * g, 17 * g);
	gpt_cmp_unmap(x, "unmap pages, a table, pages", 3 * r - g, r + 3 * g);
	gpt_cmp_unmap(x, "unmap two blocks", 6 * r, 2 * r);
	gpt_cmp_unmap(x, "unmap a block", 9 * r, r);
	gpt_cmp_unmap(x, "unmap write-only pages", 11 * r + 2 * g, 3 * g);
	gpt_cmp_unmap(x, "unmap half a block of pages", 13 * r, r / 2);
	gpt_cmp_unmap(x, "unmap 33 blocks", 64 * r, 33 * r);
	gpt_cmp_unmap(x, "unmap at the top", top - r - 2 * g, r + 2 * g);
	if (big) {
		gpt_cmp_unmap(x, "unmap below the hole in 1G", 2 * big,
			      3 * r + 2 * g);
		gpt_cmp_unmap(x, "unmap above the hole in 1G",
			      2 * big + 3 * r + 3 * g, big - 3 * r - 3 * g);
		gpt_cmp_unmap(x, "unmap 17 1G blocks", 16 * big, 17 * big);
	}
	gpt_cmp_finish(x);
}

#else /* !GPT_CMP_ARM */

static void gpt_cmp_arm_test(struct kunit *test)
{
	kunit_skip(test, "io-pgtable-arm not built (CONFIG_IOMMU_IO_PGTABLE_LPAE=n)");
}

#endif /* GPT_CMP_ARM */

#if GPT_CMP_AMD

static const struct gpt_cmp_cfg gpt_cmp_amd_cfgs[] = {
	{ .name = "amd_v1", .fmt = AMD_IOMMU_V1 },
};

KUNIT_ARRAY_PARAM(gpt_cmp_amd_cfgs, gpt_cmp_amd_cfgs, gpt_cmp_desc);

/*
 * The AMD v1 io-pgtable lives inside a protection domain (it finds the
 * domain with container_of() to take its lock and flush it when the table
 * grows).  A domain with no device, no IOMMU and no ID is enough: the
 * flushes walk empty lists.
 */
struct gpt_cmp_amd {
	struct gpt_cmp x;
	struct protection_domain pdom;
};

static void gpt_cmp_amd_root(struct gpt_cmp *x)
{
	struct gpt_cmp_amd *a = container_of(x, struct gpt_cmp_amd, x);

	x->ref_root = a->pdom.iop.root;
	x->ref_lvl = a->pdom.iop.mode - 1;
	x->ref_top_nents = 512;
}

static struct gpt_cmp *gpt_cmp_amd_setup(struct kunit *test)
{
	/* Three levels, as the driver starts */
	struct gpt_amdv1_cfg cfg = { .levels = 3, .nid = NUMA_NO_NODE };
	struct gpt_cmp_amd *a;
	struct gpt_cmp *x;

	a = kunit_kzalloc(test, sizeof(*a), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, a);
	x = &a->x;
	x->test = test;
	x->c = test->param_value;
	spin_lock_init(&a->pdom.lock);
	INIT_LIST_HEAD(&a->pdom.dev_list);
	INIT_LIST_HEAD(&a->pdom.dev_data_list);
	xa_init(&a->pdom.iommu_array);
	a->pdom.pd_mode = PD_MODE_V1;
	a->pdom.iop.pgtbl.cfg.amd.nid = NUMA_NO_NODE;
	x->ops = alloc_io_pgtable_ops(AMD_IOMMU_V1, &a->pdom.iop.pgtbl.cfg,
				      &a->pdom);
	KUNIT_ASSERT_NOT_NULL(test, x->ops);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, gpt_cmp_free_ref,
							x->ops), 0);
	x->pgsizes = a->pdom.iop.pgtbl.cfg.pgsize_bitmap;
	if (x->pgsizes != (GENMASK_ULL(51, 12) ^ SZ_512G))
		kunit_skip(test, "the AMD driver was told to use other page sizes (%llx)",
			   x->pgsizes);

	iommu_iotlb_gather_init(&x->gather);
	KUNIT_ASSERT_EQ(test, gpt_amdv1_init(&x->t, &cfg, GFP_KERNEL), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, gpt_cmp_deinit,
							x), 0);
	KUNIT_EXPECT_EQ(test, x->t.pgsize_bitmap, x->pgsizes);

	x->amd = true;
	gpt_cmp_x86_geometry(x);
	return x;
}

static void gpt_cmp_amd_test(struct kunit *test)
{
	struct gpt_cmp *x = gpt_cmp_amd_setup(test);
	u64 g = x->g, r = x->r, big = x->big;

	gpt_cmp_check(x, "init");

	/*
	 * Every power of two is a page size here: runs of replicated
	 * entries (NextLevel 7) from 8K up, and growth of the top level up
	 * to six.  The v1 driver unmaps whole pages only, so do the unmaps.
	 */
	gpt_cmp_map_start(x);
	gpt_cmp_map(x, "map write-only pages", 11 * r + 2 * g, 3 * g,
		    IOMMU_WRITE, 0);
	gpt_cmp_map(x, "map another table of pages", 13 * r, r, GPT_CMP_RW,
		    g);
	gpt_cmp_map(x, "map 1M", 15 * r, SZ_1M, IOMMU_READ, 0);
	gpt_cmp_map(x, "map 1G", 2 * big, big, IOMMU_READ, 0);
	gpt_cmp_map(x, "map 4G", 32 * big, 4 * big, GPT_CMP_RW, 0);
	gpt_cmp_map(x, "map 1T, grow to 4 levels", 1ULL << 40, 1ULL << 40,
		    GPT_CMP_RW, 0);
	gpt_cmp_map(x, "map pages, grow to 5 levels", 1ULL << 50, 3 * g,
		    GPT_CMP_RW, 0);
	gpt_cmp_map(x, "map pages, grow to 6 levels", (1ULL << 60) + 5 * g,
		    2 * g, IOMMU_READ, 0);
	KUNIT_EXPECT_EQ(test, gpt_top_level(&x->t), 5);

	gpt_cmp_selfcheck(x, r, 0);

	/* Unmaps of whole pages, partial for the ranges mapped */
	gpt_cmp_unmap(x, "unmap the page after 64K", r + 32 * g, g);
	gpt_cmp_unmap(x, "unmap pages from a table", 9 * r + 100 * g, 50 * g);
	gpt_cmp_unmap(x, "unmap 4M", 6 * r, 2 * r);
	gpt_cmp_unmap(x, "unmap 4K and 8K", 3 * r - 3 * g, 3 * g);
	gpt_cmp_unmap(x, "unmap a whole table of pages", 13 * r, r);
	KUNIT_EXPECT_GT(test, x->empty_tables, 0);
	gpt_cmp_unmap(x, "unmap 4G", 32 * big, 4 * big);

	/* Maps into the holes */
	gpt_cmp_map(x, "map into the page after 64K", r + 32 * g, g,
		    IOMMU_READ, 7 * g);
	gpt_cmp_map(x, "map 4M again", 6 * r, 2 * r, GPT_CMP_RW, 0);
	gpt_cmp_map(x, "map 4K and 8K again", 3 * r - 3 * g, 3 * g,
		    IOMMU_READ, 0);
	gpt_cmp_map(x, "map 2M over the emptied table", 13 * r, r,
		    GPT_CMP_RW, 0);
	gpt_cmp_map(x, "map into the hole of the table", 9 * r + 100 * g,
		    50 * g, GPT_CMP_RW | IOMMU_CACHE, 0);

	/* Everything goes */
	gpt_cmp_unmap(x, "unmap the page", r, g);
	gpt_cmp_unmap(x, "unmap 64K and a page", r + 16 * g, 17 * g);
	gpt_cmp_unmap(x, "unmap 4K, 8K, 2M, 8K", 3 * r - 3 * g, r + 5 * g);
	gpt_cmp_unmap(x, "unmap 4M", 6 * r, 2 * r);
	gpt_cmp_unmap(x, "unmap a table of pages", 9 * r, r);
	gpt_cmp_unmap(x, "unmap write-only pages", 11 * r + 2 * g, 3 * g);
	gpt_cmp_unmap(x, "unmap 2M", 13 * r, r);
	gpt_cmp_unmap(x, "unmap 1M", 15 * r, SZ_1M);
	gpt_cmp_unmap(x, "unmap 1G", 2 * big, big);
	gpt_cmp_unmap(x, "unmap 1T", 1ULL << 40, 1ULL << 40);
	gpt_cmp_unmap(x, "unmap at 2^50", 1ULL << 50, 3 * g);
	gpt_cmp_unmap(x, "unmap at 2^60", (1ULL << 60) + 5 * g, 2 * g);
	gpt_cmp_finish(x);
}

#else /* !GPT_CMP_AMD */

static void gpt_cmp_amd_test(struct kunit *test)
{
	kunit_skip(test, "the AMD IOMMU driver is not built in (CONFIG_AMD_IOMMU)");
}

#endif /* GPT_CMP_AMD */

#if GPT_CMP_VTD

#define VTD(n, w, fl)	{ .name = n, .ias = w, .flags = fl }

/* Address width (3, 4 or 5 levels), 1G pages or not, SNP or not */
static const struct gpt_cmp_cfg gpt_cmp_vtd_cfgs[] = {
	VTD("vtd_4lvl", 48, 0),
	VTD("vtd_4lvl_snp", 48, GPT_VTDSS_SNP),
	VTD("vtd_3lvl_no1g", 39, GPT_VTDSS_NO_1G),
	VTD("vtd_5lvl_snp", 57, GPT_VTDSS_SNP),
};

KUNIT_ARRAY_PARAM(gpt_cmp_vtd_cfgs, gpt_cmp_vtd_cfgs, gpt_cmp_desc);

static void gpt_cmp_vtd_root(struct gpt_cmp *x)
{
	x->ref_root = gpt_cmp_vtd_top(x->dom, &x->ref_lvl);
	x->ref_top_nents = 512;
}

static struct gpt_cmp *gpt_cmp_vtd_setup(struct kunit *test)
{
	const struct gpt_cmp_cfg *c = test->param_value;
	bool no_1g = c->flags & GPT_VTDSS_NO_1G;
	struct gpt_vtdss_cfg cfg = {
		.levels = (c->ias - 12) / 9,
		.flags = c->flags,
		.nid = NUMA_NO_NODE,
	};
	struct gpt_cmp *x;

	x = kunit_kzalloc(test, sizeof(*x), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, x);
	x->test = test;
	x->c = c;
	x->dom = gpt_cmp_vtd_domain(c->ias, no_1g ? 1 : 2,
				    c->flags & GPT_VTDSS_SNP);
	KUNIT_ASSERT_NOT_NULL(test, x->dom);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, gpt_cmp_free_dom,
							x->dom), 0);
	x->pgsizes = x->dom->pgsize_bitmap;

	iommu_iotlb_gather_init(&x->gather);
	KUNIT_ASSERT_EQ(test, gpt_vtdss_init(&x->t, &cfg, GFP_KERNEL), 0);
	KUNIT_ASSERT_EQ(test, kunit_add_action_or_reset(test, gpt_cmp_deinit,
							x), 0);
	KUNIT_EXPECT_EQ(test, x->t.pgsize_bitmap, x->pgsizes);
	KUNIT_EXPECT_EQ(test, (unsigned int)x->t.ias, c->ias);

	x->vtd = true;
	gpt_cmp_x86_geometry(x);
	return x;
}

/* A write-only map: our leaves W, the reference's R and W (see the top) */
static void gpt_cmp_vtd_map_wo(struct gpt_cmp *x, const char *step, u64 iova,
			       u64 len)
{
	KUNIT_ASSERT_LT(x->test, x->nr_wo, ARRAY_SIZE(x->wo));
	x->wo[x->nr_wo++] = (struct gpt_cmp_range){ iova, iova + len };
	gpt_cmp_map(x, step, iova, len, IOMMU_WRITE, 0);
}

/*
 * A map of super pages over a table that unmaps emptied and kept: the
 * reference frees the table and writes super pages, ours fills the table.
 */
static void gpt_cmp_vtd_map_kept(struct gpt_cmp *x, const char *step,
				 u64 iova, u64 len)
{
	KUNIT_ASSERT_LT(x->test, x->nr_kept, ARRAY_SIZE(x->kept));
	x->kept[x->nr_kept++] = (struct gpt_cmp_range){ iova, iova + len };
	gpt_cmp_map(x, step, iova, len, GPT_CMP_RW, 0);
}

static void gpt_cmp_vtd_test(struct kunit *test)
{
	struct gpt_cmp *x = gpt_cmp_vtd_setup(test);
	u64 g = x->g, r = x->r, big = x->big;
	u64 top = 1ULL << x->c->ias;
	u64 *p;

	gpt_cmp_check(x, "init");

	/*
	 * 4K pages, 2M and (unless NO_1G) 1G super pages, alone and mixed in
	 * one call, output addresses aligned and not.  The 6.12 driver
	 * unmaps whole leaves only (it widens a partial unmap to the whole
	 * super page), so every unmap below covers whole leaves.
	 */
	gpt_cmp_map_start(x);
	gpt_cmp_vtd_map_wo(x, "map write-only pages", 11 * r + 2 * g, 3 * g);
	gpt_cmp_vtd_map_wo(x, "map a write-only 2M page", 12 * r, r);
	gpt_cmp_map(x, "map half a table of pages", 13 * r, r / 2, IOMMU_READ,
		    0);
	gpt_cmp_map(x, "map 33 2M pages", 64 * r, 33 * r, GPT_CMP_RW, 0);
	gpt_cmp_map(x, "map at the top of the input range", top - r - 2 * g,
		    r + 2 * g, GPT_CMP_RW, 0);
	gpt_cmp_map(x, "map 1G", 2 * big, big, IOMMU_READ, 0);
	gpt_cmp_map(x, "map 17 1G", 16 * big, 17 * big, GPT_CMP_RW, 0);
	gpt_cmp_map(x, "map 1G of 2M pages, pa off by 2M", 40 * big, big,
		    GPT_CMP_RW, r);
	gpt_cmp_map(x, "map 1G of 2M pages again", 44 * big, big, GPT_CMP_RW,
		    r);
	gpt_cmp_map(x, "map a page, 2M, 1G, 2M, a page", 48 * big - r - g,
		    big + 2 * r + 2 * g, GPT_CMP_RW | IOMMU_CACHE, 0);

	gpt_cmp_selfcheck(x, r, 0);
	/* The write-only rule still sees a readable leaf of ours */
	KUNIT_ASSERT_EQ(test, gpt_lookup(&x->t, 11 * r + 3 * g, NULL, NULL,
					 &p), 0);
	gpt_cmp_expect_flip(x, p, GPT_CMP_VTD_R, 1, "R of a write-only leaf");

	/* Unmaps of whole leaves; tables go when their whole span does */
	gpt_cmp_unmap(x, "unmap the page after 16 pages", r + 32 * g, g);
	gpt_cmp_unmap(x, "unmap pages from a table", 9 * r + 100 * g, 50 * g);
	gpt_cmp_unmap(x, "unmap one of two 2M pages", 6 * r, r);
	gpt_cmp_unmap(x, "unmap 3 pages before 2M", 3 * r - 3 * g, 3 * g);
	gpt_cmp_unmap(x, "unmap half a table: it stays, empty", 13 * r, r / 2);
	gpt_cmp_unmap(x, "unmap 1G of 2M pages: the table goes", 40 * big,
		      big);
	gpt_cmp_unmap(x, "unmap 1G", 2 * big, big);
	gpt_cmp_unmap(x, "unmap half of 1G of 2M pages", 44 * big, big / 2);
	gpt_cmp_unmap(x, "unmap the other half: the table stays, empty",
		      44 * big + big / 2, big / 2);

	/* Maps into the holes and over the tables left empty */
	gpt_cmp_map(x, "map into the page after 16 pages", r + 32 * g, g,
		    IOMMU_READ, 7 * g);
	gpt_cmp_map(x, "map 2M where a 2M page was", 6 * r, r, GPT_CMP_RW,
		    2 * r);
	gpt_cmp_map(x, "map 3 pages before 2M again", 3 * r - 3 * g, 3 * g,
		    IOMMU_READ, 0);
	gpt_cmp_map(x, "map into the hole of the table", 9 * r + 100 * g,
		    50 * g, GPT_CMP_RW | IOMMU_CACHE, 0);
	gpt_cmp_map(x, "map 1G where a table of 2M pages went", 40 * big, big,
		    GPT_CMP_RW, 0);
	gpt_cmp_vtd_map_kept(x, "map 2M over the emptied table", 13 * r, r);
	gpt_cmp_vtd_map_kept(x, "map 1G over the emptied table of 2M pages",
			     44 * big, big);
	/* The split comparison still sees a changed page of ours */
	KUNIT_ASSERT_EQ(test, gpt_lookup(&x->t, 13 * r + 5 * g, NULL, NULL,
					 &p), 0);
	gpt_cmp_expect_flip(x, p, GPT_CMP_VTD_SNP, 1,
			    "SNP of a page where the reference has 2M");

	/* Everything goes */
	gpt_cmp_unmap(x, "unmap the page", r, g);
	gpt_cmp_unmap(x, "unmap 17 pages", r + 16 * g, 17 * g);
	gpt_cmp_unmap(x, "unmap 3 pages, 2M, 2 pages", 3 * r - 3 * g,
		      r + 5 * g);
	gpt_cmp_unmap(x, "unmap two 2M pages", 6 * r, 2 * r);
	gpt_cmp_unmap(x, "unmap a table of pages", 9 * r, r);
	gpt_cmp_unmap(x, "unmap write-only pages", 11 * r + 2 * g, 3 * g);
	gpt_cmp_unmap(x, "unmap a write-only 2M page", 12 * r, r);
	gpt_cmp_unmap(x, "unmap 2M over the emptied table", 13 * r, r);
	gpt_cmp_unmap(x, "unmap 33 2M pages", 64 * r, 33 * r);
	gpt_cmp_unmap(x, "unmap at the top", top - r - 2 * g, r + 2 * g);
	gpt_cmp_unmap(x, "unmap 17 1G", 16 * big, 17 * big);
	gpt_cmp_unmap(x, "unmap 1G", 40 * big, big);
	gpt_cmp_unmap(x, "unmap 1G over the emptied table", 44 * big, big);
	gpt_cmp_unmap(x, "unmap a page, 2M, 1G, 2M, a page", 48 * big - r - g,
		      big + 2 * r + 2 * g);
	gpt_cmp_finish(x);
}

#else /* !GPT_CMP_VTD */

static void gpt_cmp_vtd_test(struct kunit *test)
{
	kunit_skip(test, "CONFIG_INTEL_IOMMU and this test are not both built in");
}

#endif /* GPT_CMP_VTD */

#if GPT_CMP_ANY
static void gpt_cmp_ref_root(struct gpt_cmp *x)
{
#if GPT_CMP_VTD
	if (x->vtd) {
		gpt_cmp_vtd_root(x);
		return;
	}
#endif
#if GPT_CMP_AMD
	if (x->amd) {
		gpt_cmp_amd_root(x);
		return;
	}
#endif
#if GPT_CMP_ARM
	gpt_cmp_arm_root(x);
#endif
}
#endif

static struct kunit_case gpt_cmp_cases[] = {
#if GPT_CMP_ARM
	KUNIT_CASE_PARAM(gpt_cmp_arm_test, gpt_cmp_arm_cfgs_gen_params),
#else
	KUNIT_CASE(gpt_cmp_arm_test),
#endif
#if GPT_CMP_AMD
	KUNIT_CASE_PARAM(gpt_cmp_amd_test, gpt_cmp_amd_cfgs_gen_params),
#else
	KUNIT_CASE(gpt_cmp_amd_test),
#endif
#if GPT_CMP_VTD
	KUNIT_CASE_PARAM(gpt_cmp_vtd_test, gpt_cmp_vtd_cfgs_gen_params),
#else
	KUNIT_CASE(gpt_cmp_vtd_test),
#endif
	{}
};

static struct kunit_suite gpt_cmp_suite = {
	.name = "generic_pt_compare",
	.test_cases = gpt_cmp_cases,
};

kunit_test_suites(&gpt_cmp_suite);

MODULE_DESCRIPTION("KUnit: generic_pt tables compared with io-pgtable-arm, AMD v1 and VT-d");
MODULE_LICENSE("GPL");
