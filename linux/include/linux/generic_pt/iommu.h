/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Generic IOMMU page table library: glue for iommu_domain_ops.
 *
 * A driver whose domain structure embeds both a struct iommu_domain and a
 * struct gpt_table writes
 *
 *	static struct gpt_table *to_mydrv_pt(struct iommu_domain *d)
 *	{
 *		return &container_of(d, struct mydrv_domain, domain)->pt;
 *	}
 *	GPT_IOMMU_DEFINE_OPS(mydrv, to_mydrv_pt);
 *
 *	static const struct iommu_domain_ops mydrv_domain_ops = {
 *		GPT_IOMMU_DOMAIN_OPS(mydrv),
 *		.iotlb_sync = mydrv_iotlb_sync,
 *		...
 *	};
 *
 * and frees gather->freelist with iommu_put_pages_list() in its iotlb_sync
 * after the flush.  Locking is the library's: none taken, the iommu core's
 * rules (no concurrent calls on overlapping ranges) are enough.
 */
#ifndef __LINUX_GENERIC_PT_IOMMU_H
#define __LINUX_GENERIC_PT_IOMMU_H

#include <linux/generic_pt/gpt.h>
#include <linux/overflow.h>
#include <linux/percpu.h>

/**
 * struct gpt_iommu_counts - tables that mapped through gpt_iommu_map_pages()
 * @tables: by format (enum gpt_format), per CPU; debugfs
 *          generic_pt/iommu_tables gives their sums
 */
struct gpt_iommu_counts {
	unsigned long tables[GPT_FMT_NR];
};

DECLARE_PER_CPU(struct gpt_iommu_counts, gpt_iommu_counts);

/**
 * gpt_iommu_map_pages() - iommu_domain_ops.map_pages on a generic table
 * @t: the domain's table
 * @iova: first input address
 * @paddr: first output address
 * @pgsize: page size the iommu core chose
 * @pgcount: number of such pages
 * @prot: IOMMU_* protection flags
 * @gfp: allocation flags for new tables
 * @mapped: incremented by the bytes mapped, also on error
 *
 * Called by the iommu core (or a driver) under its rules: no concurrent call
 * on an overlapping range. Inline, so that the driver's map_pages() reaches
 * the format's code with one call, as an io_pgtable_ops user does.
 *
 * Return: see gpt_map().
 */
static inline int gpt_iommu_map_pages(struct gpt_table *t, unsigned long iova,
				      phys_addr_t paddr, size_t pgsize,
				      size_t pgcount, int prot, gfp_t gfp,
				      size_t *mapped)
{
	size_t len;

	if (check_mul_overflow(pgsize, pgcount, &len))
		return -EINVAL;
	/*
	 * Each table counts once, at its first map: a per-CPU add on every
	 * map costs a single-page map about a tenth of its time. Two CPUs
	 * mapping first at once may both count it.
	 */
	if (unlikely(!READ_ONCE(t->counted))) {
		WRITE_ONCE(t->counted, 1);
		if (t->fmt < GPT_FMT_NR)
			this_cpu_inc(gpt_iommu_counts.tables[t->fmt]);
	}
	return gpt_map(t, iova, paddr, len, prot, gfp, mapped);
}

size_t gpt_iommu_unmap_cut(struct gpt_table *t, unsigned long iova,
			   size_t len, size_t done,
			   struct iommu_iotlb_gather *gather);

/**
 * gpt_iommu_unmap_pages() - iommu_domain_ops.unmap_pages on a generic table
 * @t: the domain's table
 * @iova: first input address
 * @pgsize: page size
 * @pgcount: number of pages
 * @gather: collects the range to flush and the tables to free
 *
 * Same locking as gpt_iommu_map_pages(), and inline for the same reason.
 * Exactly the range is unmapped, as io-pgtable-arm does: a large page that
 * is only partly inside it is cut (gpt_cut(), in gpt_iommu_unmap_cut())
 * until the part inside can go on its own.  Users rely on this: VFIO type1
 * probes whether unmapping one page of a two-page mapping unmaps exactly
 * one page, and unmaps page by page when it does not.  The flush of the
 * gathered range also drops any IOTLB entry of the large page before the
 * cut.
 *
 * Return: bytes unmapped from @iova; less than asked only where the range
 * has a hole or a cut failed for lack of memory.
 */
static inline size_t gpt_iommu_unmap_pages(struct gpt_table *t,
					   unsigned long iova, size_t pgsize,
					   size_t pgcount,
					   struct iommu_iotlb_gather *gather)
{
	size_t len, done;

	if (check_mul_overflow(pgsize, pgcount, &len))
		return 0;
	done = gpt_unmap(t, iova, len, gather);
	/* Stopped short: a leaf at iova + done reaches outside */
	if (unlikely(done < len))
		return gpt_iommu_unmap_cut(t, iova, len, done, gather);
	return done;
}

phys_addr_t gpt_iommu_iova_to_phys(struct gpt_table *t, dma_addr_t iova);
int gpt_iommu_read_and_clear_dirty(struct gpt_table *t, unsigned long iova,
				   size_t size, unsigned long flags,
				   struct iommu_dirty_bitmap *dirty);

/*
 * GPT_IOMMU_DEFINE_OPS - define <prefix>_map_pages, <prefix>_unmap_pages,
 * <prefix>_iova_to_phys and <prefix>_read_and_clear_dirty for a driver
 * whose function @to_pt returns the struct gpt_table of a domain.
 */
#define GPT_IOMMU_DEFINE_OPS(prefix, to_pt)				\
static inline struct gpt_table *prefix##_gpt(struct iommu_domain *d)	\
{									\
	return to_pt(d);						\
}									\
static int prefix##_map_pages(struct iommu_domain *domain,		\
			      unsigned long iova, phys_addr_t paddr,	\
			      size_t pgsize, size_t pgcount, int prot,	\
			      gfp_t gfp, size_t *mapped)		\
{									\
	return gpt_iommu_map_pages(prefix##_gpt(domain), iova, paddr,	\
				   pgsize, pgcount, prot, gfp, mapped);	\
}									\
static size_t prefix##_unmap_pages(struct iommu_domain *domain,	\
				   unsigned long iova, size_t pgsize,	\
				   size_t pgcount,			\
				   struct iommu_iotlb_gather *gather)	\
{									\
	return gpt_iommu_unmap_pages(prefix##_gpt(domain), iova, pgsize, \
				     pgcount, gather);			\
}									\
static phys_addr_t prefix##_iova_to_phys(struct iommu_domain *domain,	\
					 dma_addr_t iova)		\
{									\
	return gpt_iommu_iova_to_phys(prefix##_gpt(domain), iova);	\
}									\
static int __maybe_unused						\
prefix##_read_and_clear_dirty(struct iommu_domain *domain,		\
			      unsigned long iova, size_t size,		\
			      unsigned long flags,			\
			      struct iommu_dirty_bitmap *dirty)		\
{									\
	return gpt_iommu_read_and_clear_dirty(prefix##_gpt(domain), iova, \
					      size, flags, dirty);	\
}

/* Initialisers for struct iommu_domain_ops from GPT_IOMMU_DEFINE_OPS() */
#define GPT_IOMMU_DOMAIN_OPS(prefix)			\
	.map_pages = prefix##_map_pages,		\
	.unmap_pages = prefix##_unmap_pages,		\
	.iova_to_phys = prefix##_iova_to_phys

#endif /* __LINUX_GENERIC_PT_IOMMU_H */
