// SPDX-License-Identifier: GPL-2.0-only
/*
 * vhost-iommu: page-table sharing (VIRTIO_IOMMU_F_ATTACH_TABLE), see
 * "Page-table sharing (extension)" in Documentation/iommu/virtio-iommu.rst.
 *
 * A table domain has no MAPs: the guest's own page table, in guest memory,
 * is its translation.  The device keeps only the table's description and
 * walks it with generic_pt's foreign lookup for each translation (a bound
 * device's IOTLB miss, VHOST_IOMMU_TRANSLATE), reading each entry through
 * the memory table from the VMM's mapping of guest memory.  It caches
 * nothing of the table itself: what a walk found lives only in the IOTLBs
 * of the bound devices, which INVALIDATE empties over its range, as UNMAP
 * does for a MAP domain.
 *
 * Nothing the guest writes is trusted.  A walk reads one entry per level
 * of the attachment (at most 6), so it costs that much whatever the table
 * says, even pointing back at itself; an entry outside guest memory, with
 * reserved bits set or an address beyond the format's output size is a
 * fault on the event queue, like a missing or forbidding entry.  The
 * device never writes the table.
 */
#include <linux/generic_pt/foreign.h>
#include <linux/uaccess.h>

#include "iommu.h"

/**
 * struct vhost_iommu_fmt - a format the device walks, as PROBE says it
 * @format: VIRTIO_IOMMU_PGTF_*
 * @gpt_fmt: generic_pt's name for it
 * @ias: most input bits
 * @oas: most output bits
 * @max_levels: most levels
 * @asid_bits: ASID bits (ARM_LPAE)
 * @granules: bit n: a granule of 2^n bytes
 */
struct vhost_iommu_fmt {
	u16 format;
	u8 gpt_fmt;
	u8 ias;
	u8 oas;
	u8 max_levels;
	u8 asid_bits;
	u32 granules;
};

/*
 * The formats generic_pt builds, with its limits: 48-bit ARMv8 stage 1
 * (no 52-bit LPA), VT-d 3 to 5 levels, AMD v1 up to 6 levels.  Output
 * addresses end where the guest's memory ends anyway; 52 bits is what the
 * x86 formats' entries hold.
 */
static const struct vhost_iommu_fmt vhost_iommu_fmts[] = {
	{ VIRTIO_IOMMU_PGTF_ARM_LPAE, GPT_FMT_ARMV8, 48, 48, 4, 16,
	  BIT(12) | BIT(14) | BIT(16) },
	{ VIRTIO_IOMMU_PGTF_VTD_SL, GPT_FMT_VTDSS, 57, 52, 5, 0, BIT(12) },
	{ VIRTIO_IOMMU_PGTF_AMD_V1, GPT_FMT_AMDV1, 64, 52, 6, 0, BIT(12) },
};

/**
 * vhost_iommu_table_formats() - the formats the device can walk
 *
 * Return: VHOST_IOMMU_TABLE_FMT() bits.
 */
u32 vhost_iommu_table_formats(void)
{
	u32 mask = 0;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(vhost_iommu_fmts); i++)
		mask |= BIT(vhost_iommu_fmts[i].format);
	return mask;
}

/**
 * vhost_iommu_table_props_size() - bytes of PAGE_TABLE_FMT properties
 * @cfg: the device config
 * @features: the negotiated features
 *
 * Return: what PROBE adds to an endpoint's properties.
 */
size_t vhost_iommu_table_props_size(const struct vhost_iommu_config *cfg,
				    u64 features)
{
	if (!(features & BIT_ULL(VIRTIO_IOMMU_F_ATTACH_TABLE)))
		return 0;
	return hweight32(cfg->table_formats) *
	       sizeof(struct virtio_iommu_probe_table_format);
}

/**
 * vhost_iommu_table_props() - write the PAGE_TABLE_FMT properties
 * @v: the device, the feature negotiated
 * @ep: the endpoint they describe
 * @props: where they go; vhost_iommu_table_props_size() bytes, zeroed
 */
