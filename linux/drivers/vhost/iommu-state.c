// SPDX-License-Identifier: GPL-2.0-only
/*
 * vhost-iommu: the device's state out of a paused device and into a fresh
 * one (VHOST_IOMMU_GET_STATE, VHOST_IOMMU_SET_STATE), for a VMM that
 * snapshots or migrates its VM.
 *
 * The state is what the guest built, written as the requests that build it
 * again: an ATTACH (or ATTACH_TABLE) for each endpoint in a domain, a MAP
 * for each mapping, in the order a driver could have sent them, then the
 * faults still waiting for an event buffer.  Restoring serves those
 * requests as if the guest sent them, with every check a request gets, and
 * so a state that a guest could not have built (a MAP over a reserved
 * region, more than the limits allow, a table of a format not offered) is
 * refused for the same reason its request would be.  A state refused part
 * way leaves the device as it was before: without domains.
 *
 * The virtqueues' state is vhost's (VHOST_GET_VRING_BASE); requests the
 * guest queued and the device did not serve yet stay in the ring and are
 * served once the device runs again.
 */
#include <linux/build_bug.h>
#include <linux/generic_pt/marks.h>
#include <linux/iommu.h>
#include <linux/mm.h>
#include <linux/overflow.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "iommu.h"

/* Records are 8-byte aligned in the state */
#define VHOST_IOMMU_STATE_ALIGN		8

/* The largest payload a record may have (ATTACH_TABLE's, 60 bytes) */
#define VHOST_IOMMU_STATE_MAX_PAYLOAD	64

/*
 * The state being written: @buf NULL only counts.  @size is where the next
 * record goes.
 */
struct vhost_iommu_state_out {
	u8 *buf;
	size_t size;
};

static void vhost_iommu_state_put(struct vhost_iommu_state_out *o, u16 type,
				  const void *payload, u32 len)
{
	struct vhost_iommu_state_record r = {
		.type = cpu_to_le16(type),
		.len = cpu_to_le32(len),
	};

	if (o->buf) {
		memcpy(o->buf + o->size, &r, sizeof(r));
		memcpy(o->buf + o->size + sizeof(r), payload, len);
	}
	o->size += ALIGN(sizeof(r) + len, VHOST_IOMMU_STATE_ALIGN);
}

/* One MAP being found back from its marked pages */
struct vhost_iommu_state_map {
	struct vhost_iommu_state_out *o;
	struct virtio_iommu_req_map req;
	bool open;
};

static int vhost_iommu_state_page(const struct gpt_leaf *leaf, void *arg)
{
	struct vhost_iommu_state_map *m = arg;
	u32 flags = 0;

	if (leaf->sw & GPT_SW_FIRST) {
		if (!(leaf->sw & VHOST_IOMMU_SW_NONE)) {
			if (leaf->prot & IOMMU_READ)
				flags |= VIRTIO_IOMMU_MAP_F_READ;
			if (leaf->prot & IOMMU_WRITE)
				flags |= VIRTIO_IOMMU_MAP_F_WRITE;
		}
		m->req.virt_start = cpu_to_le64(leaf->iova);
		m->req.phys_start = cpu_to_le64(leaf->pa);
		m->req.flags = cpu_to_le32(flags);
		m->open = true;
	}
	if ((leaf->sw & GPT_SW_LAST) && m->open) {
		m->req.virt_end = cpu_to_le64(leaf->iova + leaf->size - 1);
		vhost_iommu_state_put(m->o, VHOST_IOMMU_STATE_R_REQUEST,
				      &m->req, offsetof(typeof(m->req), tail));
		m->open = false;
	}
	return 0;
}

/* The requests that build @dom again */
static void vhost_iommu_state_domain(struct vhost_iommu_state_out *o,
				     struct vhost_iommu_domain *dom)
{
	struct vhost_iommu_state_map m = {
		.o = o,
		.req.head.type = VIRTIO_IOMMU_T_MAP,
		.req.domain = cpu_to_le32(dom->id),
	};
	struct vhost_iommu_ep *ep;

