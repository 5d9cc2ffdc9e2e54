// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio-iommu guest driver: table domains (page-table sharing).
 *
 * With VIRTIO_IOMMU_F_ATTACH_TABLE and a format the device walks, a DMA or
 * VFIO domain's generic_pt table is built in that format and attached with
 * ATTACH_TABLE: the device translates by walking it. A map writes entries
 * and sends nothing; an unmap clears entries and gathers the range;
 * iotlb_sync() sends one INVALIDATE for the gathered range and only then
 * frees the table pages the unmap unlinked, and the flush queue's
 * flush_iotlb_all() one INVALIDATE of the whole domain. A device that caches
 * non-present entries (VIRTIO_IOMMU_PGTF_F_INVAL_MAP) also gets an
 * INVALIDATE from iotlb_sync_map(), one for a whole scatterlist. A domain
 * whose endpoints all walk the table at each access and cache nothing
 * (VIRTIO_IOMMU_PGTF_F_NO_CACHE) gets no INVALIDATE for cleared leaves,
 * only for the table pages an unmap unlinked, and the flush queue's.
 *
 * generic_pt publishes what the device walks in the order a walker needs:
 * a new table is zeroed, then dma_wmb(), then linked by cmpxchg, so the
 * device never follows an entry into a table it cannot read yet; leaves
 * are single stores. The table never changes its root: its levels are
 * fixed at setup, and maps beyond the input bits it was set up for are
 * refused (AMD v1 would otherwise grow a level, and the device would keep
 * walking the old root).
 *
 * The device forgets a table domain with its last endpoint, and keeps no
 * copy of the table: nothing is replayed. With no endpoint attached, no
 * INVALIDATE is sent (the device holds nothing, and would answer NOENT).
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/generic_pt/iommu.h>
#include <linux/iommu.h>
#include <linux/numa.h>
#include <linux/spinlock.h>

#include "iommu-pages.h"
#include "virtio-iommu.h"

/**
 * viommu_table_setup() - make a new paging domain a table domain
 * @vdomain: the domain, with its ID, aperture and MAP/UNMAP table set
 * @cfg: the table the endpoint it is allocated for can walk
 *
 * The domain's table is rebuilt empty in @cfg's format, its page sizes
 * become the format's and its aperture ends at the table's input bits.
 *
 * Return: 0; -ENOSPC when the domain ID does not fit the ASID bits,
 * -ERANGE when the aperture starts above the table, -EOPNOTSUPP for a
 * format this kernel does not build, -ENOMEM. The domain is unchanged
 * then, in MAP/UNMAP mode.
 */
