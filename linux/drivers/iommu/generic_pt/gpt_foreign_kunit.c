// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests of the walk of foreign tables (<linux/generic_pt/foreign.h>).
 *
 * Tables the library builds, walked as if they were someone else's, must
 * translate exactly as gpt_lookup() says, in every format and granule the
 * walk offers; hand-made tables that point back at themselves must cost
 * no more reads than the levels, and entries with reserved bits set must
 * end the walk.
 */
#include <kunit/test.h>
#include <linux/generic_pt/foreign.h>
#include <linux/gfp.h>
#include <linux/log2.h>
#include <linux/sizes.h>

#include "../iommu-pages.h"

struct gft_cfg {
	const char *name;
	enum gpt_format fmt;
	unsigned int granule_shift;
	unsigned int levels;		/* VT-d and AMD v1; ARMv8: ias */
	unsigned int flags;		/* ARMv8 */
	u64 large;			/* a block size to map */
};

static const struct gft_cfg gft_cfgs[] = {
	/*
	 * The root must be aligned to the granule at least: 16K and 64K with
	 * input sizes whose top table is a whole granule (the library
	 * allocates a smaller one from a smaller page)
	 */
	{ "armv8_4k", GPT_FMT_ARMV8, 12, 48, 0, SZ_2M },
	{ "armv8_4k_contig", GPT_FMT_ARMV8, 12, 48, GPT_ARMV8_CONTIG, SZ_64K },
	{ "armv8_16k", GPT_FMT_ARMV8, 14, 47, 0, SZ_32M },
	{ "armv8_64k", GPT_FMT_ARMV8, 16, 42, 0, SZ_512M },
	{ "vtdss_3lvl", GPT_FMT_VTDSS, 12, 3, 0, SZ_1G },
	{ "vtdss_4lvl", GPT_FMT_VTDSS, 12, 4, 0, SZ_2M },
	{ "vtdss_5lvl", GPT_FMT_VTDSS, 12, 5, 0, SZ_2M },
	{ "amdv1_4lvl", GPT_FMT_AMDV1, 12, 4, 0, SZ_64K },
	{ "amdv1_6lvl", GPT_FMT_AMDV1, 12, 6, 0, SZ_1G },
};

static void gft_cfg_desc(const struct gft_cfg *c, char *desc)
{
	strscpy(desc, c->name, KUNIT_PARAM_DESC_SIZE);
}

KUNIT_ARRAY_PARAM(gft_cfgs, gft_cfgs, gft_cfg_desc);

/* Reads the library's own tables, kernel memory, and counts the reads */
struct gft_reader {
	unsigned int reads;
};

static int gft_read(void *arg, u64 addr, __le64 *pte)
{
	struct gft_reader *r = arg;

	r->reads++;
	if (!pfn_valid(PHYS_PFN(addr)))
		return -EFAULT;
	*pte = cpu_to_le64(READ_ONCE(*(u64 *)phys_to_virt(addr)));
	return 0;
}

static int gft_build(const struct gft_cfg *c, struct gpt_table *t,
		     struct gpt_foreign_cfg *fc)
{
	struct gpt_armv8_cfg arm = {
		.granule = 1U << c->granule_shift, .stage = 1, .ias = c->levels,
		.oas = 48, .flags = c->flags, .nid = NUMA_NO_NODE,
	};
	struct gpt_vtdss_cfg vtd = {
		.levels = c->levels, .nid = NUMA_NO_NODE,
	};
	struct gpt_amdv1_cfg amd = {
		.levels = c->levels, .nid = NUMA_NO_NODE,
	};
	int ret;