	list_for_each_entry(ep, &dom->endpoints, node) {
		if (dom->table) {
			struct virtio_iommu_req_attach_table req = dom->table->req;

			req.endpoint = cpu_to_le32(ep->id);
			vhost_iommu_state_put(o, VHOST_IOMMU_STATE_R_REQUEST,
					      &req, offsetof(typeof(req), tail));
		} else {
			struct virtio_iommu_req_attach req = {
				.head.type = VIRTIO_IOMMU_T_ATTACH,
				.domain = cpu_to_le32(dom->id),
				.endpoint = cpu_to_le32(ep->id),
			};

			if (dom->bypass)
				req.flags = cpu_to_le32(VIRTIO_IOMMU_ATTACH_F_BYPASS);
			vhost_iommu_state_put(o, VHOST_IOMMU_STATE_R_REQUEST,
					      &req, offsetof(typeof(req), tail));
		}
	}
	if (dom->bypass || dom->table)
		return;
	/* A mapping's pages, first to last, are in address order */
	gpt_marks_walk(&dom->pt, 0, U64_MAX, vhost_iommu_state_page, &m);
}

static void vhost_iommu_state_config(struct vhost_iommu *v,
				     struct vhost_iommu_state_config *c)
{
	*c = (struct vhost_iommu_state_config) {
		.page_size_mask = cpu_to_le64(v->cfg.page_size_mask),
		.input_start = cpu_to_le64(v->cfg.input_start),
		.input_end = cpu_to_le64(v->cfg.input_end),
		.domain_start = cpu_to_le32(v->cfg.domain_start),
		.domain_end = cpu_to_le32(v->cfg.domain_end),
		.probe_size = cpu_to_le32(v->cfg.probe_size),
		.table_formats = cpu_to_le32(v->cfg.table_formats),
		.bypass = v->cfg.bypass,
	};
}

/*
 * What the guest negotiated: VHOST_F_LOG_ALL is the VMM's, on in a source
 * that logged while it ran, off in the device that restores
 */
static u64 vhost_iommu_state_features(struct vhost_iommu *v)
{
	return vhost_iommu_features(v) & ~BIT_ULL(VHOST_F_LOG_ALL);
}

/* Write the whole state to @o (or count it); v->lock held */
static void vhost_iommu_state_write(struct vhost_iommu *v,
				    struct vhost_iommu_state_out *o)
{
	struct virtio_iommu_fault faults[VHOST_IOMMU_MAX_FAULTS];
	struct vhost_iommu_state_header h = {
		.magic = cpu_to_le32(VHOST_IOMMU_STATE_MAGIC),
		.version = cpu_to_le32(VHOST_IOMMU_STATE_VERSION),
		.features = cpu_to_le64(vhost_iommu_state_features(v)),
	};
	struct vhost_iommu_state_config c;
	struct vhost_iommu_domain *dom;
	unsigned int i, n;
	unsigned long id;

	o->size = sizeof(h);
	vhost_iommu_state_config(v, &c);
	vhost_iommu_state_put(o, VHOST_IOMMU_STATE_R_CONFIG, &c, sizeof(c));
	xa_for_each(&v->domains, id, dom)
		vhost_iommu_state_domain(o, dom);

	spin_lock_irq(&v->fault_lock);
	n = v->nr_faults;
	for (i = 0; i < n; i++)
		faults[i] = v->faults[(v->fault_head + i) %
				      VHOST_IOMMU_MAX_FAULTS];
	spin_unlock_irq(&v->fault_lock);
	for (i = 0; i < n; i++)
		vhost_iommu_state_put(o, VHOST_IOMMU_STATE_R_FAULT, &faults[i],
				      sizeof(faults[i]));

	h.size = cpu_to_le64(o->size);
	if (o->buf)
		memcpy(o->buf, &h, sizeof(h));
}