int viommu_table_setup(struct viommu_domain *vdomain,
		       const struct viommu_table_cfg *cfg)
{
	struct iommu_domain_geometry *geo = &vdomain->domain.geometry;
	u64 last = BIT_ULL(cfg->ias) - 1;
	struct gpt_table t;
	int ret;

	if (cfg->format == VIRTIO_IOMMU_PGTF_ARM_LPAE &&
	    (u64)vdomain->id >> cfg->asid_bits)
		return -ENOSPC;
	if (geo->aperture_start > last)
		return -ERANGE;

	switch (cfg->format) {
	case VIRTIO_IOMMU_PGTF_ARM_LPAE: {
		const struct gpt_armv8_cfg arm = {
			.granule = 1U << cfg->granule_shift,
			.stage = 1,
			.ias = cfg->ias,
			.oas = cfg->oas,
			.nid = NUMA_NO_NODE,
		};

		ret = gpt_armv8_init(&t, &arm, GFP_KERNEL);
		break;
	}
#if IS_ENABLED(CONFIG_IOMMU_PT_VTDSS)
	case VIRTIO_IOMMU_PGTF_VTD_SL: {
		const struct gpt_vtdss_cfg vtd = {
			.levels = cfg->levels,
			.nid = NUMA_NO_NODE,
		};

		ret = gpt_vtdss_init(&t, &vtd, GFP_KERNEL);
		break;
	}
#endif
#if IS_ENABLED(CONFIG_IOMMU_PT_AMDV1)
	case VIRTIO_IOMMU_PGTF_AMD_V1: {
		const struct gpt_amdv1_cfg amd = {
			.levels = cfg->levels,
			.nid = NUMA_NO_NODE,
		};

		ret = gpt_amdv1_init(&t, &amd, GFP_KERNEL);
		break;
	}
#endif
	default:
		ret = -EOPNOTSUPP;
		break;
	}
	if (ret)
		return ret;

	/* Nothing is mapped yet: the MAP/UNMAP table goes empty */
	gpt_deinit(&vdomain->maps.table);
	vdomain->maps.table = t;
	vdomain->table = *cfg;
	vdomain->asid = cfg->format == VIRTIO_IOMMU_PGTF_ARM_LPAE &&
			cfg->asid_bits ? vdomain->id : 0;
	vdomain->inval_map = cfg->inval_map;
	vdomain->no_cache = cfg->no_cache;
	vdomain->posted_inval = cfg->posted_inval;
	vdomain->domain.pgsize_bitmap = t.pgsize_bitmap;
	geo->aperture_end = min(geo->aperture_end, last);
	return 0;
}

/**
 * viommu_table_fits() - whether an endpoint can walk a domain's table
 * @vdomain: a table domain
 * @vdev: the endpoint
 *
 * Return: true when it can, ASID included.
 */
bool viommu_table_fits(struct viommu_domain *vdomain,
		       struct viommu_endpoint *vdev)
{
	return viommu_table_joins(&vdev->table, &vdomain->table) &&
	       !((u64)vdomain->asid >> vdev->table.asid_bits);
}

/**
 * viommu_table_attach() - attach an endpoint to a table domain
 * @vdomain: the domain, its mutex held
 * @vdev: the endpoint
 *
 * One ATTACH_TABLE per endpoint ID, all carrying the same table. The
 * endpoint is counted in before they are queued, under the replay lock:
 * an unmap that sees it queues its INVALIDATE behind them, and one that
 * does not cleared its entries before the device could walk the table.
 * An endpoint that caches makes the domain's unmaps invalidate from then
 * on, for good: an unmap that still read no_cache set had made its
 * entries visible before, so before the ATTACH_TABLE that follows. One
 * that does not serve the queue before it translates makes them notify
 * and wait, for the same reason (posted_inval).
 *
 * Return: 0; -EINVAL when the endpoint cannot walk this table (the core
 * then gives it another domain); the errno of a request.
 */
int viommu_table_attach(struct viommu_domain *vdomain,
			struct viommu_endpoint *vdev)
{
	struct iommu_fwspec *fwspec = dev_iommu_fwspec_get(vdev->dev);
	const struct viommu_table_cfg *cfg = &vdomain->table;
	struct viommu_dev *viommu = vdomain->viommu;
	u64 root = gpt_top_pa(&vdomain->maps.table);
	union viommu_req_buf req;
	unsigned long flags;
	unsigned int i;
	int ret = 0, err;

	if (!viommu_table_fits(vdomain, vdev))
		return -EINVAL;
	if (vdev->table.inval_map)
		WRITE_ONCE(vdomain->inval_map, true);
	if (!vdev->table.no_cache)
		WRITE_ONCE(vdomain->no_cache, false);
	if (!vdev->table.posted_inval)
		WRITE_ONCE(vdomain->posted_inval, false);