	switch (c->fmt) {
	case GPT_FMT_ARMV8:
		ret = gpt_armv8_init(t, &arm, GFP_KERNEL);
		break;
	case GPT_FMT_VTDSS:
		ret = gpt_vtdss_init(t, &vtd, GFP_KERNEL);
		break;
	default:
		ret = gpt_amdv1_init(t, &amd, GFP_KERNEL);
		break;
	}
	*fc = (struct gpt_foreign_cfg){
		.fmt = c->fmt, .granule_shift = c->granule_shift,
		.ias = t->ias, .oas = c->fmt == GPT_FMT_ARMV8 ? 48 : 52,
	};
	return ret;
}

/*
 * A hole the walk reports holds @iova, is aligned to its size, at least
 * a granule (exactly one where the last level has a table), and holds
 * none of the pages mapped: a range walk can skip all of it.
 */
static void gft_check_hole(struct kunit *test, const struct gpt_leaf *hole,
			   u64 iova, const u64 *mapped, unsigned int nr, u64 g)
{
	unsigned int i;

	KUNIT_EXPECT_TRUE(test, is_power_of_2(hole->size) && hole->size >= g);
	KUNIT_EXPECT_EQ(test, hole->iova, iova & ~(hole->size - 1));
	for (i = 0; i < nr; i++)
		KUNIT_EXPECT_GE_MSG(test, mapped[i] - hole->iova, hole->size,
				    "hole at %llx holds %llx", iova, mapped[i]);
	/* Next to a mapped granule page: the level-0 entry's own size */
	if (iova == mapped[1] + g)
		KUNIT_EXPECT_EQ(test, hole->size, g);
}

/* The foreign walk of the library's table says what gpt_lookup() says */
static void gft_test_matches_lookup(struct kunit *test)
{
	const struct gft_cfg *c = test->param_value;
	u64 g = 1ULL << c->granule_shift, big = c->large;
	u64 base = 4 * big, iovas[12], mapped[4];
	struct gpt_foreign_cfg fc;
	struct gpt_foreign f;
	struct gpt_table t;
	unsigned int i;

	KUNIT_ASSERT_EQ(test, gft_build(c, &t, &fc), 0);
	KUNIT_ASSERT_EQ(test, gpt_map(&t, base, 0x10000000, g,
				      IOMMU_READ | IOMMU_WRITE, GFP_KERNEL,
				      NULL), 0);
	KUNIT_ASSERT_EQ(test, gpt_map(&t, base + g, 0x20000000, g, IOMMU_READ,
				      GFP_KERNEL, NULL), 0);
	KUNIT_ASSERT_EQ(test, gpt_map(&t, base + 2 * big, 8 * big, big,
				      IOMMU_READ | IOMMU_WRITE, GFP_KERNEL,
				      NULL), 0);
	/* Far up, where the table has other upper tables */
	KUNIT_ASSERT_EQ(test, gpt_map(&t, 1ULL << (t.ias - 1), 0x30000000, g,
				      IOMMU_WRITE | IOMMU_READ, GFP_KERNEL,
				      NULL), 0);
	KUNIT_ASSERT_EQ(test, gpt_foreign_init(&f, &fc, gpt_top_pa(&t)), 0);

	mapped[0] = base;
	mapped[1] = base + g;
	mapped[2] = base + 2 * big;
	mapped[3] = 1ULL << (t.ias - 1);
	iovas[0] = base;
	iovas[1] = base + g + 0x18;
	iovas[2] = base + 2 * g;			/* hole */
	iovas[3] = base + 2 * big;
	iovas[4] = base + 3 * big - 8;
	iovas[5] = base + 3 * big;			/* hole */
	iovas[6] = 1ULL << (t.ias - 1);
	iovas[7] = (1ULL << (t.ias - 1)) + g;		/* hole */
	iovas[8] = 0;
	iovas[9] = t.ias < 64 ? (1ULL << t.ias) - 1 : U64_MAX;
	iovas[10] = base - 1;
	iovas[11] = base + big / 2;
	for (i = 0; i < ARRAY_SIZE(iovas); i++) {
		struct gft_reader r = {};
		struct gpt_leaf leaf;
		phys_addr_t pa;
		u64 size;
		int want, got;

		want = gpt_lookup(&t, iovas[i], &pa, &size, NULL);
		got = gpt_foreign_lookup(&f, iovas[i], gft_read, &r, &leaf);
		KUNIT_EXPECT_EQ_MSG(test, got, want, "iova %llx", iovas[i]);
		KUNIT_EXPECT_LE(test, r.reads, f.levels);
		if (got == -ENOENT)
			gft_check_hole(test, &leaf, iovas[i], mapped,
				       ARRAY_SIZE(mapped), g);
		if (want || got)
			continue;
		KUNIT_EXPECT_EQ(test, leaf.pa + (iovas[i] - leaf.iova), (u64)pa);
		KUNIT_EXPECT_EQ(test, leaf.size, size);
		KUNIT_EXPECT_EQ(test, leaf.iova, iovas[i] & ~(size - 1));
		/* Writable exactly where the map said so */
		KUNIT_EXPECT_EQ(test, !!(leaf.prot & IOMMU_WRITE),
				iovas[i] < base + g || iovas[i] >= base + 2 * g);
		KUNIT_EXPECT_TRUE(test, leaf.prot & IOMMU_READ);
	}
	/* Beyond the input size */
	if (t.ias < 64) {
		struct gft_reader r = {};
		struct gpt_leaf leaf;

		KUNIT_EXPECT_EQ(test, gpt_foreign_lookup(&f, 1ULL << t.ias,
							 gft_read, &r, &leaf),
				-ERANGE);
		KUNIT_EXPECT_EQ(test, r.reads, 0);
	}
	gpt_deinit(&t);
}

