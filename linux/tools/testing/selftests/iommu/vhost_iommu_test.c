// SPDX-License-Identifier: GPL-2.0-only
/*
 * vhost-iommu selftest: this program is both the VMM and the guest.
 *
 * As the VMM it owns the guest memory (an anonymous mapping), hands it to
 * /dev/vhost-iommu as the memory table, sets up the request and event
 * virtqueues and registers endpoints.  As the guest driver it writes
 * virtio-iommu requests into split virtqueues in that memory, kicks through
 * an eventfd, waits on the call eventfd and checks every answer against
 * virtio 1.3.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/vhost.h>
#include <linux/vhost_iommu.h>
#include <linux/virtio_config.h>
#include <linux/virtio_iommu.h>
#include <linux/virtio_ring.h>

#include "../kselftest_harness.h"

#define GPA_BASE	0x100000ULL	/* guest-physical base of our memory */
#define MEM_SIZE	0x100000UL
#define QSZ		64
#define PROBE_SIZE	512
#define NR_EPS		10
#define MAX_DOMAINS	8
#define MAX_MAPPINGS	64
#define PG		0x1000ULL

/* Offsets in guest memory */
#define OFF_VQ(q)	((q) * 0x4000UL)
#define OFF_AVAIL	0x1000UL
#define OFF_USED	0x2000UL
#define OFF_REQ		0x10000UL	/* request buffer */
#define OFF_RESP	0x11000UL	/* device-writable buffer */

struct vq {
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t avail_idx;
	uint16_t used_idx;
	int kick;
	int call;
};

struct answer {
	int done;		/* the device returned the buffer */
	uint32_t len;		/* used length */
	uint8_t status;		/* tail.status if len covers it */
};

static void *gpa_ptr(void *mem, uint64_t gpa)
{
	return (uint8_t *)mem + (gpa - GPA_BASE);
}

static int vq_setup(int fd, void *mem, unsigned int idx, struct vq *vq)
{
	uint8_t *base = (uint8_t *)mem + OFF_VQ(idx);
	struct vhost_vring_state num = { .index = idx, .num = QSZ };
	struct vhost_vring_state vbase = { .index = idx, .num = 0 };
	struct vhost_vring_addr addr = {
		.index = idx,
		.desc_user_addr = (uintptr_t)base,
		.avail_user_addr = (uintptr_t)(base + OFF_AVAIL),
		.used_user_addr = (uintptr_t)(base + OFF_USED),
	};
	struct vhost_vring_file kick, call;

	memset(vq, 0, sizeof(*vq));
	vq->desc = (void *)base;
	vq->avail = (void *)(base + OFF_AVAIL);
	vq->used = (void *)(base + OFF_USED);
	vq->kick = eventfd(0, EFD_NONBLOCK);
	vq->call = eventfd(0, EFD_NONBLOCK);
	if (vq->kick < 0 || vq->call < 0)
		return -1;
	kick = (struct vhost_vring_file){ .index = idx, .fd = vq->kick };
	call = (struct vhost_vring_file){ .index = idx, .fd = vq->call };
	if (ioctl(fd, VHOST_SET_VRING_NUM, &num) ||
	    ioctl(fd, VHOST_SET_VRING_BASE, &vbase) ||
	    ioctl(fd, VHOST_SET_VRING_ADDR, &addr) ||
	    ioctl(fd, VHOST_SET_VRING_KICK, &kick) ||
	    ioctl(fd, VHOST_SET_VRING_CALL, &call))
		return -1;
	return 0;
}

/* Publish @head, kick, and wait until the used index moves by @expect. */
static int vq_push_wait(struct vq *vq, uint16_t head, int expect)
{
	uint64_t one = 1, val;
	struct pollfd pfd = { .fd = vq->call, .events = POLLIN };
	int i;

	vq->avail->ring[vq->avail_idx % QSZ] = head;
	/* used_event (VIRTIO_RING_F_EVENT_IDX): call us for the next one */
	vq->avail->ring[QSZ] = vq->used_idx;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	vq->avail->idx = ++vq->avail_idx;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (write(vq->kick, &one, sizeof(one)) != sizeof(one))
		return -1;
	for (i = 0; i < 200; i++) {
		uint16_t idx = __atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE);

		if ((uint16_t)(idx - vq->used_idx) >= expect)
			return 0;
		if (poll(&pfd, 1, 10) > 0 && read(vq->call, &val, sizeof(val)) < 0)
			return -1;
	}
	return -1;	/* the device never answered */
}

struct seg {
	uint64_t gpa;
	uint32_t len;
	int write;
};

/* Queue a chain of @n segments; return the answer for it. */
static struct answer vq_chain(struct vq *vq, const struct seg *s, int n)
{
	struct answer a = { 0 };
	struct vring_used_elem *e;
	int i;

	for (i = 0; i < n; i++) {
		vq->desc[i].addr = s[i].gpa;
		vq->desc[i].len = s[i].len;
		vq->desc[i].flags = (s[i].write ? VRING_DESC_F_WRITE : 0) |
				    (i + 1 < n ? VRING_DESC_F_NEXT : 0);
		vq->desc[i].next = i + 1;
	}
	if (vq_push_wait(vq, 0, 1))
		return a;
	e = &vq->used->ring[vq->used_idx % QSZ];
	vq->used_idx++;
	a.done = e->id == 0;
	a.len = e->len;
	return a;
}

/*
 * Send @req (@out_len readable bytes) with @in_len writable bytes after it,
 * the tail at @tail_off of them.
 */
