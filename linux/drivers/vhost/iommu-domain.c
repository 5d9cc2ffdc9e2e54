// SPDX-License-Identifier: GPL-2.0-only
/*
 * vhost-iommu: domains and what they map.
 *
 * Each domain keeps its MAPs in one generic_pt table, in the AMD v1 format
 * used as a software table: it grows to 64 input bits on demand, holds 52
 * output bits, and nothing walks it but this file.  The table is the only
 * record of the MAPs: gpt_map() marks the first page of each GPT_SW_FIRST
 * and its last GPT_SW_LAST (<linux/generic_pt/marks.h>, as the guest driver
 * keeps its own), which is what the spec's rules need: an UNMAP that would
 * split a MAP is refused, a MAP that overlaps one too.  A MAP with neither
 * READ nor WRITE is legal and kept like any other, so that those rules hold
 * for it, but each of its pages is marked VHOST_IOMMU_SW_NONE and translates
 * to nothing.
 *
 * The budget (max_table_pages) counts the table pages, and UNMAP frees the
 * tables it empties.  Everything here runs under vhost_iommu.lock.
 */
#include <linux/generic_pt/marks.h>
#include <linux/iommu.h>
#include <linux/sched.h>
#include <linux/slab.h>

#include "iommu.h"

static u64 vhost_iommu_granule(struct vhost_iommu *v)
{
	return v->cfg.page_size_mask & -v->cfg.page_size_mask;
}

/*
 * Unmap [@iova, @last], where no page sticks out, free every table that
 * leaves empty, and keep the budget's count.
 */
static void vhost_iommu_pt_clear(struct vhost_iommu *v,
				 struct vhost_iommu_domain *dom, u64 iova,
				 u64 last)
{
	long tables = atomic_long_read(&dom->pt.nr_tables);
	struct iommu_iotlb_gather gather;
	u64 len = last - iova + 1;

	iommu_iotlb_gather_init(&gather);
	/*
	 * The tables the unmap leaves empty go too: the budget counts
	 * them for as long as the domain lives.  A length cannot say
	 * 2^64: the lower half goes first.
	 */
	if (!len) {
		gpt_unmap_prune(&dom->pt, 0, BIT_ULL(63), &gather);
		len = BIT_ULL(63);
	}
	gpt_unmap_prune(&dom->pt, last - len + 1, len, &gather);
	/* Nothing walks this table but us: free right away. */
	gpt_free_gathered(&gather);
	v->nr_table_pages += atomic_long_read(&dom->pt.nr_tables) - tables;
}

/* Mark each page of [@iova, @last] as translating nothing */
static void vhost_iommu_pt_deny(struct vhost_iommu_domain *dom, u64 iova,
				u64 last)
{
	struct gpt_leaf page;

	while (gpt_marks_page(&dom->pt, iova, &page)) {
		gpt_set_sw(&dom->pt, iova, VHOST_IOMMU_SW_NONE, 0);
		if (page.iova + page.size - 1 >= last)
			break;
		iova = page.iova + page.size;
	}
}

/*
 * Map one MAP, marked, within the device's page-table budget.  gpt_map()
 * goes in chunks: a chunk is 512 of the largest pages the alignment of
 * @iova against @phys allows (at most 1 GiB pages), aligned, so it needs
 * at most a couple of new tables and still takes the largest pages.
 * Between chunks the budget is checked and the CPU given up, so that one
 * MAP of a huge range that must use small pages can neither eat host
 * memory nor hold the worker for long.  A MAP of one chunk, the common
 * case, is marked by gpt_map() itself; a longer one gets its marks after.
 */
