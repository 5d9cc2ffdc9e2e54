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
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <net/if.h>
#include <sys/socket.h>

#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <linux/vhost.h>
#include <linux/vhost_iommu.h>
#include <linux/virtio_config.h>
#include <linux/virtio_iommu.h>
#include <linux/virtio_ring.h>

#include "../kselftest_harness.h"

#define GPA_BASE	0x100000ULL	/* guest-physical base of our memory */
#define MEM_SIZE	0x400000UL
#define QSZ		64	/* the tests' queue size */
#define BIG_QSZ		1024	/* the benchmark's, for 256 requests a kick */
#define PROBE_SIZE	512
#define NR_EPS		10
#define MAX_DOMAINS	8
#define MAX_MAPPINGS	64
#define PG		0x1000ULL

/* Offsets in guest memory (rings big enough for BIG_QSZ) */
#define OFF_VQ(q)	((q) * 0x10000UL)
#define OFF_AVAIL	0x4000UL
#define OFF_USED	0x8000UL
#define OFF_REQ		0x40000UL	/* request buffer */
#define OFF_RESP	0x41000UL	/* device-writable buffer */
#define OFF_BREQ	0x50000UL	/* batches: 128 bytes a request */
#define BREQ_SZ		128
#define OFF_BRESP	0x80000UL	/* batches: 0x400 bytes an answer */
#define BRESP_SZ	0x400UL

struct vq {
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
	uint16_t num;
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

static int vq_setup(int fd, void *mem, unsigned int idx, struct vq *vq,
		    uint16_t qsz)
{
	uint8_t *base = (uint8_t *)mem + OFF_VQ(idx);
	struct vhost_vring_state num = { .index = idx, .num = qsz };
	struct vhost_vring_state vbase = { .index = idx, .num = 0 };
	struct vhost_vring_addr addr = {
		.index = idx,
		.desc_user_addr = (uintptr_t)base,
		.avail_user_addr = (uintptr_t)(base + OFF_AVAIL),
		.used_user_addr = (uintptr_t)(base + OFF_USED),
	};
	struct vhost_vring_file kick, call;

	memset(vq, 0, sizeof(*vq));
	vq->num = qsz;
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

	vq->avail->ring[vq->avail_idx % vq->num] = head;
	/* used_event (VIRTIO_RING_F_EVENT_IDX): call us for the next one */
	vq->avail->ring[vq->num] = vq->used_idx;
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
	e = &vq->used->ring[vq->used_idx % vq->num];
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
	ASSERT_EQ(0, vq_setup(self->fd, self->mem, 0, &self->rq, QSZ));
	ASSERT_EQ(0, vq_setup(self->fd, self->mem, 1, &self->eq, QSZ));
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

/* The domain does not exist, or is not the endpoint's: the spec's INVAL */
TEST_F(viommu, detach_not_attached_inval)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, attach(self, 2, 2, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, detach(self, 1, 3));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, detach(self, 1, 2));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, detach(self, 7, 1));
}

TEST_F(viommu, detach_unknown_noent)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT, detach(self, 1, 999));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT, detach(self, 7, 999));
}

/* virtio 1.3: the device MUST ignore DETACH's reserved */
TEST_F(viommu, detach_reserved_ignored)
{
	struct virtio_iommu_req_detach r = {
		.head.type = VIRTIO_IOMMU_T_DETACH, .domain = 1, .endpoint = 1,
	};

	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, map(self, 1, 0, PG - 1, GPA_BASE, RW));
	EXPECT_TRUE(mapped(self, 1, 0));
	r.reserved[0] = 1;
	r.reserved[7] = 0x80;
	EXPECT_EQ(OK, req_status(self->mem, &self->rq, &r, sizeof(r)));
	/* It was served: detached, and the domain went with it */
	EXPECT_FALSE(mapped(self, 1, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT, map(self, 1, PG, 2 * PG - 1, 0, RW));
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
	/* Physical range wrapping around, or past 52 bits */
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE,
		  map(self, 1, 0, 2 * PG - 1, ~(PG - 1), RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE,
		  map(self, 1, 0, PG - 1, 1ULL << 52, RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE,
		  map(self, 1, 0, 2 * PG - 1, (1ULL << 52) - PG, 0));
	EXPECT_EQ(OK, map(self, 1, 0, PG - 1, (1ULL << 52) - PG, RW));
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

/*
 * The device SHOULD reject a MAP that overlaps a RESV_MEM region: here
 * endpoint 1's MSI window, 0xfee00000-0xfeefffff, in any domain endpoint 1
 * is attached to.  The spec names no status; the device says INVAL, as for
 * an overlap with a mapping.
 */
#define MSI_LO	0xfee00000ULL
#define MSI_HI	0xfeefffffULL

TEST_F(viommu, map_resv_mem_inval)
{
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, attach(self, 1, 2, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  map(self, 1, MSI_LO, MSI_LO + PG - 1, GPA_BASE, RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  map(self, 1, MSI_HI + 1 - PG, MSI_HI, GPA_BASE, RW));
	/* Straddling either end, or covering it all */
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  map(self, 1, MSI_LO - PG, MSI_LO + PG - 1, GPA_BASE, RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  map(self, 1, MSI_HI + 1 - PG, MSI_HI + PG, GPA_BASE, RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  map(self, 1, 0, (1ULL << 32) - 1, 0, RW));
	/* A mapping without access is still a mapping */
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  map(self, 1, MSI_LO, MSI_LO + PG - 1, GPA_BASE, 0));
	EXPECT_FALSE(mapped(self, 1, MSI_LO));
	EXPECT_FALSE(mapped(self, 2, MSI_LO));
	/* Right next to it is fine */
	EXPECT_EQ(OK, map(self, 1, MSI_LO - PG, MSI_LO - 1, GPA_BASE, RW));
	EXPECT_EQ(OK, map(self, 1, MSI_HI + 1, MSI_HI + PG, GPA_BASE, RW));
	/* A domain without endpoint 1 may map there */
	EXPECT_EQ(OK, attach(self, 2, 3, 0));
	EXPECT_EQ(OK, map(self, 2, MSI_LO, MSI_LO + PG - 1, GPA_BASE, RW));
	EXPECT_TRUE(mapped(self, 3, MSI_LO));
	/* Once endpoint 1 has left domain 1, domain 1 may too */
	EXPECT_EQ(OK, detach(self, 1, 1));
	EXPECT_EQ(OK, map(self, 1, MSI_LO, MSI_LO + PG - 1, GPA_BASE, RW));
	EXPECT_TRUE(mapped(self, 2, MSI_LO));
}

/*
 * The other way round: endpoint 1 may not join a domain that maps into its
 * MSI window (INVAL, and it stays where it was), else the domain would hold
 * a mapping MAP refuses.
 */
TEST_F(viommu, attach_resv_mem_mapped_inval)
{
	EXPECT_EQ(OK, attach(self, 1, 2, 0));
	EXPECT_EQ(OK, map(self, 1, MSI_LO + PG, MSI_LO + 2 * PG - 1,
			  GPA_BASE, RW));
	EXPECT_EQ(OK, attach(self, 2, 1, 0));
	EXPECT_EQ(OK, map(self, 2, 0, PG - 1, GPA_BASE, RW));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, attach(self, 1, 1, 0));
	EXPECT_TRUE(mapped(self, 1, 0));	/* still in domain 2 */
	EXPECT_EQ(OK, unmap(self, 1, MSI_LO, MSI_HI));
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_FALSE(mapped(self, 1, 0));
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL,
		  map(self, 1, MSI_LO, MSI_LO + PG - 1, GPA_BASE, RW));
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

/* Restart the device with @c (limits may only change while it is stopped) */
static void reconfigure(struct __test_metadata *_metadata,
			struct _test_data_viommu *self,
			struct vhost_iommu_config *c)
{
	uint32_t zero = 0, one = 1;

	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &zero));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, c));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
}

/*
 * The page tables are what a MAP costs the host: one MAP of a range whose
 * IOVA and physical address differ in their low bits needs a table page for
 * every 2 MiB, however few mappings there are.
 */
TEST_F(viommu, map_table_budget_nomem)
{
	struct vhost_iommu_config c = self->cfg;
	uint64_t at = 0x40000000, mb = 1 << 20;
	int i, st, ok = 0, nomem = 0;

	c.max_table_pages = 16;
	reconfigure(_metadata, self, &c);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_GET_CONFIG, &c));
	EXPECT_EQ(16, c.max_table_pages);
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	/* 64 MiB of 4 KiB pages: past the budget midway, and undone */
	EXPECT_EQ(VIRTIO_IOMMU_S_NOMEM, map(self, 1, at, at + 64 * mb - 1,
					    0x1000, RW));
	EXPECT_FALSE(mapped(self, 1, at));
	EXPECT_FALSE(mapped(self, 1, at + 63 * mb));
	/* The same range in 2 MiB pages needs no leaf table: it fits */
	EXPECT_EQ(OK, map(self, 1, at, at + 64 * mb - 1, 0x80000000, RW));
	EXPECT_TRUE(mapped(self, 1, at + 63 * mb));
	/* 4 KiB each a GiB apart: two tables each, until the budget is out */
	for (i = 2; i < 40; i++) {
		st = map(self, 1, (uint64_t)i << 30, ((uint64_t)i << 30) + PG - 1,
			 0, RW);
		if (st == OK)
			ok++;
		else if (st == VIRTIO_IOMMU_S_NOMEM)
			nomem++;
		else
			EXPECT_EQ(OK, st);
	}
	EXPECT_LT(0, ok);
	EXPECT_LT(0, nomem);
	/* A new domain needs a table too */
	EXPECT_EQ(VIRTIO_IOMMU_S_NOMEM, attach(self, 2, 2, 0));
	/* The domain's end gives it all back */
	EXPECT_EQ(OK, detach(self, 1, 1));
	EXPECT_EQ(OK, attach(self, 2, 2, 0));
	EXPECT_EQ(OK, map(self, 2, 5ULL << 30, (5ULL << 30) + PG - 1, 0, RW));
	EXPECT_TRUE(mapped(self, 2, 5ULL << 30));
}

/*
 * The budget bounds what the guest holds, not what it once held: UNMAP
 * gives back the tables it leaves empty.  One-page MAP+UNMAP pairs, each in
 * a 2 MiB, 1 GiB or 512 GiB region of its own (a leaf table, and the tables
 * above it, for each), many times the budget over; then a new domain and
 * MAPs that need most of the budget at once still fit.
 */
