/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vhost-iommu selftests: a model of the device, and seeded random requests
 * checked against it (vhost_iommu.c's random run and rewriting guest,
 * vhost_iommu_limits.c's fail-nth sweep of the request path).
 */
#ifndef __SELFTEST_VHOST_IOMMU_MODEL_H
#define __SELFTEST_VHOST_IOMMU_MODEL_H

#include "vhost_iommu_utils.h"

/*
 * A seeded random run checked against a model of the device.
 *
 * The model is virtio 1.3's rules written as plainly as possible: which
 * endpoints exist, which domain each is attached to, each domain's mappings,
 * and the device's limits.  For every request it computes the set of
 * statuses the spec allows (more than one when a request breaks several
 * rules at once: the spec does not say which one wins), or that the used
 * length must be 0.  An answer outside that set fails the run.  A request
 * that gets OK changes the model; any other answer must leave the device as
 * it was, which TRANSLATE checks against the model after every batch.
 *
 * VHOST_IOMMU_SEED=<n> replays a run, VHOST_IOMMU_RANDOM=<n> sets the number
 * of requests (default 1000000).
 */
struct m_map {
	uint64_t start, end, phys;
	uint32_t flags;
};

struct m_dom {
	uint32_t id;
	int bypass;
	int nr_eps;
	int nr_maps;
	struct m_map maps[MAX_MAPPINGS];
};

struct model {
	int nr_doms;
	int nr_maps;
	struct m_dom doms[MAX_DOMAINS];
	int ep_present[NR_EPS + 1];
	int ep_dom[NR_EPS + 1];		/* index in doms[], -1: detached */
};

static void m_init(struct model *m)
{
	int i;

	memset(m, 0, sizeof(*m));
	for (i = 1; i <= NR_EPS; i++) {
		m->ep_present[i] = 1;
		m->ep_dom[i] = -1;
	}
}

static int m_ep_ok(struct model *m, uint32_t ep)
{
	return ep >= 1 && ep <= NR_EPS && m->ep_present[ep];
}

static int m_find(struct model *m, uint32_t id)
{
	int i;

	for (i = 0; i < m->nr_doms; i++)
		if (m->doms[i].id == id)
			return i;
	return -1;
}

static void m_detach(struct model *m, uint32_t ep)
{
	int d = m->ep_dom[ep], last = m->nr_doms - 1, i;

	if (d < 0)
		return;
	m->ep_dom[ep] = -1;
	if (--m->doms[d].nr_eps)
		return;
	/* The domain goes with its last endpoint */
	m->nr_maps -= m->doms[d].nr_maps;
	if (d != last) {
		m->doms[d] = m->doms[last];
		for (i = 1; i <= NR_EPS; i++)
			if (m->ep_dom[i] == last)
				m->ep_dom[i] = d;
	}
	m->nr_doms--;
}

static void m_reset(struct model *m)
{
	int i;

	for (i = 1; i <= NR_EPS; i++)
		m_detach(m, i);
}

static int m_overlaps(struct m_dom *d, uint64_t s, uint64_t e)
{
	int i;

	for (i = 0; i < d->nr_maps; i++)
		if (d->maps[i].start <= e && s <= d->maps[i].end)
			return 1;
	return 0;
}

static int m_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return 0;
	return 1;
}

/* Endpoint 1, when present, has the MSI window as its reserved region */
static int m_resv_meets(uint32_t ep, uint64_t s, uint64_t e)
{
	return ep == 1 && s <= MSI_HI && MSI_LO <= e;
}

/* Does [@s, @e] meet a reserved region of an endpoint in domain @d? */
static int m_dom_resv_meets(struct model *m, int d, uint64_t s, uint64_t e)
{
	uint32_t ep;

	for (ep = 1; ep <= NR_EPS; ep++)
		if (m->ep_present[ep] && m->ep_dom[ep] == d &&
		    m_resv_meets(ep, s, e))
			return 1;
	return 0;
}