	WRITE_ONCE(vdomain->attach_err, 0);
	write_lock_irqsave(&vdomain->replay_lock, flags);
	vdomain->nr_endpoints++;
	for (i = 0; i < fwspec->num_ids && !ret; i++) {
		viommu_encode_attach_table(&req.attach_table, vdomain->id,
					   fwspec->ids[i], cfg->format, root,
					   cfg->ias, cfg->granule_shift,
					   vdomain->asid,
					   cfg->format == VIRTIO_IOMMU_PGTF_ARM_LPAE ?
					   VIOMMU_ARM_MAIR : 0);
		ret = viommu_queue_req(vdomain, &req, sizeof(req.attach_table));
	}
	write_unlock_irqrestore(&vdomain->replay_lock, flags);

	/* What was queued is answered before the caller detaches on failure */
	err = viommu_sync(viommu, true, false);
	ret = ret ?: err ?: READ_ONCE(vdomain->attach_err);
	if (ret) {
		dev_err(vdev->dev, "ATTACH_TABLE to domain %u (%s, root %#llx) failed: %d\n",
			vdomain->id, viommu_table_fmt_name(cfg->format), root,
			ret);
		write_lock_irqsave(&vdomain->replay_lock, flags);
		vdomain->nr_endpoints--;
		write_unlock_irqrestore(&vdomain->replay_lock, flags);
	}
	return ret;
}

/*
 * Queue an INVALIDATE of @vdomain, unnotified; *@viommu says the device
 * it went to, NULL when no endpoint is attached and none was needed.
 */
static int viommu_table_queue_invalidate(struct viommu_domain *vdomain,
					 u16 scope, u16 inval_flags, u64 start,
					 u64 last, struct viommu_dev **viommu)
{
	union viommu_req_buf req;
	unsigned long flags;
	int ret = 0;

	read_lock_irqsave(&vdomain->replay_lock, flags);
	*viommu = vdomain->nr_endpoints ? vdomain->viommu : NULL;
	if (*viommu) {
		viommu_encode_invalidate(&req.invalidate, vdomain->id, scope,
					 inval_flags, start, last);
		ret = viommu_queue_req(vdomain, &req, sizeof(req.invalidate));
	}
	read_unlock_irqrestore(&vdomain->replay_lock, flags);
	return ret;
}

/*
 * Send an INVALIDATE of @vdomain and wait for it. A refusal comes back
 * through viommu_domain_request_failed(), which counts it in
 * inval_failures: one that moved while we waited may be another CPU's,
 * and then this caller only invalidates again.
 */
static int viommu_table_invalidate(struct viommu_domain *vdomain, u16 scope,
				   u16 inval_flags, u64 start, u64 last,
				   bool after_map)
{
	int failures = atomic_read(&vdomain->inval_failures);
	struct viommu_dev *viommu;
	int ret;

	ret = viommu_table_queue_invalidate(vdomain, scope, inval_flags, start,
					    last, &viommu);
	if (ret || !viommu)
		return ret;
	atomic64_inc(after_map ? &vdomain->stats.invalidates_map :
				 &vdomain->stats.invalidates);
	ret = viommu_sync(viommu, false, viommu_domain_combines(vdomain));
	if (!ret && atomic_read(&vdomain->inval_failures) != failures)
		ret = -EIO;
	return ret;
}

/**
 * viommu_table_map() - map_pages() of a table domain: entries only
 * @vdomain: the domain
 * @iova: first input address
 * @paddr: first output address
 * @pgsize: page size
 * @pgcount: pages
 * @prot: IOMMU_* flags
 * @gfp: for new table pages
 * @mapped: incremented by the bytes mapped, also on error
 *
 * Return: 0, -ERANGE outside the table's input or output bits, or what
 * generic_pt returns.
 */
int viommu_table_map(struct viommu_domain *vdomain, unsigned long iova,
		     phys_addr_t paddr, size_t pgsize, size_t pgcount,
		     int prot, gfp_t gfp, size_t *mapped)
{
	u64 size = (u64)pgsize * pgcount;
	u64 last = (u64)iova + size - 1;
	int ret;

	if (!size || last < iova ||
	    last > vdomain->domain.geometry.aperture_end ||
	    ((u64)paddr + size - 1) >> vdomain->table.oas)
		return -ERANGE;
	ret = gpt_iommu_map_pages(&vdomain->maps.table, iova, paddr, pgsize,
				  pgcount, prot, gfp, mapped);
	if (ret)
		return ret;
	viommu_count_map(vdomain, size);
	return 0;
}