TEST_F(viommu, table_budget_freed_by_unmap)
{
	struct vhost_iommu_config c = self->cfg;
	uint64_t iova;
	int i;

	c.max_table_pages = 16;
	reconfigure(_metadata, self, &c);
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	for (i = 0; i < 600; i++) {
		iova = ((uint64_t)(i % 3) << 39) + ((uint64_t)(i % 101) << 30) +
		       ((uint64_t)i << 21);
		iova &= (1ULL << 47) - 1;
		ASSERT_EQ(OK, map(self, 1, iova, iova + PG - 1, 0, RW))
			TH_LOG("pair %d: MAP at 0x%llx", i,
			       (unsigned long long)iova);
		ASSERT_EQ(OK, unmap(self, 1, iova, iova + PG - 1));
	}
	/* A MAP undone midway gives its tables back too */
	EXPECT_EQ(VIRTIO_IOMMU_S_NOMEM, map(self, 1, 1ULL << 30,
					    (1ULL << 30) + (64ULL << 20) - 1,
					    PG, RW));
	/* Ranges unmapped at once, and a range's edges */
	EXPECT_EQ(OK, map(self, 1, (3ULL << 30) - PG, (3ULL << 30) + PG - 1,
			  0, RW));
	EXPECT_EQ(OK, unmap(self, 1, 0, 1ULL << 40));
	/* What is left: the tops, ten tables at most */
	EXPECT_EQ(OK, attach(self, 2, 2, 0));
	for (i = 0; i < 4; i++) {
		iova = (1ULL << 39) + ((uint64_t)i << 21);
		EXPECT_EQ(OK, map(self, 1, iova, iova + PG - 1, 0, RW));
	}
	EXPECT_EQ(OK, map(self, 2, 1ULL << 30, (1ULL << 30) + PG - 1, 0, RW));
	EXPECT_TRUE(mapped(self, 1, (1ULL << 39) + (3ULL << 21)));
	EXPECT_TRUE(mapped(self, 2, 1ULL << 30));
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
	/* No room even for the tail: used length 0 */
	a = do_req(self->mem, &self->rq, &r, sizeof(r), 3, 0);
	EXPECT_TRUE(a.done);
	EXPECT_EQ(0, a.len);
}

/* virtio 1.3: the device MUST ignore PROBE's reserved */
TEST_F(viommu, probe_reserved_ignored)
{
	uint8_t *props = gpa_ptr(self->mem, GPA_BASE + OFF_RESP);
	struct virtio_iommu_probe_resv_mem *p = (void *)props;
	struct answer a = probe(self, 1, 1);

	ASSERT_TRUE(a.done);
	EXPECT_EQ(PROBE_SIZE + 4, a.len);
	EXPECT_EQ(OK, a.status);
	EXPECT_EQ(VIRTIO_IOMMU_PROBE_T_RESV_MEM, p->head.type);
	EXPECT_EQ(MSI_LO, p->start);
	EXPECT_EQ(MSI_HI, p->end);
}

/*
 * A properties buffer smaller than probe_size: the device SHOULD NOT write
 * any property and SHOULD answer INVAL; the tail is at the end of the
 * buffer, and the bytes before it are zero.
 */
TEST_F(viommu, probe_small_buffer_inval)
{
	uint8_t *resp = gpa_ptr(self->mem, GPA_BASE + OFF_RESP);
	struct virtio_iommu_req_probe r = {
		.head.type = VIRTIO_IOMMU_T_PROBE, .endpoint = 1,
	};
	static const uint32_t sizes[] = { 4, 8, 28, PROBE_SIZE, PROBE_SIZE + 3 };
	unsigned int i, k;

	for (i = 0; i < ARRAY_SIZE(sizes); i++) {
		struct answer a = do_req(self->mem, &self->rq, &r, sizeof(r),
					 sizes[i], sizes[i] - 4);

		ASSERT_TRUE(a.done);
		EXPECT_EQ(sizes[i], a.len);
		EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, a.status);
		for (k = 0; k < sizes[i] - 4; k++)
			ASSERT_EQ(0, resp[k]);
		EXPECT_EQ(0, resp[sizes[i] - 3] | resp[sizes[i] - 2] |
			     resp[sizes[i] - 1]);
	}
	/* probe_size exactly, or more: the tail right after the properties */
	EXPECT_EQ(OK, probe(self, 1, 0).status);
	EXPECT_EQ(OK, do_req(self->mem, &self->rq, &r, sizeof(r),
			     PROBE_SIZE + 64, PROBE_SIZE).status);
}

/*
 * PROBE not negotiated: a request type the guest may not use, answered as
 * an unknown one (a device that does not offer PROBE SHOULD NOT write the
 * buffer and SHOULD set the used length to 0).
 */
TEST_F(viommu, probe_not_negotiated_used_len_0)
{
	uint8_t *resp = gpa_ptr(self->mem, GPA_BASE + OFF_RESP);
	uint32_t zero = 0, one = 1;
	uint64_t f;
	struct answer a;

	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &zero));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_GET_FEATURES, &f));
	f &= ~(1ULL << VIRTIO_IOMMU_F_PROBE);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_SET_FEATURES, &f));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
	a = probe(self, 1, 0);
	EXPECT_TRUE(a.done);
	EXPECT_EQ(0, a.len);
	EXPECT_EQ(0xff, resp[0]);
	EXPECT_EQ(0xff, resp[PROBE_SIZE]);
	/* The rest still works */
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
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

/* virtio 1.3: the device MUST ignore the head's reserved, in every request */
TEST_F(viommu, head_reserved_ignored)
{
	struct virtio_iommu_req_attach at = {
		.head.type = VIRTIO_IOMMU_T_ATTACH, .domain = 1, .endpoint = 1,
	};
	struct virtio_iommu_req_map mp = {
		.head.type = VIRTIO_IOMMU_T_MAP, .domain = 1,
		.virt_start = 0, .virt_end = PG - 1, .phys_start = GPA_BASE,
		.flags = RW,
	};
	struct virtio_iommu_req_unmap um = {
		.head.type = VIRTIO_IOMMU_T_UNMAP, .domain = 1,
		.virt_start = 0, .virt_end = PG - 1,
	};
	struct virtio_iommu_req_detach dt = {
		.head.type = VIRTIO_IOMMU_T_DETACH, .domain = 1, .endpoint = 1,
	};
	struct virtio_iommu_req_probe pr = {
		.head.type = VIRTIO_IOMMU_T_PROBE, .endpoint = 1,
	};
	struct answer a;

	at.head.reserved[1] = 1;
	mp.head.reserved[0] = 0xff;
	um.head.reserved[2] = 0x80;
	dt.head.reserved[0] = 1;
	pr.head.reserved[2] = 7;
	EXPECT_EQ(OK, req_status(self->mem, &self->rq, &at, sizeof(at)));
	EXPECT_EQ(OK, req_status(self->mem, &self->rq, &mp, sizeof(mp)));
	EXPECT_TRUE(mapped(self, 1, 0));
	EXPECT_EQ(OK, req_status(self->mem, &self->rq, &um, sizeof(um)));
	EXPECT_FALSE(mapped(self, 1, 0));
	a = do_req(self->mem, &self->rq, &pr, sizeof(pr), PROBE_SIZE + 4,
		   PROBE_SIZE);
	EXPECT_EQ(OK, a.status);
	EXPECT_EQ(OK, req_status(self->mem, &self->rq, &dt, sizeof(dt)));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT, map(self, 1, 0, PG - 1, 0, RW));
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
	struct vhost_iommu_config c = self->cfg;
	uint32_t zero = 0, one = 1;

	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, map(self, 1, 0, PG - 1, 0, RW));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &zero));
	EXPECT_FALSE(mapped(self, 1, 0));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT, map(self, 1, 0, PG - 1, 0, RW));
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	/* bypass SHOULD NOT change on device reset */
	c.bypass = 1;
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &zero));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_GET_CONFIG, &c));
	EXPECT_EQ(1, c.bypass);
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
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(many); i++) {
		many[i].start = i * PG;
		many[i].end = i * PG + PG - 1;
	}
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

/*
 * The device SHOULD NOT present more than one MSI region per endpoint, nor
 * RESV_MEM regions that overlap: ADD_ENDPOINT refuses them (EINVAL).
 */
