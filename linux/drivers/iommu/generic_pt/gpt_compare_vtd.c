// SPDX-License-Identifier: GPL-2.0-only
/*
 * A second-stage domain of the Intel VT-d driver, built without an IOMMU,
 * whose table the driver's own dma_pte code fills: the reference that
 * gpt_compare_kunit.c compares generic_pt's VT-d format with, and the old
 * side of gpt_bench.c's VT-d rows (their new side is the same domain on
 * generic_pt).
 */
#include <linux/kconfig.h>

/*
 * The Makefile builds this file only with the Intel driver; the guard lets
 * a build of another architecture that is asked for the object (a W=1 or
 * sparse pass over every file of the series) compile it to nothing.
 */
#if IS_ENABLED(CONFIG_INTEL_IOMMU)

#include "../intel/iommu.h"
#include "../iommu-pages.h"
#include "gpt_compare_vtd.h"

/**
 * gpt_cmp_vtd_domain() - a second-stage domain on the driver's own code
 * @width: input address width: 39, 48 or 57 (3, 4 or 5 levels)
 * @superpage: super page level, as dmar_domain.iommu_superpage: 1 for 2M,
 *	2 for 2M and 1G pages
 * @snp: set SNP in every leaf, as after enforce_cache_coherency()
 *
 * The domain is set up as alloc_domain() and md_domain_init() build one
 * and attach leaves it for a single IOMMU of that width and those super
 * pages, with coherent page walks (generic_pt needs them; the old code
 * would only add clflushes).  No IOMMU, device or cache tag is attached:
 * the flushes of map, unmap and iotlb_sync walk empty lists.  use_gpt is
 * clear, so the domain ops run the dma_pte code whatever
 * intel_iommu.generic_pt says.  Drive it through domain->ops as the iommu
 * core does; free it with domain->ops->free().
 *
 * Context: process context, allocates with GFP_KERNEL.
 *
 * Return: the domain, NULL if out of memory.
 */
struct iommu_domain *gpt_cmp_vtd_domain(unsigned int width,
					unsigned int superpage, bool snp)
{
	struct dmar_domain *d;

	d = kzalloc(sizeof(*d), GFP_KERNEL);
	if (!d)
		return NULL;
	d->nid = NUMA_NO_NODE;
	INIT_LIST_HEAD(&d->devices);
	INIT_LIST_HEAD(&d->dev_pasids);
	INIT_LIST_HEAD(&d->cache_tags);
	spin_lock_init(&d->lock);
	spin_lock_init(&d->cache_lock);
	xa_init(&d->iommu_array);
	d->gaw = width;
	d->agaw = width_to_agaw(width);
	d->iommu_coherency = true;
	d->iommu_superpage = superpage;
	d->set_pte_snp = snp;
	d->pgd = iommu_alloc_page_node(d->nid, GFP_KERNEL);
	if (!d->pgd) {
		kfree(d);
		return NULL;
	}
	d->domain.type = IOMMU_DOMAIN_UNMANAGED;
	d->domain.ops = intel_iommu_ops.default_domain_ops;
	/* What domain_update_iommu_cap() gives those super pages */
	d->domain.pgsize_bitmap = SZ_4K | SZ_2M | (superpage > 1 ? SZ_1G : 0);
	return &d->domain;
}

/**
 * gpt_cmp_vtd_gpt_domain() - the same domain on generic_pt's VT-d format
 * @width: as for gpt_cmp_vtd_domain()
 * @superpage: as for gpt_cmp_vtd_domain(), at least 1 (the library maps 2M
 *	pages wherever alignment allows)
 * @snp: as for gpt_cmp_vtd_domain()
 *
 * A gpt_cmp_vtd_domain() whose table is built by generic_pt, as the
 * driver's domain_gpt_init() builds it for an IOMMU with coherent walks:
 * the domain ops then run the driver's generic_pt paths.  The benchmark
 * drives both kinds through the same ops, so both pay the driver's own
 * bookkeeping.
 *
 * Context: process context, allocates with GFP_KERNEL.
 *
 * Return: the domain, NULL if out of memory or @superpage is 0.
 */
struct iommu_domain *gpt_cmp_vtd_gpt_domain(unsigned int width,
					    unsigned int superpage, bool snp)
{
	struct gpt_vtdss_cfg cfg = { .nid = NUMA_NO_NODE };
	struct iommu_domain *dom;
	struct dmar_domain *d;

	if (!IS_ENABLED(CONFIG_IOMMU_PT_VTDSS) || !superpage)
		return NULL;
	dom = gpt_cmp_vtd_domain(width, superpage, snp);
	if (!dom)
		return NULL;
	d = to_dmar_domain(dom);
	cfg.levels = agaw_to_level(d->agaw);
	if (superpage < 2)
		cfg.flags |= GPT_VTDSS_NO_1G;
	if (snp)
		cfg.flags |= GPT_VTDSS_SNP;
	if (gpt_vtdss_init(&d->pt, &cfg, GFP_KERNEL)) {
		dom->ops->free(dom);
		return NULL;
	}
	/* A generic_pt domain has no dma_pte root: domain_exit() frees none */
	iommu_free_page(d->pgd);
	d->pgd = NULL;
	d->use_gpt = true;
	dom->pgsize_bitmap = d->pt.pgsize_bitmap;
	return dom;
}

/**
 * gpt_cmp_vtd_top() - the top table of a gpt_cmp_vtd_domain() domain
 * @dom: the domain
 * @lvl: set to the top table's level, 0 being the level of 4K pages
 *
 * Return: the top table, as the IOMMU would find it from the context entry.
 */
u64 *gpt_cmp_vtd_top(struct iommu_domain *dom, unsigned int *lvl)
{
	struct dmar_domain *d = to_dmar_domain(dom);

	*lvl = agaw_to_level(d->agaw) - 1;
	return (u64 *)d->pgd;
}

#endif /* CONFIG_INTEL_IOMMU */