static int vhost_iommu_state_args(struct vhost_iommu_state *s,
				  void __user *argp)
{
	u32 argsz;
	int ret;

	if (get_user(argsz, (u32 __user *)argp))
		return -EFAULT;
	if (argsz < sizeof(*s))
		return -EINVAL;
	ret = copy_struct_from_user(s, sizeof(*s), argp, argsz);
	if (ret)
		return ret;
	if (s->flags || s->reserved)
		return -EINVAL;
	return 0;
}

/**
 * vhost_iommu_get_state() - VHOST_IOMMU_GET_STATE
 * @v: the device; dev.mutex held
 * @argp: the caller's struct vhost_iommu_state
 *
 * Return: 0 with the state at @data and its size in @size; ENOSPC with only
 * the size written when @size is smaller; EBUSY while the device runs or
 * before a config; EINVAL for a bad argument.
 */
long vhost_iommu_get_state(struct vhost_iommu *v, void __user *argp)
{
	struct vhost_iommu_state s;
	struct vhost_iommu_state_out o = {};
	long ret;

	ret = vhost_iommu_state_args(&s, argp);
	if (ret)
		return ret;
	mutex_lock(&v->lock);
	if (v->running || !v->configured) {
		mutex_unlock(&v->lock);
		return -EBUSY;
	}
	vhost_iommu_state_write(v, &o);
	if (o.size <= s.size) {
		/* The VMM's to free: charged to it */
		o.buf = kvzalloc(o.size, GFP_KERNEL_ACCOUNT);
		if (o.buf)
			vhost_iommu_state_write(v, &o);
		else
			ret = -ENOMEM;
	} else {
		ret = -ENOSPC;
	}
	mutex_unlock(&v->lock);

	if (o.buf && copy_to_user(u64_to_user_ptr(s.data), o.buf, o.size))
		ret = -EFAULT;
	kvfree(o.buf);
	if (ret && ret != -ENOSPC)
		return ret;
	if (put_user(o.size, (u64 __user *)(argp +
					     offsetof(typeof(s), size))))
		return -EFAULT;
	return ret;
}

/* What a request's refusal means for the VMM restoring it */
static int vhost_iommu_state_errno(u8 status)
{
	switch (status) {
	case VIRTIO_IOMMU_S_OK:
		return 0;
	case VIRTIO_IOMMU_S_NOMEM:
		return -ENOSPC;		/* past this device's limits */
	case VIRTIO_IOMMU_S_NOENT:
		return -ENODEV;		/* an endpoint not added */
	case VIRTIO_IOMMU_S_RANGE:
		return -ERANGE;
	case VIRTIO_IOMMU_S_UNSUPP:
		return -EOPNOTSUPP;
	default:
		return -EINVAL;
	}
}

/* Serve one request record of @len bytes at @payload */
static int vhost_iommu_state_request(struct vhost_iommu *v, const u8 *payload,
				     u32 len)
{
	union vhost_iommu_req req = {};
	size_t size;
	u8 status;

	if (len < sizeof(req.head))
		return -EINVAL;
	memcpy(&req.head, payload, sizeof(req.head));
	/* Nothing but ATTACH, ATTACH_TABLE and MAP builds state */
	if (req.head.type != VIRTIO_IOMMU_T_ATTACH &&
	    req.head.type != VIRTIO_IOMMU_T_ATTACH_TABLE &&
	    req.head.type != VIRTIO_IOMMU_T_MAP)
		return -EINVAL;
	size = vhost_iommu_req_size(v, req.head.type);
	if (!size || len != size)
		return -EINVAL;
	memcpy(&req, payload, size);
	mutex_lock(&v->lock);
	status = vhost_iommu_serve_request(v, &req, NULL);
	mutex_unlock(&v->lock);
	return vhost_iommu_state_errno(status);
}

