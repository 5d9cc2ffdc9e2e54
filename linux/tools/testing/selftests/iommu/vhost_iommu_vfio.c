// SPDX-License-Identifier: GPL-2.0-only
/*
 * vhost-iommu forwarding a VFIO endpoint's table to its container
 * (VHOST_IOMMU_EP_F_VFIO, Documentation/iommu/vhost-iommu.rst), judged by
 * QEMU's edu device behind the IOMMU the scenario gives it.
 *
 * The test plays the VMM and the guest, as the other vhost-iommu tests
 * do: the fixture's memory is the guest's, in vhost-iommu's memory table
 * and mapped with MAP_DMA at the same guest-physical addresses (stage 2)
 * in a VFIO_TYPE1_NESTING_IOMMU container holding the edu's group.  The
 * guest's table is written with the tests' own writer (vhost_iommu_pt.h)
 * and attached with ATTACH_TABLE; vhost-iommu hands it to the container,
 * which composes it with stage 2 for the IOMMU model to walk.  What the
 * edu reads and writes through the guest's IOVAs shows whether the
 * request reached the container; faults must come back on the event
 * queue where NEST_FAULT_RECORDS=1 says the IOMMU driver reports them.
 * On a kernel with fault injection, each allocation of the forwarding
 * paths fails once in turn (vfio_fail_nth).
 */
#include "vfio_edu.h"
#include "vhost_iommu_fail_nth.h"
#include "vhost_iommu_pt.h"

#define EDU_EP		0x100	/* the edu's endpoint ID */
#define EDU_DOM		30
#define EDU_DOM2	31
#define IOVA_SRC	0x01000000ULL	/* the edu masks addresses to 28 bits */
#define IOVA_DST	0x01100000ULL
#define IOVA_HOLE	0x02000000ULL	/* never in the guest's table */
#define DATA(i)		(GPA_BASE + OFF_PT_DATA + (i) * PG)
#define XFER		1024

/* The next event-queue slot a buffer is posted in (8 are, at first) */
static unsigned int evt_slot;

struct edu {
	int container, group, device;
	uint8_t *bar;
	size_t bar_size;
};

/*
 * The edu's group in a container of @type whose stage 2 is the fixture's
 * memory: 0, or 1 when the scenario has no edu (the test is skipped).
 */
static int edu_up(struct __test_metadata *_metadata,
		  struct _test_data_viommu *self, struct edu *e,
		  unsigned long type)
{
	char path[64];
	int id;

	e->container = -1;
	e->group = -1;
	e->device = -1;
	e->bar = NULL;
	if (find_edu())
		SKIP(return 1, "no edu device (QEMU -device edu)");
	ASSERT_EQ(0, bind_vfio_pci());
	id = edu_iommu_group();
	ASSERT_LE(0, id);
	e->container = open("/dev/vfio/vfio", O_RDWR);
	ASSERT_LE(0, e->container);
	snprintf(path, sizeof(path), "/dev/vfio/%d", id);
	e->group = open(path, O_RDWR);
	ASSERT_LE(0, e->group);
	ASSERT_EQ(0, ioctl(e->group, VFIO_GROUP_SET_CONTAINER, &e->container));
	ASSERT_EQ(0, ioctl(e->container, VFIO_SET_IOMMU, type));
	e->device = ioctl(e->group, VFIO_GROUP_GET_DEVICE_FD, edu_bdf);
	ASSERT_LE(0, e->device);
	open_bar(_metadata, e->device, &e->bar, &e->bar_size);
	ASSERT_EQ(0, map_dma(e->container, self->mem, GPA_BASE, MEM_SIZE));
	return 0;
}

static void edu_down(struct edu *e)
{
	int fds[] = { e->device, e->group, e->container };

	edu_close(e->bar, e->bar_size, fds, ARRAY_SIZE(fds));
}

/* The edu as an endpoint of the fixture's device, page-table sharing on */
static int add_vfio_ep(struct _test_data_viommu *self, uint32_t id, int fd)
{
	struct vhost_iommu_endpoint ep = {
		.id = id, .flags = VHOST_IOMMU_EP_F_VFIO, .vfio_group_fd = fd,
	};

	return ioctl(self->fd, VHOST_IOMMU_ADD_ENDPOINT, &ep) ? -errno : 0;
}