TEST_F(viommu, endpoint_resv_overlap_einval)
{
	struct vhost_iommu_resv_region r[3] = {
		{ .start = 0x1000, .end = 0x1fff },
		{ .start = 0x1fff, .end = 0x2fff },
		msi_region,
	};
	struct virtio_iommu_probe_resv_mem *p =
		gpa_ptr(self->mem, GPA_BASE + OFF_RESP);
	struct answer a;
	int i;

	EXPECT_EQ(-1, add_ep(self->fd, 50, r, 2));	/* one byte shared */
	EXPECT_EQ(EINVAL, errno);
	r[1] = (struct vhost_iommu_resv_region){ .start = 0, .end = ~0ULL };
	EXPECT_EQ(-1, add_ep(self->fd, 50, r, 2));	/* one inside another */
	EXPECT_EQ(EINVAL, errno);
	r[1] = msi_region;
	EXPECT_EQ(-1, add_ep(self->fd, 50, r, 3));	/* the same twice */
	EXPECT_EQ(EINVAL, errno);
	r[1].start = 0x10000000;			/* two MSI windows */
	r[1].end = 0x100fffff;
	EXPECT_EQ(-1, add_ep(self->fd, 50, r, 3));
	EXPECT_EQ(EINVAL, errno);
	/* Adjacent is fine, and so is one MSI window with other regions */
	r[1] = (struct vhost_iommu_resv_region){ .start = 0x2000, .end = 0x2fff };
	EXPECT_EQ(0, add_ep(self->fd, 50, r, 3));
	/* PROBE lays them out back to back: each length + 4 after the last */
	a = probe(self, 50, 0);
	EXPECT_EQ(OK, a.status);
	for (i = 0; i < 3; i++) {
		EXPECT_EQ(VIRTIO_IOMMU_PROBE_T_RESV_MEM, p[i].head.type);
		EXPECT_EQ(sizeof(p[i]) - 4, p[i].head.length);
		EXPECT_EQ(r[i].subtype, p[i].subtype);
		EXPECT_EQ(0, p[i].reserved[0] | p[i].reserved[1] |
			     p[i].reserved[2]);
		EXPECT_EQ(r[i].start, p[i].start);
		EXPECT_EQ(r[i].end, p[i].end);
	}
	EXPECT_EQ(0, p[3].head.type);
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
	c.max_table_pages = ~0ULL;
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

static unsigned long count_from_env(const char *name, unsigned long def)
{
	const char *s = getenv(name);

	return s && *s ? strtoul(s, NULL, 0) : def;
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

/* Wait until @n more buffers are used, up to about five seconds. */
static int vq_wait_used(struct vq *vq, unsigned int n)
{
	struct pollfd pfd = { .fd = vq->call, .events = POLLIN };
	uint64_t val;
	int i;

	for (i = 0; i < 500; i++) {
		uint16_t idx = __atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE);

		if ((uint16_t)(idx - vq->used_idx) >= n)
			return 0;
		if (poll(&pfd, 1, 10) > 0 && read(vq->call, &val, sizeof(val)) < 0)
			return -1;
	}
	return -1;
}

/* Publish @n heads (avail ring already filled from avail_idx on) and kick. */
static int vq_kick_n(struct vq *vq, unsigned int n)
{
	uint64_t one = 1;

	/* used_event: one call for the whole batch */
	vq->avail->ring[vq->num] = vq->used_idx + n - 1;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	vq->avail_idx += n;
	__atomic_store_n(&vq->avail->idx, vq->avail_idx, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return write(vq->kick, &one, sizeof(one)) == sizeof(one) ? 0 : -1;
}

static uint8_t *breq(void *mem, unsigned int i)
{
	return gpa_ptr(mem, GPA_BASE + OFF_BREQ + i * BREQ_SZ);
}

static uint8_t *bresp(void *mem, unsigned int i)
{
	return gpa_ptr(mem, GPA_BASE + OFF_BRESP + i * BRESP_SZ);
}

/* Queue @n requests as chains 2i -> 2i + 1, kick once. */
static int batch_push(void *mem, struct vq *vq, const struct rreq *r,
		      unsigned int n)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		memcpy(breq(mem, i), r[i].bytes, sizeof(r[i].bytes));
		memset(bresp(mem, i), 0xff, BRESP_SZ);
		vq->desc[2 * i] = (struct vring_desc){
			GPA_BASE + OFF_BREQ + i * BREQ_SZ, r[i].out_len,
			VRING_DESC_F_NEXT, 2 * i + 1 };
		vq->desc[2 * i + 1] = (struct vring_desc){
			GPA_BASE + OFF_BRESP + i * BRESP_SZ, r[i].in_len,
			VRING_DESC_F_WRITE, 0 };
		vq->avail->ring[(uint16_t)(vq->avail_idx + i) % vq->num] = 2 * i;
	}
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
static int xlate_agrees(struct _test_data_viommu *self, struct model *m,
			uint32_t ep, uint64_t iova)
{
	struct vhost_iommu_translate want, got;
	int w = m_translate(m, ep, iova, &want);
	int g = xlate(self, ep, iova, &got);

	if (w != g)
		return 0;
	return w || (want.gpa == got.gpa && want.size == got.size &&
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
	uint32_t ep = 1 + rnd_below(NR_EPS), zero = 0, one = 1;
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
		ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &zero));
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

TEST_F_TIMEOUT(viommu, random_against_model, 3600)
{
	unsigned long total = count_from_env("VHOST_IOMMU_RANDOM", 1000000);
	uint64_t seed = seed_from_env();
	unsigned long seen[10] = { 0 };
	struct timespec t0, t1;
	int k;

	TH_LOG("random: seed 0x%llx, %lu requests",
	       (unsigned long long)seed, total);
	TH_LOG("random: VHOST_IOMMU_SEED=0x%llx VHOST_IOMMU_RANDOM=%lu replays it",
	       (unsigned long long)seed, total);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	random_run(_metadata, self, total, seed, seen);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	TH_LOG("random: %lu requests checked in %.1f s", total,
	       (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9);
	for (k = 0; k < 10; k++)
		TH_LOG("random: %-14s %lu", status_name[k], seen[k]);
	/* The run reached every answer it is meant to exercise */
	if (total >= 100000) {
		EXPECT_LT(0, seen[VIRTIO_IOMMU_S_OK]);
		EXPECT_LT(0, seen[VIRTIO_IOMMU_S_INVAL]);
		EXPECT_LT(0, seen[VIRTIO_IOMMU_S_RANGE]);
		EXPECT_LT(0, seen[VIRTIO_IOMMU_S_NOENT]);
		EXPECT_LT(0, seen[VIRTIO_IOMMU_S_NOMEM]);
		EXPECT_LT(0, seen[9]);
	}
}

/*
 * A guest rewriting its requests while the device reads them: a second
 * thread flips bytes of the requests, and the lengths and some flags of
 * their descriptors, as fast as it can while batches of random requests go
 * through.  The device copies a request once before looking at it, so every
 * answer must still be a well-formed one (a status it defines, or used
 * length 0), every batch must come back, and afterwards the device must
 * answer exactly as the model says.
 */
struct flipper {
	void *mem;
	struct vq *vq;
	int stop;		/* __atomic */
	unsigned long flips;
};

static void *flip_loop(void *arg)
{
	struct flipper *f = arg;
	uint64_t x = 0x9e3779b97f4a7c15ULL;

	while (!__atomic_load_n(&f->stop, __ATOMIC_RELAXED)) {
		unsigned int i;

		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		i = (x >> 40) % (QSZ / 2);
		if ((x & 0xf) == 0) {
			/*
			 * A descriptor's length; or a request's NEXT or WRITE
			 * flag, cutting the chain short.  An answer's chain
			 * stays one descriptor, so its tail is where the used
			 * length says.
			 */
			unsigned int k = (x >> 20) % QSZ;
			struct vring_desc *d = &f->vq->desc[k];

			if ((k & 1) || (x & 0x10))
				d->len ^= 1u << ((x >> 8) % 12);
			else
				d->flags ^= (x & 0x20) ? VRING_DESC_F_NEXT :
							 VRING_DESC_F_WRITE;
		} else {
			/* A byte of a request, mostly in its first 40 */
			breq(f->mem, i)[(x >> 16) % ((x & 0x100) ? 72 : 40)] ^=
				(uint8_t)(x >> 32) | 1;
		}
		f->flips++;
		/* A pause now and then, so that some requests get through */
		if (!(x & 0x3000))
			for (i = (x >> 48) & 0x3fff; i; i--)
				__asm__ volatile("" ::: "memory");
	}
	return NULL;
}

TEST_F_TIMEOUT(viommu, guest_rewrites_requests, 600)
{
	unsigned long total = count_from_env("VHOST_IOMMU_REWRITE", 100000);
	unsigned long done = 0, used0 = 0, seen[VIRTIO_IOMMU_S_NOMEM + 1] = { 0 };
	unsigned long after[10] = { 0 };
	struct flipper f = { .mem = self->mem, .vq = &self->rq };
	struct vhost_iommu_config c = self->cfg;
	struct virtio_iommu_req_probe probe_req = {
		.head.type = VIRTIO_IOMMU_T_PROBE, .endpoint = 1,
	};
	uint8_t props[PROBE_SIZE];
	struct rreq r[QSZ / 2];
	struct vq *vq = &self->rq;
	struct model m;
	struct answer a;
	pthread_t thread;
	unsigned int i, n;

	/* Flipped MAPs may span terabytes: keep the tables they cost small */
	c.max_table_pages = 256;
	reconfigure(_metadata, self, &c);
	rnd_state = seed_from_env() | 1;
	m_init(&m);
	ASSERT_EQ(0, pthread_create(&thread, NULL, flip_loop, &f));
	while (done < total) {
		n = 1 + rnd_below(QSZ / 2);
		/* The model goes wrong at once; only the requests matter */
		for (i = 0; i < n; i++)
			r_make(&m, &r[i]);
		ASSERT_EQ(0, batch_push(self->mem, vq, r, n));
		if (vq_wait_used(vq, n)) {
			__atomic_store_n(&f.stop, 1, __ATOMIC_RELAXED);
			pthread_join(thread, NULL);
			TH_LOG("a batch of %u never came back after %lu requests",
			       n, done);
			ASSERT_TRUE(0);
		}
		for (i = 0; i < n; i++) {
			struct vring_used_elem e =
				vq->used->ring[vq->used_idx++ % vq->num];
			const uint8_t *resp;

			/* Heads come from the avail ring, which stays intact */
			ASSERT_EQ(2 * i, e.id);
			if (!e.len) {
				used0++;
				continue;
			}
			/*
			 * The answer of a request of one of the known sizes,
			 * or of a PROBE with a short properties buffer
			 */
			if (e.len < 4 || e.len > PROBE_SIZE + 4) {
				TH_LOG("used length %u", e.len);
				ASSERT_TRUE(0);
			}
			resp = bresp(self->mem, i) + e.len - 4;
			ASSERT_GE(VIRTIO_IOMMU_S_NOMEM, resp[0]);
			ASSERT_EQ(0, resp[1] | resp[2] | resp[3]);
			seen[resp[0]]++;
		}
		done += n;
	}
	__atomic_store_n(&f.stop, 1, __ATOMIC_RELAXED);
	ASSERT_EQ(0, pthread_join(thread, NULL));
	TH_LOG("rewrite: %lu requests, %lu flips", done, f.flips);
	TH_LOG("rewrite: OK %lu INVAL %lu RANGE %lu NOENT %lu NOMEM %lu used-length-0 %lu",
	       seen[0], seen[VIRTIO_IOMMU_S_INVAL], seen[VIRTIO_IOMMU_S_RANGE],
	       seen[VIRTIO_IOMMU_S_NOENT], seen[VIRTIO_IOMMU_S_NOMEM], used0);
	/* The flips reached the device: not everything got through intact */
	EXPECT_LT(0, f.flips);
	EXPECT_LT(0, used0);

	/* Healthy: the queue answers as before, whatever state it is in... */
	memset(vq->desc, 0, QSZ * sizeof(*vq->desc));
	a = do_req(self->mem, vq, &probe_req, sizeof(probe_req),
		   PROBE_SIZE + 4, PROBE_SIZE);
	ASSERT_TRUE(a.done);
	ASSERT_EQ(PROBE_SIZE + 4, a.len);
	ASSERT_EQ(OK, a.status);
	want_props(1, props);
	ASSERT_EQ(0, memcmp(props, gpa_ptr(self->mem, GPA_BASE + OFF_RESP),
			    PROBE_SIZE));
	/* ...and after a reset exactly as the model says */
	reconfigure(_metadata, self, &self->cfg);
	random_run(_metadata, self, 20000, seed_from_env(), after);
	EXPECT_LT(0, after[VIRTIO_IOMMU_S_OK]);
}

/*
 * Fault injection: every allocation on the ioctl and the request paths
 * fails once in turn, through fail-nth (Documentation/fault-injection/),
 * as iommufd_fail_nth does.  The ioctls run in this thread; requests run in
 * the device's vhost worker, a thread of this process, whose own fail-nth
 * file arms it.  Every failure must come back as ENOMEM or NOMEM and change
 * nothing, with no WARN or leak (the debug kernel's KASAN and kmemleak
 * watch), and the queue must keep answering.
 *
 * Needs CONFIG_FAULT_INJECTION, CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC and
 * CONFIG_FAULT_INJECTION_DEBUG_FS; skipped without them unless
 * VHOST_IOMMU_NEED_FAIL_NTH=1 (the debug scenario) says they must be there.
 */
#define FAIL_NTH_MAX	400

static int write_file(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write(fd, val, strlen(val));
	close(fd);
	return n == (ssize_t)strlen(val) ? 0 : -1;
}

/* Let every allocation fail, quietly: 0, or -1 without fault injection. */
static int fail_nth_setup(struct __test_metadata *_metadata)
{
	static const char *const quiet[] = {
		"/sys/kernel/debug/failslab/verbose",
		"/sys/kernel/debug/fail_page_alloc/verbose",
	};
	const char *need = getenv("VHOST_IOMMU_NEED_FAIL_NTH");
	unsigned int i;

	if (access("/proc/self/fail-nth", F_OK) ||
	    write_file("/sys/kernel/debug/failslab/ignore-gfp-wait", "N") ||
	    write_file("/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait", "N") ||
	    write_file("/sys/kernel/debug/fail_page_alloc/ignore-gfp-highmem", "N") ||
	    /* page tables are single pages: order 0 as well */
	    write_file("/sys/kernel/debug/fail_page_alloc/min-order", "0")) {
		if (need && *need == '1') {
			TH_LOG("no fail-nth or no failslab/fail_page_alloc in debugfs");
			return -2;
		}
		return -1;
	}
	for (i = 0; i < ARRAY_SIZE(quiet); i++)
		write_file(quiet[i], "0");
	return 0;
}

static int open_fail_nth(pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/fail-nth", tid);
	return open(path, O_RDWR);
}

/* Arm @fd to fail the @n-th fault site from now on; 0 disarms. */
static void fail_nth_set(struct __test_metadata *_metadata, int fd,
			 unsigned int n)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%u", n);
	ASSERT_EQ((ssize_t)strlen(buf), pwrite(fd, buf, strlen(buf), 0));
}

/* Whether the armed failure happened (the count reached 0); disarms. */
static int fail_nth_hit(struct __test_metadata *_metadata, int fd)
{
	char buf[16] = "";
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	ASSERT_LT(0, n);
	fail_nth_set(_metadata, fd, 0);
	return atoi(buf) == 0;
}

/* The thread id of the vhost worker of the device this process owns */
static pid_t vhost_worker_tid(void)
{
	char path[300], comm[32], want[32];
	struct dirent *de;
	pid_t tid = -1;
	DIR *d;
	int fd;

	snprintf(want, sizeof(want), "vhost-%d\n", getpid());
	d = opendir("/proc/self/task");
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 de->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		n = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		comm[n > 0 ? n : 0] = 0;
		if (!strcmp(comm, want))
			tid = atoi(de->d_name);
	}
	closedir(d);
	return tid;
}