/* The config the state was saved under against this device's */
static int vhost_iommu_state_check_config(struct vhost_iommu *v,
					  const u8 *payload, u32 len,
					  u8 *bypass)
{
	struct vhost_iommu_state_config c, here;

	if (len != sizeof(c))
		return -EINVAL;
	memcpy(&c, payload, sizeof(c));
	if (c.bypass > 1 || !vhost_iommu_zero(c.reserved, sizeof(c.reserved)))
		return -EINVAL;
	mutex_lock(&v->lock);
	vhost_iommu_state_config(v, &here);
	mutex_unlock(&v->lock);
	/* What the guest sees must not change under it; bypass is its own */
	here.bypass = c.bypass;
	if (memcmp(&c, &here, sizeof(c)))
		return -EINVAL;
	*bypass = c.bypass;
	return 0;
}

static int vhost_iommu_state_fault(struct vhost_iommu *v, const u8 *payload,
				   u32 len, unsigned int *nr_faults)
{
	struct virtio_iommu_fault f;

	/* The device had none before: only these can be queued */
	if (len != sizeof(f) || ++*nr_faults > VHOST_IOMMU_MAX_FAULTS)
		return -EINVAL;
	memcpy(&f, payload, sizeof(f));
	if (f.reason > VIRTIO_IOMMU_FAULT_R_MAPPING ||
	    (le32_to_cpu(f.flags) & ~(VIRTIO_IOMMU_FAULT_F_READ |
				      VIRTIO_IOMMU_FAULT_F_WRITE |
				      VIRTIO_IOMMU_FAULT_F_EXEC |
				      VIRTIO_IOMMU_FAULT_F_ADDRESS)) ||
	    !vhost_iommu_zero(f.reserved, sizeof(f.reserved)) ||
	    !vhost_iommu_zero(f.reserved2, sizeof(f.reserved2)) ||
	    !xa_load(&v->endpoints, le32_to_cpu(f.endpoint)))
		return -EINVAL;
	vhost_iommu_report_fault(v, f.reason, le32_to_cpu(f.flags),
				 le32_to_cpu(f.endpoint),
				 le64_to_cpu(f.address));
	return 0;
}

/*
 * The largest state this device could have saved: bounds what a VMM may
 * hand in before a record is looked at.  v->lock held.
 */
static u64 vhost_iommu_state_max(struct vhost_iommu *v)
{
	u64 rec = ALIGN(sizeof(struct vhost_iommu_state_record) +
			VHOST_IOMMU_STATE_MAX_PAYLOAD, VHOST_IOMMU_STATE_ALIGN);
	unsigned long id, eps = 0;
	struct vhost_iommu_ep *ep;

	xa_for_each(&v->endpoints, id, ep)
		eps++;
	return sizeof(struct vhost_iommu_state_header) +
	       rec * (1 + eps + v->cfg.max_mappings + VHOST_IOMMU_MAX_FAULTS);
}

/*
 * Serve the records of @s, of at most @max bytes; the device has no domain
 * and no fault yet
 */