/**
 * viommu_table_unmap() - unmap_pages() of a table domain
 * @vdomain: the domain
 * @iova: first input address
 * @pgsize: page size
 * @pgcount: pages
 * @gather: gets the range and the table pages unlinked
 *
 * Nothing is sent: iotlb_sync() or the flush queue invalidates. A strict
 * caller's gather is flushed first when this range is disjoint from it, so
 * that one INVALIDATE does not span the space between two ranges.
 *
 * Return: the bytes unmapped.
 */
size_t viommu_table_unmap(struct viommu_domain *vdomain, unsigned long iova,
			  size_t pgsize, size_t pgcount,
			  struct iommu_iotlb_gather *gather)
{
	size_t removed;

	if (!iommu_iotlb_gather_queued(gather) &&
	    iommu_iotlb_gather_is_disjoint(gather, iova, pgsize * pgcount))
		iommu_iotlb_sync(&vdomain->domain, gather);
	removed = gpt_iommu_unmap_pages(&vdomain->maps.table, iova, pgsize,
					pgcount, gather);
	if (removed)
		viommu_count_unmap(vdomain, removed);
	return removed;
}

/**
 * viommu_table_sync_map() - iotlb_sync_map() of a table domain
 * @vdomain: the domain
 * @iova: first address mapped
 * @size: bytes mapped
 *
 * Only a device that caches non-present entries or shadows the table
 * (VIRTIO_IOMMU_PGTF_F_INVAL_MAP) needs to hear of maps: one INVALIDATE
 * for the whole range, a scatterlist's maps together. Not a leaf-only
 * one: the maps may have linked new tables.
 *
 * Return: 0 or the INVALIDATE's errno.
 */
int viommu_table_sync_map(struct viommu_domain *vdomain, unsigned long iova,
			  size_t size)
{
	if (!READ_ONCE(vdomain->inval_map) || !size)
		return 0;
	return viommu_table_invalidate(vdomain, VIRTIO_IOMMU_INVAL_S_RANGE, 0,
				       iova, (u64)iova + size - 1, true);
}

/*
 * Queue the leaf INVALIDATE of @gather unnotified, for a domain whose
 * endpoints all serve the queue before they translate (POSTED_INVAL).
 * virtqueue_add_sgs() makes the request available after the entries are
 * cleared, so the device sees the request once it could see them. A
 * refusal is reported when the answer is collected (as for posted MAP);
 * the entries are cleared already.
 *
 * Return: true if it was queued (or none was needed), false if the
 * caller must send it and wait.
 */
static bool viommu_table_post_invalidate(struct viommu_domain *vdomain,
					 struct iommu_iotlb_gather *gather)
{
	struct viommu_dev *viommu;

	if (viommu_table_queue_invalidate(vdomain, VIRTIO_IOMMU_INVAL_S_RANGE,
					  VIRTIO_IOMMU_INVAL_F_LEAF,
					  gather->start, gather->end, &viommu))
		return false;
	if (viommu) {
		atomic64_inc(&vdomain->stats.invalidates);
		atomic64_inc(&vdomain->stats.invalidates_posted);
	}
	return true;
}

