/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ARMv8 VMSA long descriptor format (Arm ARM D8.3), stage 1 and stage 2,
 * 48-bit input and output addresses: the entry accessors.
 *
 * Included by fmt_armv8_4k.c, fmt_armv8_16k.c and fmt_armv8_64k.c with
 * ARMV8_GSHIFT and PTF_PREFIX defined, so that each granule gets its own
 * copy of the algorithms with every shift and mask a constant (a map of
 * one page is a few loads and stores; a multiply per level shows).
 *
 * Leaf attributes follow what io-pgtable-arm writes for the same iommu prot
 * flags, so tables built here are interchangeable with its tables; the
 * contiguous hint (bit 52), which io-pgtable-arm never sets, is optional.
 */
#ifndef ARMV8_GSHIFT
#error "define ARMV8_GSHIFT (12, 14 or 16) before including fmt_armv8.h"
#endif

#include <linux/sizes.h>

#include "fmt_armv8_defs.h"
#include "gpt_priv.h"

#define ARMV8_BITS		(ARMV8_GSHIFT - 3)

static inline unsigned int ptf_shift(const struct gpt_table *t,
				     unsigned int lvl)
{
	return ARMV8_GSHIFT + lvl * ARMV8_BITS;
}

static inline unsigned int ptf_bits(const struct gpt_table *t,
				    unsigned int lvl, bool top)
{
	return top && lvl == t->max_level ? t->fmtd.arm.top_bits :
					    ARMV8_BITS;
}

static inline unsigned int ptf_order(const struct gpt_table *t,
				     unsigned int lvl, bool top)
{
	unsigned int bytes_log2 = ptf_bits(t, lvl, top) + 3;

	return bytes_log2 > PAGE_SHIFT ? bytes_log2 - PAGE_SHIFT : 0;
}

static inline unsigned int armv8_contig_log2(const struct gpt_table *t,
					     unsigned int lvl)
{
	return armv8_contig_log2_of(ARMV8_GSHIFT, lvl);
}

static inline unsigned int ptf_runs(const struct gpt_table *t,
				    unsigned int lvl)
{
	return lvl < ARRAY_SIZE(t->fmtd.arm.runs) ? t->fmtd.arm.runs[lvl] : 0;
}

static inline bool ptf_present(u64 pte)
{
	return pte & ARMV8_VALID;
}

static inline bool ptf_is_table(const struct gpt_table *t, u64 pte,
				unsigned int lvl)
{
	return lvl && (pte & ARMV8_TYPE_MASK) == ARMV8_TYPE_TABLE;
}

static inline u64 armv8_addr_mask(const struct gpt_table *t)
{
	return GENMASK_ULL(47, ARMV8_GSHIFT);
}

static inline u64 *ptf_table_va(const struct gpt_table *t, u64 pte)
{
	return phys_to_virt(pte & armv8_addr_mask(t));
}

static inline u64 ptf_mk_table(const struct gpt_table *t, phys_addr_t pa,
			       unsigned int lvl)
{
	return pa | ARMV8_TYPE_TABLE;
}

static inline unsigned int ptf_run_log2(const struct gpt_table *t, u64 pte,
					unsigned int lvl)
{
	return pte & ARMV8_CONTIG ? armv8_contig_log2(t, lvl) : 0;
}

static inline phys_addr_t ptf_leaf_pa(const struct gpt_table *t, u64 pte,
				      unsigned int lvl, u64 size)
{
	return pte & ARMV8_OA & ~(size - 1);
}

static inline u64 ptf_leaf_attr(const struct gpt_table *t, u64 pte)
{
	return pte & ~(ARMV8_OA | ARMV8_TYPE_MASK | ARMV8_CONTIG);
}

static inline u64 ptf_mk_leaf(const struct gpt_table *t, phys_addr_t pa,
			      unsigned int lvl, unsigned int k, u64 attr)
{
	u64 pte = pa | attr | (lvl ? ARMV8_TYPE_BLOCK : ARMV8_TYPE_TABLE);

	return k ? pte | ARMV8_CONTIG : pte;
}

/* Every entry of a contiguous run carries its own output address */
static inline u64 ptf_run_step(const struct gpt_table *t, unsigned int lvl)
{
	return 1ULL << ptf_shift(t, lvl);
}