static int vhost_iommu_state_load(struct vhost_iommu *v,
				  const struct vhost_iommu_state *s, u64 max,
				  u8 *bypass)
{
	u8 __user *data = u64_to_user_ptr(s->data);
	u8 payload[VHOST_IOMMU_STATE_MAX_PAYLOAD];
	struct vhost_iommu_state_record r = {};
	struct vhost_iommu_state_header h;
	unsigned int nr_faults = 0;
	u64 off, at = 0, len = 0;
	bool config = false;
	int ret = 0;

	/* The writer pads every record, the last one too */
	BUILD_BUG_ON(offsetof(struct virtio_iommu_req_attach_table, tail) >
		     sizeof(payload));
	BUILD_BUG_ON(sizeof(struct vhost_iommu_state_config) > sizeof(payload));
	BUILD_BUG_ON(sizeof(struct virtio_iommu_fault) > sizeof(payload));

	if (s->size < sizeof(h) || s->size > max ||
	    !IS_ALIGNED(s->size, VHOST_IOMMU_STATE_ALIGN))
		return -EINVAL;
	if (copy_from_user(&h, data, sizeof(h)))
		return -EFAULT;
	if (le32_to_cpu(h.magic) != VHOST_IOMMU_STATE_MAGIC ||
	    le32_to_cpu(h.version) != VHOST_IOMMU_STATE_VERSION ||
	    le64_to_cpu(h.size) != s->size || h.reserved)
		return -EINVAL;
	if (le64_to_cpu(h.features) != vhost_iommu_state_features(v)) {
		pr_info_ratelimited("vhost-iommu: state of features %#llx refused: the device's are %#llx\n",
				    le64_to_cpu(h.features),
				    vhost_iommu_state_features(v));
		return -EINVAL;
	}

	for (off = sizeof(h); off < s->size && !ret;
	     off += ALIGN(sizeof(r) + len, VHOST_IOMMU_STATE_ALIGN)) {
		at = off;
		if (s->size - off < sizeof(r))
			return -EINVAL;
		if (copy_from_user(&r, data + off, sizeof(r)))
			return -EFAULT;
		len = le32_to_cpu(r.len);
		if (r.reserved || len > sizeof(payload) ||
		    s->size - off - sizeof(r) < len)
			return -EINVAL;
		if (copy_from_user(payload, data + off + sizeof(r), len))
			return -EFAULT;
		/* The config comes first, once */
		if (config == (le16_to_cpu(r.type) == VHOST_IOMMU_STATE_R_CONFIG))
			return -EINVAL;
		switch (le16_to_cpu(r.type)) {
		case VHOST_IOMMU_STATE_R_CONFIG:
			ret = vhost_iommu_state_check_config(v, payload, len,
							     bypass);
			config = true;
			break;
		case VHOST_IOMMU_STATE_R_REQUEST:
			ret = vhost_iommu_state_request(v, payload, len);
			break;
		case VHOST_IOMMU_STATE_R_FAULT:
			ret = vhost_iommu_state_fault(v, payload, len,
						      &nr_faults);
			break;
		default:
			ret = -EINVAL;
			break;
		}
		cond_resched();
	}
	if (!ret && !config)
		ret = -EINVAL;
	/* Say which record, for the VMM's operator */
	if (ret)
		pr_info_ratelimited("vhost-iommu: state refused at byte %llu (record type %u): %d\n",
				    at, le16_to_cpu(r.type), ret);
	return ret;
}

/**
 * vhost_iommu_set_state() - VHOST_IOMMU_SET_STATE
 * @v: the device; dev.mutex held
 * @argp: the caller's struct vhost_iommu_state
 *
 * Return: 0 with the device holding the state; otherwise the device is as
 * it was (configured, its endpoints added, no domain): EBUSY while it runs,
 * holds domains, or has no config; EINVAL for a malformed state or one
 * saved under other features or another config; ENOSPC past this device's
 * limits; ENODEV for an endpoint not added; ERANGE for a mapping outside
 * the ranges; EFAULT, ENOMEM.
 */
long vhost_iommu_set_state(struct vhost_iommu *v, void __user *argp)
{
	struct vhost_iommu_state s;
	u8 bypass = 0;
	u64 max = 0;
	long ret;

	ret = vhost_iommu_state_args(&s, argp);
	if (ret)
		return ret;
	mutex_lock(&v->lock);
	if (v->running || !v->configured || !xa_empty(&v->domains) ||
	    READ_ONCE(v->nr_faults))
		ret = -EBUSY;
	else
		max = vhost_iommu_state_max(v);
	mutex_unlock(&v->lock);
	if (ret)
		return ret;

	ret = vhost_iommu_state_load(v, &s, max, &bypass);
	mutex_lock(&v->lock);
	if (ret) {
		vhost_iommu_reset(v);
	} else if (v->cfg.bypass != bypass) {
		v->cfg.bypass = bypass;
		v->cfg_given.bypass = bypass;
		/* As SET_CONFIG: detached endpoints' translations change */
		vhost_iommu_invalidate_all(v);
		vhost_iommu_settle_all(v);
	}
	mutex_unlock(&v->lock);
	if (ret)
		vhost_iommu_clear_faults(v);
	return ret;
}
