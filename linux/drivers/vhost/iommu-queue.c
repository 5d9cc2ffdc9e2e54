// SPDX-License-Identifier: GPL-2.0-only
/*
 * vhost-iommu: the request and event queues.
 *
 * The request queue's worker copies each request out of guest memory once,
 * through the vhost memory table, before it looks at it, so a guest
 * rewriting it meanwhile changes nothing; it answers in the request's
 * device-writable tail, or leaves the buffer unwritten (used length 0)
 * where virtio 1.3 says so.  ATTACH, DETACH, MAP and UNMAP are served by
 * iommu-domain.c under vhost_iommu.lock.  Faults wait in a small ring until
 * the guest gives the event queue a buffer.
 */
#include <linux/sched/clock.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/uio.h>

#include "iommu.h"

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
	/*
	 * ADD_ENDPOINT, SET_CONFIG and SET_FEATURES made sure they fit
	 * probe_size.
	 */
	for (i = 0; i < ep->nr_resv; i++, p++) {
		p->head.type = cpu_to_le16(VIRTIO_IOMMU_PROBE_T_RESV_MEM);
		p->head.length = cpu_to_le16(sizeof(*p) - sizeof(p->head));
		p->subtype = ep->resv[i].subtype;
		p->start = cpu_to_le64(ep->resv[i].start);
		p->end = cpu_to_le64(ep->resv[i].end);
	}
	/* Misses of this endpoint fetch unnotified requests first */
	if (vhost_iommu_acked(v, VIRTIO_IOMMU_F_POSTED_MAP) &&
	    !(ep->flags & VHOST_IOMMU_EP_F_NO_POSTED_MAP)) {
		struct virtio_iommu_probe_posted_map *pm = (void *)p;

		pm->head.type = cpu_to_le16(VIRTIO_IOMMU_PROBE_T_POSTED_MAP);
		pm->head.length = cpu_to_le16(sizeof(*pm) - sizeof(pm->head));
		p = (void *)(pm + 1);
	}
	/* The table formats every endpoint may be attached with */
	if (vhost_iommu_acked(v, VIRTIO_IOMMU_F_ATTACH_TABLE))
		vhost_iommu_table_props(v, ep, (u8 *)p);
	return VIRTIO_IOMMU_S_OK;
}

/**
 * vhost_iommu_req_size() - the size of a request the device knows
 * @v: the device
 * @type: the request's type
 *
 * Return: the bytes the driver sends (without the tail, and for PROBE
 * without the properties), or 0 for a type this device does not know:
 * PROBE, ATTACH_TABLE and INVALIDATE without their feature, as the
 * extension changes nothing for a driver that did not negotiate it
 * (virtio-iommu.rst, "Page-table sharing").
 */
size_t vhost_iommu_req_size(struct vhost_iommu *v, u8 type)
{
	switch (type) {
	case VIRTIO_IOMMU_T_ATTACH:
		return offsetof(struct virtio_iommu_req_attach, tail);
	case VIRTIO_IOMMU_T_DETACH:
		return offsetof(struct virtio_iommu_req_detach, tail);
	case VIRTIO_IOMMU_T_MAP:
		return offsetof(struct virtio_iommu_req_map, tail);
	case VIRTIO_IOMMU_T_UNMAP:
		return offsetof(struct virtio_iommu_req_unmap, tail);
	case VIRTIO_IOMMU_T_PROBE:
		if (!vhost_iommu_acked(v, VIRTIO_IOMMU_F_PROBE))
			return 0;
		return sizeof(struct virtio_iommu_req_probe);
	case VIRTIO_IOMMU_T_ATTACH_TABLE:
		if (!vhost_iommu_acked(v, VIRTIO_IOMMU_F_ATTACH_TABLE))
			return 0;
		return offsetof(struct virtio_iommu_req_attach_table, tail);
	case VIRTIO_IOMMU_T_INVALIDATE:
		if (!vhost_iommu_acked(v, VIRTIO_IOMMU_F_ATTACH_TABLE))
			return 0;
		return offsetof(struct virtio_iommu_req_invalidate, tail);
	default:
		return 0;
	}
}

/**
 * vhost_iommu_serve_request() - do what a request asks
 * @v: the device, its lock held
 * @req: the request, whole and of a type the device knows with the
 *       features negotiated
 * @props: PROBE's properties buffer of probe_size bytes
 *
 * Return: the status for the request's tail.
 */