void vhost_iommu_table_props(struct vhost_iommu *v, struct vhost_iommu_ep *ep,
			     u8 *props)
{
	struct virtio_iommu_probe_table_format *p = (void *)props;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(vhost_iommu_fmts); i++) {
		const struct vhost_iommu_fmt *f = &vhost_iommu_fmts[i];

		if (!(v->cfg.table_formats & BIT(f->format)))
			continue;
		p->head.type = cpu_to_le16(VIRTIO_IOMMU_PROBE_T_PAGE_TABLE_FMT);
		p->head.length = cpu_to_le16(sizeof(*p) - sizeof(p->head));
		p->format = cpu_to_le16(f->format);
		p->ias = f->ias;
		p->oas = f->oas;
		p->granules = cpu_to_le32(f->granules);
		p->max_levels = f->max_levels;
		p->asid_bits = f->asid_bits;
		/*
		 * The device caches no non-present entry and shadows nothing,
		 * but a VFIO group's container copies the table: it must hear
		 * of new entries too (rst: INVAL_MAP)
		 */
		p->flags = cpu_to_le16(ep->vfio ?
				       VIRTIO_IOMMU_PGTF_F_INVAL_MAP : 0);
		p++;
	}
}

static const struct vhost_iommu_fmt *vhost_iommu_fmt(struct vhost_iommu *v,
						     u16 format)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(vhost_iommu_fmts); i++)
		if (vhost_iommu_fmts[i].format == format &&
		    (v->cfg.table_formats & BIT(format)))
			return &vhost_iommu_fmts[i];
	return NULL;
}

/* Everything that names a table: a domain's table only ever equals itself */
static bool vhost_iommu_same_table(const struct vhost_iommu_domain *dom,
				   const struct virtio_iommu_req_attach_table *req)
{
	const struct virtio_iommu_req_attach_table *a = &dom->table->req;

	return a->format == req->format && a->root == req->root &&
	       a->ias == req->ias && a->granule == req->granule &&
	       a->asid == req->asid && a->mair == req->mair;
}

/* Check the table an ATTACH_TABLE describes; fill @table on success */
static u8 vhost_iommu_check_table(struct vhost_iommu *v,
				  const struct virtio_iommu_req_attach_table *req,
				  struct vhost_iommu_table *table)
{
	const struct vhost_iommu_fmt *fmt;
	struct gpt_foreign_cfg cfg;
	int ret;

	fmt = vhost_iommu_fmt(v, le16_to_cpu(req->format));
	if (!fmt)
		return VIRTIO_IOMMU_S_UNSUPP;
	if (req->ias > fmt->ias || req->granule >= 32 ||
	    !(fmt->granules & BIT(req->granule)))
		return VIRTIO_IOMMU_S_RANGE;
	cfg = (struct gpt_foreign_cfg){
		.fmt = fmt->gpt_fmt, .granule_shift = req->granule,
		.ias = req->ias, .oas = fmt->oas,
	};
	ret = gpt_foreign_init(&table->ft, &cfg, le64_to_cpu(req->root));
	if (ret == -EOPNOTSUPP)
		return VIRTIO_IOMMU_S_UNSUPP;
	if (ret || table->ft.levels > fmt->max_levels)
		return VIRTIO_IOMMU_S_RANGE;
	table->req = *req;
	return VIRTIO_IOMMU_S_OK;
}

/**
 * vhost_iommu_attach_table() - serve ATTACH_TABLE
 * @v: the device, its lock held
 * @req: the request; the feature was negotiated (vhost_iommu_handle_one()
 *       takes the type for an unknown one otherwise)
 *
 * Return: the status, in the order the rst lists the rules.
 */