static int vhost_iommu_pt_map(struct vhost_iommu *v,
			      struct vhost_iommu_domain *dom, u64 iova,
			      u64 phys, u64 len, int prot, bool none)
{
	long others = v->nr_table_pages - atomic_long_read(&dom->pt.nr_tables);
	unsigned int lg = (iova ^ phys) ? __ffs64(iova ^ phys) : 63;
	u64 chunk = 1ULL << (min(lg, 30U) + 9), done = 0, n;
	int mark = 0, ret = 0;

	while (done < len) {
		if (others + atomic_long_read(&dom->pt.nr_tables) >=
		    v->cfg.max_table_pages) {
			ret = -ENOMEM;
			break;
		}
		n = min(len - done, chunk - ((iova + done) & (chunk - 1)));
		if (n == len)
			mark = GPT_PROT_MARK;
		ret = gpt_map(&dom->pt, iova + done, phys + done, n,
			      prot | mark, GFP_KERNEL_ACCOUNT, NULL);
		if (ret)
			break;
		if (none)
			vhost_iommu_pt_deny(dom, iova + done, iova + done + n - 1);
		done += n;
		if (done < len)
			cond_resched();
	}
	v->nr_table_pages = others + atomic_long_read(&dom->pt.nr_tables);
	if (!ret && !mark) {
		gpt_set_sw(&dom->pt, iova, GPT_SW_FIRST, 0);
		gpt_set_sw(&dom->pt, iova + len - 1, GPT_SW_LAST, 0);
	}
	return ret;
}

/* Free @dom, which no endpoint is attached to */
void vhost_iommu_free_domain(struct vhost_iommu *v,
			     struct vhost_iommu_domain *dom)
{
	xa_erase(&v->domains, dom->id);
	v->nr_mappings -= dom->nr_mappings;
	if (!dom->bypass && !dom->table) {
		v->nr_table_pages -= atomic_long_read(&dom->pt.nr_tables);
		gpt_deinit(&dom->pt);
	}
	v->nr_domains--;
	/* A table domain's table is the guest's: only its description goes */
	kfree(dom->table);
	kfree(dom);
}

/* Take @ep out of its domain, which goes with its last endpoint */
static void vhost_iommu_leave(struct vhost_iommu *v, struct vhost_iommu_ep *ep)
{
	struct vhost_iommu_domain *dom = ep->domain;

	if (!dom)
		return;
	vhost_iommu_invalidate_ep(v, ep);
	list_del(&ep->node);
	ep->domain = NULL;
	if (!--dom->nr_endpoints)
		vhost_iommu_free_domain(v, dom);
}

/**
 * vhost_iommu_settle() - a VFIO endpoint in no domain translates what the
 *                        config's bypass says
 * @ep: the endpoint
 *
 * For the changes that cannot fail (a reset, a new config): where the
 * container lacks the memory to block the group, it is left with stage 2
 * alone, the guest's memory, rather than with a table the guest may free
 * now.
 */
void vhost_iommu_settle(struct vhost_iommu_ep *ep)
{
	if (!ep->vfio || ep->domain || !vhost_iommu_vfio_settle(ep))
		return;
	pr_warn_ratelimited("vhost-iommu: endpoint %u: no memory to block its DMA, stage 2 alone\n",
			    ep->id);
	vhost_iommu_vfio_detach(ep);
}

/**
 * vhost_iommu_remove_ep() - an endpoint goes: DEL_ENDPOINT, or the device
 * @v: the device, its lock held
 * @ep: the endpoint, no longer in @v's endpoints
 *
 * It leaves its domain; a VFIO group goes straight back to the stage 2 its
 * VMM gave it, with none of the settling of a detached endpoint.
 */
void vhost_iommu_remove_ep(struct vhost_iommu *v, struct vhost_iommu_ep *ep)
{
	vhost_iommu_vfio_detach(ep);
	vhost_iommu_leave(v, ep);
}

/* Device reset: every domain goes, endpoints stay, detached. */
void vhost_iommu_reset(struct vhost_iommu *v)
{
	struct vhost_iommu_ep *ep;
	unsigned long id;

	lockdep_assert_held(&v->lock);
	xa_for_each(&v->endpoints, id, ep) {
		vhost_iommu_leave(v, ep);
		vhost_iommu_settle(ep);
	}
}

/* Does [@start, @last] meet one of @ep's reserved regions? */
static bool vhost_iommu_ep_resv_meets(const struct vhost_iommu_ep *ep,
				      u64 start, u64 last)
{
	u32 i;

	for (i = 0; i < ep->nr_resv; i++)
		if (ep->resv[i].start <= last && start <= ep->resv[i].end)
			return true;
	return false;
}