/* Does domain @d map into a reserved region of endpoint @ep? */
static int m_resv_mapped(struct model *m, int d, uint32_t ep)
{
	int i;

	for (i = 0; i < m->doms[d].nr_maps; i++)
		if (m_resv_meets(ep, m->doms[d].maps[i].start,
				 m->doms[d].maps[i].end))
			return 1;
	return 0;
}

#define S(x)	(1u << VIRTIO_IOMMU_S_##x)

/*
 * The statuses allowed for a request, given the model and @errs, the rules
 * it broke already (none today: the head's reserved bytes are ignored);
 * applied to the model on OK.
 */
static uint32_t m_attach(struct model *m, const struct virtio_iommu_req_attach *r,
			 uint32_t errs)
{
	int bypass = r->flags & VIRTIO_IOMMU_ATTACH_F_BYPASS;
	int d;

	if (!m_zero(r->reserved, sizeof(r->reserved)) ||
	    (r->flags & ~VIRTIO_IOMMU_ATTACH_F_BYPASS))
		errs |= S(INVAL);
	if (!m_ep_ok(m, r->endpoint))
		errs |= S(NOENT);
	if (r->domain < 1 || r->domain > 1000)
		errs |= S(RANGE);
	d = m_find(m, r->domain);
	if (d >= 0 && m->doms[d].bypass != bypass)
		errs |= S(INVAL);	/* a domain is bypass or not, for good */
	/* A domain that maps into the endpoint's reserved regions */
	if (d >= 0 && m_ep_ok(m, r->endpoint) && m->ep_dom[r->endpoint] != d &&
	    m_resv_mapped(m, d, r->endpoint))
		errs |= S(INVAL);
	if (d < 0 && m->nr_doms >= MAX_DOMAINS)
		errs |= S(NOMEM);
	if (errs)
		return errs;
	if (d >= 0 && m->ep_dom[r->endpoint] == d)
		return S(OK);
	if (d < 0) {
		d = m->nr_doms++;
		memset(&m->doms[d], 0, sizeof(m->doms[d]));
		m->doms[d].id = r->domain;
		m->doms[d].bypass = bypass;
	}
	m->doms[d].nr_eps++;		/* before the detach: it may move @d */
	m_detach(m, r->endpoint);
	m->ep_dom[r->endpoint] = m_find(m, r->domain);
	return S(OK);
}

static uint32_t m_detach_req(struct model *m,
			     const struct virtio_iommu_req_detach *r,
			     uint32_t errs)
{
	int d = m_find(m, r->domain);

	/* reserved is ignored */
	if (!m_ep_ok(m, r->endpoint))
		errs |= S(NOENT);
	else if (d < 0 || m->ep_dom[r->endpoint] != d)
		errs |= S(INVAL);
	if (errs)
		return errs;
	m_detach(m, r->endpoint);
	return S(OK);
}

static uint32_t m_map_req(struct model *m, const struct virtio_iommu_req_map *r,
			  uint32_t errs)
{
	uint64_t s = r->virt_start, e = r->virt_end, p = r->phys_start;
	struct m_dom *dom;
	int d = m_find(m, r->domain);

	if (r->flags & ~(uint32_t)RW)
		errs |= S(INVAL);
	if (e < s)
		errs |= S(INVAL);
	if (d < 0)
		errs |= S(NOENT);
	else if (m->doms[d].bypass)
		errs |= S(INVAL);
	if ((s | p | (e + 1)) & (PG - 1))
		errs |= S(RANGE);
	if (e > (1ULL << 48) - 1)		/* input range [0, 2^48) */
		errs |= S(RANGE);
	/* phys wraps, or ends past the 52 bits the device holds */
	if (e >= s && (p + (e - s) < p || (p + (e - s)) >> 52))
		errs |= S(RANGE);
	if (d >= 0 && m_overlaps(&m->doms[d], s, e))
		errs |= S(INVAL);
	if (d >= 0 && m_dom_resv_meets(m, d, s, e))
		errs |= S(INVAL);
	if (m->nr_maps >= MAX_MAPPINGS)
		errs |= S(NOMEM);
	if (errs)
		return errs;
	dom = &m->doms[d];
	dom->maps[dom->nr_maps++] = (struct m_map){ s, e, p, r->flags };
	m->nr_maps++;
	return S(OK);
}