/*
 * The edu in a nesting container, as the fixture device's endpoint EDU_EP
 * (page-table sharing negotiated first when @table), event buffers posted:
 * 0, or 1 when the test is skipped
 */
static int vfio_ep_up(struct __test_metadata *_metadata,
		      struct _test_data_viommu *self, struct edu *e, bool table)
{
	if (edu_up(_metadata, self, e, VFIO_TYPE1_NESTING_IOMMU))
		return 1;
	if (table)
		table_up(_metadata, self, 0);
	ASSERT_EQ(0, add_vfio_ep(self, EDU_EP, e->group));
	evt_post(&self->eq, self->mem, 0, 8, 32);
	evt_slot = 8;
	return 0;
}

/* Copy XFER bytes by DMA from IOVA @src to @dst through the edu */
static int copy(struct edu *e, uint64_t src, uint64_t dst)
{
	return edu_dma(e->bar, src, EDU_BUFFER, XFER, false) ?:
	       edu_dma(e->bar, EDU_BUFFER, dst, XFER, true);
}

static uint8_t *page(struct _test_data_viommu *self, unsigned int i)
{
	return gpa_ptr(self->mem, DATA(i));
}

/*
 * PROBE @ep: how many PAGE_TABLE_FMT properties it has, or -1 when one of
 * them has flags other than @flags
 */
static int table_props(struct _test_data_viommu *self, uint32_t ep,
		       uint16_t flags)
{
	struct virtio_iommu_req_probe r = {
		.head.type = VIRTIO_IOMMU_T_PROBE, .endpoint = ep,
	};
	uint8_t *p = gpa_ptr(self->mem, GPA_BASE + OFF_RESP);
	uint8_t *end = p + PROBE_SIZE;
	struct answer a;
	int n = 0;

	a = do_req(self->mem, &self->rq, &r, sizeof(r), PROBE_SIZE + 4,
		   PROBE_SIZE);
	if (a.status != OK)
		return -1;
	while (p + sizeof(struct virtio_iommu_probe_property) <= end) {
		struct virtio_iommu_probe_property *h = (void *)p;
		uint16_t type = h->type & VIRTIO_IOMMU_PROBE_T_MASK;

		if (type == VIRTIO_IOMMU_PROBE_T_NONE)
			break;
		if (type == VIRTIO_IOMMU_PROBE_T_PAGE_TABLE_FMT) {
			struct virtio_iommu_probe_table_format *f = (void *)p;

			if (f->flags != flags)
				return -1;
			n++;
		}
		p += sizeof(*h) + h->length;
	}
	return n;
}

/*
 * Take every fault event that comes, giving the queue a buffer back for
 * each: an IOMMU may report a transfer's fault many times (the SMMUv3 does,
 * for each access), more than the buffers posted
 */
static void evt_drain(struct _test_data_viommu *self)
{
	struct virtio_iommu_fault f;
	uint32_t len;

	while (!evt_none(&self->eq)) {
		if (evt_next(&self->eq, self->mem, &f, &len))
			break;
		evt_post(&self->eq, self->mem, evt_slot++, 1, 32);
	}
}

static int fault_events(void)
{
	const char *r = getenv("NEST_FAULT_RECORDS");

	return r && !strcmp(r, "1");
}

/*
 * The next fault event: a fault for @_reason (MAPPING, or DOMAIN for a
 * detached endpoint) of a write by the edu's endpoint in the page of
 * @_iova (the IOMMU reports the page).  Later events of the same transfer
 * (it may fault more than once) are taken too, and the buffers given back.
 */