u8 vhost_iommu_serve_request(struct vhost_iommu *v, union vhost_iommu_req *req,
			     u8 *props)
{
	lockdep_assert_held(&v->lock);
	switch (req->head.type) {
	case VIRTIO_IOMMU_T_ATTACH:
		return vhost_iommu_attach(v, &req->attach);
	case VIRTIO_IOMMU_T_DETACH:
		return vhost_iommu_detach(v, &req->detach);
	case VIRTIO_IOMMU_T_MAP:
		return vhost_iommu_acked(v, VIRTIO_IOMMU_F_MAP_UNMAP) ?
		       vhost_iommu_map(v, &req->map) : VIRTIO_IOMMU_S_UNSUPP;
	case VIRTIO_IOMMU_T_UNMAP:
		return vhost_iommu_acked(v, VIRTIO_IOMMU_F_MAP_UNMAP) ?
		       vhost_iommu_unmap(v, &req->unmap) :
		       VIRTIO_IOMMU_S_UNSUPP;
	case VIRTIO_IOMMU_T_ATTACH_TABLE:
		return vhost_iommu_attach_table(v, &req->attach_table);
	case VIRTIO_IOMMU_T_INVALIDATE:
		return vhost_iommu_invalidate(v, &req->invalidate);
	case VIRTIO_IOMMU_T_PROBE:
		return vhost_iommu_probe(v, &req->probe, props);
	default:
		return VIRTIO_IOMMU_S_UNSUPP;
	}
}

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

	size = vhost_iommu_req_size(v, req.head.type);
	if (!size)
		return 0;	/* unknown type: leave the buffer unwritten */
	if (req.head.type == VIRTIO_IOMMU_T_PROBE)
		tail_off = v->cfg.probe_size;
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
		status = vhost_iommu_serve_request(v, &req, props);
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
	/* Answered (the caller counts what was not) */
	vhost_iommu_count(v, requests[req.head.type], 1);
	if (status != VIRTIO_IOMMU_S_OK)
		vhost_iommu_count(v, failed, 1);
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

/* How a look at the emptied request queue ended */
enum vhost_iommu_look {
	VHOST_IOMMU_LOOK_FOUND,		/* a request came */
	VHOST_IOMMU_LOOK_IDLE,		/* none: time out, reschedule, signal */
	VHOST_IOMMU_LOOK_WORK,		/* other work was queued for the worker */
};

/*
 * The request queue is empty and the VMM set a busy-loop timeout on it
 * (VHOST_SET_VRING_BUSYLOOP_TIMEOUT, microseconds): look at the ring for
 * that long, notifications still off, before the worker sleeps.  A driver
 * that sends its next request within the window then neither kicks nor
 * waits for the worker to be woken, which is most of a request's cost when
 * the worker runs on another CPU than the guest.  Other work queued for
 * the worker, a reschedule or a signal ends the wait, and it lasts at most
 * VHOST_IOMMU_MAX_BUSYLOOP_US: the worker holds the queue's mutex, which
 * a lookup that serves posted MAPs waits for.
 */
static enum vhost_iommu_look vhost_iommu_busy_poll(struct vhost_iommu *v,
						   struct vhost_virtqueue *vq)
{
	u32 us = min(vq->busyloop_timeout, VHOST_IOMMU_MAX_BUSYLOOP_US);
	enum vhost_iommu_look look = VHOST_IOMMU_LOOK_IDLE;
	u64 end;

	migrate_disable();
	end = local_clock() + (u64)us * NSEC_PER_USEC;
	while (!need_resched() && !signal_pending(current) &&
	       local_clock() < end) {
		if (!vhost_vq_avail_empty(&v->dev, vq)) {
			look = VHOST_IOMMU_LOOK_FOUND;
			break;
		}
		if (vhost_vq_has_work(vq)) {
			look = VHOST_IOMMU_LOOK_WORK;
			break;
		}
		cpu_relax();
	}
	migrate_enable();
	vhost_iommu_count(v, busy_polls, 1);
	if (look == VHOST_IOMMU_LOOK_FOUND)
		vhost_iommu_count(v, busy_poll_hits, 1);
	return look;
}

/*
 * Serve the available requests, vq->mutex held: until the ring is empty,
 * or, from a kick (@limit 0), until the worker's weight is spent (the work
 * is queued again then).  Returns how many were served.
 */
