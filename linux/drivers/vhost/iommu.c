// SPDX-License-Identifier: GPL-2.0-only
/*
 * vhost-iommu: the virtio-iommu device (virtio 1.3, device ID 23) in the
 * host kernel.
 *
 * The VMM hands over the guest memory table and the request and event
 * queues; requests (ATTACH, DETACH, MAP, UNMAP, PROBE) are then served in
 * the vhost worker without a trip to userspace.  This file is the device
 * as the VMM sees it: the file and its ioctls (config, endpoints, start and
 * stop, translate) and the module.  The queues are served in
 * iommu-queue.c, the domains and their mappings kept in iommu-domain.c, and
 * the vhost devices bound to endpoints translated for in iommu-iotlb.c.
 */
#include <linux/compat.h>
#include <linux/file.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/vhost.h>

#include "iommu.h"

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

/* No dirty logging (VHOST_F_LOG_ALL): the device writes little, see docs. */
#define VHOST_IOMMU_FEATURES	(VHOST_FEATURES |				\
				 (1ULL << VIRTIO_F_VERSION_1) |			\
				 (1ULL << VIRTIO_IOMMU_F_INPUT_RANGE) |		\
				 (1ULL << VIRTIO_IOMMU_F_DOMAIN_RANGE) |	\
				 (1ULL << VIRTIO_IOMMU_F_MAP_UNMAP) |		\
				 (1ULL << VIRTIO_IOMMU_F_PROBE) |		\
				 (1ULL << VIRTIO_IOMMU_F_BYPASS_CONFIG) |	\
				 (1ULL << VIRTIO_IOMMU_F_ATTACH_TABLE) |	\
				 (1ULL << VIRTIO_IOMMU_F_POSTED_MAP))

static struct lock_class_key vhost_iommu_vq_key;

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
	vhost_iommu_debugfs_add(v);
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

/*
 * Stop serving the queues and keep everything else: domains, mappings,
 * attached tables, pending faults.  Translations (TRANSLATE, bound
 * devices' misses) go on answering from them; requests wait in the ring.
 * Caller holds dev.mutex.
 */
static void vhost_iommu_pause(struct vhost_iommu *v)
{
	vhost_iommu_set_backend(v, NULL);
	vhost_dev_flush(&v->dev);
	mutex_lock(&v->lock);
	v->running = false;
	mutex_unlock(&v->lock);
}

/*
 * Device reset: stopped, every domain goes (endpoints stay, detached) and
 * the pending faults with them.  Caller holds dev.mutex.
 */
static void vhost_iommu_reset_device(struct vhost_iommu *v)
{
	if (v->running)
		vhost_iommu_pause(v);
	mutex_lock(&v->lock);
	vhost_iommu_reset(v);
	mutex_unlock(&v->lock);
	vhost_iommu_clear_faults(v);
}

/* Does the device hold what a pause keeps and a reset drops? */
static bool vhost_iommu_has_state(struct vhost_iommu *v)
{
	return !xa_empty(&v->domains);
}

/* Free an endpoint that is in no domain, and let go of its VFIO group */
static void vhost_iommu_free_ep(struct vhost_iommu_ep *ep)
{
	if (ep->vfio)
		vhost_iommu_vfio_put(ep);
	kfree(ep);
}