/* Record @name as the step reached; -errno if @ret says it failed */
static int step_ret(const char **step, const char *name, int ret)
{
	*step = name;
	return ret < 0 ? -errno : 0;
}

/*
 * The ioctl path: a VMM's whole setup, then some use and teardown, with
 * the n-th allocation of this thread failing, for n = 1, 2, ... until the
 * sequence runs through without reaching the n-th.
 */
static int setup_sequence(struct __test_metadata *_metadata, void *mem,
			  int *fdp, struct vq *rq, struct vq *eq,
			  const char **step)
{
	struct vhost_memory_region *r;
	struct vhost_iommu_translate t = { .endpoint = 2, .iova = 0 };
	struct vhost_iommu_config c;
	struct vhost_memory *m;
	uint32_t id = 3, one = 1, zero = 0;
	uint64_t features;
	int fd, ret;

	fd = open("/dev/vhost-iommu", O_RDWR);
	*fdp = fd;
	ret = step_ret(step, "open", fd);
	if (!ret)
		ret = step_ret(step, "VHOST_SET_OWNER",
			       ioctl(fd, VHOST_SET_OWNER));
	if (!ret)
		ret = step_ret(step, "VHOST_GET_FEATURES",
			       ioctl(fd, VHOST_GET_FEATURES, &features));
	if (!ret)
		ret = step_ret(step, "VHOST_SET_FEATURES",
			       ioctl(fd, VHOST_SET_FEATURES, &features));
	if (ret)
		return ret;
	*step = "calloc";
	m = calloc(1, sizeof(*m) + sizeof(*r));
	if (!m)
		return -ENOMEM;
	m->nregions = 1;
	r = &m->regions[0];
	r->guest_phys_addr = GPA_BASE;
	r->memory_size = MEM_SIZE;
	r->userspace_addr = (uintptr_t)mem;
	ret = step_ret(step, "VHOST_SET_MEM_TABLE",
		       ioctl(fd, VHOST_SET_MEM_TABLE, m));
	free(m);
	if (!ret)
		ret = step_ret(step, "request queue",
			       vq_setup(fd, mem, 0, rq, QSZ));
	if (!ret)
		ret = step_ret(step, "event queue",
			       vq_setup(fd, mem, 1, eq, QSZ));
	default_cfg(&c);
	if (!ret)
		ret = step_ret(step, "VHOST_IOMMU_SET_CONFIG",
			       ioctl(fd, VHOST_IOMMU_SET_CONFIG, &c));
	if (!ret)
		ret = step_ret(step, "VHOST_IOMMU_ADD_ENDPOINT 1",
			       add_ep(fd, 1, &msi_region, 1));
	if (!ret)
		ret = step_ret(step, "VHOST_IOMMU_ADD_ENDPOINT 2",
			       add_ep(fd, 2, NULL, 0));
	if (!ret)
		ret = step_ret(step, "VHOST_IOMMU_ADD_ENDPOINT 3",
			       add_ep(fd, 3, NULL, 0));
	if (!ret)
		ret = step_ret(step, "VHOST_IOMMU_SET_RUNNING 1",
			       ioctl(fd, VHOST_IOMMU_SET_RUNNING, &one));
	if (ret)
		return ret;
	*step = "VHOST_IOMMU_TRANSLATE";
	ret = ioctl(fd, VHOST_IOMMU_TRANSLATE, &t);
	if (ret != -1 || errno != ENOENT)
		return -EPROTO;		/* not attached: must say ENOENT */
	ret = step_ret(step, "VHOST_IOMMU_DEL_ENDPOINT",
		       ioctl(fd, VHOST_IOMMU_DEL_ENDPOINT, &id));
	if (!ret)
		ret = step_ret(step, "VHOST_IOMMU_SET_RUNNING 0",
			       ioctl(fd, VHOST_IOMMU_SET_RUNNING, &zero));
	if (!ret)
		ret = step_ret(step, "VHOST_IOMMU_SET_RUNNING 1 again",
			       ioctl(fd, VHOST_IOMMU_SET_RUNNING, &one));
	return ret;
}

static void close_all(int *fd, struct vq *rq, struct vq *eq)
{
	struct vq *q[] = { rq, eq };
	int i;

	for (i = 0; i < 2; i++) {
		if (q[i]->kick > 0)
			close(q[i]->kick);
		if (q[i]->call > 0)
			close(q[i]->call);
		memset(q[i], 0, sizeof(*q[i]));
	}
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/* For tests that make their own devices but need a longer timeout */
FIXTURE(own) {
	int unused;
};

FIXTURE_SETUP(own)
{
}

FIXTURE_TEARDOWN(own)
{
}

TEST_F_TIMEOUT(own, fail_nth_ioctls, 600)
{
	unsigned int n, failed = 0;
	struct vq rq = { 0 }, eq = { 0 };
	const char *step = "";
	void *mem;
	int nth, fd = -1, ret, hit;

	ret = fail_nth_setup(_metadata);
	ASSERT_NE(-2, ret);	/* required, and missing */
	if (ret)
		SKIP(return, "no fault injection in this kernel");
	/*
	 * Every page this process touches must be there before a failure is
	 * armed: a page fault inside copy_from_user() that fails to allocate
	 * a page table gives EFAULT, not ENOMEM, and would be the harness's.
	 */
	ASSERT_EQ(0, mlockall(MCL_CURRENT | MCL_FUTURE));
	mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	ASSERT_NE(MAP_FAILED, mem);
	nth = open_fail_nth(syscall(SYS_gettid));
	ASSERT_LE(0, nth);
	for (n = 1; n < FAIL_NTH_MAX; n++) {
		fail_nth_set(_metadata, nth, n);
		ret = setup_sequence(_metadata, mem, &fd, &rq, &eq, &step);
		hit = fail_nth_hit(_metadata, nth);
		close_all(&fd, &rq, &eq);
		if (ret) {
			/* Only a failed allocation may make a step fail */
			if (ret != -ENOMEM || !hit)
				TH_LOG("fail-nth %u: %s: %s", n, step,
				       strerror(-ret));
			ASSERT_EQ(-ENOMEM, ret);
			ASSERT_TRUE(hit);
			failed++;
		} else if (!hit) {
			break;		/* ran through: every site was tried */
		}
	}
	TH_LOG("fail-nth ioctls: %u fault sites, %u made a call fail",
	       n - 1, failed);
	ASSERT_GT(FAIL_NTH_MAX, n);
	EXPECT_LT(0, failed);
	/* After all that, a device sets up and serves */
	ASSERT_EQ(0, setup_sequence(_metadata, mem, &fd, &rq, &eq, &step));
	close_all(&fd, &rq, &eq);
	munmap(mem, MEM_SIZE);
}

/* One request with its own expectation, for the request-path sweep */
struct fstep {
	const char *name;
	uint8_t type;
	uint32_t a, b, flags;		/* domain/endpoint, or domain/flags */
	uint64_t start, end, phys;
	int allocates;			/* an allocation can fail it */
};

static void fstep_req(const struct fstep *s, struct rreq *r)
{
	memset(r, 0, sizeof(*r));
	r->head.type = s->type;
	r->in_len = 4;
	switch (s->type) {
	case VIRTIO_IOMMU_T_ATTACH:
		r->attach.domain = s->a;
		r->attach.endpoint = s->b;
		r->attach.flags = s->flags;
		r->out_len = sizeof(r->attach) - 4;
		break;
	case VIRTIO_IOMMU_T_DETACH:
		r->detach.domain = s->a;
		r->detach.endpoint = s->b;
		r->out_len = sizeof(r->detach) - 4;
		break;
	case VIRTIO_IOMMU_T_MAP:
		r->map.domain = s->a;
		r->map.virt_start = s->start;
		r->map.virt_end = s->end;
		r->map.phys_start = s->phys;
		r->map.flags = s->flags;
		r->out_len = sizeof(r->map) - 4;
		break;
	case VIRTIO_IOMMU_T_UNMAP:
		r->unmap.domain = s->a;
		r->unmap.virt_start = s->start;
		r->unmap.virt_end = s->end;
		r->out_len = sizeof(r->unmap) - 4;
		break;
	default:
		r->probe.endpoint = s->b;
		r->out_len = sizeof(r->probe);
		r->tail_off = PROBE_SIZE;
		r->in_len = PROBE_SIZE + 4;
		break;
	}
}

/* The model's answer for @r, applied to @m */
static uint32_t fstep_want(struct model *m, struct rreq *r)
{
	switch (r->head.type) {
	case VIRTIO_IOMMU_T_ATTACH:
		return m_attach(m, &r->attach, 0);
	case VIRTIO_IOMMU_T_DETACH:
		return m_detach_req(m, &r->detach, 0);
	case VIRTIO_IOMMU_T_MAP:
		return m_map_req(m, &r->map, 0);
	case VIRTIO_IOMMU_T_UNMAP:
		return m_unmap_req(m, &r->unmap, 0);
	default:
		return m_probe_req(m, &r->probe, 0);
	}
}

static const struct fstep fsteps[] = {
	{ "ATTACH a new domain", VIRTIO_IOMMU_T_ATTACH, 1, 1, 0, .allocates = 1 },
	{ "ATTACH a second endpoint", VIRTIO_IOMMU_T_ATTACH, 1, 2, 0 },
	{ "MAP 4 KiB", VIRTIO_IOMMU_T_MAP, 1, 0, RW, 0x1000, 0x1fff,
	  0x200000, 1 },
	{ "MAP 2 MiB + 8 KiB across tables", VIRTIO_IOMMU_T_MAP, 1, 0, RW,
	  0x40000000 - 0x2000, 0x40200000 - 1, 0x400000, 1 },
	{ "MAP far up: the table grows", VIRTIO_IOMMU_T_MAP, 1, 0,
	  VIRTIO_IOMMU_MAP_F_READ, 1ULL << 46, (1ULL << 46) + 0xffff,
	  0x10000, 1 },
	{ "MAP without access", VIRTIO_IOMMU_T_MAP, 1, 0, 0, 0x8000, 0x8fff,
	  0, 1 },
	{ "PROBE", VIRTIO_IOMMU_T_PROBE, 0, 1, .allocates = 1 },
	{ "UNMAP one", VIRTIO_IOMMU_T_UNMAP, 1, 0, 0, 0x1000, 0x1fff },
	{ "ATTACH a bypass domain", VIRTIO_IOMMU_T_ATTACH, 2, 3,
	  VIRTIO_IOMMU_ATTACH_F_BYPASS, .allocates = 1 },
	{ "re-ATTACH to a new domain", VIRTIO_IOMMU_T_ATTACH, 3, 2, 0,
	  .allocates = 1 },
	{ "UNMAP everything", VIRTIO_IOMMU_T_UNMAP, 1, 0, 0, 0, ~0ULL },
	{ "DETACH the last endpoint", VIRTIO_IOMMU_T_DETACH, 1, 1 },
};

/* Send @r alone; its answer must be allowed by @want. */
static void fstep_send(struct __test_metadata *_metadata,
		       struct _test_data_viommu *self, struct rreq *r,
		       uint32_t want, int *status, const char *what)
{
	struct vq *vq = &self->rq;
	struct vring_used_elem e;
	const char *why;

	r->want = want;
	ASSERT_EQ(0, batch_push(self->mem, vq, r, 1));
	if (vq_wait_used(vq, 1)) {
		TH_LOG("%s: no answer: the queue is stuck", what);
		ASSERT_TRUE(0);
	}
	e = vq->used->ring[vq->used_idx++ % vq->num];
	ASSERT_EQ(0, e.id);
	why = check_answer(self->mem, r, 0, &e, status);
	if (*why) {
		TH_LOG("%s: %s (status %d)", what, why, *status);
		ASSERT_TRUE(0);
	}
}

TEST_F_TIMEOUT(viommu, fail_nth_requests, 900)
{
	unsigned int s, k, n, nomem, sites, total_nomem = 0;
	uint32_t zero = 0, one = 1, bad_ep;
	uint64_t bad_iova;
	struct model m;
	struct rreq r;
	int nth, status, ret;
	pid_t worker;

	ret = fail_nth_setup(_metadata);
	ASSERT_NE(-2, ret);	/* required, and missing */
	if (ret)
		SKIP(return, "no fault injection in this kernel");
	worker = vhost_worker_tid();
	ASSERT_LT(0, worker);
	nth = open_fail_nth(worker);
	ASSERT_LE(0, nth);
	for (s = 0; s < ARRAY_SIZE(fsteps); s++) {
		nomem = 0;
		for (n = 1; n < FAIL_NTH_MAX; n++) {
			struct model before;
			uint32_t want;
			int hit;

			/* From a reset device, the steps before this one */
			ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING,
					   &zero));
			ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING,
					   &one));
			m_init(&m);
			for (k = 0; k < s; k++) {
				fstep_req(&fsteps[k], &r);
				fstep_send(_metadata, self, &r,
					   fstep_want(&m, &r), &status,
					   fsteps[k].name);
				ASSERT_EQ(OK, status);
			}
			/* This one with the n-th allocation failing */
			fstep_req(&fsteps[s], &r);
			before = m;
			want = fstep_want(&m, &r);
			ASSERT_EQ(S(OK), want);
			fail_nth_set(_metadata, nth, n);
			fstep_send(_metadata, self, &r, want | S(NOMEM),
				   &status, fsteps[s].name);
			hit = fail_nth_hit(_metadata, nth);
			if (status == VIRTIO_IOMMU_S_NOMEM) {
				/* Only a failed allocation gives NOMEM */
				ASSERT_TRUE(hit);
				m = before;
				nomem++;
			}
			/* Whatever the answer, the state is what it says */
			if (!model_agrees(self, &m, &bad_ep, &bad_iova)) {
				TH_LOG("%s, fail-nth %u: EP %u IOVA 0x%llx: not the model's",
				       fsteps[s].name, n, bad_ep,
				       (unsigned long long)bad_iova);
				ASSERT_TRUE(0);
			}
			/* And the queue still serves: PROBE, then the step */
			fstep_req(&fsteps[6], &r);
			fstep_send(_metadata, self, &r, S(OK), &status,
				   "PROBE after");
			fstep_req(&fsteps[s], &r);
			fstep_send(_metadata, self, &r, fstep_want(&m, &r),
				   &status, "the step again");
			if (!hit)
				break;	/* the request ran out of sites */
		}
		sites = n - 1;
		TH_LOG("fail-nth %-32s %3u fault sites, %3u answered NOMEM",
		       fsteps[s].name, sites, nomem);
		ASSERT_GT(FAIL_NTH_MAX, n);
		if (fsteps[s].allocates)
			EXPECT_LT(0, nomem);
		total_nomem += nomem;
	}
	EXPECT_LT(0, total_nomem);
	close(nth);
}

