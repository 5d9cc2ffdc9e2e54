/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Generic IOMMU page table library: the walk of a foreign table (see
 * <linux/generic_pt/foreign.h>), built from the same format accessors as
 * the library's own walks.  Included at the end of pt_core.h, so each
 * format instance gets its own; gpt_foreign.c, which picks the instance,
 * includes it for the declarations only.
 *
 * Two accessors serve only this walk, since the library never writes what
 * they reject:
 *  ptf_rsvd(t, pte, lvl)     bits of a valid entry at @lvl that must be zero
 *  ptf_table_prot(t, pte)    IOMMU_READ/IOMMU_WRITE a table entry allows
 *                            below it
 * A format whose own entries hold more than an address in their address
 * field (AMD v1: the host's encryption bit) defines a third:
 *  ptf_foreign_pa(t, pte, lvl, size)   the address as the table's owner
 *                            wrote it; ptf_leaf_pa() otherwise
 */
#ifndef __GENERIC_PT_PT_FOREIGN_DECLS
#define __GENERIC_PT_PT_FOREIGN_DECLS

#include <linux/generic_pt/foreign.h>

#define GPT_FOREIGN_DECL(prefix)					\
	int prefix##_foreign_lookup(const struct gpt_table *t, u64 root,	\
				    u64 iova, gpt_foreign_read_fn read,	\
				    void *arg, struct gpt_leaf *leaf)
GPT_FOREIGN_DECL(armv8_4k);
GPT_FOREIGN_DECL(armv8_16k);
GPT_FOREIGN_DECL(armv8_64k);
GPT_FOREIGN_DECL(amdv1);
GPT_FOREIGN_DECL(vtdss);

#endif /* __GENERIC_PT_PT_FOREIGN_DECLS */

#ifdef PTF_PREFIX

#ifndef ptf_foreign_pa
#define ptf_foreign_pa ptf_leaf_pa
#endif

/* Does [@pa, @pa + @size - 1] fit below 2^oas? */
static inline bool PTN(foreign_oas_ok)(const struct gpt_table *t, u64 pa,
				       u64 size)
{
	return t->oas >= 64 || !((pa + size - 1) >> t->oas);
}

/*
 * One read per level, from the top the description fixes down: a walk
 * can never be longer than the levels, whatever the entries say.
 */
int PTN(foreign_lookup)(const struct gpt_table *t, u64 root, u64 iova,
			gpt_foreign_read_fn read, void *arg,
			struct gpt_leaf *leaf)
{
	u64 granule = 1ULL << ptf_shift(t, 0);
	int allow = IOMMU_READ | IOMMU_WRITE;
	unsigned int lvl = t->max_level;
	u64 table = root;
	bool top = true;

	if (t->ias < 64 && (iova >> t->ias))
		return -ERANGE;
	for (;;) {
		unsigned int bits = ptf_bits(t, lvl, top);
		unsigned int k;
		u64 pte, pa, size;
		__le64 raw;
		int ret;

		ret = read(arg, table + PTN(index)(t, iova, lvl, bits) *
				sizeof(u64), &raw);
		if (ret)
			return ret;
		pte = le64_to_cpu(raw);
		if (!ptf_present(pte)) {
			/* The hole: a caller walking a range skips all of it */
			size = 1ULL << ptf_shift(t, lvl);
			leaf->iova = iova & ~(size - 1);
			leaf->size = size;
			return -ENOENT;
		}
		if (pte & ptf_rsvd(t, pte, lvl))
			return -EBADMSG;
		if (lvl && ptf_is_table(t, pte, lvl)) {
			/* A table's address sits where a granule page's does */
			table = ptf_foreign_pa(t, pte, 0, granule);
			if (!PTN(foreign_oas_ok)(t, table, granule))
				return -EBADMSG;
			allow &= ptf_table_prot(t, pte);
			lvl--;
			top = false;
			continue;
		}
		k = ptf_run_log2(t, pte, lvl);
		if (!(ptf_runs(t, lvl) & BIT(k)))
			return -EBADMSG;
		size = 1ULL << (ptf_shift(t, lvl) + k);
		pa = ptf_foreign_pa(t, pte, lvl, size);
		/* The address bits below a block's size are reserved */
		if (!k && pa != ptf_foreign_pa(t, pte, lvl, granule))
			return -EBADMSG;
		if (!PTN(foreign_oas_ok)(t, pa, size))
			return -EBADMSG;
		leaf->iova = iova & ~(size - 1);
		leaf->pa = pa;
		leaf->size = size;
		leaf->prot = ptf_leaf_prot(t, pte) &
			     (allow | ~(IOMMU_READ | IOMMU_WRITE));
		leaf->sw = 0;
		return 0;
	}
}

#endif /* PTF_PREFIX */