static uint32_t m_unmap_req(struct model *m,
			    const struct virtio_iommu_req_unmap *r,
			    uint32_t errs)
{
	uint64_t s = r->virt_start, e = r->virt_end;
	struct m_dom *dom;
	int d = m_find(m, r->domain), i;

	if (!m_zero(r->reserved, sizeof(r->reserved)))
		errs |= S(INVAL);
	if (e < s)
		errs |= S(INVAL);
	if (d < 0)
		errs |= S(NOENT);
	else if (m->doms[d].bypass)
		errs |= S(INVAL);
	else if (e >= s)
		for (i = 0; i < m->doms[d].nr_maps; i++) {
			struct m_map *x = &m->doms[d].maps[i];

			/* Touched but not inside: it would be split */
			if (x->start <= e && s <= x->end &&
			    (x->start < s || x->end > e))
				errs |= S(RANGE);
		}
	if (errs)
		return errs;
	dom = &m->doms[d];
	for (i = 0; i < dom->nr_maps; ) {
		if (dom->maps[i].start >= s && dom->maps[i].end <= e) {
			dom->maps[i] = dom->maps[--dom->nr_maps];
			m->nr_maps--;
		} else {
			i++;
		}
	}
	return S(OK);
}

static uint32_t m_probe_req(struct model *m,
			    const struct virtio_iommu_req_probe *r,
			    uint32_t errs)
{
	/* reserved is ignored */
	if (!m_ep_ok(m, r->endpoint))
		errs |= S(NOENT);
	return errs ? errs : S(OK);
}

/* What TRANSLATE must say: 0 and @t filled, or -errno. */
static int m_translate(struct model *m, uint32_t ep, uint64_t iova,
		       struct vhost_iommu_translate *t)
{
	struct m_dom *d;
	int i;

	memset(t, 0, sizeof(*t));
	if (!m_ep_ok(m, ep))
		return -ENODEV;
	if (m->ep_dom[ep] < 0)
		return -ENOENT;		/* the fixture does not bypass */
	d = &m->doms[m->ep_dom[ep]];
	if (d->bypass) {
		t->gpa = iova;
		t->perm = VHOST_IOMMU_PERM_READ | VHOST_IOMMU_PERM_WRITE |
			  VHOST_IOMMU_PERM_BYPASS;
		return 0;
	}
	for (i = 0; i < d->nr_maps; i++) {
		struct m_map *x = &d->maps[i];

		if (iova < x->start || iova > x->end)
			continue;
		if (!(x->flags & RW))
			return -ENOENT;
		t->gpa = x->phys + (iova - x->start);
		t->size = x->end - iova + 1;
		t->perm = ((x->flags & VIRTIO_IOMMU_MAP_F_READ) ?
			   VHOST_IOMMU_PERM_READ : 0) |
			  ((x->flags & VIRTIO_IOMMU_MAP_F_WRITE) ?
			   VHOST_IOMMU_PERM_WRITE : 0);
		return 0;
	}
	return -ENOENT;
}

/* xorshift64*: small, and the same sequence everywhere for a seed */
static uint64_t rnd_state;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state >> 12;
	rnd_state ^= rnd_state << 25;
	rnd_state ^= rnd_state >> 27;
	return rnd_state * 0x2545f4914f6cdd1dULL;
}

static uint32_t rnd_below(uint32_t n)
{
	return (rnd() >> 32) % n;
}