/* Descriptions the formats do not allow */
static void gft_test_bad_cfg(struct kunit *test)
{
	static const struct {
		struct gpt_foreign_cfg c;
		u64 root;
		int err;
	} bad[] = {
		{ { GPT_FMT_VTDSS, 12, 40, 52 }, 0, -ERANGE },
		{ { GPT_FMT_VTDSS, 14, 48, 52 }, 0, -ERANGE },
		{ { GPT_FMT_VTDSS, 12, 48, 53 }, 0, -ERANGE },
		{ { GPT_FMT_VTDSS, 12, 48, 52 }, 0x800, -ERANGE },
		{ { GPT_FMT_VTDSS, 12, 48, 40 }, 1ULL << 40, -ERANGE },
		{ { GPT_FMT_ARMV8, 13, 48, 48 }, 0, -ERANGE },
		{ { GPT_FMT_ARMV8, 12, 49, 48 }, 0, -ERANGE },
		{ { GPT_FMT_ARMV8, 16, 48, 48 }, SZ_4K, -ERANGE },
		{ { GPT_FMT_AMDV1, 12, 65, 52 }, 0, -ERANGE },
		{ { GPT_FMT_AMDV1, 12, 12, 52 }, 0, -ERANGE },
		{ { 7, 12, 48, 48 }, 0, -EOPNOTSUPP },
	};
	struct gpt_foreign f;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(bad); i++)
		KUNIT_EXPECT_EQ_MSG(test, gpt_foreign_init(&f, &bad[i].c,
							   bad[i].root),
				    bad[i].err, "case %u", i);
}

/* A table whose every entry is @e(table's own address): a loop */
static u64 *gft_loop_table(struct kunit *test, u64 (*e)(u64 pa, int i))
{
	u64 *table = (u64 *)get_zeroed_page(GFP_KERNEL);
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, table);
	for (i = 0; i < SZ_4K / sizeof(u64); i++)
		table[i] = e(virt_to_phys(table), i);
	return table;
}

static u64 gft_vtd_self(u64 pa, int i)
{
	return pa | 3;			/* read, write, a table */
}

/* AMD v1: a present 4K page, readable and writable (next level 0) */
#define AMDV1_TEST_PAGE		(BIT_ULL(0) | BIT_ULL(61) | BIT_ULL(62))