u8 vhost_iommu_attach_table(struct vhost_iommu *v,
			    const struct virtio_iommu_req_attach_table *req)
{
	u32 domain = le32_to_cpu(req->domain);
	struct vhost_iommu_domain *dom;
	struct vhost_iommu_table *table;
	struct vhost_iommu_ep *ep;
	u8 status;

	lockdep_assert_held(&v->lock);
	if (!vhost_iommu_zero(req->reserved0, sizeof(req->reserved0)) ||
	    !vhost_iommu_zero(req->reserved1, sizeof(req->reserved1)) ||
	    !vhost_iommu_zero(req->reserved2, sizeof(req->reserved2)))
		return VIRTIO_IOMMU_S_INVAL;
	if (le16_to_cpu(req->format) != VIRTIO_IOMMU_PGTF_ARM_LPAE &&
	    (req->asid || req->mair))
		return VIRTIO_IOMMU_S_INVAL;
	status = vhost_iommu_attach_ep(v, req->endpoint, domain, &ep);
	if (status)
		return status;

	table = kzalloc(sizeof(*table), GFP_KERNEL_ACCOUNT);
	if (!table)
		return VIRTIO_IOMMU_S_NOMEM;
	status = vhost_iommu_check_table(v, req, table);
	if (status)
		goto out;

	dom = xa_load(&v->domains, domain);
	if (dom) {
		/* A MAP or bypass domain, or another table: change nothing */
		if (!dom->table || !vhost_iommu_same_table(dom, req)) {
			status = VIRTIO_IOMMU_S_INVAL;
			goto out;
		}
		if (ep->domain == dom)
			goto out;
	} else {
		dom = vhost_iommu_new_domain(v, domain, false, table);
		if (!dom) {
			status = VIRTIO_IOMMU_S_NOMEM;
			goto out;
		}
		table = NULL;	/* the domain's now */
	}
	/*
	 * A VFIO group gets the table from its container, which replaces the
	 * one it had; failing, the endpoint stays where it was.
	 */
	if (ep->vfio) {
		status = vhost_iommu_vfio_attach(ep, dom, req);
		if (status) {
			if (!dom->nr_endpoints)
				vhost_iommu_free_domain(v, dom);
			goto out;
		}
	}
	vhost_iommu_join(v, ep, dom);
out:
	kfree(table);
	return status;
}

/**
 * vhost_iommu_invalidate() - serve INVALIDATE
 * @v: the device, its lock held
 * @req: the request; the feature was negotiated, as for ATTACH_TABLE
 *
 * The device caches nothing from the table but the IOTLBs of the bound
 * devices: dropping their entries in the range is all there is to do, for
 * leaf and table entries alike (the leaf hint changes nothing).
 *
 * Return: the status.
 */
u8 vhost_iommu_invalidate(struct vhost_iommu *v,
			  const struct virtio_iommu_req_invalidate *req)
{
	u64 start = le64_to_cpu(req->virt_start);
	u64 end = le64_to_cpu(req->virt_end);
	struct vhost_iommu_domain *dom;

	lockdep_assert_held(&v->lock);
	dom = xa_load(&v->domains, le32_to_cpu(req->domain));
	if (!dom)
		return VIRTIO_IOMMU_S_NOENT;
	if (!dom->table ||
	    (le16_to_cpu(req->flags) & ~VIRTIO_IOMMU_INVAL_F_LEAF) ||
	    !vhost_iommu_zero(req->reserved0, sizeof(req->reserved0)) ||
	    !vhost_iommu_zero(req->reserved1, sizeof(req->reserved1)))
		return VIRTIO_IOMMU_S_INVAL;
	switch (le16_to_cpu(req->scope)) {
	case VIRTIO_IOMMU_INVAL_S_DOMAIN:
		start = 0;
		end = U64_MAX;
		break;
	case VIRTIO_IOMMU_INVAL_S_RANGE:
		if (end < start)
			return VIRTIO_IOMMU_S_INVAL;
		break;
	default:
		return VIRTIO_IOMMU_S_INVAL;
	}
	vhost_iommu_invalidate_dom(v, dom, start, end);
	/* The VFIO groups' shadows are recomposed */
	return vhost_iommu_vfio_invalidate(dom, start, end);
}