/* Faults: TRANSLATE with _FAULT puts records on the event queue */
#define OFF_EVT		0xc0000UL	/* event buffers, 32 bytes each */

/* Make @n event buffers of @len bytes available, from slot @first on. */
static void evt_post(struct vq *eq, void *mem, unsigned int first,
		     unsigned int n, uint32_t len)
{
	unsigned int i;

	for (i = 0; i < n; i++) {
		unsigned int d = (first + i) % eq->num;

		memset(gpa_ptr(mem, GPA_BASE + OFF_EVT + d * 32), 0xff, 32);
		eq->desc[d] = (struct vring_desc){
			GPA_BASE + OFF_EVT + d * 32, len, VRING_DESC_F_WRITE, 0 };
		eq->avail->ring[(uint16_t)(eq->avail_idx + i) % eq->num] = d;
	}
	vq_kick_n(eq, n);
}

/* The next used event buffer: its record, or -1 if none came within ~5 s */
static int evt_next(struct vq *eq, void *mem, struct virtio_iommu_fault *f,
		    uint32_t *len)
{
	struct vring_used_elem e;

	if (vq_wait_used(eq, 1))
		return -1;
	e = eq->used->ring[eq->used_idx++ % eq->num];
	*len = e.len;
	memcpy(f, gpa_ptr(mem, GPA_BASE + OFF_EVT + e.id * 32), sizeof(*f));
	return 0;
}

/* No event buffer comes back for a while */
static int evt_none(struct vq *eq)
{
	usleep(50000);
	return __atomic_load_n(&eq->used->idx, __ATOMIC_ACQUIRE) == eq->used_idx;
}

static int xlate_f(struct _test_data_viommu *self, uint32_t ep, uint64_t iova,
		   uint32_t flags)
{
	struct vhost_iommu_translate t = {
		.endpoint = ep, .iova = iova, .flags = flags,
	};

	return ioctl(self->fd, VHOST_IOMMU_TRANSLATE, &t) ? -errno : 0;
}

#define TF_R	VHOST_IOMMU_TRANSLATE_F_READ
#define TF_W	VHOST_IOMMU_TRANSLATE_F_WRITE
#define TF_F	VHOST_IOMMU_TRANSLATE_F_FAULT
#define FF_A	VIRTIO_IOMMU_FAULT_F_ADDRESS

#define EXPECT_FAULT(_reason, _flags, _ep, _addr)			\
	do {								\
		struct virtio_iommu_fault _f;				\
		uint32_t _len;						\
									\
		ASSERT_EQ(0, evt_next(&self->eq, self->mem, &_f, &_len)); \
		EXPECT_EQ(sizeof(_f), _len);				\
		EXPECT_EQ(_reason, _f.reason);				\
		EXPECT_EQ(_flags, _f.flags);				\
		EXPECT_EQ(_ep, _f.endpoint);				\
		EXPECT_EQ(_addr, _f.address);				\
		EXPECT_EQ(0, _f.reserved[0] | _f.reserved[1] | _f.reserved[2]); \
		EXPECT_EQ(0, _f.reserved2[0] | _f.reserved2[1] |	\
			     _f.reserved2[2] | _f.reserved2[3]);	\
	} while (0)

TEST_F(viommu, fault_on_event_queue)
{
	evt_post(&self->eq, self->mem, 0, 8, 32);
	EXPECT_TRUE(evt_none(&self->eq));	/* buffers wait for faults */

	/* No domain */
	EXPECT_EQ(-ENOENT, xlate_f(self, 1, 0x5000, TF_R | TF_F));
	EXPECT_FAULT(VIRTIO_IOMMU_FAULT_R_DOMAIN,
		     VIRTIO_IOMMU_FAULT_F_READ | FF_A, 1, 0x5000);
	/* Not mapped, and mapped read-only */
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, map(self, 1, 0, PG - 1, GPA_BASE,
			  VIRTIO_IOMMU_MAP_F_READ));
	EXPECT_EQ(-ENOENT, xlate_f(self, 1, 0x5000, TF_W | TF_F));
	EXPECT_FAULT(VIRTIO_IOMMU_FAULT_R_MAPPING,
		     VIRTIO_IOMMU_FAULT_F_WRITE | FF_A, 1, 0x5000);
	EXPECT_EQ(-EACCES, xlate_f(self, 1, 0x10, TF_R | TF_W | TF_F));
	EXPECT_FAULT(VIRTIO_IOMMU_FAULT_R_MAPPING,
		     VIRTIO_IOMMU_FAULT_F_READ | VIRTIO_IOMMU_FAULT_F_WRITE |
		     FF_A, 1, 0x10);
	/* What is allowed, or not asked to be reported, makes no record */
	EXPECT_EQ(0, xlate_f(self, 1, 0x10, TF_R | TF_F));
	EXPECT_EQ(-EACCES, xlate_f(self, 1, 0x10, TF_W));
	EXPECT_EQ(-ENOENT, xlate_f(self, 2, 0x10, TF_R));
	EXPECT_EQ(-ENODEV, xlate_f(self, 99, 0x10, TF_R | TF_F));
	EXPECT_EQ(-EINVAL, xlate_f(self, 1, 0x10, 1 << 3));
	EXPECT_TRUE(evt_none(&self->eq));
	/* A bypass domain translates everything */
	EXPECT_EQ(OK, attach(self, 2, 2, VIRTIO_IOMMU_ATTACH_F_BYPASS));
	EXPECT_EQ(0, xlate_f(self, 2, 0x10, TF_R | TF_W | TF_F));
	EXPECT_TRUE(evt_none(&self->eq));
}

TEST_F(viommu, fault_waits_for_buffers)
{
	struct virtio_iommu_fault f;
	uint32_t len, zero = 0, one = 1;
	int i;

	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	/* No buffer yet: records wait, up to 64, in order */
	for (i = 0; i < 70; i++)
		EXPECT_EQ(-ENOENT, xlate_f(self, 1, i * PG, TF_R | TF_F));
	EXPECT_TRUE(evt_none(&self->eq));
	/* A buffer too small comes back empty, the record goes to the next */
	evt_post(&self->eq, self->mem, 0, 1, 16);
	ASSERT_EQ(0, evt_next(&self->eq, self->mem, &f, &len));
	EXPECT_EQ(0, len);
	evt_post(&self->eq, self->mem, 1, 63, 32);
	for (i = 0; i < 63; i++)
		EXPECT_FAULT(VIRTIO_IOMMU_FAULT_R_MAPPING,
			     VIRTIO_IOMMU_FAULT_F_READ | FF_A, 1, i * PG);
	evt_post(&self->eq, self->mem, 0, 8, 32);
	EXPECT_FAULT(VIRTIO_IOMMU_FAULT_R_MAPPING,
		     VIRTIO_IOMMU_FAULT_F_READ | FF_A, 1, 63 * PG);
	/* The 6 past 64 were dropped */
	EXPECT_TRUE(evt_none(&self->eq));
	/* Buffers left: a new fault goes straight out */
	EXPECT_EQ(-ENOENT, xlate_f(self, 1, 0x123000, TF_W | TF_F));
	EXPECT_FAULT(VIRTIO_IOMMU_FAULT_R_MAPPING,
		     VIRTIO_IOMMU_FAULT_F_WRITE | FF_A, 1, 0x123000);
	/* Use up the 6 buffers left, then 3 records wait... */
	for (i = 0; i < 9; i++)
		EXPECT_EQ(-ENOENT, xlate_f(self, 1, (100 + i) * PG, TF_R | TF_F));
	for (i = 0; i < 6; i++)
		EXPECT_FAULT(VIRTIO_IOMMU_FAULT_R_MAPPING,
			     VIRTIO_IOMMU_FAULT_F_READ | FF_A, 1,
			     (100 + i) * PG);
	EXPECT_TRUE(evt_none(&self->eq));
	/* ...and a reset drops them */
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &zero));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
	EXPECT_EQ(-ENOENT, xlate_f(self, 1, 0x7000, TF_R | TF_F));
	evt_post(&self->eq, self->mem, 8, 4, 32);
	EXPECT_FAULT(VIRTIO_IOMMU_FAULT_R_DOMAIN,
		     VIRTIO_IOMMU_FAULT_F_READ | FF_A, 1, 0x7000);
	EXPECT_TRUE(evt_none(&self->eq));
}

