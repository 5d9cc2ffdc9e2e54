// SPDX-License-Identifier: GPL-2.0-only
/*
 * vhost-iommu selftest: page-table sharing.  Every device rule of the
 * "Page-table sharing (extension)" section of virtio-iommu.rst has its
 * case (vhost-iommu.rst lists them); the device walks tables written by
 * vhost_iommu_pt.h's writer in both formats; hostile tables (outside guest
 * memory, pointing back at themselves, reserved bits set) give faults and
 * nothing else; a seeded random run of maps, unmaps and INVALIDATEs is
 * checked against a model; and a guest rewrites its table while the device
 * walks it.
 */
#include <linux/userfaultfd.h>

#include "vhost_iommu_pt.h"

#define TDOM		20
#define TEP		2
#define IOVA		0x40000000ULL
#define DATA(i)		(GPA_BASE + OFF_PT_DATA + (i) * PG)

static const int both[] = { PT_VTD, PT_ARM };

/* PAGE_TABLE_FMT: the feature and the property */
TEST_F(viommu, table_feature_needs_probe)
{
	uint64_t f;

	ASSERT_EQ(0, ioctl(self->fd, VHOST_GET_FEATURES, &f));
	ASSERT_TRUE(f & (1ULL << VIRTIO_IOMMU_F_ATTACH_TABLE));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
	/* The formats are PROBE properties: the feature needs PROBE */
	f &= ~(1ULL << VIRTIO_IOMMU_F_PROBE);
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_SET_FEATURES, &f));
	EXPECT_EQ(EINVAL, errno);
}

static struct answer probe_ep(struct _test_data_viommu *self, uint32_t ep)
{
	struct virtio_iommu_req_probe r = {
		.head.type = VIRTIO_IOMMU_T_PROBE, .endpoint = ep,
	};

	return do_req(self->mem, &self->rq, &r, sizeof(r), PROBE_SIZE + 4,
		      PROBE_SIZE);
}

/* Check the PAGE_TABLE_FMT properties at @p: @mask's formats, in order */
static int check_formats(struct __test_metadata *_metadata, uint8_t *p,
			 uint32_t mask)
{
	static const struct virtio_iommu_probe_table_format want[] = {
		{ { VIRTIO_IOMMU_PROBE_T_PAGE_TABLE_FMT, 12 },
		  VIRTIO_IOMMU_PGTF_ARM_LPAE, 48, 48,
		  (1 << 12) | (1 << 14) | (1 << 16), 4, 16, 0 },
		{ { VIRTIO_IOMMU_PROBE_T_PAGE_TABLE_FMT, 12 },
		  VIRTIO_IOMMU_PGTF_VTD_SL, 57, 52, 1 << 12, 5, 0, 0 },
		{ { VIRTIO_IOMMU_PROBE_T_PAGE_TABLE_FMT, 12 },
		  VIRTIO_IOMMU_PGTF_AMD_V1, 64, 52, 1 << 12, 6, 0, 0 },
	};
	unsigned int i, n = 0;

	for (i = 0; i < ARRAY_SIZE(want); i++) {
		if (!(mask & (1 << want[i].format)))
			continue;
		EXPECT_EQ(0, memcmp(p, &want[i], sizeof(want[i])));
		p += sizeof(want[i]);
		n++;
	}
	/* Then NONE */
	EXPECT_EQ(0, p[0] | p[1]);
	return n;
}

TEST_F(viommu, table_probe_lists_formats)
{
	uint8_t *props = gpa_ptr(self->mem, GPA_BASE + OFF_RESP);
	struct vhost_iommu_config c = { .argsz = sizeof(c) };
	struct answer a;

	/* Not negotiated: virtio 1.3's properties only */
	a = probe_ep(self, 2);
	EXPECT_EQ(OK, a.status);
	EXPECT_EQ(0, props[0] | props[1]);

	table_up(_metadata, self, 0);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_GET_CONFIG, &c));
	EXPECT_EQ(VHOST_IOMMU_TABLE_FORMATS, c.table_formats);
	a = probe_ep(self, 2);
	EXPECT_EQ(OK, a.status);
	EXPECT_EQ(3, check_formats(_metadata, props, VHOST_IOMMU_TABLE_FORMATS));
	/* After the reserved regions */
	a = probe_ep(self, 1);
	EXPECT_EQ(OK, a.status);
	EXPECT_EQ(VIRTIO_IOMMU_PROBE_T_RESV_MEM, props[0]);
	EXPECT_EQ(3, check_formats(_metadata,
				   props + sizeof(struct virtio_iommu_probe_resv_mem),
				   VHOST_IOMMU_TABLE_FORMATS));

	/* The VMM offers one */
	table_up(_metadata, self, 1 << VIRTIO_IOMMU_PGTF_VTD_SL);
	a = probe_ep(self, 2);
	EXPECT_EQ(OK, a.status);
	EXPECT_EQ(1, check_formats(_metadata, props,
				   1 << VIRTIO_IOMMU_PGTF_VTD_SL));
}

TEST_F(viommu, table_config_errors)
{
	struct vhost_iommu_config c = self->cfg;
	uint64_t f;

	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
	/* Formats the device does not walk */
	c.table_formats = 1 << 2;
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(EINVAL, errno);
	c.table_formats = 0;
	c.reserved[0] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(EINVAL, errno);
	/* Room for endpoint 1's MSI region, not for it and three formats */
	c = self->cfg;
	c.probe_size = sizeof(struct virtio_iommu_probe_resv_mem) + 32;
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_GET_FEATURES, &f));
	f &= ~(1ULL << VIRTIO_IOMMU_F_POSTED_MAP);	/* tables only */
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_SET_FEATURES, &f));
	EXPECT_EQ(ENOSPC, errno);
	/* Two formats fit */
	c.table_formats = (1 << VIRTIO_IOMMU_PGTF_VTD_SL) |
			  (1 << VIRTIO_IOMMU_PGTF_AMD_V1);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(0, ioctl(self->fd, VHOST_SET_FEATURES, &f));
	/* And the config may not grow them past probe_size now */
	c.table_formats = 0;
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(ENOSPC, errno);
}

/*
 * Not negotiated, ATTACH_TABLE and INVALIDATE are types the device does not
 * know: the buffer left unwritten, used length 0 (virtio 1.3: SHOULD), and
 * nothing attached.
 */
TEST_F(viommu, table_not_negotiated_unknown)
{
	struct virtio_iommu_req_attach_table r;
	struct pt p;

	pt_init(&p, self->mem, PT_VTD, 4);
	EXPECT_EQ(-1, pt_attach(self, &p, TDOM, TEP));
	pt_req(&p, &r, TDOM, TEP);
	r.head.type = VIRTIO_IOMMU_T_ATTACH_TABLE;
	EXPECT_EQ(0, do_req(self->mem, &self->rq, &r, sizeof(r) - 4, 4, 0).len);
	EXPECT_EQ(-1, invalidate(self, TDOM, INV_DOMAIN, 0, 0, 0));
	EXPECT_FALSE(mapped(self, TEP, 0));
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
}

