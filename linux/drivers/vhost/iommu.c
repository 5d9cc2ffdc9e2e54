// SPDX-License-Identifier: GPL-2.0-only
/*
 * vhost-iommu: the virtio-iommu device (virtio 1.3, device ID 23) in the
 * host kernel.
 *
 * The VMM hands over the guest memory table and the request and event
 * queues; requests (ATTACH, DETACH, MAP, UNMAP, PROBE) are then served in
 * the vhost worker without a trip to userspace.  Each domain keeps its
 * IOVA -> guest-physical translation in a generic_pt table (AMD v1 format,
 * used as a software table that grows to 64 input bits on demand) and the
 * boundaries of every MAP in an interval tree: the spec's UNMAP rule (never
 * split a mapping) and overlap checks need the ranges the guest mapped,
 * which the page table alone forgets once it picks large pages.
 *
 * Every request is copied once from guest memory into the kernel before it
 * is looked at, so a guest rewriting it meanwhile changes nothing; guest
 * lengths and addresses are only used through the vhost memory table.
 */
#include <linux/compat.h>
#include <linux/file.h>
#include <linux/generic_pt/gpt.h>
#include <linux/interval_tree.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <linux/vhost.h>
#include <linux/vhost_iommu.h>
#include <linux/virtio_iommu.h>
#include <linux/xarray.h>

#include "../iommu/iommu-pages.h"
#include "vhost.h"

static unsigned int max_domains = 65536;
module_param(max_domains, uint, 0644);
MODULE_PARM_DESC(max_domains, "Most domains one device may hold (default 65536)");

static unsigned long max_mappings = 1UL << 20;
module_param(max_mappings, ulong, 0644);
MODULE_PARM_DESC(max_mappings, "Most mappings one device may hold (default 1M)");

static unsigned long max_table_pages = 1UL << 15;
module_param(max_table_pages, ulong, 0644);
MODULE_PARM_DESC(max_table_pages,
		 "Most page-table pages one device may hold (default 32768: 128 MiB)");

/* Requests per kick before the worker yields */
#define VHOST_IOMMU_WEIGHT	256

/* Faults kept while the guest has no event buffer; later ones are dropped */
#define VHOST_IOMMU_MAX_FAULTS	64

/* No dirty logging (VHOST_F_LOG_ALL): the device writes little, see docs. */
#define VHOST_IOMMU_FEATURES	((VHOST_FEATURES & ~(1ULL << VHOST_F_LOG_ALL)) | \
				 (1ULL << VIRTIO_F_VERSION_1) |			\
				 (1ULL << VIRTIO_IOMMU_F_INPUT_RANGE) |		\
				 (1ULL << VIRTIO_IOMMU_F_DOMAIN_RANGE) |	\
				 (1ULL << VIRTIO_IOMMU_F_MAP_UNMAP) |		\
				 (1ULL << VIRTIO_IOMMU_F_PROBE) |		\
				 (1ULL << VIRTIO_IOMMU_F_BYPASS_CONFIG))

struct vhost_iommu_domain {
	u32 id;
	bool bypass;
	unsigned int nr_endpoints;
	struct list_head endpoints;		/* struct vhost_iommu_ep.node */
	unsigned long nr_mappings;
	struct rb_root_cached mappings;		/* struct vhost_iommu_mapping */
	struct gpt_table pt;
};

struct vhost_iommu_mapping {
	struct interval_tree_node it;		/* [virt_start, virt_end] */
	u64 phys;
	u32 flags;				/* VIRTIO_IOMMU_MAP_F_* */
};

struct vhost_iommu_ep {
	u32 id;
	struct vhost_iommu_domain *domain;
	struct list_head node;			/* in domain->endpoints */
	struct vhost_iommu_bound *binding;	/* a bound vhost device */
	u32 nr_resv;
	struct vhost_iommu_resv_region resv[] __counted_by(nr_resv);
};

/*
 * Misses a bound device may have outstanding; it waits on each.  One past
 * them is not kept, but the device's queues are retried once these are
 * answered, and each misses again where it stopped.
 */
#define VHOST_IOMMU_MAX_MISSES	16

/*
 * A vhost device (vhost-net) bound to an endpoint: its IOTLB misses come
 * here, are translated through the endpoint's domain and the memory table
 * in @work, and UNMAP, DETACH and reset invalidate what it cached.
 */
struct vhost_iommu_bound {
	struct vhost_iommu *v;
	struct vhost_dev *dev;
	u32 endpoint;
	bool dead;				/* under v->lock */
	struct list_head node;			/* in v->bindings, under v->lock */
	struct list_head all;			/* under vhost_iommu_bind_mutex */
	struct work_struct work;
	spinlock_t miss_lock;			/* protects the misses */
	bool misses_lost;			/* retry the device's queues */
	unsigned int nr_misses;
	struct {
		u64 iova;
		int access;
	} misses[VHOST_IOMMU_MAX_MISSES];
};

/*
 * Serialises binding and unbinding.  Lock order: a bound device's
 * vhost_dev.mutex, this, then vhost_iommu.lock, then the bound device's
 * virtqueue mutexes.  A vhost-iommu's own virtqueue mutexes come before
 * its vhost_iommu.lock and have a lockdep class of their own, so that
 * lockdep tells them from those of the devices it serves; a vhost-iommu is
 * never bound itself (that would take the locks the other way round).
 */
static DEFINE_MUTEX(vhost_iommu_bind_mutex);
static LIST_HEAD(vhost_iommu_bindings);

struct vhost_iommu {
	struct vhost_dev dev;
	struct vhost_virtqueue vqs[VHOST_IOMMU_VQ_MAX];
	struct vhost_virtqueue *vqp[VHOST_IOMMU_VQ_MAX];

	/*
	 * @lock protects everything below; taken inside dev.mutex and the
	 * request queue's mutex.
	 */
	struct mutex lock;
	struct vhost_iommu_config cfg;
	bool configured;
	bool running;
	struct xarray endpoints;		/* ID -> struct vhost_iommu_ep */
	struct xarray domains;			/* ID -> struct vhost_iommu_domain */
	unsigned int nr_domains;
	unsigned long nr_mappings;
	long nr_table_pages;			/* over all domains' tables */

	/*
	 * Faults waiting for an event buffer, oldest at @fault_head; under
	 * @fault_lock, which may be taken anywhere (a spinlock, innermost).
	 */
	spinlock_t fault_lock;
	struct virtio_iommu_fault faults[VHOST_IOMMU_MAX_FAULTS];
	unsigned int fault_head;
	unsigned int nr_faults;
	unsigned long faults_dropped;

	struct list_head bindings;		/* under @lock */
};

static struct lock_class_key vhost_iommu_vq_key;

static void vhost_iommu_unbind(struct vhost_iommu_bound *b);
static void vhost_iommu_handle_req_kick(struct vhost_work *work);

static bool vhost_iommu_acked(struct vhost_iommu *v, int bit)
{
	return vhost_has_feature(&v->vqs[VHOST_IOMMU_VQ_REQUEST], bit);
}

static u64 vhost_iommu_granule(struct vhost_iommu *v)
{
	return v->cfg.page_size_mask & -v->cfg.page_size_mask;
}

/* Bound devices behind @dom forget IOVA [@start, @last]. */
static void vhost_iommu_invalidate_dom(struct vhost_iommu *v,
				       struct vhost_iommu_domain *dom,
				       u64 start, u64 last)
{
	struct vhost_iommu_bound *b;
	struct vhost_iommu_ep *ep;

	lockdep_assert_held(&v->lock);
	list_for_each_entry(b, &v->bindings, node) {
		ep = xa_load(&v->endpoints, b->endpoint);
		if (ep && ep->domain == dom)
			vhost_dev_iotlb_invalidate(b->dev, start, last);
	}
}