/*
 * gpt_foreign_read_fn: one entry of the guest's table, through the memory
 * table, from the VMM's mapping.  The caller runs in the VMM's mm (an
 * ioctl of the owner, or our worker, one of its threads) and holds v->lock.
 */
static int vhost_iommu_read_pte(void *arg, u64 gpa, __le64 *pte)
{
	struct vhost_iommu *v = arg;
	const struct vhost_iotlb_map *map;
	u64 last = gpa + sizeof(*pte) - 1;
	u64 uaddr, val;
	int ret;

	lockdep_assert_held(&v->lock);
	/* No mm (a worker whose VMM is exiting): nothing to read */
	if (!v->dev.umem || !current->mm)
		return -EFAULT;
	map = vhost_iotlb_itree_first(v->dev.umem, gpa, last);
	if (!map || map->start > gpa || map->last < last)
		return -EFAULT;
	/*
	 * One 64-bit load: the guest rewrites an entry with one store, and a
	 * copy may read it in pieces (rep movsb), half old and half new.
	 */
	uaddr = map->addr + gpa - map->start;
	/*
	 * Not with v->lock held: a page to fault in (swapped out, or one
	 * userfaultfd serves, whose handler may need this device) stops the
	 * walk, and its caller faults it in without the lock and walks again.
	 */
	pagefault_disable();
	ret = get_user(val, (u64 __user *)u64_to_user_ptr(uaddr));
	pagefault_enable();
	if (ret) {
		if (!v->fault_in)
			v->fault_in = uaddr;
		return -EFAULT;
	}
	*pte = (__force __le64)val;
	return 0;
}

/**
 * vhost_iommu_table_xlate() - translate through a table domain
 * @v: the device, its lock held
 * @ep: the endpoint
 * @dom: its domain, a table domain
 * @t: @t->iova in; @t->gpa, size and perm out
 * @access: VHOST_IOMMU_PERM_* the access needs
 * @max: the most bytes from @t->iova the caller can use
 *
 * One walk, at most the attachment's levels of reads.  @t->size reaches
 * the end of the page the walk found, or @max.
 *
 * Return: 0, -ENOENT for no valid entry, an address in a reserved region
 * of the endpoint or an entry the device cannot use, -EACCES when the
 * entries forbid the access.
 */
int vhost_iommu_table_xlate(struct vhost_iommu *v, struct vhost_iommu_ep *ep,
			    struct vhost_iommu_domain *dom,
			    struct vhost_iommu_translate *t, u32 access, u64 max)
{
	struct gpt_leaf page;
	u32 i;

	for (i = 0; i < ep->nr_resv; i++)
		if (ep->resv[i].start <= t->iova && t->iova <= ep->resv[i].end)
			return -ENOENT;
	if (gpt_foreign_lookup(&dom->table->ft, t->iova, vhost_iommu_read_pte,
			       v, &page))
		return -ENOENT;
	if (page.prot & IOMMU_READ)
		t->perm |= VHOST_IOMMU_PERM_READ;
	if (page.prot & IOMMU_WRITE)
		t->perm |= VHOST_IOMMU_PERM_WRITE;
	if (!t->perm || (access & ~t->perm)) {
		t->perm = 0;
		return -EACCES;
	}
	t->gpa = page.pa + (t->iova - page.iova);
	t->size = min(page.size - (t->iova - page.iova), max);
	/*
	 * A guest leaf may span a reserved region (a 2 MiB or 1 GiB page
	 * over the MSI window): the answer stops where the region starts.
	 */
	for (i = 0; i < ep->nr_resv; i++)
		if (ep->resv[i].start > t->iova &&
		    ep->resv[i].start - t->iova < t->size)
			t->size = ep->resv[i].start - t->iova;
	return 0;
}