#define EXPECT_EDU_FAULT(_reason, _iova)				\
	do {								\
		struct virtio_iommu_fault _f;				\
		uint64_t _want = (_iova);				\
		uint32_t _len;						\
									\
		if (!fault_events())					\
			break;						\
		ASSERT_EQ(0, evt_next(&self->eq, self->mem, &_f, &_len)) \
			TH_LOG("no fault event for %#llx",		\
			       (unsigned long long)_want);		\
		EXPECT_EQ(sizeof(_f), _len);				\
		EXPECT_EQ(_reason, _f.reason);				\
		EXPECT_EQ(VIRTIO_IOMMU_FAULT_F_WRITE | FF_A, _f.flags);	\
		EXPECT_EQ(EDU_EP, _f.endpoint);				\
		EXPECT_EQ(_want, _f.address & ~(PG - 1));		\
		evt_post(&self->eq, self->mem, evt_slot++, 1, 32);	\
		evt_drain(self);					\
	} while (0)

/*
 * ADD_ENDPOINT with VHOST_IOMMU_EP_F_VFIO: the descriptor must be a VFIO
 * group (uAPI: EBADF, EINVAL); an endpoint ID is taken once.
 */
TEST_F(viommu, vfio_endpoint_arguments)
{
	int efd = eventfd(0, 0);
	struct edu e;

	if (edu_up(_metadata, self, &e, VFIO_TYPE1_NESTING_IOMMU))
		return;
	ASSERT_LE(0, efd);
	EXPECT_EQ(-EBADF, add_vfio_ep(self, EDU_EP, -1));
	EXPECT_EQ(-EINVAL, add_vfio_ep(self, EDU_EP, efd));
	EXPECT_EQ(-EINVAL, add_vfio_ep(self, EDU_EP, e.container));
	EXPECT_EQ(0, add_vfio_ep(self, EDU_EP, e.group));
	EXPECT_EQ(-EEXIST, add_vfio_ep(self, EDU_EP, e.group));
	EXPECT_EQ(0, ioctl(self->fd, VHOST_IOMMU_DEL_ENDPOINT,
			   &(uint32_t){ EDU_EP }));
	EXPECT_EQ(0, add_vfio_ep(self, EDU_EP, e.group));
	close(efd);
	edu_down(&e);
}

/*
 * The whole forward: ATTACH_TABLE gives the group the guest's table (DMA
 * through its IOVAs lands in the pages it names, data compared), an IOVA
 * it does not map faults (an event for the guest, memory untouched),
 * INVALIDATE makes a change take effect and the old page unreachable,
 * and DETACH takes the table away.
 */