/* The device bound to @ep, if any, forgets everything. */
static void vhost_iommu_invalidate_ep(struct vhost_iommu *v,
				      struct vhost_iommu_ep *ep)
{
	lockdep_assert_held(&v->lock);
	if (ep->binding)
		vhost_dev_iotlb_invalidate(ep->binding->dev, 0, U64_MAX);
}

static int vhost_iommu_any_leaf(const struct gpt_leaf *leaf, void *arg)
{
	return 1;
}

/* AMD v1: a leaf table spans 2 MiB, each level up 512 times more */
#define VHOST_IOMMU_PT_LEAF_SHIFT	21
#define VHOST_IOMMU_PT_LEVEL_BITS	9

/*
 * Free the tables around @iova that hold nothing any more.  gpt_unmap()
 * only frees a table whose whole span it unmaps, so unmapping part of a
 * table's span (one page, or the edges of a range) leaves the table in
 * place even when nothing is left in it, and the budget would count it
 * for as long as the domain lives.  Going up from the leaf table's span:
 * while nothing is mapped in the span, unmapping the whole span frees its
 * table; the first span that still maps something ends the walk.  Tables
 * hold nothing empty once this ran after each UNMAP, so each check stops
 * at its first entry in use.
 */
static void vhost_iommu_pt_prune(struct vhost_iommu_domain *dom, u64 iova,
				 struct iommu_iotlb_gather *gather)
{
	unsigned int shift;
	u64 span, first;

	for (shift = VHOST_IOMMU_PT_LEAF_SHIFT; shift < 64;
	     shift += VHOST_IOMMU_PT_LEVEL_BITS) {
		span = 1ULL << shift;
		first = iova & ~(span - 1);
		if (gpt_walk(&dom->pt, first, span, vhost_iommu_any_leaf, NULL))
			return;
		gpt_unmap(&dom->pt, first, span, gather);
	}
}

/*
 * Unmap [@iova, @last] (@mapped bytes of it, counted from @iova, hold
 * pages) and free every table it leaves empty; keep the budget's count.
 */
static void vhost_iommu_pt_unmap(struct vhost_iommu *v,
				 struct vhost_iommu_domain *dom, u64 iova,
				 u64 last, u64 mapped)
{
	long tables = atomic_long_read(&dom->pt.nr_tables);
	struct iommu_iotlb_gather gather;

	iommu_iotlb_gather_init(&gather);
	if (mapped)
		gpt_unmap(&dom->pt, iova, mapped, &gather);
	vhost_iommu_pt_prune(dom, iova, &gather);
	if ((iova ^ last) >> VHOST_IOMMU_PT_LEAF_SHIFT)
		vhost_iommu_pt_prune(dom, last, &gather);
	/* Nothing walks this table but us: free right away. */
	iommu_put_pages_list(&gather.freelist);
	v->nr_table_pages += atomic_long_read(&dom->pt.nr_tables) - tables;
}

/* Remove one mapping from the tree and from the page table. */
static void vhost_iommu_unmap_one(struct vhost_iommu *v,
				  struct vhost_iommu_domain *dom,
				  struct vhost_iommu_mapping *m)
{
	interval_tree_remove(&m->it, &dom->mappings);
	if (m->flags & (VIRTIO_IOMMU_MAP_F_READ | VIRTIO_IOMMU_MAP_F_WRITE)) {
		/* Before the request completes, no bound device may use it */
		vhost_iommu_invalidate_dom(v, dom, m->it.start, m->it.last);
		vhost_iommu_pt_unmap(v, dom, m->it.start, m->it.last,
				     m->it.last - m->it.start + 1);
	}
	dom->nr_mappings--;
	v->nr_mappings--;
	kfree(m);
}

static void vhost_iommu_free_domain(struct vhost_iommu *v,
				    struct vhost_iommu_domain *dom)
{
	struct interval_tree_node *node;

	xa_erase(&v->domains, dom->id);
	while ((node = interval_tree_iter_first(&dom->mappings, 0, ULONG_MAX))) {
		struct vhost_iommu_mapping *m =
			container_of(node, struct vhost_iommu_mapping, it);

		interval_tree_remove(node, &dom->mappings);
		dom->nr_mappings--;
		v->nr_mappings--;
		kfree(m);
	}
	if (!dom->bypass) {
		v->nr_table_pages -= atomic_long_read(&dom->pt.nr_tables);
		gpt_deinit(&dom->pt);
	}
	v->nr_domains--;
	kfree(dom);
}

static void vhost_iommu_detach_ep(struct vhost_iommu *v,
				  struct vhost_iommu_ep *ep)
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

/* Device reset: every domain goes, endpoints stay, detached. */
static void vhost_iommu_reset(struct vhost_iommu *v)
{
	struct vhost_iommu_ep *ep;
	unsigned long id;

	lockdep_assert_held(&v->lock);
	xa_for_each(&v->endpoints, id, ep)
		vhost_iommu_detach_ep(v, ep);
}

static bool vhost_iommu_zero(const u8 *p, size_t n)
{
	return !memchr_inv(p, 0, n);
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

	for (i = 0; i < ep->nr_resv; i++)
		if (interval_tree_iter_first(&dom->mappings, ep->resv[i].start,
					     ep->resv[i].end))
			return true;
	return false;
}

static u8 vhost_iommu_attach(struct vhost_iommu *v,
			     const struct virtio_iommu_req_attach *req)
{
	u32 domain = le32_to_cpu(req->domain);
	u32 flags = le32_to_cpu(req->flags);
	struct vhost_iommu_domain *dom;
	struct vhost_iommu_ep *ep;
	bool bypass;
	int ret;

	if (!vhost_iommu_zero(req->reserved, sizeof(req->reserved)) ||
	    (flags & ~VIRTIO_IOMMU_ATTACH_F_BYPASS))
		return VIRTIO_IOMMU_S_INVAL;
	bypass = flags & VIRTIO_IOMMU_ATTACH_F_BYPASS;
	if (bypass && !vhost_iommu_acked(v, VIRTIO_IOMMU_F_BYPASS_CONFIG))
		return VIRTIO_IOMMU_S_INVAL;

	ep = xa_load(&v->endpoints, le32_to_cpu(req->endpoint));
	if (!ep)
		return VIRTIO_IOMMU_S_NOENT;
	if (domain < v->cfg.domain_start || domain > v->cfg.domain_end)
		return VIRTIO_IOMMU_S_RANGE;

	dom = xa_load(&v->domains, domain);
	if (dom) {
		if (dom->bypass != bypass)
			return VIRTIO_IOMMU_S_INVAL;
		if (ep->domain == dom)
			return VIRTIO_IOMMU_S_OK;
		if (vhost_iommu_resv_mapped(dom, ep))
			return VIRTIO_IOMMU_S_INVAL;
	} else {
		struct gpt_amdv1_cfg ptcfg = {
			.levels = 3,
			.nid = NUMA_NO_NODE,
		};

		if (v->nr_domains >= v->cfg.max_domains)
			return VIRTIO_IOMMU_S_NOMEM;
		dom = kzalloc(sizeof(*dom), GFP_KERNEL_ACCOUNT);
		if (!dom)
			return VIRTIO_IOMMU_S_NOMEM;
		dom->id = domain;
		dom->bypass = bypass;
		dom->mappings = RB_ROOT_CACHED;
		INIT_LIST_HEAD(&dom->endpoints);
		if (!bypass &&
		    gpt_amdv1_init(&dom->pt, &ptcfg, GFP_KERNEL_ACCOUNT)) {
			kfree(dom);
			return VIRTIO_IOMMU_S_NOMEM;
		}
		/* Its top table counts against the budget */
		ret = 0;
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
			return VIRTIO_IOMMU_S_NOMEM;
		}
		v->nr_domains++;
		if (!bypass)
			v->nr_table_pages += atomic_long_read(&dom->pt.nr_tables);
	}

	/* Re-attaching is DETACH then ATTACH; the new domain exists already. */
	vhost_iommu_detach_ep(v, ep);
	/* A bound device may have cached bypass translations */
	vhost_iommu_invalidate_ep(v, ep);
	ep->domain = dom;
	list_add(&ep->node, &dom->endpoints);
	dom->nr_endpoints++;
	return VIRTIO_IOMMU_S_OK;
}