static int vhost_iommu_release(struct inode *inode, struct file *f)
{
	struct vhost_iommu *v = f->private_data;
	struct vhost_iommu_ep *ep;
	unsigned long id;

	vhost_iommu_debugfs_remove(v);
	vhost_iommu_unbind_all(v);
	/*
	 * Each endpoint goes as at DEL_ENDPOINT, before the reset, which
	 * would block each detached VFIO group only for it to go.
	 */
	mutex_lock(&v->lock);
	xa_for_each(&v->endpoints, id, ep) {
		xa_erase(&v->endpoints, id);
		vhost_iommu_remove_ep(v, ep);
		vhost_iommu_free_ep(ep);
	}
	mutex_unlock(&v->lock);
	vhost_iommu_reset_device(v);
	vhost_dev_stop(&v->dev);
	vhost_dev_cleanup(&v->dev);
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

/*
 * Do an endpoint's properties fit probe_size: its reserved regions, and
 * the table formats and, unless the endpoint opted out of it
 * (@ep_flags), the POSTED_MAP property once their features are
 * negotiated?  What PROBE writes (vhost_iommu_probe()), no more.
 */
static int vhost_iommu_resv_fit(u32 nr_resv, u32 ep_flags,
				const struct vhost_iommu_config *c, u64 features)
{
	u64 posted = features & BIT_ULL(VIRTIO_IOMMU_F_POSTED_MAP) &&
		     !(ep_flags & VHOST_IOMMU_EP_F_NO_POSTED_MAP) ?
		     sizeof(struct virtio_iommu_probe_posted_map) : 0;

	return (u64)nr_resv * sizeof(struct virtio_iommu_probe_resv_mem) +
	       posted + vhost_iommu_table_props_size(c, features) <=
	       c->probe_size;
}

/* The features the guest negotiated */
u64 vhost_iommu_features(struct vhost_iommu *v)
{
	return v->vqs[VHOST_IOMMU_VQ_REQUEST].acked_features;
}

/* The detached VFIO endpoints, after a change of bypass; v->lock held */
void vhost_iommu_settle_all(struct vhost_iommu *v)
{
	struct vhost_iommu_ep *ep;
	unsigned long id;

	xa_for_each(&v->endpoints, id, ep)
		vhost_iommu_settle(ep);
}

/* @c equals @now but for bypass, the field the guest writes */
static bool vhost_iommu_same_config(const struct vhost_iommu_config *c,
				    const struct vhost_iommu_config *now)
{
	struct vhost_iommu_config a = *c;

	a.bypass = now->bypass;
	return !memcmp(&a, now, sizeof(a));
}

/*
 * The first version of struct vhost_iommu_config, up to its reserved words
 * (88 bytes): no caller has less
 */
#define VHOST_IOMMU_CONFIG_MIN_SIZE \
	offsetofend(struct vhost_iommu_config, reserved)

/*
 * A config as its caller sized it (@argsz): at least the first version,
 * the bytes this kernel does not know zero (E2BIG otherwise).
 */
static int vhost_iommu_config_from_user(struct vhost_iommu_config *c,
					void __user *argp)
{
	u32 argsz;
	int ret;

	if (get_user(argsz, (u32 __user *)argp))
		return -EFAULT;
	if (argsz < VHOST_IOMMU_CONFIG_MIN_SIZE)
		return -EINVAL;
	ret = copy_struct_from_user(c, sizeof(*c), argp, argsz);
	c->argsz = sizeof(*c);
	return ret;
}

/* GET_CONFIG: no more than @argsz bytes, and @argsz the size known here */
static int vhost_iommu_config_to_user(const struct vhost_iommu_config *cfg,
				      void __user *argp)
{
	struct vhost_iommu_config c = *cfg;
	u32 argsz;

	if (get_user(argsz, (u32 __user *)argp))
		return -EFAULT;
	if (argsz < VHOST_IOMMU_CONFIG_MIN_SIZE)
		return -EINVAL;
	c.argsz = sizeof(c);
	return copy_to_user(argp, &c, min_t(u32, argsz, sizeof(c))) ?
	       -EFAULT : 0;
}

static long vhost_iommu_set_config(struct vhost_iommu *v, void __user *argp)
{
	struct vhost_iommu_config c, given;
	unsigned long cap_mappings, cap_pages;
	unsigned int cap_domains;
	struct vhost_iommu_ep *ep;
	unsigned long id;
	long ret;

	ret = vhost_iommu_config_from_user(&c, argp);
	if (ret)
		return ret;
	if (c.flags || c.bypass > 1 ||
	    (c.table_formats & ~vhost_iommu_table_formats()) ||
	    !vhost_iommu_zero(c.padding, sizeof(c.padding)) ||
	    !vhost_iommu_zero((u8 *)c.reserved, sizeof(c.reserved)))
		return -EINVAL;
	/* The granule is at least the page size the page table can map. */
	if (!c.page_size_mask || (c.page_size_mask & (SZ_4K - 1)) ||
	    c.input_end < c.input_start || c.domain_end < c.domain_start ||
	    c.probe_size % 4 || c.probe_size > SZ_64K)
		return -EINVAL;

	mutex_lock(&v->lock);
	if (v->running || vhost_iommu_has_state(v)) {
		/*
		 * Only the guest-writable field may change now, or while
		 * paused with domains, which were built under it.  The
		 * config may come as it was given or as GET_CONFIG read it
		 * back: its zeros stood for the limits in effect since,
		 * whatever the module parameters say now.
		 */
		if (!vhost_iommu_same_config(&c, &v->cfg_given) &&
		    !vhost_iommu_same_config(&c, &v->cfg)) {
			ret = -EBUSY;
		} else if (v->cfg.bypass != c.bypass) {
			v->cfg.bypass = c.bypass;
			v->cfg_given.bypass = c.bypass;
			/* Detached endpoints' translations change */
			vhost_iommu_invalidate_all(v);
			vhost_iommu_settle_all(v);
		}
		goto out;
	}
	given = c;
	/* 0: the module's default, read once, in effect until the next set */
	cap_domains = READ_ONCE(max_domains);
	cap_mappings = READ_ONCE(max_mappings);
	cap_pages = READ_ONCE(max_table_pages);
	if (c.max_domains > cap_domains || c.max_mappings > cap_mappings ||
	    c.max_table_pages > cap_pages) {
		ret = -EINVAL;
		goto out;
	}
	if (!c.max_domains)
		c.max_domains = cap_domains;
	if (!c.max_mappings)
		c.max_mappings = cap_mappings;
	if (!c.max_table_pages)
		c.max_table_pages = cap_pages;
	if (!c.table_formats)
		c.table_formats = vhost_iommu_table_formats();
	xa_for_each(&v->endpoints, id, ep) {
		if (!vhost_iommu_resv_fit(ep->nr_resv, ep->flags, &c,
					  vhost_iommu_features(v))) {
			ret = -ENOSPC;
			goto out;
		}
	}
	v->cfg = c;
	v->cfg_given = given;
	v->configured = true;
	vhost_iommu_settle_all(v);
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
	if ((e.flags & ~(VHOST_IOMMU_EP_F_NO_POSTED_MAP |
			 VHOST_IOMMU_EP_F_VFIO)) ||
	    (e.vfio_group_fd && !(e.flags & VHOST_IOMMU_EP_F_VFIO)) ||
	    e.reserved2[0] || e.reserved2[1] || e.nr_resv > VHOST_IOMMU_MAX_RESV)
		return -EINVAL;
	ep = kzalloc(struct_size(ep, resv, e.nr_resv), GFP_KERNEL_ACCOUNT);
	if (!ep)
		return -ENOMEM;
	ep->id = e.id;
	ep->flags = e.flags;
	ep->nr_resv = e.nr_resv;
	if (copy_from_user(ep->resv, u64_to_user_ptr(e.resv_ptr),
			   flex_array_size(ep, resv, e.nr_resv))) {
		ret = -EFAULT;
		goto err;
	}
	if (e.flags & VHOST_IOMMU_EP_F_VFIO) {
		/* Nothing here translates its DMA: no posted MAP for it */
		ep->flags |= VHOST_IOMMU_EP_F_NO_POSTED_MAP;
		ret = vhost_iommu_vfio_get(v, ep, e.vfio_group_fd);
		if (ret)
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
	if (v->configured &&
	    !vhost_iommu_resv_fit(e.nr_resv, ep->flags, &v->cfg,
				  vhost_iommu_features(v)))
		ret = -ENOSPC;
	else
		ret = xa_insert(&v->endpoints, e.id, ep, GFP_KERNEL_ACCOUNT);
	/* Detached, it translates what the config says for that */
	if (!ret && ep->vfio) {
		ret = vhost_iommu_vfio_settle(ep);
		if (ret)
			xa_erase(&v->endpoints, e.id);
	}
	mutex_unlock(&v->lock);
	if (ret == -EBUSY)
		ret = -EEXIST;
	if (ret)
		goto err;
	return 0;
err:
	vhost_iommu_free_ep(ep);
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
		vhost_iommu_remove_ep(v, ep);
	}
	mutex_unlock(&v->lock);
	if (b)
		vhost_iommu_unbind(b);
	mutex_unlock(&vhost_iommu_bind_mutex);
	if (!ep)
		return -ENOENT;
	vhost_iommu_free_ep(ep);
	return 0;
}

/* vhost_iommu_xlate() with v->lock taken, a page of a table faulted in */
static int vhost_iommu_xlate_locked(struct vhost_iommu *v,
				    struct vhost_iommu_translate *t,
				    u32 access, u8 *reason,
				    unsigned int *tries)
{
	int ret;

	do {
		vhost_iommu_walk_lock(v);
		ret = vhost_iommu_xlate(v, t, access, reason, U64_MAX);
	} while (vhost_iommu_walk_unlock(v, ret, tries));
	return ret;
}

static long vhost_iommu_translate(struct vhost_iommu *v,
				  struct vhost_iommu_translate __user *argp)
{
	struct vhost_iommu_translate t;
	u32 access = 0, fault = VIRTIO_IOMMU_FAULT_F_ADDRESS;
	unsigned int tries = 0;
	u8 reason;
	long ret;

	if (copy_from_user(&t, argp, sizeof(t)))
		return -EFAULT;
	if ((t.flags & ~(VHOST_IOMMU_TRANSLATE_F_READ |
			 VHOST_IOMMU_TRANSLATE_F_WRITE |
			 VHOST_IOMMU_TRANSLATE_F_FAULT |
			 VHOST_IOMMU_TRANSLATE_F_PREFETCH)) || t.reserved)
		return -EINVAL;
	if (t.flags & VHOST_IOMMU_TRANSLATE_F_READ) {
		access |= VHOST_IOMMU_PERM_READ;
		fault |= VIRTIO_IOMMU_FAULT_F_READ;
	}
	if (t.flags & VHOST_IOMMU_TRANSLATE_F_WRITE) {
		access |= VHOST_IOMMU_PERM_WRITE;
		fault |= VIRTIO_IOMMU_FAULT_F_WRITE;
	}
	ret = vhost_iommu_xlate_locked(v, &t, access, &reason, &tries);
	/* Posted MAP: the MAP may wait unnotified in the request queue */
	if ((ret == -ENOENT || ret == -EACCES) && vhost_iommu_fetch_posted(v))
		ret = vhost_iommu_xlate_locked(v, &t, access, &reason,
					       &tries);
	vhost_iommu_count(v, translates, 1);
	if (ret)
		vhost_iommu_count(v, translate_faults, 1);
	if ((ret == -ENOENT || ret == -EACCES) &&
	    (t.flags & VHOST_IOMMU_TRANSLATE_F_FAULT))
		vhost_iommu_report_fault(v, reason, fault, t.endpoint, t.iova);
	/* And into the IOTLB of the device bound to the endpoint */
	if (!ret && (t.flags & VHOST_IOMMU_TRANSLATE_F_PREFETCH))
		ret = vhost_iommu_prefetch(v, t.endpoint, t.iova, access);
	if (ret)
		return ret;
	return copy_to_user(argp, &t, sizeof(t)) ? -EFAULT : 0;
}

static long vhost_iommu_set_features(struct vhost_iommu *v, u64 features)
{
	struct vhost_iommu_ep *ep;
	unsigned long id;
	long ret = 0;
	int i;

	if (features & ~VHOST_IOMMU_FEATURES)
		return -EOPNOTSUPP;
	if ((features & BIT_ULL(VHOST_F_LOG_ALL)) &&
	    !vhost_log_access_ok(&v->dev))
		return -EFAULT;
	/*
	 * Running, or paused with domains: what they were built under stays
	 * (or reset); only dirty logging may come and go (a migration)
	 */
	if (v->running || vhost_iommu_has_state(v)) {
		if ((features ^ vhost_iommu_features(v)) &
		    ~BIT_ULL(VHOST_F_LOG_ALL))
			return -EBUSY;
		goto set;
	}
	/*
	 * The formats and POSTED_MAP are PROBE properties (rst: MUST offer
	 * PROBE)
	 */
	if ((features & (BIT_ULL(VIRTIO_IOMMU_F_ATTACH_TABLE) |
			 BIT_ULL(VIRTIO_IOMMU_F_POSTED_MAP))) &&
	    !(features & BIT_ULL(VIRTIO_IOMMU_F_PROBE)))
		return -EINVAL;
	mutex_lock(&v->lock);
	if (v->configured) {
		xa_for_each(&v->endpoints, id, ep)
			if (!vhost_iommu_resv_fit(ep->nr_resv, ep->flags,
						  &v->cfg, features))
				ret = -ENOSPC;
	}
	mutex_unlock(&v->lock);
	if (ret)
		return ret;
set:
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
		      vhost_iommu_config_to_user(&v->cfg, argp);
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
			vhost_iommu_pause(v);
			ret = 0;
		}
		break;
	case VHOST_IOMMU_RESET:
		vhost_iommu_reset_device(v);
		ret = 0;
		break;
	case VHOST_IOMMU_GET_STATE:
		ret = vhost_iommu_get_state(v, argp);
		break;
	case VHOST_IOMMU_SET_STATE:
		ret = vhost_iommu_set_state(v, argp);
		break;
	case VHOST_RESET_OWNER:
		/* Reset is VHOST_IOMMU_RESET or close(). */
		ret = -EOPNOTSUPP;
		break;
	default:
		/* The vring, memory table and owner calls are vhost's. */
		if (v->running && ioctl == VHOST_SET_MEM_TABLE) {
			ret = -EBUSY;
			break;
		}
		ret = vhost_dev_ioctl(&v->dev, ioctl, argp);
		if (!ret && ioctl == VHOST_SET_MEM_TABLE) {
			/*
			 * Paused with mappings: what bound devices cached
			 * came through the old memory table
			 */
			mutex_lock(&v->lock);
			vhost_iommu_invalidate_all(v);
			mutex_unlock(&v->lock);
		}
		if (ret == -ENOIOCTLCMD) {
			/*
			 * A migration turns the used rings' logging on and
			 * off while the device runs; vhost checks the rings
			 */
			if (v->running && ioctl != VHOST_SET_VRING_ADDR) {
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

/**
 * vhost_iommu_from_file() - the vhost-iommu behind a file
 * @file: a file VHOST_SET_IOMMU was given
 *
 * Return: the device, NULL when @file is no vhost-iommu.
 */
struct vhost_iommu *vhost_iommu_from_file(struct file *file)
{
	return file->f_op == &vhost_iommu_fops ? file->private_data : NULL;
}

static struct miscdevice vhost_iommu_misc = {
	.minor	= MISC_DYNAMIC_MINOR,
	.name	= "vhost-iommu",
	.fops	= &vhost_iommu_fops,
};

static int __init vhost_iommu_init(void)
{
	int ret = vhost_iommu_iotlb_register();

	if (ret)
		return ret;
	vhost_iommu_debugfs_init();
	ret = misc_register(&vhost_iommu_misc);
	if (ret) {
		vhost_iommu_debugfs_exit();
		vhost_iommu_iotlb_unregister();
	}
	return ret;
}
module_init(vhost_iommu_init);

static void __exit vhost_iommu_exit(void)
{
	misc_deregister(&vhost_iommu_misc);
	vhost_iommu_debugfs_exit();
	vhost_iommu_iotlb_unregister();
}
module_exit(vhost_iommu_exit);

MODULE_DESCRIPTION("Host kernel accelerator for virtio-iommu");
MODULE_LICENSE("GPL");
