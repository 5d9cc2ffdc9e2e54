// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio-iommu guest driver: MAP/UNMAP mode, and page-table sharing.
 *
 * Copyright (C) 2019 Arm Limited
 *
 * A rewrite of the 6.12 driver by Jean-Philippe Brucker. The endpoint
 * lookup (viommu_match_node(), viommu_get_by_fwnode()), device_group,
 * of_xlate and the reserved-region handling keep that driver's logic.
 *
 * The device (virtio 1.3, device ID 23) translates the DMA of the endpoints
 * behind it. The driver attaches endpoints to domains and, for every
 * iommu_map()/iommu_unmap() the IOMMU core or dma-iommu makes, sends MAP and
 * UNMAP requests on the request queue. Faults arrive on the event queue.
 *
 * Cost model: each kick of the request queue is an exit to the VMM, so the
 * driver batches. MAP requests are queued by map_pages() and sent by
 * iotlb_sync_map(); UNMAP requests are queued by unmap_pages() and sent by
 * iotlb_sync() (strict domains) or flush_iotlb_all() (lazy domains, from the
 * flush queue). Requests live in preallocated slots, so the DMA path
 * allocates nothing. A caller that may sleep waits for the request queue
 * interrupt; the DMA path, which may run in atomic context, polls with
 * interrupts enabled between looks and gives up after a bounded time. The
 * request queue is virtio-iommu-queue.c; what the files share,
 * virtio-iommu.h.
 *
 * Page-table sharing (VIRTIO_IOMMU_F_ATTACH_TABLE): where the device walks
 * a format generic_pt builds, DMA and VFIO domains allocated for an
 * endpoint become table domains (virtio-iommu-table.c): maps send nothing,
 * unmaps one INVALIDATE per sync or flush. virtio_iommu.map_unmap=1 keeps
 * MAP/UNMAP mode on such a device, to compare the two.
 *
 * Posted MAP (VIRTIO_IOMMU_F_POSTED_MAP): where every endpoint of a domain
 * has its DMA translated in software (vhost, emulated devices), the device
 * serves the request queue before it fails a translation, so
 * iotlb_sync_map() leaves the domain's MAPs queued, unnotified: the next
 * sync (an unmap's, in strict mode) sends them with its own requests.
 * virtio_iommu.posted_map=0 notifies them, to compare the two.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/debugfs.h>
#include <linux/dma-map-ops.h>
#include <linux/iommu.h>
#include <linux/ktime.h>
#include <linux/module.h>
#include <linux/of.h>
#include <linux/pci.h>
#include <linux/seq_file.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/virtio.h>
#include <linux/virtio_config.h>
#include <linux/virtio_ids.h>
#include <linux/virtio_ring.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "dma-iommu.h"
#include "virtio-iommu.h"

/*
 * Where dma-iommu maps MSI doorbells when the device reports no MSI
 * region (the Arm GIC ITS case): an IOVA window no DMA allocation uses.
 */
#define VIOMMU_SW_MSI_BASE		0x8000000
#define VIOMMU_SW_MSI_SIZE		0x100000

/* A PROBE answer larger than this is not a device we believe. */
#define VIOMMU_MAX_PROBE_SIZE		SZ_64K

static struct dentry *viommu_debugfs_root;

static bool map_unmap;
module_param(map_unmap, bool, 0444);
MODULE_PARM_DESC(map_unmap,
		 "Use MAP/UNMAP requests even with a device that walks page tables (do not negotiate VIRTIO_IOMMU_F_ATTACH_TABLE)");

static bool posted_map = true;
module_param(posted_map, bool, 0444);
MODULE_PARM_DESC(posted_map,
		 "Leave MAP requests unnotified for endpoints whose DMA the device translates in software (negotiate VIRTIO_IOMMU_F_POSTED_MAP; default on)");

/*
 * The table formats the driver builds, in the order it wants them: its own
 * architecture's first.
 */
static const u16 viommu_table_prefs[] = {
#ifdef CONFIG_X86
#if IS_ENABLED(CONFIG_IOMMU_PT_VTDSS)
	VIRTIO_IOMMU_PGTF_VTD_SL,
#endif
#if IS_ENABLED(CONFIG_IOMMU_PT_AMDV1)
	VIRTIO_IOMMU_PGTF_AMD_V1,
#endif
#endif
	VIRTIO_IOMMU_PGTF_ARM_LPAE,
};

/* Request failures the queue reports */

/*
 * A MAP or UNMAP of @vdomain failed: the request queue calls this where it
 * collects answers, rq_lock held, in any context. A refused MAP is marked
 * in the domain's table, so the iotlb_sync_map() covering it fails.
 */
void viommu_domain_request_failed(struct viommu_domain *vdomain,
				  const struct viommu_slot *slot, int err)
{
	struct device *dev = vdomain->viommu->dev;

	if (slot->type == VIRTIO_IOMMU_T_MAP) {
		u64 start = le64_to_cpu(slot->req.map.virt_start);

		dev_err_ratelimited(dev, "MAP %#llx-%#llx in domain %u failed: %d\n",
				    start, le64_to_cpu(slot->req.map.virt_end),
				    vdomain->id, err);
		atomic64_inc(&vdomain->stats.errors);
		viommu_maps_refused(&vdomain->maps, start, err);
	} else if (slot->type == VIRTIO_IOMMU_T_UNMAP) {
		dev_err_ratelimited(dev, "UNMAP %#llx-%#llx in domain %u failed: %d\n",
				    le64_to_cpu(slot->req.unmap.virt_start),
				    le64_to_cpu(slot->req.unmap.virt_end),
				    vdomain->id, err);
		atomic64_inc(&vdomain->stats.errors);
	} else if (slot->type == VIRTIO_IOMMU_T_INVALIDATE) {
		dev_err_ratelimited(dev, "INVALIDATE %#llx-%#llx (scope %u) in domain %u failed: %d\n",
				    le64_to_cpu(slot->req.invalidate.virt_start),
				    le64_to_cpu(slot->req.invalidate.virt_end),
				    le16_to_cpu(slot->req.invalidate.scope),
				    vdomain->id, err);
		atomic64_inc(&vdomain->stats.errors);
		atomic_inc(&vdomain->inval_failures);
	} else if (slot->type == VIRTIO_IOMMU_T_ATTACH_TABLE) {
		/* viommu_table_attach() reports it */
		WRITE_ONCE(vdomain->attach_err, err);
	}
}

/* Queue a MAP for the next sync. */
static int viommu_queue_map(struct viommu_domain *vdomain, u64 start, u64 last,
			    u64 phys, u32 map_flags)
{
	union viommu_req_buf req;

	viommu_encode_map(&req.map, vdomain->id, start, last, phys, map_flags);
	return viommu_queue_req(vdomain, &req, sizeof(req.map));
}

/* Queue an UNMAP for the next sync. */
static int viommu_queue_unmap(struct viommu_domain *vdomain, u64 start,
			      u64 last)
{
	union viommu_req_buf req;

	viommu_encode_unmap(&req.unmap, vdomain->id, start, last);
	return viommu_queue_req(vdomain, &req, sizeof(req.unmap));
}

/* Domain bookkeeping */

static u32 viommu_prot_flags(int prot)
{
	return (prot & IOMMU_READ ? VIRTIO_IOMMU_MAP_F_READ : 0) |
	       (prot & IOMMU_WRITE ? VIRTIO_IOMMU_MAP_F_WRITE : 0) |
	       (prot & IOMMU_MMIO ? VIRTIO_IOMMU_MAP_F_MMIO : 0);
}

static int viommu_add_mapping(struct viommu_domain *vdomain, u64 start,
			      u64 last, phys_addr_t paddr, int prot, gfp_t gfp)
{
	int ret = viommu_maps_add(&vdomain->maps, start, last, paddr, prot, gfp);

	if (ret)
		return ret;
	viommu_count_map(vdomain, last - start + 1);
	return 0;
}

/*
 * Remove the mappings inside [start, last], widened to whole MAPs (see
 * viommu_maps_del()). *@end gets the last address removed.
 *
 * Return: the number of bytes removed, 0 when nothing was.
 */
static size_t viommu_del_mappings(struct viommu_domain *vdomain, u64 start,
				  u64 last, u64 *end)
{
	u64 removed = viommu_maps_del(&vdomain->maps, start, last);

	*end = start;
	if (!removed)
		return 0;
	*end += removed - 1;
	viommu_count_unmap(vdomain, removed);
	return removed;
}

/*
 * Does the device hold a MAP of @vdomain that starts at @iova? The replay
 * lock held (or the mutex, which keeps a replay out).
 */
static bool viommu_device_holds(struct viommu_domain *vdomain, u64 iova)
{
	return vdomain->nr_endpoints && iova < vdomain->replayed_to;
}

/* Change the endpoint count that map_pages() and unmap_pages() read */
static void viommu_set_endpoints(struct viommu_domain *vdomain, unsigned int n)
{
	unsigned long flags;

	write_lock_irqsave(&vdomain->replay_lock, flags);
	vdomain->nr_endpoints = n;
	write_unlock_irqrestore(&vdomain->replay_lock, flags);
}

/* One batch of a replay: at most @left MAPs, queued up to @next */
struct viommu_replay_batch {
	struct viommu_domain	*vdomain;
	unsigned int		left;
	u64			next;
};

#define VIOMMU_REPLAY_FULL	1

static int viommu_replay_one(u64 start, u64 last, phys_addr_t pa, int prot,
			     void *arg)
{
	struct viommu_replay_batch *b = arg;
	int ret;

	if (!b->left)
		return VIOMMU_REPLAY_FULL;
	ret = viommu_queue_map(b->vdomain, start, last, pa,
			       viommu_prot_flags(prot));
	if (ret)
		return ret;
	/* Sent again: a refusal of it is the device's answer to this one */
	viommu_maps_resent(&b->vdomain->maps, start);
	b->left--;
	b->next = last + 1;
	return 0;
}

/*
 * Send the domain's mappings again and count its first endpoint: the
 * device dropped them when the domain's last endpoint left it.
 * vdomain->mutex held.
 *
 * Someone may map and unmap through the domain meanwhile (iommufd attaches
 * a device to a populated domain while another thread unmaps). The replay
 * goes in address order, a batch of MAPs at a time: the replay lock keeps
 * them out while a batch is walked and queued and the point it reached
 * (replayed_to) moves past it. A change below that point is sent by whoever
 * makes it, one above it is in the table when the replay gets there: never
 * lost nor sent twice, and no table page they free can be under a walk.
 * Interrupts are off for a batch only; the device answers each batch with
 * the lock dropped, so that a domain holding many MAPs (an iommufd domain
 * filled before its first attach) does not keep a CPU from its interrupts
 * for as many round trips.
 */
static int viommu_replay_mappings(struct viommu_domain *vdomain)
{
	struct viommu_replay_batch b = { .vdomain = vdomain };
	unsigned int batch = max(vdomain->viommu->nr_slots / 2, 1U);
	unsigned long flags;
	int ret;

	write_lock_irqsave(&vdomain->replay_lock, flags);
	vdomain->replayed_to = 0;
	vdomain->nr_endpoints = 1;
	write_unlock_irqrestore(&vdomain->replay_lock, flags);
	do {
		b.left = batch;
		write_lock_irqsave(&vdomain->replay_lock, flags);
		ret = viommu_maps_replay(&vdomain->maps, vdomain->replayed_to,
					 viommu_replay_one, &b);
		if (ret >= 0)
			vdomain->replayed_to = ret ? b.next : U64_MAX;
		write_unlock_irqrestore(&vdomain->replay_lock, flags);
		if (ret < 0)
			break;
		ret = viommu_sync(vdomain->viommu, true, false) ?: ret;
	} while (ret == VIOMMU_REPLAY_FULL);
	if (!ret)
		ret = viommu_maps_error(&vdomain->maps, 0, VIOMMU_TABLE_LAST);
	if (ret)
		viommu_set_endpoints(vdomain, 0);
	return ret;
}

/*
 * A posted MAP the device refused (NOMEM: its budget of mappings or table
 * pages was spent) left a range the DMA API holds mapped and the device
 * does not: the DMA through it stopped, and with vhost-net the queue
 * behind it. After an UNMAP of the domain freed room, send the refused
 * MAPs again, notified; the device restarts what stopped on them
 * (virtio-iommu.rst, "Posted MAP"). Meanwhile the domain's MAPs are
 * notified and waited for, so that a refusal fails its map up front.
 *
 * In batches, as the replay, which the mutex keeps out: the replay lock
 * keeps map_pages() and unmap_pages() out of the table while a batch is
 * walked and queued. A refused MAP they unmap meanwhile is unmapped after
 * its MAP, in queue order.
 */
static void viommu_resend_refused(struct work_struct *work)
{
	struct viommu_domain *vdomain = container_of(work, struct viommu_domain,
						     resend_work);
	struct viommu_replay_batch b = { .vdomain = vdomain };
	struct viommu_dev *viommu;
	unsigned int batch;
	unsigned long flags;
	int ret;

	mutex_lock(&vdomain->mutex);
	viommu = vdomain->viommu;
	if (!viommu)
		goto out_unlock;
	batch = max(viommu->nr_slots / 2, 1U);
	do {
		b.left = batch;
		write_lock_irqsave(&vdomain->replay_lock, flags);
		/* Only what the device held: a replay sends the rest */
		ret = -ENODEV;
		if (vdomain->viommu && vdomain->nr_endpoints &&
		    vdomain->replayed_to == U64_MAX)
			ret = viommu_maps_replay_refused(&vdomain->maps, b.next,
							 viommu_replay_one, &b);
		write_unlock_irqrestore(&vdomain->replay_lock, flags);
		if (ret < 0)
			break;
		atomic64_add(batch - b.left, &vdomain->stats.resent);
		ret = viommu_sync(viommu, true, false) ?: ret;
	} while (ret == VIOMMU_REPLAY_FULL);
out_unlock:
	mutex_unlock(&vdomain->mutex);
}

/* Identity-map everything but the endpoint's reserved regions. */
static int viommu_map_identity(struct viommu_endpoint *vdev,
			       struct viommu_domain *vdomain)
{
	u64 granule = 1ULL << __ffs(vdomain->domain.pgsize_bitmap);
	int prot = IOMMU_READ | IOMMU_WRITE;
	u64 start = ALIGN(vdomain->domain.geometry.aperture_start, granule);
	u64 limit = vdomain->domain.geometry.aperture_end;
	struct iommu_resv_region *resv;
	u64 end;
	int ret;

	if ((limit & (granule - 1)) != granule - 1)
		limit = ALIGN_DOWN(limit, granule) - 1;

	list_for_each_entry(resv, &vdev->resv_regions, list) {
		u64 rstart = ALIGN_DOWN(resv->start, granule);
		u64 rlast = ALIGN(resv->start + resv->length, granule) - 1;

		if (rlast < start || rstart > limit)
			continue;
		if (rstart > start) {
			ret = viommu_add_mapping(vdomain, start, rstart - 1,
						 start, prot, GFP_KERNEL);
			if (ret)
				goto err_unmap;
		}
		if (rlast >= limit)
			return 0;
		start = rlast + 1;
	}
	ret = viommu_add_mapping(vdomain, start, limit, start, prot,
				 GFP_KERNEL);
	if (!ret)
		return 0;
err_unmap:
	viommu_del_mappings(vdomain, 0, ULLONG_MAX, &end);
	return ret;
}

/* Probe */

static int viommu_add_resv(struct viommu_endpoint *vdev,
			   const struct viommu_probe_prop *prop)
{
	struct iommu_resv_region *region, *next;
	enum iommu_resv_type type;
	phys_addr_t start;
	int prot = 0;
	size_t size;

	if (viommu_resv_extent(prop, &start, &size)) {
		dev_err(vdev->dev, "reserved region %#llx-%#llx does not fit\n",
			prop->start, prop->last);
		return -EOVERFLOW;
	}
	switch (prop->subtype) {
	case VIRTIO_IOMMU_RESV_MEM_T_MSI:
		type = IOMMU_RESV_MSI;
		prot = IOMMU_WRITE | IOMMU_NOEXEC | IOMMU_MMIO;
		break;
	default:
		/* The specification says: treat an unknown subtype as RESERVED */
		dev_warn(vdev->dev, "unknown reserved region subtype %u\n",
			 prop->subtype);
		fallthrough;
	case VIRTIO_IOMMU_RESV_MEM_T_RESERVED:
		type = IOMMU_RESV_RESERVED;
		break;
	}

	/* Every endpoint ID of the device is probed: keep one copy of each. */
	list_for_each_entry(next, &vdev->resv_regions, list) {
		if (next->start == start && next->length == size &&
		    next->type == type)
			return 0;
		if (next->start > start)
			break;
	}
	region = iommu_alloc_resv_region(start, size, prot, type, GFP_KERNEL);
	if (!region)
		return -ENOMEM;
	/* Sorted by start address, which viommu_map_identity() relies on */
	list_add_tail(&region->list, &next->list);
	return 0;
}

/*
 * The table an endpoint ID's PAGE_TABLE_FMT properties allow. A device
 * whose IDs allow different tables gets none: a domain has one table.
 */
static void viommu_choose_table(struct viommu_dev *viommu,
				struct viommu_endpoint *vdev, bool first,
				const struct viommu_table_fmt *offers,
				unsigned int n)
{
	struct viommu_table_cfg cfg;

	if (!viommu->tables)
		return;
	if (!viommu_table_choose(offers, n, viommu_table_prefs,
				 ARRAY_SIZE(viommu_table_prefs), PAGE_SHIFT,
				 &cfg) ||
	    (!first && memcmp(&cfg, &vdev->table, sizeof(cfg)))) {
		if (first || vdev->table.format)
			dev_info(vdev->dev, "no table format this driver builds (%u offered): MAP/UNMAP mode\n",
				 n);
		memset(&vdev->table, 0, sizeof(vdev->table));
		return;
	}
	if (!first)
		return;
	vdev->table = cfg;
	/* Said once per format, for the first endpoint that takes it */
	if (!test_and_set_bit(cfg.format % BITS_PER_LONG, &viommu->fmts_said))
		dev_info(viommu->dev, "page-table mode: %s tables, %u-bit input, %u levels, %uK granule%s\n",
			 viommu_table_fmt_name(cfg.format), cfg.ias, cfg.levels,
			 (1U << cfg.granule_shift) / SZ_1K,
			 cfg.inval_map ? ", INVALIDATE after maps" :
			 cfg.no_cache ? ", uncached walks" :
			 cfg.posted_inval ? ", posted INVALIDATE" : "");
}

static int viommu_probe_endpoint(struct viommu_dev *viommu,
				 struct viommu_endpoint *vdev, u32 epid,
				 bool first)
{
	size_t len = sizeof(struct virtio_iommu_req_probe) + viommu->probe_size +
		     VIOMMU_TAIL_LEN;
	struct viommu_table_fmt offers[VIOMMU_MAX_TABLE_FMTS];
	struct virtio_iommu_req_probe *probe;
	struct viommu_probe_prop prop;
	unsigned int nr_offers = 0;
	bool posted = false;
	size_t pos = 0;
	int ret;

	mutex_lock(&viommu->probe_mutex);
	if (!viommu->probe_buf)
		viommu->probe_buf = devm_kmalloc(viommu->dev, len, GFP_KERNEL);
	probe = viommu->probe_buf;
	if (!probe) {
		ret = -ENOMEM;
		goto out_unlock;
	}
	viommu_encode_probe(probe, epid, viommu->probe_size);
	ret = viommu_send_sync(viommu, NULL, probe, len,
			       viommu->probe_size + VIOMMU_TAIL_LEN);
	if (ret == -ESHUTDOWN) {
		/* The queue broke before the answer: never reuse the buffer */
		viommu->probe_buf = NULL;
	}
	if (ret) {
		dev_err(vdev->dev, "PROBE of endpoint %u failed: %d\n", epid,
			ret);
		goto out_unlock;
	}

	while ((ret = viommu_probe_next(probe->properties, viommu->probe_size,
					&pos, &prop)) > 0) {
		if (prop.type == VIRTIO_IOMMU_PROBE_T_PAGE_TABLE_FMT) {
			if (nr_offers < ARRAY_SIZE(offers))
				offers[nr_offers++] = prop.table;
			continue;
		}
		if (prop.type == VIRTIO_IOMMU_PROBE_T_POSTED_MAP) {
			posted = viommu->posted;
			continue;
		}
		if (prop.type != VIRTIO_IOMMU_PROBE_T_RESV_MEM) {
			dev_dbg(vdev->dev, "ignoring probe property %#x\n",
				prop.type);
			continue;
		}
		ret = viommu_add_resv(vdev, &prop);
		if (ret)
			break;
	}
	if (ret == -EPROTO)
		dev_err(vdev->dev,
			"malformed PROBE properties for endpoint %u at offset %zu\n",
			epid, pos);
	if (!ret) {
		viommu_choose_table(viommu, vdev, first, offers, nr_offers);
		/* A device with several IDs: posted only if all are */
		vdev->posted = posted && (first || vdev->posted);
	}
out_unlock:
	mutex_unlock(&viommu->probe_mutex);
	return ret;
}

/* Events */

static const char *viommu_fault_reason(u8 reason)
{
	switch (reason) {
	case VIRTIO_IOMMU_FAULT_R_DOMAIN:
		return "domain";
	case VIRTIO_IOMMU_FAULT_R_MAPPING:
		return "page";
	default:
		return "unknown";
	}
}

static void viommu_handle_fault(struct viommu_dev *viommu,
				const struct viommu_fault_info *f)
{
	u64 addr = f->flags & VIRTIO_IOMMU_FAULT_F_ADDRESS ? f->address : 0;
	int flags = f->flags & VIRTIO_IOMMU_FAULT_F_WRITE ? IOMMU_FAULT_WRITE :
							    IOMMU_FAULT_READ;
	struct viommu_endpoint *vdev;
	struct viommu_domain *vdomain = NULL;
	const char *outcome = "no handler";
	unsigned long irqflags;

	spin_lock_irqsave(&viommu->ep_lock, irqflags);
	viommu->evstats.faults++;
	vdev = xa_load(&viommu->endpoints, f->endpoint);
	if (vdev)
		vdomain = vdev->vdomain;
	if (vdomain) {
		vdomain->stats.faults++;
		viommu->evstats.reported++;
		if (vdomain->domain.handler)
			outcome = "handled";
		if (report_iommu_fault(&vdomain->domain, vdev->dev, addr,
				       flags) && vdomain->domain.handler)
			outcome = "handler failed";
	} else {
		viommu->evstats.unknown_ep++;
	}
	spin_unlock_irqrestore(&viommu->ep_lock, irqflags);

	if (vdomain)
		dev_err_ratelimited(viommu->dev,
				    "%s fault from EP %u at %#llx [%s%s%s]: reported to the IOMMU core (domain %u, %s)\n",
				    viommu_fault_reason(f->reason), f->endpoint,
				    addr,
				    f->flags & VIRTIO_IOMMU_FAULT_F_READ ? "R" : "",
				    f->flags & VIRTIO_IOMMU_FAULT_F_WRITE ? "W" : "",
				    f->flags & VIRTIO_IOMMU_FAULT_F_EXEC ? "X" : "",
				    vdomain->id, outcome);
	else
		dev_err_ratelimited(viommu->dev,
				    "%s fault from EP %u at %#llx: endpoint has no domain\n",
				    viommu_fault_reason(f->reason), f->endpoint,
				    addr);
}

static void viommu_event_done(struct virtqueue *vq)
{
	struct viommu_dev *viommu = vq->vdev->priv;
	struct virtio_iommu_fault *evt;
	struct viommu_fault_info info;
	struct scatterlist sg;
	unsigned long flags;
	unsigned int used;

	while ((evt = virtqueue_get_buf(vq, &used))) {
		if (viommu_decode_fault(evt, used, &info)) {
			spin_lock_irqsave(&viommu->ep_lock, flags);
			viommu->evstats.bad_events++;
			spin_unlock_irqrestore(&viommu->ep_lock, flags);
			dev_err_ratelimited(viommu->dev,
					    "malformed event (used length %u)\n",
					    used);
		} else {
			viommu_handle_fault(viommu, &info);
		}
		/* Give the buffer back, cleared */
		memset(evt, 0, sizeof(*evt));
		sg_init_one(&sg, evt, sizeof(*evt));
		if (virtqueue_add_inbuf(vq, &sg, 1, evt, GFP_ATOMIC))
			dev_err_ratelimited(viommu->dev,
					    "cannot return an event buffer\n");
	}
	virtqueue_kick(vq);
}

/* IOMMU API */

static struct viommu_domain *viommu_domain_new(void)
{
	struct viommu_domain *vdomain;

	vdomain = kzalloc(sizeof(*vdomain), GFP_KERNEL);
	if (!vdomain)
		return NULL;
	vdomain->stats.counts = alloc_percpu(struct viommu_domain_counts);
	if (!vdomain->stats.counts)
		goto err_free;
	if (viommu_maps_init(&vdomain->maps, GFP_KERNEL))
		goto err_counts;
	mutex_init(&vdomain->mutex);
	rwlock_init(&vdomain->replay_lock);
	vdomain->replayed_to = U64_MAX;
	INIT_LIST_HEAD(&vdomain->list);
	spin_lock_init(&vdomain->limbo_lock);
	INIT_LIST_HEAD(&vdomain->limbo);
	INIT_WORK(&vdomain->resend_work, viommu_resend_refused);
	return vdomain;

err_counts:
	free_percpu(vdomain->stats.counts);
err_free:
	kfree(vdomain);
	return NULL;
}

/* The per-CPU counts of @vdomain, summed */
static struct viommu_domain_counts
viommu_domain_counts(struct viommu_domain *vdomain)
{
	struct viommu_domain_counts sum = {};
	int cpu;

	for_each_possible_cpu(cpu) {
		const struct viommu_domain_counts *c =
			per_cpu_ptr(vdomain->stats.counts, cpu);

		sum.maps += READ_ONCE(c->maps);
		sum.unmaps += READ_ONCE(c->unmaps);
		sum.mapped_bytes += READ_ONCE(c->mapped_bytes);
		sum.unmapped_bytes += READ_ONCE(c->unmapped_bytes);
	}
	return sum;
}

/*
 * A domain ID for a new domain. Every bypass domain shares one: the device
 * keeps nothing for them but the bypass flag, and a device may offer fewer
 * IDs than the guest has groups (viommu_def_domain_type()).
 */
static int viommu_get_domain_id(struct viommu_dev *viommu, bool bypass)
{
	int id;

	mutex_lock(&viommu->ids_lock);
	if (bypass && viommu->bypass_refs) {
		viommu->bypass_refs++;
		id = viommu->bypass_id;
	} else {
		id = ida_alloc_range(&viommu->domain_ids, viommu->first_domain,
				     viommu->last_domain, GFP_KERNEL);
		if (id >= 0) {
			viommu->ids_used++;
			if (bypass) {
				viommu->bypass_id = id;
				viommu->bypass_refs = 1;
			}
		}
	}
	mutex_unlock(&viommu->ids_lock);
	return id;
}

static void viommu_put_domain_id(struct viommu_dev *viommu,
				 struct viommu_domain *vdomain)
{
	mutex_lock(&viommu->ids_lock);
	if (!vdomain->bypass || !--viommu->bypass_refs) {
		ida_free(&viommu->domain_ids, vdomain->id);
		viommu->ids_used--;
	}
	mutex_unlock(&viommu->ids_lock);
}

/*
 * Bind a domain to the device of @vdev: at allocation for a paging domain
 * allocated for a device, else at its first attach with vdomain->mutex held.
 * What the device cannot serve was said once, at probe.
 */
static int viommu_domain_finalise(struct viommu_endpoint *vdev,
				  struct viommu_domain *vdomain)
{
	struct viommu_dev *viommu = vdev->viommu;
	struct iommu_domain *domain = &vdomain->domain;
	bool identity = domain->type == IOMMU_DOMAIN_IDENTITY;
	bool bypass = identity && viommu->bypass;
	int ret;

	if (identity ? !viommu->identity : !viommu->paging)
		return -EOPNOTSUPP;
	ret = viommu_get_domain_id(viommu, bypass);
	if (ret < 0)
		return ret;

	vdomain->id = ret;
	vdomain->bypass = bypass;
	vdomain->map_flags = viommu->map_flags;
	domain->pgsize_bitmap = viommu->pgsize_bitmap;
	domain->geometry = viommu->geometry;
	/* What the table translates is all the DMA layer may hand out */
	domain->geometry.aperture_end = min_t(u64, domain->geometry.aperture_end,
					      VIOMMU_TABLE_LAST);

	if (identity && !bypass) {
		ret = viommu_map_identity(vdev, vdomain);
		if (ret) {
			viommu_put_domain_id(viommu, vdomain);
			return ret;
		}
	}
	/*
	 * A paging domain whose endpoint walks a table gets one; where it
	 * cannot (its ID is too wide an ASID, no memory), MAP/UNMAP mode
	 * serves it all the same. So does a domain allocated for no device
	 * and mapped before its first attach: its table holds those maps.
	 */
	if (!identity && vdev->table.format &&
	    !viommu_domain_counts(vdomain).maps) {
		ret = viommu_table_setup(vdomain, &vdev->table);
		if (ret)
			dev_warn_ratelimited(vdev->dev,
					     "domain %u in MAP/UNMAP mode: no %s table (%d)\n",
					     vdomain->id,
					     viommu_table_fmt_name(vdev->table.format),
					     ret);
	}
	vdomain->viommu = viommu;

	spin_lock(&viommu->domains_lock);
	list_add_tail(&vdomain->list, &viommu->domains);
	spin_unlock(&viommu->domains_lock);
	return 0;
}

static void viommu_domain_free(struct iommu_domain *domain)
{
	struct viommu_domain *vdomain = to_viommu_domain(domain);
	struct viommu_dev *viommu = vdomain->viommu;

	cancel_work_sync(&vdomain->resend_work);
	if (viommu) {
		/* Requests still queued for this domain must not outlive it */
		viommu_sync(viommu, false, false);
		viommu_forget_domain(viommu, vdomain);
		spin_lock(&viommu->domains_lock);
		list_del(&vdomain->list);
		spin_unlock(&viommu->domains_lock);
		viommu_put_domain_id(viommu, vdomain);
	}
	viommu_table_free(vdomain);
	viommu_maps_destroy(&vdomain->maps);
	mutex_destroy(&vdomain->mutex);
	free_percpu(vdomain->stats.counts);
	kfree(vdomain);
}

/*
 * DMA and VFIO domains. Allocated for a device, a domain is bound to its
 * IOMMU here, so that what cannot attach (no domain ID left, a granule the
 * device cannot serve) fails now and not in an attach the core must not see
 * fail; without one (iommu_domain_alloc()), at the first attach.
 */
static struct iommu_domain *viommu_domain_alloc_paging(struct device *dev)
{
	struct viommu_domain *vdomain = viommu_domain_new();
	int ret;

	if (!vdomain)
		return ERR_PTR(-ENOMEM);
	if (dev) {
		ret = viommu_domain_finalise(dev_iommu_priv_get(dev), vdomain);
		if (ret) {
			/* Not bound to the device: freed like any unbound domain */
			viommu_domain_free(&vdomain->domain);
			return ERR_PTR(ret);
		}
	}
	return &vdomain->domain;
}

/* Identity domains, bound at their first attach */
static struct iommu_domain *viommu_domain_alloc(unsigned int type)
{
	struct viommu_domain *vdomain;

	if (type != IOMMU_DOMAIN_IDENTITY)
		return NULL;
	vdomain = viommu_domain_new();
	return vdomain ? &vdomain->domain : NULL;
}

static void viommu_set_ep_domain(struct viommu_endpoint *vdev,
				 struct viommu_domain *vdomain)
{
	unsigned long flags;

	spin_lock_irqsave(&vdev->viommu->ep_lock, flags);
	vdev->vdomain = vdomain;
	spin_unlock_irqrestore(&vdev->viommu->ep_lock, flags);
}

static int viommu_send_detach(struct viommu_dev *viommu, u32 domain, u32 epid)
{
	union viommu_req_buf req;

	viommu_encode_detach(&req.detach, domain, epid);
	return viommu_send_sync(viommu, &req, NULL, sizeof(req.detach),
				VIOMMU_TAIL_LEN);
}

static void viommu_detach_dev(struct viommu_endpoint *vdev)
{
	struct iommu_fwspec *fwspec = dev_iommu_fwspec_get(vdev->dev);
	struct viommu_domain *vdomain = vdev->vdomain;
	unsigned int i;
	int ret;

	if (!vdomain)
		return;
	mutex_lock(&vdev->viommu->attach_mutex);
	for (i = 0; i < fwspec->num_ids; i++) {
		ret = viommu_send_detach(vdev->viommu, vdomain->id,
					 fwspec->ids[i]);
		if (ret)
			dev_err(vdev->dev,
				"DETACH of endpoint %u from domain %u failed: %d\n",
				fwspec->ids[i], vdomain->id, ret);
	}
	/*
	 * Counted out once the device has taken the DETACH: until then it
	 * translated the endpoint's DMA through the domain, and had to get
	 * the domain's unmaps. (It forgets the domain at its last endpoint's
	 * DETACH: see viommu_complete() for what it answers to requests
	 * queued behind.)
	 */
	mutex_lock(&vdomain->mutex);
	viommu_set_endpoints(vdomain, vdomain->nr_endpoints - 1);
	mutex_unlock(&vdomain->mutex);
	if (!vdev->posted)
		atomic_dec(&vdomain->nr_unposted);
	viommu_set_ep_domain(vdev, NULL);
	mutex_unlock(&vdev->viommu->attach_mutex);
}

static int viommu_attach_dev(struct iommu_domain *domain, struct device *dev)
{
	struct iommu_fwspec *fwspec = dev_iommu_fwspec_get(dev);
	struct viommu_endpoint *vdev = dev_iommu_priv_get(dev);
	struct viommu_domain *vdomain = to_viommu_domain(domain);
	struct viommu_domain *old = vdev->vdomain;
	struct viommu_dev *viommu = vdev->viommu;
	union viommu_req_buf req;
	unsigned int i, j;
	int ret = 0;

	if (old == vdomain)
		return 0;

	/*
	 * One endpoint moves at a time: until an endpoint is counted out of
	 * its old domain, below, nobody else may find that domain with no
	 * endpoint counted and no replay owed, although the device forgot it.
	 */
	mutex_lock(&viommu->attach_mutex);
	mutex_lock(&vdomain->mutex);
	if (!vdomain->viommu)
		ret = viommu_domain_finalise(vdev, vdomain);
	else if (vdomain->viommu != viommu)
		ret = -EINVAL;
	/* An endpoint that cannot walk the domain's table needs another */
	else if (viommu_is_table(vdomain) &&
		 !viommu_table_fits(vdomain, vdev))
		ret = -EINVAL;
	mutex_unlock(&vdomain->mutex);
	if (ret)
		goto out_unlock;

	/*
	 * Counted in before the ATTACH: a MAP queued from now on is notified,
	 * and the ATTACH's own notification sends those queued before it.
	 */
	if (!vdev->posted)
		atomic_inc(&vdomain->nr_unposted);

	mutex_lock(&vdomain->mutex);
	if (viommu_is_table(vdomain)) {
		ret = viommu_table_attach(vdomain, vdev);
		goto out_attached;
	}
	for (i = 0; i < fwspec->num_ids; i++) {
		viommu_encode_attach(&req.attach, vdomain->id, fwspec->ids[i],
				     vdomain->bypass ?
				     VIRTIO_IOMMU_ATTACH_F_BYPASS : 0);
		ret = viommu_send_sync(viommu, &req, NULL, sizeof(req.attach),
				       VIOMMU_TAIL_LEN);
		if (ret) {
			dev_err(dev, "ATTACH of endpoint %u to domain %u failed: %d\n",
				fwspec->ids[i], vdomain->id, ret);
			break;
		}
	}
	if (!ret && !vdomain->nr_endpoints) {
		/* First endpoint: the device has none of the domain's mappings */
		ret = viommu_replay_mappings(vdomain);
		if (ret)
			dev_err(dev, "replaying the mappings of domain %u failed: %d\n",
				vdomain->id, ret);
	} else if (!ret) {
		viommu_set_endpoints(vdomain, vdomain->nr_endpoints + 1);
	}
out_attached:
	if (ret) {
		/*
		 * Leave the endpoint in no domain rather than split between
		 * two: detach every ID from whichever domain it may be in.
		 */
		for (j = 0; j < fwspec->num_ids; j++) {
			viommu_send_detach(viommu, vdomain->id, fwspec->ids[j]);
			if (old)
				viommu_send_detach(viommu, old->id,
						   fwspec->ids[j]);
		}
	}
	mutex_unlock(&vdomain->mutex);
	/*
	 * The device detaches the endpoint from its old domain itself when it
	 * takes the ATTACH, and forgets that domain when the endpoint was its
	 * last. Until it had, the endpoint's DMA went through the old domain:
	 * its unmaps had to reach the device, and only now is the endpoint
	 * counted out of it. (See viommu_complete() for what the device
	 * answers to requests queued behind the ATTACH. The two domains'
	 * mutexes are never held together: no lock order to keep.)
	 */
	if (old) {
		mutex_lock(&old->mutex);
		viommu_set_endpoints(old, old->nr_endpoints - 1);
		mutex_unlock(&old->mutex);
	}
	/* The endpoint left the old domain, and is in the new one or none */
	if (!vdev->posted) {
		if (old)
			atomic_dec(&old->nr_unposted);
		if (ret)
			atomic_dec(&vdomain->nr_unposted);
	}
	viommu_set_ep_domain(vdev, ret ? NULL : vdomain);
out_unlock:
	mutex_unlock(&viommu->attach_mutex);
	return ret;
}

/*
 * Record a MAP and queue it if the device holds the domain's MAPs there
 * (without endpoints it has none: the first one's attach replays them, and
 * a replay under way sends those above the point it reached). The replay
 * lock held for reading, or vdomain->mutex.
 */
static int viommu_map_locked(struct viommu_domain *vdomain, u64 iova,
			     u64 last, phys_addr_t paddr, int prot, gfp_t gfp)
{
	u64 end;
	int ret;

	ret = viommu_add_mapping(vdomain, iova, last, paddr, prot, gfp);
	if (ret || !viommu_device_holds(vdomain, iova))
		return ret;
	ret = viommu_queue_map(vdomain, iova, last, paddr,
			       viommu_prot_flags(prot));
	if (ret)
		viommu_del_mappings(vdomain, iova, last, &end);
	return ret;
}

static int viommu_map_pages(struct iommu_domain *domain, unsigned long iova,
			    phys_addr_t paddr, size_t pgsize, size_t pgcount,
			    int prot, gfp_t gfp, size_t *mapped)
{
	struct viommu_domain *vdomain = to_viommu_domain(domain);
	size_t size = pgsize * pgcount;
	u64 last = (u64)iova + size - 1;
	unsigned long flags;
	int ret;

	if (vdomain->bypass)
		return -EINVAL;
	if (vdomain->viommu)
		this_cpu_inc(*vdomain->viommu->dma_maps);
	if (viommu_is_table(vdomain))
		return viommu_table_map(vdomain, iova, paddr, pgsize, pgcount,
					prot, gfp, mapped);
	if (viommu_prot_flags(prot) & ~vdomain->map_flags)
		return -EOPNOTSUPP;

	read_lock_irqsave(&vdomain->replay_lock, flags);
	ret = viommu_map_locked(vdomain, iova, last, paddr, prot,
				(gfp & ~__GFP_DIRECT_RECLAIM) | __GFP_NOWARN);
	read_unlock_irqrestore(&vdomain->replay_lock, flags);
	/*
	 * A new table page wanted reclaim: sleep for it under the mutex,
	 * which keeps a replay out too.
	 */
	if (ret == -ENOMEM && gfpflags_allow_blocking(gfp)) {
		mutex_lock(&vdomain->mutex);
		ret = viommu_map_locked(vdomain, iova, last, paddr, prot, gfp);
		mutex_unlock(&vdomain->mutex);
	}
	if (!ret)
		*mapped = size;
	return ret;
}

static size_t viommu_unmap_pages(struct iommu_domain *domain,
				 unsigned long iova, size_t pgsize,
				 size_t pgcount,
				 struct iommu_iotlb_gather *gather)
{
	struct viommu_domain *vdomain = to_viommu_domain(domain);
	u64 last = (u64)iova + pgsize * pgcount - 1;
	unsigned long flags;
	size_t removed = 0;
	u64 end;
	int ret;

	if (viommu_is_table(vdomain))
		return viommu_table_unmap(vdomain, iova, pgsize, pgcount,
					  gather);
	read_lock_irqsave(&vdomain->replay_lock, flags);
	if (!viommu_maps_extent(&vdomain->maps, iova, last, &end))
		goto out_unlock;
	/*
	 * Queued, not sent: iotlb_sync() sends it for a strict domain, the
	 * flush queue's flush_iotlb_all() for a lazy one. An UNMAP that
	 * cannot be queued unmaps nothing: the caller must not free pages
	 * the device still translates to.
	 */
	if (viommu_device_holds(vdomain, iova)) {
		ret = viommu_queue_unmap(vdomain, iova, end);
		if (ret) {
			dev_err_ratelimited(vdomain->viommu->dev,
					    "UNMAP %#lx-%#llx in domain %u not queued: %d\n",
					    iova, end, vdomain->id, ret);
			goto out_unlock;
		}
	}
	removed = viommu_maps_remove(&vdomain->maps, iova, end);
	viommu_count_unmap(vdomain, removed);
out_unlock:
	read_unlock_irqrestore(&vdomain->replay_lock, flags);
	return removed;
}

static phys_addr_t viommu_iova_to_phys(struct iommu_domain *domain,
				       dma_addr_t iova)
{
	return gpt_iova_to_phys(&to_viommu_domain(domain)->maps.table, iova);
}

static int viommu_iotlb_sync_map(struct iommu_domain *domain,
				 unsigned long iova, size_t size)
{
	struct viommu_domain *vdomain = to_viommu_domain(domain);
	int ret;

	if (viommu_is_table(vdomain))
		return viommu_table_sync_map(vdomain, iova, size);
	/* Also called while the core builds direct mappings, before attach */
	if (!vdomain->viommu || !READ_ONCE(vdomain->nr_endpoints) || !size)
		return 0;
	/*
	 * Posted MAP: the device fetches the MAPs before it faults. A MAP it
	 * refuses is reported when the answer is collected (see
	 * viommu_domain_request_failed()), and sent again once an UNMAP made
	 * room (viommu_resend_refused()); until then, MAPs are notified and
	 * fail here.
	 */
	if (vdomain->viommu->posted && !atomic_read(&vdomain->nr_unposted) &&
	    !atomic_read(&vdomain->maps.failed)) {
		this_cpu_inc(*vdomain->viommu->posted_syncs);
		return 0;
	}
	ret = viommu_sync(vdomain->viommu, false,
			  viommu_domain_combines(vdomain));
	if (ret)
		return ret;
	return viommu_maps_error(&vdomain->maps, iova, (u64)iova + size - 1);
}

static void viommu_flush_iotlb_all(struct iommu_domain *domain)
{
	struct viommu_domain *vdomain = to_viommu_domain(domain);

	if (viommu_is_table(vdomain)) {
		viommu_table_flush_all(vdomain);
		return;
	}
	if (!vdomain->viommu || !READ_ONCE(vdomain->nr_endpoints) ||
	    viommu_sync(vdomain->viommu, false,
			viommu_domain_combines(vdomain)))
		return;
	/* The UNMAPs sent made room for posted MAPs the device refused */
	if (unlikely(atomic_read(&vdomain->maps.failed)) &&
	    vdomain->viommu->posted)
		queue_work(system_unbound_wq, &vdomain->resend_work);
}

static void viommu_iotlb_sync(struct iommu_domain *domain,
			      struct iommu_iotlb_gather *gather)
{
	struct viommu_domain *vdomain = to_viommu_domain(domain);

	if (viommu_is_table(vdomain))
		viommu_table_sync(vdomain, gather);
	else
		viommu_flush_iotlb_all(domain);
}

static void viommu_get_resv_regions(struct device *dev, struct list_head *head)
{
	struct viommu_endpoint *vdev = dev_iommu_priv_get(dev);
	struct iommu_resv_region *entry, *copy, *msi = NULL;

	list_for_each_entry(entry, &vdev->resv_regions, list) {
		if (entry->type == IOMMU_RESV_MSI)
			msi = entry;
		copy = kmemdup(entry, sizeof(*entry), GFP_KERNEL);
		if (!copy)
			return;
		list_add_tail(&copy->list, head);
	}

	/* No doorbell window that bypasses translation: dma-iommu maps one */
	if (!msi) {
		copy = iommu_alloc_resv_region(VIOMMU_SW_MSI_BASE,
					       VIOMMU_SW_MSI_SIZE,
					       IOMMU_WRITE | IOMMU_NOEXEC |
					       IOMMU_MMIO,
					       IOMMU_RESV_SW_MSI, GFP_KERNEL);
		if (!copy)
			return;
		list_add_tail(&copy->list, head);
	}
	iommu_dma_get_resv_regions(dev, head);
}

static struct virtio_driver virtio_iommu_drv;

static int viommu_match_node(struct device *dev, const void *data)
{
	return device_match_fwnode(dev->parent, data);
}

static struct viommu_dev *viommu_get_by_fwnode(struct fwnode_handle *fwnode)
{
	struct device *dev = driver_find_device(&virtio_iommu_drv.driver, NULL,
						fwnode, viommu_match_node);

	put_device(dev);
	return dev ? dev_to_virtio(dev)->priv : NULL;
}

static void viommu_forget_endpoint(struct viommu_endpoint *vdev)
{
	struct iommu_fwspec *fwspec = dev_iommu_fwspec_get(vdev->dev);
	struct viommu_dev *viommu = vdev->viommu;
	unsigned long flags;
	unsigned int i;

	for (i = 0; i < fwspec->num_ids; i++)
		xa_cmpxchg(&viommu->endpoints, fwspec->ids[i], vdev, NULL, 0);
	/* Wait out an event handler that found @vdev before it went */
	spin_lock_irqsave(&viommu->ep_lock, flags);
	spin_unlock_irqrestore(&viommu->ep_lock, flags);
}

static struct iommu_device *viommu_probe_device(struct device *dev)
{
	struct iommu_fwspec *fwspec = dev_iommu_fwspec_get(dev);
	struct viommu_endpoint *vdev;
	struct viommu_dev *viommu;
	unsigned int i;
	int ret;

	viommu = viommu_get_by_fwnode(fwspec->iommu_fwnode);
	/* Neither kind of domain: viommu_decide_service() said why */
	if (!viommu || (!viommu->paging && !viommu->identity))
		return ERR_PTR(-ENODEV);
	if (!fwspec->num_ids)
		return ERR_PTR(-EINVAL);

	vdev = kzalloc(sizeof(*vdev), GFP_KERNEL);
	if (!vdev)
		return ERR_PTR(-ENOMEM);
	vdev->dev = dev;
	vdev->viommu = viommu;
	INIT_LIST_HEAD(&vdev->resv_regions);
	dev_iommu_priv_set(dev, vdev);

	/* Every ID of the device: its functions may differ in what they need */
	for (i = 0; viommu->probe_size && i < fwspec->num_ids; i++) {
		ret = viommu_probe_endpoint(viommu, vdev, fwspec->ids[i], !i);
		if (ret)
			goto err_free;
	}

	for (i = 0; i < fwspec->num_ids; i++) {
		ret = xa_insert(&viommu->endpoints, fwspec->ids[i], vdev,
				GFP_KERNEL);
		/* An ID two devices share (an alias) reports to the first */
		if (ret && ret != -EBUSY)
			goto err_forget;
	}
	return &viommu->iommu;

err_forget:
	viommu_forget_endpoint(vdev);
err_free:
	iommu_put_resv_regions(dev, &vdev->resv_regions);
	dev_iommu_priv_set(dev, NULL);
	kfree(vdev);
	return ERR_PTR(ret);
}

static void viommu_release_device(struct device *dev)
{
	struct viommu_endpoint *vdev = dev_iommu_priv_get(dev);

	viommu_forget_endpoint(vdev);
	viommu_detach_dev(vdev);
	iommu_put_resv_regions(dev, &vdev->resv_regions);
	kfree(vdev);
}

static struct iommu_group *viommu_device_group(struct device *dev)
{
	if (dev_is_pci(dev))
		return pci_device_group(dev);
	return generic_device_group(dev);
}

static int viommu_of_xlate(struct device *dev,
			   const struct of_phandle_args *args)
{
	return iommu_fwspec_add_ids(dev, args->args, 1);
}

static bool viommu_capable(struct device *dev, enum iommu_cap cap)
{
	switch (cap) {
	case IOMMU_CAP_CACHE_COHERENCY:
	case IOMMU_CAP_DEFERRED_FLUSH:
		return true;
	default:
		return false;
	}
}

/*
 * The default domain for a group: identity where the device cannot serve
 * DMA domains, or where its domain IDs run short and bypass, which shares
 * one ID, is the only domain left that can attach. Else the core's choice.
 */
static int viommu_def_domain_type(struct device *dev)
{
	struct viommu_endpoint *vdev = dev_iommu_priv_get(dev);
	struct viommu_dev *viommu = vdev->viommu;
	u64 ids = (u64)viommu->last_domain - viommu->first_domain + 1;
	bool short_ids;

	if (!viommu->paging)
		return viommu->identity ? IOMMU_DOMAIN_IDENTITY : 0;
	if (!viommu->bypass)
		return 0;

	mutex_lock(&viommu->ids_lock);
	/* An ID for the DMA domain, and one kept for bypass */
	short_ids = ids - viommu->ids_used < (viommu->bypass_refs ? 1 : 2);
	if (short_ids && !viommu->ids_warned) {
		viommu->ids_warned = true;
		dev_warn(viommu->dev,
			 "domain IDs %u-%u run short: %s and endpoints probed after it bypass the IOMMU\n",
			 viommu->first_domain, viommu->last_domain,
			 dev_name(dev));
	}
	mutex_unlock(&viommu->ids_lock);
	return short_ids ? IOMMU_DOMAIN_IDENTITY : 0;
}

static struct iommu_ops viommu_ops = {
	.capable		= viommu_capable,
	.domain_alloc		= viommu_domain_alloc,
	.domain_alloc_paging	= viommu_domain_alloc_paging,
	.def_domain_type	= viommu_def_domain_type,
	.probe_device		= viommu_probe_device,
	.release_device		= viommu_release_device,
	.device_group		= viommu_device_group,
	.get_resv_regions	= viommu_get_resv_regions,
	.of_xlate		= viommu_of_xlate,
	.owner			= THIS_MODULE,
	.default_domain_ops = &(const struct iommu_domain_ops) {
		.attach_dev		= viommu_attach_dev,
		.map_pages		= viommu_map_pages,
		.unmap_pages		= viommu_unmap_pages,
		.iova_to_phys		= viommu_iova_to_phys,
		.flush_iotlb_all	= viommu_flush_iotlb_all,
		.iotlb_sync		= viommu_iotlb_sync,
		.iotlb_sync_map		= viommu_iotlb_sync_map,
		.free			= viommu_domain_free,
	}
};

/* debugfs */

static int viommu_stats_show(struct seq_file *s, void *unused)
{
	struct viommu_dev *viommu = s->private;
	struct viommu_event_stats ev;
	struct viommu_domain *vdomain;
	u64 exit_ns, dma_maps = 0, posted_syncs = 0, dma_reqs;
	struct viommu_stats st;
	unsigned int unkicked;
	unsigned long flags;
	int cpu;

	spin_lock_irqsave(&viommu->rq_lock, flags);
	st = viommu->stats;
	exit_ns = viommu->exit_ns;
	unkicked = viommu->unkicked;
	spin_unlock_irqrestore(&viommu->rq_lock, flags);
	spin_lock_irqsave(&viommu->ep_lock, flags);
	ev = viommu->evstats;
	spin_unlock_irqrestore(&viommu->ep_lock, flags);

	seq_printf(s, "attach %llu\ndetach %llu\nmap %llu\nunmap %llu\nprobe %llu\n",
		   st.requests[VIRTIO_IOMMU_T_ATTACH],
		   st.requests[VIRTIO_IOMMU_T_DETACH],
		   st.requests[VIRTIO_IOMMU_T_MAP],
		   st.requests[VIRTIO_IOMMU_T_UNMAP],
		   st.requests[VIRTIO_IOMMU_T_PROBE]);
	seq_printf(s, "attach_table %llu\ninvalidate %llu\n",
		   st.requests[VIRTIO_IOMMU_T_ATTACH_TABLE],
		   st.requests[VIRTIO_IOMMU_T_INVALIDATE]);
	/* What the DMA path costs in requests, whatever the mode */
	for_each_possible_cpu(cpu) {
		dma_maps += *per_cpu_ptr(viommu->dma_maps, cpu);
		posted_syncs += *per_cpu_ptr(viommu->posted_syncs, cpu);
	}
	dma_reqs = st.requests[VIRTIO_IOMMU_T_MAP] +
		   st.requests[VIRTIO_IOMMU_T_UNMAP] +
		   st.requests[VIRTIO_IOMMU_T_INVALIDATE];
	seq_printf(s, "mode %s\ndma_maps %llu\nrequests_per_1000_maps %llu\n",
		   viommu->tables ? "page-table" : "map-unmap", dma_maps,
		   dma_maps ? div64_u64(dma_reqs * 1000, dma_maps) : 0);
	seq_printf(s, "posted %s\nposted_syncs %llu\nunkicked %u\n",
		   viommu->posted ? "yes" : "no", posted_syncs, unkicked);
	seq_printf(s, "errors %llu\nbad_answers %llu\ndomain_gone %llu\n",
		   st.errors, st.bad_answers, st.domain_gone);
	seq_printf(s, "kicks %llu\nkicked_requests %llu\nkicks_unneeded %llu\n",
		   st.kicks, st.kicked_requests, st.kicks_unneeded);
	seq_printf(s, "combine_waits %llu\ncombine_joins %llu\n",
		   st.combine_waits, st.combine_joins);
	seq_printf(s, "combine_wait_ns %llu\nexit_ns %llu\n",
		   st.combine_wait_ns, exit_ns);
	seq_printf(s, "notify_ns %llu\nanswer_wait_ns %llu\n",
		   st.notify_ns, st.answer_wait_ns);
	seq_printf(s, "combine_wait_lt2us %llu\ncombine_wait_2to4us %llu\ncombine_wait_4to8us %llu\ncombine_wait_8to16us %llu\ncombine_wait_ge16us %llu\ncombine_overruns %llu\n",
		   st.combine_wait_hist[0], st.combine_wait_hist[1],
		   st.combine_wait_hist[2], st.combine_wait_hist[3],
		   st.combine_wait_hist[4], st.combine_overruns);
	seq_printf(s, "requests_per_kick_x100 %llu\n",
		   st.kicks ? div64_u64(st.kicked_requests * 100, st.kicks) : 0);
	seq_printf(s, "sleeps %llu\npolls %llu\nlate_waits %llu\ngave_up %llu\nslot_waits %llu\n",
		   st.sleeps, st.polls, st.late_waits, st.gave_up,
		   st.slot_waits);
	seq_printf(s, "faults %llu\nfaults_reported %llu\nfaults_unknown_endpoint %llu\nbad_events %llu\n",
		   ev.faults, ev.reported, ev.unknown_ep, ev.bad_events);

	spin_lock(&viommu->domains_lock);
	list_for_each_entry(vdomain, &viommu->domains, list) {
		struct viommu_domain_counts n = viommu_domain_counts(vdomain);

		seq_printf(s, "domain %u type=%s endpoints=%u maps=%llu unmaps=%llu mapped_bytes=%llu unmapped_bytes=%llu errors=%llu faults=%llu table_pages=%ld mode=%s format=%s invalidates=%llu invalidates_map=%llu invalidates_skipped=%llu invalidates_posted=%llu resent=%llu\n",
			   vdomain->id,
			   vdomain->bypass ? "bypass" :
			   vdomain->domain.type == IOMMU_DOMAIN_IDENTITY ?
			   "identity" :
			   vdomain->domain.type == IOMMU_DOMAIN_UNMANAGED ?
			   "unmanaged" :
			   vdomain->domain.type == IOMMU_DOMAIN_DMA_FQ ?
			   "dma-lazy" : "dma-strict",
			   READ_ONCE(vdomain->nr_endpoints),
			   n.maps, n.unmaps, n.mapped_bytes, n.unmapped_bytes,
			   atomic64_read(&vdomain->stats.errors),
			   vdomain->stats.faults,
			   atomic_long_read(&vdomain->maps.table.nr_tables),
			   viommu_is_table(vdomain) ? "table" : "map",
			   viommu_table_fmt_name(vdomain->table.format),
			   atomic64_read(&vdomain->stats.invalidates),
			   atomic64_read(&vdomain->stats.invalidates_map),
			   atomic64_read(&vdomain->stats.invalidates_skipped),
			   atomic64_read(&vdomain->stats.invalidates_posted),
			   atomic64_read(&vdomain->stats.resent));
	}
	spin_unlock(&viommu->domains_lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(viommu_stats);

/* Device */

static int viommu_init_vqs(struct viommu_dev *viommu)
{
	struct virtqueue_info vqs_info[] = {
		{ "request", viommu_request_done },
		{ "event", viommu_event_done },
	};

	return virtio_find_vqs(viommu->vdev, VIOMMU_NR_VQS, viommu->vqs,
			       vqs_info, NULL);
}

static int viommu_fill_evtq(struct viommu_dev *viommu)
{
	struct virtqueue *vq = viommu->vqs[VIOMMU_EVENT_VQ];
	struct scatterlist sg;
	unsigned int i;
	int ret;

	viommu->nr_events = vq->num_free;
	viommu->events = devm_kcalloc(viommu->dev, viommu->nr_events,
				      sizeof(*viommu->events), GFP_KERNEL);
	if (!viommu->events)
		return -ENOMEM;
	for (i = 0; i < viommu->nr_events; i++) {
		sg_init_one(&sg, &viommu->events[i], sizeof(*viommu->events));
		ret = virtqueue_add_inbuf(vq, &sg, 1, &viommu->events[i],
					  GFP_KERNEL);
		if (ret)
			return ret;
	}
	virtqueue_kick(vq);
	return 0;
}

/* The configuration fields the driver uses */
struct viommu_config {
	u64	pgsize_bitmap;
	u64	input_start;
	u64	input_end;
	u32	first_domain;
	u32	last_domain;
	u32	probe_size;
};

static int viommu_read_config(struct virtio_device *vdev,
			      struct viommu_config *cfg)
{
	struct device *dev = &vdev->dev;

	*cfg = (struct viommu_config) {
		.input_end	= ULLONG_MAX,
		.last_domain	= U32_MAX,
	};
	virtio_cread_le(vdev, struct virtio_iommu_config, page_size_mask,
			&cfg->pgsize_bitmap);
	virtio_cread_le_feature(vdev, VIRTIO_IOMMU_F_INPUT_RANGE,
				struct virtio_iommu_config, input_range.start,
				&cfg->input_start);
	virtio_cread_le_feature(vdev, VIRTIO_IOMMU_F_INPUT_RANGE,
				struct virtio_iommu_config, input_range.end,
				&cfg->input_end);
	virtio_cread_le_feature(vdev, VIRTIO_IOMMU_F_DOMAIN_RANGE,
				struct virtio_iommu_config, domain_range.start,
				&cfg->first_domain);
	virtio_cread_le_feature(vdev, VIRTIO_IOMMU_F_DOMAIN_RANGE,
				struct virtio_iommu_config, domain_range.end,
				&cfg->last_domain);
	virtio_cread_le_feature(vdev, VIRTIO_IOMMU_F_PROBE,
				struct virtio_iommu_config, probe_size,
				&cfg->probe_size);

	if (!cfg->pgsize_bitmap) {
		dev_err(dev, "page_size_mask is 0\n");
		return -EINVAL;
	}
	if (cfg->input_start > cfg->input_end) {
		dev_err(dev, "empty input range %#llx-%#llx\n",
			cfg->input_start, cfg->input_end);
		return -EINVAL;
	}
	/* Domain IDs come from an IDA, which hands out ints */
	cfg->last_domain = min_t(u32, cfg->last_domain, INT_MAX);
	if (cfg->first_domain > cfg->last_domain) {
		dev_err(dev, "empty domain range %u-%u\n", cfg->first_domain,
			cfg->last_domain);
		return -EINVAL;
	}
	if (cfg->probe_size > VIOMMU_MAX_PROBE_SIZE) {
		dev_err(dev, "probe_size %u is too large\n", cfg->probe_size);
		return -EINVAL;
	}
	return 0;
}

static int viommu_apply_config(struct viommu_dev *viommu)
{
	struct viommu_config cfg;
	int ret;

	ret = viommu_read_config(viommu->vdev, &cfg);
	if (ret)
		return ret;
	viommu->pgsize_bitmap = cfg.pgsize_bitmap;
	viommu->geometry = (struct iommu_domain_geometry) {
		.aperture_start	= cfg.input_start,
		.aperture_end	= cfg.input_end,
		.force_aperture	= true,
	};
	viommu->first_domain = cfg.first_domain;
	viommu->last_domain = cfg.last_domain;
	viommu->probe_size = cfg.probe_size;
	viommu->tables = virtio_has_feature(viommu->vdev,
					    VIRTIO_IOMMU_F_ATTACH_TABLE);
	viommu->posted = virtio_has_feature(viommu->vdev,
					    VIRTIO_IOMMU_F_POSTED_MAP);
	viommu->map_flags = VIRTIO_IOMMU_MAP_F_READ | VIRTIO_IOMMU_MAP_F_WRITE;
	if (virtio_has_feature(viommu->vdev, VIRTIO_IOMMU_F_MMIO))
		viommu->map_flags |= VIRTIO_IOMMU_MAP_F_MMIO;
	return 0;
}

/*
 * What the device lets the driver serve, decided once, and said once when it
 * is not everything. A paging domain maps CPU pages for the DMA API and VFIO:
 * it needs a granule no larger than PAGE_SIZE, and one its table, which keeps
 * 4K pages, can record. An identity domain bypasses the device where the
 * device allows it, else maps memory 1:1 in such a table.
 */
static void viommu_decide_service(struct viommu_dev *viommu)
{
	u64 granule = 1ULL << __ffs64(viommu->pgsize_bitmap);
	bool table = granule >= SZ_4K &&
		     viommu->geometry.aperture_start <= VIOMMU_TABLE_LAST;
	const char *what;

	viommu->bypass = virtio_has_feature(viommu->vdev,
					    VIRTIO_IOMMU_F_BYPASS_CONFIG);
	viommu->paging = table && granule <= PAGE_SIZE;
	viommu->identity = viommu->bypass || table;
	if (viommu->paging)
		return;

	what = viommu->bypass ? "bypass the IOMMU" :
	       viommu->identity ? "are identity-mapped" : "are refused";
	if (granule > PAGE_SIZE || granule < SZ_4K)
		dev_warn(viommu->dev,
			 "granule %#llx is %s: no DMA or VFIO domains, endpoints %s\n",
			 granule, granule > PAGE_SIZE ?
			 "larger than a CPU page" : "smaller than 4K", what);
	else
		dev_warn(viommu->dev,
			 "input range starts above %u bits: no DMA or VFIO domains, endpoints %s\n",
			 VIOMMU_TABLE_BITS, what);
}

static int viommu_probe(struct virtio_device *vdev)
{
	struct device *dev = &vdev->dev;
	struct viommu_dev *viommu;
	int ret;

	if (!virtio_has_feature(vdev, VIRTIO_F_VERSION_1) ||
	    !virtio_has_feature(vdev, VIRTIO_IOMMU_F_MAP_UNMAP)) {
		dev_err(dev, "needs VIRTIO_F_VERSION_1 and MAP_UNMAP\n");
		return -ENODEV;
	}

	viommu = devm_kzalloc(dev, sizeof(*viommu), GFP_KERNEL);
	if (!viommu)
		return -ENOMEM;
	/* Counted per CPU: the map path shares no cache line for it */
	viommu->dma_maps = devm_alloc_percpu(dev, u64);
	viommu->posted_syncs = devm_alloc_percpu(dev, u64);
	if (!viommu->dma_maps || !viommu->posted_syncs)
		return -ENOMEM;
	viommu->dev = dev;
	viommu->vdev = vdev;
	spin_lock_init(&viommu->rq_lock);
	INIT_LIST_HEAD(&viommu->free_slots);
	INIT_LIST_HEAD(&viommu->inflight);
	init_waitqueue_head(&viommu->rq_wait);
	viommu->last_cpu = -1;
	mutex_init(&viommu->probe_mutex);
	mutex_init(&viommu->attach_mutex);
	spin_lock_init(&viommu->ep_lock);
	xa_init(&viommu->endpoints);
	mutex_init(&viommu->ids_lock);
	ida_init(&viommu->domain_ids);
	spin_lock_init(&viommu->domains_lock);
	INIT_LIST_HEAD(&viommu->domains);
	/* The queue callbacks find the device here */
	vdev->priv = viommu;

	ret = viommu_apply_config(viommu);
	if (ret)
		return ret;
	viommu_decide_service(viommu);
	ret = viommu_init_vqs(viommu);
	if (ret)
		return ret;
	ret = viommu_init_slots(viommu);
	if (ret)
		goto err_del_vqs;

	viommu_ops.pgsize_bitmap = viommu->pgsize_bitmap;
	virtio_device_ready(vdev);

	ret = viommu_fill_evtq(viommu);
	if (ret)
		goto err_reset;

	viommu->debugfs = debugfs_create_dir(dev_name(dev), viommu_debugfs_root);
	debugfs_create_file("stats", 0444, viommu->debugfs, viommu,
			    &viommu_stats_fops);

	ret = iommu_device_sysfs_add(&viommu->iommu, dev, NULL, "%s",
				     virtio_bus_name(vdev));
	if (ret)
		goto err_debugfs;
	ret = iommu_device_register(&viommu->iommu, &viommu_ops,
				    vdev->dev.parent);
	if (ret)
		goto err_sysfs;

	dev_info(dev, "input range %#llx-%#llx, page sizes %#llx, domains %u-%u, %u request slots%s, %s\n",
		 viommu->geometry.aperture_start, viommu->geometry.aperture_end,
		 viommu->pgsize_bitmap, viommu->first_domain,
		 viommu->last_domain, viommu->nr_slots,
		 virtio_has_feature(vdev, VIRTIO_IOMMU_F_BYPASS_CONFIG) ?
		 ", bypass domains" : "",
		 viommu->tables ? "page tables where endpoints walk them" :
		 map_unmap && virtio_has_feature(vdev, VIRTIO_IOMMU_F_PROBE) ?
		 "MAP/UNMAP mode (virtio_iommu.map_unmap=1)" :
		 !dev_is_dma_coherent(vdev->dev.parent) ?
		 "MAP/UNMAP mode (the device's DMA is not coherent)" :
		 "MAP/UNMAP mode");
	return 0;

err_sysfs:
	iommu_device_sysfs_remove(&viommu->iommu);
err_debugfs:
	debugfs_remove_recursive(viommu->debugfs);
err_reset:
	virtio_reset_device(vdev);
err_del_vqs:
	vdev->config->del_vqs(vdev);
	return ret;
}

/*
 * Domains outlive the device when their owner (VFIO, iommufd) still holds
 * them: they keep their table, send nothing more and never look at the
 * device again, which goes away with this driver's devres. (An owner
 * freeing its domain while the device is being removed is not covered.)
 */
static void viommu_orphan_domains(struct viommu_dev *viommu)
{
	struct viommu_domain *vdomain, *next;
	unsigned long flags;

	spin_lock(&viommu->domains_lock);
	list_for_each_entry_safe(vdomain, next, &viommu->domains, list) {
		write_lock_irqsave(&vdomain->replay_lock, flags);
		vdomain->nr_endpoints = 0;
		vdomain->viommu = NULL;
		write_unlock_irqrestore(&vdomain->replay_lock, flags);
		list_del_init(&vdomain->list);
	}
	spin_unlock(&viommu->domains_lock);
}

static void viommu_remove(struct virtio_device *vdev)
{
	struct viommu_dev *viommu = vdev->priv;

	/* Unregistering releases the endpoints, which unlink from sysfs */
	iommu_device_unregister(&viommu->iommu);
	iommu_device_sysfs_remove(&viommu->iommu);
	debugfs_remove_recursive(viommu->debugfs);
	/*
	 * No answer comes after the reset, and a wait ends only with its
	 * answer or a broken queue (viommu_wait()): break the queues, and
	 * wake sleepers to see it, before they go.
	 */
	virtio_break_device(vdev);
	wake_up_all(&viommu->rq_wait);
	virtio_reset_device(vdev);
	vdev->config->del_vqs(vdev);
	viommu_orphan_domains(viommu);
	ida_destroy(&viommu->domain_ids);
	xa_destroy(&viommu->endpoints);
	dev_info(&vdev->dev, "device removed\n");
}

/*
 * Every request has two buffers (driver-written, device-written). With
 * indirect descriptors the ring would allocate a table for each: refuse
 * them, so that no request allocates.
 */
static int viommu_validate(struct virtio_device *vdev)
{
	__virtio_clear_bit(vdev, VIRTIO_RING_F_INDIRECT_DESC);
	/*
	 * Tables are walked per endpoint in a format its PROBE names: no
	 * PROBE, no tables. The rst asks the device for both; a device
	 * that offers tables without PROBE is served in MAP/UNMAP mode.
	 */
	if (map_unmap || !virtio_has_feature(vdev, VIRTIO_IOMMU_F_PROBE))
		__virtio_clear_bit(vdev, VIRTIO_IOMMU_F_ATTACH_TABLE);
	/*
	 * The tables are written with plain stores and no cache maintenance:
	 * only a device whose DMA snoops the CPU caches reads what was
	 * written. Another is served in MAP/UNMAP mode.
	 */
	if (!dev_is_dma_coherent(vdev->dev.parent))
		__virtio_clear_bit(vdev, VIRTIO_IOMMU_F_ATTACH_TABLE);
	/* Posted MAP is a PROBE property too */
	if (!posted_map || !virtio_has_feature(vdev, VIRTIO_IOMMU_F_PROBE))
		__virtio_clear_bit(vdev, VIRTIO_IOMMU_F_POSTED_MAP);
	return 0;
}

/*
 * The only field the driver may write is bypass, and the driver leaves it
 * alone; everything else was negotiated at probe and is in use by live
 * domains. A change is reported, never applied.
 */
static void viommu_config_changed(struct virtio_device *vdev)
{
	struct viommu_dev *viommu = vdev->priv;
	struct viommu_config now;

	if (!viommu || viommu_read_config(vdev, &now))
		return;
	if (now.pgsize_bitmap != viommu->pgsize_bitmap ||
	    now.input_start != viommu->geometry.aperture_start ||
	    now.input_end != viommu->geometry.aperture_end ||
	    now.first_domain != viommu->first_domain ||
	    now.last_domain != viommu->last_domain ||
	    now.probe_size != viommu->probe_size)
		dev_warn(&vdev->dev,
			 "device changed its configuration; keeping the one read at probe\n");
}

static unsigned int features[] = {
	VIRTIO_IOMMU_F_MAP_UNMAP,
	VIRTIO_IOMMU_F_INPUT_RANGE,
	VIRTIO_IOMMU_F_DOMAIN_RANGE,
	VIRTIO_IOMMU_F_PROBE,
	VIRTIO_IOMMU_F_MMIO,
	VIRTIO_IOMMU_F_BYPASS_CONFIG,
	VIRTIO_IOMMU_F_ATTACH_TABLE,
	VIRTIO_IOMMU_F_POSTED_MAP,
};

static const struct virtio_device_id id_table[] = {
	{ VIRTIO_ID_IOMMU, VIRTIO_DEV_ANY_ID },
	{ 0 },
};
MODULE_DEVICE_TABLE(virtio, id_table);

static struct virtio_driver virtio_iommu_drv = {
	.driver.name		= KBUILD_MODNAME,
	.id_table		= id_table,
	.feature_table		= features,
	.feature_table_size	= ARRAY_SIZE(features),
	.validate		= viommu_validate,
	.probe			= viommu_probe,
	.remove			= viommu_remove,
	.config_changed		= viommu_config_changed,
};

static int __init viommu_init(void)
{
	int ret;

	viommu_debugfs_root = debugfs_create_dir("virtio-iommu", NULL);
	viommu_queue_debugfs(viommu_debugfs_root);
	ret = register_virtio_driver(&virtio_iommu_drv);
	if (ret)
		debugfs_remove_recursive(viommu_debugfs_root);
	return ret;
}
module_init(viommu_init);

static void __exit viommu_exit(void)
{
	unregister_virtio_driver(&virtio_iommu_drv);
	debugfs_remove_recursive(viommu_debugfs_root);
}
module_exit(viommu_exit);

MODULE_DESCRIPTION("virtio-iommu guest driver");
MODULE_LICENSE("GPL");
