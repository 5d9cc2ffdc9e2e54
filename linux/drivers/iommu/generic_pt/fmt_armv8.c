// SPDX-License-Identifier: GPL-2.0-only
/*
 * ARMv8 VMSA long descriptor format (Arm ARM D8.3), stage 1 and stage 2,
 * 4K, 16K and 64K granules, 48-bit input and output addresses: setup.
 * The algorithms are compiled once per granule (fmt_armv8_*.c).
 */
#include <linux/export.h>
#include <linux/sizes.h>

#include "fmt_armv8_defs.h"

/* Blocks: 4K granule at 2M and 1G, 16K at 32M, 64K at 512M */
static void armv8_set_runs(struct gpt_table *t)
{
	unsigned int max_leaf = t->fmtd.arm.granule_shift == 12 ? 2 : 1;
	unsigned int lvl;

	for (lvl = 0; lvl <= max_leaf; lvl++) {
		t->fmtd.arm.runs[lvl] = 1;
		if (t->fmtd.arm.contig)
			t->fmtd.arm.runs[lvl] |=
				1U << armv8_contig_log2_of(t->fmtd.arm.granule_shift,
							   lvl);
	}
}

/**
 * armv8_describe() - fill in the constants of an ARMv8 table
 * @t: the table, cleared first
 * @cfg: granule, stage, address sizes and options
 *
 * Everything but the top table and the algorithms: gpt_armv8_init() adds
 * those, a foreign table (gpt_foreign.c) needs neither.
 *
 * Return: the top level, or -EINVAL for an unsupported configuration.
 */
int armv8_describe(struct gpt_table *t, const struct gpt_armv8_cfg *cfg)
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
	armv8_set_runs(t);
	return levels - 1;
}

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
	int top = armv8_describe(t, cfg);

	if (top < 0)
		return top;
	switch (t->fmtd.arm.granule_shift) {
	case 12:
		return armv8_4k_setup(t, top, gfp);
	case 14:
		return armv8_16k_setup(t, top, gfp);
	default:
		return armv8_64k_setup(t, top, gfp);
	}
}
EXPORT_SYMBOL_GPL(gpt_armv8_init);
