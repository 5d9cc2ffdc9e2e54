// SPDX-License-Identifier: GPL-2.0-only
/*
 * vhost-iommu: the virtio-iommu device (virtio 1.3, device ID 23) in the
 * host kernel.
 *
 * The VMM hands over the guest memory table and the request and event
 * queues; requests (ATTACH, DETACH, MAP, UNMAP, PROBE) are then served in
 * the vhost worker without a trip to userspace.  This file is the device:
 * the file and its ioctls, the queues, endpoints and faults.  The domains
 * and their mappings are in iommu-domain.c, the translation for other
 * vhost devices bound to endpoints in iommu-iotlb.c.
 *
 * Every request is copied once from guest memory into the kernel before it
 * is looked at, so a guest rewriting it meanwhile changes nothing; guest
 * lengths and addresses are only used through the vhost memory table.
 */
#include <linux/compat.h>
#include <linux/file.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/sizes.h>
#include <linux/slab.h>
#include <linux/uio.h>
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
#define VHOST_IOMMU_FEATURES	((VHOST_FEATURES & ~(1ULL << VHOST_F_LOG_ALL)) | \
				 (1ULL << VIRTIO_F_VERSION_1) |			\
				 (1ULL << VIRTIO_IOMMU_F_INPUT_RANGE) |		\
				 (1ULL << VIRTIO_IOMMU_F_DOMAIN_RANGE) |	\
				 (1ULL << VIRTIO_IOMMU_F_MAP_UNMAP) |		\
				 (1ULL << VIRTIO_IOMMU_F_PROBE) |		\
				 (1ULL << VIRTIO_IOMMU_F_BYPASS_CONFIG))

static struct lock_class_key vhost_iommu_vq_key;

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

/* Is @dev a vhost-iommu? */
bool vhost_iommu_is_iommu(struct vhost_dev *dev)
{
	return dev->nvqs &&
	       dev->vqs[0]->handle_kick == vhost_iommu_handle_req_kick;
}

/*
 * Queue a fault record for the guest and have the worker deliver it.  May be
 * called from any context that can take a spinlock.
 */
void vhost_iommu_report_fault(struct vhost_iommu *v, u8 reason, u32 flags,
			      u32 endpoint, u64 address)
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
	struct vhost_iommu_ep *ep;
	unsigned long id;

	vhost_iommu_unbind_all(v);
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
			v->cfg.bypass = c.bypass;
			/* Detached endpoints' translations change */
			vhost_iommu_invalidate_all(v);
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
	ret = vhost_iommu_xlate(v, &t, access, &reason, U64_MAX);
	mutex_unlock(&v->lock);
	if ((ret == -ENOENT || ret == -EACCES) &&
	    (t.flags & VHOST_IOMMU_TRANSLATE_F_FAULT))
		vhost_iommu_report_fault(v, reason, fault, t.endpoint, t.iova);
	if (ret)
		return ret;
	return copy_to_user(argp, &t, sizeof(t)) ? -EFAULT : 0;
}

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
	ret = misc_register(&vhost_iommu_misc);
	if (ret)
		vhost_iommu_iotlb_unregister();
	return ret;
}
module_init(vhost_iommu_init);

static void __exit vhost_iommu_exit(void)
{
	misc_deregister(&vhost_iommu_misc);
	vhost_iommu_iotlb_unregister();
}
module_exit(vhost_iommu_exit);

MODULE_DESCRIPTION("Host kernel accelerator for virtio-iommu");
MODULE_LICENSE("GPL");
