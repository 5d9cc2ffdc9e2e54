/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The MAP requests a virtio-iommu device holds for one domain, kept in a
 * generic_pt page table.
 *
 * MAP/UNMAP mode must know them: the device refuses an UNMAP that would
 * split a MAP, and forgets every MAP of a domain whose last endpoint left,
 * so the driver sends them again. The table holds the pages, and its
 * software bits the requests: gpt_map() with GPT_PROT_MARK marks the first
 * and last page of each MAP, GPT_SW_USER the first page of a MAP the device
 * refused. The table allocates only when a MAP needs a new table page,
 * which in a busy DMA domain is almost never, and its lookups take no lock.
 *
 * Kept apart from the driver so that KUnit can check it on any
 * architecture. The locking is the table's: none. Calls on disjoint ranges
 * may run at once, as the DMA API makes them, and look at nothing outside
 * their range; viommu_maps_replay() walks the table from an address on and
 * needs that nothing maps or unmaps meanwhile (the driver's replay lock).
 */
#ifndef _DRIVERS_IOMMU_VIRTIO_IOMMU_MAPS_H
#define _DRIVERS_IOMMU_VIRTIO_IOMMU_MAPS_H

#include <linux/atomic.h>
#include <linux/generic_pt/gpt.h>
#include <linux/generic_pt/marks.h>
#include <linux/minmax.h>
#include <linux/numa.h>
#include <linux/sizes.h>

/* What the table translates, and so all a domain's aperture may cover */
#define VIOMMU_TABLE_BITS	48
#define VIOMMU_TABLE_LAST	(BIT_ULL(VIOMMU_TABLE_BITS) - 1)

/**
 * struct viommu_maps - the MAP requests of one domain
 * @table: their pages, in the ARMv8 stage 2 format with a 4K granule. No
 *         device walks it, so any format would do; this one has software
 *         bits and tells read-only from write-only.
 * @failed: MAPs the device refused that are still in @table
 * @failed_err: errno of the last refusal
 */
struct viommu_maps {
	struct gpt_table	table;
	atomic_t		failed;
	int			failed_err;
};

/**
 * typedef viommu_map_fn - called by viommu_maps_replay() for each MAP
 * @start: first address of the MAP
 * @last: last address of the MAP
 * @pa: output address of @start
 * @prot: IOMMU_READ, IOMMU_WRITE and IOMMU_MMIO as mapped
 * @arg: the caller's argument
 *
 * Return: 0 to go on, anything else to stop the replay and return it.
 */
typedef int (*viommu_map_fn)(u64 start, u64 last, phys_addr_t pa, int prot,
			     void *arg);

static inline int viommu_maps_init(struct viommu_maps *m, gfp_t gfp)
{
	static const struct gpt_armv8_cfg cfg = {
		.granule = SZ_4K,
		.stage = 2,
		.ias = VIOMMU_TABLE_BITS,
		.oas = VIOMMU_TABLE_BITS,
		.nid = NUMA_NO_NODE,
	};

	atomic_set(&m->failed, 0);
	m->failed_err = 0;
	return gpt_armv8_init(&m->table, &cfg, gfp);
}

static inline void viommu_maps_destroy(struct viommu_maps *m)
{
	gpt_deinit(&m->table);
}

/*
 * Unmap from the table only. The device never walks it, so the table pages
 * an unmap empties can go at once, without waiting for the UNMAP: no other
 * call looks inside a range its owner is unmapping, and the replay, which
 * looks everywhere, is kept out by the driver.
 */
static inline u64 viommu_maps_clear(struct viommu_maps *m, u64 start, u64 len)
{
	struct iommu_iotlb_gather gather;
	u64 removed;

	iommu_iotlb_gather_init(&gather);
	removed = gpt_unmap(&m->table, start, len, &gather);
	gpt_free_gathered(&gather);
	return removed;
}

/**
 * viommu_maps_add() - record a MAP
 * @m: the domain's MAPs
 * @start: first address, 4K aligned
 * @last: last address, 4K aligned minus one
 * @pa: output address of @start, 4K aligned
 * @prot: IOMMU_READ and/or IOMMU_WRITE, IOMMU_MMIO
 * @gfp: for new table pages
 *
 * Return: 0; -EEXIST when part of the range is mapped (nothing of it is
 * kept); -ERANGE above VIOMMU_TABLE_LAST; -EINVAL; -ENOMEM.
 */
static inline int viommu_maps_add(struct viommu_maps *m, u64 start, u64 last,
				  phys_addr_t pa, int prot, gfp_t gfp)
{
	size_t mapped = 0;
	int ret;

	if (last < start || last > VIOMMU_TABLE_LAST)
		return -ERANGE;
	ret = gpt_map(&m->table, start, pa, last - start + 1,
		      prot | GPT_PROT_MARK, gfp, &mapped);
	if (!ret)
		return 0;
	/* Pages mapped before the error must not outlive it */
	if (mapped)
		viommu_maps_clear(m, start, mapped);
	return ret == -EADDRINUSE ? -EEXIST : ret;
}

static inline int viommu_maps_forget_failed(const struct gpt_leaf *leaf,
					    void *arg)
{
	if (leaf->sw & GPT_SW_USER)
		atomic_dec(arg);
	return 0;
}

/**
 * viommu_maps_extent() - the range an UNMAP of [@start, @last] must cover
 * @m: the domain's MAPs
 * @start: first address
 * @last: last address
 * @end: set to the last address of the range, @last widened to the end of
 *       the MAP that holds it
 *
 * A MAP that begins before @start cannot be split, the start of a large
 * page inside a MAP included: the device would refuse the UNMAP. One that
 * ends after @last is covered whole, as the device would remove it. When
 * @last ends a MAP, as it does for the DMA API, finding the end costs one
 * lookup.
 *
 * The lookups stay inside [@start, @last] and the MAP that holds @last,
 * which belong to the caller: tables of other ranges may be changed and
 * freed by other CPUs meanwhile.
 *
 * Return: true with *@end set; false when nothing is mapped in the range
 * or it starts inside a MAP.
 */
static inline bool viommu_maps_extent(struct viommu_maps *m, u64 start,
				      u64 last, u64 *end)
{
	u64 to = min(last, VIOMMU_TABLE_LAST);
	struct gpt_leaf page;

	if (start > to)
		return false;
	if (gpt_marks_page(&m->table, start, &page)) {
		if (!(page.sw & GPT_SW_FIRST) || page.iova != start)
			return false;
		/* A MAP of one page, the DMA API's commonest: no second lookup */
		if ((page.sw & GPT_SW_LAST) && page.iova + page.size - 1 >= to) {
			*end = page.iova + page.size - 1;
			return true;
		}
	} else if (!gpt_marks_any(&m->table, start, to)) {
		return false;
	}
	/*
	 * Widen to the end of the MAP that holds @to. A hole there widens
	 * nothing; a walk onwards from a hole would enter other ranges.
	 */
	if (gpt_marks_page(&m->table, to, &page))
		to = gpt_marks_end(&m->table, &page, VIOMMU_TABLE_LAST);
	*end = to;
	return true;
}

/**
 * viommu_maps_remove() - remove what viommu_maps_extent() found
 * @m: the domain's MAPs
 * @start: first address
 * @end: the last address viommu_maps_extent() gave
 *
 * Return: the bytes removed, @end - @start + 1 (holes included).
 */
static inline u64 viommu_maps_remove(struct viommu_maps *m, u64 start, u64 end)
{
	if (atomic_read(&m->failed))
		gpt_walk(&m->table, start, end - start + 1,
			 viommu_maps_forget_failed, &m->failed);
	return viommu_maps_clear(m, start, end - start + 1);
}

/**
 * viommu_maps_del() - remove the MAPs inside a range
 * @m: the domain's MAPs
 * @start: first address
 * @last: last address
 *
 * viommu_maps_extent() and viommu_maps_remove() in one: the range is
 * widened to whole MAPs, nothing is removed when it starts inside one.
 *
 * Return: the bytes removed from @start on, holes between MAPs included
 * (the UNMAP to send covers them), at least @last - @start + 1; 0 when
 * nothing was mapped there or the range starts inside a MAP.
 */
static inline u64 viommu_maps_del(struct viommu_maps *m, u64 start, u64 last)
{
	u64 end;

	if (!viommu_maps_extent(m, start, last, &end))
		return 0;
	return viommu_maps_remove(m, start, end);
}

/**
 * viommu_maps_refused() - the device refused the MAP that starts at @start
 * @m: the domain's MAPs
 * @start: first address of the MAP
 * @err: the errno its status gave
 *
 * Any context: called where completions are collected.
 */
static inline void viommu_maps_refused(struct viommu_maps *m, u64 start,
				       int err)
{
	int old;

	WRITE_ONCE(m->failed_err, err);
	old = gpt_set_sw(&m->table, start, GPT_SW_USER, 0);
	if (old >= 0 && !(old & GPT_SW_USER))
		atomic_inc(&m->failed);
}

/**
 * viommu_maps_resent() - a MAP the device refused goes to it again
 * @m: the domain's MAPs
 * @start: first address of the MAP
 *
 * Forgets the refusal: if the device refuses it again, the answer marks it
 * again. Any context.
 */
static inline void viommu_maps_resent(struct viommu_maps *m, u64 start)
{
	int old;

	if (!atomic_read(&m->failed))
		return;
	old = gpt_set_sw(&m->table, start, 0, GPT_SW_USER);
	if (old >= 0 && (old & GPT_SW_USER))
		atomic_dec(&m->failed);
}

static inline int viommu_maps_find_failed(const struct gpt_leaf *leaf,
					  void *arg)
{
	return leaf->sw & GPT_SW_USER ? 1 : 0;
}

/**
 * viommu_maps_error() - whether a MAP the device refused overlaps a range
 * @m: the domain's MAPs
 * @start: first address
 * @last: last address
 *
 * A domain without refusals answers without a lookup.
 *
 * Return: 0, or the errno of the last refusal.
 */
static inline int viommu_maps_error(struct viommu_maps *m, u64 start, u64 last)
{
	if (!atomic_read(&m->failed) || start > VIOMMU_TABLE_LAST)
		return 0;
	last = min(last, VIOMMU_TABLE_LAST);
	if (gpt_walk(&m->table, start, last - start + 1,
		     viommu_maps_find_failed, NULL) != 1)
		return 0;
	return READ_ONCE(m->failed_err) ?: -EIO;
}

struct viommu_maps_replay {
	viommu_map_fn fn;
	void *arg;
	u64 from;
	u64 start;
	phys_addr_t pa;
	int prot;
	bool open;
	bool refused;		/* the MAP under way was refused */
	bool refused_only;	/* leave the others out */
};

/* Rebuild each MAP from its first and last pages */
static inline int viommu_maps_replay_page(const struct gpt_leaf *leaf,
					  void *arg)
{
	struct viommu_maps_replay *r = arg;

	if (leaf->sw & GPT_SW_FIRST) {
		r->start = leaf->iova;
		r->pa = leaf->pa;
		r->prot = leaf->prot;
		r->open = true;
		r->refused = leaf->sw & GPT_SW_USER;
	}
	if (!r->open || !(leaf->sw & GPT_SW_LAST))
		return 0;
	r->open = false;
	/* A MAP the walk entered in its middle began before @from */
	if (r->start < r->from || (r->refused_only && !r->refused))
		return 0;
	return r->fn(r->start, leaf->iova + leaf->size - 1, r->pa, r->prot,
		     r->arg);
}

/* The walk of both replays: every page from @r->from on */
static inline int viommu_maps_walk(struct viommu_maps *m,
				   struct viommu_maps_replay *r)
{
	if (r->from > VIOMMU_TABLE_LAST)
		return 0;
	return gpt_walk(&m->table, r->from, VIOMMU_TABLE_LAST + 1 - r->from,
			viommu_maps_replay_page, r);
}

/**
 * viommu_maps_replay() - call @fn for each MAP from @from on, in address order
 * @m: the domain's MAPs
 * @from: where to start: MAPs that begin below it are left out, also one
 *        that runs across it
 * @fn: called with each MAP as it was recorded
 * @arg: passed to @fn
 *
 * Return: 0, or what @fn returned when it stopped the replay.
 */
static inline int viommu_maps_replay(struct viommu_maps *m, u64 from,
				     viommu_map_fn fn, void *arg)
{
	struct viommu_maps_replay r = { .fn = fn, .arg = arg, .from = from };

	return viommu_maps_walk(m, &r);
}

/**
 * viommu_maps_replay_refused() - viommu_maps_replay() of the refused MAPs
 * @m: the domain's MAPs
 * @from: where to start, as for viommu_maps_replay()
 * @fn: called with each MAP the device refused, as it was recorded
 * @arg: passed to @fn
 *
 * Walks every page from @from on all the same: meant for the rare domain
 * that has refusals (@m->failed).
 *
 * Return: 0, or what @fn returned when it stopped the walk.
 */
static inline int viommu_maps_replay_refused(struct viommu_maps *m, u64 from,
					     viommu_map_fn fn, void *arg)
{
	struct viommu_maps_replay r = {
		.fn = fn, .arg = arg, .from = from, .refused_only = true,
	};

	if (!atomic_read(&m->failed))
		return 0;
	return viommu_maps_walk(m, &r);
}

#endif /* _DRIVERS_IOMMU_VIRTIO_IOMMU_MAPS_H */