TEST_F(viommu, vfio_dma_through_guest_table)
{
	uint8_t want[XFER];
	struct edu e;
	struct pt p;

	if (vfio_ep_up(_metadata, self, &e, true))
		return;
	/*
	 * The container copies the table: the guest must INVALIDATE what it
	 * maps too (rst: INVAL_MAP), where other endpoints need not
	 */
	EXPECT_EQ(3, table_props(self, EDU_EP, VIRTIO_IOMMU_PGTF_F_INVAL_MAP));
	EXPECT_EQ(3, table_props(self, 2, 0));

	pt_init(&p, self->mem, PT_VTD, 3);
	fill(page(self, 0), PG, 1);
	memset(page(self, 1), 0, PG);
	memset(page(self, 2), 0, PG);
	ASSERT_EQ(0, pt_map(&p, IOVA_SRC, DATA(0), 0, PT_R));
	ASSERT_EQ(0, pt_map(&p, IOVA_DST, DATA(1), 0, PT_R | PT_W));
	ASSERT_EQ(OK, pt_attach(self, &p, EDU_DOM, EDU_EP));
	ASSERT_EQ(0, copy(&e, IOVA_SRC, IOVA_DST));
	EXPECT_EQ(0, memcmp(page(self, 0), page(self, 1), XFER));

	/*
	 * A hole: the write faults, and no page changes.  Intel's driver
	 * reads ten faults per five seconds, from the first after a pause
	 * (vfio_nested's fault_window()): both faults below are seen after
	 * one.
	 */
	if (fault_events())
		sleep_ms(5100);
	memcpy(want, page(self, 2), XFER);
	ASSERT_EQ(0, edu_dma(e.bar, EDU_BUFFER, IOVA_HOLE, XFER, true));
	EXPECT_EDU_FAULT(VIRTIO_IOMMU_FAULT_R_MAPPING, IOVA_HOLE);
	EXPECT_EQ(0, memcmp(want, page(self, 2), XFER));

	/* Remapped and invalidated: the next copy lands in page 2 alone */
	fill(page(self, 0), PG, 2);
	memset(page(self, 1), 0, PG);
	ASSERT_EQ(0, pt_map(&p, IOVA_DST, DATA(2), 0, PT_R | PT_W));
	ASSERT_EQ(OK, invalidate(self, EDU_DOM, INV_RANGE, INV_LEAF, IOVA_DST,
				 IOVA_DST + PG - 1));
	ASSERT_EQ(0, copy(&e, IOVA_SRC, IOVA_DST));
	EXPECT_EQ(0, memcmp(page(self, 0), page(self, 2), XFER));
	EXPECT_EQ(0, page(self, 1)[0] | page(self, 1)[XFER - 1]);

	/* Cleared and invalidated (the whole domain): it faults */
	pt_clear(&p, IOVA_DST, 0);
	ASSERT_EQ(OK, invalidate(self, EDU_DOM, INV_DOMAIN, 0, 0, 0));
	memcpy(want, page(self, 2), XFER);
	ASSERT_EQ(0, edu_dma(e.bar, EDU_BUFFER, IOVA_DST, XFER, true));
	EXPECT_EDU_FAULT(VIRTIO_IOMMU_FAULT_R_MAPPING, IOVA_DST);
	EXPECT_EQ(0, memcmp(want, page(self, 2), XFER));

	/*
	 * DETACH, bypass off: the endpoint reaches nothing, not even the
	 * guest-physical page stage 2 maps (a DOMAIN fault).
	 */
	ASSERT_EQ(OK, detach(self, EDU_DOM, EDU_EP));
	ASSERT_EQ(0, edu_dma(e.bar, EDU_BUFFER, DATA(2), XFER, true));
	EXPECT_EDU_FAULT(VIRTIO_IOMMU_FAULT_R_DOMAIN, DATA(2));
	EXPECT_EQ(0, memcmp(want, page(self, 2), XFER));
	edu_down(&e);
}

/*
 * A detached endpoint translates what the config's bypass says, as every
 * endpoint does (virtio 1.3): off, nothing (its DMA faults with reason
 * DOMAIN, memory untouched), on, everything (stage 2 alone), each change
 * taking effect before SET_CONFIG returns.
 */
TEST_F(viommu, vfio_detached_follows_bypass)
{
	uint8_t want[XFER];
	struct edu e;

	if (vfio_ep_up(_metadata, self, &e, false))
		return;
	fill(page(self, 0), PG, 7);
	fill(page(self, 1), PG, 8);
	memcpy(want, page(self, 1), XFER);
	if (fault_events())
		sleep_ms(5100);	/* see vfio_dma_through_guest_table */
	ASSERT_EQ(0, edu_dma(e.bar, EDU_BUFFER, DATA(1), XFER, true));
	EXPECT_EDU_FAULT(VIRTIO_IOMMU_FAULT_R_DOMAIN, DATA(1));
	EXPECT_EQ(0, memcmp(want, page(self, 1), XFER));

	self->cfg.bypass = 1;
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &self->cfg));
	ASSERT_EQ(0, copy(&e, DATA(0), DATA(1)));
	EXPECT_EQ(0, memcmp(page(self, 0), page(self, 1), XFER));

	self->cfg.bypass = 0;
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &self->cfg));
	fill(page(self, 1), PG, 9);
	memcpy(want, page(self, 1), XFER);
	ASSERT_EQ(0, edu_dma(e.bar, EDU_BUFFER, DATA(1), XFER, true));
	EXPECT_EDU_FAULT(VIRTIO_IOMMU_FAULT_R_DOMAIN, DATA(1));
	EXPECT_EQ(0, memcmp(want, page(self, 1), XFER));
	edu_down(&e);
}

/*
 * The table moves: ATTACH_TABLE of another domain replaces the group's
 * table in one step, and closing the device takes it away.
 */