static u8 vhost_iommu_detach(struct vhost_iommu *v,
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
	vhost_iommu_detach_ep(v, ep);
	return VIRTIO_IOMMU_S_OK;
}

/*
 * gpt_map() in chunks, within the device's page-table budget.  A chunk is
 * 512 of the largest pages the alignment of @iova against @phys allows (at
 * most 1 GiB pages), aligned: it needs at most a couple of new tables and
 * still takes the largest pages.  Between chunks the budget is checked and
 * the CPU given up, so that one MAP of a huge range that must use small
 * pages can neither eat host memory nor hold the worker for long.
 */
static int vhost_iommu_pt_map(struct vhost_iommu *v,
			      struct vhost_iommu_domain *dom, u64 iova,
			      u64 phys, u64 len, int prot, size_t *mapped)
{
	long others = v->nr_table_pages - atomic_long_read(&dom->pt.nr_tables);
	unsigned int lg = (iova ^ phys) ? __ffs64(iova ^ phys) : 63;
	u64 chunk = 1ULL << (min(lg, 30U) + 9), done = 0, n;
	int ret;

	while (done < len) {
		if (others + atomic_long_read(&dom->pt.nr_tables) >=
		    v->cfg.max_table_pages)
			return -ENOMEM;
		n = min(len - done, chunk - ((iova + done) & (chunk - 1)));
		ret = gpt_map(&dom->pt, iova + done, phys + done, n, prot,
			      GFP_KERNEL_ACCOUNT, mapped);
		if (ret)
			return ret;
		done += n;
		if (done < len)
			cond_resched();
	}
	return 0;
}