static struct answer do_req(void *mem, struct vq *vq, const void *req,
			    size_t out_len, size_t in_len, size_t tail_off)
{
	struct seg s[2] = {
		{ GPA_BASE + OFF_REQ, out_len, 0 },
		{ GPA_BASE + OFF_RESP, in_len, 1 },
	};
	uint8_t *resp = gpa_ptr(mem, GPA_BASE + OFF_RESP);
	struct answer a;

	memcpy(gpa_ptr(mem, GPA_BASE + OFF_REQ), req, out_len);
	memset(resp, 0xff, 0x1000);
	a = vq_chain(vq, s, 2);
	a.status = 0xff;
	if (a.done && a.len >= tail_off + 4)
		a.status = resp[tail_off];
	return a;
}

/* Status of a well-formed request, -1 if no answer or a used length 0. */
static int req_status(void *mem, struct vq *vq, const void *req, size_t size)
{
	struct answer a = do_req(mem, vq, req, size - 4, 4, 0);

	if (!a.done || a.len != 4)
		return -1;
	return a.status;
}

FIXTURE(viommu) {
	int fd;
	void *mem;
	struct vq rq, eq;
	struct vhost_iommu_config cfg;
};

static int add_ep(int fd, uint32_t id, struct vhost_iommu_resv_region *r,
		  uint32_t nr)
{
	struct vhost_iommu_endpoint ep = {
		.id = id, .nr_resv = nr, .resv_ptr = (uintptr_t)r,
	};

	return ioctl(fd, VHOST_IOMMU_ADD_ENDPOINT, &ep);
}

static struct vhost_iommu_resv_region msi_region = {
	.start = 0xfee00000, .end = 0xfeefffff,
	.subtype = VHOST_IOMMU_RESV_MEM_T_MSI,
};

static int open_dev(struct __test_metadata *_metadata)
{
	int fd = open("/dev/vhost-iommu", O_RDWR);

	if (fd < 0 && errno == ENOENT)
		SKIP(return -1, "no /dev/vhost-iommu (modprobe vhost_iommu)");
	return fd;
}

static void default_cfg(struct vhost_iommu_config *c)
{
	memset(c, 0, sizeof(*c));
	c->page_size_mask = ~(PG - 1);
	c->input_start = 0;
	c->input_end = (1ULL << 48) - 1;
	c->domain_start = 1;
	c->domain_end = 1000;
	c->probe_size = PROBE_SIZE;
	c->max_domains = MAX_DOMAINS;
	c->max_mappings = MAX_MAPPINGS;
}

FIXTURE_SETUP(viommu)
{
	struct vhost_memory_region *r;
	struct vhost_memory *m;
	uint64_t features;
	uint32_t one = 1;
	int i;

	self->fd = open_dev(_metadata);
	ASSERT_GE(self->fd, 0);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_SET_OWNER));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_GET_FEATURES, &features));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_SET_FEATURES, &features));
	self->mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->mem);
	m = calloc(1, sizeof(*m) + sizeof(*r));
	ASSERT_NE(NULL, m);
	m->nregions = 1;
	r = &m->regions[0];
	r->guest_phys_addr = GPA_BASE;
	r->memory_size = MEM_SIZE;
	r->userspace_addr = (uintptr_t)self->mem;
	ASSERT_EQ(0, ioctl(self->fd, VHOST_SET_MEM_TABLE, m));
	free(m);
	ASSERT_EQ(0, vq_setup(self->fd, self->mem, 0, &self->rq));
	ASSERT_EQ(0, vq_setup(self->fd, self->mem, 1, &self->eq));
	default_cfg(&self->cfg);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &self->cfg));
	ASSERT_EQ(0, add_ep(self->fd, 1, &msi_region, 1));
	for (i = 2; i <= NR_EPS; i++)
		ASSERT_EQ(0, add_ep(self->fd, i, NULL, 0));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
}

FIXTURE_TEARDOWN(viommu)
{
	if (self->fd >= 0)
		close(self->fd);
	if (self->mem && self->mem != MAP_FAILED)
		munmap(self->mem, MEM_SIZE);
}

/* Request builders */
static int attach(struct _test_data_viommu *self, uint32_t dom, uint32_t ep,
		  uint32_t flags)
{
	struct virtio_iommu_req_attach r = {
		.head.type = VIRTIO_IOMMU_T_ATTACH,
		.domain = dom, .endpoint = ep, .flags = flags,
	};

	return req_status(self->mem, &self->rq, &r, sizeof(r));
}

static int detach(struct _test_data_viommu *self, uint32_t dom, uint32_t ep)
{
	struct virtio_iommu_req_detach r = {
		.head.type = VIRTIO_IOMMU_T_DETACH, .domain = dom, .endpoint = ep,
	};

	return req_status(self->mem, &self->rq, &r, sizeof(r));
}

static int map(struct _test_data_viommu *self, uint32_t dom, uint64_t start,
	       uint64_t end, uint64_t phys, uint32_t flags)
{
	struct virtio_iommu_req_map r = {
		.head.type = VIRTIO_IOMMU_T_MAP, .domain = dom,
		.virt_start = start, .virt_end = end, .phys_start = phys,
		.flags = flags,
	};

	return req_status(self->mem, &self->rq, &r, sizeof(r));
}

static int unmap(struct _test_data_viommu *self, uint32_t dom, uint64_t start,
		 uint64_t end)
{
	struct virtio_iommu_req_unmap r = {
		.head.type = VIRTIO_IOMMU_T_UNMAP, .domain = dom,
		.virt_start = start, .virt_end = end,
	};

	return req_status(self->mem, &self->rq, &r, sizeof(r));
}

/* 0 and the translation, or -errno */
static int xlate(struct _test_data_viommu *self, uint32_t ep, uint64_t iova,
		 struct vhost_iommu_translate *t)
{
	memset(t, 0, sizeof(*t));
	t->endpoint = ep;
	t->iova = iova;
	return ioctl(self->fd, VHOST_IOMMU_TRANSLATE, t) ? -errno : 0;
}