TEST_F(viommu, vfio_table_replaced_then_device_closed)
{
	struct edu e;
	struct pt p, q;

	if (edu_up(_metadata, self, &e, VFIO_TYPE1_NESTING_IOMMU))
		return;
	table_up(_metadata, self, 0);
	ASSERT_EQ(0, add_vfio_ep(self, EDU_EP, e.group));

	fill(page(self, 0), PG, 3);
	fill(page(self, 3), PG, 4);
	memset(page(self, 1), 0, PG);
	pt_init(&p, self->mem, PT_VTD, 3);
	ASSERT_EQ(0, pt_map(&p, IOVA_SRC, DATA(0), 0, PT_R));
	ASSERT_EQ(0, pt_map(&p, IOVA_DST, DATA(1), 0, PT_R | PT_W));
	ASSERT_EQ(OK, pt_attach(self, &p, EDU_DOM, EDU_EP));
	/* A second table, from the same pool after the first one's pages */
	q = p;
	q.root = pt_new_table(&q);
	ASSERT_NE(0, q.root);
	ASSERT_EQ(0, pt_map(&q, IOVA_SRC, DATA(3), 0, PT_R));
	ASSERT_EQ(0, pt_map(&q, IOVA_DST, DATA(1), 0, PT_R | PT_W));
	ASSERT_EQ(OK, pt_attach(self, &q, EDU_DOM2, EDU_EP));
	ASSERT_EQ(0, copy(&e, IOVA_SRC, IOVA_DST));
	EXPECT_EQ(0, memcmp(page(self, 3), page(self, 1), XFER));

	/* The device goes: the group is left with stage 2 alone */
	viommu_dev_down(self);
	memset(page(self, 1), 0, PG);
	ASSERT_EQ(0, copy(&e, DATA(0), DATA(1)));
	EXPECT_EQ(0, memcmp(page(self, 0), page(self, 1), XFER));
	edu_down(&e);
}

/*
 * A MAP domain: the container composes the domain's MAPs with stage 2 when
 * the endpoint joins it (a MAP made before, for another endpoint, works at
 * once), and each MAP and UNMAP reaches it before it completes: DMA lands
 * where the MAPs say, an unmapped page faults (an event, memory untouched),
 * a new MAP takes effect.  The VMM's own NESTING ioctls leave a stage 1
 * that vhost-iommu attached alone (EBUSY) until it is detached.
 */
TEST_F(viommu, vfio_dma_through_map_domain)
{
	struct vfio_iommu_nesting_invalidate inv = { .argsz = sizeof(inv) };
	uint8_t want[XFER];
	struct edu e;

	if (vfio_ep_up(_metadata, self, &e, false))
		return;
	fill(page(self, 0), PG, 6);
	memset(page(self, 1), 0, PG);
	memset(page(self, 2), 0, PG);

	ASSERT_EQ(OK, attach(self, EDU_DOM, 2, 0));
	ASSERT_EQ(OK, map(self, EDU_DOM, IOVA_SRC, IOVA_SRC + PG - 1, DATA(0),
			  VIRTIO_IOMMU_MAP_F_READ));
	ASSERT_EQ(OK, attach(self, EDU_DOM, EDU_EP, 0));
	ASSERT_EQ(OK, map(self, EDU_DOM, IOVA_DST, IOVA_DST + PG - 1, DATA(1),
			  RW));
	ASSERT_EQ(0, copy(&e, IOVA_SRC, IOVA_DST));
	EXPECT_EQ(0, memcmp(page(self, 0), page(self, 1), XFER));

	inv.group = edu_iommu_group();
	EXPECT_EQ(-1, ioctl(e.container, VFIO_IOMMU_NESTING_INVALIDATE, &inv));
	EXPECT_EQ(EBUSY, errno);

	/* Unmapped: the write faults (see vfio_dma_through_guest_table) */
	ASSERT_EQ(OK, unmap(self, EDU_DOM, IOVA_DST, IOVA_DST + PG - 1));
	if (fault_events())
		sleep_ms(5100);
	memcpy(want, page(self, 1), XFER);
	ASSERT_EQ(0, edu_dma(e.bar, EDU_BUFFER, IOVA_DST, XFER, true));
	EXPECT_EDU_FAULT(VIRTIO_IOMMU_FAULT_R_MAPPING, IOVA_DST);
	EXPECT_EQ(0, memcmp(want, page(self, 1), XFER));

	/* Mapped elsewhere: the next copy lands there */
	ASSERT_EQ(OK, map(self, EDU_DOM, IOVA_DST, IOVA_DST + PG - 1, DATA(2),
			  RW));
	ASSERT_EQ(0, copy(&e, IOVA_SRC, IOVA_DST));
	EXPECT_EQ(0, memcmp(page(self, 0), page(self, 2), XFER));
	EXPECT_EQ(0, memcmp(want, page(self, 1), XFER));

	/* Detached, it is still vhost-iommu's (it blocks); removed, not */
	ASSERT_EQ(OK, detach(self, EDU_DOM, EDU_EP));
	EXPECT_EQ(-1, ioctl(e.container, VFIO_IOMMU_NESTING_INVALIDATE, &inv));
	EXPECT_EQ(EBUSY, errno);
	EXPECT_EQ(0, ioctl(self->fd, VHOST_IOMMU_DEL_ENDPOINT,
			   &(uint32_t){ EDU_EP }));
	EXPECT_EQ(-1, ioctl(e.container, VFIO_IOMMU_NESTING_INVALIDATE, &inv));
	EXPECT_EQ(ENOENT, errno);
	edu_down(&e);
}