/*
 * A domain never maps into a reserved region (the MSI window included) of
 * an endpoint attached to it: MAP checks the endpoints there, ATTACH the
 * mappings there.
 */
static bool vhost_iommu_dom_resv_meets(struct vhost_iommu_domain *dom,
				       u64 start, u64 last)
{
	struct vhost_iommu_ep *ep;

	list_for_each_entry(ep, &dom->endpoints, node)
		if (vhost_iommu_ep_resv_meets(ep, start, last))
			return true;
	return false;
}

static bool vhost_iommu_resv_mapped(struct vhost_iommu_domain *dom,
				    const struct vhost_iommu_ep *ep)
{
	u32 i;

	if (dom->bypass)
		return false;
	for (i = 0; i < ep->nr_resv; i++)
		if (gpt_marks_any(&dom->pt, ep->resv[i].start, ep->resv[i].end))
			return true;
	return false;
}

/**
 * vhost_iommu_new_domain() - create a domain
 * @v: the device, its lock held
 * @domain: its ID, free
 * @bypass: a bypass domain (ATTACH_F_BYPASS)
 * @table: for a table domain, the guest's table; the domain owns it on
 *         success
 *
 * A MAP domain gets a table of its own for its MAPs; bypass and table
 * domains have none.
 *
 * Return: the domain, or NULL past max_domains, the table budget or for
 * lack of memory.
 */
struct vhost_iommu_domain *
vhost_iommu_new_domain(struct vhost_iommu *v, u32 domain, bool bypass,
		       struct vhost_iommu_table *table)
{
	static const struct gpt_amdv1_cfg ptcfg = {
		.levels = 3,
		.nid = NUMA_NO_NODE,
	};
	struct vhost_iommu_domain *dom;
	int ret = 0;

	if (v->nr_domains >= v->cfg.max_domains)
		return NULL;
	dom = kzalloc(sizeof(*dom), GFP_KERNEL_ACCOUNT);
	if (!dom)
		return NULL;
	dom->id = domain;
	dom->bypass = bypass;
	INIT_LIST_HEAD(&dom->endpoints);
	/* Below, a table domain is like a bypass one: no table of ours */
	if (table)
		bypass = true;
	if (!bypass && gpt_amdv1_init(&dom->pt, &ptcfg, GFP_KERNEL_ACCOUNT)) {
		kfree(dom);
		return NULL;
	}
	/* Only we walk it: a one-page MAP+UNMAP pair reuses its leaf table */
	if (!bypass)
		gpt_keep_spares(&dom->pt);
	/* Its top table counts against the budget */
	if (!bypass && v->nr_table_pages +
	    atomic_long_read(&dom->pt.nr_tables) > v->cfg.max_table_pages)
		ret = -ENOMEM;
	if (!ret)
		ret = xa_err(xa_store(&v->domains, domain, dom,
				      GFP_KERNEL_ACCOUNT));
	if (ret) {
		if (!bypass)
			gpt_deinit(&dom->pt);
		kfree(dom);
		return NULL;
	}
	v->nr_domains++;
	if (!bypass)
		v->nr_table_pages += atomic_long_read(&dom->pt.nr_tables);
	dom->table = table;
	return dom;
}

/**
 * vhost_iommu_join() - attach an endpoint to a domain, as ATTACH does
 * @v: the device, its lock held
 * @ep: the endpoint, taken out of its domain first
 * @dom: the domain, not the endpoint's
 *
 * The table of a VFIO endpoint is the caller's to change: ATTACH_TABLE
 * replaces it in one step, so that DMA never runs with neither table.
 */
void vhost_iommu_join(struct vhost_iommu *v, struct vhost_iommu_ep *ep,
		      struct vhost_iommu_domain *dom)
{
	/* Re-attaching is DETACH then ATTACH; the new domain exists already. */
	vhost_iommu_leave(v, ep);
	/* A bound device may have cached bypass translations */
	vhost_iommu_invalidate_ep(v, ep);
	ep->domain = dom;
	list_add(&ep->node, &dom->endpoints);
	dom->nr_endpoints++;
}