static unsigned int vhost_iommu_serve(struct vhost_iommu *v,
				      struct vhost_virtqueue *vq,
				      unsigned int limit)
{
	/* A migration's dirty log: what the answers write */
	struct vhost_log *log = vhost_has_feature(vq, VHOST_F_LOG_ALL) ?
				vq->log : NULL;
	unsigned int out, in, log_num = 0, n = 0;
	bool answered = false;		/* used buffers not signalled yet */
	enum vhost_iommu_look look;
	u64 start;
	int head;
	u32 len;

	vhost_disable_notify(&v->dev, vq);
	for (;;) {
		start = local_clock();
		head = vhost_get_vq_desc(vq, vq->iov, ARRAY_SIZE(vq->iov),
					 &out, &in, log, &log_num);
		if (head == vq->num) {
			/*
			 * Empty: from a kick, answer what was served and
			 * look again for a while if the VMM asked for it
			 */
			if (!limit && vq->busyloop_timeout) {
				if (answered)
					vhost_signal(&v->dev, vq);
				answered = false;
				look = vhost_iommu_busy_poll(v, vq);
				if (look == VHOST_IOMMU_LOOK_FOUND)
					continue;
				/*
				 * Other work first, then look again, with
				 * notifications still off.  That work is most
				 * often the kick of a driver that did not see
				 * the loop: turned on here, notifications would
				 * ask it to kick for every request after.
				 */
				if (look == VHOST_IOMMU_LOOK_WORK) {
					vhost_poll_queue(&vq->poll);
					break;
				}
			}
			/* Notifications on, unless a request came */
			if (likely(!vhost_enable_notify(&v->dev, vq)))
				break;
			vhost_disable_notify(&v->dev, vq);
			continue;
		}
		if (unlikely(head < 0)) {
			if (!vhost_iommu_skip_bad(v, vq))
				break;
			answered = true;
		} else {
			len = vhost_iommu_handle_one(v, vq, out, in);
			if (!len)
				vhost_iommu_count(v, requests[0], 1);
			else if (unlikely(log))
				vhost_log_write(vq, log, log_num, len,
						vq->iov + out, in);
			if (vhost_add_used(vq, head, len))
				break;
			answered = true;
			vhost_iommu_count(v, serve_ns, local_clock() - start);
		}
		/*
		 * A kick's weight spent (vhost queues the work again) or a
		 * fetch's ring's worth: notifications stay off, the worker
		 * takes the rest.
		 */
		n++;
		if (limit ? n >= limit : vhost_exceeds_weight(vq, n, 0)) {
			if (limit)
				vhost_poll_queue(&vq->poll);
			break;
		}
	}
	/*
	 * Without VIRTIO_RING_F_EVENT_IDX vhost_signal() interrupts whenever
	 * the driver allows it: only for buffers it has not been told of.
	 */
	if (answered)
		vhost_signal(&v->dev, vq);
	return n;
}

void vhost_iommu_handle_req_kick(struct vhost_work *work)
{
	struct vhost_virtqueue *vq = container_of(work, struct vhost_virtqueue,
						  poll.work);
	struct vhost_iommu *v = container_of(vq->dev, struct vhost_iommu, dev);

	mutex_lock(&vq->mutex);
	if (vhost_vq_get_backend(vq))
		vhost_iommu_serve(v, vq, 0);
	mutex_unlock(&vq->mutex);
}

/**
 * vhost_iommu_fetch_posted() - serve the requests the guest did not notify
 * @v: the device; the caller holds none of its locks but dev.mutex, and
 *     works in the owner's mm (an ioctl, or our worker, one of its threads)
 *
 * Posted MAP (VIRTIO_IOMMU_F_POSTED_MAP): the driver may leave a MAP for
 * the device to find.  Before a translation fails, the device serves every
 * request made available so far (rst: MUST), then translates again.  A
 * ring holds at most vq->num requests, so vq->num bounds the work; past
 * it the worker goes on.
 *
 * Return: whether the queue was served up to now, so that translating
 * again may give another answer.  It may have been the worker, with the
 * queue's mutex held while this waited for it, that served the MAP: this
 * then serves nothing, and the caller must translate again all the same.
 */
bool vhost_iommu_fetch_posted(struct vhost_iommu *v)
{
	struct vhost_virtqueue *vq = &v->vqs[VHOST_IOMMU_VQ_REQUEST];
	unsigned int n = 0;
	bool served;

	if (!vhost_iommu_acked(v, VIRTIO_IOMMU_F_POSTED_MAP) || !current->mm)
		return false;
	mutex_lock(&vq->mutex);
	served = vhost_vq_get_backend(vq);
	if (served)
		n = vhost_iommu_serve(v, vq, vq->num);
	mutex_unlock(&vq->mutex);
	if (n) {
		vhost_iommu_count(v, fetches, 1);
		vhost_iommu_count(v, fetched, n);
	}
	return served;
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

void vhost_iommu_clear_faults(struct vhost_iommu *v)
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
void vhost_iommu_handle_evt_kick(struct vhost_work *work)
{
	struct vhost_virtqueue *vq = container_of(work, struct vhost_virtqueue,
						  poll.work);
	struct vhost_iommu *v = container_of(vq->dev, struct vhost_iommu, dev);
	unsigned int out, in, log_num = 0;
	struct virtio_iommu_fault f;
	struct vhost_log *log;
	struct iov_iter to;
	bool added = false;
	int head, n = 0;
	u32 len;

	mutex_lock(&vq->mutex);
	if (!vhost_vq_get_backend(vq))
		goto out;
	log = vhost_has_feature(vq, VHOST_F_LOG_ALL) ? vq->log : NULL;
	/*
	 * Kicks only matter while faults wait for buffers: notifications are
	 * on only then.  A new fault queues this work itself.
	 */
	vhost_disable_notify(&v->dev, vq);
	while (vhost_iommu_peek_fault(v, &f)) {
		head = vhost_get_vq_desc(vq, vq->iov, ARRAY_SIZE(vq->iov),
					 &out, &in, log, &log_num);
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
				if (unlikely(log))
					vhost_log_write(vq, log, log_num, len,
							vq->iov, in);
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