/*
 * A container that does not nest has no stage 1 to give: ATTACH and
 * ATTACH_TABLE of the endpoint are answered UNSUPP, and the endpoint stays
 * where it was.  A bypass domain is stage 2 alone, which any container
 * has.
 */
TEST_F(viommu, vfio_container_not_nesting)
{
	struct edu e;
	struct pt p;

	if (edu_up(_metadata, self, &e, VFIO_TYPE1v2_IOMMU))
		return;
	table_up(_metadata, self, 0);
	ASSERT_EQ(0, add_vfio_ep(self, EDU_EP, e.group));
	EXPECT_EQ(VIRTIO_IOMMU_S_UNSUPP, attach(self, EDU_DOM, EDU_EP, 0));
	pt_init(&p, self->mem, PT_VTD, 3);
	ASSERT_EQ(0, pt_map(&p, IOVA_SRC, DATA(0), 0, PT_R));
	EXPECT_EQ(VIRTIO_IOMMU_S_UNSUPP, pt_attach(self, &p, EDU_DOM, EDU_EP));
	/* Neither domain was left behind: the ID is free for a MAP domain */
	EXPECT_EQ(OK, attach(self, EDU_DOM, 2, 0));
	EXPECT_EQ(OK, map(self, EDU_DOM, 0, PG - 1, DATA(0), RW));

	fill(page(self, 0), PG, 5);
	memset(page(self, 1), 0, PG);
	EXPECT_EQ(OK, attach(self, EDU_DOM2, EDU_EP,
			     VIRTIO_IOMMU_ATTACH_F_BYPASS));
	ASSERT_EQ(0, copy(&e, DATA(0), DATA(1)));
	EXPECT_EQ(0, memcmp(page(self, 0), page(self, 1), XFER));
	edu_down(&e);
}

/*
 * Fault injection over the forwarding (vhost_iommu_fail_nth.h): each
 * allocation that ADD_ENDPOINT (in this thread) and ATTACH_TABLE,
 * INVALIDATE, DETACH, ATTACH to a MAP domain and MAP (in the vhost worker)
 * reach, vhost-iommu's and the container's, fails once in turn.  Each
 * answers ENOMEM or NOMEM, only when an allocation failed, or succeeds;
 * either way the edu's DMA goes where the answer says, and the step then
 * succeeds when sent again.
 */
/* Far from the others: new tables in stage 1 and in the shadow */
#define IOVA_DST2	0x05000000ULL