static int mapped(struct _test_data_viommu *self, uint32_t ep, uint64_t iova)
{
	struct vhost_iommu_translate t;

	return xlate(self, ep, iova, &t) == 0;
}

#define OK	VIRTIO_IOMMU_S_OK
#define RW	(VIRTIO_IOMMU_MAP_F_READ | VIRTIO_IOMMU_MAP_F_WRITE)

TEST_F(viommu, features_offered)
{
	uint64_t f;

	ASSERT_EQ(0, ioctl(self->fd, VHOST_GET_FEATURES, &f));
	EXPECT_TRUE(f & (1ULL << VIRTIO_F_VERSION_1));
	EXPECT_TRUE(f & (1ULL << VIRTIO_IOMMU_F_MAP_UNMAP));
	EXPECT_TRUE(f & (1ULL << VIRTIO_IOMMU_F_PROBE));
	EXPECT_TRUE(f & (1ULL << VIRTIO_IOMMU_F_INPUT_RANGE));
	EXPECT_TRUE(f & (1ULL << VIRTIO_IOMMU_F_DOMAIN_RANGE));
	EXPECT_TRUE(f & (1ULL << VIRTIO_IOMMU_F_BYPASS_CONFIG));
	/* Legacy BYPASS SHOULD NOT come with BYPASS_CONFIG; MMIO unsupported */
	EXPECT_FALSE(f & (1ULL << VIRTIO_IOMMU_F_BYPASS));
	EXPECT_FALSE(f & (1ULL << VIRTIO_IOMMU_F_MMIO));
}

/* ATTACH */
TEST_F(viommu, attach_ok)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, attach(self, 1, 2, 0));	/* two endpoints, one domain */
	EXPECT_EQ(OK, attach(self, 1, 1, 0));	/* again: nothing changes */
}

TEST_F(viommu, attach_unknown_endpoint_noent)
{
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT, attach(self, 1, 999, 0));
}

TEST_F(viommu, attach_domain_out_of_range)
{
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE, attach(self, 0, 1, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE, attach(self, 1001, 1, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE, attach(self, 0xffffffff, 1, 0));
}

TEST_F(viommu, attach_reserved_inval)
{
	struct virtio_iommu_req_attach r = {
		.head.type = VIRTIO_IOMMU_T_ATTACH, .domain = 1, .endpoint = 1,
	};

	r.reserved[3] = 1;
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  req_status(self->mem, &self->rq, &r, sizeof(r)));
	EXPECT_FALSE(mapped(self, 1, 0));
}

TEST_F(viommu, attach_unknown_flag_inval)
{
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, attach(self, 1, 1, 1 << 1));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, attach(self, 1, 1, 1u << 31));
}

TEST_F(viommu, attach_bypass)
{
	struct vhost_iommu_translate t;

	EXPECT_EQ(OK, attach(self, 5, 1, VIRTIO_IOMMU_ATTACH_F_BYPASS));
	ASSERT_EQ(0, xlate(self, 1, 0x12345000, &t));
	EXPECT_EQ(0x12345000, t.gpa);
	EXPECT_TRUE(t.perm & VHOST_IOMMU_PERM_BYPASS);
	/* MAP and UNMAP on a bypass domain */
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, map(self, 5, 0, PG - 1, 0, RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, unmap(self, 5, 0, PG - 1));
	/* A domain is either bypass or not */
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, attach(self, 5, 2, 0));
	EXPECT_EQ(OK, attach(self, 6, 2, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  attach(self, 6, 3, VIRTIO_IOMMU_ATTACH_F_BYPASS));
}

TEST_F(viommu, reattach_moves_endpoint)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, map(self, 1, 0, PG - 1, GPA_BASE, RW));
	EXPECT_TRUE(mapped(self, 1, 0));
	/* ATTACH to another domain detaches first: domain 1 disappears */
	EXPECT_EQ(OK, attach(self, 2, 1, 0));
	EXPECT_FALSE(mapped(self, 1, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT, map(self, 1, 0, PG - 1, 0, RW));
}

TEST_F(viommu, domain_limit_nomem)
{
	int i;

	for (i = 1; i <= MAX_DOMAINS; i++)
		EXPECT_EQ(OK, attach(self, i, i, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOMEM, attach(self, MAX_DOMAINS + 1,
					       MAX_DOMAINS + 1, 0));
	/* An existing domain still takes endpoints */
	EXPECT_EQ(OK, attach(self, 1, MAX_DOMAINS + 1, 0));
	/* One goes, one more fits */
	EXPECT_EQ(OK, detach(self, 2, 2));
	EXPECT_EQ(OK, attach(self, MAX_DOMAINS + 2, 2, 0));
}

/* DETACH */
TEST_F(viommu, detach_ok_domain_disappears)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, attach(self, 1, 2, 0));
	EXPECT_EQ(OK, map(self, 1, 0, PG - 1, GPA_BASE, RW));
	EXPECT_EQ(OK, detach(self, 1, 1));
	EXPECT_FALSE(mapped(self, 1, 0));
	EXPECT_TRUE(mapped(self, 2, 0));	/* domain lives on */
	EXPECT_EQ(OK, detach(self, 1, 2));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT, map(self, 1, PG, 2 * PG - 1, 0, RW));
}

TEST_F(viommu, detach_not_attached_inval)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, attach(self, 2, 2, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, detach(self, 1, 3));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, detach(self, 1, 2));
}

TEST_F(viommu, detach_unknown_noent)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT, detach(self, 1, 999));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT, detach(self, 7, 1));
}