/**
 * vhost_iommu_attach_ep() - the endpoint ATTACH or ATTACH_TABLE names
 * @v: the device, its lock held
 * @endpoint: the request's endpoint
 * @domain: the request's domain, which must be in the domain range
 * @ep: the endpoint, on success
 *
 * Return: VIRTIO_IOMMU_S_OK, NOENT for an unknown endpoint, RANGE for a
 * domain out of range.
 */
u8 vhost_iommu_attach_ep(struct vhost_iommu *v, __le32 endpoint, u32 domain,
			 struct vhost_iommu_ep **ep)
{
	*ep = xa_load(&v->endpoints, le32_to_cpu(endpoint));
	if (!*ep)
		return VIRTIO_IOMMU_S_NOENT;
	if (domain < v->cfg.domain_start || domain > v->cfg.domain_end)
		return VIRTIO_IOMMU_S_RANGE;
	return VIRTIO_IOMMU_S_OK;
}

u8 vhost_iommu_attach(struct vhost_iommu *v,
		      const struct virtio_iommu_req_attach *req)
{
	u32 domain = le32_to_cpu(req->domain);
	u32 flags = le32_to_cpu(req->flags);
	struct vhost_iommu_domain *dom;
	struct vhost_iommu_ep *ep;
	bool bypass;
	u8 status;

	if (!vhost_iommu_zero(req->reserved, sizeof(req->reserved)) ||
	    (flags & ~VIRTIO_IOMMU_ATTACH_F_BYPASS))
		return VIRTIO_IOMMU_S_INVAL;
	bypass = flags & VIRTIO_IOMMU_ATTACH_F_BYPASS;
	if (bypass && !vhost_iommu_acked(v, VIRTIO_IOMMU_F_BYPASS_CONFIG))
		return VIRTIO_IOMMU_S_INVAL;

	status = vhost_iommu_attach_ep(v, req->endpoint, domain, &ep);
	if (status)
		return status;

	dom = xa_load(&v->domains, domain);
	if (dom) {
		/* Table domains are joined with ATTACH_TABLE only */
		if (dom->bypass != bypass || dom->table)
			return VIRTIO_IOMMU_S_INVAL;
		if (ep->domain == dom)
			return VIRTIO_IOMMU_S_OK;
		if (vhost_iommu_resv_mapped(dom, ep))
			return VIRTIO_IOMMU_S_INVAL;
	} else {
		dom = vhost_iommu_new_domain(v, domain, bypass, NULL);
		if (!dom)
			return VIRTIO_IOMMU_S_NOMEM;
	}
	/*
	 * A VFIO group's container composes a MAP domain with stage 2, and
	 * replaces what the group had in one step; failing, the endpoint
	 * stays where it was.  In a bypass domain it has stage 2 alone.
	 */
	if (ep->vfio && bypass) {
		vhost_iommu_vfio_detach(ep);
	} else if (ep->vfio) {
		status = vhost_iommu_vfio_attach(ep, dom, NULL);
		if (status) {
			if (!dom->nr_endpoints)
				vhost_iommu_free_domain(v, dom);
			return status;
		}
	}
	vhost_iommu_join(v, ep, dom);
	return VIRTIO_IOMMU_S_OK;
}

u8 vhost_iommu_detach(struct vhost_iommu *v,
		      const struct virtio_iommu_req_detach *req)
{
	struct vhost_iommu_domain *dom;
	struct vhost_iommu_ep *ep;

	/* reserved is ignored (virtio 1.3: MUST) */
	ep = xa_load(&v->endpoints, le32_to_cpu(req->endpoint));
	if (!ep)
		return VIRTIO_IOMMU_S_NOENT;
	/* No such domain, or not this endpoint's: the spec's INVAL */
	dom = xa_load(&v->domains, le32_to_cpu(req->domain));
	if (!dom || ep->domain != dom)
		return VIRTIO_IOMMU_S_INVAL;
	/*
	 * A VFIO group gets what a detached endpoint translates before the
	 * request completes, as the guest may then free its table; lacking
	 * the memory to block it, the endpoint stays in its domain.
	 */
	if (ep->vfio && vhost_iommu_vfio_settle(ep))
		return VIRTIO_IOMMU_S_NOMEM;
	vhost_iommu_leave(v, ep);
	return VIRTIO_IOMMU_S_OK;
}