/* true @x times in 1000 */
static int pm(unsigned int x)
{
	return rnd_below(1000) < x;
}

static uint64_t seed_from_env(void)
{
	const char *s = getenv("VHOST_IOMMU_SEED");
	struct timespec ts;

	if (s && *s)
		return strtoull(s, NULL, 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	return ((uint64_t)ts.tv_sec << 32) ^ ts.tv_nsec ^ getpid();
}

/* One request of a batch */
struct rreq {
	union {
		struct virtio_iommu_req_head head;
		struct virtio_iommu_req_attach attach;
		struct virtio_iommu_req_detach detach;
		struct virtio_iommu_req_map map;
		struct virtio_iommu_req_unmap unmap;
		struct virtio_iommu_req_probe probe;
		uint8_t bytes[BREQ_SZ];
	};
	uint32_t out_len;	/* device-readable bytes */
	uint32_t in_len;	/* device-writable bytes */
	uint32_t tail_off;	/* where the tail goes in them */
	uint32_t want;		/* statuses allowed; 0: used length 0 */
};

/* Mostly a domain that exists, so that requests get past NOENT */
static uint32_t r_domain(struct model *m)
{
	static const uint32_t odd[] = { 0, 1000, 1001, 0xffffffff };

	if (m->nr_doms && pm(700))
		return m->doms[rnd_below(m->nr_doms)].id;
	if (pm(850))
		return 1 + rnd_below(MAX_DOMAINS + 4);
	return pm(500) ? odd[rnd_below(4)] : (uint32_t)rnd();
}

static uint32_t r_endpoint(void)
{
	static const uint32_t odd[] = { 0, NR_EPS + 1, 999, 0xffffffff };

	if (pm(960))
		return 1 + rnd_below(NR_EPS);
	return pm(500) ? odd[rnd_below(4)] : (uint32_t)rnd();
}

/* Mostly a small window, so that mappings meet; sometimes the edges. */
static uint64_t r_iova(void)
{
	if (pm(960))
		return rnd_below(72) * PG;
	if (pm(500))
		return (1ULL << 48) - (1 + rnd_below(8)) * PG;
	if (pm(600))	/* around endpoint 1's MSI window */
		return (pm(500) ? MSI_LO : MSI_HI + 1) - 8 * PG +
		       rnd_below(16) * PG;
	return rnd() & ~(PG - 1);
}

static uint64_t r_misalign(uint64_t x)
{
	return x + 1 + rnd_below(PG - 1);
}

static void r_reserved(uint8_t *p, size_t n)
{
	p[rnd_below(n)] = 1 + rnd_below(255);
}

/*
 * Batches now and then lean on one request type, so that the device fills
 * up to its limits (a burst of ATTACH to new domains, or of MAP).
 */
static unsigned int r_burst;
#define BURST_ATTACH	1
#define BURST_MAP	2

/* A random request for the model's current state; fills r->want. */
static void r_make(struct model *m, struct rreq *r)
{
	unsigned int t = rnd_below(1000);
	uint32_t ep, errs = 0;

	if (r_burst == BURST_ATTACH && pm(800))
		t = 0;
	else if (r_burst == BURST_MAP && pm(800))
		t = 400;

	memset(r, 0, sizeof(*r));
	/* The head's reserved bytes: ignored, whatever they hold */
	if (pm(10))
		r_reserved(r->head.reserved, sizeof(r->head.reserved));
	r->in_len = 4;
	if (t < 180) {
		struct virtio_iommu_req_attach *a = &r->attach;

		a->head.type = VIRTIO_IOMMU_T_ATTACH;
		a->domain = r_burst == BURST_ATTACH ?
			    1 + rnd_below(MAX_DOMAINS + 4) : r_domain(m);
		a->endpoint = r_endpoint();
		if (pm(100))
			a->flags = VIRTIO_IOMMU_ATTACH_F_BYPASS;
		if (pm(10))
			a->flags |= 1u << (1 + rnd_below(31));
		if (pm(10))
			r_reserved(a->reserved, sizeof(a->reserved));
		r->out_len = sizeof(*a) - 4;
		r->want = m_attach(m, a, errs);
	} else if (t < 280) {
		struct virtio_iommu_req_detach *d = &r->detach;

		d->head.type = VIRTIO_IOMMU_T_DETACH;
		ep = r_endpoint();
		d->endpoint = ep;
		d->domain = r_domain(m);
		/* Mostly the domain the endpoint is in, so that it succeeds */
		if (pm(600) && m_ep_ok(m, ep) && m->ep_dom[ep] >= 0)
			d->domain = m->doms[m->ep_dom[ep]].id;
		if (pm(10))
			r_reserved(d->reserved, sizeof(d->reserved));
		r->out_len = sizeof(*d) - 4;
		r->want = m_detach_req(m, d, errs);
	} else if (t < 650) {
		struct virtio_iommu_req_map *p = &r->map;

		p->head.type = VIRTIO_IOMMU_T_MAP;
		p->domain = r_domain(m);
		p->virt_start = r_iova();
		p->virt_end = p->virt_start + (1 + rnd_below(8)) * PG - 1;
		p->phys_start = (uint64_t)rnd_below(1 << 20) * PG;
		p->flags = rnd_below(4);
		if (pm(20))
			p->virt_start = r_misalign(p->virt_start);
		if (pm(20))
			p->virt_end = r_misalign(p->virt_end);
		if (pm(20))
			p->phys_start = r_misalign(p->phys_start);
		if (pm(10)) {
			uint64_t x = p->virt_start;

			p->virt_start = p->virt_end + 1;
			p->virt_end = x ? x - 1 : 0;
		}
		if (pm(20))	/* near the end of 64 or of 52 bits */
			p->phys_start = (pm(500) ? 0 : 1ULL << 52) -
					(uint64_t)(1 + rnd_below(4)) * PG;
		if (pm(5)) {
			p->virt_start = 0;
			p->virt_end = ~0ULL;
		}
		if (pm(20))
			p->flags |= 1u << (2 + rnd_below(30));
		r->out_len = sizeof(*p) - 4;
		r->want = m_map_req(m, p, errs);
	} else if (t < 900) {
		struct virtio_iommu_req_unmap *u = &r->unmap;

		u->head.type = VIRTIO_IOMMU_T_UNMAP;
		u->domain = r_domain(m);
		u->virt_start = r_iova();
		u->virt_end = u->virt_start + (1 + rnd_below(16)) * PG - 1;
		/* UNMAP has no alignment rule: bytes count */
		if (pm(30))
			u->virt_start = r_misalign(u->virt_start);
		if (pm(30))
			u->virt_end = r_misalign(u->virt_end);
		if (pm(10)) {
			u->virt_start = 0;
			u->virt_end = ~0ULL;
		}
		if (pm(10)) {
			uint64_t x = u->virt_start;

			u->virt_start = u->virt_end;
			u->virt_end = x - 1;
		}
		if (pm(10))
			r_reserved(u->reserved, sizeof(u->reserved));
		r->out_len = sizeof(*u) - 4;
		r->want = m_unmap_req(m, u, errs);
	} else if (t < 950) {
		struct virtio_iommu_req_probe *p = &r->probe;

		p->head.type = VIRTIO_IOMMU_T_PROBE;
		p->endpoint = r_endpoint();
		if (pm(20))
			r_reserved(p->reserved, sizeof(p->reserved));
		r->out_len = sizeof(*p);
		r->tail_off = PROBE_SIZE;	/* the tail, past the properties */
		r->in_len = PROBE_SIZE + 4;
		r->want = m_probe_req(m, p, errs);
		if (pm(50)) {
			/* Properties smaller than probe_size: INVAL at the end */
			r->in_len = 4 + rnd_below(PROBE_SIZE);
			r->tail_off = r->in_len - 4;
			r->want = S(INVAL);
		}
	} else {
		/* Framing: an unknown type, or buffers too short */
		static const uint8_t types[] = {
			VIRTIO_IOMMU_T_ATTACH, VIRTIO_IOMMU_T_DETACH,
			VIRTIO_IOMMU_T_MAP, VIRTIO_IOMMU_T_UNMAP,
		};
		static const uint8_t sizes[] = { 24, 24, 40, 32 };
		unsigned int k = rnd_below(4);

		memset(r->head.reserved, 0, sizeof(r->head.reserved));
		r->head.type = types[k];
		r->attach.domain = r_domain(m);
		r->attach.endpoint = r_endpoint();
		r->out_len = sizes[k] - 4;
		switch (rnd_below(3)) {
		case 0:		/* unknown type: the buffer stays unwritten */
			r->head.type = pm(100) ? 0 : 8 + rnd_below(248);
			r->want = 0;
			break;
		case 1:		/* request cut short */
			r->out_len = rnd_below(r->out_len);
			r->want = r->out_len < 4 ? 0 : S(INVAL);
			break;
		default:	/* no room for the tail */
			r->in_len = rnd_below(4);
			r->want = 0;
			break;
		}
	}
}

/*
 * Request @r in slot @s: its bytes at breq(@s), an answer buffer of 0xff
 * at bresp(@s), the chain 2s -> 2s + 1.  Returns the chain's head.
 */
static uint16_t slot_fill(void *mem, struct vq *vq, unsigned int s,
			  const struct rreq *r)
{
	memcpy(breq(mem, s), r->bytes, sizeof(r->bytes));
	memset(bresp(mem, s), 0xff, BRESP_SZ);
	vq->desc[2 * s] = (struct vring_desc){
		GPA_BASE + OFF_BREQ + s * BREQ_SZ, r->out_len,
		VRING_DESC_F_NEXT, 2 * s + 1 };
	vq->desc[2 * s + 1] = (struct vring_desc){
		GPA_BASE + OFF_BRESP + s * BRESP_SZ, r->in_len,
		VRING_DESC_F_WRITE, 0 };
	return 2 * s;
}

/* Queue @n requests in slots 0 to @n - 1, kick once. */
static int batch_push(void *mem, struct vq *vq, const struct rreq *r,
		      unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++)
		vq->avail->ring[(uint16_t)(vq->avail_idx + i) % vq->num] =
			slot_fill(mem, vq, i, &r[i]);
	return vq_kick_n(vq, n);
}