TEST_F(viommu, detach_reserved_inval)
{
	struct virtio_iommu_req_detach r = {
		.head.type = VIRTIO_IOMMU_T_DETACH, .domain = 1, .endpoint = 1,
	};

	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	r.reserved[7] = 0x80;
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  req_status(self->mem, &self->rq, &r, sizeof(r)));
}

/* MAP */
TEST_F(viommu, map_translates)
{
	struct vhost_iommu_translate t;

	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, map(self, 1, 0x200000, 0x5fffff, 0x40000000, RW));
	EXPECT_EQ(OK, map(self, 1, 0x10000, 0x10fff, 0x7000,
			  VIRTIO_IOMMU_MAP_F_READ));
	ASSERT_EQ(0, xlate(self, 1, 0x345678, &t));
	EXPECT_EQ(0x40145678, t.gpa);
	EXPECT_EQ(0x5fffff - 0x345678 + 1, t.size);
	EXPECT_EQ(VHOST_IOMMU_PERM_READ | VHOST_IOMMU_PERM_WRITE, t.perm);
	ASSERT_EQ(0, xlate(self, 1, 0x10010, &t));
	EXPECT_EQ(0x7010, t.gpa);
	EXPECT_EQ(VHOST_IOMMU_PERM_READ, t.perm);
	EXPECT_EQ(-ENOENT, xlate(self, 1, 0x11000, &t));
	EXPECT_EQ(-ENOENT, xlate(self, 1, 0x600000, &t));
	/* The last IOVA of the input range */
	EXPECT_EQ(OK, map(self, 1, (1ULL << 48) - PG, (1ULL << 48) - 1, 0, RW));
	EXPECT_TRUE(mapped(self, 1, (1ULL << 48) - 1));
}

TEST_F(viommu, map_no_access)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, map(self, 1, 0, PG - 1, 0, 0));
	EXPECT_FALSE(mapped(self, 1, 0));
	/* It is still a mapping: overlaps are refused, unmap removes it */
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, map(self, 1, 0, PG - 1, 0, RW));
	EXPECT_EQ(OK, unmap(self, 1, 0, PG - 1));
	EXPECT_EQ(OK, map(self, 1, 0, PG - 1, 0, RW));
}

TEST_F(viommu, map_misaligned_range)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE, map(self, 1, 0x10, PG - 1, 0, RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE, map(self, 1, 0, PG - 2, 0, RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE, map(self, 1, 0, PG, 0, RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE, map(self, 1, 0, PG - 1, 0x800, RW));
	EXPECT_FALSE(mapped(self, 1, 0));
}

TEST_F(viommu, map_end_before_start_inval)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, map(self, 1, 2 * PG, PG - 1, 0, RW));
}

TEST_F(viommu, map_outside_input_range)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE,
		  map(self, 1, 1ULL << 48, (1ULL << 48) + PG - 1, 0, RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE,
		  map(self, 1, (1ULL << 48) - PG, (1ULL << 48) + PG - 1, 0, RW));
	/* Physical range wrapping around */
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE,
		  map(self, 1, 0, 2 * PG - 1, ~(PG - 1), RW));
}

TEST_F(viommu, map_overlap_inval)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, map(self, 1, 4 * PG, 8 * PG - 1, 0, RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, map(self, 1, 4 * PG, 8 * PG - 1, 0, RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, map(self, 1, 0, 5 * PG - 1, 0, RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, map(self, 1, 7 * PG, 9 * PG - 1, 0, RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, map(self, 1, 5 * PG, 6 * PG - 1, 0, RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, map(self, 1, 0, 16 * PG - 1, 0, RW));
	EXPECT_EQ(OK, map(self, 1, 8 * PG, 9 * PG - 1, 0, RW));	/* adjacent */
	EXPECT_EQ(OK, map(self, 1, 3 * PG, 4 * PG - 1, 0, RW));
}

TEST_F(viommu, map_unknown_flags_inval)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	/* MMIO is not offered, so the flag is unknown */
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  map(self, 1, 0, PG - 1, 0, RW | VIRTIO_IOMMU_MAP_F_MMIO));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, map(self, 1, 0, PG - 1, 0, 1 << 3));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, map(self, 1, 0, PG - 1, 0, 1u << 31));
	EXPECT_FALSE(mapped(self, 1, 0));
}

TEST_F(viommu, map_unknown_domain_noent)
{
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT, map(self, 3, 0, PG - 1, 0, RW));
}

TEST_F(viommu, map_limit_nomem)
{
	int i;

	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, attach(self, 2, 2, 0));
	for (i = 0; i < MAX_MAPPINGS / 2; i++) {
		ASSERT_EQ(OK, map(self, 1, i * PG, i * PG + PG - 1, 0, RW));
		ASSERT_EQ(OK, map(self, 2, i * PG, i * PG + PG - 1, 0, RW));
	}
	/* The limit is per device, over all its domains */
	EXPECT_EQ(VIRTIO_IOMMU_S_NOMEM, map(self, 1, 1ULL << 30,
					    (1ULL << 30) + PG - 1, 0, RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOMEM, map(self, 2, 1ULL << 30,
					    (1ULL << 30) + PG - 1, 0, RW));
	EXPECT_EQ(OK, unmap(self, 2, 0, PG - 1));
	EXPECT_EQ(OK, map(self, 1, 1ULL << 30, (1ULL << 30) + PG - 1, 0, RW));
	/* A domain going away gives its mappings back */
	EXPECT_EQ(OK, detach(self, 2, 2));
	EXPECT_EQ(OK, map(self, 1, 1ULL << 31, (1ULL << 31) + PG - 1, 0, RW));
}

