// SPDX-License-Identifier: GPL-2.0-only
/*
 * Generic IOMMU page table library: descriptions of foreign tables (see
 * <linux/generic_pt/foreign.h>).  The walks themselves are the format
 * instances' (pt_foreign.h); this picks one and checks the description.
 */
#include <linux/export.h>
#include <linux/sizes.h>

#include "fmt_armv8_defs.h"
#include "pt_foreign.h"

static int gpt_foreign_armv8(struct gpt_foreign *f,
			     const struct gpt_foreign_cfg *cfg)
{
	/* Stage 1; the walker honours the contiguous hint, tracks no dirt */
	struct gpt_armv8_cfg acfg = {
		.granule = 1U << cfg->granule_shift, .stage = 1,
		.ias = cfg->ias, .oas = cfg->oas, .flags = GPT_ARMV8_CONTIG,
	};
	int top;

	if (!IS_ENABLED(CONFIG_IOMMU_PT_ARMV8))
		return -EOPNOTSUPP;
	top = armv8_describe(&f->t, &acfg);
	if (top < 0)
		return -ERANGE;
	switch (cfg->granule_shift) {
	case 12:
		f->lookup = armv8_4k_foreign_lookup;
		break;
	case 14:
		f->lookup = armv8_16k_foreign_lookup;
		break;
	default:
		f->lookup = armv8_64k_foreign_lookup;
		break;
	}
	return top;
}

static int gpt_foreign_vtdss(struct gpt_foreign *f,
			     const struct gpt_foreign_cfg *cfg)
{
	if (!IS_ENABLED(CONFIG_IOMMU_PT_VTDSS))
		return -EOPNOTSUPP;
	if (cfg->granule_shift != 12 || cfg->oas > 52 ||
	    (cfg->ias != 39 && cfg->ias != 48 && cfg->ias != 57))
		return -ERANGE;
	f->t.fmt = GPT_FMT_VTDSS;
	f->lookup = vtdss_foreign_lookup;
	return (cfg->ias - 12) / 9 - 1;
}

static int gpt_foreign_amdv1(struct gpt_foreign *f,
			     const struct gpt_foreign_cfg *cfg)
{
	if (!IS_ENABLED(CONFIG_IOMMU_PT_AMDV1))
		return -EOPNOTSUPP;
	if (cfg->granule_shift != 12 || cfg->oas > 52 || cfg->ias <= 12 ||
	    cfg->ias > 64)
		return -ERANGE;
	f->t.fmt = GPT_FMT_AMDV1;
	f->lookup = amdv1_foreign_lookup;
	return DIV_ROUND_UP(cfg->ias - 12, 9) - 1;
}

/**
 * gpt_foreign_init() - describe a foreign table
 * @f: filled in
 * @cfg: the format and its sizes
 * @root: address of the top-level table
 *
 * Return: 0; -EOPNOTSUPP for a format the kernel was built without or
 * does not know; -ERANGE for sizes the format does not allow, an @oas
 * beyond what it holds, or a @root not aligned to the size of the top
 * table (at least the granule) or at or above 2^@oas.
 */
int gpt_foreign_init(struct gpt_foreign *f, const struct gpt_foreign_cfg *cfg,
		     u64 root)
{
	unsigned int top_bytes_log2;
	int top;

	memset(f, 0, sizeof(*f));
	switch (cfg->fmt) {
	case GPT_FMT_ARMV8:
		top = gpt_foreign_armv8(f, cfg);
		break;
	case GPT_FMT_VTDSS:
		top = gpt_foreign_vtdss(f, cfg);
		break;
	case GPT_FMT_AMDV1:
		top = gpt_foreign_amdv1(f, cfg);
		break;
	default:
		return -EOPNOTSUPP;
	}
	if (top < 0)
		return top;
	if (cfg->oas < 32 || cfg->oas > 64)
		return -ERANGE;
	f->t.ias = cfg->ias;
	f->t.oas = cfg->oas;
	f->t.max_level = top;
	f->levels = top + 1;
	/* The top table: ARMv8's may be smaller than a granule, align anyway */
	top_bytes_log2 = cfg->fmt == GPT_FMT_ARMV8 ?
			 f->t.fmtd.arm.top_bits + 3 : 12;
	top_bytes_log2 = max(top_bytes_log2, cfg->granule_shift);
	if (root & ((1ULL << top_bytes_log2) - 1))
		return -ERANGE;
	if (cfg->oas < 64 && (root >> cfg->oas))
		return -ERANGE;
	f->root = root;
	return 0;
}
EXPORT_SYMBOL_GPL(gpt_foreign_init);
