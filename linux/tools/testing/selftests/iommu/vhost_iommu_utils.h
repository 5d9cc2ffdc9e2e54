/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vhost-iommu selftests: what the VMM and the guest do, for the three
 * programs that test /dev/vhost-iommu: vhost_iommu.c (the device against
 * virtio 1.3), vhost_iommu_net.c (vhost-net bound to an endpoint, its DMA
 * translated by the device) and vhost_iommu_limits.c (what a guest may
 * cost the host).
 *
 * Each program is both the VMM and the guest.  As the VMM it owns the
 * guest memory (an anonymous mapping), hands it to /dev/vhost-iommu as the
 * memory table, sets up the request and event virtqueues and registers
 * endpoints.  As the guest driver it writes virtio-iommu requests into
 * split virtqueues in that memory, kicks through an eventfd, waits on the
 * call eventfd and checks every answer against virtio 1.3.
 */
#ifndef __SELFTEST_VHOST_IOMMU_UTILS_H
#define __SELFTEST_VHOST_IOMMU_UTILS_H

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
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
#define OFF_EVT		0xc0000UL	/* event buffers, 32 bytes each */

/* Endpoint 1's MSI window, its reserved region in the fixture */
#define MSI_LO	0xfee00000ULL
#define MSI_HI	0xfeefffffULL

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
	c->argsz = sizeof(*c);
	c->page_size_mask = ~(PG - 1);
	c->input_start = 0;
	c->input_end = (1ULL << 48) - 1;
	c->domain_start = 1;
	c->domain_end = 1000;
	c->probe_size = PROBE_SIZE;
	c->max_domains = MAX_DOMAINS;
	c->max_mappings = MAX_MAPPINGS;
}

/*
 * A running device on self->mem: owned, the memory table, both queues (on
 * rings cleared first), the fixture's config and endpoints.  The fixture
 * starts one; a test that closed it starts the next.
 */
static void viommu_dev_up(struct __test_metadata *_metadata,
			  struct _test_data_viommu *self)
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
	/*
	 * virtio 1.3's device: page-table sharing and posted MAP add PROBE
	 * properties (and requests); vhost_iommu_table.c and
	 * vhost_iommu_posted.c turn them on where they test them.
	 */
	features &= ~(1ULL << VIRTIO_IOMMU_F_ATTACH_TABLE);
	features &= ~(1ULL << VIRTIO_IOMMU_F_POSTED_MAP);
	/* Dirty logging is a migration's: vhost_iommu_state.c turns it on */
	features &= ~(1ULL << VHOST_F_LOG_ALL);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_SET_FEATURES, &features));
	m = calloc(1, sizeof(*m) + sizeof(*r));
	ASSERT_NE(NULL, m);
	m->nregions = 1;
	r = &m->regions[0];
	r->guest_phys_addr = GPA_BASE;
	r->memory_size = MEM_SIZE;
	r->userspace_addr = (uintptr_t)self->mem;
	ASSERT_EQ(0, ioctl(self->fd, VHOST_SET_MEM_TABLE, m));
	free(m);
	memset(gpa_ptr(self->mem, GPA_BASE + OFF_VQ(0)), 0, OFF_VQ(2));
	ASSERT_EQ(0, vq_setup(self->fd, self->mem, 0, &self->rq, QSZ));
	ASSERT_EQ(0, vq_setup(self->fd, self->mem, 1, &self->eq, QSZ));
	default_cfg(&self->cfg);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &self->cfg));
	ASSERT_EQ(0, add_ep(self->fd, 1, &msi_region, 1));
	for (i = 2; i <= NR_EPS; i++)
		ASSERT_EQ(0, add_ep(self->fd, i, NULL, 0));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
}

/* Close the device, and its queues' eventfds */
static void viommu_dev_down(struct _test_data_viommu *self)
{
	struct vq *q[] = { &self->rq, &self->eq };
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(q); i++) {
		if (q[i]->kick > 0)
			close(q[i]->kick);
		if (q[i]->call > 0)
			close(q[i]->call);
		q[i]->kick = -1;
		q[i]->call = -1;
	}
	if (self->fd >= 0)
		close(self->fd);
	self->fd = -1;
}

FIXTURE_SETUP(viommu)
{
	self->fd = -1;
	self->mem = mmap(NULL, MEM_SIZE, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ASSERT_NE(MAP_FAILED, self->mem);
	viommu_dev_up(_metadata, self);
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

/*
 * Reset the device and negotiate every feature it offers but
 * @drop; @want must be among them.  The caller starts it again.
 */
static void renegotiate(struct __test_metadata *_metadata,
			struct _test_data_viommu *self, uint64_t want,
			uint64_t drop)
{
	uint64_t f;

	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_GET_FEATURES, &f));
	ASSERT_EQ(want, f & want);
	f &= ~drop;
	ASSERT_EQ(0, ioctl(self->fd, VHOST_SET_FEATURES, &f));
}

/* Restart the device with @c (limits may only change while it is stopped) */
static void reconfigure(struct __test_metadata *_metadata,
			struct _test_data_viommu *self,
			struct vhost_iommu_config *c)
{
	uint32_t one = 1;

	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, c));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
}

