/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * ARMv8 VMSA long descriptor bits (Arm ARM D8.3) and what every granule
 * instance of the format shares.
 */
#ifndef __GENERIC_PT_FMT_ARMV8_DEFS_H
#define __GENERIC_PT_FMT_ARMV8_DEFS_H

#include <linux/bits.h>
#include <linux/generic_pt/gpt.h>

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
#define ARMV8_SW_SHIFT		55	/* bits 58:55 are for software */
#define ARMV8_RES0_OA		GENMASK_ULL(50, 48)	/* 48-bit output */
#define ARMV8_APTABLE_RO	BIT_ULL(62)	/* table entries only */

/* MAIR indexes io-pgtable-arm programs: normal NC, normal WB, device */
#define ARMV8_MAIR_IDX_CACHE	1ULL
#define ARMV8_MAIR_IDX_DEV	2ULL
/* Stage 2 MemAttr[3:0] */
#define ARMV8_S2_MEMATTR_DEV	0x1ULL
#define ARMV8_S2_MEMATTR_NC	0x5ULL
#define ARMV8_S2_MEMATTR_WB	0xfULL

#define ARMV8_MAX_CONCAT	16

/* log2 of the number of entries of a contiguous run at @lvl */
static inline unsigned int armv8_contig_log2_of(unsigned int gshift,
						unsigned int lvl)
{
	switch (gshift) {
	case 14:
		return lvl ? 5 : 7;
	case 16:
		return 5;
	default:
		return 4;
	}
}

int armv8_describe(struct gpt_table *t, const struct gpt_armv8_cfg *cfg);

/* Finish gpt_armv8_init() with the algorithms of one granule */
int armv8_4k_setup(struct gpt_table *t, unsigned int top_lvl, gfp_t gfp);
int armv8_16k_setup(struct gpt_table *t, unsigned int top_lvl, gfp_t gfp);
int armv8_64k_setup(struct gpt_table *t, unsigned int top_lvl, gfp_t gfp);

#endif /* __GENERIC_PT_FMT_ARMV8_DEFS_H */
