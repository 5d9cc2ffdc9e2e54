/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Lookups in a page table the library did not build and cannot trust.
 *
 * An emulated IOMMU that shares its guest's page table (virtio-iommu's
 * ATTACH_TABLE, served by vhost-iommu) translates by walking a table that
 * lives in guest memory, written by the guest, in one of the formats the
 * library builds.  The walk below reads each entry through the caller's
 * callback (the guest-physical address of the entry: the caller turns it
 * into its own access, copy_from_user() of the VMM's mapping for vhost),
 * and decodes it with the format's own accessors, the ones that build the
 * library's tables.  Nothing read is trusted: the walk reads at most one
 * entry per level of the description, so a table pointing back at itself
 * costs that many reads and no more, and an entry with a reserved bit set,
 * a table or page address beyond the output address size, or a leaf where
 * the format has none, ends the walk with -EBADMSG.  Where entries point
 * is for the callback to check: it must refuse (-EFAULT) an address that
 * is not memory it may read.
 */
#ifndef __LINUX_GENERIC_PT_FOREIGN_H
#define __LINUX_GENERIC_PT_FOREIGN_H

#include <linux/generic_pt/gpt.h>

/**
 * typedef gpt_foreign_read_fn - read one entry of a foreign table
 * @arg: the caller's argument to gpt_foreign_lookup()
 * @addr: address of the entry, in the table's own address space (what the
 *        entries hold: guest-physical for a guest's table), 8-byte aligned
 * @pte: receives the entry as it sits in memory (little-endian)
 *
 * May sleep if the caller of gpt_foreign_lookup() may.
 *
 * Return: 0, or a negative errno that gpt_foreign_lookup() returns.
 */
typedef int (*gpt_foreign_read_fn)(void *arg, u64 addr, __le64 *pte);

/**
 * struct gpt_foreign_cfg - what a foreign table is
 * @fmt: enum gpt_format; ARMv8 means stage 1
 * @granule_shift: log2 of the granule: 12, 14 or 16 for ARMv8, else 12
 * @ias: input address bits; with the granule it fixes the levels
 * @oas: output address bits: no entry may point at or above 2^@oas
 *
 * Levels: ARMv8 as the architecture derives them from the input size and
 * the granule; VT-d second stage 3, 4 or 5 for @ias 39, 48 or 57; AMD v1
 * the fewest of 9 bits each above the 4K page that cover @ias (1 to 6),
 * the top level fixed (the table does not grow, no level is skipped).
 */
struct gpt_foreign_cfg {
	unsigned int fmt;
	unsigned int granule_shift;
	unsigned int ias;
	unsigned int oas;
};

/**
 * struct gpt_foreign - a description of a foreign table
 * @t: the format's constants, as for one of the library's own tables; it
 *     owns no table (no top, no ops)
 * @root: address of the top-level table, aligned to its size
 * @levels: levels a walk reads at most
 * @lookup: the format's walk, see gpt_foreign_lookup()
 *
 * Read-only once gpt_foreign_init() filled it: lookups may run
 * concurrently.
 */
struct gpt_foreign {
	struct gpt_table t;
	u64 root;
	unsigned int levels;
	int (*lookup)(const struct gpt_table *t, u64 root, u64 iova,
		      gpt_foreign_read_fn read, void *arg,
		      struct gpt_leaf *leaf);
};

int gpt_foreign_init(struct gpt_foreign *f, const struct gpt_foreign_cfg *cfg,
		     u64 root);

/**
 * gpt_foreign_lookup() - translate one address through a foreign table
 * @f: the table's description
 * @iova: input address
 * @read: reads one entry, see gpt_foreign_read_fn
 * @arg: passed to @read
 * @leaf: filled on success: @leaf->iova and @leaf->size the page holding
 *        @iova, @leaf->pa its first output address, @leaf->prot
 *        IOMMU_READ and IOMMU_WRITE as every level along the walk allows
 *        them (table entries of VT-d and AMD v1 carry permissions, ARMv8's
 *        APTable[1] takes write away); @leaf->sw 0
 *
 * Return: 0; -ERANGE when @iova is beyond the input size; -ENOENT when an
 * entry on the way is not valid (then @leaf->iova and @leaf->size, and only
 * they, are the range that entry covers: none of it translates);
 * -EBADMSG for an entry the format does not allow there (reserved bits
 * set, an address at or above 2^oas, a block where the granule has none,
 * a large page not aligned to its size, an AMD v1 table entry whose next
 * level is not the level below); or what @read returned.
 */
static inline int gpt_foreign_lookup(const struct gpt_foreign *f, u64 iova,
				     gpt_foreign_read_fn read, void *arg,
				     struct gpt_leaf *leaf)
{
	return f->lookup(&f->t, f->root, iova, read, arg, leaf);
}

#endif /* __LINUX_GENERIC_PT_FOREIGN_H */
