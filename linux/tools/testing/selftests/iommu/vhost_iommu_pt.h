/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vhost-iommu selftests: the guest's shared page tables (ATTACH_TABLE).
 *
 * The tests write their tables with the small writer below, not with
 * generic_pt, which the device walks them with: the formats are read twice,
 * independently, from the manuals.
 *  VTD_SL (VT-d specification, "Second-Stage Paging Entries"): bit 0 read,
 *    bit 1 write, bit 7 PS (a 2M or 1G leaf), address in bits 51:12.
 *  ARM_LPAE, 4K granule, stage 1 (Arm ARM, VMSAv8-64 descriptors): bits
 *    1:0 type (3 table or page, 1 block), bit 7 AP[2] read-only, bit 10 AF,
 *    address in bits 47:12.
 * Both have 9 index bits a level above the 4K page; table pages come from
 * a pool in guest memory.
 */
#ifndef __SELFTEST_VHOST_IOMMU_PT_H
#define __SELFTEST_VHOST_IOMMU_PT_H

#include "vhost_iommu_utils.h"

#define OFF_PT		0x200000UL	/* table pages, to OFF_PT_END */
#define OFF_PT_END	0x3c0000UL
#define OFF_PT_DATA	0x3c0000UL	/* pages the tables map, 64 of them */

enum { PT_VTD, PT_ARM };

#define PT_R		1
#define PT_W		2
#define PT_ADDR		0x000ffffffffff000ULL

struct pt {
	void *mem;
	int fmt;
	unsigned int levels;
	unsigned int ias;
	uint64_t root;		/* guest-physical */
	uint64_t next;		/* next free pool page */
	unsigned int nr_tables;
	uint64_t free[16];	/* pages given back, reused first */
	unsigned int nr_free;
};

static const char *pt_name(int fmt)
{
	return fmt == PT_VTD ? "VTD_SL" : "ARM_LPAE 4K";
}

static unsigned int pt_shift(unsigned int lvl)
{
	return 12 + 9 * lvl;
}

static uint64_t *pt_slot(struct pt *p, uint64_t table, uint64_t iova,
			 unsigned int lvl)
{
	uint64_t *t = gpa_ptr(p->mem, table);

	return &t[(iova >> pt_shift(lvl)) & 511];
}

static uint64_t pt_new_table(struct pt *p)
{
	uint64_t gpa = p->next;

	if (p->nr_free) {
		gpa = p->free[--p->nr_free];
	} else {
		if (gpa + PG > GPA_BASE + OFF_PT_END)
			return 0;
		p->next += PG;
	}
	p->nr_tables++;
	memset(gpa_ptr(p->mem, gpa), 0, PG);
	return gpa;
}

/*
 * Give a table page back, once the INVALIDATE that covers its unlinking
 * completed (rst: the driver MUST wait for it before reusing the page).
 * A table still holding tables leaks them: the tests unlink leaf tables.
 */
static void pt_free_table(struct pt *p, uint64_t gpa)
{
	if (p->nr_free < ARRAY_SIZE(p->free))
		p->free[p->nr_free++] = gpa;
	p->nr_tables--;
}

/* A table of @levels levels (3 to 4: ias 39 or 48), empty */
static void pt_init(struct pt *p, void *mem, int fmt, unsigned int levels)
{
	memset(p, 0, sizeof(*p));
	p->mem = mem;
	p->fmt = fmt;
	p->levels = levels;
	p->ias = pt_shift(levels - 1) + 9;
	p->next = GPA_BASE + OFF_PT;
	p->root = pt_new_table(p);
}

static int pt_present(struct pt *p, uint64_t e)
{
	return p->fmt == PT_VTD ? !!(e & 3) : (int)(e & 1);
}

/* A present entry above level 0 that is a leaf */
static int pt_is_leaf(struct pt *p, uint64_t e, unsigned int lvl)
{
	if (!lvl)
		return 1;
	return p->fmt == PT_VTD ? !!(e & (1 << 7)) : (e & 3) == 1;
}

static uint64_t pt_mk_table(struct pt *p, uint64_t gpa)
{
	/* VT-d: read and write allowed below; ARM: type table */
	return gpa | 3;
}

static uint64_t pt_mk_leaf(struct pt *p, uint64_t pa, unsigned int lvl,
			   int prot)
{
	uint64_t e = pa;

	if (p->fmt == PT_VTD) {
		if (prot & PT_R)
			e |= 1;
		if (prot & PT_W)
			e |= 2;
		if (lvl)
			e |= 1 << 7;
		return e;
	}
	/* ARM stage 1 cannot say write-only or no access: read is implied */
	e |= (lvl ? 1 : 3) | (1 << 10);
	if (!(prot & PT_W))
		e |= 1 << 7;
	return e;
}

static void pt_store(uint64_t *e, uint64_t v)
{
	__atomic_store_n(e, v, __ATOMIC_RELEASE);
}

/*
 * The table at @lvl that holds @iova's entry, with the tables on the way
 * made (published after they are zeroed, as the rst asks); 0 when the pool
 * ran out or a leaf is in the way.
 */