/* INVAL for reserved fields, and asid or mair outside ARM_LPAE */
TEST_F(viommu, table_attach_reserved_inval)
{
	struct virtio_iommu_req_attach_table r;
	struct pt p;
	unsigned int i;

	table_up(_metadata, self, 0);
	pt_init(&p, self->mem, PT_VTD, 4);
	for (i = 0; i < sizeof(r.reserved0) + sizeof(r.reserved1) +
			sizeof(r.reserved2); i++) {
		pt_req(&p, &r, TDOM, TEP);
		if (i < sizeof(r.reserved0))
			r.reserved0[i] = 1;
		else if (i < sizeof(r.reserved0) + sizeof(r.reserved1))
			r.reserved1[i - sizeof(r.reserved0)] = 0x80;
		else
			r.reserved2[i - sizeof(r.reserved0) -
				    sizeof(r.reserved1)] = 2;
		EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, attach_table_req(self, &r));
	}
	pt_req(&p, &r, TDOM, TEP);
	r.asid = 1;
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, attach_table_req(self, &r));
	pt_req(&p, &r, TDOM, TEP);
	r.mair = 0xff;
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, attach_table_req(self, &r));
	/* Nothing was attached */
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT,
		  invalidate(self, TDOM, INV_DOMAIN, 0, 0, 0));
	/* ARM_LPAE takes both */
	pt_init(&p, self->mem, PT_ARM, 4);
	pt_req(&p, &r, TDOM, TEP);
	r.asid = 5;
	r.mair = 0xff04;
	EXPECT_EQ(OK, attach_table_req(self, &r));
}

/* NOENT for an unknown endpoint, RANGE for a domain outside domain_range */
TEST_F(viommu, table_attach_noent_range)
{
	struct pt p;

	table_up(_metadata, self, 0);
	pt_init(&p, self->mem, PT_VTD, 4);
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT, pt_attach(self, &p, TDOM, 99));
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE, pt_attach(self, &p, 0, TEP));
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE, pt_attach(self, &p, 1001, TEP));
}

/* UNSUPP for a format the endpoint's PROBE does not offer */
TEST_F(viommu, table_attach_format_unsupp)
{
	static const uint16_t bad[] = { 0, 2, 5, 0xffff };
	struct virtio_iommu_req_attach_table r;
	struct pt p;
	unsigned int i;

	table_up(_metadata, self, 1 << VIRTIO_IOMMU_PGTF_VTD_SL);
	pt_init(&p, self->mem, PT_ARM, 4);
	EXPECT_EQ(VIRTIO_IOMMU_S_UNSUPP, pt_attach(self, &p, TDOM, TEP));
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		pt_req(&p, &r, TDOM, TEP);
		r.format = bad[i];
		EXPECT_EQ(VIRTIO_IOMMU_S_UNSUPP, attach_table_req(self, &r));
	}
	pt_init(&p, self->mem, PT_VTD, 4);
	EXPECT_EQ(OK, pt_attach(self, &p, TDOM, TEP));
}

/* RANGE: ias, granule, a misaligned root, a root above oas */
TEST_F(viommu, table_attach_range)
{
	struct virtio_iommu_req_attach_table r;
	struct pt p;
	unsigned int i;
	struct {
		int fmt;
		uint8_t ias, granule;
		uint64_t root_add;
		uint64_t root;
	} bad[] = {
		{ PT_VTD, 58, 12 },		/* ias above the property's */
		{ PT_VTD, 40, 12 },		/* not 39, 48 or 57 */
		{ PT_VTD, 48, 14 },		/* granule not offered */
		{ PT_VTD, 48, 12, 0x800 },	/* misaligned */
		{ PT_VTD, 48, 12, 0, 1ULL << 52 },	/* above oas */
		{ PT_ARM, 49, 12 },
		{ PT_ARM, 12, 12 },		/* no level at all */
		{ PT_ARM, 48, 13 },
		{ PT_ARM, 48, 40 },
		{ PT_ARM, 48, 12, 8 },
		{ PT_ARM, 48, 16, 0x1000 },	/* 64K granule: 64K aligned */
		{ PT_ARM, 48, 12, 0, 1ULL << 48 },
	};

	table_up(_metadata, self, 0);
	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		pt_init(&p, self->mem, bad[i].fmt, 4);
		pt_req(&p, &r, TDOM, TEP);
		r.ias = bad[i].ias;
		r.granule = bad[i].granule;
		r.root = bad[i].root ?: p.root + bad[i].root_add;
		EXPECT_EQ(VIRTIO_IOMMU_S_RANGE, attach_table_req(self, &r))
			TH_LOG("case %u", i);
	}
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT,
		  invalidate(self, TDOM, INV_DOMAIN, 0, 0, 0));
	/* An ARM top table smaller than the granule: still granule-aligned */
	pt_init(&p, self->mem, PT_ARM, 4);
	pt_req(&p, &r, TDOM, TEP);
	r.ias = 40;
	EXPECT_EQ(OK, attach_table_req(self, &r));
	r.domain = TDOM + 1;
	r.root += 0x100;
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE, attach_table_req(self, &r));
}

/*
 * A domain created by ATTACH (MAPs or bypass) stays one: INVAL, and
 * nothing changes.
 */
TEST_F(viommu, table_attach_map_domain_inval)
{
	struct vhost_iommu_translate t;
	struct pt p;

	table_up(_metadata, self, 0);
	pt_init(&p, self->mem, PT_VTD, 4);
	ASSERT_EQ(OK, attach(self, TDOM, 3, 0));
	ASSERT_EQ(OK, map(self, TDOM, IOVA, IOVA + PG - 1, DATA(0), RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, pt_attach(self, &p, TDOM, TEP));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, pt_attach(self, &p, TDOM, 3));
	EXPECT_FALSE(mapped(self, TEP, IOVA));
	ASSERT_EQ(0, xlate(self, 3, IOVA, &t));
	EXPECT_EQ(DATA(0), t.gpa);
	/* Bypass */
	ASSERT_EQ(OK, attach(self, TDOM + 1, 4, VIRTIO_IOMMU_ATTACH_F_BYPASS));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, pt_attach(self, &p, TDOM + 1, TEP));
	/* And the other way: ATTACH, MAP and UNMAP refuse a table domain */
	ASSERT_EQ(OK, pt_attach(self, &p, TDOM + 2, TEP));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, attach(self, TDOM + 2, 5, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  map(self, TDOM + 2, IOVA, IOVA + PG - 1, DATA(0), RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  unmap(self, TDOM + 2, IOVA, IOVA + PG - 1));
}

/* A table domain takes more endpoints only with the very same table */
TEST_F(viommu, table_attach_same_table_only)
{
	struct virtio_iommu_req_attach_table r, ok;
	struct pt p;
	unsigned int i;
	uint64_t gpa = 0;

	table_up(_metadata, self, 0);
	pt_init(&p, self->mem, PT_ARM, 4);
	pt_req(&p, &ok, TDOM, TEP);
	ok.asid = 3;
	ok.mair = 0x44ff;
	ASSERT_EQ(OK, attach_table_req(self, &ok));
	ASSERT_EQ(0, pt_map(&p, IOVA, DATA(1), 0, PT_R | PT_W));
	for (i = 0; i < 6; i++) {
		r = ok;
		r.endpoint = 3;
		switch (i) {
		case 0:
			r.root = ok.root + PG;	/* another table */
			break;
		case 1:
			r.ias = 39;
			break;
		case 2:
			r.granule = 16;
			r.root = GPA_BASE + OFF_PT + 0x10000;
			break;
		case 3:
			r.asid = 4;
			break;
		case 4:
			r.mair = 0x44fe;
			break;
		default:
			r.format = VIRTIO_IOMMU_PGTF_VTD_SL;
			r.asid = 0;
			r.mair = 0;
			break;
		}
		EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, attach_table_req(self, &r))
			TH_LOG("case %u", i);
		EXPECT_FALSE(mapped(self, 3, IOVA));
	}
	r = ok;
	r.endpoint = 3;
	EXPECT_EQ(OK, attach_table_req(self, &r));
	ASSERT_EQ(0, pt_xlate(self, 3, IOVA, TF_W, &gpa));
	EXPECT_EQ(DATA(1), gpa);
	/* Again for an endpoint already there: OK, nothing changes */
	EXPECT_EQ(OK, attach_table_req(self, &r));
	ASSERT_EQ(0, pt_xlate(self, TEP, IOVA + 8, 0, &gpa));
	EXPECT_EQ(DATA(1) + 8, gpa);
}

