/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vhost-iommu, the virtio-iommu device in the host kernel: what its parts
 * share.  iommu.c is the file the VMM drives (ioctls, endpoints, config),
 * iommu-queue.c serves the request and event queues, iommu-domain.c keeps
 * the domains and what they map, iommu-iotlb.c is the IOTLB provider that
 * translates for the vhost devices bound to endpoints, iommu-table.c walks
 * the guest's tables, iommu-debugfs.c shows the counters, iommu-vfio.c
 * forwards the tables of endpoints that are VFIO groups, iommu-state.c
 * saves and restores what the guest built.
 */
#ifndef _DRIVERS_VHOST_IOMMU_H
#define _DRIVERS_VHOST_IOMMU_H

#include <linux/generic_pt/foreign.h>
#include <linux/generic_pt/gpt.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/sizes.h>
#include <linux/spinlock.h>
#include <linux/string.h>
#include <linux/vhost_iommu.h>
#include <linux/virtio_iommu.h>
#include <linux/workqueue.h>
#include <linux/xarray.h>

#include "vhost.h"

/* Faults kept while the guest has no event buffer; later ones are dropped */
#define VHOST_IOMMU_MAX_FAULTS	64

/*
 * The guest's table of a domain created by ATTACH_TABLE (iommu-table.c):
 * its description, and the request that gave it, which any other
 * ATTACH_TABLE naming the domain must repeat.
 */
struct vhost_iommu_table {
	struct gpt_foreign ft;
	struct virtio_iommu_req_attach_table req;
};

struct vhost_iommu_domain {
	u32 id;
	bool bypass;
	unsigned int nr_endpoints;
	struct list_head endpoints;		/* struct vhost_iommu_ep.node */
	unsigned long nr_mappings;
	struct vhost_iommu_table *table;	/* a table domain, or NULL */
	struct gpt_table pt;			/* the MAPs, see iommu-domain.c */
};

/* The pages of a MAP without access, in a MAP domain's table */
#define VHOST_IOMMU_SW_NONE		GPT_SW_USER

struct vhost_iommu_vfio;

struct vhost_iommu_ep {
	u32 id;
	u32 flags;				/* VHOST_IOMMU_EP_F_* */
	struct vhost_iommu_domain *domain;
	struct list_head node;			/* in domain->endpoints */
	struct vhost_iommu_bound *binding;	/* a bound vhost device */
	struct vhost_iommu_vfio *vfio;		/* EP_F_VFIO: its group */
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
 * Walks of one lookup that may each stop on a page of the guest's table
 * the VMM's mm must fault in (vhost_iommu_walk_unlock()): a guest that keeps
 * its table away longer gets a fault.
 */
#define VHOST_IOMMU_FAULT_IN_TRIES	8

/*
 * A vhost device (vhost-net) bound to an endpoint: its IOTLB misses come
 * here, are translated through the endpoint's domain and the memory table
 * in @work, on our own worker, and UNMAP, DETACH and reset invalidate what
 * it cached.
 */
struct vhost_iommu_bound {
	struct vhost_iommu *v;
	struct vhost_dev *dev;
	u32 endpoint;
	bool dead;				/* under v->lock */
	bool stopped;				/* a miss faulted; v->lock */
	struct list_head node;			/* in v->bindings, under v->lock */
	struct list_head all;			/* under vhost_iommu_bind_mutex */
	struct vhost_work work;			/* on v's request queue worker */
	spinlock_t miss_lock;			/* protects the misses */
	bool misses_lost;			/* retry the device's queues */
	unsigned int nr_misses;
	struct {
		u64 iova;
		int access;
	} misses[VHOST_IOMMU_MAX_MISSES];
};

/*
 * What a device served (iommu-debugfs.c); vhost_iommu_totals adds up every
 * device's.
 */
/* The longest busy loop on an emptied request queue (VMM's timeout, us) */
#define VHOST_IOMMU_MAX_BUSYLOOP_US	1000

struct vhost_iommu_stats {
	atomic64_t requests[VIRTIO_IOMMU_T_INVALIDATE + 1];	/* 0: unanswered */
	atomic64_t failed;		/* answered, not OK */
	atomic64_t fetches;		/* lookups that served posted requests */
	atomic64_t fetched;		/* the requests they served */
	atomic64_t misses;		/* bound devices' misses looked up */
	atomic64_t miss_faults;		/* of which the access faulted */
	atomic64_t translates;		/* VHOST_IOMMU_TRANSLATE lookups */
	atomic64_t translate_faults;	/* of which failed */
	atomic64_t busy_polls;		/* empty request queue looked at */
	atomic64_t busy_poll_hits;	/* of which found a request */
	atomic64_t serve_ns;		/* time the requests took to serve */
};

extern struct vhost_iommu_stats vhost_iommu_totals;

/* Add @n to the counter at @off in @v's stats and in the totals */
static inline void vhost_iommu_add(struct vhost_iommu_stats *st, size_t off,
				   s64 n)
{
	atomic64_add(n, (atomic64_t *)((u8 *)st + off));
	atomic64_add(n, (atomic64_t *)((u8 *)&vhost_iommu_totals + off));
}

#define vhost_iommu_count(v, field, n)					\
	vhost_iommu_add(&(v)->stats,					\
			offsetof(struct vhost_iommu_stats, field), n)

struct vhost_iommu {
	struct vhost_dev dev;
	struct vhost_virtqueue vqs[VHOST_IOMMU_VQ_MAX];
	struct vhost_virtqueue *vqp[VHOST_IOMMU_VQ_MAX];

