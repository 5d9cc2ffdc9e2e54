// SPDX-License-Identifier: GPL-2.0-only
/*
 * ARMv8 VMSA long descriptor format (Arm ARM D8.3), stage 1 and stage 2,
 * 4K, 16K and 64K granules, 48-bit input and output addresses.
 *
 * Leaf attributes follow what io-pgtable-arm writes for the same iommu prot
 * flags, so tables built here are interchangeable with its tables; the
 * contiguous hint (bit 52), which io-pgtable-arm never sets, is optional.
 */
#include <linux/export.h>
#include <linux/sizes.h>

#include "gpt_priv.h"

#define ARMV8_VALID		BIT_ULL(0)
#define ARMV8_TYPE_MASK		GENMASK_ULL(1, 0)
#define ARMV8_TYPE_TABLE	3ULL	/* also "page" at the last level */
#define ARMV8_TYPE_BLOCK	1ULL
#define ARMV8_ATTRINDX		GENMASK_ULL(4, 2)
#define ARMV8_S2_MEMATTR	GENMASK_ULL(5, 2)
#define ARMV8_AP_UNPRIV		BIT_ULL(6)
#define ARMV8_AP_RDONLY		BIT_ULL(7)
#define ARMV8_S2AP_R		BIT_ULL(6)
#define ARMV8_S2AP_W		BIT_ULL(7)
#define ARMV8_SH		GENMASK_ULL(9, 8)
#define ARMV8_SH_OS		2ULL
#define ARMV8_SH_IS		3ULL
#define ARMV8_AF		BIT_ULL(10)
#define ARMV8_NG		BIT_ULL(11)
#define ARMV8_OA		GENMASK_ULL(47, 12)
#define ARMV8_DBM		BIT_ULL(51)
#define ARMV8_CONTIG		BIT_ULL(52)
#define ARMV8_XN		GENMASK_ULL(54, 53)	/* UXN|PXN, S2 XN[1:0] */

/* MAIR indexes io-pgtable-arm programs: normal NC, normal WB, device */
#define ARMV8_MAIR_IDX_CACHE	1ULL
#define ARMV8_MAIR_IDX_DEV	2ULL
/* Stage 2 MemAttr[3:0] */
#define ARMV8_S2_MEMATTR_DEV	0x1ULL
#define ARMV8_S2_MEMATTR_NC	0x5ULL
#define ARMV8_S2_MEMATTR_WB	0xfULL

#define ARMV8_MAX_CONCAT	16

static inline unsigned int ptf_shift(const struct gpt_table *t,
				     unsigned int lvl)
{
	return t->fmtd.arm.granule_shift + lvl * t->fmtd.arm.bits;
}

static inline unsigned int ptf_bits(const struct gpt_table *t,
				    unsigned int lvl, bool top)
{
	return top && lvl == t->max_level ? t->fmtd.arm.top_bits :
					    t->fmtd.arm.bits;
}

static inline unsigned int ptf_order(const struct gpt_table *t,
				     unsigned int lvl, bool top)
{
	unsigned int bytes_log2 = ptf_bits(t, lvl, top) + 3;

	return bytes_log2 > PAGE_SHIFT ? bytes_log2 - PAGE_SHIFT : 0;
}

/* log2 of the number of entries of a contiguous run at @lvl */
static inline unsigned int armv8_contig_log2(const struct gpt_table *t,
					     unsigned int lvl)
{
	switch (t->fmtd.arm.granule_shift) {
	case 14:
		return lvl ? 5 : 7;
	case 16:
		return 5;
	default:
		return 4;
	}
}

static inline unsigned int ptf_runs(const struct gpt_table *t,
				    unsigned int lvl)
{
	/* Blocks: 4K granule at 2M and 1G, 16K at 32M, 64K at 512M */
	unsigned int max_leaf = t->fmtd.arm.granule_shift == 12 ? 2 : 1;
	unsigned int runs;

	if (lvl > max_leaf)
		return 0;
	runs = 1;
	if (t->fmtd.arm.contig)
		runs |= 1U << armv8_contig_log2(t, lvl);
	return runs;
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
	return GENMASK_ULL(47, t->fmtd.arm.granule_shift);
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

#define PTF_PREFIX armv8
#include "pt_core.h"

/**
 * gpt_armv8_init() - initialise an ARMv8 long descriptor table
 * @t: the table to initialise
 * @cfg: granule, stage, address sizes and options
 * @gfp: allocation flags for the top table
 *
 * Any context that may allocate with @gfp; no locking, @t is not yet shared.
 *
 * Return: 0, -EINVAL for an unsupported configuration, -ENOMEM.
 */
int gpt_armv8_init(struct gpt_table *t, const struct gpt_armv8_cfg *cfg,
		   gfp_t gfp)
{
	unsigned int gshift, bits, va_bits, levels, top_bits;

	switch (cfg->granule) {
	case SZ_4K:
		gshift = 12;
		break;
	case SZ_16K:
		gshift = 14;
		break;
	case SZ_64K:
		gshift = 16;
		break;
	default:
		return -EINVAL;
	}
	if ((cfg->stage != 1 && cfg->stage != 2) || cfg->ias > 48 ||
	    cfg->ias <= gshift || cfg->oas > 48 || cfg->oas < 32 ||
	    (cfg->flags & ~(GPT_ARMV8_CONTIG | GPT_ARMV8_DBM)))
		return -EINVAL;

	bits = gshift - 3;
	va_bits = cfg->ias - gshift;
	levels = DIV_ROUND_UP(va_bits, bits);
	top_bits = va_bits - bits * (levels - 1);
	/*
	 * Stage 2 may start one level lower with up to 16 concatenated
	 * tables at the top instead of a tiny level-0 table.
	 */
	if (cfg->stage == 2 && levels == 4 &&
	    (1U << top_bits) <= ARMV8_MAX_CONCAT) {
		levels--;
		top_bits += bits;
	}

	memset(t, 0, sizeof(*t));
	t->fmt = GPT_FMT_ARMV8;
	t->oas = cfg->oas;
	t->nid = cfg->nid;
	t->max_level = levels - 1;
	t->fmtd.arm.granule_shift = gshift;
	t->fmtd.arm.bits = bits;
	t->fmtd.arm.top_bits = top_bits;
	t->fmtd.arm.stage = cfg->stage;
	t->fmtd.arm.contig = !!(cfg->flags & GPT_ARMV8_CONTIG);
	t->fmtd.arm.dbm = !!(cfg->flags & GPT_ARMV8_DBM);
	return armv8_init_common(t, levels - 1, gfp);
}
EXPORT_SYMBOL_GPL(gpt_armv8_init);
