// SPDX-License-Identifier: GPL-2.0-only
/*
 * AMD IOMMU v1 (host) page table, AMD IOMMU specification, "I/O Page
 * Tables for Host Translations".
 *
 * Each level resolves 9 bits.  An entry's NextLevel field (bits 11:9) says
 * what it is: 1-6 a table at that level, 0 a page of the natural size of
 * the level, 7 a page of a larger power-of-two size, whose size is encoded
 * in the address field (ones from bit 12 up to the bit below the size's
 * log2 minus one, which is zero) and which is replicated in every entry it
 * covers.  Page sizes are 4K to 2^51 except 512G, as the 6.12 driver
 * offers.  The table starts with 1-6 levels and grows on demand.
 */
#include <linux/export.h>
#include <linux/mem_encrypt.h>

#include "gpt_priv.h"

#define AMDV1_PR		BIT_ULL(0)
#define AMDV1_HD		BIT_ULL(6)	/* dirty */
#define AMDV1_NL		GENMASK_ULL(11, 9)
#define AMDV1_NL_SIZE		7ULL
#define AMDV1_ADDR		GENMASK_ULL(51, 12)
#define AMDV1_FC		BIT_ULL(60)
#define AMDV1_IR		BIT_ULL(61)
#define AMDV1_IW		BIT_ULL(62)
#define AMDV1_MAX_LEVEL		5
/*
 * ptf_run_log2() of a size encoding no level holds: in no ptf_runs(), so
 * the foreign walk refuses it before any shift by it; the library's own
 * tables never hold such an entry
 */
#define AMDV1_RUN_BAD		31U

static inline unsigned int ptf_shift(const struct gpt_table *t,
				     unsigned int lvl)
{
	return 12 + 9 * lvl;
}

static inline unsigned int ptf_bits(const struct gpt_table *t,
				    unsigned int lvl, bool top)
{
	/* Six levels resolve 66 bits: the top table uses only 7 of its 9 */
	return min(9U, 64U - ptf_shift(t, lvl));
}

static inline unsigned int ptf_order(const struct gpt_table *t,
				     unsigned int lvl, bool top)
{
	return 0;
}

static inline unsigned int ptf_runs(const struct gpt_table *t,
				    unsigned int lvl)
{
	switch (lvl) {
	case 0:
	case 1:
	case 2:
		return 0x1ff;
	case 3:
		return 0x1fe;	/* no 512G page */
	case 4:
		return 0xf;	/* up to 2^51 */
	default:
		return 0;
	}
}

static inline bool ptf_present(u64 pte)
{
	return pte & AMDV1_PR;
}

static inline bool ptf_is_table(const struct gpt_table *t, u64 pte,
				unsigned int lvl)
{
	u64 nl = FIELD_GET(AMDV1_NL, pte);

	return nl && nl != AMDV1_NL_SIZE;
}

/*
 * The host's memory-encryption bit (SME's C-bit, t->fmtd.amd.enc) sits in
 * every address an entry of the library's tables holds.
 */
static inline u64 *ptf_table_va(const struct gpt_table *t, u64 pte)
{
	return phys_to_virt(pte & AMDV1_ADDR & ~t->fmtd.amd.enc);
}

static inline u64 ptf_mk_table(const struct gpt_table *t, phys_addr_t pa,
			       unsigned int lvl)
{
	return pa | t->fmtd.amd.enc | FIELD_PREP(AMDV1_NL, lvl) | AMDV1_PR |
	       AMDV1_IR | AMDV1_IW;
}

static inline unsigned int ptf_run_log2(const struct gpt_table *t, u64 pte,
					unsigned int lvl)
{
	unsigned int size_log2;

	if (FIELD_GET(AMDV1_NL, pte) != AMDV1_NL_SIZE)
		return 0;
	/* The first zero address bit is one below the size's log2 */
	size_log2 = ffz(pte | GENMASK_ULL(11, 0)) + 1;
	/*
	 * A page this level's entries cannot hold: no larger than the
	 * level's own pages, or no smaller than the level above's (up to
	 * 2^53 bytes, every address bit set).  The library never writes
	 * one; a foreign walk finds no such run (ptf_runs()) and refuses it.
	 */
	if (size_log2 <= ptf_shift(t, lvl) ||
	    size_log2 >= ptf_shift(t, lvl + 1))
		return AMDV1_RUN_BAD;
	return size_log2 - ptf_shift(t, lvl);
}

static inline phys_addr_t ptf_leaf_pa(const struct gpt_table *t, u64 pte,
				      unsigned int lvl, u64 size)
{
	return pte & AMDV1_ADDR & ~t->fmtd.amd.enc & ~(size - 1);
}