/* ATTACH_TABLE detaches the endpoint from its domain, as ATTACH does */
TEST_F(viommu, table_attach_moves_endpoint)
{
	struct pt p;
	uint64_t gpa = 0;

	table_up(_metadata, self, 0);
	ASSERT_EQ(OK, attach(self, TDOM, TEP, 0));
	ASSERT_EQ(OK, map(self, TDOM, IOVA, IOVA + PG - 1, DATA(0), RW));
	pt_init(&p, self->mem, PT_VTD, 3);
	ASSERT_EQ(0, pt_map(&p, IOVA + PG, DATA(2), 0, PT_R));
	ASSERT_EQ(OK, pt_attach(self, &p, TDOM + 1, TEP));
	/* The MAP domain lost its last endpoint: it is gone */
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT,
		  map(self, TDOM, IOVA, IOVA + PG - 1, DATA(0), RW));
	EXPECT_EQ(-ENOENT, pt_xlate(self, TEP, IOVA, 0, &gpa));
	ASSERT_EQ(0, pt_xlate(self, TEP, IOVA + PG, TF_R, &gpa));
	EXPECT_EQ(DATA(2), gpa);
	/* And back to a MAP domain */
	ASSERT_EQ(OK, attach(self, TDOM, TEP, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT,
		  invalidate(self, TDOM + 1, INV_DOMAIN, 0, 0, 0));
}

/* The walk: every leaf size, permissions, both formats, 3 and 4 levels */
TEST_F(viommu, table_translates)
{
	struct vhost_iommu_translate t;
	unsigned int f, levels;
	struct pt p;
	uint64_t gpa = 0;

	table_up(_metadata, self, 0);
	for (f = 0; f < ARRAY_SIZE(both); f++) {
		for (levels = 3; levels <= 4; levels++) {
			uint32_t dom = TDOM + f * 2 + levels;

			pt_init(&p, self->mem, both[f], levels);
			ASSERT_EQ(0, pt_map(&p, IOVA, DATA(3), 0, PT_R | PT_W));
			ASSERT_EQ(0, pt_map(&p, IOVA + PG, DATA(4), 0, PT_R));
			/* 2M and 1G leaves (the output is not ours to check) */
			ASSERT_EQ(0, pt_map(&p, 0x200000, 0x40000000, 1,
					    PT_R | PT_W));
			ASSERT_EQ(0, pt_map(&p, 0x80000000, 0xc0000000, 2,
					    PT_R));
			ASSERT_EQ(OK, pt_attach(self, &p, dom, TEP));
			ASSERT_EQ(0, xlate(self, TEP, IOVA + 0x123, &t));
			EXPECT_EQ(DATA(3) + 0x123, t.gpa);
			EXPECT_EQ(PG - 0x123, t.size);
			EXPECT_EQ(VHOST_IOMMU_PERM_READ | VHOST_IOMMU_PERM_WRITE,
				  t.perm);
			ASSERT_EQ(0, xlate(self, TEP, IOVA + PG, &t));
			EXPECT_EQ(DATA(4), t.gpa);
			EXPECT_EQ(VHOST_IOMMU_PERM_READ, t.perm);
			EXPECT_EQ(-EACCES, pt_xlate(self, TEP, IOVA + PG, TF_W,
						    &gpa));
			ASSERT_EQ(0, xlate(self, TEP, 0x200000 + 0x12345, &t));
			EXPECT_EQ(0x40012345, t.gpa);
			EXPECT_EQ(0x200000 - 0x12345, t.size);
			ASSERT_EQ(0, xlate(self, TEP, 0x80000000 + 0x1234567,
					   &t));
			EXPECT_EQ(0xc1234567, t.gpa);
			EXPECT_EQ(0x40000000 - 0x1234567, t.size);
			EXPECT_EQ(VHOST_IOMMU_PERM_READ, t.perm);
			/* Holes at each level */
			EXPECT_EQ(-ENOENT, pt_xlate(self, TEP, IOVA + 2 * PG,
						    0, &gpa));
			EXPECT_EQ(-ENOENT, pt_xlate(self, TEP, 0x400000, 0,
						    &gpa));
			EXPECT_EQ(-ENOENT, pt_xlate(self, TEP, 0x100000000ULL,
						    0, &gpa));
			/* Beyond ias */
			EXPECT_EQ(-ENOENT, pt_xlate(self, TEP, 1ULL << p.ias,
						    0, &gpa));
			EXPECT_TRUE(evt_none(&self->eq));
		}
	}
}

struct xlate_call {
	struct _test_data_viommu *self;
	uint64_t iova;
	struct vhost_iommu_translate t;
	int ret;
};

static void *xlate_call_thread(void *arg)
{
	struct xlate_call *c = arg;

	c->ret = xlate(c->self, TEP, c->iova, &c->t);
	return NULL;
}

/*
 * A page of the guest's table that the VMM's mm must fault in (here one
 * userfaultfd serves, as a VMM's postcopy migration does) holds up the
 * translation that walks it, not the device: a request is answered while
 * the fault waits, and the translation completes once the page is in.
 */
TEST_F_TIMEOUT(viommu, table_page_fault_blocks_no_request, 120)
{
	struct uffdio_api api = { .api = UFFD_API };
	struct uffdio_register reg = { .mode = UFFDIO_REGISTER_MODE_MISSING };
	struct uffdio_copy copy = { .len = PG };
	struct xlate_call c = { .self = self, .iova = IOVA + 0x123 };
	struct pollfd pfd = { .events = POLLIN };
	struct uffd_msg msg;
	uint8_t *saved, *leaf;
	pthread_t th;
	struct pt p;
	int uffd;

	table_up(_metadata, self, 0);
	pt_init(&p, self->mem, PT_VTD, 4);
	ASSERT_EQ(0, pt_map(&p, IOVA, DATA(3), 0, PT_R | PT_W));
	ASSERT_EQ(OK, pt_attach(self, &p, TDOM, TEP));
	leaf = gpa_ptr(self->mem, pt_table_at(&p, IOVA, 0));
	saved = mmap(NULL, PG, PROT_READ | PROT_WRITE,
		     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, saved);
	memcpy(saved, leaf, PG);

	uffd = syscall(__NR_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		SKIP(return, "no userfaultfd (CONFIG_USERFAULTFD)");
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_API, &api));
	/* The leaf table's page leaves memory; userfaultfd brings it back */
	ASSERT_EQ(0, madvise(leaf, PG, MADV_DONTNEED));
	reg.range.start = (uintptr_t)leaf;
	reg.range.len = PG;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_REGISTER, &reg));
	ASSERT_EQ(0, pthread_create(&th, NULL, xlate_call_thread, &c));

	/* The walk reached the page: its fault waits for us */
	pfd.fd = uffd;
	ASSERT_EQ(1, poll(&pfd, 1, 10000));
	ASSERT_EQ(sizeof(msg), read(uffd, &msg, sizeof(msg)));
	ASSERT_EQ(UFFD_EVENT_PAGEFAULT, msg.event);
	EXPECT_EQ((uintptr_t)leaf, msg.arg.pagefault.address & ~(PG - 1));
	/* Meanwhile the device answers a request (2 s at most) */
	EXPECT_EQ(OK, attach(self, 1, 1, 0))
		TH_LOG("no answer while a table page was faulted in");

	copy.dst = (uintptr_t)leaf;
	copy.src = (uintptr_t)saved;
	ASSERT_EQ(0, ioctl(uffd, UFFDIO_COPY, &copy));
	pthread_join(th, NULL);
	EXPECT_EQ(0, c.ret);
	EXPECT_EQ(DATA(3) + 0x123, c.t.gpa);
	close(uffd);
	munmap(saved, PG);
}