/*
 * vhost-net bound to an endpoint (VHOST_SET_IOMMU): the kernel translates
 * its DMA through the endpoint's domain.  This program is the VMM of both
 * devices and the guest: the TX ring and a packet live in guest memory at
 * IOVAs the guest mapped; the packet must come out of the tap byte for
 * byte, and after UNMAP the same descriptor must not: nothing comes out and
 * the guest gets a fault on the event queue.
 */
#define NET_EP		5
#define NET_OFF_RING	0x100000UL	/* TX ring, GPA offset */
#define NET_IOVA_RING	0x80000000ULL
#define NET_OFF_BUF	0x120000UL	/* the packet, GPA offset */
#define NET_IOVA_BUF	0x90000000ULL
#define NET_HDR		12		/* struct virtio_net_hdr_v1 */
#define NET_ETHERTYPE	0x88b5		/* local experimental */
#define NET_FRAME	200

struct tap {
	int fd, ifindex, pkt;
};

static int tap_open(struct tap *t)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET };
	struct ifreq ifr = { 0 };
	int hdr = NET_HDR, s;

	t->fd = open("/dev/net/tun", O_RDWR);
	if (t->fd < 0)
		return -1;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "vhiommu%%d");
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR;
	if (ioctl(t->fd, TUNSETIFF, &ifr) || ioctl(t->fd, TUNSETVNETHDRSZ, &hdr))
		return -1;
	s = socket(AF_INET, SOCK_DGRAM, 0);
	if (s < 0 || ioctl(s, SIOCGIFINDEX, &ifr))
		return -1;
	t->ifindex = ifr.ifr_ifindex;
	ifr.ifr_flags = IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr))
		return -1;
	close(s);
	/* What the tap hands the host stack, as a sniffer on it sees it */
	t->pkt = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = t->ifindex;
	if (t->pkt < 0 || bind(t->pkt, (struct sockaddr *)&sll, sizeof(sll)))
		return -1;
	return 0;
}

/* The next frame of ours the tap received within @ms, its length or -1 */
static int tap_frame(struct tap *t, uint8_t *buf, size_t len, int ms)
{
	struct pollfd pfd = { .fd = t->pkt, .events = POLLIN };
	struct sockaddr_ll from;
	socklen_t fl;
	ssize_t n;

	while (poll(&pfd, 1, ms) > 0) {
		fl = sizeof(from);
		n = recvfrom(t->pkt, buf, len, 0, (struct sockaddr *)&from, &fl);
		if (n < 14 || from.sll_pkttype == PACKET_OUTGOING)
			continue;
		if (buf[12] == NET_ETHERTYPE >> 8 && buf[13] == (NET_ETHERTYPE & 0xff))
			return n;
	}
	return -1;
}

static void tap_close(struct tap *t)
{
	if (t->pkt >= 0)
		close(t->pkt);
	if (t->fd >= 0)
		close(t->fd);
}

/* vhost-net's memory table: the guest's memory, one region */
static int net_set_mem(int fd, void *mem)
{
	struct vhost_memory_region *r;
	struct vhost_memory *m;
	int ret;

	m = calloc(1, sizeof(*m) + sizeof(*r));
	if (!m)
		return -1;
	m->nregions = 1;
	r = &m->regions[0];
	r->guest_phys_addr = GPA_BASE;
	r->memory_size = MEM_SIZE;
	r->userspace_addr = (uintptr_t)mem;
	ret = ioctl(fd, VHOST_SET_MEM_TABLE, m);
	free(m);
	return ret;
}

/*
 * vhost-net's TX queue at its IOVAs, backed by @tap. Starting the queue
 * reads the used ring: the first try misses in the device's IOTLB, which
 * the IOMMU then fills; the VMM retries.
 */
static int net_start_tx(int fd, void *ring, int kick_fd, int call_fd, int tap)
{
	struct vhost_vring_state num = { .index = 1, .num = QSZ };
	struct vhost_vring_state base = { .index = 1, .num = 0 };
	struct vhost_vring_addr addr = {
		.index = 1,
		.desc_user_addr = NET_IOVA_RING,
		.avail_user_addr = NET_IOVA_RING + 0x1000,
		.used_user_addr = NET_IOVA_RING + 0x2000,
	};
	struct vhost_vring_file kick = { .index = 1, .fd = kick_fd };
	struct vhost_vring_file call = { .index = 1, .fd = call_fd };
	struct vhost_vring_file backend = { .index = 1, .fd = tap };
	int i, ret;

	memset(ring, 0, 0x3000);
	if (ioctl(fd, VHOST_SET_VRING_NUM, &num) ||
	    ioctl(fd, VHOST_SET_VRING_BASE, &base) ||
	    ioctl(fd, VHOST_SET_VRING_ADDR, &addr) ||
	    ioctl(fd, VHOST_SET_VRING_KICK, &kick) ||
	    ioctl(fd, VHOST_SET_VRING_CALL, &call))
		return -1;
	for (i = 0; i < 100; i++) {
		ret = ioctl(fd, VHOST_NET_SET_BACKEND, &backend);
		if (!ret || errno != EFAULT)
			break;
		usleep(10000);
	}
	return ret;
}

TEST_F_TIMEOUT(viommu, vhost_net_translates, 120)
{
	struct vhost_iommu_binding bind = { .fd = self->fd, .endpoint = NET_EP };
	uint64_t features, want = (1ULL << VIRTIO_F_VERSION_1) |
				  (1ULL << VIRTIO_F_ACCESS_PLATFORM);
	uint8_t *ring = gpa_ptr(self->mem, GPA_BASE + NET_OFF_RING);
	uint8_t *pkt = gpa_ptr(self->mem, GPA_BASE + NET_OFF_BUF);
	struct vring_desc *desc = (void *)ring;
	struct vring_avail *avail = (void *)(ring + 0x1000);
	struct vring_used *used = (void *)(ring + 0x2000);
	struct vhost_vring_file kick = { .index = 1 }, call = { .index = 1 };
	struct tap tap = { -1, -1, -1 };
	uint8_t got[2048];
	uint64_t one = 1;
	int net, i, n;

	net = open("/dev/vhost-net", O_RDWR);
	if (net < 0 && errno == ENOENT)
		SKIP(return, "no /dev/vhost-net (modprobe vhost_net)");
	ASSERT_LE(0, net);
	ASSERT_EQ(0, tap_open(&tap));

	/* The guest: endpoint 5 in domain 7, its ring and packet mapped */
	ASSERT_EQ(OK, attach(self, 7, NET_EP, 0));
	ASSERT_EQ(OK, map(self, 7, NET_IOVA_RING, NET_IOVA_RING + 0x10000 - 1,
			  GPA_BASE + NET_OFF_RING, RW));
	ASSERT_EQ(OK, map(self, 7, NET_IOVA_BUF, NET_IOVA_BUF + PG - 1,
			  GPA_BASE + NET_OFF_BUF, VIRTIO_IOMMU_MAP_F_READ));
	evt_post(&self->eq, self->mem, 0, 4, 32);

	/* The VMM: vhost-net behind the IOMMU, its rings at IOVAs */
	ASSERT_EQ(0, ioctl(net, VHOST_SET_OWNER));
	ASSERT_EQ(0, ioctl(net, VHOST_GET_FEATURES, &features));
	ASSERT_EQ(want, features & want);
	ASSERT_EQ(0, ioctl(net, VHOST_SET_FEATURES, &want));
	ASSERT_EQ(0, net_set_mem(net, self->mem));
	/* Bad bindings first */
	bind.endpoint = 99;
	EXPECT_EQ(-1, ioctl(net, VHOST_SET_IOMMU, &bind));
	EXPECT_EQ(ENOENT, errno);
	bind.endpoint = NET_EP;
	bind.fd = net;
	EXPECT_EQ(-1, ioctl(net, VHOST_SET_IOMMU, &bind));
	EXPECT_EQ(EINVAL, errno);
	bind.fd = self->fd;
	ASSERT_EQ(0, ioctl(net, VHOST_SET_IOMMU, &bind));
	EXPECT_EQ(-1, ioctl(net, VHOST_SET_IOMMU, &bind));
	EXPECT_EQ(EBUSY, errno);

	kick.fd = eventfd(0, EFD_NONBLOCK);
	call.fd = eventfd(0, EFD_NONBLOCK);
	ASSERT_LE(0, kick.fd);
	ASSERT_LE(0, call.fd);
	ASSERT_EQ(0, net_start_tx(net, ring, kick.fd, call.fd, tap.fd));

	/* The guest sends a frame from its IOVA-addressed buffer */
	memset(pkt, 0, NET_HDR);
	memset(pkt + NET_HDR, 0xff, 6);			/* broadcast */
	memcpy(pkt + NET_HDR + 6, "\x02\x00\x00\x00\x00\x05", 6);
	pkt[NET_HDR + 12] = NET_ETHERTYPE >> 8;
	pkt[NET_HDR + 13] = NET_ETHERTYPE & 0xff;
	for (i = 14; i < NET_FRAME; i++)
		pkt[NET_HDR + i] = i * 7 + 3;
	desc[0] = (struct vring_desc){ NET_IOVA_BUF, NET_HDR + NET_FRAME, 0, 0 };
	avail->ring[0] = 0;
	__atomic_store_n(&avail->idx, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(sizeof(one), write(kick.fd, &one, sizeof(one)));
	n = tap_frame(&tap, got, sizeof(got), 3000);
	ASSERT_EQ(NET_FRAME, n);
	EXPECT_EQ(0, memcmp(got, pkt + NET_HDR, NET_FRAME));
	for (i = 0; i < 300 && __atomic_load_n(&used->idx, __ATOMIC_ACQUIRE) != 1; i++)
		usleep(10000);
	EXPECT_EQ(1, used->idx);
	EXPECT_TRUE(evt_none(&self->eq));	/* no fault so far */

	/* UNMAP: once it is answered the same descriptor must fail */
	ASSERT_EQ(OK, unmap(self, 7, NET_IOVA_BUF, NET_IOVA_BUF + PG - 1));
	avail->ring[1] = 0;
	__atomic_store_n(&avail->idx, 2, __ATOMIC_RELEASE);
	ASSERT_EQ(sizeof(one), write(kick.fd, &one, sizeof(one)));
	EXPECT_FAULT(VIRTIO_IOMMU_FAULT_R_MAPPING,
		     VIRTIO_IOMMU_FAULT_F_READ | FF_A, NET_EP, NET_IOVA_BUF);
	EXPECT_EQ(-1, tap_frame(&tap, got, sizeof(got), 300));
	EXPECT_EQ(1, used->idx);

	/* Mapped again (elsewhere in guest memory), it goes out again */
	memcpy(pkt + PG, pkt, NET_HDR + NET_FRAME);
	pkt[NET_HDR + NET_FRAME - 1] ^= 0x5a;
	ASSERT_EQ(OK, map(self, 7, NET_IOVA_BUF, NET_IOVA_BUF + PG - 1,
			  GPA_BASE + NET_OFF_BUF + PG, VIRTIO_IOMMU_MAP_F_READ));
	ASSERT_EQ(sizeof(one), write(kick.fd, &one, sizeof(one)));
	n = tap_frame(&tap, got, sizeof(got), 3000);
	ASSERT_EQ(NET_FRAME, n);
	EXPECT_EQ(0, memcmp(got, pkt + PG + NET_HDR, NET_FRAME));

	/* DETACH takes it all away: the ring itself faults now */
	ASSERT_EQ(OK, detach(self, 7, NET_EP));
	avail->ring[2] = 0;
	__atomic_store_n(&avail->idx, 3, __ATOMIC_RELEASE);
	ASSERT_EQ(sizeof(one), write(kick.fd, &one, sizeof(one)));
	EXPECT_EQ(-1, tap_frame(&tap, got, sizeof(got), 300));

	close(net);
	close(kick.fd);
	close(call.fd);
	tap_close(&tap);
}

/* Bindings end with the endpoint, the device's owner, or the IOMMU */
TEST_F(viommu, vhost_net_binding_lifetime)
{
	struct vhost_iommu_binding bind = { .fd = self->fd, .endpoint = 6 };
	uint64_t feat = (1ULL << VIRTIO_F_VERSION_1) |
			(1ULL << VIRTIO_F_ACCESS_PLATFORM);
	uint32_t id = 6;
	int net = open("/dev/vhost-net", O_RDWR);

	if (net < 0 && errno == ENOENT)
		SKIP(return, "no /dev/vhost-net (modprobe vhost_net)");
	ASSERT_LE(0, net);
	ASSERT_EQ(0, ioctl(net, VHOST_SET_OWNER));
	ASSERT_EQ(0, ioctl(net, VHOST_SET_FEATURES, &feat));
	ASSERT_EQ(0, ioctl(net, VHOST_SET_IOMMU, &bind));
	/* The endpoint goes: so does the binding, the device may bind again */
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_DEL_ENDPOINT, &id));
	EXPECT_EQ(-1, ioctl(net, VHOST_SET_IOMMU, &bind));
	EXPECT_EQ(ENOENT, errno);
	ASSERT_EQ(0, add_ep(self->fd, 6, NULL, 0));
	ASSERT_EQ(0, ioctl(net, VHOST_SET_IOMMU, &bind));
	/* The endpoint takes one device */
	bind.endpoint = 7;
	ASSERT_EQ(-1, ioctl(net, VHOST_SET_IOMMU, &bind));
	EXPECT_EQ(EBUSY, errno);
	/* The device's owner is reset: the endpoint is free again */
	ASSERT_EQ(0, ioctl(net, VHOST_RESET_OWNER));
	ASSERT_EQ(0, ioctl(net, VHOST_SET_OWNER));
	bind.endpoint = 6;
	/* The reset forgot the features: no IOTLB, nothing to bind */
	EXPECT_EQ(-1, ioctl(net, VHOST_SET_IOMMU, &bind));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, ioctl(net, VHOST_SET_FEATURES, &feat));
	ASSERT_EQ(0, ioctl(net, VHOST_SET_IOMMU, &bind));
	bind.reserved[1] = 1;
	EXPECT_EQ(-1, ioctl(net, VHOST_SET_IOMMU, &bind));
	EXPECT_EQ(EINVAL, errno);
	/* The IOMMU is closed while the device is bound */
	close(self->fd);
	self->fd = -1;
	bind.reserved[1] = 0;
	EXPECT_EQ(-1, ioctl(net, VHOST_SET_IOMMU, &bind));
	EXPECT_EQ(EBADF, errno);
	/* The device forgot it: another IOMMU takes it */
	self->fd = open("/dev/vhost-iommu", O_RDWR);
	ASSERT_LE(0, self->fd);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_SET_OWNER));
	ASSERT_EQ(0, add_ep(self->fd, 6, NULL, 0));
	bind.fd = self->fd;
	EXPECT_EQ(0, ioctl(net, VHOST_SET_IOMMU, &bind));
	close(net);
}