static u8 vhost_iommu_map(struct vhost_iommu *v,
			  const struct virtio_iommu_req_map *req)
{
	u64 start = le64_to_cpu(req->virt_start);
	u64 end = le64_to_cpu(req->virt_end);
	u64 phys = le64_to_cpu(req->phys_start);
	u32 flags = le32_to_cpu(req->flags);
	u64 mask = vhost_iommu_granule(v) - 1;
	struct vhost_iommu_domain *dom;
	struct vhost_iommu_mapping *m;
	int prot = 0;
	u64 len;
	int ret;

	if (flags & ~(VIRTIO_IOMMU_MAP_F_READ | VIRTIO_IOMMU_MAP_F_WRITE))
		return VIRTIO_IOMMU_S_INVAL;	/* MMIO is not offered */
	if (end < start)
		return VIRTIO_IOMMU_S_INVAL;
	dom = xa_load(&v->domains, le32_to_cpu(req->domain));
	if (!dom)
		return VIRTIO_IOMMU_S_NOENT;
	if (dom->bypass)
		return VIRTIO_IOMMU_S_INVAL;
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
	if (interval_tree_iter_first(&dom->mappings, start, end))
		return VIRTIO_IOMMU_S_INVAL;
	if (vhost_iommu_dom_resv_meets(dom, start, end))
		return VIRTIO_IOMMU_S_INVAL;
	if (v->nr_mappings >= v->cfg.max_mappings)
		return VIRTIO_IOMMU_S_NOMEM;

	m = kzalloc(sizeof(*m), GFP_KERNEL_ACCOUNT);
	if (!m)
		return VIRTIO_IOMMU_S_NOMEM;
	m->it.start = start;
	m->it.last = end;
	m->phys = phys;
	m->flags = flags;

	if (flags & VIRTIO_IOMMU_MAP_F_READ)
		prot |= IOMMU_READ;
	if (flags & VIRTIO_IOMMU_MAP_F_WRITE)
		prot |= IOMMU_WRITE;
	/* A mapping without access only lives in the tree: it translates nothing. */
	if (prot) {
		long others = v->nr_table_pages -
			      atomic_long_read(&dom->pt.nr_tables);
		size_t mapped = 0;

		ret = vhost_iommu_pt_map(v, dom, start, phys, len, prot,
					 &mapped);
		v->nr_table_pages = others +
				    atomic_long_read(&dom->pt.nr_tables);
		if (ret) {
			/* Undone, with the tables it added up to where it failed */
			vhost_iommu_pt_unmap(v, dom, start,
					     start + min_t(u64, mapped, len - 1),
					     mapped);
			kfree(m);
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
	}
	interval_tree_insert(&m->it, &dom->mappings);
	dom->nr_mappings++;
	v->nr_mappings++;
	return VIRTIO_IOMMU_S_OK;
}

static u8 vhost_iommu_unmap(struct vhost_iommu *v,
			    const struct virtio_iommu_req_unmap *req)
{
	u64 start = le64_to_cpu(req->virt_start);
	u64 end = le64_to_cpu(req->virt_end);
	struct interval_tree_node *node, *next;
	struct vhost_iommu_domain *dom;

	if (!vhost_iommu_zero(req->reserved, sizeof(req->reserved)))
		return VIRTIO_IOMMU_S_INVAL;
	if (end < start)
		return VIRTIO_IOMMU_S_INVAL;
	dom = xa_load(&v->domains, le32_to_cpu(req->domain));
	if (!dom)
		return VIRTIO_IOMMU_S_NOENT;
	if (dom->bypass)
		return VIRTIO_IOMMU_S_INVAL;

	/*
	 * Only the first and the last mapping the range touches can stick
	 * out of it; refuse before removing anything.
	 */
	node = interval_tree_iter_first(&dom->mappings, start, end);
	if (!node)
		return VIRTIO_IOMMU_S_OK;
	if (node->start < start)
		return VIRTIO_IOMMU_S_RANGE;
	node = interval_tree_iter_first(&dom->mappings, end, end);
	if (node && node->last > end)
		return VIRTIO_IOMMU_S_RANGE;

	for (node = interval_tree_iter_first(&dom->mappings, start, end); node;
	     node = next) {
		next = interval_tree_iter_next(node, start, end);
		vhost_iommu_unmap_one(v, dom,
				      container_of(node, struct vhost_iommu_mapping,
						   it));
	}
	return VIRTIO_IOMMU_S_OK;
}

/* Fill @props (probe_size bytes, zeroed) with the endpoint's properties. */
static u8 vhost_iommu_probe(struct vhost_iommu *v,
			    const struct virtio_iommu_req_probe *req,
			    u8 *props)
{
	struct virtio_iommu_probe_resv_mem *p = (void *)props;
	struct vhost_iommu_ep *ep;
	u32 i;

	/* reserved is ignored (virtio 1.3: MUST) */
	ep = xa_load(&v->endpoints, le32_to_cpu(req->endpoint));
	if (!ep)
		return VIRTIO_IOMMU_S_NOENT;
	/* ADD_ENDPOINT and SET_CONFIG made sure they fit probe_size. */
	for (i = 0; i < ep->nr_resv; i++, p++) {
		p->head.type = cpu_to_le16(VIRTIO_IOMMU_PROBE_T_RESV_MEM);
		p->head.length = cpu_to_le16(sizeof(*p) - sizeof(p->head));
		p->subtype = ep->resv[i].subtype;
		p->start = cpu_to_le64(ep->resv[i].start);
		p->end = cpu_to_le64(ep->resv[i].end);
	}
	return VIRTIO_IOMMU_S_OK;
}

union vhost_iommu_req {
	struct virtio_iommu_req_head head;
	struct virtio_iommu_req_attach attach;
	struct virtio_iommu_req_detach detach;
	struct virtio_iommu_req_map map;
	struct virtio_iommu_req_unmap unmap;
	struct virtio_iommu_req_probe probe;
};

/*
 * Serve one request: @out device-readable then @in device-writable iovecs
 * in vq->iov.  Returns the used length: the bytes written, 0 when the
 * request could not be parsed or answered.
 */
static u32 vhost_iommu_handle_one(struct vhost_iommu *v,
				  struct vhost_virtqueue *vq,
				  unsigned int out, unsigned int in)
{
	struct virtio_iommu_req_tail tail = {};
	size_t out_len = iov_length(vq->iov, out);
	size_t in_len = iov_length(vq->iov + out, in);
	union vhost_iommu_req req = {};
	struct iov_iter from, to;
	size_t size, tail_off = 0;
	u8 *props = NULL;
	u8 status;
	u32 used = 0;

	iov_iter_init(&from, ITER_SOURCE, vq->iov, out, out_len);
	if (copy_from_iter(&req.head, sizeof(req.head), &from) !=
	    sizeof(req.head))
		return 0;

	switch (req.head.type) {
	case VIRTIO_IOMMU_T_ATTACH:
		size = offsetof(struct virtio_iommu_req_attach, tail);
		break;
	case VIRTIO_IOMMU_T_DETACH:
		size = offsetof(struct virtio_iommu_req_detach, tail);
		break;
	case VIRTIO_IOMMU_T_MAP:
		size = offsetof(struct virtio_iommu_req_map, tail);
		break;
	case VIRTIO_IOMMU_T_UNMAP:
		size = offsetof(struct virtio_iommu_req_unmap, tail);
		break;
	case VIRTIO_IOMMU_T_PROBE:
		/* Not negotiated: a request type the device does not know */
		if (!vhost_iommu_acked(v, VIRTIO_IOMMU_F_PROBE))
			return 0;
		size = sizeof(struct virtio_iommu_req_probe);
		tail_off = v->cfg.probe_size;
		break;
	default:
		return 0;	/* unknown type: leave the buffer unwritten */
	}
	if (in_len < sizeof(tail))
		return 0;	/* nowhere to put the answer */

	/* The head's reserved bytes are ignored (virtio 1.3: MUST). */
	if (in_len < tail_off + sizeof(tail)) {
		/*
		 * PROBE with less than probe_size bytes for properties: no
		 * property, INVAL in the tail at the end of the buffer.
		 */
		tail_off = in_len - sizeof(tail);
		status = VIRTIO_IOMMU_S_INVAL;
	} else if (out_len < size) {
		status = VIRTIO_IOMMU_S_INVAL;
	} else if (copy_from_iter((u8 *)&req + sizeof(req.head),
				  size - sizeof(req.head), &from) !=
		   size - sizeof(req.head)) {
		status = VIRTIO_IOMMU_S_IOERR;
	} else {
		if (tail_off) {
			props = kzalloc(tail_off, GFP_KERNEL_ACCOUNT);
			if (!props) {
				status = VIRTIO_IOMMU_S_NOMEM;
				goto answer;
			}
		}
		mutex_lock(&v->lock);
		switch (req.head.type) {
		case VIRTIO_IOMMU_T_ATTACH:
			status = vhost_iommu_attach(v, &req.attach);
			break;
		case VIRTIO_IOMMU_T_DETACH:
			status = vhost_iommu_detach(v, &req.detach);
			break;
		case VIRTIO_IOMMU_T_MAP:
			status = vhost_iommu_acked(v, VIRTIO_IOMMU_F_MAP_UNMAP) ?
				 vhost_iommu_map(v, &req.map) :
				 VIRTIO_IOMMU_S_UNSUPP;
			break;
		case VIRTIO_IOMMU_T_UNMAP:
			status = vhost_iommu_acked(v, VIRTIO_IOMMU_F_MAP_UNMAP) ?
				 vhost_iommu_unmap(v, &req.unmap) :
				 VIRTIO_IOMMU_S_UNSUPP;
			break;
		default:
			status = vhost_iommu_probe(v, &req.probe, props);
			break;
		}
		mutex_unlock(&v->lock);
	}

answer:
	iov_iter_init(&to, ITER_DEST, vq->iov + out, in, in_len);
	if (tail_off) {
		/*
		 * Properties, zero past the last one; only zeroes when the
		 * request failed.
		 */
		if (props)
			used = copy_to_iter(props, tail_off, &to);
		else
			used = iov_iter_zero(tail_off, &to);
		kfree(props);
		if (used != tail_off)
			return 0;
	}
	tail.status = status;
	if (copy_to_iter(&tail, sizeof(tail), &to) != sizeof(tail))
		return 0;
	return tail_off + sizeof(tail);
}

/*
 * vhost_get_vq_desc() failed on a chain (a loop, an address outside the
 * memory table, a bad index): hand the head back with used length 0 so the
 * queue keeps moving.  vhost_get_vq_desc() does not return the head on
 * error, so read it from the avail ring ourselves.
 */
static bool vhost_iommu_skip_bad(struct vhost_iommu *v,
				 struct vhost_virtqueue *vq)
{
	__virtio16 head;
	u16 idx = vq->last_avail_idx;

	if (vq->avail_idx == idx)
		return false;		/* could not even read avail->idx */
	if (get_user(head, &vq->avail->ring[idx & (vq->num - 1)]))
		return false;
	vq->last_avail_idx++;
	if (vhost16_to_cpu(vq, head) < vq->num)
		vhost_add_used(vq, vhost16_to_cpu(vq, head), 0);
	return true;
}

static void vhost_iommu_handle_req_kick(struct vhost_work *work)
{
	struct vhost_virtqueue *vq = container_of(work, struct vhost_virtqueue,
						  poll.work);
	struct vhost_iommu *v = container_of(vq->dev, struct vhost_iommu, dev);
	unsigned int out, in;
	int head, n = 0;
	u32 len;

	mutex_lock(&vq->mutex);
	if (!vhost_vq_get_backend(vq))
		goto out;
	vhost_disable_notify(&v->dev, vq);
	for (;;) {
		head = vhost_get_vq_desc(vq, vq->iov, ARRAY_SIZE(vq->iov),
					 &out, &in, NULL, NULL);
		if (unlikely(head < 0)) {
			if (!vhost_iommu_skip_bad(v, vq) ||
			    vhost_exceeds_weight(vq, ++n, 0))
				break;
			continue;
		}
		if (head == vq->num) {
			if (unlikely(vhost_enable_notify(&v->dev, vq))) {
				vhost_disable_notify(&v->dev, vq);
				continue;
			}
			break;
		}
		len = vhost_iommu_handle_one(v, vq, out, in);
		if (vhost_add_used(vq, head, len))
			break;
		if (vhost_exceeds_weight(vq, ++n, 0))
			break;
	}
	vhost_signal(&v->dev, vq);
out:
	mutex_unlock(&vq->mutex);
}

/*
 * Queue a fault record for the guest and have the worker deliver it.  May be
 * called from any context that can take a spinlock.
 */
static void vhost_iommu_report_fault(struct vhost_iommu *v, u8 reason,
				     u32 flags, u32 endpoint, u64 address)
{
	struct virtio_iommu_fault *f;
	unsigned long irqflags;

	spin_lock_irqsave(&v->fault_lock, irqflags);
	if (v->nr_faults == VHOST_IOMMU_MAX_FAULTS) {
		v->faults_dropped++;
	} else {
		f = &v->faults[(v->fault_head + v->nr_faults++) %
			       VHOST_IOMMU_MAX_FAULTS];
		memset(f, 0, sizeof(*f));
		f->reason = reason;
		f->flags = cpu_to_le32(flags);
		f->endpoint = cpu_to_le32(endpoint);
		f->address = cpu_to_le64(address);
	}
	spin_unlock_irqrestore(&v->fault_lock, irqflags);
	vhost_poll_queue(&v->vqs[VHOST_IOMMU_VQ_EVENT].poll);
}

static bool vhost_iommu_peek_fault(struct vhost_iommu *v,
				   struct virtio_iommu_fault *f)
{
	bool have;

	spin_lock_irq(&v->fault_lock);
	have = v->nr_faults;
	if (have)
		*f = v->faults[v->fault_head];
	spin_unlock_irq(&v->fault_lock);
	return have;
}

static void vhost_iommu_pop_fault(struct vhost_iommu *v)
{
	spin_lock_irq(&v->fault_lock);
	v->fault_head = (v->fault_head + 1) % VHOST_IOMMU_MAX_FAULTS;
	v->nr_faults--;
	spin_unlock_irq(&v->fault_lock);
}

static void vhost_iommu_clear_faults(struct vhost_iommu *v)
{
	spin_lock_irq(&v->fault_lock);
	v->fault_head = 0;
	v->nr_faults = 0;
	spin_unlock_irq(&v->fault_lock);
}

/*
 * Deliver pending faults into the event queue's buffers, in order, one
 * record a buffer.  A buffer too small for a record goes back with used
 * length 0 and the record waits for the next one.  Run on a kick (the guest
 * added buffers) and after each report.
 */
static void vhost_iommu_handle_evt_kick(struct vhost_work *work)
{
	struct vhost_virtqueue *vq = container_of(work, struct vhost_virtqueue,
						  poll.work);
	struct vhost_iommu *v = container_of(vq->dev, struct vhost_iommu, dev);
	struct virtio_iommu_fault f;
	unsigned int out, in;
	struct iov_iter to;
	bool added = false;
	int head, n = 0;
	u32 len;

	mutex_lock(&vq->mutex);
	if (!vhost_vq_get_backend(vq))
		goto out;
	/*
	 * Kicks only matter while faults wait for buffers: notifications are
	 * on only then.  A new fault queues this work itself.
	 */
	vhost_disable_notify(&v->dev, vq);
	while (vhost_iommu_peek_fault(v, &f)) {
		head = vhost_get_vq_desc(vq, vq->iov, ARRAY_SIZE(vq->iov),
					 &out, &in, NULL, NULL);
		if (unlikely(head < 0)) {
			if (!vhost_iommu_skip_bad(v, vq))
				break;
			added = true;
			continue;
		}
		if (head == vq->num) {
			/* No buffer: wait for the guest's next kick */
			if (unlikely(vhost_enable_notify(&v->dev, vq))) {
				vhost_disable_notify(&v->dev, vq);
				continue;
			}
			break;
		}
		len = 0;
		if (!out && iov_length(vq->iov, in) >= sizeof(f)) {
			iov_iter_init(&to, ITER_DEST, vq->iov, in, sizeof(f));
			if (copy_to_iter(&f, sizeof(f), &to) == sizeof(f)) {
				len = sizeof(f);
				vhost_iommu_pop_fault(v);
			}
		}
		if (vhost_add_used(vq, head, len))
			break;
		added = true;
		if (vhost_exceeds_weight(vq, ++n, 0))
			break;
	}
	if (added)
		vhost_signal(&v->dev, vq);
out:
	mutex_unlock(&vq->mutex);
}

static int vhost_iommu_open(struct inode *inode, struct file *f)
{
	struct vhost_iommu *v;
	int i;

	v = kvzalloc(sizeof(*v), GFP_KERNEL_ACCOUNT);
	if (!v)
		return -ENOMEM;
	mutex_init(&v->lock);
	spin_lock_init(&v->fault_lock);
	INIT_LIST_HEAD(&v->bindings);
	xa_init(&v->endpoints);
	xa_init(&v->domains);
	v->vqs[VHOST_IOMMU_VQ_REQUEST].handle_kick = vhost_iommu_handle_req_kick;
	v->vqs[VHOST_IOMMU_VQ_EVENT].handle_kick = vhost_iommu_handle_evt_kick;
	for (i = 0; i < VHOST_IOMMU_VQ_MAX; i++)
		v->vqp[i] = &v->vqs[i];
	vhost_dev_init(&v->dev, v->vqp, VHOST_IOMMU_VQ_MAX, UIO_MAXIOV,
		       VHOST_IOMMU_WEIGHT, 0, true, NULL);
	for (i = 0; i < VHOST_IOMMU_VQ_MAX; i++)
		lockdep_set_class(&v->vqs[i].mutex, &vhost_iommu_vq_key);
	f->private_data = v;
	return 0;
}

static void vhost_iommu_set_backend(struct vhost_iommu *v, void *backend)
{
	int i;

	for (i = 0; i < VHOST_IOMMU_VQ_MAX; i++) {
		mutex_lock(&v->vqs[i].mutex);
		vhost_vq_set_backend(&v->vqs[i], backend);
		mutex_unlock(&v->vqs[i].mutex);
	}
}

/* Stop serving the queues and reset the device.  Caller holds dev.mutex. */
static void vhost_iommu_stop(struct vhost_iommu *v)
{
	vhost_iommu_set_backend(v, NULL);
	vhost_dev_flush(&v->dev);
	mutex_lock(&v->lock);
	v->running = false;
	vhost_iommu_reset(v);
	mutex_unlock(&v->lock);
	vhost_iommu_clear_faults(v);
}

static int vhost_iommu_release(struct inode *inode, struct file *f)
{
	struct vhost_iommu *v = f->private_data;
	struct vhost_iommu_bound *b, *tmp;
	struct vhost_iommu_ep *ep;
	unsigned long id;

	mutex_lock(&vhost_iommu_bind_mutex);
	list_for_each_entry_safe(b, tmp, &v->bindings, node)
		vhost_iommu_unbind(b);
	mutex_unlock(&vhost_iommu_bind_mutex);
	vhost_iommu_stop(v);
	vhost_dev_stop(&v->dev);
	vhost_dev_cleanup(&v->dev);
	xa_for_each(&v->endpoints, id, ep)
		kfree(ep);
	xa_destroy(&v->endpoints);
	xa_destroy(&v->domains);
	kvfree(v);
	return 0;
}

static int vhost_iommu_start(struct vhost_iommu *v)
{
	int i, ret = 0;

	if (!v->configured)
		return -EINVAL;
	for (i = 0; i < VHOST_IOMMU_VQ_MAX && !ret; i++) {
		struct vhost_virtqueue *vq = &v->vqs[i];

		mutex_lock(&vq->mutex);
		/* access_ok() passes a ring that was never set: check that */
		if (!vq->desc || !vq->avail || !vq->used ||
		    !vhost_vq_access_ok(vq)) {
			ret = -EFAULT;
		} else {
			vhost_vq_set_backend(vq, v);
			ret = vhost_vq_init_access(vq);
		}
		mutex_unlock(&vq->mutex);
	}
	if (ret) {
		vhost_iommu_set_backend(v, NULL);
		return ret;
	}
	mutex_lock(&v->lock);
	v->running = true;
	mutex_unlock(&v->lock);
	/* Serve whatever the guest queued before the start. */
	vhost_poll_queue(&v->vqs[VHOST_IOMMU_VQ_REQUEST].poll);
	vhost_poll_queue(&v->vqs[VHOST_IOMMU_VQ_EVENT].poll);
	return 0;
}

static int vhost_iommu_resv_fit(u32 nr_resv, u32 probe_size)
{
	return (u64)nr_resv * sizeof(struct virtio_iommu_probe_resv_mem) <=
	       probe_size;
}

static long vhost_iommu_set_config(struct vhost_iommu *v,
				   struct vhost_iommu_config __user *argp)
{
	struct vhost_iommu_config c;
	struct vhost_iommu_ep *ep;
	unsigned long id;
	long ret = 0;

	if (copy_from_user(&c, argp, sizeof(c)))
		return -EFAULT;
	if (c.flags || c.bypass > 1 ||
	    !vhost_iommu_zero(c.padding, sizeof(c.padding)) ||
	    !vhost_iommu_zero((u8 *)c.reserved, sizeof(c.reserved)))
		return -EINVAL;
	/* The granule is at least the page size the page table can map. */
	if (!c.page_size_mask || (c.page_size_mask & (SZ_4K - 1)) ||
	    c.input_end < c.input_start || c.domain_end < c.domain_start ||
	    c.probe_size % 4 || c.probe_size > SZ_64K)
		return -EINVAL;
	if (c.max_domains > max_domains || c.max_mappings > max_mappings ||
	    c.max_table_pages > max_table_pages)
		return -EINVAL;
	if (!c.max_domains)
		c.max_domains = max_domains;
	if (!c.max_mappings)
		c.max_mappings = max_mappings;
	if (!c.max_table_pages)
		c.max_table_pages = max_table_pages;

	mutex_lock(&v->lock);
	if (v->running) {
		struct vhost_iommu_config now = v->cfg;

		/* Only the guest-writable field may change now. */
		now.bypass = c.bypass;
		if (memcmp(&now, &c, sizeof(c))) {
			ret = -EBUSY;
		} else if (v->cfg.bypass != c.bypass) {
			struct vhost_iommu_bound *b;

			v->cfg.bypass = c.bypass;
			/* Detached endpoints' translations change */
			list_for_each_entry(b, &v->bindings, node)
				vhost_dev_iotlb_invalidate(b->dev, 0, U64_MAX);
		}
		goto out;
	}
	xa_for_each(&v->endpoints, id, ep) {
		if (!vhost_iommu_resv_fit(ep->nr_resv, c.probe_size)) {
			ret = -ENOSPC;
			goto out;
		}
	}
	v->cfg = c;
	v->configured = true;
out:
	mutex_unlock(&v->lock);
	return ret;
}

static long vhost_iommu_add_endpoint(struct vhost_iommu *v,
				     struct vhost_iommu_endpoint __user *argp)
{
	struct vhost_iommu_endpoint e;
	struct vhost_iommu_ep *ep;
	u32 i, j, msi = 0;
	long ret;

	if (copy_from_user(&e, argp, sizeof(e)))
		return -EFAULT;
	if (e.flags || e.reserved || e.reserved2[0] || e.reserved2[1] ||
	    e.nr_resv > VHOST_IOMMU_MAX_RESV)
		return -EINVAL;
	ep = kzalloc(struct_size(ep, resv, e.nr_resv), GFP_KERNEL_ACCOUNT);
	if (!ep)
		return -ENOMEM;
	ep->id = e.id;
	ep->nr_resv = e.nr_resv;
	if (copy_from_user(ep->resv, u64_to_user_ptr(e.resv_ptr),
			   flex_array_size(ep, resv, e.nr_resv))) {
		ret = -EFAULT;
		goto err;
	}
	ret = -EINVAL;
	for (i = 0; i < e.nr_resv; i++) {
		struct vhost_iommu_resv_region *r = &ep->resv[i];

		if (r->end < r->start ||
		    r->subtype > VHOST_IOMMU_RESV_MEM_T_MSI ||
		    !vhost_iommu_zero(r->reserved, sizeof(r->reserved)))
			goto err;
		/* What the device SHOULD NOT present: two MSI windows... */
		if (r->subtype == VHOST_IOMMU_RESV_MEM_T_MSI && msi++)
			goto err;
		/* ...and regions that overlap */
		for (j = 0; j < i; j++)
			if (ep->resv[j].start <= r->end &&
			    r->start <= ep->resv[j].end)
				goto err;
	}

	mutex_lock(&v->lock);
	if (v->configured && !vhost_iommu_resv_fit(e.nr_resv, v->cfg.probe_size))
		ret = -ENOSPC;
	else
		ret = xa_insert(&v->endpoints, e.id, ep, GFP_KERNEL_ACCOUNT);
	mutex_unlock(&v->lock);
	if (ret == -EBUSY)
		ret = -EEXIST;
	if (ret)
		goto err;
	return 0;
err:
	kfree(ep);
	return ret;
}

static long vhost_iommu_del_endpoint(struct vhost_iommu *v,
				     u32 __user *argp)
{
	struct vhost_iommu_bound *b = NULL;
	struct vhost_iommu_ep *ep;
	u32 id;

	if (get_user(id, argp))
		return -EFAULT;
	/*
	 * The endpoint goes and its binding with it, under the bind mutex:
	 * no VHOST_SET_IOMMU may bind it in between and stay bound to an
	 * endpoint that is gone.  Requests run under v->lock: none is
	 * looking at the endpoint once it is erased.
	 */
	mutex_lock(&vhost_iommu_bind_mutex);
	mutex_lock(&v->lock);
	ep = xa_erase(&v->endpoints, id);
	if (ep) {
		b = ep->binding;
		vhost_iommu_detach_ep(v, ep);
	}
	mutex_unlock(&v->lock);
	if (b)
		vhost_iommu_unbind(b);
	mutex_unlock(&vhost_iommu_bind_mutex);
	if (!ep)
		return -ENOENT;
	kfree(ep);
	return 0;
}

/*
 * Translate @t->iova as @t->endpoint's DMA: fill @t->gpa, size and perm.
 * @access (VHOST_IOMMU_PERM_READ and _WRITE, or 0 to only look) must be
 * allowed.  Returns 0, -ENODEV for an unknown endpoint, or -ENOENT /
 * -EACCES with the virtio fault reason in @reason.  Caller holds v->lock.
 */
static int vhost_iommu_xlate(struct vhost_iommu *v,
			     struct vhost_iommu_translate *t, u32 access,
			     u8 *reason)
{
	struct interval_tree_node *node;
	struct vhost_iommu_mapping *m;
	struct vhost_iommu_ep *ep;
	phys_addr_t pa;

	lockdep_assert_held(&v->lock);
	t->gpa = 0;
	t->size = 0;
	t->perm = 0;
	ep = xa_load(&v->endpoints, t->endpoint);
	if (!ep)
		return -ENODEV;
	*reason = VIRTIO_IOMMU_FAULT_R_DOMAIN;
	if ((!ep->domain && v->cfg.bypass) ||
	    (ep->domain && ep->domain->bypass)) {
		t->gpa = t->iova;
		t->perm = VHOST_IOMMU_PERM_READ | VHOST_IOMMU_PERM_WRITE |
			  VHOST_IOMMU_PERM_BYPASS;
		return 0;
	}
	if (!ep->domain)
		return -ENOENT;

	*reason = VIRTIO_IOMMU_FAULT_R_MAPPING;
	node = interval_tree_iter_first(&ep->domain->mappings, t->iova,
					t->iova);
	m = node ? container_of(node, struct vhost_iommu_mapping, it) : NULL;
	if (!m || !(m->flags & (VIRTIO_IOMMU_MAP_F_READ |
				VIRTIO_IOMMU_MAP_F_WRITE)))
		return -ENOENT;
	/* The table and the tree disagreeing would be our bug */
	if (WARN_ON_ONCE(gpt_lookup(&ep->domain->pt, t->iova, &pa, NULL,
				    NULL)))
		return -ENOENT;
	if (m->flags & VIRTIO_IOMMU_MAP_F_READ)
		t->perm |= VHOST_IOMMU_PERM_READ;
	if (m->flags & VIRTIO_IOMMU_MAP_F_WRITE)
		t->perm |= VHOST_IOMMU_PERM_WRITE;
	if (access & ~t->perm) {
		t->perm = 0;
		return -EACCES;
	}
	t->gpa = pa;
	t->size = m->it.last - t->iova + 1;
	return 0;
}

static long vhost_iommu_translate(struct vhost_iommu *v,
				  struct vhost_iommu_translate __user *argp)
{
	struct vhost_iommu_translate t;
	u32 access = 0, fault = VIRTIO_IOMMU_FAULT_F_ADDRESS;
	u8 reason;
	long ret;

	if (copy_from_user(&t, argp, sizeof(t)))
		return -EFAULT;
	if ((t.flags & ~(VHOST_IOMMU_TRANSLATE_F_READ |
			 VHOST_IOMMU_TRANSLATE_F_WRITE |
			 VHOST_IOMMU_TRANSLATE_F_FAULT)) || t.reserved)
		return -EINVAL;
	if (t.flags & VHOST_IOMMU_TRANSLATE_F_READ) {
		access |= VHOST_IOMMU_PERM_READ;
		fault |= VIRTIO_IOMMU_FAULT_F_READ;
	}
	if (t.flags & VHOST_IOMMU_TRANSLATE_F_WRITE) {
		access |= VHOST_IOMMU_PERM_WRITE;
		fault |= VIRTIO_IOMMU_FAULT_F_WRITE;
	}
	mutex_lock(&v->lock);
	ret = vhost_iommu_xlate(v, &t, access, &reason);
	mutex_unlock(&v->lock);
	if ((ret == -ENOENT || ret == -EACCES) &&
	    (t.flags & VHOST_IOMMU_TRANSLATE_F_FAULT))
		vhost_iommu_report_fault(v, reason, fault, t.endpoint, t.iova);
	if (ret)
		return ret;
	return copy_to_user(argp, &t, sizeof(t)) ? -EFAULT : 0;
}

/* Answer the misses of a bound device, in a kworker */
static void vhost_iommu_miss_work(struct work_struct *work)
{
	struct vhost_iommu_bound *b = container_of(work,
						     struct vhost_iommu_bound,
						     work);
	struct vhost_iommu *v = b->v;
	const struct vhost_iotlb_map *map;
	struct vhost_iommu_translate t;
	u32 access, fault;
	u64 iova, size;
	u8 reason, perm;
	int ret, miss_access;
	bool lost;

	for (;;) {
		spin_lock(&b->miss_lock);
		if (!b->nr_misses) {
			lost = b->misses_lost;
			b->misses_lost = false;
			spin_unlock(&b->miss_lock);
			/* Queues that missed meanwhile miss again, kept now */
			if (lost)
				vhost_dev_iotlb_retry(b->dev);
			break;
		}
		iova = b->misses[0].iova;
		miss_access = b->misses[0].access;
		access = miss_access;
		memmove(&b->misses[0], &b->misses[1],
			--b->nr_misses * sizeof(b->misses[0]));
		spin_unlock(&b->miss_lock);

		fault = VIRTIO_IOMMU_FAULT_F_ADDRESS;
		perm = 0;
		if (access & VHOST_ACCESS_RO) {
			perm |= VHOST_IOMMU_PERM_READ;
			fault |= VIRTIO_IOMMU_FAULT_F_READ;
		}
		if (access & VHOST_ACCESS_WO) {
			perm |= VHOST_IOMMU_PERM_WRITE;
			fault |= VIRTIO_IOMMU_FAULT_F_WRITE;
		}
		t = (struct vhost_iommu_translate){
			.endpoint = b->endpoint, .iova = iova,
		};
		/*
		 * Translate and fill the device's IOTLB under v->lock, so
		 * that no UNMAP can come between and leave a stale entry.
		 */
		mutex_lock(&v->lock);
		if (b->dead || !v->running) {
			mutex_unlock(&v->lock);
			vhost_dev_iotlb_unanswered(b->dev, iova, miss_access);
			continue;
		}
		ret = vhost_iommu_xlate(v, &t, perm, &reason);
		if (!ret) {
			/* Guest-physical to the VMM's address, as vhost has it */
			map = vhost_iotlb_itree_first(v->dev.umem, t.gpa, t.gpa);
			if (!map) {
				ret = -ENOENT;
				reason = VIRTIO_IOMMU_FAULT_R_UNKNOWN;
			}
		}
		if (!ret) {
			size = map->last - t.gpa + 1;
			if (t.size && t.size < size)
				size = t.size;
			access = 0;
			if (t.perm & VHOST_IOMMU_PERM_READ)
				access |= VHOST_ACCESS_RO;
			if (t.perm & VHOST_IOMMU_PERM_WRITE)
				access |= VHOST_ACCESS_WO;
			ret = vhost_dev_iotlb_update(b->dev, iova, size,
						     map->addr + t.gpa - map->start,
						     access);
		}
		mutex_unlock(&v->lock);
		/* The device's access faults: it stays stopped, the guest hears */
		if (ret)
			vhost_dev_iotlb_unanswered(b->dev, iova, miss_access);
		if (ret == -ENOENT || ret == -EACCES)
			vhost_iommu_report_fault(v, reason, fault, b->endpoint,
						 iova);
	}
}

/*
 * vhost_iotlb_ops.miss: a bound device's virtqueue mutex and iotlb_lock
 * are held.  A miss past the ones kept is retried.
 */
static bool vhost_iommu_miss(void *data, struct vhost_dev *dev, u64 iova,
			     int access)
{
	struct vhost_iommu_bound *b = data;
	bool kept;

	spin_lock(&b->miss_lock);
	kept = b->nr_misses < VHOST_IOMMU_MAX_MISSES;
	if (kept) {
		b->misses[b->nr_misses].iova = iova;
		b->misses[b->nr_misses].access = access;
		b->nr_misses++;
	} else {
		b->misses_lost = true;
	}
	spin_unlock(&b->miss_lock);
	queue_work(system_unbound_wq, &b->work);
	return kept;
}

/*
 * Undo a binding, with vhost_iommu_bind_mutex held: take our ops and our
 * translations out of the device.
 */
static void vhost_iommu_unbind(struct vhost_iommu_bound *b)
{
	struct vhost_iommu *v = b->v;
	struct vhost_iommu_ep *ep;

	lockdep_assert_held(&vhost_iommu_bind_mutex);
	mutex_lock(&v->lock);
	b->dead = true;
	list_del(&b->node);
	ep = xa_load(&v->endpoints, b->endpoint);
	if (ep && ep->binding == b)
		ep->binding = NULL;
	mutex_unlock(&v->lock);
	vhost_dev_set_iotlb_ops(b->dev, NULL, NULL);
	/* No miss can come now; finish the one in flight */
	cancel_work_sync(&b->work);
	vhost_dev_iotlb_invalidate(b->dev, 0, U64_MAX);
	list_del(&b->all);
	kfree(b);
}

/* vhost_iotlb_ops.unbind: @dev is being cleaned up */
static void vhost_iommu_dev_gone(struct vhost_dev *dev)
{
	struct vhost_iommu_bound *b, *tmp;

	mutex_lock(&vhost_iommu_bind_mutex);
	list_for_each_entry_safe(b, tmp, &vhost_iommu_bindings, all)
		if (b->dev == dev)
			vhost_iommu_unbind(b);
	mutex_unlock(&vhost_iommu_bind_mutex);
}

static const struct vhost_iotlb_ops vhost_iommu_iotlb_ops = {
	.owner	= THIS_MODULE,
	.miss	= vhost_iommu_miss,
	.unbind	= vhost_iommu_dev_gone,
};

static const struct file_operations vhost_iommu_fops;

/* vhost_iotlb_provider.bind: VHOST_SET_IOMMU on @dev, @dev->mutex held */
static int vhost_iommu_bind(struct file *file, u32 endpoint,
			    struct vhost_dev *dev)
{
	struct vhost_iommu_bound *b;
	struct vhost_iommu_ep *ep;
	struct vhost_iommu *v;
	int ret = 0;

	if (file->f_op != &vhost_iommu_fops)
		return -EINVAL;
	v = file->private_data;
	/*
	 * Never a vhost-iommu (this one or another): serving a request, a
	 * vhost-iommu takes the virtqueue mutexes of the devices bound to it,
	 * and two bound to each other would take them in opposite orders.
	 * vhost refuses devices without an IOTLB already; say it here too.
	 */
	if (dev->nvqs && dev->vqs[0]->handle_kick == vhost_iommu_handle_req_kick)
		return -EINVAL;
	b = kzalloc(sizeof(*b), GFP_KERNEL_ACCOUNT);
	if (!b)
		return -ENOMEM;
	b->v = v;
	b->dev = dev;
	b->endpoint = endpoint;
	spin_lock_init(&b->miss_lock);
	INIT_WORK(&b->work, vhost_iommu_miss_work);

	mutex_lock(&vhost_iommu_bind_mutex);
	mutex_lock(&v->lock);
	ep = xa_load(&v->endpoints, endpoint);
	if (!ep) {
		ret = -ENOENT;
	} else if (ep->binding) {
		ret = -EBUSY;
	} else {
		ep->binding = b;
		list_add(&b->node, &v->bindings);
		list_add(&b->all, &vhost_iommu_bindings);
	}
	mutex_unlock(&v->lock);
	if (!ret)
		vhost_dev_set_iotlb_ops(dev, &vhost_iommu_iotlb_ops, b);
	mutex_unlock(&vhost_iommu_bind_mutex);
	if (ret)
		kfree(b);
	return ret;
}

static const struct vhost_iotlb_provider vhost_iommu_provider = {
	.owner	= THIS_MODULE,
	.bind	= vhost_iommu_bind,
};

static long vhost_iommu_set_features(struct vhost_iommu *v, u64 features)
{
	int i;

	if (features & ~VHOST_IOMMU_FEATURES)
		return -EOPNOTSUPP;
	if (v->running)
		return -EBUSY;
	for (i = 0; i < VHOST_IOMMU_VQ_MAX; i++) {
		mutex_lock(&v->vqs[i].mutex);
		v->vqs[i].acked_features = features;
		mutex_unlock(&v->vqs[i].mutex);
	}
	return 0;
}

static long vhost_iommu_ioctl(struct file *f, unsigned int ioctl,
			      unsigned long arg)
{
	struct vhost_iommu *v = f->private_data;
	void __user *argp = (void __user *)arg;
	u64 __user *featurep = argp;
	u64 features;
	u32 running;
	long ret;

	mutex_lock(&v->dev.mutex);
	if (ioctl == VHOST_GET_FEATURES) {
		features = VHOST_IOMMU_FEATURES;
		ret = copy_to_user(featurep, &features, sizeof(features)) ?
		      -EFAULT : 0;
		goto out;
	}
	if (ioctl != VHOST_SET_OWNER) {
		ret = vhost_dev_check_owner(&v->dev);
		if (ret)
			goto out;
	}

	switch (ioctl) {
	case VHOST_SET_FEATURES:
		if (copy_from_user(&features, featurep, sizeof(features)))
			ret = -EFAULT;
		else
			ret = vhost_iommu_set_features(v, features);
		break;
	case VHOST_IOMMU_SET_CONFIG:
		ret = vhost_iommu_set_config(v, argp);
		break;
	case VHOST_IOMMU_GET_CONFIG:
		mutex_lock(&v->lock);
		ret = !v->configured ? -ENODATA :
		      copy_to_user(argp, &v->cfg, sizeof(v->cfg)) ? -EFAULT : 0;
		mutex_unlock(&v->lock);
		break;
	case VHOST_IOMMU_ADD_ENDPOINT:
		ret = vhost_iommu_add_endpoint(v, argp);
		break;
	case VHOST_IOMMU_DEL_ENDPOINT:
		ret = vhost_iommu_del_endpoint(v, argp);
		break;
	case VHOST_IOMMU_TRANSLATE:
		ret = vhost_iommu_translate(v, argp);
		break;
	case VHOST_IOMMU_SET_RUNNING:
		if (get_user(running, (u32 __user *)argp)) {
			ret = -EFAULT;
		} else if (running > 1) {
			ret = -EINVAL;
		} else if (running == v->running) {
			ret = running ? -EBUSY : 0;
		} else if (running) {
			ret = vhost_iommu_start(v);
		} else {
			vhost_iommu_stop(v);
			ret = 0;
		}
		break;
	case VHOST_RESET_OWNER:
	case VHOST_SET_LOG_BASE:
	case VHOST_SET_LOG_FD:
		/* No dirty logging; reset is SET_RUNNING 0 or close(). */
		ret = -EOPNOTSUPP;
		break;
	default:
		/* The vring, memory table and owner calls are vhost's. */
		if (v->running && ioctl == VHOST_SET_MEM_TABLE) {
			ret = -EBUSY;
			break;
		}
		ret = vhost_dev_ioctl(&v->dev, ioctl, argp);
		if (ret == -ENOIOCTLCMD) {
			if (v->running) {
				ret = -EBUSY;
				break;
			}
			ret = vhost_vring_ioctl(&v->dev, ioctl, argp);
		}
		break;
	}
out:
	mutex_unlock(&v->dev.mutex);
	return ret;
}

static const struct file_operations vhost_iommu_fops = {
	.owner		= THIS_MODULE,
	.release	= vhost_iommu_release,
	.unlocked_ioctl	= vhost_iommu_ioctl,
	.compat_ioctl	= compat_ptr_ioctl,
	.open		= vhost_iommu_open,
	.llseek		= noop_llseek,
};

static struct miscdevice vhost_iommu_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "vhost-iommu",
	.fops	= &vhost_iommu_fops,
};

static int __init vhost_iommu_init(void)
{
	int ret = vhost_iotlb_provider_register(&vhost_iommu_provider);

	if (ret)
		return ret;
	ret = misc_register(&vhost_iommu_misc);
	if (ret)
		vhost_iotlb_provider_unregister(&vhost_iommu_provider);
	return ret;
}
module_init(vhost_iommu_init);

static void __exit vhost_iommu_exit(void)
{
	misc_deregister(&vhost_iommu_misc);
	vhost_iotlb_provider_unregister(&vhost_iommu_provider);
}
module_exit(vhost_iommu_exit);

MODULE_DESCRIPTION("Host kernel accelerator for virtio-iommu");
MODULE_LICENSE("GPL");