/*
 * A guest leaf over the endpoint's reserved region: an answer from below
 * the region stops at its start (vhost-net's IOTLB would otherwise reach
 * into the MSI window with it), one from above it starts past its end.
 */
TEST_F(viommu, table_leaf_over_reserved_clipped)
{
	const uint64_t leaf = 0xc0000000, out = 0x40000000;
	struct vhost_iommu_translate t;
	unsigned int f;
	struct pt p;

	table_up(_metadata, self, 0);
	for (f = 0; f < ARRAY_SIZE(both); f++) {
		pt_init(&p, self->mem, both[f], 4);
		/* [3 GiB, 4 GiB) holds endpoint 1's MSI window */
		ASSERT_EQ(0, pt_map(&p, leaf, out, 2, PT_R | PT_W));
		ASSERT_EQ(OK, pt_attach(self, &p, TDOM + f, 1));
		ASSERT_EQ(0, xlate(self, 1, leaf, &t));
		EXPECT_EQ(out, t.gpa);
		EXPECT_EQ(msi_region.start - leaf, t.size);
		ASSERT_EQ(0, xlate(self, 1, msi_region.start - 0x10, &t));
		EXPECT_EQ(0x10, t.size);
		EXPECT_EQ(-ENOENT, xlate(self, 1, msi_region.start, &t));
		EXPECT_EQ(-ENOENT, xlate(self, 1, msi_region.end, &t));
		ASSERT_EQ(0, xlate(self, 1, msi_region.end + 1, &t));
		EXPECT_EQ(out + msi_region.end + 1 - leaf, t.gpa);
		EXPECT_EQ(leaf + 0x40000000 - msi_region.end - 1, t.size);
		EXPECT_EQ(OK, detach(self, TDOM + f, 1));
	}
}

/* VT-d: write-only, and permissions of table entries count */
TEST_F(viommu, table_vtd_permissions)
{
	struct vhost_iommu_translate t;
	struct pt p;
	uint64_t gpa = 0, *e;

	table_up(_metadata, self, 0);
	pt_init(&p, self->mem, PT_VTD, 4);
	ASSERT_EQ(0, pt_map(&p, IOVA, DATA(5), 0, PT_W));
	ASSERT_EQ(0, pt_map(&p, IOVA + PG, DATA(6), 0, PT_R | PT_W));
	ASSERT_EQ(OK, pt_attach(self, &p, TDOM, TEP));
	ASSERT_EQ(0, xlate(self, TEP, IOVA, &t));
	EXPECT_EQ(VHOST_IOMMU_PERM_WRITE, t.perm);
	EXPECT_EQ(-EACCES, pt_xlate(self, TEP, IOVA, TF_R, &gpa));
	/* The level-1 table entry takes write away for both pages */
	e = pt_entry(&p, IOVA, 1);
	ASSERT_NE(NULL, e);
	pt_store(e, *e & ~2ULL);
	EXPECT_EQ(-EACCES, pt_xlate(self, TEP, IOVA, TF_W, &gpa));
	ASSERT_EQ(0, xlate(self, TEP, IOVA + PG, &t));
	EXPECT_EQ(VHOST_IOMMU_PERM_READ, t.perm);
}

/* ARM: APTable[1] takes write away below; AP[1], nG, XN change nothing */
TEST_F(viommu, table_arm_attributes)
{
	struct vhost_iommu_translate t;
	struct pt p;
	uint64_t *e;

	table_up(_metadata, self, 0);
	pt_init(&p, self->mem, PT_ARM, 4);
	ASSERT_EQ(0, pt_map(&p, IOVA, DATA(7), 0, PT_R | PT_W));
	e = pt_entry(&p, IOVA, 0);
	ASSERT_NE(NULL, e);
	pt_store(e, *e | (1 << 6) | (1 << 11) | (3ULL << 53));
	ASSERT_EQ(OK, pt_attach(self, &p, TDOM, TEP));
	ASSERT_EQ(0, xlate(self, TEP, IOVA, &t));
	EXPECT_EQ(DATA(7), t.gpa);
	EXPECT_EQ(VHOST_IOMMU_PERM_READ | VHOST_IOMMU_PERM_WRITE, t.perm);
	e = pt_entry(&p, IOVA, 2);
	ASSERT_NE(NULL, e);
	pt_store(e, *e | (1ULL << 62));
	ASSERT_EQ(0, xlate(self, TEP, IOVA, &t));
	EXPECT_EQ(VHOST_IOMMU_PERM_READ, t.perm);
}

/* The device MUST NOT write the table */
TEST_F(viommu, table_never_written)
{
	uint8_t *pool = gpa_ptr(self->mem, GPA_BASE + OFF_PT);
	size_t len = OFF_PT_END - OFF_PT;
	uint8_t *copy = malloc(len);
	unsigned int f, i;
	struct pt p;
	uint64_t gpa = 0;

	ASSERT_NE(NULL, copy);
	table_up(_metadata, self, 0);
	for (f = 0; f < ARRAY_SIZE(both); f++) {
		pt_init(&p, self->mem, both[f], 4);
		for (i = 0; i < 16; i++)
			ASSERT_EQ(0, pt_map(&p, IOVA + i * PG, DATA(i), 0,
					    i & 1 ? PT_R : PT_R | PT_W));
		ASSERT_EQ(0, pt_map(&p, 0x200000, 0x200000, 1, PT_R | PT_W));
		ASSERT_EQ(OK, pt_attach(self, &p, TDOM + f, TEP + f));
		memcpy(copy, pool, len);
		for (i = 0; i < 32; i++) {
			pt_xlate(self, TEP + f, IOVA + i * PG, TF_R | TF_W,
				 &gpa);
			pt_xlate(self, TEP + f, 0x200000 + i * PG, TF_W, &gpa);
		}
		EXPECT_EQ(OK, invalidate(self, TDOM + f, INV_DOMAIN, 0, 0, 0));
		EXPECT_EQ(OK, detach(self, TDOM + f, TEP + f));
		/* No accessed or dirty bit, nothing */
		EXPECT_EQ(0, memcmp(copy, pool, len));
	}
	free(copy);
}