/* The properties PROBE must return for endpoint @ep */
static void want_props(uint32_t ep, uint8_t *props)
{
	struct virtio_iommu_probe_resv_mem *p = (void *)props;

	memset(props, 0, PROBE_SIZE);
	if (ep != 1)
		return;
	p->head.type = VIRTIO_IOMMU_PROBE_T_RESV_MEM;
	p->head.length = sizeof(*p) - sizeof(p->head);
	p->subtype = VIRTIO_IOMMU_RESV_MEM_T_MSI;
	p->start = msi_region.start;
	p->end = msi_region.end;
}

/*
 * Check the answer to r[i] in used element @e: "" if it is one the model
 * allows, else what is wrong.
 */
static const char *check_answer(void *mem, const struct rreq *r, unsigned int i,
				const struct vring_used_elem *e, int *status)
{
	const uint8_t *resp = bresp(mem, i);
	uint8_t props[PROBE_SIZE];
	uint32_t k;

	*status = -1;
	if (!r->want) {
		if (e->len)
			return "used length not 0";
		for (k = 0; k < r->in_len; k++)
			if (resp[k] != 0xff)
				return "written although used length 0";
		return "";
	}
	if (e->len != r->tail_off + 4)
		return "used length not the request's";
	*status = resp[r->tail_off];
	if (resp[r->tail_off + 1] || resp[r->tail_off + 2] ||
	    resp[r->tail_off + 3])
		return "tail reserved bytes not 0";
	if (*status > VIRTIO_IOMMU_S_NOMEM)
		return "not a status";
	if (!(r->want & (1u << *status)))
		return "a status the model does not allow";
	if (r->head.type == VIRTIO_IOMMU_T_PROBE && *status == 0) {
		want_props(r->probe.endpoint, props);
		if (memcmp(props, resp, PROBE_SIZE))
			return "PROBE properties differ";
	} else if (r->head.type == VIRTIO_IOMMU_T_PROBE) {
		/* A failed PROBE writes no property: zeroes up to the tail */
		for (k = 0; k < r->tail_off; k++)
			if (resp[k])
				return "property written by a failed PROBE";
	}
	return "";
}