/*
 * Only a device that translates through an IOTLB is bound: vhost-net
 * without VIRTIO_F_ACCESS_PLATFORM has nothing to ask, and a vhost-iommu
 * never is one (two bound to each other would deadlock, each serving a
 * request with the other's queues locked).
 */
TEST_F(viommu, set_iommu_refuses_devices)
{
	struct vhost_iommu_binding bind = { .fd = self->fd, .endpoint = 6 };
	uint64_t feat = 1ULL << VIRTIO_F_VERSION_1;
	int net, other;

	/* Another vhost-iommu, the VMM of a second guest */
	other = open("/dev/vhost-iommu", O_RDWR);
	ASSERT_LE(0, other);
	ASSERT_EQ(0, ioctl(other, VHOST_SET_OWNER));
	ASSERT_EQ(0, add_ep(other, 6, NULL, 0));
	EXPECT_EQ(-1, ioctl(other, VHOST_SET_IOMMU, &bind));
	EXPECT_EQ(EINVAL, errno);
	bind.fd = other;
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_SET_IOMMU, &bind));
	EXPECT_EQ(EINVAL, errno);
	/* Itself */
	EXPECT_EQ(-1, ioctl(other, VHOST_SET_IOMMU, &bind));
	EXPECT_EQ(EINVAL, errno);
	close(other);

	net = open("/dev/vhost-net", O_RDWR);
	if (net < 0 && errno == ENOENT)
		SKIP(return, "no /dev/vhost-net (modprobe vhost_net)");
	ASSERT_LE(0, net);
	ASSERT_EQ(0, ioctl(net, VHOST_SET_OWNER));
	bind.fd = self->fd;
	/* No features yet, then no ACCESS_PLATFORM */
	EXPECT_EQ(-1, ioctl(net, VHOST_SET_IOMMU, &bind));
	EXPECT_EQ(EINVAL, errno);
	ASSERT_EQ(0, ioctl(net, VHOST_SET_FEATURES, &feat));
	EXPECT_EQ(-1, ioctl(net, VHOST_SET_IOMMU, &bind));
	EXPECT_EQ(EINVAL, errno);
	feat |= 1ULL << VIRTIO_F_ACCESS_PLATFORM;
	ASSERT_EQ(0, ioctl(net, VHOST_SET_FEATURES, &feat));
	EXPECT_EQ(0, ioctl(net, VHOST_SET_IOMMU, &bind));
	close(net);
}

/*
 * DEL_ENDPOINT racing VHOST_SET_IOMMU on the same endpoint: whichever
 * wins, once both returned the endpoint is gone and the device is bound to
 * nothing, so it binds to another endpoint at once.  A second thread
 * removes the endpoint while this one binds it, round after round.
 */
struct del_racer {
	int fd;
	int round;		/* __atomic: the round to run, -1 to stop */
	int done;		/* __atomic: the last round run */
	int ret;
};

static void *del_race_loop(void *arg)
{
	struct del_racer *r = arg;
	uint32_t id = 6;
	int round, last = 0, k;

	for (;;) {
		round = __atomic_load_n(&r->round, __ATOMIC_ACQUIRE);
		if (round < 0)
			break;
		if (round == last)
			continue;
		/* A different head start each round: some land in any window */
		for (k = round % 2 ? 0 : (round * 37) % 4096; k > 0; k--)
			__asm__ volatile("" ::: "memory");
		r->ret = ioctl(r->fd, VHOST_IOMMU_DEL_ENDPOINT, &id);
		last = round;
		__atomic_store_n(&r->done, round, __ATOMIC_RELEASE);
	}
	return NULL;
}

TEST_F_TIMEOUT(viommu, del_endpoint_races_set_iommu, 300)
{
	unsigned long rounds = count_from_env("VHOST_IOMMU_DEL_RACE", 20000);
	struct vhost_iommu_binding bind = { .fd = self->fd, .endpoint = 6 };
	uint64_t feat = (1ULL << VIRTIO_F_VERSION_1) |
			(1ULL << VIRTIO_F_ACCESS_PLATFORM);
	struct del_racer r = { .fd = self->fd };
	unsigned long round, bound = 0;
	uint32_t id = 7;
	pthread_t thread;
	int net, ret, k;

	net = open("/dev/vhost-net", O_RDWR);
	if (net < 0 && errno == ENOENT)
		SKIP(return, "no /dev/vhost-net (modprobe vhost_net)");
	ASSERT_LE(0, net);
	ASSERT_EQ(0, ioctl(net, VHOST_SET_OWNER));
	ASSERT_EQ(0, ioctl(net, VHOST_SET_FEATURES, &feat));
	ASSERT_EQ(0, pthread_create(&thread, NULL, del_race_loop, &r));
	for (round = 1; round <= rounds; round++) {
		bind.endpoint = 6;
		__atomic_store_n(&r.round, (int)round, __ATOMIC_RELEASE);
		for (k = round % 2 ? (round * 53) % 8192 : 0; k > 0; k--)
			__asm__ volatile("" ::: "memory");
		ret = ioctl(net, VHOST_SET_IOMMU, &bind);
		if (!ret)
			bound++;
		else if (errno != ENOENT)
			break;
		while (__atomic_load_n(&r.done, __ATOMIC_ACQUIRE) != (int)round)
			;
		if (r.ret)
			break;
		/* The endpoint went, any binding to it with it */
		bind.endpoint = 7;
		ret = ioctl(net, VHOST_SET_IOMMU, &bind);
		if (ret)
			break;
		if (ioctl(self->fd, VHOST_IOMMU_DEL_ENDPOINT, &id) ||
		    add_ep(self->fd, 7, NULL, 0) || add_ep(self->fd, 6, NULL, 0))
			break;
	}
	__atomic_store_n(&r.round, -1, __ATOMIC_RELEASE);
	pthread_join(thread, NULL);
	TH_LOG("%lu rounds, bound before the endpoint went in %lu", round - 1,
	       bound);
	EXPECT_EQ(rounds + 1, round)
		TH_LOG("round %lu: bind %d (%s), DEL_ENDPOINT %d", round, ret,
		       ret ? strerror(errno) : "ok", r.ret);
	close(net);
}

/*
 * vhost-net bound to endpoint NET_EP of domain 7, its TX ring mapped and
 * started (retried until the IOMMU filled the IOTLB for the used ring), as
 * in vhost_net_translates.  Returns the vhost-net fd, or -1.
 */
struct net_dev {
	int fd, kick, call;
	struct tap tap;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
};

static int net_up(struct __test_metadata *_metadata,
		  struct _test_data_viommu *self, struct net_dev *n)
{
	struct vhost_iommu_binding bind = { .fd = self->fd, .endpoint = NET_EP };
	uint64_t want = (1ULL << VIRTIO_F_VERSION_1) |
			(1ULL << VIRTIO_F_ACCESS_PLATFORM);
	uint8_t *ring = gpa_ptr(self->mem, GPA_BASE + NET_OFF_RING);