/*
 * A foreign table's addresses are its owner's (a guest's: guest-physical),
 * where the host's encryption bit is an address bit like any other: read
 * them as written, never cleared, so that none aliases another.
 */
static inline phys_addr_t ptf_foreign_pa(const struct gpt_table *t, u64 pte,
					 unsigned int lvl, u64 size)
{
	return pte & AMDV1_ADDR & ~(size - 1);
}

#define ptf_foreign_pa ptf_foreign_pa

static inline u64 ptf_leaf_attr(const struct gpt_table *t, u64 pte)
{
	return pte & ~(AMDV1_ADDR | AMDV1_NL);
}

static inline u64 ptf_mk_leaf(const struct gpt_table *t, phys_addr_t pa,
			      unsigned int lvl, unsigned int k, u64 attr)
{
	u64 size;

	if (!k)
		return pa | t->fmtd.amd.enc | attr;
	size = 1ULL << (ptf_shift(t, lvl) + k);
	return ((pa | t->fmtd.amd.enc | (size - 1)) & ~(size >> 1) & AMDV1_ADDR) |
	       FIELD_PREP(AMDV1_NL, AMDV1_NL_SIZE) | attr;
}

/* The replicated entries of a large page are identical */
static inline u64 ptf_run_step(const struct gpt_table *t, unsigned int lvl)
{
	return 0;
}

static inline int ptf_prot(const struct gpt_table *t, int prot, u64 *attr)
{
	u64 pte = AMDV1_PR | AMDV1_FC;

	if (!(prot & (IOMMU_READ | IOMMU_WRITE)))
		return -EINVAL;
	if (prot & IOMMU_READ)
		pte |= AMDV1_IR;
	if (prot & IOMMU_WRITE)
		pte |= AMDV1_IW;
	*attr = pte;
	return 0;
}

static inline int ptf_leaf_prot(const struct gpt_table *t, u64 pte)
{
	return (pte & AMDV1_IR ? IOMMU_READ : 0) |
	       (pte & AMDV1_IW ? IOMMU_WRITE : 0);
}

/*
 * Software bits in bits 3:1, which the IOMMU ignores in every entry (bits
 * 4:1 are ignored by the specification; bit 4 stays free).
 */
static inline unsigned int ptf_sw_shift(const struct gpt_table *t)
{
	return 1;
}

static inline bool ptf_dirty_ok(const struct gpt_table *t)
{
	return true;
}

static inline bool ptf_dirty(const struct gpt_table *t, u64 pte)
{
	return pte & AMDV1_HD;
}

static inline u64 ptf_clean(const struct gpt_table *t, u64 pte)
{
	return pte & ~AMDV1_HD;
}

/*
 * For foreign tables (pt_foreign.h): bits 58:52 are reserved in every
 * entry, 60:59 too in a table entry, whose next level must be the level
 * below (the walk skips no level).
 */
static inline u64 ptf_rsvd(const struct gpt_table *t, u64 pte,
			   unsigned int lvl)
{
	u64 nl = FIELD_GET(AMDV1_NL, pte);
	u64 rsvd = GENMASK_ULL(58, 52);

	if (nl && nl != AMDV1_NL_SIZE) {
		rsvd |= GENMASK_ULL(60, 59);
		if (nl != lvl)
			rsvd |= AMDV1_NL;
	}
	return rsvd;
}

/* IR and IW are checked at every level */
static inline int ptf_table_prot(const struct gpt_table *t, u64 pte)
{
	return ptf_leaf_prot(t, pte);
}

#define PTF_PREFIX amdv1
#include "pt_core.h"

/**
 * gpt_amdv1_init() - initialise an AMD IOMMU v1 table
 * @t: the table to initialise
 * @cfg: initial number of levels and options
 * @gfp: allocation flags for the top table
 *
 * Any context that may allocate with @gfp; no locking, @t is not yet shared.
 *
 * Return: 0, -EINVAL for an unsupported configuration, -ENOMEM.
 */
int gpt_amdv1_init(struct gpt_table *t, const struct gpt_amdv1_cfg *cfg,
		   gfp_t gfp)
{
	if (cfg->levels < 1 || cfg->levels > AMDV1_MAX_LEVEL + 1)
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	t->fmt = GPT_FMT_AMDV1;
	t->oas = 52;
	t->nid = cfg->nid;
	t->max_level = AMDV1_MAX_LEVEL;
	t->top_changed = cfg->top_changed;
	t->fmtd.amd.enc = __sme_set(0ULL);	/* sme_me_mask, if built in */
	return amdv1_init_common(t, cfg->levels - 1, gfp);
}
EXPORT_SYMBOL_GPL(gpt_amdv1_init);
