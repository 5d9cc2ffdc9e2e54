// SPDX-License-Identifier: GPL-2.0-only
/*
 * Intel VT-d second-stage page table, VT-d specification "Second-Stage
 * Translation": 3, 4 or 5 levels of 9 bits, 4K pages and 2M and 1G super
 * pages (PS, bit 7), read (bit 0) and write (bit 1) permission, snoop
 * (bit 11), accessed (bit 8) and dirty (bit 9) when the IOMMU tracks them.
 */
#include <linux/export.h>

#include "gpt_priv.h"

#define VTDSS_R			BIT_ULL(0)
#define VTDSS_W			BIT_ULL(1)
#define VTDSS_PS		BIT_ULL(7)
#define VTDSS_D			BIT_ULL(9)
#define VTDSS_SNP		BIT_ULL(11)
#define VTDSS_ADDR		GENMASK_ULL(51, 12)

static inline unsigned int ptf_shift(const struct gpt_table *t,
				     unsigned int lvl)
{
	return 12 + 9 * lvl;
}

static inline unsigned int ptf_bits(const struct gpt_table *t,
				    unsigned int lvl, bool top)
{
	return 9;
}

static inline unsigned int ptf_order(const struct gpt_table *t,
				     unsigned int lvl, bool top)
{
	return 0;
}

static inline unsigned int ptf_runs(const struct gpt_table *t,
				    unsigned int lvl)
{
	if (lvl == 2 && t->fmtd.vtd.no_1g)
		return 0;
	return lvl <= 2 ? 1 : 0;
}

static inline bool ptf_present(u64 pte)
{
	return pte & (VTDSS_R | VTDSS_W);
}

static inline bool ptf_is_table(const struct gpt_table *t, u64 pte,
				unsigned int lvl)
{
	return lvl && !(pte & VTDSS_PS);
}

static inline u64 *ptf_table_va(const struct gpt_table *t, u64 pte)
{
	return phys_to_virt(pte & VTDSS_ADDR);
}

static inline u64 ptf_mk_table(const struct gpt_table *t, phys_addr_t pa,
			       unsigned int lvl)
{
	return pa | VTDSS_R | VTDSS_W;
}

static inline unsigned int ptf_run_log2(const struct gpt_table *t, u64 pte,
					unsigned int lvl)
{
	return 0;
}

static inline phys_addr_t ptf_leaf_pa(const struct gpt_table *t, u64 pte,
				      unsigned int lvl, u64 size)
{
	return pte & VTDSS_ADDR & ~(size - 1);
}

static inline u64 ptf_leaf_attr(const struct gpt_table *t, u64 pte)
{
	return pte & ~(VTDSS_ADDR | VTDSS_PS);
}

static inline u64 ptf_mk_leaf(const struct gpt_table *t, phys_addr_t pa,
			      unsigned int lvl, unsigned int k, u64 attr)
{
	return pa | attr | (lvl ? VTDSS_PS : 0);
}

static inline u64 ptf_run_step(const struct gpt_table *t, unsigned int lvl)
{
	return 1ULL << ptf_shift(t, lvl);
}

static inline int ptf_prot(const struct gpt_table *t, int prot, u64 *attr)
{
	u64 pte = 0;

	if (!(prot & (IOMMU_READ | IOMMU_WRITE)))
		return -EINVAL;
	if (prot & IOMMU_READ)
		pte |= VTDSS_R;
	if (prot & IOMMU_WRITE)
		pte |= VTDSS_W;
	if (t->fmtd.vtd.snp)
		pte |= VTDSS_SNP;
	*attr = pte;
	return 0;
}

static inline int ptf_leaf_prot(const struct gpt_table *t, u64 pte)
{
	return (pte & VTDSS_R ? IOMMU_READ : 0) |
	       (pte & VTDSS_W ? IOMMU_WRITE : 0);
}

/* No software bits: the ignored bits are left to the hardware's future */
static inline unsigned int ptf_sw_shift(const struct gpt_table *t)
{
	return 0;
}

static inline bool ptf_dirty_ok(const struct gpt_table *t)
{
	return true;
}

static inline bool ptf_dirty(const struct gpt_table *t, u64 pte)
{
	return pte & VTDSS_D;
}

static inline u64 ptf_clean(const struct gpt_table *t, u64 pte)
{
	return pte & ~VTDSS_D;
}

/* For foreign tables (pt_foreign.h): PS is reserved above the 1G level */
static inline u64 ptf_rsvd(const struct gpt_table *t, u64 pte,
			   unsigned int lvl)
{
	return lvl > 2 ? VTDSS_PS : 0;
}

/* Read and write are checked at every level */
static inline int ptf_table_prot(const struct gpt_table *t, u64 pte)
{
	return ptf_leaf_prot(t, pte);
}

#define PTF_PREFIX vtdss
#include "pt_core.h"

/**
 * gpt_vtdss_init() - initialise a VT-d second-stage table
 * @t: the table to initialise
 * @cfg: number of levels and options
 * @gfp: allocation flags for the top table
 *
 * Any context that may allocate with @gfp; no locking, @t is not yet shared.
 *
 * Return: 0, -EINVAL for an unsupported configuration, -ENOMEM.
 */
int gpt_vtdss_init(struct gpt_table *t, const struct gpt_vtdss_cfg *cfg,
		   gfp_t gfp)
{
	if (cfg->levels < 3 || cfg->levels > 5 ||
	    (cfg->flags & ~(GPT_VTDSS_NO_1G | GPT_VTDSS_SNP)))
		return -EINVAL;
	memset(t, 0, sizeof(*t));
	t->fmt = GPT_FMT_VTDSS;
	t->oas = 52;
	t->nid = cfg->nid;
	t->max_level = cfg->levels - 1;
	t->fmtd.vtd.no_1g = !!(cfg->flags & GPT_VTDSS_NO_1G);
	t->fmtd.vtd.snp = !!(cfg->flags & GPT_VTDSS_SNP);
	return vtdss_init_common(t, cfg->levels - 1, gfp);
}
EXPORT_SYMBOL_GPL(gpt_vtdss_init);