/* INVALIDATE: every status */
TEST_F(viommu, table_invalidate_statuses)
{
	struct virtio_iommu_req_invalidate r;
	struct pt p;
	unsigned int i;

	table_up(_metadata, self, 0);
	pt_init(&p, self->mem, PT_VTD, 4);
	ASSERT_EQ(OK, pt_attach(self, &p, TDOM, TEP));
	ASSERT_EQ(OK, attach(self, TDOM + 1, 3, 0));
	ASSERT_EQ(OK, attach(self, TDOM + 2, 4, VIRTIO_IOMMU_ATTACH_F_BYPASS));

	EXPECT_EQ(OK, invalidate(self, TDOM, INV_DOMAIN, 0, 0, 0));
	EXPECT_EQ(OK, invalidate(self, TDOM, INV_DOMAIN, INV_LEAF, 5, 1));
	EXPECT_EQ(OK, invalidate(self, TDOM, INV_RANGE, 0, IOVA, IOVA));
	EXPECT_EQ(OK, invalidate(self, TDOM, INV_RANGE, INV_LEAF, 0, ~0ULL));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT,
		  invalidate(self, TDOM + 3, INV_DOMAIN, 0, 0, 0));
	/* Not a table domain */
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  invalidate(self, TDOM + 1, INV_DOMAIN, 0, 0, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  invalidate(self, TDOM + 2, INV_RANGE, 0, 0, PG - 1));
	/* Unknown scope, unknown flags, end below start */
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, invalidate(self, TDOM, 2, 0, 0, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  invalidate(self, TDOM, 0xffff, 0, 0, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  invalidate(self, TDOM, INV_RANGE, 2, 0, PG - 1));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  invalidate(self, TDOM, INV_DOMAIN, 0x8000, 0, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  invalidate(self, TDOM, INV_RANGE, 0, IOVA + 1, IOVA));
	/* Reserved fields */
	for (i = 0; i < sizeof(r.reserved0) + sizeof(r.reserved1); i++) {
		memset(&r, 0, sizeof(r));
		r.head.type = VIRTIO_IOMMU_T_INVALIDATE;
		r.domain = TDOM;
		r.scope = INV_DOMAIN;
		if (i < sizeof(r.reserved0))
			r.reserved0[i] = 1;
		else
			r.reserved1[i - sizeof(r.reserved0)] = 0x40;
		EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
			  req_status(self->mem, &self->rq, &r, sizeof(r)));
	}
	/* A short request */
	memset(&r, 0, sizeof(r));
	r.head.type = VIRTIO_IOMMU_T_INVALIDATE;
	r.domain = TDOM;
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  req_status(self->mem, &self->rq, &r, sizeof(r) - 8));
}

/* DETACH of the last endpoint and reset drop the table domain */
TEST_F(viommu, table_detach_and_reset_drop_table)
{
	uint32_t one = 1;
	struct pt p, q;
	uint64_t gpa = 0;

	table_up(_metadata, self, 0);
	pt_init(&p, self->mem, PT_VTD, 4);
	ASSERT_EQ(0, pt_map(&p, IOVA, DATA(8), 0, PT_R));
	ASSERT_EQ(OK, pt_attach(self, &p, TDOM, TEP));
	ASSERT_EQ(OK, pt_attach(self, &p, TDOM, 3));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, detach(self, TDOM, 4));
	ASSERT_EQ(OK, detach(self, TDOM, TEP));
	EXPECT_EQ(-ENOENT, pt_xlate(self, TEP, IOVA, 0, &gpa));
	ASSERT_EQ(0, pt_xlate(self, 3, IOVA, 0, &gpa));
	ASSERT_EQ(OK, detach(self, TDOM, 3));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT,
		  invalidate(self, TDOM, INV_DOMAIN, 0, 0, 0));
	/* The ID is free: another table, another format */
	pt_init(&q, self->mem, PT_ARM, 4);
	ASSERT_EQ(0, pt_map(&q, IOVA, DATA(9), 0, PT_R));
	ASSERT_EQ(OK, pt_attach(self, &q, TDOM, TEP));
	ASSERT_EQ(0, pt_xlate(self, TEP, IOVA, 0, &gpa));
	EXPECT_EQ(DATA(9), gpa);
	/* Reset */
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
	EXPECT_EQ(-ENOENT, pt_xlate(self, TEP, IOVA, 0, &gpa));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT,
		  invalidate(self, TDOM, INV_DOMAIN, 0, 0, 0));
	/* And DEL_ENDPOINT */
	ASSERT_EQ(OK, pt_attach(self, &q, TDOM, TEP));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_DEL_ENDPOINT, &(uint32_t){TEP}));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT,
		  invalidate(self, TDOM, INV_DOMAIN, 0, 0, 0));
}

/* Missing and forbidding entries: MAPPING faults on the event queue */
TEST_F(viommu, table_faults_on_event_queue)
{
	struct pt p;

	table_up(_metadata, self, 0);
	pt_init(&p, self->mem, PT_ARM, 4);
	ASSERT_EQ(0, pt_map(&p, IOVA, DATA(10), 0, PT_R));
	ASSERT_EQ(OK, pt_attach(self, &p, TDOM, TEP));
	evt_post(&self->eq, self->mem, 0, 4, 32);
	EXPECT_EQ(-ENOENT, xlate_f(self, TEP, IOVA + PG, TF_R | TF_F));
	EXPECT_FAULT(VIRTIO_IOMMU_FAULT_R_MAPPING,
		     VIRTIO_IOMMU_FAULT_F_READ | FF_A, TEP, IOVA + PG);
	EXPECT_EQ(-EACCES, xlate_f(self, TEP, IOVA + 4, TF_W | TF_F));
	EXPECT_FAULT(VIRTIO_IOMMU_FAULT_R_MAPPING,
		     VIRTIO_IOMMU_FAULT_F_WRITE | FF_A, TEP, IOVA + 4);
	EXPECT_EQ(0, xlate_f(self, TEP, IOVA + 4, TF_R | TF_F));
	EXPECT_TRUE(evt_none(&self->eq));
}

/*
 * Hostile tables.  Each case writes one bad entry on the path of IOVA;
 * the walk must end in a MAPPING fault, and the queue go on serving.
 */
struct hostile {
	const char *what;
	int fmt;
	unsigned int lvl;		/* where the bad entry goes */
	uint64_t (*entry)(struct pt *p, uint64_t good);
};

static uint64_t h_outside(struct pt *p, uint64_t good)
{
	/* A table beyond guest memory (which ends at GPA_BASE + MEM_SIZE) */
	return (good & ~PT_ADDR) | 0x7fff0000ULL;
}

static uint64_t h_far(struct pt *p, uint64_t good)
{
	/* The highest address bit the format has (oas is the format's) */
	return good | (1ULL << (p->fmt == PT_VTD ? 51 : 47));
}

static uint64_t h_arm_res0(struct pt *p, uint64_t good)
{
	return good | (1ULL << 49);
}

static uint64_t h_block_misaligned(struct pt *p, uint64_t good)
{
	return pt_mk_leaf(p, 0x40000000 + PG, 1, PT_R);
}

static uint64_t h_top_leaf(struct pt *p, uint64_t good)
{
	/* VT-d: PS is reserved at the 512G level; ARM: no 512G block */
	return pt_mk_leaf(p, 0, 3, PT_R);
}

static uint64_t h_arm_l0_block(struct pt *p, uint64_t good)
{
	/* Type 1 at the last level is reserved */
	return (good & ~3ULL) | 1;
}

static const struct hostile hostiles[] = {
	{ "table outside guest memory", PT_VTD, 2, h_outside },
	{ "table outside guest memory", PT_ARM, 1, h_outside },
	{ "table at the top address bit", PT_VTD, 2, h_far },
	{ "table at the top address bit", PT_ARM, 1, h_far },
	{ "RES0 bit 49 in a table entry", PT_ARM, 2, h_arm_res0 },
	{ "RES0 bit 49 in a page", PT_ARM, 0, h_arm_res0 },
	{ "2M block with low address bits", PT_VTD, 1, h_block_misaligned },
	{ "2M block with low address bits", PT_ARM, 1, h_block_misaligned },
	{ "PS at the top level", PT_VTD, 3, h_top_leaf },
	{ "block at level 0 (512G)", PT_ARM, 3, h_top_leaf },
	{ "type 1 at the last level", PT_ARM, 0, h_arm_l0_block },
};

