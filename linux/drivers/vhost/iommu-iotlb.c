// SPDX-License-Identifier: GPL-2.0-only
/*
 * vhost-iommu: the IOTLB provider.
 *
 * VHOST_SET_IOMMU on another vhost device (vhost-net) binds it to one of
 * our endpoints: vhost core then sends its IOTLB misses here.  Our worker
 * translates each through the endpoint's domain and the memory table and
 * fills the device's IOTLB; UNMAP, DETACH, reset and a change of the
 * bypass config invalidate what bound devices cached.
 */
#include <linux/file.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/vhost.h>

#include "iommu.h"

/* Serialises binding and unbinding; the lock order is in iommu.h */
DEFINE_MUTEX(vhost_iommu_bind_mutex);
/* Every binding of every vhost-iommu, under vhost_iommu_bind_mutex */
static LIST_HEAD(vhost_iommu_bindings);

/**
 * vhost_iommu_invalidate_dom() - bound devices behind a domain forget a range
 * @v: the device, its lock held
 * @dom: the domain
 * @start: first IOVA
 * @last: last IOVA
 */
void vhost_iommu_invalidate_dom(struct vhost_iommu *v,
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

/**
 * vhost_iommu_invalidate_ep() - the device bound to an endpoint forgets all
 * @v: the device, its lock held
 * @ep: the endpoint
 */
void vhost_iommu_invalidate_ep(struct vhost_iommu *v,
			       struct vhost_iommu_ep *ep)
{
	lockdep_assert_held(&v->lock);
	if (ep->binding)
		vhost_dev_iotlb_invalidate(ep->binding->dev, 0, U64_MAX);
}

/**
 * vhost_iommu_invalidate_all() - every bound device forgets everything
 * @v: the device, its lock held
 */
void vhost_iommu_invalidate_all(struct vhost_iommu *v)
{
	struct vhost_iommu_bound *b;

	lockdep_assert_held(&v->lock);
	list_for_each_entry(b, &v->bindings, node)
		vhost_dev_iotlb_invalidate(b->dev, 0, U64_MAX);
}

/**
 * vhost_iommu_resume_dom() - bound devices behind a domain try again
 * @v: the device, its lock held
 * @dom: the domain a MAP has just added to
 *
 * A bound device whose access faulted stopped its virtqueue there, and a
 * driver that posts its MAPs will not kick it again for the MAP it makes
 * after a refusal: that MAP restarts the queue (virtio-iommu.rst, "Posted
 * MAP").  A queue that still faults stops again.
 */
void vhost_iommu_resume_dom(struct vhost_iommu *v,
			    struct vhost_iommu_domain *dom)
{
	struct vhost_iommu_bound *b;
	struct vhost_iommu_ep *ep;

	lockdep_assert_held(&v->lock);
	list_for_each_entry(b, &v->bindings, node) {
		if (!b->stopped)
			continue;
		ep = xa_load(&v->endpoints, b->endpoint);
		if (ep && ep->domain == dom) {
			b->stopped = false;
			vhost_dev_iotlb_retry(b->dev);
		}
	}
}

/* VHOST_ACCESS_* of a miss as VHOST_IOMMU_PERM_* and fault flags */
static u32 vhost_iommu_miss_perm(int access, u32 *fault)
{
	u32 perm = 0;

	*fault = VIRTIO_IOMMU_FAULT_F_ADDRESS;
	if (access & VHOST_ACCESS_RO) {
		perm |= VHOST_IOMMU_PERM_READ;
		*fault |= VIRTIO_IOMMU_FAULT_F_READ;
	}
	if (access & VHOST_ACCESS_WO) {
		perm |= VHOST_IOMMU_PERM_WRITE;
		*fault |= VIRTIO_IOMMU_FAULT_F_WRITE;
	}
	return perm;
}

/*
 * Answer one miss: translate and fill the device's IOTLB under v->lock,
 * so that no UNMAP can come between and leave a stale entry.
 */
static int __vhost_iommu_answer(struct vhost_iommu_bound *b, u64 iova,
				u32 perm, u8 *reason)
{
	struct vhost_iommu *v = b->v;
	const struct vhost_iotlb_map *map;
	struct vhost_iommu_translate t = {
		.endpoint = b->endpoint, .iova = iova,
	};
	u64 size, gpa;
	int access = 0, ret;

	lockdep_assert_held(&v->lock);
	/* Paused, the device still translates: a stopped VM's DMA may */
	if (b->dead)
		return -ENODEV;
	/* Where it goes, then how far both the MAP and the memory go */
	ret = vhost_iommu_xlate(v, &t, perm, reason, 1);
	if (ret)
		return ret;
	/* Guest-physical to the VMM's address, as vhost has it */
	map = vhost_iotlb_itree_first(v->dev.umem, t.gpa, t.gpa);
	if (!map) {
		*reason = VIRTIO_IOMMU_FAULT_R_UNKNOWN;
		return -ENOENT;
	}
	gpa = t.gpa;
	size = map->last - t.gpa + 1;
	if (t.size) {
		/*
		 * Not in bypass: the MAP may end sooner.  A table domain's
		 * second walk may find what the guest rewrote meanwhile:
		 * only the address the memory table was looked up for goes
		 * into the IOTLB.
		 */
		ret = vhost_iommu_xlate(v, &t, perm, reason, size ?: U64_MAX);
		if (ret)
			return ret;
		if (t.gpa != gpa) {
			*reason = VIRTIO_IOMMU_FAULT_R_MAPPING;
			return -ENOENT;
		}
		size = t.size;
	}
	if (t.perm & VHOST_IOMMU_PERM_READ)
		access |= VHOST_ACCESS_RO;
	if (t.perm & VHOST_IOMMU_PERM_WRITE)
		access |= VHOST_ACCESS_WO;
	return vhost_dev_iotlb_update(b->dev, iova, size,
				      map->addr + t.gpa - map->start, access);
}

/**
 * vhost_iommu_walk_lock() - take v->lock for a lookup that may walk a table
 * @v: the device
 *
 * A walk of a guest table reads the VMM's memory with page faults off (see
 * vhost_iommu_read_pte()): a fault may take long (swap) or wait for the
 * VMM itself (userfaultfd, whose handler may need this device), and must
 * not do so with v->lock held. vhost_iommu_walk_unlock() faults the page
 * in without the lock and says whether to look up again.
 */
void vhost_iommu_walk_lock(struct vhost_iommu *v)
{
	mutex_lock(&v->lock);
	v->fault_in = 0;
}

/**
 * vhost_iommu_walk_unlock() - end a lookup vhost_iommu_walk_lock() began
 * @v: the device, its lock held; dropped
 * @ret: the lookup's result
 * @tries: the caller's count of the lookups it made, 0 at first
 *
 * Return: true when a page of the table was missing and is in memory now:
 * the caller looks up again; false when the lookup is final (it succeeded,
 * failed on what it read, or the guest keeps the page away).
 */
bool vhost_iommu_walk_unlock(struct vhost_iommu *v, int ret,
			     unsigned int *tries)
{
	u64 uaddr = v->fault_in;

	mutex_unlock(&v->lock);
	if (!ret || !uaddr || ++*tries > VHOST_IOMMU_FAULT_IN_TRIES ||
	    !current->mm)
		return false;
	cond_resched();
	return !fault_in_readable(u64_to_user_ptr(uaddr), sizeof(u64));
}

static int vhost_iommu_answer(struct vhost_iommu_bound *b, u64 iova,
			      u32 perm, u8 *reason)
{
	unsigned int tries = 0;
	int ret;

	do {
		vhost_iommu_walk_lock(b->v);
		ret = __vhost_iommu_answer(b, iova, perm, reason);
		/* Under the lock, so that no MAP comes between unseen */
		if (ret == -ENOENT || ret == -EACCES)
			b->stopped = true;
	} while (vhost_iommu_walk_unlock(b->v, ret, &tries));
	return ret;
}

/**
 * vhost_iommu_prefetch() - answer a miss before the bound device has it
 * @v: the device
 * @endpoint: the endpoint a vhost device is bound to
 * @iova: the address, as the bound device would miss it
 * @perm: VHOST_IOMMU_PERM_*, the access it would make
 *
 * VHOST_IOMMU_TRANSLATE_F_PREFETCH: what a VMM asks for a ring before the
 * device starts, whose first access (VHOST_NET_SET_BACKEND's) is made in
 * the caller's context and cannot wait for the miss's answer.  v->lock
 * keeps the binding from going meanwhile (unbinding takes it).
 *
 * Return: 0; -ENODEV when no device is bound to @endpoint or the device
 * does not run; the translation's error otherwise.
 */
int vhost_iommu_prefetch(struct vhost_iommu *v, u32 endpoint, u64 iova,
			 u32 perm)
{
	struct vhost_iommu_ep *ep;
	unsigned int tries = 0;
	u8 reason;
	int ret;

	do {
		ret = -ENODEV;
		vhost_iommu_walk_lock(v);
		ep = xa_load(&v->endpoints, endpoint);
		if (ep && ep->binding)
			ret = __vhost_iommu_answer(ep->binding, iova, perm,
						   &reason);
	} while (vhost_iommu_walk_unlock(v, ret, &tries));
	return ret;
}

/*
 * Answer the misses of a bound device, on the worker of our request queue:
 * a thread of the VMM that owns us, so that the guest's tables are read in
 * its mm, and what serving a posted MAP allocates is charged to its memory
 * cgroup, as for every other request.
 */
static void vhost_iommu_miss_work(struct vhost_work *work)
{
	struct vhost_iommu_bound *b = container_of(work,
						     struct vhost_iommu_bound,
						     work);
	int ret, access;
	u32 perm, fault;
	bool lost;
	u64 iova;
	u8 reason;

	for (;;) {
		cond_resched();
		spin_lock(&b->miss_lock);
		/* Unbound (see vhost_iommu_unbind()): the device may be gone */
		if (READ_ONCE(b->dead))
			b->nr_misses = 0;
		if (!b->nr_misses) {
			lost = b->misses_lost && !READ_ONCE(b->dead);
			b->misses_lost = false;
			spin_unlock(&b->miss_lock);
			/* Queues that missed meanwhile miss again, kept now */
			if (lost)
				vhost_dev_iotlb_retry(b->dev);
			break;
		}
		iova = b->misses[0].iova;
		access = b->misses[0].access;
		memmove(&b->misses[0], &b->misses[1],
			--b->nr_misses * sizeof(b->misses[0]));
		spin_unlock(&b->miss_lock);

		perm = vhost_iommu_miss_perm(access, &fault);
		ret = vhost_iommu_answer(b, iova, perm, &reason);
		/* Posted MAP: the MAP may wait unnotified in the queue */
		if ((ret == -ENOENT || ret == -EACCES) &&
		    vhost_iommu_fetch_posted(b->v))
			ret = vhost_iommu_answer(b, iova, perm, &reason);
		vhost_iommu_count(b->v, misses, 1);
		if (ret)
			vhost_iommu_count(b->v, miss_faults, 1);
		/* The device's access faults: it stays stopped, the guest hears */
		if (ret)
			vhost_dev_iotlb_unanswered(b->dev, iova, access);
		if (ret == -ENOENT || ret == -EACCES)
			vhost_iommu_report_fault(b->v, reason, fault,
						 b->endpoint, iova);
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
	/* No worker: nobody set the device up to answer (no owner) */
	vhost_vq_work_queue(&b->v->vqs[VHOST_IOMMU_VQ_REQUEST], &b->work);
	return kept;
}

/**
 * vhost_iommu_unbind() - undo a binding
 * @b: the binding; freed
 *
 * Takes our ops and our translations out of the device.  Caller holds
 * vhost_iommu_bind_mutex, not the device's lock.
 */
void vhost_iommu_unbind(struct vhost_iommu_bound *b)
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
	/*
	 * Our ops go last: while they are in, the device's cleanup calls
	 * our unbind, which waits for vhost_iommu_bind_mutex, so the device
	 * is there for what we do to it. Once they are out, it may be
	 * freed at any time: a miss queued meanwhile finds us dead and
	 * leaves it alone.
	 */
	vhost_dev_flush(&v->dev);
	vhost_dev_iotlb_invalidate(b->dev, 0, U64_MAX);
	vhost_dev_set_iotlb_ops(b->dev, NULL, NULL);
	vhost_dev_flush(&v->dev);
	list_del(&b->all);
	kfree(b);
}

/**
 * vhost_iommu_unbind_all() - undo every binding of a device going away
 * @v: the device
 */
void vhost_iommu_unbind_all(struct vhost_iommu *v)
{
	struct vhost_iommu_bound *b, *tmp;

	mutex_lock(&vhost_iommu_bind_mutex);
	list_for_each_entry_safe(b, tmp, &v->bindings, node)
		vhost_iommu_unbind(b);
	mutex_unlock(&vhost_iommu_bind_mutex);
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

/* vhost_iotlb_provider.bind: VHOST_SET_IOMMU on @dev, @dev->mutex held */
static int vhost_iommu_bind(struct file *file, u32 endpoint,
			    struct vhost_dev *dev)
{
	struct vhost_iommu *v = vhost_iommu_from_file(file);
	struct vhost_iommu_bound *b;
	struct vhost_iommu_ep *ep;
	int ret = 0;

	if (!v)
		return -EINVAL;
	/*
	 * Never a vhost-iommu (this one or another): serving a request, a
	 * vhost-iommu takes the virtqueue mutexes of the devices bound to it,
	 * and two bound to each other would take them in opposite orders.
	 * vhost refuses devices without an IOTLB already; say it here too.
	 */
	if (vhost_iommu_is_iommu(dev))
		return -EINVAL;
	b = kzalloc(sizeof(*b), GFP_KERNEL_ACCOUNT);
	if (!b)
		return -ENOMEM;
	b->v = v;
	b->dev = dev;
	b->endpoint = endpoint;
	spin_lock_init(&b->miss_lock);
	vhost_work_init(&b->work, vhost_iommu_miss_work);

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

int vhost_iommu_iotlb_register(void)
{
	return vhost_iotlb_provider_register(&vhost_iommu_provider);
}

void vhost_iommu_iotlb_unregister(void)
{
	vhost_iotlb_provider_unregister(&vhost_iommu_provider);
}