static void log_req(struct __test_metadata *_metadata, const struct rreq *r)
{
	const uint32_t *w = (const void *)r->bytes;

	TH_LOG("request type %u out %u in %u, allowed statuses 0x%x",
	       r->head.type, r->out_len, r->in_len, r->want);
	TH_LOG("request words %08x %08x %08x %08x %08x %08x %08x %08x %08x",
	       w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8]);
}

/* TRANSLATE for @ep at @iova agrees with the model */
/* How far the device follows a MAP past the address it looks up */
#define XLATE_SPAN	(256ULL << 10)

/*
 * The size the device gives is the rest of the mapping, which the model
 * knows, or, where that goes further than XLATE_SPAN, at least that much
 * of it (to the end of the page holding the address, which the model
 * does not know). 0: bypass.
 */
static int size_agrees(uint64_t want, uint64_t got)
{
	if (!want || want <= XLATE_SPAN)
		return got == want;
	return got >= XLATE_SPAN && got <= want;
}

static int xlate_agrees(struct _test_data_viommu *self, struct model *m,
			uint32_t ep, uint64_t iova)
{
	struct vhost_iommu_translate want, got;
	int w = m_translate(m, ep, iova, &want);
	int g = xlate(self, ep, iova, &got);

	if (w != g)
		return 0;
	return w || (want.gpa == got.gpa && size_agrees(want.size, got.size) &&
		     want.perm == got.perm);
}

