// SPDX-License-Identifier: GPL-2.0-only
/*
 * vhost-iommu: endpoints that are devices assigned with VFIO.
 *
 * Their DMA does not come through vhost: the host IOMMU translates it, with
 * the container's MAP_DMA mappings (the guest's memory, stage 2) and, once
 * the guest attached the endpoint to a domain, that domain as stage 1
 * (vfio_file_nest(), Documentation/iommu/vfio-nesting.rst): the guest's
 * own table for a table domain, or the MAPs of a MAP domain, which the
 * container reads through vhost_iommu_dom_lookup().  So ATTACH,
 * ATTACH_TABLE, MAP, UNMAP and INVALIDATE of such a domain reach the
 * container from the worker that serves them, and the group's faults come
 * back as fault events, with no trip to the VMM.
 */
#include <linux/file.h>
#include <linux/slab.h>
#include <linux/vfio.h>

#include "iommu.h"

/**
 * struct vhost_iommu_vfio - the VFIO group of an endpoint
 * @file: the group's file, held while the endpoint exists
 * @v: the device, for fault events
 * @endpoint: the endpoint's ID, for fault events
 * @nested: the group has a stage 1 of ours (under v->lock)
 * @blocked: that stage 1 maps nothing: the endpoint is detached and the
 *           config's bypass is off (under v->lock; read by faults)
 * @dom: the domain it is, for the container's lookups in a MAP domain
 */
struct vhost_iommu_vfio {
	struct file *file;
	struct vhost_iommu *v;
	u32 endpoint;
	bool nested;
	bool blocked;
	struct vhost_iommu_domain *dom;
};

/**
 * vhost_iommu_vfio_get() - make @ep the VFIO group @fd names
 * @v: the device
 * @ep: the endpoint, not yet in @v
 * @fd: a file descriptor of a VFIO group
 *
 * Return: 0, -EBADF for a bad descriptor, -EINVAL for one that is not a
 * VFIO group, -ENOMEM.
 */
int vhost_iommu_vfio_get(struct vhost_iommu *v, struct vhost_iommu_ep *ep,
			 int fd)
{
	struct vhost_iommu_vfio *g;
	struct file *file;

	file = fget(fd);
	if (!file)
		return -EBADF;
	if (!vfio_file_is_group(file)) {
		fput(file);
		return -EINVAL;
	}
	g = kzalloc(sizeof(*g), GFP_KERNEL_ACCOUNT);
	if (!g) {
		fput(file);
		return -ENOMEM;
	}
	g->file = file;
	g->v = v;
	g->endpoint = ep->id;
	ep->vfio = g;
	return 0;
}

/* Let go of the group of @ep, which is in no domain */
void vhost_iommu_vfio_put(struct vhost_iommu_ep *ep)
{
	vhost_iommu_vfio_detach(ep);
	fput(ep->vfio->file);
	kfree(ep->vfio);
	ep->vfio = NULL;
}

/* A virtio-iommu status for what the container answered */
static u8 vhost_iommu_vfio_status(int err)
{
	switch (err) {
	case 0:
		return VIRTIO_IOMMU_S_OK;
	case -ENOMEM:
	case -E2BIG:	/* past the shadow's bounds: out of resources */
		return VIRTIO_IOMMU_S_NOMEM;
	case -ENODEV:	/* the VMM did not make the container a nesting one */
	case -EOPNOTSUPP:
		return VIRTIO_IOMMU_S_UNSUPP;
	default:
		return VIRTIO_IOMMU_S_DEVERR;
	}
}

/*
 * A translation fault of the group's stage 1, reported by its container in
 * any context: an event for the guest, as for the faults of vhost devices.
 */
static void vhost_iommu_vfio_fault(void *data, u64 iova, u32 flags)
{
	struct vhost_iommu_vfio *g = data;
	u32 f = VIRTIO_IOMMU_FAULT_F_ADDRESS;
	/* As vhost_iommu_xlate() says it: no domain, or nothing mapped */
	u8 reason = READ_ONCE(g->blocked) ? VIRTIO_IOMMU_FAULT_R_DOMAIN :
					    VIRTIO_IOMMU_FAULT_R_MAPPING;

	f |= flags & VFIO_NESTING_FAULT_WRITE ? VIRTIO_IOMMU_FAULT_F_WRITE :
						VIRTIO_IOMMU_FAULT_F_READ;
	vhost_iommu_report_fault(g->v, reason, f, g->endpoint, iova);
}

/*
 * The container's lookup in a MAP domain, from within our own attach and
 * invalidate calls, under v->lock
 */
static int vhost_iommu_vfio_lookup(void *data, u64 iova, struct gpt_leaf *leaf)
{
	struct vhost_iommu_vfio *g = data;

	return vhost_iommu_dom_lookup(g->dom, iova, leaf);
}

/**
 * vhost_iommu_vfio_attach() - give @ep's group @dom as its stage 1
 * @ep: the endpoint
 * @dom: the domain the endpoint joins, a MAP or a table domain
 * @req: for a table domain, its ATTACH_TABLE, checked: a format, size and
 *       root the device walks; NULL for a MAP domain
 *
 * The container composes the domain's translations with stage 2 and
 * replaces what the group had, in one step.
 *
 * Return: the status: NOMEM past the shadow's bounds or for lack of
 * memory, UNSUPP when the group's container does not nest.
 */