TEST_F(viommu, table_hostile_entries_fault)
{
	unsigned int i, n = 0;
	struct pt p;
	uint64_t gpa = 0;

	table_up(_metadata, self, 0);
	for (i = 0; i < ARRAY_SIZE(hostiles); i++) {
		const struct hostile *h = &hostiles[i];
		uint32_t dom = TDOM + i;
		uint64_t *e;

		pt_init(&p, self->mem, h->fmt, 4);
		ASSERT_EQ(0, pt_map(&p, IOVA, DATA(11), 0, PT_R | PT_W));
		/* A good neighbour in another 1G region still translates */
		ASSERT_EQ(0, pt_map(&p, 0x80000000ULL, DATA(12), 0, PT_R));
		e = pt_entry(&p, IOVA, h->lvl);
		ASSERT_NE(NULL, e);
		pt_store(e, h->entry(&p, *e));
		ASSERT_EQ(OK, pt_attach(self, &p, dom, TEP));
		if (n % 8 == 0)
			evt_post(&self->eq, self->mem, n, 8, 32);
		EXPECT_EQ(-ENOENT, xlate_f(self, TEP, IOVA, TF_R | TF_F))
			TH_LOG("%s %s", pt_name(h->fmt), h->what);
		EXPECT_FAULT(VIRTIO_IOMMU_FAULT_R_MAPPING,
			     VIRTIO_IOMMU_FAULT_F_READ | FF_A, TEP, IOVA);
		n++;
		if (h->lvl < 3) {
			ASSERT_EQ(0, pt_xlate(self, TEP, 0x80000000ULL, TF_R,
					      &gpa));
			EXPECT_EQ(DATA(12), gpa);
		}
		ASSERT_EQ(OK, detach(self, dom, TEP));
	}
	EXPECT_TRUE(evt_none(&self->eq));
}

/*
 * Roots the walk cannot read (outside memory), and tables pointing back
 * at themselves: a walk reads one entry a level, so it ends after the
 * levels the attachment fixed.  What a table entry read as a last-level
 * entry says is a page in both formats: the walk may end on one (at a
 * table's own address), or fault; it may not go on.
 */
TEST_F(viommu, table_hostile_roots_and_loops)
{
	uint64_t gpa = 0, other, *e;
	unsigned int f, l;
	struct pt p;
	int ret;

	table_up(_metadata, self, 0);
	for (f = 0; f < ARRAY_SIZE(both); f++) {
		/* Aligned, below oas, but not guest memory: the walk faults */
		pt_init(&p, self->mem, both[f], 4);
		p.root = 0x7ff00000;
		ASSERT_EQ(OK, pt_attach(self, &p, TDOM, TEP));
		EXPECT_EQ(-ENOENT, pt_xlate(self, TEP, IOVA, 0, &gpa));
		p.root = 0;	/* below guest memory */
		ASSERT_EQ(OK, pt_attach(self, &p, TDOM + 1, TEP));
		EXPECT_EQ(-ENOENT, pt_xlate(self, TEP, IOVA, 0, &gpa));
		/* Two tables pointing at each other at every level */
		pt_init(&p, self->mem, both[f], 4);
		other = pt_new_table(&p);
		ASSERT_NE(0, other);
		e = pt_slot(&p, p.root, IOVA, 3);
		pt_store(e, pt_mk_table(&p, other));
		e = pt_slot(&p, other, IOVA, 2);
		pt_store(e, pt_mk_table(&p, p.root));
		/* Each index of IOVA on the way lands on one of the two */
		pt_store(pt_slot(&p, p.root, IOVA, 1), pt_mk_table(&p, other));
		pt_store(pt_slot(&p, other, IOVA, 0), pt_mk_table(&p, p.root));
		ASSERT_EQ(OK, pt_attach(self, &p, TDOM + 2, TEP));
		ret = pt_xlate(self, TEP, IOVA, 0, &gpa);
		EXPECT_TRUE(ret == -ENOENT || (!ret && gpa == p.root))
			TH_LOG("%s: %d 0x%llx", pt_name(p.fmt), ret,
			       (unsigned long long)gpa);
		EXPECT_EQ(OK, detach(self, TDOM + 2, TEP));
		/* One table pointing at itself at every level */
		pt_init(&p, self->mem, both[f], 4);
		for (l = 0; l < 4; l++)
			pt_store(pt_slot(&p, p.root, 0, l),
				 pt_mk_table(&p, p.root));
		ASSERT_EQ(OK, pt_attach(self, &p, TDOM + 2, TEP));
		ret = pt_xlate(self, TEP, 0, 0, &gpa);
		EXPECT_TRUE(ret == -ENOENT || (!ret && gpa == p.root));
		/* Its entry 0 read at every level, the last one a table */
		ret = pt_xlate(self, TEP, 0x1000, 0, &gpa);
		EXPECT_EQ(-ENOENT, ret);
		EXPECT_EQ(OK, detach(self, TDOM + 2, TEP));
		detach(self, TDOM + 1, TEP);
		detach(self, TDOM, TEP);
	}
	/* Still serving */
	EXPECT_EQ(OK, attach(self, TDOM, TEP, 0));
}

/*
 * A seeded random run: maps (4K and 2M), unmaps with the INVALIDATE the
 * rst asks for (leaf or not, range or domain), tables unlinked whole, and
 * after each step TRANSLATE of a few addresses against the model, in both
 * formats.  VHOST_IOMMU_SEED replays, VHOST_IOMMU_TABLE_RANDOM sets the
 * number of steps.
 */
#define RND_PAGES	1024	/* 4K pages of the window: two 2M regions */
#define RND_IOVA	0x7fe00000ULL

struct tmodel {
	int64_t page[RND_PAGES];	/* gpa of each 4K page, -1 none */
	int prot[RND_PAGES];
};

static uint64_t rnd_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