/**
 * viommu_table_sync() - iotlb_sync() of a table domain
 * @vdomain: the domain
 * @gather: what unmaps gathered since the last sync
 *
 * One INVALIDATE for the gathered range, leaf-only when no table page was
 * unlinked; an unmap that unlinked tables but cleared no leaf gathers no
 * range, and gets the whole domain invalidated. Cleared leaves alone need
 * none when every endpoint walks uncached (NO_CACHE): a full barrier makes
 * them visible to the device's next walk before the caller reuses the
 * memory they mapped. When every endpoint's device serves the request
 * queue before it translates (POSTED_INVAL), their INVALIDATE is queued
 * and neither notified nor waited for: once on the ring, it takes effect
 * before the device's next translation. The unlinked pages are
 * freed once the device answered. When it did not (the request could not
 * be queued, or was refused), the whole domain is invalidated instead;
 * if that fails too, the pages are kept until the domain is freed, when
 * no device walks its table any more.
 */
void viommu_table_sync(struct viommu_domain *vdomain,
		       struct iommu_iotlb_gather *gather)
{
	bool range = gather->end >= gather->start;
	bool tables = !list_empty(&gather->freelist);
	unsigned long flags;
	int ret;

	if (!range && !tables)
		return;
	/*
	 * Cleared leaves alone, on endpoints that cache nothing or serve the
	 * queue before they translate: the stores visible to the device, and
	 * the flags read again after them (an endpoint without the flag may
	 * be attaching: see viommu_table_attach()). A device that caches and
	 * waits for notifications pays no barrier: the INVALIDATE orders.
	 */
	if (!tables && (READ_ONCE(vdomain->no_cache) ||
			READ_ONCE(vdomain->posted_inval))) {
		/* The cleared entries before the flags' second reading */
		mb();
		if (READ_ONCE(vdomain->no_cache)) {
			atomic64_inc(&vdomain->stats.invalidates_skipped);
			return;
		}
		if (READ_ONCE(vdomain->posted_inval) &&
		    viommu_table_post_invalidate(vdomain, gather))
			return;
	}
	ret = viommu_table_invalidate(vdomain,
				      range ? VIRTIO_IOMMU_INVAL_S_RANGE :
					      VIRTIO_IOMMU_INVAL_S_DOMAIN,
				      tables ? 0 : VIRTIO_IOMMU_INVAL_F_LEAF,
				      gather->start, gather->end, false);
	if (ret && range)
		ret = viommu_table_invalidate(vdomain,
					      VIRTIO_IOMMU_INVAL_S_DOMAIN, 0,
					      0, 0, false);
	if (!ret) {
		iommu_put_pages_list(&gather->freelist);
		return;
	}
	dev_err_ratelimited(vdomain->viommu ? vdomain->viommu->dev : NULL,
			    "INVALIDATE %#lx-%#lx of domain %u failed: %d; its table pages are kept\n",
			    gather->start, gather->end, vdomain->id, ret);
	spin_lock_irqsave(&vdomain->limbo_lock, flags);
	list_splice_init(&gather->freelist, &vdomain->limbo);
	spin_unlock_irqrestore(&vdomain->limbo_lock, flags);
}

/**
 * viommu_table_flush_all() - flush_iotlb_all() of a table domain
 * @vdomain: the domain
 *
 * The flush queue's: one INVALIDATE of the whole domain for every unmap
 * queued since the last. The queue frees their table pages when this
 * returns, so a failure is said loudly, and retried once.
 */
void viommu_table_flush_all(struct viommu_domain *vdomain)
{
	int ret;

	ret = viommu_table_invalidate(vdomain, VIRTIO_IOMMU_INVAL_S_DOMAIN, 0,
				      0, 0, false);
	if (ret)
		ret = viommu_table_invalidate(vdomain,
					      VIRTIO_IOMMU_INVAL_S_DOMAIN, 0,
					      0, 0, false);
	if (ret)
		dev_err_ratelimited(vdomain->viommu ? vdomain->viommu->dev :
						      NULL,
				    "INVALIDATE of domain %u failed: %d\n",
				    vdomain->id, ret);
}

/**
 * viommu_table_free() - free what a table domain kept
 * @vdomain: the domain, attached nowhere
 */
void viommu_table_free(struct viommu_domain *vdomain)
{
	iommu_put_pages_list(&vdomain->limbo);
}