/*
 * Copy by DMA from @src to @dst through the edu, a new pattern in page 0
 * and pages 1-4 cleared first: the page the pattern landed in, or -1 for
 * none (the DMA faulted)
 */
static int landed(struct _test_data_viommu *self, struct edu *e,
		  uint64_t src, uint64_t dst)
{
	static uint32_t seed = 100;
	int i;

	fill(page(self, 0), PG, seed++);
	for (i = 1; i <= 4; i++)
		memset(page(self, i), 0, XFER);
	if (copy(e, src, dst))
		return -2;
	for (i = 1; i <= 4; i++)
		if (!memcmp(page(self, 0), page(self, i), XFER))
			return i;
	return -1;
}

enum { VF_TABLE, VF_INVAL, VF_DETACH, VF_MAP_ATTACH, VF_MAP, VF_NR };

static const char *const vf_names[VF_NR] = {
	"ATTACH_TABLE", "INVALIDATE a range", "DETACH from the table",
	"ATTACH to a MAP domain", "MAP",
};

/* Where each step's DMA lands once it succeeded, and once it failed */
static const int vf_lands[VF_NR][2] = {
	[VF_TABLE] = { 1, -1 },		/* attached, or still blocked */
	[VF_INVAL] = { 2, -1 },		/* the new page, or none */
	[VF_DETACH] = { -1, 2 },	/* blocked, or still attached */
	[VF_MAP_ATTACH] = { 3, -1 },
	[VF_MAP] = { 4, -1 },		/* mapped, or undone */
};

/* What a step changes before its request goes */
static void vf_prepare(struct __test_metadata *_metadata,
		       struct _test_data_viommu *self, struct pt *p, int step)
{
	switch (step) {
	case VF_INVAL:
		/* The range's recomposing allocates for the far page */
		pt_clear(p, IOVA_DST, 0);
		ASSERT_EQ(0, pt_map(p, IOVA_DST, DATA(2), 0, PT_R | PT_W));
		ASSERT_EQ(0, pt_map(p, IOVA_DST2, DATA(3), 0, PT_R | PT_W));
		break;
	case VF_MAP_ATTACH:
		/* A MAP domain, its MAPs made for another endpoint */
		ASSERT_EQ(OK, attach(self, EDU_DOM2, 2, 0));
		ASSERT_EQ(OK, map(self, EDU_DOM2, IOVA_SRC, IOVA_SRC + PG - 1,
				  DATA(0), VIRTIO_IOMMU_MAP_F_READ));
		ASSERT_EQ(OK, map(self, EDU_DOM2, IOVA_DST, IOVA_DST + PG - 1,
				  DATA(3), RW));
		break;
	}
}

static int vf_send(struct _test_data_viommu *self, struct pt *p, int step)
{
	switch (step) {
	case VF_TABLE:
		return pt_attach(self, p, EDU_DOM, EDU_EP);
	case VF_INVAL:
		return invalidate(self, EDU_DOM, INV_RANGE, INV_LEAF, IOVA_DST,
				  IOVA_DST2 + PG - 1);
	case VF_DETACH:
		return detach(self, EDU_DOM, EDU_EP);
	case VF_MAP_ATTACH:
		return attach(self, EDU_DOM2, EDU_EP, 0);
	default:
		return map(self, EDU_DOM2, IOVA_DST2, IOVA_DST2 + PG - 1,
			   DATA(4), RW);
	}
}

static uint64_t vf_dst(int step)
{
	return step == VF_MAP ? IOVA_DST2 : IOVA_DST;
}