TEST_F_TIMEOUT(viommu, table_random_against_model, 1800)
{
	unsigned long steps = count_from_env("VHOST_IOMMU_TABLE_RANDOM", 20000);
	uint64_t seed = count_from_env("VHOST_IOMMU_SEED", 0) ?: time(NULL);
	unsigned long i, checks = 0, invals = 0;
	struct tmodel *m = calloc(1, sizeof(*m));
	struct pt p;
	unsigned int f, j;

	ASSERT_NE(NULL, m);
	TH_LOG("seed %llu (VHOST_IOMMU_SEED replays it)",
	       (unsigned long long)seed);
	table_up(_metadata, self, 0);
	for (f = 0; f < ARRAY_SIZE(both); f++) {
		uint64_t s = seed * 2 + f + 1;

		pt_init(&p, self->mem, both[f], f ? 4 : 3);
		for (j = 0; j < RND_PAGES; j++)
			m->page[j] = -1;
		ASSERT_EQ(OK, pt_attach(self, &p, TDOM + f, TEP));
		for (i = 0; i < steps / 2; i++) {
			uint64_t r = rnd_next(&s);
			unsigned int pg = r % RND_PAGES, reg = pg / 512;
			uint64_t iova = RND_IOVA + pg * PG;
			int prot = p.fmt == PT_VTD ? 1 + (r >> 20) % 3 :
				   (r >> 20) & 1 ? PT_R | PT_W : PT_R;
			uint16_t scope;

			switch ((r >> 12) % 8) {
			case 0: case 1: case 2:		/* map a page */
				if (m->page[pg] >= 0)
					break;
				if (pt_map(&p, iova, DATA(r % 64), 0, prot)) {
					/* a 2M leaf there */
					break;
				}
				m->page[pg] = DATA(r % 64);
				m->prot[pg] = prot;
				break;
			case 3: case 4:			/* unmap a page */
				if (m->page[pg] < 0 || !pt_entry(&p, iova, 0))
					break;
				pt_clear(&p, iova, 0);
				m->page[pg] = -1;
				scope = (r >> 40) & 1 ? INV_RANGE : INV_DOMAIN;
				ASSERT_EQ(OK, invalidate(self, TDOM + f, scope,
							 INV_LEAF, iova,
							 iova + PG - 1));
				invals++;
				break;
			case 5: {			/* a 2M region: drop it whole */
				uint64_t base = RND_IOVA + reg * 0x200000ULL;
				uint64_t *e = pt_entry(&p, base, 1), old;

				if (!e)
					break;
				old = *e;
				pt_clear(&p, base, 1);
				for (j = reg * 512; j < reg * 512 + 512; j++)
					m->page[j] = -1;
				/* Not a leaf-only change: a table went */
				ASSERT_EQ(OK, invalidate(self, TDOM + f,
							 INV_RANGE, 0, base,
							 base + 0x1fffff));
				invals++;
				/* Only now may the table page be reused */
				if (pt_present(&p, old) && !pt_is_leaf(&p, old, 1))
					pt_free_table(&p, old & PT_ADDR);
				break;
			}
			case 6: {			/* or map it as one 2M page */
				uint64_t base = RND_IOVA + reg * 0x200000ULL;
				uint64_t *e = pt_entry(&p, base, 1);

				if (e && pt_present(&p, *e))
					break;
				if (pt_map(&p, base, 0x40000000, 1, prot))
					break;
				for (j = 0; j < 512; j++) {
					m->page[reg * 512 + j] = 0x40000000 + j * PG;
					m->prot[reg * 512 + j] = prot;
				}
				break;
			}
			default:			/* check */
				for (j = 0; j < 8; j++) {
					unsigned int q = (pg + j * 131) % RND_PAGES;
					struct vhost_iommu_translate t;
					int ret = xlate(self, TEP,
							RND_IOVA + q * PG + 8, &t);

					checks++;
					if (m->page[q] < 0) {
						ASSERT_EQ(-ENOENT, ret)
							TH_LOG("%s step %lu page %u",
							       pt_name(p.fmt), i, q);
						continue;
					}
					ASSERT_EQ(0, ret)
						TH_LOG("%s step %lu page %u",
						       pt_name(p.fmt), i, q);
					ASSERT_EQ(m->page[q] + 8, t.gpa);
					ASSERT_EQ(m->prot[q],
						  (int)(t.perm & 3));
				}
				break;
			}
		}
		ASSERT_EQ(OK, detach(self, TDOM + f, TEP));
	}
	TH_LOG("%lu steps, %lu translations checked, %lu INVALIDATEs",
	       steps, checks, invals);
	free(m);
}

/*
 * The guest rewrites its table while the device walks it: another thread
 * stores good entries, garbage and loops into every level of the path.
 * Every answer must be a translation one of the good entries gives, or
 * ENOENT/EACCES; and the device must stay sound (KASAN on the debug
 * kernel).
 */
struct flipper {
	struct pt *p;
	uint64_t *slots[4];
	uint64_t good[4];
	int stop;		/* __atomic: the other thread reads it */
	unsigned long flips;
};

static void *flip_table(void *arg)
{
	struct flipper *fl = arg;
	uint64_t s = 88172645463325252ULL;

	while (!__atomic_load_n(&fl->stop, __ATOMIC_RELAXED)) {
		uint64_t r = rnd_next(&s);
		unsigned int l = r % 4;
		uint64_t v;

		/* Good three times in four, so that all four levels often are */
		switch ((r >> 8) % 16) {
		case 0: case 1:
			v = r >> 3;
			break;
		case 2:
			v = pt_mk_table(fl->p, fl->p->root);
			break;
		case 3:
			v = 0;
			break;
		default:
			v = fl->good[l];
			break;
		}
		pt_store(fl->slots[l], v);
		fl->flips++;
	}
	return NULL;
}

TEST_F_TIMEOUT(viommu, table_guest_rewrites_table, 600)
{
	unsigned long n = count_from_env("VHOST_IOMMU_TABLE_REWRITES", 20000);
	unsigned long i, ok = 0, bad = 0;
	struct flipper fl = { 0 };
	pthread_t th;
	struct pt p;
	unsigned int f, l;

	table_up(_metadata, self, 0);
	for (f = 0; f < ARRAY_SIZE(both); f++) {
		pt_init(&p, self->mem, both[f], 4);
		ASSERT_EQ(0, pt_map(&p, IOVA, DATA(13), 0, PT_R | PT_W));
		fl.p = &p;
		fl.stop = 0;
		for (l = 0; l < 4; l++) {
			fl.slots[l] = pt_entry(&p, IOVA, l);
			ASSERT_NE(NULL, fl.slots[l]);
			fl.good[l] = *fl.slots[l];
		}
		ASSERT_EQ(OK, pt_attach(self, &p, TDOM + f, TEP));
		ASSERT_EQ(0, pthread_create(&th, NULL, flip_table, &fl));
		for (i = 0; i < n / 2; i++) {
			struct vhost_iommu_translate t;
			int ret = xlate(self, TEP, IOVA + 16, &t);

			if (!ret && t.gpa == DATA(13) + 16) {
				ok++;
			} else if (ret == -ENOENT || ret == -EACCES || !ret) {
				/*
				 * Garbage may still decode to some page: the
				 * device translated it, which is the guest's
				 * business; what matters is that it answered.
				 */
				bad++;
			} else {
				ASSERT_EQ(0, ret);
			}
		}
		__atomic_store_n(&fl.stop, 1, __ATOMIC_RELAXED);
		pthread_join(th, NULL);
		ASSERT_EQ(OK, detach(self, TDOM + f, TEP));
	}
	TH_LOG("%lu translations while %lu entries were rewritten: %lu good, %lu other",
	       n, fl.flips, ok, bad);
	EXPECT_LT(0, ok);
	/* The queue still serves */
	EXPECT_EQ(OK, attach(self, TDOM, TEP, 0));
}

struct leaf_flipper {
	uint64_t *slot;
	uint64_t v[2];
	int stop;
};

static void *flip_leaf(void *arg)
{
	struct leaf_flipper *fl = arg;
	unsigned long i;

	for (i = 0; !__atomic_load_n(&fl->stop, __ATOMIC_RELAXED); i++)
		pt_store(fl->slot, fl->v[i & 1]);
	return NULL;
}

/*
 * The guest rewrites a leaf with one 64-bit store, between two valid
 * entries whose every byte differs: each translation must be one of the
 * two pages, never an entry read in pieces, half old and half new.
 */
TEST_F_TIMEOUT(viommu, table_entry_read_whole, 300)
{
	unsigned long n = count_from_env("VHOST_IOMMU_TABLE_REWRITES", 20000);
	const uint64_t pa[2] = { DATA(13), 0xba9876543000ULL };
	unsigned long i, hits[2] = { 0 }, torn = 0;
	struct leaf_flipper fl = { 0 };
	pthread_t th;
	unsigned int f;
	struct pt p;

	table_up(_metadata, self, 0);
	for (f = 0; f < ARRAY_SIZE(both); f++) {
		pt_init(&p, self->mem, both[f], 4);
		ASSERT_EQ(0, pt_map(&p, IOVA, pa[1], 0, PT_R | PT_W));
		fl.slot = pt_entry(&p, IOVA, 0);
		ASSERT_NE(NULL, fl.slot);
		fl.v[1] = *fl.slot;
		ASSERT_EQ(0, pt_map(&p, IOVA, pa[0], 0, PT_R | PT_W));
		fl.v[0] = *fl.slot;
		fl.stop = 0;
		ASSERT_EQ(OK, pt_attach(self, &p, TDOM + f, TEP));
		ASSERT_EQ(0, pthread_create(&th, NULL, flip_leaf, &fl));
		for (i = 0; i < n / 2; i++) {
			struct vhost_iommu_translate t;

			ASSERT_EQ(0, xlate(self, TEP, IOVA, &t));
			if (t.gpa == pa[0])
				hits[0]++;
			else if (t.gpa == pa[1])
				hits[1]++;
			else if (!torn++)
				TH_LOG("read torn: %llx", (unsigned long long)t.gpa);
		}
		__atomic_store_n(&fl.stop, 1, __ATOMIC_RELAXED);
		pthread_join(th, NULL);
		ASSERT_EQ(OK, detach(self, TDOM + f, TEP));
	}
	TH_LOG("%lu translations: %lu of one page, %lu of the other, %lu torn",
	       n, hits[0], hits[1], torn);
	EXPECT_EQ(0, torn);
	/* Both values seen: the entry did change under the device */
	EXPECT_LT(0, hits[0]);
	EXPECT_LT(0, hits[1]);
}