/*
 * UNMAP, the spec's examples with 4 KiB pages standing for its units:
 * (a) map(0,9) unmap(0,9): removed
 * (b) map(0,4) map(5,9) unmap(0,9): both removed
 * (c) map(0,9) unmap(0,4): RANGE, nothing removed
 * (d) map(0,4) map(10,14) unmap(0,14): both removed, the hole is fine
 * (e) unmap(0,9) with nothing mapped: OK
 * (f) map(0,4) map(5,9) unmap(0,4): only the first removed
 * (g) map(5,9) unmap(0,7) or unmap(7,14): RANGE, nothing removed
 */
#define U(n)	((uint64_t)(n) * PG)

TEST_F(viommu, unmap_a_exact)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, map(self, 1, U(0), U(10) - 1, 0, RW));
	EXPECT_EQ(OK, unmap(self, 1, U(0), U(10) - 1));
	EXPECT_FALSE(mapped(self, 1, U(0)));
	EXPECT_FALSE(mapped(self, 1, U(9)));
}

TEST_F(viommu, unmap_b_two_whole)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, map(self, 1, U(0), U(5) - 1, 0, RW));
	EXPECT_EQ(OK, map(self, 1, U(5), U(10) - 1, 0, RW));
	EXPECT_EQ(OK, unmap(self, 1, U(0), U(10) - 1));
	EXPECT_FALSE(mapped(self, 1, U(0)));
	EXPECT_FALSE(mapped(self, 1, U(5)));
}

TEST_F(viommu, unmap_c_split_range)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, map(self, 1, U(0), U(10) - 1, 0, RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE, unmap(self, 1, U(0), U(5) - 1));
	EXPECT_TRUE(mapped(self, 1, U(0)));
	EXPECT_TRUE(mapped(self, 1, U(9)));
}

TEST_F(viommu, unmap_d_hole)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, map(self, 1, U(0), U(5) - 1, 0, RW));
	EXPECT_EQ(OK, map(self, 1, U(10), U(15) - 1, 0, RW));
	EXPECT_EQ(OK, unmap(self, 1, U(0), U(15) - 1));
	EXPECT_FALSE(mapped(self, 1, U(0)));
	EXPECT_FALSE(mapped(self, 1, U(10)));
}

TEST_F(viommu, unmap_e_nothing)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, unmap(self, 1, U(0), U(10) - 1));
}

TEST_F(viommu, unmap_f_first_only)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, map(self, 1, U(0), U(5) - 1, 0, RW));
	EXPECT_EQ(OK, map(self, 1, U(5), U(10) - 1, 0, RW));
	EXPECT_EQ(OK, unmap(self, 1, U(0), U(5) - 1));
	EXPECT_FALSE(mapped(self, 1, U(0)));
	EXPECT_TRUE(mapped(self, 1, U(5)));
}

TEST_F(viommu, unmap_g_split_either_end)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, map(self, 1, U(0), U(2) - 1, 0, RW));
	EXPECT_EQ(OK, map(self, 1, U(5), U(10) - 1, 0, RW));
	/* The whole first mapping would go, but the second would split */
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE, unmap(self, 1, U(0), U(8) - 1));
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE, unmap(self, 1, U(7), U(15) - 1));
	EXPECT_TRUE(mapped(self, 1, U(0)));
	EXPECT_TRUE(mapped(self, 1, U(5)));
	EXPECT_TRUE(mapped(self, 1, U(9)));
}

TEST_F(viommu, unmap_bad_input)
{
	struct virtio_iommu_req_unmap r = {
		.head.type = VIRTIO_IOMMU_T_UNMAP, .domain = 1,
		.virt_start = 0, .virt_end = PG - 1,
	};

	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, map(self, 1, 0, PG - 1, 0, RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT, unmap(self, 9, 0, PG - 1));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, unmap(self, 1, PG, 0));
	r.reserved[0] = 1;
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  req_status(self->mem, &self->rq, &r, sizeof(r)));
	EXPECT_TRUE(mapped(self, 1, 0));
	/* The whole space, unaligned: fine, it covers the mapping */
	EXPECT_EQ(OK, unmap(self, 1, 0, ~0ULL));
	EXPECT_FALSE(mapped(self, 1, 0));
}

/* PROBE */
static struct answer probe(struct _test_data_viommu *self, uint32_t ep,
			   uint8_t reserved0)
{
	struct virtio_iommu_req_probe r = {
		.head.type = VIRTIO_IOMMU_T_PROBE, .endpoint = ep,
	};

	r.reserved[0] = reserved0;
	return do_req(self->mem, &self->rq, &r, sizeof(r), PROBE_SIZE + 4,
		      PROBE_SIZE);
}

TEST_F(viommu, probe_reports_resv_mem)
{
	uint8_t *props = gpa_ptr(self->mem, GPA_BASE + OFF_RESP);
	struct virtio_iommu_probe_resv_mem *p = (void *)props;
	struct answer a = probe(self, 1, 0);
	int i;

	ASSERT_TRUE(a.done);
	EXPECT_EQ(PROBE_SIZE + 4, a.len);
	EXPECT_EQ(OK, a.status);
	EXPECT_EQ(VIRTIO_IOMMU_PROBE_T_RESV_MEM, p->head.type);
	EXPECT_EQ(sizeof(*p) - 4, p->head.length);
	EXPECT_EQ(VIRTIO_IOMMU_RESV_MEM_T_MSI, p->subtype);
	EXPECT_EQ(0xfee00000, p->start);
	EXPECT_EQ(0xfeefffff, p->end);
	/* Then type NONE: zero up to probe_size */
	for (i = sizeof(*p); i < PROBE_SIZE; i++)
		ASSERT_EQ(0, props[i]);

	a = probe(self, 2, 0);
	EXPECT_EQ(OK, a.status);
	for (i = 0; i < PROBE_SIZE; i++)
		ASSERT_EQ(0, props[i]);
}