/*
 * The benchmarks' request queue: 1024 entries, for 256 requests of two
 * descriptors in one kick, and the module's default mapping limit.
 */
static void big_request_queue(struct __test_metadata *_metadata,
			      struct _test_data_viommu *self)
{
	struct vhost_iommu_config c = self->cfg;
	struct vq *vq = &self->rq;
	uint32_t one = 1;

	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
	close(vq->kick);
	close(vq->call);
	memset(gpa_ptr(self->mem, GPA_BASE + OFF_VQ(0)), 0, 0x10000);
	ASSERT_EQ(0, vq_setup(self->fd, self->mem, 0, vq, BIG_QSZ));
	c.max_mappings = 0;			/* the module's default */
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
}

/* Write @val to the file at @path (sysfs, debugfs, cgroupfs): 0 or -1 */
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

/* The number the file at @path begins with, -1 without one */
static long long read_number(const char *path)
{
	FILE *f = fopen(path, "r");
	long long val = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%lld", &val) != 1)
		val = -1;
	fclose(f);
	return val;
}

static unsigned long count_from_env(const char *name, unsigned long def)
{
	const char *s = getenv(name);

	return s && *s ? strtoul(s, NULL, 0) : def;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

/* Faults: TRANSLATE with _FAULT puts records on the event queue */
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
#define TF_P	VHOST_IOMMU_TRANSLATE_F_PREFETCH
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

/*
 * vhost-net, bound to an endpoint with VHOST_SET_IOMMU: its TX queue at
 * IOVAs the guest mapped, a tap behind it.
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
/*
 * Start vhost-net's TX queue on @ring at NET_IOVA_RING, trying
 * VHOST_NET_SET_BACKEND up to @tries times while it fails with EFAULT (its
 * first access to the used ring waits for its miss to be answered, unless
 * the translation was prefetched).
 */
static int net_start_tx(int fd, void *ring, int kick_fd, int call_fd, int tap,
			int tries)
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
	for (i = 0; i < tries; i++) {
		if (i)
			usleep(10000);
		ret = ioctl(fd, VHOST_NET_SET_BACKEND, &backend);
		if (!ret || errno != EFAULT)
			break;
	}
	return ret;
}

/* Frame @seq: broadcast, our EtherType, then bytes that differ per frame */
static void net_frame(uint8_t *pkt, uint32_t seq)
{
	int i;

	memset(pkt, 0, NET_HDR);
	memset(pkt + NET_HDR, 0xff, 6);
	memcpy(pkt + NET_HDR + 6, "\x02\x00\x00\x00\x00\x05", 6);
	pkt[NET_HDR + 12] = NET_ETHERTYPE >> 8;
	pkt[NET_HDR + 13] = NET_ETHERTYPE & 0xff;
	memcpy(pkt + NET_HDR + 14, &seq, sizeof(seq));
	for (i = 18; i < NET_FRAME; i++)
		pkt[NET_HDR + i] = i * 7 + seq * 13 + 3;
}

/*
 * vhost-net bound to endpoint NET_EP of domain 7, its TX ring mapped and
 * started (retried until the IOMMU filled the IOTLB for the used ring), as
 * vhost_net_translates does it step by step.  0, or -1.
 */
struct net_dev {
	int fd, kick, call;
	struct tap tap;
	struct vring_desc *desc;
	struct vring_avail *avail;
	struct vring_used *used;
};

/* vhost-net's file, eventfds and tap, its rings at NET_OFF_RING.  0 or -1. */
static int net_open(struct _test_data_viommu *self, struct net_dev *n)
{
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
	return 0;
}

/*
 * The VMM's part, once the guest mapped the rings: owner, features, memory
 * table, bound to NET_EP, TX started.  0 or -1.
 */
static int net_bind_start(struct _test_data_viommu *self, struct net_dev *n)
{
	struct vhost_iommu_binding bind = { .fd = self->fd, .endpoint = NET_EP };
	uint64_t want = (1ULL << VIRTIO_F_VERSION_1) |
			(1ULL << VIRTIO_F_ACCESS_PLATFORM);

	if (ioctl(n->fd, VHOST_SET_OWNER) ||
	    ioctl(n->fd, VHOST_SET_FEATURES, &want) ||
	    net_set_mem(n->fd, self->mem) ||
	    ioctl(n->fd, VHOST_SET_IOMMU, &bind))
		return -1;
	return net_start_tx(n->fd, (void *)n->desc, n->kick, n->call,
			    n->tap.fd, 100);
}

static int net_up(struct __test_metadata *_metadata,
		  struct _test_data_viommu *self, struct net_dev *n)
{
	if (net_open(self, n))
		return -1;
	if (attach(self, 7, NET_EP, 0) != OK ||
	    map(self, 7, NET_IOVA_RING, NET_IOVA_RING + 0x10000 - 1,
		GPA_BASE + NET_OFF_RING, RW) != OK)
		return -1;
	return net_bind_start(self, n);
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

#endif /* __SELFTEST_VHOST_IOMMU_UTILS_H */