/*
 * The domain a MAP or UNMAP of [@start, @end] acts on, in *@dom.
 * Return: VIRTIO_IOMMU_S_OK, or the status that refuses the request.
 */
static u8 vhost_iommu_table_domain(struct vhost_iommu *v, __le32 domain,
				   u64 start, u64 end,
				   struct vhost_iommu_domain **dom)
{
	if (end < start)
		return VIRTIO_IOMMU_S_INVAL;
	*dom = xa_load(&v->domains, le32_to_cpu(domain));
	if (!*dom)
		return VIRTIO_IOMMU_S_NOENT;
	/* A table domain's table is the guest's to write (rst: MUST) */
	if ((*dom)->bypass || (*dom)->table)
		return VIRTIO_IOMMU_S_INVAL;
	return VIRTIO_IOMMU_S_OK;
}

u8 vhost_iommu_map(struct vhost_iommu *v,
		   const struct virtio_iommu_req_map *req)
{
	u64 start = le64_to_cpu(req->virt_start);
	u64 end = le64_to_cpu(req->virt_end);
	u64 phys = le64_to_cpu(req->phys_start);
	u32 flags = le32_to_cpu(req->flags);
	u64 mask = vhost_iommu_granule(v) - 1;
	struct vhost_iommu_domain *dom;
	int prot = 0;
	u64 len;
	u8 status;
	int ret;

	if (flags & ~(VIRTIO_IOMMU_MAP_F_READ | VIRTIO_IOMMU_MAP_F_WRITE))
		return VIRTIO_IOMMU_S_INVAL;	/* MMIO is not offered */
	status = vhost_iommu_table_domain(v, req->domain, start, end, &dom);
	if (status)
		return status;
	if ((start & mask) || (phys & mask) || ((end + 1) & mask))
		return VIRTIO_IOMMU_S_RANGE;
	if (start < v->cfg.input_start || end > v->cfg.input_end)
		return VIRTIO_IOMMU_S_RANGE;
	len = end - start + 1;
	/* The whole 64-bit space cannot be one length; nor may phys wrap. */
	if (!len || phys + (len - 1) < phys)
		return VIRTIO_IOMMU_S_RANGE;
	/* Nor may it go past what the table holds (52 bits in AMD v1). */
	if (dom->pt.oas < 64 && (phys + (len - 1)) >> dom->pt.oas)
		return VIRTIO_IOMMU_S_RANGE;
	if (gpt_marks_any(&dom->pt, start, end))
		return VIRTIO_IOMMU_S_INVAL;
	if (vhost_iommu_dom_resv_meets(dom, start, end))
		return VIRTIO_IOMMU_S_INVAL;
	if (v->nr_mappings >= v->cfg.max_mappings)
		return VIRTIO_IOMMU_S_NOMEM;

	if (flags & VIRTIO_IOMMU_MAP_F_READ)
		prot |= IOMMU_READ;
	if (flags & VIRTIO_IOMMU_MAP_F_WRITE)
		prot |= IOMMU_WRITE;
	/* Without access the pages only hold the MAP's place */
	ret = vhost_iommu_pt_map(v, dom, start, phys, len, prot ?: IOMMU_READ,
				 !prot);
	if (ret) {
		/* The range was free: all that is there now is ours to undo */
		vhost_iommu_pt_clear(v, dom, start, end);
		switch (ret) {
		case -ENOMEM:
			return VIRTIO_IOMMU_S_NOMEM;
		case -ERANGE:
			return VIRTIO_IOMMU_S_RANGE;
		case -EINVAL:
			return VIRTIO_IOMMU_S_INVAL;
		default:
			return VIRTIO_IOMMU_S_DEVERR;
		}
	}
	/*
	 * The VFIO groups in the domain compose the new range with stage 2
	 * before it completes.  One that cannot: the MAP is undone, there too.
	 */
	status = vhost_iommu_vfio_invalidate(dom, start, end);
	if (status) {
		vhost_iommu_pt_clear(v, dom, start, end);
		vhost_iommu_vfio_invalidate(dom, start, end);
		return status;
	}
	dom->nr_mappings++;
	v->nr_mappings++;
	vhost_iommu_resume_dom(v, dom);
	return VIRTIO_IOMMU_S_OK;
}