TEST_F(viommu, probe_bad_input)
{
	struct virtio_iommu_req_probe r = {
		.head.type = VIRTIO_IOMMU_T_PROBE, .endpoint = 1,
	};
	struct answer a;

	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT, probe(self, 77, 0).status);
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, probe(self, 1, 1).status);
	/* Too little room for properties and tail: used length 0 */
	a = do_req(self->mem, &self->rq, &r, sizeof(r), PROBE_SIZE, 0);
	EXPECT_TRUE(a.done);
	EXPECT_EQ(0, a.len);
}

/* Framing and malformed chains */
TEST_F(viommu, unknown_type_used_len_0)
{
	uint8_t *resp = gpa_ptr(self->mem, GPA_BASE + OFF_RESP);
	struct virtio_iommu_req_attach r = {
		.domain = 1, .endpoint = 1,
	};
	uint8_t types[] = { 0, 6, 7, 0x42, 0xff };
	unsigned int i;

	for (i = 0; i < sizeof(types); i++) {
		struct answer a;

		r.head.type = types[i];
		a = do_req(self->mem, &self->rq, &r, sizeof(r) - 4, 4, 0);
		EXPECT_TRUE(a.done);
		EXPECT_EQ(0, a.len);
		EXPECT_EQ(0xff, resp[0]);	/* buffer left unwritten */
	}
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
}

TEST_F(viommu, head_reserved_inval)
{
	struct virtio_iommu_req_attach r = {
		.head.type = VIRTIO_IOMMU_T_ATTACH, .domain = 1, .endpoint = 1,
	};

	r.head.reserved[1] = 1;
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  req_status(self->mem, &self->rq, &r, sizeof(r)));
}

TEST_F(viommu, short_request_inval)
{
	struct virtio_iommu_req_map r = {
		.head.type = VIRTIO_IOMMU_T_MAP, .domain = 1,
		.virt_end = PG - 1, .flags = RW,
	};
	struct answer a;

	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	a = do_req(self->mem, &self->rq, &r, sizeof(r) - 8, 4, 0);
	EXPECT_EQ(4, a.len);
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, a.status);
	EXPECT_FALSE(mapped(self, 1, 0));
	/* Only the head: still a known type, still INVAL */
	a = do_req(self->mem, &self->rq, &r, 4, 4, 0);
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, a.status);
	/* Not even a head: used length 0 */
	a = do_req(self->mem, &self->rq, &r, 2, 4, 0);
	EXPECT_TRUE(a.done);
	EXPECT_EQ(0, a.len);
}

TEST_F(viommu, short_tail_used_len_0)
{
	struct virtio_iommu_req_attach r = {
		.head.type = VIRTIO_IOMMU_T_ATTACH, .domain = 1, .endpoint = 1,
	};
	struct answer a = do_req(self->mem, &self->rq, &r, sizeof(r) - 4, 2, 0);

	EXPECT_TRUE(a.done);
	EXPECT_EQ(0, a.len);
	EXPECT_FALSE(mapped(self, 1, 0));
	/* Nothing was done: the domain does not exist */
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT, map(self, 1, 0, PG - 1, 0, RW));
}

TEST_F(viommu, request_split_over_descriptors)
{
	struct virtio_iommu_req_map r = {
		.head.type = VIRTIO_IOMMU_T_MAP, .domain = 1,
		.virt_start = 0, .virt_end = PG - 1, .phys_start = GPA_BASE,
		.flags = RW,
	};
	uint64_t q = GPA_BASE + OFF_REQ;
	struct seg s[] = {
		{ q, 1, 0 }, { q + 1, 6, 0 }, { q + 7, 29, 0 },
		{ GPA_BASE + OFF_RESP, 1, 1 }, { GPA_BASE + OFF_RESP + 1, 3, 1 },
	};
	uint8_t *resp = gpa_ptr(self->mem, GPA_BASE + OFF_RESP);
	struct answer a;

	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	memcpy(gpa_ptr(self->mem, q), &r, sizeof(r) - 4);
	memset(resp, 0xff, 4);
	a = vq_chain(&self->rq, s, 5);
	EXPECT_TRUE(a.done);
	EXPECT_EQ(4, a.len);
	EXPECT_EQ(OK, resp[0]);
	EXPECT_EQ(0, resp[1]);
	EXPECT_TRUE(mapped(self, 1, 0));
}

TEST_F(viommu, descriptor_outside_memory)
{
	struct seg s[] = {
		{ GPA_BASE + MEM_SIZE - 8, 36, 0 },	/* runs off the end */
		{ GPA_BASE + OFF_RESP, 4, 1 },
	};
	struct seg s2[] = {
		{ 0x1000, 36, 0 },			/* below the table */
		{ GPA_BASE + OFF_RESP, 4, 1 },
	};
	struct answer a;

	a = vq_chain(&self->rq, s, 2);
	EXPECT_TRUE(a.done);
	EXPECT_EQ(0, a.len);
	a = vq_chain(&self->rq, s2, 2);
	EXPECT_TRUE(a.done);
	EXPECT_EQ(0, a.len);
	/* The queue still works */
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
}

TEST_F(viommu, descriptor_loop)
{
	struct vq *vq = &self->rq;
	struct answer a = { 0 };

	vq->desc[0] = (struct vring_desc){ GPA_BASE + OFF_REQ, 8,
					   VRING_DESC_F_NEXT, 1 };
	vq->desc[1] = (struct vring_desc){ GPA_BASE + OFF_REQ, 8,
					   VRING_DESC_F_NEXT, 0 };
	ASSERT_EQ(0, vq_push_wait(vq, 0, 1));
	a.len = vq->used->ring[vq->used_idx % QSZ].len;
	EXPECT_EQ(0, vq->used->ring[vq->used_idx % QSZ].id);
	vq->used_idx++;
	EXPECT_EQ(0, a.len);
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
}