	n->tap = (struct tap){ -1, -1, -1 };
	n->desc = (void *)ring;
	n->avail = (void *)(ring + 0x1000);
	n->used = (void *)(ring + 0x2000);
	n->kick = eventfd(0, EFD_NONBLOCK);
	n->call = eventfd(0, EFD_NONBLOCK);
	n->fd = open("/dev/vhost-net", O_RDWR);
	if (n->fd < 0 || n->kick < 0 || n->call < 0 || tap_open(&n->tap))
		return -1;
	if (attach(self, 7, NET_EP, 0) != OK ||
	    map(self, 7, NET_IOVA_RING, NET_IOVA_RING + 0x10000 - 1,
		GPA_BASE + NET_OFF_RING, RW) != OK)
		return -1;
	if (ioctl(n->fd, VHOST_SET_OWNER) ||
	    ioctl(n->fd, VHOST_SET_FEATURES, &want) ||
	    net_set_mem(n->fd, self->mem) ||
	    ioctl(n->fd, VHOST_SET_IOMMU, &bind))
		return -1;
	return net_start_tx(n->fd, ring, n->kick, n->call, n->tap.fd);
}

static void net_down(struct net_dev *n)
{
	if (n->fd >= 0)
		close(n->fd);
	if (n->kick >= 0)
		close(n->kick);
	if (n->call >= 0)
		close(n->call);
	tap_close(&n->tap);
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/*
 * IOTLB misses are not lost when more come than vhost-iommu keeps (16): a
 * long MAP holds the device's lock, so nothing answers them meanwhile,
 * while vhost-net misses again on every kick at a new IOVA (the guest
 * rewrites the descriptor).  None of them is mapped: each answer is a
 * fault.  The queue must not wait for another kick: the last IOVA it
 * stopped on must be reported too.
 */
#define LOST_IOVA	0xa0000000ULL
#define LOST_KICKS	40
#define LOST_BIG	0x10000000000ULL

TEST_F_TIMEOUT(viommu, vhost_net_misses_not_lost, 600)
{
	uint64_t size, last = LOST_IOVA + (LOST_KICKS - 1) * PG, one = 1;
	struct virtio_iommu_req_map big = {
		.head.type = VIRTIO_IOMMU_T_MAP, .domain = 8,
		.virt_start = LOST_BIG, .flags = RW,
		/* 4 KiB pages only: the slowest MAP there is */
		.phys_start = PG,
	};
	struct vring_desc *d = self->rq.desc;
	struct virtio_iommu_fault f;
	struct net_dev n;
	int i, busy, seen = 0, got_last = 0;
	uint32_t len;
	double t;

	if (access("/dev/vhost-net", F_OK))
		SKIP(return, "no /dev/vhost-net (modprobe vhost_net)");
	ASSERT_EQ(0, net_up(_metadata, self, &n));
	ASSERT_EQ(OK, attach(self, 8, 4, 0));
	/* A MAP that keeps the device busy for half a second, or 32 GiB */
	for (size = 1ULL << 30; ; size *= 2) {
		t = now_s();
		ASSERT_EQ(OK, map(self, 8, LOST_BIG, LOST_BIG + size - 1, PG, RW));
		t = now_s() - t;
		ASSERT_EQ(OK, unmap(self, 8, LOST_BIG, LOST_BIG + size - 1));
		if (t >= 0.5 || size >= 32ULL << 30)
			break;
	}
	TH_LOG("a MAP of %llu GiB in 4 KiB pages takes %.2f s",
	       (unsigned long long)(size >> 30), t);
	if (t < 0.04) {
		net_down(&n);
		SKIP(return, "MAP too fast to hold the device while we kick");
	}
	evt_post(&self->eq, self->mem, 0, LOST_KICKS + 20, 32);
	/*
	 * One miss first, answered with a fault: the queue's rings are in
	 * the IOTLB then, and each kick below misses at its buffer only.
	 */
	n.avail->ring[0] = 0;
	n.desc[0] = (struct vring_desc){ LOST_IOVA - PG, 64, 0, 0 };
	__atomic_store_n(&n.avail->idx, 1, __ATOMIC_RELEASE);
	ASSERT_EQ(sizeof(one), write(n.kick, &one, sizeof(one)));
	EXPECT_FAULT(VIRTIO_IOMMU_FAULT_R_MAPPING,
		     VIRTIO_IOMMU_FAULT_F_READ | FF_A, NET_EP, LOST_IOVA - PG);

	/* The MAP, not waited for */
	big.virt_end = LOST_BIG + size - 1;
	memcpy(gpa_ptr(self->mem, GPA_BASE + OFF_REQ), &big, sizeof(big));
	d[0] = (struct vring_desc){ GPA_BASE + OFF_REQ, sizeof(big) - 4,
				    VRING_DESC_F_NEXT, 1 };
	d[1] = (struct vring_desc){ GPA_BASE + OFF_RESP, 4, VRING_DESC_F_WRITE,
				    0 };
	self->rq.avail->ring[self->rq.avail_idx % self->rq.num] = 0;
	ASSERT_EQ(0, vq_kick_n(&self->rq, 1));
	usleep(50000);

	/* The guest's packet, at a new unmapped IOVA for every kick */
	for (i = 0; i < LOST_KICKS; i++) {
		n.desc[0] = (struct vring_desc){ LOST_IOVA + i * PG, 64, 0, 0 };
		ASSERT_EQ(sizeof(one), write(n.kick, &one, sizeof(one)));
		usleep(t * 1e6 / (3 * LOST_KICKS));
	}
	busy = __atomic_load_n(&self->rq.used->idx, __ATOMIC_ACQUIRE) ==
	       self->rq.used_idx;
	for (i = 0; i < 120 && vq_wait_used(&self->rq, 1); i++)
		;
	ASSERT_EQ(0, vq_wait_used(&self->rq, 1));
	self->rq.used_idx++;
	EXPECT_EQ(OK, *(uint8_t *)gpa_ptr(self->mem, GPA_BASE + OFF_RESP));
	if (!busy) {
		net_down(&n);
		SKIP(return, "the MAP was over before the kicks");
	}

	/* Every fault, the last IOVA's among them */
	while (!got_last && !evt_next(&self->eq, self->mem, &f, &len)) {
		seen++;
		EXPECT_EQ(NET_EP, f.endpoint);
		if (f.address == last)
			got_last = 1;
	}
	TH_LOG("%d faults reported", seen);
	EXPECT_TRUE(got_last);
	EXPECT_EQ(0, n.used->idx);
	net_down(&n);
}

/*
 * Benchmark: MAP/UNMAP pairs at 1, 16 and 256 requests a kick, the way a
 * guest driver batches them.  Each kick carries @batch MAPs of distinct
 * pages, the next the @batch UNMAPs of the same pages; every answer is
 * checked.  Prints for each batch size
 *   # bench-vhost: batch=B requests=N kicks=K seconds=S requests_per_s=R us_per_kick=U
 * which `make bench-vhost` collects.  VHOST_IOMMU_BENCH_SECONDS sets the
 * time per batch size (default 0.2: the functional run only checks that it
 * works).
 */
#define BENCH_MAX	256

TEST_F_TIMEOUT(viommu, bench_map_unmap, 600)
{
	static const unsigned int batches[] = { 1, 16, BENCH_MAX };
	const char *env = getenv("VHOST_IOMMU_BENCH_SECONDS");
	double secs = env && *env ? atof(env) : 0.2;
	struct vhost_iommu_config c = self->cfg;
	struct vq *vq = &self->rq;
	uint32_t zero = 0, one = 1;
	unsigned int b, i;

	/* A queue of 1024: 256 requests of two descriptors, MAP and UNMAP */
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &zero));
	close(vq->kick);
	close(vq->call);
	memset(gpa_ptr(self->mem, GPA_BASE + OFF_VQ(0)), 0, 0x10000);
	ASSERT_EQ(0, vq_setup(self->fd, self->mem, 0, vq, BIG_QSZ));
	c.max_mappings = 0;			/* the module's default */
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
	EXPECT_EQ(OK, attach(self, 1, 1, 0));

	/* Requests 0..255 MAP page i, 256..511 UNMAP it; chains 2k -> 2k + 1 */
	for (i = 0; i < 2 * BENCH_MAX; i++) {
		unsigned int page = i % BENCH_MAX;
		uint8_t *q = breq(self->mem, i);

		memset(q, 0, BREQ_SZ);
		if (i < BENCH_MAX) {
			struct virtio_iommu_req_map *r = (void *)q;

			r->head.type = VIRTIO_IOMMU_T_MAP;
			r->domain = 1;
			r->virt_start = 0x100000000ULL + page * PG;
			r->virt_end = r->virt_start + PG - 1;
			r->phys_start = GPA_BASE + page * PG;
			r->flags = RW;
		} else {
			struct virtio_iommu_req_unmap *r = (void *)q;

			r->head.type = VIRTIO_IOMMU_T_UNMAP;
			r->domain = 1;
			r->virt_start = 0x100000000ULL + page * PG;
			r->virt_end = r->virt_start + PG - 1;
		}
		vq->desc[2 * i] = (struct vring_desc){
			GPA_BASE + OFF_BREQ + i * BREQ_SZ,
			i < BENCH_MAX ? sizeof(struct virtio_iommu_req_map) - 4 :
					sizeof(struct virtio_iommu_req_unmap) - 4,
			VRING_DESC_F_NEXT, 2 * i + 1 };
		/* 4-byte tails, packed */
		vq->desc[2 * i + 1] = (struct vring_desc){
			GPA_BASE + OFF_BRESP + i * 4, 4, VRING_DESC_F_WRITE, 0 };
	}

	for (b = 0; b < ARRAY_SIZE(batches); b++) {
		unsigned int n = batches[b];
		unsigned long kicks = 0, requests = 0;
		uint8_t *st = gpa_ptr(self->mem, GPA_BASE + OFF_BRESP);
		struct timespec t0, t1;
		double elapsed;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			unsigned int k, first;

			for (k = 0; k < 2; k++) {	/* MAPs, then UNMAPs */
				first = k * BENCH_MAX;
				memset(st + first * 4, 0xff, n * 4);
				for (i = 0; i < n; i++)
					vq->avail->ring[(uint16_t)(vq->avail_idx + i) %
							vq->num] = 2 * (first + i);
				ASSERT_EQ(0, vq_kick_n(vq, n));
				ASSERT_EQ(0, vq_wait_used(vq, n));
				vq->used_idx += n;
				for (i = 0; i < n; i++)
					if (st[(first + i) * 4] != OK) {
						TH_LOG("batch %u: request %u answered %u",
						       n, first + i,
						       st[(first + i) * 4]);
						ASSERT_TRUE(0);
					}
				kicks++;
				requests += n;
			}
			clock_gettime(CLOCK_MONOTONIC, &t1);
			elapsed = (t1.tv_sec - t0.tv_sec) +
				  (t1.tv_nsec - t0.tv_nsec) / 1e9;
		} while (elapsed < secs);
		/* Every MAP was undone: nothing is left mapped */
		EXPECT_FALSE(mapped(self, 1, 0x100000000ULL));
		printf("# bench-vhost: batch=%u requests=%lu kicks=%lu ",
		       n, requests, kicks);
		printf("seconds=%.3f requests_per_s=%.0f us_per_kick=%.2f\n",
		       elapsed, requests / elapsed, elapsed * 1e6 / kicks);
		fflush(stdout);
	}
}

TEST_HARNESS_MAIN