/* What an UNMAP removes: the MAPs that start in it, and where they lie */
struct vhost_iommu_unmapped {
	unsigned long maps;
	u64 first;
	u64 last;
};

static int vhost_iommu_count_page(const struct gpt_leaf *leaf, void *arg)
{
	struct vhost_iommu_unmapped *u = arg;

	if ((leaf->sw & GPT_SW_FIRST) && !u->maps++)
		u->first = leaf->iova;
	u->last = leaf->iova + leaf->size - 1;
	return 0;
}

u8 vhost_iommu_unmap(struct vhost_iommu *v,
		     const struct virtio_iommu_req_unmap *req)
{
	u64 start = le64_to_cpu(req->virt_start);
	u64 end = le64_to_cpu(req->virt_end);
	struct vhost_iommu_unmapped u = {};
	struct vhost_iommu_domain *dom;
	struct gpt_leaf page;
	u8 status;

	if (!vhost_iommu_zero(req->reserved, sizeof(req->reserved)))
		return VIRTIO_IOMMU_S_INVAL;
	status = vhost_iommu_table_domain(v, req->domain, start, end, &dom);
	if (status)
		return status;

	/*
	 * Only a MAP holding @start or @end can stick out of the range: the
	 * page there must begin, or end, a MAP.  Refuse before removing
	 * anything.
	 */
	if (gpt_marks_page(&dom->pt, start, &page)) {
		if (page.iova != start || !(page.sw & GPT_SW_FIRST))
			return VIRTIO_IOMMU_S_RANGE;
		/* A MAP of one page, the DMA API's commonest: one lookup */
		if ((page.sw & GPT_SW_LAST) &&
		    page.iova + page.size - 1 == end) {
			u = (struct vhost_iommu_unmapped){ 1, start, end };
			goto remove;
		}
	}
	if (gpt_marks_page(&dom->pt, end, &page) &&
	    (page.iova + page.size - 1 != end || !(page.sw & GPT_SW_LAST)))
		return VIRTIO_IOMMU_S_RANGE;
	gpt_marks_walk(&dom->pt, start, end, vhost_iommu_count_page, &u);
	if (!u.maps)
		return VIRTIO_IOMMU_S_OK;	/* holes only */
remove:
	/* Before the request completes, no bound device may use them */
	vhost_iommu_invalidate_dom(v, dom, u.first, u.last);
	vhost_iommu_pt_clear(v, dom, u.first, u.last);
	/* And the VFIO groups' IOTLBs: a range with nothing can but clear */
	vhost_iommu_vfio_invalidate(dom, u.first, u.last);
	dom->nr_mappings -= u.maps;
	v->nr_mappings -= u.maps;
	return VIRTIO_IOMMU_S_OK;
}

/**
 * vhost_iommu_xlate() - translate an IOVA as an endpoint's DMA
 * @v: the device, its lock held
 * @t: @t->endpoint and @t->iova in; @t->gpa, size and perm out
 * @access: VHOST_IOMMU_PERM_READ and _WRITE that must be allowed, or 0 to
 *          only look
 * @reason: the virtio fault reason, when translation fails
 * @max: the most bytes from @t->iova the caller can use (U64_MAX: all):
 *       @t->size says how far the MAP goes, up to this, and the lookup
 *       goes no further; nor further than VHOST_IOMMU_XLATE_SPAN, where
 *       @t->size is then at least that span
 *
 * Return: 0, -ENODEV for an unknown endpoint, or -ENOENT / -EACCES with
 * @reason set.
 */