static u64 gft_amd_self(u64 pa, int i)
{
	/* Present, IR, IW, next level 3: right only below a level-4 top */
	return pa | BIT_ULL(0) | (3ULL << 9) | BIT_ULL(61) | BIT_ULL(62);
}

static u64 gft_arm_self(u64 pa, int i)
{
	return pa | 3;
}

/* Tables pointing at themselves: the walk reads at most the levels */
static void gft_test_loops(struct kunit *test)
{
	static const struct {
		struct gpt_foreign_cfg c;
		u64 (*e)(u64 pa, int i);
	} loops[] = {
		{ { GPT_FMT_VTDSS, 12, 57, 52 }, gft_vtd_self },
		{ { GPT_FMT_AMDV1, 12, 48, 52 }, gft_amd_self },
		{ { GPT_FMT_ARMV8, 12, 48, 48 }, gft_arm_self },
	};
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(loops); i++) {
		u64 *table = gft_loop_table(test, loops[i].e);
		struct gft_reader r = {};
		struct gpt_foreign f;
		struct gpt_leaf leaf;
		int ret;

		KUNIT_ASSERT_EQ(test, gpt_foreign_init(&f, &loops[i].c,
						       virt_to_phys(table)), 0);
		ret = gpt_foreign_lookup(&f, 0x12345678, gft_read, &r, &leaf);
		KUNIT_EXPECT_LE_MSG(test, r.reads, f.levels, "case %u", i);
		/* A table entry read as a page, or refused: never more */
		KUNIT_EXPECT_TRUE_MSG(test, ret == -EBADMSG ||
				      (!ret && leaf.pa == virt_to_phys(table)),
				      "case %u: %d", i, ret);
		free_page((unsigned long)table);
	}
}

/* One bad entry at the top: the walk stops there */
static void gft_test_reserved(struct kunit *test)
{
	static const struct {
		struct gpt_foreign_cfg c;
		u64 entry;
	} bad[] = {
		/* VT-d: PS at the 512G level */
		{ { GPT_FMT_VTDSS, 12, 48, 52 }, 3 | BIT_ULL(7) },
		/* AMD v1: reserved bit 55; a table skipping a level */
		{ { GPT_FMT_AMDV1, 12, 48, 52 }, 1 | (3ULL << 9) | BIT_ULL(55) },
		{ { GPT_FMT_AMDV1, 12, 48, 52 }, 1 | (2ULL << 9) },
		/* AMD v1: bit 60 in a table entry; a 512G page */
		{ { GPT_FMT_AMDV1, 12, 48, 52 }, 1 | (3ULL << 9) | BIT_ULL(60) },
		{ { GPT_FMT_AMDV1, 12, 48, 52 }, 1 | BIT_ULL(61) },
		/*
		 * AMD v1: next level 7 with every address bit set (a page
		 * of 2^53 bytes), and one of 2^48 (the whole input range of
		 * four levels): sizes no entry of the top level can hold
		 */
		{ { GPT_FMT_AMDV1, 12, 48, 52 },
		  1 | (7ULL << 9) | GENMASK_ULL(51, 12) | BIT_ULL(61) },
		{ { GPT_FMT_AMDV1, 12, 48, 52 },
		  1 | (7ULL << 9) | GENMASK_ULL(46, 12) | BIT_ULL(61) },
		/*
		 * ... and at the top of two levels (2 MiB pages), next level
		 * 7 encoding 8 KiB: no larger than the level's own page
		 */
		{ { GPT_FMT_AMDV1, 12, 30, 52 }, 1 | (7ULL << 9) | BIT_ULL(61) },
		/* ARMv8: RES0 bit 48; a block at level 0 */
		{ { GPT_FMT_ARMV8, 12, 48, 48 }, 3 | BIT_ULL(48) },
		{ { GPT_FMT_ARMV8, 12, 48, 48 }, 1 },
		/* An address at the output size */
		{ { GPT_FMT_VTDSS, 12, 48, 40 }, 3 | BIT_ULL(40) },
	};
	u64 *table = (u64 *)get_zeroed_page(GFP_KERNEL);
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, table);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		struct gft_reader r = {};
		struct gpt_foreign f;
		struct gpt_leaf leaf;

		table[0] = bad[i].entry;
		KUNIT_ASSERT_EQ(test, gpt_foreign_init(&f, &bad[i].c,
						       virt_to_phys(table)), 0);
		KUNIT_EXPECT_EQ_MSG(test, gpt_foreign_lookup(&f, 0x1000,
							     gft_read, &r,
							     &leaf),
				    -EBADMSG, "case %u", i);
		KUNIT_EXPECT_EQ(test, r.reads, 1);
	}
	free_page((unsigned long)table);
}