/* Every mapping's ends, middle and borders, and IOVAs nobody mapped */
static int model_agrees(struct _test_data_viommu *self, struct model *m,
			uint32_t *bad_ep, uint64_t *bad_iova)
{
	uint32_t ep;
	int i, j;

	for (ep = 0; ep <= NR_EPS + 1; ep++) {
		struct m_dom *d = m_ep_ok(m, ep) && m->ep_dom[ep] >= 0 ?
				  &m->doms[m->ep_dom[ep]] : NULL;
		uint64_t at[5] = { 0, 71 * PG, 1ULL << 47, ~0ULL, 73 * PG };

		for (i = -1; i < (d ? d->nr_maps : 0); i++) {
			if (i >= 0) {
				struct m_map *x = &d->maps[i];

				at[0] = x->start;
				at[1] = x->end;
				at[2] = x->start + (x->end - x->start) / 2;
				at[3] = x->end + 1;
				at[4] = x->start - 1;
			}
			for (j = 0; j < 5; j++) {
				if (!xlate_agrees(self, m, ep, at[j])) {
					*bad_ep = ep;
					*bad_iova = at[j];
					return 0;
				}
			}
		}
	}
	return 1;
}

static const char *const status_name[] = {
	"OK", "IOERR", "UNSUPP", "DEVERR", "INVAL", "RANGE", "NOENT", "FAULT",
	"NOMEM", "used-length-0",
};