static inline int ptf_prot(const struct gpt_table *t, int prot, u64 *attr)
{
	bool w = prot & IOMMU_WRITE;
	u64 pte;

	if (!(prot & (IOMMU_READ | IOMMU_WRITE)))
		return -EINVAL;
	if (t->fmtd.arm.stage == 1) {
		pte = ARMV8_NG;
		if (!w)
			pte |= ARMV8_AP_RDONLY;
		else if (t->fmtd.arm.dbm)
			pte |= ARMV8_DBM;
		if (!(prot & IOMMU_PRIV))
			pte |= ARMV8_AP_UNPRIV;
		if (prot & IOMMU_MMIO)
			pte |= FIELD_PREP(ARMV8_ATTRINDX, ARMV8_MAIR_IDX_DEV);
		else if (prot & IOMMU_CACHE)
			pte |= FIELD_PREP(ARMV8_ATTRINDX, ARMV8_MAIR_IDX_CACHE);
	} else {
		pte = 0;
		if (prot & IOMMU_READ)
			pte |= ARMV8_S2AP_R;
		if (w)
			pte |= ARMV8_S2AP_W;
		if (w && t->fmtd.arm.dbm)
			pte |= ARMV8_DBM;
		if (prot & IOMMU_MMIO)
			pte |= FIELD_PREP(ARMV8_S2_MEMATTR, ARMV8_S2_MEMATTR_DEV);
		else if (prot & IOMMU_CACHE)
			pte |= FIELD_PREP(ARMV8_S2_MEMATTR, ARMV8_S2_MEMATTR_WB);
		else
			pte |= FIELD_PREP(ARMV8_S2_MEMATTR, ARMV8_S2_MEMATTR_NC);
	}
	pte |= FIELD_PREP(ARMV8_SH, prot & IOMMU_CACHE ? ARMV8_SH_IS :
							 ARMV8_SH_OS);
	if (prot & IOMMU_NOEXEC)
		pte |= ARMV8_XN;
	*attr = pte | ARMV8_AF;
	return 0;
}

static inline int ptf_leaf_prot(const struct gpt_table *t, u64 pte)
{
	int prot = 0;

	if (t->fmtd.arm.stage == 1) {
		u64 idx = FIELD_GET(ARMV8_ATTRINDX, pte);

		/*
		 * With dirty tracking on, a clean DBM page is writable (DBM
		 * means nothing otherwise); write-only reads back RW
		 */
		prot = IOMMU_READ;
		if (!(pte & ARMV8_AP_RDONLY) ||
		    ((pte & ARMV8_DBM) && t->fmtd.arm.dbm))
			prot |= IOMMU_WRITE;
		if (!(pte & ARMV8_AP_UNPRIV))
			prot |= IOMMU_PRIV;
		if (idx == ARMV8_MAIR_IDX_DEV)
			prot |= IOMMU_MMIO;
		else if (idx == ARMV8_MAIR_IDX_CACHE)
			prot |= IOMMU_CACHE;
	} else {
		u64 attr = FIELD_GET(ARMV8_S2_MEMATTR, pte);

		if (pte & ARMV8_S2AP_R)
			prot |= IOMMU_READ;
		if ((pte & ARMV8_S2AP_W) ||
		    ((pte & ARMV8_DBM) && t->fmtd.arm.dbm))
			prot |= IOMMU_WRITE;
		if (attr == ARMV8_S2_MEMATTR_DEV)
			prot |= IOMMU_MMIO;
		else if (attr == ARMV8_S2_MEMATTR_WB)
			prot |= IOMMU_CACHE;
	}
	if ((pte & ARMV8_XN) == ARMV8_XN)
		prot |= IOMMU_NOEXEC;
	return prot;
}

static inline unsigned int ptf_sw_shift(const struct gpt_table *t)
{
	return ARMV8_SW_SHIFT;
}

static inline bool ptf_dirty_ok(const struct gpt_table *t)
{
	return t->fmtd.arm.dbm;
}

/*
 * With DBM the SMMU makes a clean writable page writable on the first
 * write: stage 1 clears AP[2] (read-only), stage 2 sets S2AP[1] (write).
 */
static inline bool ptf_dirty(const struct gpt_table *t, u64 pte)
{
	if (t->fmtd.arm.stage == 1)
		return (pte & (ARMV8_DBM | ARMV8_AP_RDONLY)) == ARMV8_DBM;
	return (pte & (ARMV8_DBM | ARMV8_S2AP_W)) ==
	       (ARMV8_DBM | ARMV8_S2AP_W);
}

static inline u64 ptf_clean(const struct gpt_table *t, u64 pte)
{
	if (t->fmtd.arm.stage == 1)
		return pte | ARMV8_AP_RDONLY;
	return pte & ~ARMV8_S2AP_W;
}

/*
 * For foreign tables (pt_foreign.h): output address bits 50:48 are RES0
 * with 48-bit addresses, and a last-level entry must be a page (type 3).
 */
static inline u64 ptf_rsvd(const struct gpt_table *t, u64 pte,
			   unsigned int lvl)
{
	u64 rsvd = ARMV8_RES0_OA;

	if (!lvl && (pte & ARMV8_TYPE_MASK) != ARMV8_TYPE_TABLE)
		rsvd |= ARMV8_VALID;
	return rsvd;
}

/* APTable[1] takes write permission away below the table entry */
static inline int ptf_table_prot(const struct gpt_table *t, u64 pte)
{
	return pte & ARMV8_APTABLE_RO ? IOMMU_READ : IOMMU_READ | IOMMU_WRITE;
}

#include "pt_core.h"

int PTN(setup)(struct gpt_table *t, unsigned int top_lvl, gfp_t gfp)
{
	return PTN(init_common)(t, top_lvl, gfp);
}