/*
 * Benchmark: what unmapping costs in each mode, at 1, 16 and 256 pages a
 * kick.  MAP/UNMAP mode: one kick of that many UNMAPs (after one of the
 * MAPs, not timed); page-table mode: the guest clears that many leaves of
 * its table and sends one INVALIDATE of the range (its maps cost nothing).
 * Prints for each batch size
 *   # bench-vhost-table: batch=B rounds=R unmap_us=U invalidate_us=I
 * (microseconds a kick, means), which `make bench-vhost` collects.
 * VHOST_IOMMU_BENCH_SECONDS sets the time per batch size and mode
 * (default 0.2: the functional run only checks that it works).
 */
#define TBENCH_MAX	256
#define TBENCH_IOVA	0x100000000ULL

static double tbench_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* One kick of @n requests from slots @first on; every answer OK */
static int tbench_kick(struct _test_data_viommu *self, unsigned int first,
		       unsigned int n)
{
	struct vq *vq = &self->rq;
	uint8_t *st = gpa_ptr(self->mem, GPA_BASE + OFF_BRESP);
	unsigned int i;

	memset(st + first * 4, 0xff, n * 4);
	for (i = 0; i < n; i++)
		vq->avail->ring[(uint16_t)(vq->avail_idx + i) % vq->num] =
			2 * (first + i);
	if (vq_kick_n(vq, n) || vq_wait_used(vq, n))
		return -1;
	vq->used_idx += n;
	for (i = 0; i < n; i++)
		if (st[(first + i) * 4] != OK)
			return -1;
	return 0;
}

static void tbench_slot(struct _test_data_viommu *self, unsigned int i,
			const void *req, size_t len)
{
	struct vq *vq = &self->rq;

	memset(breq(self->mem, i), 0, BREQ_SZ);
	memcpy(breq(self->mem, i), req, len);
	vq->desc[2 * i] = (struct vring_desc){
		GPA_BASE + OFF_BREQ + i * BREQ_SZ, len - 4, VRING_DESC_F_NEXT,
		2 * i + 1 };
	vq->desc[2 * i + 1] = (struct vring_desc){
		GPA_BASE + OFF_BRESP + i * 4, 4, VRING_DESC_F_WRITE, 0 };
}

TEST_F_TIMEOUT(viommu, bench_invalidate, 600)
{
	static const unsigned int batches[] = { 1, 16, TBENCH_MAX };
	const char *env = getenv("VHOST_IOMMU_BENCH_SECONDS");
	double secs = env && *env ? atof(env) : 0.2;
	unsigned int b, i;
	struct pt p;

	/* A queue of 1024, as bench_map_unmap has it */
	table_up(_metadata, self, 0);
	big_request_queue(_metadata, self);
	ASSERT_EQ(OK, attach(self, 1, 1, 0));
	pt_init(&p, self->mem, PT_VTD, 4);
	for (i = 0; i < TBENCH_MAX; i++)	/* the leaf table, made once */
		ASSERT_EQ(0, pt_map(&p, TBENCH_IOVA + i * PG, DATA(i % 64), 0,
				    PT_R | PT_W));
	ASSERT_EQ(OK, pt_attach(self, &p, 2, TEP));

	/*
	 * Slots 0..255 MAP page i, 256..511 UNMAP it (two descriptors each:
	 * the queue is full); INVALIDATE borrows the last slot.
	 */
	for (i = 0; i < TBENCH_MAX; i++) {
		struct virtio_iommu_req_map m = {
			.head.type = VIRTIO_IOMMU_T_MAP, .domain = 1,
			.virt_start = TBENCH_IOVA + i * PG,
			.virt_end = TBENCH_IOVA + i * PG + PG - 1,
			.phys_start = DATA(i % 64), .flags = RW,
		};
		struct virtio_iommu_req_unmap u = {
			.head.type = VIRTIO_IOMMU_T_UNMAP, .domain = 1,
			.virt_start = m.virt_start, .virt_end = m.virt_end,
		};

		tbench_slot(self, i, &m, sizeof(m));
		tbench_slot(self, TBENCH_MAX + i, &u, sizeof(u));
	}

	for (b = 0; b < ARRAY_SIZE(batches); b++) {
		unsigned int n = batches[b];
		struct virtio_iommu_req_invalidate inv = {
			.head.type = VIRTIO_IOMMU_T_INVALIDATE,
			.scope = INV_RANGE, .flags = INV_LEAF, .domain = 2,
			.virt_start = TBENCH_IOVA,
			.virt_end = TBENCH_IOVA + n * PG - 1,
		};
		double t0, unmap_s = 0, inval_s = 0, t;
		unsigned long rounds = 0, inv_rounds = 0;

		struct virtio_iommu_req_unmap last = {
			.head.type = VIRTIO_IOMMU_T_UNMAP, .domain = 1,
			.virt_start = TBENCH_IOVA + (TBENCH_MAX - 1) * PG,
			.virt_end = TBENCH_IOVA + TBENCH_MAX * PG - 1,
		};

		t0 = tbench_now();
		do {
			ASSERT_EQ(0, tbench_kick(self, 0, n));
			t = tbench_now();
			ASSERT_EQ(0, tbench_kick(self, TBENCH_MAX, n));
			unmap_s += tbench_now() - t;
			rounds++;
		} while (tbench_now() - t0 < secs);
		EXPECT_FALSE(mapped(self, 1, TBENCH_IOVA));
		tbench_slot(self, 2 * TBENCH_MAX - 1, &inv, sizeof(inv));
		t0 = tbench_now();
		do {
			/* Map and unmap are the guest's stores; then one request */
			for (i = 0; i < n; i++)
				pt_store(pt_entry(&p, TBENCH_IOVA + i * PG, 0),
					 pt_mk_leaf(&p, DATA(i % 64), 0,
						    PT_R | PT_W));
			for (i = 0; i < n; i++)
				pt_store(pt_entry(&p, TBENCH_IOVA + i * PG, 0),
					 0);
			t = tbench_now();
			ASSERT_EQ(0, tbench_kick(self, 2 * TBENCH_MAX - 1, 1));
			inval_s += tbench_now() - t;
			inv_rounds++;
		} while (tbench_now() - t0 < secs);
		EXPECT_FALSE(mapped(self, TEP, TBENCH_IOVA));
		tbench_slot(self, 2 * TBENCH_MAX - 1, &last, sizeof(last));
		printf("# bench-vhost-table: batch=%u rounds=%lu ", n, rounds);
		printf("unmap_us=%.2f invalidate_us=%.2f\n",
		       unmap_s * 1e6 / rounds, inval_s * 1e6 / inv_rounds);
		fflush(stdout);
	}
}

TEST_HARNESS_MAIN