/*
 * A guest's AMD v1 table on a host with memory encryption: an address bit
 * the host uses as its C-bit (sme_me_mask, bit 47 here) is an ordinary
 * address bit of the guest's. The walk must hand it back as the guest
 * wrote it (a guest-physical address beyond its memory, which the read
 * callback then refuses) or refuse it where it is at or above the output
 * size, never clear it: the address would alias guest memory below.
 */
static void gft_test_host_encryption_bit(struct kunit *test)
{
	static const struct gpt_foreign_cfg cfgs[] = {
		{ GPT_FMT_AMDV1, 12, 21, 48 },	/* bit 47 an address bit */
		{ GPT_FMT_AMDV1, 12, 21, 47 },	/* bit 47 beyond the output */
	};
	const u64 c_bit = BIT_ULL(47);
	u64 *table = (u64 *)get_zeroed_page(GFP_KERNEL);
	unsigned int i;

	KUNIT_ASSERT_NOT_NULL(test, table);
	/* One level: the 4K page at IOVA 0x1000, its address with the C-bit */
	table[1] = 0x5000 | c_bit | AMDV1_TEST_PAGE;
	for (i = 0; i < ARRAY_SIZE(cfgs); i++) {
		struct gft_reader r = {};
		struct gpt_foreign f;
		struct gpt_leaf leaf;
		int ret;

		KUNIT_ASSERT_EQ(test, gpt_foreign_init(&f, &cfgs[i],
						       virt_to_phys(table)), 0);
		/* A description holds no mask; had it the host's, unused */
		KUNIT_EXPECT_EQ(test, f.t.fmtd.amd.enc, 0);
		f.t.fmtd.amd.enc = c_bit;
		ret = gpt_foreign_lookup(&f, 0x1000, gft_read, &r, &leaf);
		if (cfgs[i].oas > 47) {
			KUNIT_EXPECT_EQ_MSG(test, ret, 0, "oas %u", cfgs[i].oas);
			KUNIT_EXPECT_EQ_MSG(test, leaf.pa, 0x5000 | c_bit,
					    "oas %u", cfgs[i].oas);
		} else {
			KUNIT_EXPECT_EQ_MSG(test, ret, -EBADMSG, "oas %u",
					    cfgs[i].oas);
		}
	}
	free_page((unsigned long)table);
}

static struct kunit_case gft_test_cases[] = {
	KUNIT_CASE_PARAM(gft_test_matches_lookup, gft_cfgs_gen_params),
	KUNIT_CASE(gft_test_bad_cfg),
	KUNIT_CASE(gft_test_loops),
	KUNIT_CASE(gft_test_reserved),
	KUNIT_CASE(gft_test_host_encryption_bit),
	{}
};

static struct kunit_suite gft_test_suite = {
	.name = "generic_pt_foreign",
	.test_cases = gft_test_cases,
};

kunit_test_suites(&gft_test_suite);

MODULE_DESCRIPTION("KUnit tests of generic_pt's walk of foreign tables");
MODULE_LICENSE("GPL");