TEST_F(viommu, readable_after_writable)
{
	struct seg s[] = {
		{ GPA_BASE + OFF_RESP, 4, 1 },
		{ GPA_BASE + OFF_REQ, 20, 0 },
	};
	struct answer a = vq_chain(&self->rq, s, 2);

	EXPECT_TRUE(a.done);
	EXPECT_EQ(0, a.len);
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
}

TEST_F(viommu, bad_head_index_skipped)
{
	struct vq *vq = &self->rq;

	/* A head past the ring: dropped without a used entry */
	vq->avail->ring[vq->avail_idx % QSZ] = QSZ + 3;
	vq->avail->idx = ++vq->avail_idx;
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
}

TEST_F(viommu, batch_of_requests)
{
	struct vq *vq = &self->rq;
	struct virtio_iommu_req_map *r;
	uint8_t *resp = gpa_ptr(self->mem, GPA_BASE + OFF_RESP);
	uint64_t one = 1;
	int i, n = 16;

	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	for (i = 0; i < n; i++) {
		r = gpa_ptr(self->mem, GPA_BASE + OFF_REQ + i * 64);
		memset(r, 0, sizeof(*r));
		r->head.type = VIRTIO_IOMMU_T_MAP;
		r->domain = 1;
		r->virt_start = U(i);
		r->virt_end = U(i + 1) - 1;
		r->flags = RW;
		vq->desc[2 * i] = (struct vring_desc){
			GPA_BASE + OFF_REQ + i * 64, sizeof(*r) - 4,
			VRING_DESC_F_NEXT, 2 * i + 1 };
		vq->desc[2 * i + 1] = (struct vring_desc){
			GPA_BASE + OFF_RESP + i * 4, 4, VRING_DESC_F_WRITE, 0 };
		vq->avail->ring[(vq->avail_idx + i) % QSZ] = 2 * i;
	}
	memset(resp, 0xff, n * 4);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	vq->avail_idx += n;
	vq->avail->idx = vq->avail_idx;
	ASSERT_EQ(sizeof(one), write(vq->kick, &one, sizeof(one)));
	for (i = 0; i < 500 && (uint16_t)(vq->used->idx - vq->used_idx) < n; i++)
		usleep(2000);
	ASSERT_EQ(n, (uint16_t)(vq->used->idx - vq->used_idx));
	for (i = 0; i < n; i++) {
		struct vring_used_elem *e = &vq->used->ring[vq->used_idx % QSZ];

		EXPECT_EQ(2 * i, e->id);	/* in order, here */
		EXPECT_EQ(4, e->len);
		EXPECT_EQ(OK, resp[4 * i]);
		vq->used_idx++;
		EXPECT_TRUE(mapped(self, 1, U(i)));
	}
}

/* Config, endpoints and device state through ioctls */
TEST_F(viommu, config_bypass_while_running)
{
	struct vhost_iommu_config c = self->cfg;
	struct vhost_iommu_translate t;

	EXPECT_EQ(-ENOENT, xlate(self, 3, 0x1000, &t));
	c.bypass = 1;
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	ASSERT_EQ(0, xlate(self, 3, 0x1000, &t));
	EXPECT_EQ(0x1000, t.gpa);
	EXPECT_TRUE(t.perm & VHOST_IOMMU_PERM_BYPASS);
	/* Attached endpoints translate through their domain */
	EXPECT_EQ(OK, attach(self, 1, 3, 0));
	EXPECT_EQ(-ENOENT, xlate(self, 3, 0x1000, &t));
	/* Anything else may not change while running */
	c.page_size_mask = ~0xffffULL;
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(EBUSY, errno);
	c = self->cfg;
	c.bypass = 2;
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_GET_CONFIG, &c));
	EXPECT_EQ(1, c.bypass);
	EXPECT_EQ(MAX_DOMAINS, c.max_domains);
}

TEST_F(viommu, stop_resets_device)
{
	uint32_t zero = 0, one = 1;

	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, map(self, 1, 0, PG - 1, 0, RW));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &zero));
	EXPECT_FALSE(mapped(self, 1, 0));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT, map(self, 1, 0, PG - 1, 0, RW));
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
}

TEST_F(viommu, del_endpoint_detaches)
{
	uint32_t id = 1;

	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, map(self, 1, 0, PG - 1, 0, RW));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_DEL_ENDPOINT, &id));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT, map(self, 1, PG, 2 * PG - 1, 0, RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT, attach(self, 1, 1, 0));
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_IOMMU_DEL_ENDPOINT, &id));
	EXPECT_EQ(ENOENT, errno);
	/* Hotplug while running */
	ASSERT_EQ(0, add_ep(self->fd, 1, NULL, 0));
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
}