/* The VMM's part between batches: hotplug, and now and then a reset. */
static void vmm_acts(struct __test_metadata *_metadata,
		     struct _test_data_viommu *self, struct model *m)
{
	uint32_t ep = 1 + rnd_below(NR_EPS), one = 1;
	int ret;

	if (pm(3)) {
		ret = ioctl(self->fd, VHOST_IOMMU_DEL_ENDPOINT, &ep);
		if (m->ep_present[ep]) {
			ASSERT_EQ(0, ret);
			m_detach(m, ep);
			m->ep_present[ep] = 0;
		} else {
			ASSERT_EQ(-1, ret);
			ASSERT_EQ(ENOENT, errno);
		}
	}
	if (pm(3)) {
		for (ep = 1; ep <= NR_EPS; ep++) {
			if (m->ep_present[ep])
				continue;
			ASSERT_EQ(0, add_ep(self->fd, ep,
					    ep == 1 ? &msi_region : NULL,
					    ep == 1));
			m->ep_present[ep] = 1;
			m->ep_dom[ep] = -1;
		}
	}
	if (pm(1)) {
		ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
		ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
		m_reset(m);
	}
}

/*
 * @total random requests from @seed, in batches of 1 to QSZ / 2, every answer
 * and the device's state checked against the model; counts the answers in
 * @seen (statuses, then used length 0).
 */
static void random_run(struct __test_metadata *_metadata,
		       struct _test_data_viommu *self, unsigned long total,
		       uint64_t seed, unsigned long seen[10])
{
	unsigned long done = 0, batches = 0;
	struct rreq r[QSZ / 2];
	struct vq *vq = &self->rq;
	uint64_t bad_iova;
	struct model m;
	uint32_t bad_ep;
	unsigned int i, n;
	int k;

	rnd_state = seed ? seed : 1;
	m_init(&m);
	while (done < total) {
		vmm_acts(_metadata, self, &m);
		r_burst = pm(900) ? 0 : 1 + rnd_below(2);
		n = 1 + rnd_below(QSZ / 2);
		if (n > total - done)
			n = total - done;
		for (i = 0; i < n; i++)
			r_make(&m, &r[i]);
		ASSERT_EQ(0, batch_push(self->mem, vq, r, n));
		if (vq_wait_used(vq, n)) {
			TH_LOG("no answer to a batch of %u after %lu requests",
			       n, done);
			ASSERT_TRUE(0);
		}
		for (i = 0; i < n; i++) {
			struct vring_used_elem e =
				vq->used->ring[vq->used_idx++ % vq->num];
			const char *why = "answers out of order";
			int status = -1;

			if (e.id == 2 * i)
				why = check_answer(self->mem, &r[i], i, &e,
						   &status);
			if (*why) {
				TH_LOG("request %lu: %s (used id %u len %u, status %d)",
				       done + i, why, e.id, e.len, status);
				log_req(_metadata, &r[i]);
				ASSERT_TRUE(0);
			}
			seen[status < 0 ? 9 : status]++;
		}
		done += n;
		batches++;
		/* Two random points, and everything now and then */
		for (k = 0; k < 2; k++) {
			uint32_t ep = rnd_below(NR_EPS + 2);
			uint64_t iova = r_iova() + rnd_below(PG);

			if (!xlate_agrees(self, &m, ep, iova)) {
				TH_LOG("after %lu: EP %u IOVA 0x%llx: TRANSLATE is not the model's",
				       done, ep, (unsigned long long)iova);
				ASSERT_TRUE(0);
			}
		}
		if (!(batches % 1024) || done == total) {
			if (!model_agrees(self, &m, &bad_ep, &bad_iova)) {
				TH_LOG("after %lu: EP %u IOVA 0x%llx: TRANSLATE is not the model's",
				       done, bad_ep,
				       (unsigned long long)bad_iova);
				ASSERT_TRUE(0);
			}
		}
	}
}

#endif /* __SELFTEST_VHOST_IOMMU_MODEL_H */