u8 vhost_iommu_vfio_attach(struct vhost_iommu_ep *ep,
			   struct vhost_iommu_domain *dom,
			   const struct virtio_iommu_req_attach_table *req)
{
	struct vhost_iommu_vfio *g = ep->vfio;
	struct vhost_iommu_domain *was = g->dom;
	struct vfio_nest_table t = {
		.fault = vhost_iommu_vfio_fault,
		.data = g,
	};
	struct vfio_nest_req r = { .op = VFIO_NEST_ATTACH, .table = &t };
	int ret;

	if (req) {
		t.format = le16_to_cpu(req->format);
		t.ias = req->ias;
		t.granule = req->granule;
		t.root = le64_to_cpu(req->root);
	} else {
		t.lookup = vhost_iommu_vfio_lookup;
		t.ias = fls64(g->v->cfg.input_end);
		t.granule = PAGE_SHIFT;
	}
	g->dom = dom;
	ret = vfio_file_nest(g->file, &r);
	if (ret) {
		g->dom = was;
		return vhost_iommu_vfio_status(ret);
	}
	g->nested = true;
	WRITE_ONCE(g->blocked, false);
	return VIRTIO_IOMMU_S_OK;
}

/* The stage 1 of a blocked endpoint: one hole */
static int vhost_iommu_vfio_nothing(void *data, u64 iova,
				    struct gpt_leaf *leaf)
{
	leaf->iova = iova;
	leaf->size = iova ? -iova : U64_MAX;
	return -ENOENT;
}

/**
 * vhost_iommu_vfio_settle() - what @ep translates in no domain
 * @ep: an endpoint of a VFIO group, in no domain or about to leave its
 *      domain
 *
 * As for every endpoint (vhost_iommu_xlate()): with the config's bypass
 * on, everything, which is stage 2 alone; off, nothing: the group gets a
 * stage 1 that maps nothing, replacing the one it had in one step, and its
 * faults come back with reason DOMAIN.  A container that does not nest has
 * no stage 1 to give: the group keeps stage 2 (documented).  Either way the
 * guest's table is gone from the group, as the guest may free it now.
 *
 * Return: 0, or -ENOMEM when the container lacks the memory to block the
 * group, which then translates what it did before.
 */
int vhost_iommu_vfio_settle(struct vhost_iommu_ep *ep)
{
	struct vhost_iommu_vfio *g = ep->vfio;
	struct vfio_nest_table t = {
		.lookup = vhost_iommu_vfio_nothing,
		.ias = 64,
		.granule = PAGE_SHIFT,
		.fault = vhost_iommu_vfio_fault,
		.data = g,
	};
	struct vfio_nest_req r = { .op = VFIO_NEST_ATTACH, .table = &t };
	int ret;

	if (!g->v->cfg.bypass) {
		if (g->blocked)
			return 0;
		ret = vfio_file_nest(g->file, &r);
		if (!ret) {
			g->nested = true;
			g->dom = NULL;
			WRITE_ONCE(g->blocked, true);
			return 0;
		}
		if (ret == -ENOMEM || ret == -E2BIG)
			return -ENOMEM;
	}
	vhost_iommu_vfio_detach(ep);
	return 0;
}

/**
 * vhost_iommu_vfio_detach() - take the guest's table from @ep's group
 * @ep: the endpoint
 *
 * The group translates with stage 2 alone again, and none of its faults
 * reach the guest once this returned.
 */
void vhost_iommu_vfio_detach(struct vhost_iommu_ep *ep)
{
	struct vhost_iommu_vfio *g = ep->vfio;
	struct vfio_nest_req r = { .op = VFIO_NEST_DETACH };

	if (!g || !g->nested)
		return;
	/* -ENOENT: the group left the container; nothing is left */
	vfio_file_nest(g->file, &r);
	g->nested = false;
	g->dom = NULL;
	WRITE_ONCE(g->blocked, false);
}

/**
 * vhost_iommu_vfio_invalidate() - a range of @dom changed: the VFIO groups
 * @dom: the domain: a table domain (INVALIDATE) or a MAP domain (MAP,
 *       UNMAP)
 * @start: first address of the range
 * @end: its last
 *
 * Each group's container recomposes the range from the domain as it is
 * now; on error, the range translates nothing there.
 *
 * Return: the status of the first group that failed, else OK.
 */
u8 vhost_iommu_vfio_invalidate(struct vhost_iommu_domain *dom, u64 start,
			       u64 end)
{
	struct vfio_nest_req r = {
		.op = VFIO_NEST_INVALIDATE, .first = start, .last = end,
	};
	struct vhost_iommu_ep *ep;
	u8 status = VIRTIO_IOMMU_S_OK;
	int ret;

	list_for_each_entry(ep, &dom->endpoints, node) {
		if (!ep->vfio || !ep->vfio->nested)
			continue;
		ret = vfio_file_nest(ep->vfio->file, &r);
		if (ret && status == VIRTIO_IOMMU_S_OK)
			status = vhost_iommu_vfio_status(ret);
	}
	return status;
}