int vhost_iommu_xlate(struct vhost_iommu *v, struct vhost_iommu_translate *t,
		      u32 access, u8 *reason, u64 max)
{
	struct vhost_iommu_domain *dom;
	struct vhost_iommu_ep *ep;
	struct gpt_leaf page;
	u64 limit, span, end;

	lockdep_assert_held(&v->lock);
	t->gpa = 0;
	t->size = 0;
	t->perm = 0;
	ep = xa_load(&v->endpoints, t->endpoint);
	if (!ep)
		return -ENODEV;
	dom = ep->domain;
	*reason = VIRTIO_IOMMU_FAULT_R_DOMAIN;
	if ((!dom && v->cfg.bypass) || (dom && dom->bypass)) {
		t->gpa = t->iova;
		t->perm = VHOST_IOMMU_PERM_READ | VHOST_IOMMU_PERM_WRITE |
			  VHOST_IOMMU_PERM_BYPASS;
		return 0;
	}
	if (!dom)
		return -ENOENT;

	*reason = VIRTIO_IOMMU_FAULT_R_MAPPING;
	if (dom->table)
		return vhost_iommu_table_xlate(v, ep, dom, t, access, max);
	if (!gpt_marks_page(&dom->pt, t->iova, &page) ||
	    (page.sw & VHOST_IOMMU_SW_NONE))
		return -ENOENT;
	if (page.prot & IOMMU_READ)
		t->perm |= VHOST_IOMMU_PERM_READ;
	if (page.prot & IOMMU_WRITE)
		t->perm |= VHOST_IOMMU_PERM_WRITE;
	if (access & ~t->perm) {
		t->perm = 0;
		return -EACCES;
	}
	t->gpa = page.pa + (t->iova - page.iova);
	/* The rest of the MAP is contiguous, with the same access */
	limit = max - 1 <= U64_MAX - t->iova ? t->iova + max - 1 : U64_MAX;
	/*
	 * Following the MAP costs a step per page: follow it no further
	 * than VHOST_IOMMU_XLATE_SPAN past @iova, so that a lookup in a
	 * 1 GiB MAP of 4 KiB pages costs what one in a 4 KiB MAP does.  The
	 * size is then at least that span, for a caller to ask again from.
	 */
	span = t->iova <= U64_MAX - (VHOST_IOMMU_XLATE_SPAN - 1) ?
	       t->iova + VHOST_IOMMU_XLATE_SPAN - 1 : U64_MAX;
	end = min(gpt_marks_end(&dom->pt, &page, min(limit, span)), limit);
	t->size = end - t->iova + 1;
	return 0;
}

/**
 * vhost_iommu_dom_lookup() - the page a MAP domain maps at an address, or
 *                            the hole there
 * @dom: a MAP domain, under v->lock
 * @iova: the address
 * @leaf: the page (@leaf->pa guest-physical); with -ENOENT, the range that
 *        translates nothing: a page of a MAP without access, or the hole
 *        from @iova to the next page mapped
 *
 * The lookup of a walk that skips holes whole, as a foreign table's does:
 * the container of a VFIO endpoint composes the domain with it.
 *
 * Return: 0 or -ENOENT.
 */
int vhost_iommu_dom_lookup(struct vhost_iommu_domain *dom, u64 iova,
			   struct gpt_leaf *leaf)
{
	if (gpt_marks_walk(&dom->pt, iova, U64_MAX, gpt_marks_copy_leaf,
			   leaf) != 1) {
		leaf->iova = iova;
		/* Up to the top; from 0 one byte short, which a length holds */
		leaf->size = iova ? -iova : U64_MAX;
		return -ENOENT;
	}
	if (leaf->iova > iova) {
		leaf->size = leaf->iova - iova;
		leaf->iova = iova;
		return -ENOENT;
	}
	return leaf->sw & VHOST_IOMMU_SW_NONE ? -ENOENT : 0;
}