TEST_F_TIMEOUT(viommu, vfio_fail_nth, 600)
{
	uint32_t one = 1, ep = EDU_EP;
	unsigned int s, k, n, failed, total = 0;
	int nth, ret, status, hit, want;
	pid_t worker;
	struct edu e;
	struct pt p;

	ret = fail_nth_setup(_metadata);
	ASSERT_NE(-2, ret);	/* required, and missing */
	if (ret)
		SKIP(return, "no fault injection in this kernel");
	if (edu_up(_metadata, self, &e, VFIO_TYPE1_NESTING_IOMMU))
		return;
	table_up(_metadata, self, 0);
	/* No page fault of this process may meet an armed failure */
	ASSERT_EQ(0, mlockall(MCL_CURRENT | MCL_FUTURE));

	/* ADD_ENDPOINT: ENOMEM leaves the group as it was, stage 2 alone */
	nth = open_fail_nth(syscall(SYS_gettid));
	ASSERT_LE(0, nth);
	failed = 0;
	for (n = 1; n < FAIL_NTH_MAX; n++) {
		fail_nth_set(_metadata, nth, n);
		ret = add_vfio_ep(self, EDU_EP, e.group);
		hit = fail_nth_hit(_metadata, nth);
		if (ret) {
			ASSERT_EQ(-ENOMEM, ret);
			ASSERT_TRUE(hit);
			EXPECT_EQ(1, landed(self, &e, DATA(0), DATA(1)));
			failed++;
			continue;
		}
		/* Added, detached, bypass off: blocked */
		EXPECT_EQ(-1, landed(self, &e, DATA(0), DATA(1)));
		ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_DEL_ENDPOINT, &ep));
		EXPECT_EQ(1, landed(self, &e, DATA(0), DATA(1)));
		if (!hit)
			break;
	}
	close(nth);
	TH_LOG("fail-nth %-24s %3u fault sites, %3u answered ENOMEM",
	       "ADD_ENDPOINT (VFIO)", n - 1, failed);
	ASSERT_GT(FAIL_NTH_MAX, n);
	EXPECT_LT(0, failed);

	/* The requests, each from a reset device and the steps before it */
	ASSERT_EQ(0, add_vfio_ep(self, EDU_EP, e.group));
	pt_init(&p, self->mem, PT_VTD, 3);
	worker = vhost_worker_tid();
	ASSERT_LT(0, worker);
	nth = open_fail_nth(worker);
	ASSERT_LE(0, nth);
	for (s = 0; s < VF_NR; s++) {
		failed = 0;
		for (n = 1; n < FAIL_NTH_MAX; n++) {
			ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
			ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING,
					   &one));
			pt_clear(&p, IOVA_SRC, 0);
			pt_clear(&p, IOVA_DST, 0);
			pt_clear(&p, IOVA_DST2, 0);
			ASSERT_EQ(0, pt_map(&p, IOVA_SRC, DATA(0), 0, PT_R));
			ASSERT_EQ(0, pt_map(&p, IOVA_DST, DATA(1), 0,
					    PT_R | PT_W));
			for (k = 0; k <= s; k++) {
				vf_prepare(_metadata, self, &p, k);
				if (k < s)
					ASSERT_EQ(OK, vf_send(self, &p, k));
			}
			fail_nth_set(_metadata, nth, n);
			status = vf_send(self, &p, s);
			hit = fail_nth_hit(_metadata, nth);
			if (status == VIRTIO_IOMMU_S_NOMEM) {
				/* Only a failed allocation gives NOMEM */
				ASSERT_TRUE(hit);
				failed++;
			} else {
				ASSERT_EQ(OK, status)
					TH_LOG("%s, fail-nth %u", vf_names[s],
					       n);
			}
			want = vf_lands[s][status != OK];
			ASSERT_EQ(want, landed(self, &e, IOVA_SRC, vf_dst(s)))
				TH_LOG("%s, fail-nth %u, status %d",
				       vf_names[s], n, status);
			/* And the queue still serves it */
			if (status != OK) {
				ASSERT_EQ(OK, vf_send(self, &p, s));
				EXPECT_EQ(vf_lands[s][0],
					  landed(self, &e, IOVA_SRC, vf_dst(s)));
			}
			if (!hit)
				break;
		}
		TH_LOG("fail-nth %-24s %3u fault sites, %3u answered NOMEM",
		       vf_names[s], n - 1, failed);
		ASSERT_GT(FAIL_NTH_MAX, n);
		total += failed;
	}
	close(nth);
	EXPECT_LT(0, total);
	munlockall();
	edu_down(&e);
}

TEST_HARNESS_MAIN
