/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Generic IOMMU page table library: helpers shared by every format instance.
 * Not for use outside drivers/iommu/generic_pt.
 */
#ifndef __GENERIC_PT_GPT_PRIV_H
#define __GENERIC_PT_GPT_PRIV_H

#include <linux/bitfield.h>
#include <linux/bitops.h>
#include <linux/generic_pt/gpt.h>
#include <linux/mm.h>

#include "../iommu-pages.h"

/* A spare table (gpt_keep_spares()), still counted in nr_tables, or NULL */
static inline u64 *gpt_take_spare(struct gpt_table *t)
{
	unsigned int i;
	u64 *table;

	for (i = 0; i < GPT_MAX_SPARES; i++) {
		table = xchg(&t->spares[i], NULL);
		if (table)
			return table;
	}
	return NULL;
}

/* Keep the empty @table as a spare: false when there is no room */
static inline bool gpt_put_spare(struct gpt_table *t, u64 *table)
{
	unsigned int i;

	for (i = 0; i < GPT_MAX_SPARES; i++)
		if (!cmpxchg(&t->spares[i], NULL, table))
			return true;
	return false;
}

/*
 * Table pages larger than PAGE_SIZE (16K/64K ARM granules on a 4K kernel)
 * are allocated compound so that put_page() from iommu_put_pages_list()
 * releases all of them.
 */
static inline u64 *gpt_alloc_table(struct gpt_table *t, unsigned int order,
				   gfp_t gfp)
{
	u64 *table;

	if (!order && t->keep_spares) {
		table = gpt_take_spare(t);
		if (table)
			return table;
	}
	if (order)
		gfp |= __GFP_COMP;
	table = iommu_alloc_pages_node(t->nid, gfp, order);
	if (table)
		atomic_long_inc(&t->nr_tables);
	return table;
}

static inline void gpt_free_table(struct gpt_table *t, u64 *table,
				  unsigned int order)
{
	atomic_long_dec(&t->nr_tables);
	iommu_free_pages(table, order);
}

/* Queue a table for release after the IOTLB flush that the caller owes. */
static inline void gpt_gather_table(struct gpt_table *t, u64 *table,
				    struct iommu_iotlb_gather *gather)
{
	atomic_long_dec(&t->nr_tables);
	list_add_tail(&virt_to_page(table)->lru, &gather->freelist);
}

/*
 * A table an unmap emptied (all zero, unlinked): a spare of a table no
 * hardware walks, or queued as gpt_gather_table() does.
 */
static inline void gpt_retire_table(struct gpt_table *t, u64 *table,
				    unsigned int order,
				    struct iommu_iotlb_gather *gather)
{
	if (!order && t->keep_spares && gpt_put_spare(t, table))
		return;
	gpt_gather_table(t, table, gather);
}

static inline void gpt_free_spares(struct gpt_table *t)
{
	u64 *table;

	while ((table = gpt_take_spare(t)))
		gpt_free_table(t, table, 0);
}

static inline u64 *gpt_top_table(unsigned long top)
{
	return (u64 *)(top & ~GPT_TOP_LEVEL_MASK);
}

static inline unsigned int gpt_top_lvl(unsigned long top)
{
	return top & GPT_TOP_LEVEL_MASK;
}

/* Walk state of one operation, shared by every format instance */
struct gpt_map_state {
	struct gpt_table *t;
	u64 iova;
	u64 left;		/* bytes still to map, minus one */
	phys_addr_t pa;
	u64 attr;
	u64 first;		/* software mark of the range's first page */
	u64 last;		/* and of its last page */
	gfp_t gfp;
	bool done;
};

struct gpt_unmap_state {
	struct gpt_table *t;
	u64 iova;
	u64 left;		/* bytes still to unmap, minus one */
	struct iommu_iotlb_gather *gather;
	bool cleared;
	bool done;		/* range finished or stopped at a large page */
	bool prune;		/* free the tables left empty (gpt_unmap_prune) */
};

/* A walk that visits leaves one by one, see PTN(visit_level) */
struct gpt_visit_state {
	struct gpt_table *t;
	u64 iova;
	u64 left;
	int (*leaf)(struct gpt_visit_state *s, u64 *ptep, unsigned int n,
		    unsigned int lvl, u64 iova, u64 size);
	int ret;
};

struct gpt_walk_state {
	struct gpt_visit_state v;
	gpt_leaf_fn fn;
	void *arg;
};

struct gpt_dirty_state {
	struct gpt_visit_state v;
	unsigned long flags;
	struct iommu_dirty_bitmap *dirty;
};

#endif /* __GENERIC_PT_GPT_PRIV_H */