static uint64_t pt_table_at(struct pt *p, uint64_t iova, unsigned int lvl)
{
	uint64_t table = p->root;
	unsigned int l;

	for (l = p->levels - 1; l > lvl; l--) {
		uint64_t *e = pt_slot(p, table, iova, l);

		if (!pt_present(p, *e)) {
			uint64_t n = pt_new_table(p);

			if (!n)
				return 0;
			pt_store(e, pt_mk_table(p, n));
		} else if (pt_is_leaf(p, *e, l)) {
			return 0;
		}
		table = *e & PT_ADDR;
	}
	return table;
}

/* Map one page of level @lvl (4K, 2M, 1G) */
static int pt_map(struct pt *p, uint64_t iova, uint64_t pa, unsigned int lvl,
		  int prot)
{
	uint64_t table = pt_table_at(p, iova, lvl);

	if (!table)
		return -1;
	pt_store(pt_slot(p, table, iova, lvl), pt_mk_leaf(p, pa, lvl, prot));
	return 0;
}

/* The entry at @lvl on @iova's path, NULL if the path stops above it */
static uint64_t *pt_entry(struct pt *p, uint64_t iova, unsigned int lvl)
{
	uint64_t table = p->root;
	unsigned int l;

	for (l = p->levels - 1; l > lvl; l--) {
		uint64_t e = *pt_slot(p, table, iova, l);

		if (!pt_present(p, e) || pt_is_leaf(p, e, l))
			return NULL;
		table = e & PT_ADDR;
	}
	return pt_slot(p, table, iova, lvl);
}

/* Clear the entry at @lvl on @iova's path (a leaf, or a whole table) */
static void pt_clear(struct pt *p, uint64_t iova, unsigned int lvl)
{
	uint64_t *e = pt_entry(p, iova, lvl);

	if (e)
		pt_store(e, 0);
}

/* Requests of page-table sharing */
static int attach_table_req(struct _test_data_viommu *self,
			    struct virtio_iommu_req_attach_table *r)
{
	r->head.type = VIRTIO_IOMMU_T_ATTACH_TABLE;
	return req_status(self->mem, &self->rq, r, sizeof(*r));
}

static void pt_req(struct pt *p, struct virtio_iommu_req_attach_table *r,
		   uint32_t dom, uint32_t ep)
{
	memset(r, 0, sizeof(*r));
	r->domain = dom;
	r->endpoint = ep;
	r->format = p->fmt == PT_VTD ? VIRTIO_IOMMU_PGTF_VTD_SL :
				       VIRTIO_IOMMU_PGTF_ARM_LPAE;
	r->root = p->root;
	r->ias = p->ias;
	r->granule = 12;
}

static int pt_attach(struct _test_data_viommu *self, struct pt *p,
		     uint32_t dom, uint32_t ep)
{
	struct virtio_iommu_req_attach_table r;

	pt_req(p, &r, dom, ep);
	return attach_table_req(self, &r);
}

static int invalidate(struct _test_data_viommu *self, uint32_t dom,
		      uint16_t scope, uint16_t flags, uint64_t start,
		      uint64_t end)
{
	struct virtio_iommu_req_invalidate r = {
		.head.type = VIRTIO_IOMMU_T_INVALIDATE, .scope = scope,
		.flags = flags, .domain = dom, .virt_start = start,
		.virt_end = end,
	};

	return req_status(self->mem, &self->rq, &r, sizeof(r));
}

#define INV_RANGE	VIRTIO_IOMMU_INVAL_S_RANGE
#define INV_DOMAIN	VIRTIO_IOMMU_INVAL_S_DOMAIN
#define INV_LEAF	VIRTIO_IOMMU_INVAL_F_LEAF

/*
 * Restart the fixture's device with page-table sharing negotiated and
 * @formats (VHOST_IOMMU_TABLE_FORMATS bits, 0: all) offered.
 */
static void table_up(struct __test_metadata *_metadata,
		     struct _test_data_viommu *self, uint32_t formats)
{
	uint32_t one = 1;

	/* Posted MAP's property would come before the formats looked for */
	renegotiate(_metadata, self, 1ULL << VIRTIO_IOMMU_F_ATTACH_TABLE,
		    1ULL << VIRTIO_IOMMU_F_POSTED_MAP);
	self->cfg.table_formats = formats;
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &self->cfg));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
}

/* TRANSLATE @iova for @ep: -errno, or 0 with the guest-physical address */
static int pt_xlate(struct _test_data_viommu *self, uint32_t ep,
		    uint64_t iova, uint32_t flags, uint64_t *gpa)
{
	struct vhost_iommu_translate t = {
		.endpoint = ep, .iova = iova, .flags = flags,
	};

	if (ioctl(self->fd, VHOST_IOMMU_TRANSLATE, &t))
		return -errno;
	*gpa = t.gpa;
	return 0;
}

#endif /* __SELFTEST_VHOST_IOMMU_PT_H */