TEST_F(viommu, endpoint_ioctl_errors)
{
	struct vhost_iommu_resv_region many[VHOST_IOMMU_MAX_RESV + 1] = { 0 };
	struct vhost_iommu_resv_region bad = { .start = 2, .end = 1 };
	struct vhost_iommu_endpoint ep = { .id = 50 };

	EXPECT_EQ(-1, add_ep(self->fd, 1, NULL, 0));
	EXPECT_EQ(EEXIST, errno);
	EXPECT_EQ(-1, add_ep(self->fd, 50, many, VHOST_IOMMU_MAX_RESV + 1));
	EXPECT_EQ(EINVAL, errno);
	/* 32 regions of 24 bytes do not fit a 512-byte probe buffer */
	EXPECT_EQ(-1, add_ep(self->fd, 50, many, VHOST_IOMMU_MAX_RESV));
	EXPECT_EQ(ENOSPC, errno);
	EXPECT_EQ(-1, add_ep(self->fd, 50, &bad, 1));
	EXPECT_EQ(EINVAL, errno);
	bad = (struct vhost_iommu_resv_region){ .start = 0, .end = 1,
						.subtype = 9 };
	EXPECT_EQ(-1, add_ep(self->fd, 50, &bad, 1));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, add_ep(self->fd, 50, (void *)8, 1));
	EXPECT_EQ(EFAULT, errno);
	ep.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_IOMMU_ADD_ENDPOINT, &ep));
	EXPECT_EQ(EINVAL, errno);
	ep.flags = 0;
	ep.reserved2[1] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_IOMMU_ADD_ENDPOINT, &ep));
	EXPECT_EQ(EINVAL, errno);
	/* Still healthy */
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
}

TEST_F(viommu, running_refuses_setup_calls)
{
	uint64_t f = 0;
	uint32_t one = 1;
	struct vhost_vring_state num = { .index = 0, .num = 32 };

	EXPECT_EQ(-1, ioctl(self->fd, VHOST_SET_FEATURES, &f));
	EXPECT_EQ(EBUSY, errno);
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_SET_VRING_NUM, &num));
	EXPECT_EQ(EBUSY, errno);
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
	EXPECT_EQ(EBUSY, errno);
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
}

/* Calls in the wrong order, on a fresh device */
TEST(ioctl_order)
{
	struct vhost_iommu_config c;
	uint64_t f = 1ULL << 63;
	uint32_t one = 1, two = 2;
	int fd = open_dev(_metadata);

	ASSERT_GE(fd, 0);
	default_cfg(&c);
	/* Not the owner yet */
	EXPECT_EQ(-1, ioctl(fd, VHOST_IOMMU_SET_RUNNING, &one));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, ioctl(fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(EPERM, errno);
	EXPECT_EQ(-1, add_ep(fd, 1, NULL, 0));
	EXPECT_EQ(EPERM, errno);
	ASSERT_EQ(0, ioctl(fd, VHOST_SET_OWNER));
	EXPECT_EQ(-1, ioctl(fd, VHOST_SET_OWNER));
	EXPECT_EQ(EBUSY, errno);
	EXPECT_EQ(-1, ioctl(fd, VHOST_SET_FEATURES, &f));
	EXPECT_EQ(EOPNOTSUPP, errno);
	/* No config yet */
	EXPECT_EQ(-1, ioctl(fd, VHOST_IOMMU_SET_RUNNING, &one));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(fd, VHOST_IOMMU_GET_CONFIG, &c));
	EXPECT_EQ(ENODATA, errno);
	/* Bad configs */
	c.page_size_mask = 0;
	EXPECT_EQ(-1, ioctl(fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(EINVAL, errno);
	c.page_size_mask = 0x800;
	EXPECT_EQ(-1, ioctl(fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(EINVAL, errno);
	default_cfg(&c);
	c.input_end = 0;
	c.input_start = PG;
	EXPECT_EQ(-1, ioctl(fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(EINVAL, errno);
	default_cfg(&c);
	c.domain_start = 5;
	c.domain_end = 4;
	EXPECT_EQ(-1, ioctl(fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(EINVAL, errno);
	default_cfg(&c);
	c.reserved[2] = 1;
	EXPECT_EQ(-1, ioctl(fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(EINVAL, errno);
	default_cfg(&c);
	c.probe_size = 3;
	EXPECT_EQ(-1, ioctl(fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(EINVAL, errno);
	default_cfg(&c);
	c.max_mappings = ~0ULL;
	EXPECT_EQ(-1, ioctl(fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(EINVAL, errno);
	default_cfg(&c);
	ASSERT_EQ(0, ioctl(fd, VHOST_IOMMU_SET_CONFIG, &c));
	/* A region that no longer fits a smaller probe buffer */
	ASSERT_EQ(0, add_ep(fd, 1, &msi_region, 1));
	c.probe_size = 16;
	EXPECT_EQ(-1, ioctl(fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(ENOSPC, errno);
	/* No rings yet */
	EXPECT_EQ(-1, ioctl(fd, VHOST_IOMMU_SET_RUNNING, &one));
	EXPECT_EQ(EFAULT, errno);
	EXPECT_EQ(-1, ioctl(fd, VHOST_IOMMU_SET_RUNNING, &two));
	EXPECT_EQ(EINVAL, errno);
	/* Stopping a stopped device is fine */
	two = 0;
	EXPECT_EQ(0, ioctl(fd, VHOST_IOMMU_SET_RUNNING, &two));
	/* Unsupported vhost calls */
	EXPECT_EQ(-1, ioctl(fd, VHOST_RESET_OWNER));
	EXPECT_EQ(EOPNOTSUPP, errno);
	close(fd);
}

/* Not the owner: another process may not drive the device */
TEST(other_process_not_owner)
{
	struct vhost_iommu_config c;
	int fd = open_dev(_metadata);
	pid_t pid;
	int status;

	ASSERT_GE(fd, 0);
	ASSERT_EQ(0, ioctl(fd, VHOST_SET_OWNER));
	default_cfg(&c);
	pid = fork();
	ASSERT_GE(pid, 0);
	if (!pid)
		_exit(ioctl(fd, VHOST_IOMMU_SET_CONFIG, &c) == -1 &&
		      errno == EPERM ? 0 : 1);
	ASSERT_EQ(pid, waitpid(pid, &status, 0));
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	close(fd);
}

TEST_HARNESS_MAIN