	/*
	 * @lock protects everything below; taken inside dev.mutex and the
	 * request queue's mutex.
	 */
	struct mutex lock;
	struct vhost_iommu_config cfg;		/* limits resolved */
	struct vhost_iommu_config cfg_given;	/* as SET_CONFIG gave it */
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
	/*
	 * A walk of a guest table under @lock found an entry's page not in
	 * memory: its address in the VMM, for the walker to fault it in with
	 * @lock dropped (vhost_iommu_walk_unlock()).  0: none.
	 */
	u64 fault_in;

	struct vhost_iommu_stats stats;
	struct dentry *debugfs;
};

/*
 * Serialises binding and unbinding.  Lock order: a bound device's
 * vhost_dev.mutex, this, then vhost_iommu.lock, then the bound device's
 * virtqueue mutexes.  A vhost-iommu's own virtqueue mutexes come before
 * its vhost_iommu.lock and have a lockdep class of their own, so that
 * lockdep tells them from those of the devices it serves; a vhost-iommu is
 * never bound itself (that would take the locks the other way round).
 */
extern struct mutex vhost_iommu_bind_mutex;

static inline bool vhost_iommu_acked(struct vhost_iommu *v, int bit)
{
	return vhost_has_feature(&v->vqs[VHOST_IOMMU_VQ_REQUEST], bit);
}

static inline bool vhost_iommu_zero(const void *p, size_t n)
{
	return !memchr_inv(p, 0, n);
}

/* iommu.c: the file */
struct vhost_iommu *vhost_iommu_from_file(struct file *file);
u64 vhost_iommu_features(struct vhost_iommu *v);
void vhost_iommu_settle_all(struct vhost_iommu *v);

/* A request as the driver sends it, any type */
union vhost_iommu_req {
	struct virtio_iommu_req_head head;
	struct virtio_iommu_req_attach attach;
	struct virtio_iommu_req_detach detach;
	struct virtio_iommu_req_map map;
	struct virtio_iommu_req_unmap unmap;
	struct virtio_iommu_req_probe probe;
	struct virtio_iommu_req_attach_table attach_table;
	struct virtio_iommu_req_invalidate invalidate;
};

/* iommu-queue.c: the request and event queues */
size_t vhost_iommu_req_size(struct vhost_iommu *v, u8 type);
u8 vhost_iommu_serve_request(struct vhost_iommu *v, union vhost_iommu_req *req,
			     u8 *props);
void vhost_iommu_handle_req_kick(struct vhost_work *work);
void vhost_iommu_handle_evt_kick(struct vhost_work *work);
bool vhost_iommu_fetch_posted(struct vhost_iommu *v);
bool vhost_iommu_is_iommu(struct vhost_dev *dev);
void vhost_iommu_report_fault(struct vhost_iommu *v, u8 reason, u32 flags,
			      u32 endpoint, u64 address);
void vhost_iommu_clear_faults(struct vhost_iommu *v);

/* iommu-domain.c: domains and their MAPs, under v->lock */
u8 vhost_iommu_attach(struct vhost_iommu *v,
		      const struct virtio_iommu_req_attach *req);
u8 vhost_iommu_detach(struct vhost_iommu *v,
		      const struct virtio_iommu_req_detach *req);
u8 vhost_iommu_map(struct vhost_iommu *v,
		   const struct virtio_iommu_req_map *req);
u8 vhost_iommu_unmap(struct vhost_iommu *v,
		     const struct virtio_iommu_req_unmap *req);
void vhost_iommu_remove_ep(struct vhost_iommu *v, struct vhost_iommu_ep *ep);
void vhost_iommu_settle(struct vhost_iommu_ep *ep);
void vhost_iommu_free_domain(struct vhost_iommu *v,
			     struct vhost_iommu_domain *dom);
u8 vhost_iommu_attach_ep(struct vhost_iommu *v, __le32 endpoint, u32 domain,
			 struct vhost_iommu_ep **ep);
struct vhost_iommu_domain *
vhost_iommu_new_domain(struct vhost_iommu *v, u32 domain, bool bypass,
		       struct vhost_iommu_table *table);
void vhost_iommu_join(struct vhost_iommu *v, struct vhost_iommu_ep *ep,
		      struct vhost_iommu_domain *dom);
void vhost_iommu_reset(struct vhost_iommu *v);
/* How far a lookup follows a MAP past the address looked up */
#define VHOST_IOMMU_XLATE_SPAN	SZ_256K

int vhost_iommu_xlate(struct vhost_iommu *v, struct vhost_iommu_translate *t,
		      u32 access, u8 *reason, u64 max);
int vhost_iommu_dom_lookup(struct vhost_iommu_domain *dom, u64 iova,
			   struct gpt_leaf *leaf);

/* iommu-table.c: page-table sharing, under v->lock */
u32 vhost_iommu_table_formats(void);
size_t vhost_iommu_table_props_size(const struct vhost_iommu_config *cfg,
				    u64 features);
void vhost_iommu_table_props(struct vhost_iommu *v, struct vhost_iommu_ep *ep,
			     u8 *props);
u8 vhost_iommu_attach_table(struct vhost_iommu *v,
			    const struct virtio_iommu_req_attach_table *req);
u8 vhost_iommu_invalidate(struct vhost_iommu *v,
			  const struct virtio_iommu_req_invalidate *req);
int vhost_iommu_table_xlate(struct vhost_iommu *v, struct vhost_iommu_ep *ep,
			    struct vhost_iommu_domain *dom,
			    struct vhost_iommu_translate *t, u32 access, u64 max);

/*
 * iommu-vfio.c: endpoints that are VFIO groups (VHOST_IOMMU_EP_F_VFIO),
 * their tables forwarded to the container, under v->lock
 */
#if IS_ENABLED(CONFIG_VHOST_IOMMU_VFIO)
int vhost_iommu_vfio_get(struct vhost_iommu *v, struct vhost_iommu_ep *ep,
			 int fd);
void vhost_iommu_vfio_put(struct vhost_iommu_ep *ep);
u8 vhost_iommu_vfio_attach(struct vhost_iommu_ep *ep,
			   struct vhost_iommu_domain *dom,
			   const struct virtio_iommu_req_attach_table *req);
void vhost_iommu_vfio_detach(struct vhost_iommu_ep *ep);
int vhost_iommu_vfio_settle(struct vhost_iommu_ep *ep);
u8 vhost_iommu_vfio_invalidate(struct vhost_iommu_domain *dom, u64 start,
			       u64 end);
#else
static inline int vhost_iommu_vfio_get(struct vhost_iommu *v,
				       struct vhost_iommu_ep *ep, int fd)
{
	return -EOPNOTSUPP;
}

static inline void vhost_iommu_vfio_put(struct vhost_iommu_ep *ep)
{
}

static inline u8
vhost_iommu_vfio_attach(struct vhost_iommu_ep *ep,
			struct vhost_iommu_domain *dom,
			const struct virtio_iommu_req_attach_table *req)
{
	return VIRTIO_IOMMU_S_UNSUPP;
}

static inline void vhost_iommu_vfio_detach(struct vhost_iommu_ep *ep)
{
}

static inline int vhost_iommu_vfio_settle(struct vhost_iommu_ep *ep)
{
	return 0;
}

static inline u8 vhost_iommu_vfio_invalidate(struct vhost_iommu_domain *dom,
					     u64 start, u64 end)
{
	return VIRTIO_IOMMU_S_OK;
}
#endif

/* iommu-state.c: the state saved and restored, dev.mutex held */
long vhost_iommu_get_state(struct vhost_iommu *v, void __user *argp);
long vhost_iommu_set_state(struct vhost_iommu *v, void __user *argp);

/* iommu-debugfs.c: counters */
void vhost_iommu_debugfs_add(struct vhost_iommu *v);
void vhost_iommu_debugfs_remove(struct vhost_iommu *v);
void vhost_iommu_debugfs_init(void);
void vhost_iommu_debugfs_exit(void);

/* iommu-iotlb.c: the vhost devices bound to endpoints */
void vhost_iommu_invalidate_dom(struct vhost_iommu *v,
				struct vhost_iommu_domain *dom,
				u64 start, u64 last);
void vhost_iommu_invalidate_ep(struct vhost_iommu *v,
			       struct vhost_iommu_ep *ep);
void vhost_iommu_invalidate_all(struct vhost_iommu *v);
void vhost_iommu_walk_lock(struct vhost_iommu *v);
bool vhost_iommu_walk_unlock(struct vhost_iommu *v, int ret,
			     unsigned int *tries);
void vhost_iommu_resume_dom(struct vhost_iommu *v,
			    struct vhost_iommu_domain *dom);
void vhost_iommu_unbind(struct vhost_iommu_bound *b);
void vhost_iommu_unbind_all(struct vhost_iommu *v);
int vhost_iommu_prefetch(struct vhost_iommu *v, u32 endpoint, u64 iova,
			 u32 perm);
int vhost_iommu_iotlb_register(void);
void vhost_iommu_iotlb_unregister(void);

#endif /* _DRIVERS_VHOST_IOMMU_H */
