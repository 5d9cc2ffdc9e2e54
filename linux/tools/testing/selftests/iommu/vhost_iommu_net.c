// SPDX-License-Identifier: GPL-2.0-only
/*
 * vhost-iommu selftest: the IOTLB provider.  vhost-net is bound to an
 * endpoint (VHOST_SET_IOMMU) and the kernel translates its DMA through the
 * endpoint's domain: packets go out from IOVAs, UNMAP and DETACH take them
 * away, bindings end with the endpoint, the device or the IOMMU, and misses
 * are neither lost nor left waiting, also while several VMM threads and
 * the guest work at once and while the files close.  With page-table
 * sharing, vhost-net translates through the guest's own table and
 * INVALIDATE takes away what it cached.
 */
#include "vhost_iommu_model.h"
#include "vhost_iommu_pt.h"

/*
 * vhost-net bound to an endpoint (VHOST_SET_IOMMU): the kernel translates
 * its DMA through the endpoint's domain.  This program is the VMM of both
 * devices and the guest: the TX ring and a packet live in guest memory at
 * IOVAs the guest mapped; the packet must come out of the tap byte for
 * byte, and after UNMAP the same descriptor must not: nothing comes out and
 * the guest gets a fault on the event queue.
 */

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
	/* A prefetch needs a device bound to the endpoint */
	EXPECT_EQ(-ENODEV, xlate_f(self, NET_EP, NET_IOVA_RING, TF_P));
	ASSERT_EQ(0, ioctl(net, VHOST_SET_IOMMU, &bind));
	EXPECT_EQ(-1, ioctl(net, VHOST_SET_IOMMU, &bind));
	EXPECT_EQ(EBUSY, errno);
	/* One that does not translate gives nothing (and no fault) */
	EXPECT_EQ(-ENOENT, xlate_f(self, NET_EP, NET_IOVA_BUF + PG, TF_P));
	/*
	 * The VMM prefetches the used ring's translation (its IOVA's, which
	 * the IOTLB entry stretches to the end of the MAP): VHOST_NET_SET_BACKEND
	 * then starts the queue on the first try, without waiting for a miss.
	 */
	ASSERT_EQ(0, xlate_f(self, NET_EP, NET_IOVA_RING + 0x2000,
			     TF_R | TF_W | TF_P));

	kick.fd = eventfd(0, EFD_NONBLOCK);
	call.fd = eventfd(0, EFD_NONBLOCK);
	ASSERT_LE(0, kick.fd);
	ASSERT_LE(0, call.fd);
	ASSERT_EQ(0, net_start_tx(net, ring, kick.fd, call.fd, tap.fd, 1));

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
 * removes the endpoint while this one binds it, round after round:
 * VHOST_IOMMU_DEL_RACE rounds (default 20000), or as many as fit in
 * VHOST_IOMMU_DEL_RACE_SECONDS (default 60: a KASAN kernel under TCG runs
 * a round in tens of milliseconds).
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
	double t0 = now_s(), end = t0 +
		count_from_env("VHOST_IOMMU_DEL_RACE_SECONDS", 60);
	struct vhost_iommu_binding bind = { .fd = self->fd, .endpoint = 6 };
	uint64_t feat = (1ULL << VIRTIO_F_VERSION_1) |
			(1ULL << VIRTIO_F_ACCESS_PLATFORM);
	struct del_racer r = { .fd = self->fd };
	unsigned long round, bound = 0;
	uint32_t id = 7;
	pthread_t thread;
	int net, ret = 0, k, failed = 1;

	net = open("/dev/vhost-net", O_RDWR);
	if (net < 0 && errno == ENOENT)
		SKIP(return, "no /dev/vhost-net (modprobe vhost_net)");
	ASSERT_LE(0, net);
	ASSERT_EQ(0, ioctl(net, VHOST_SET_OWNER));
	ASSERT_EQ(0, ioctl(net, VHOST_SET_FEATURES, &feat));
	ASSERT_EQ(0, pthread_create(&thread, NULL, del_race_loop, &r));
	for (round = 1; ; round++) {
		if (round > rounds || now_s() > end) {
			failed = 0;
			break;
		}
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
	TH_LOG("%lu rounds in %.0f s, bound before the endpoint went in %lu",
	       round - 1, now_s() - t0, bound);
	EXPECT_FALSE(failed)
		TH_LOG("round %lu: bind %d (%s), DEL_ENDPOINT %d", round, ret,
		       ret ? strerror(errno) : "ok", r.ret);
	/* Enough rounds for the two calls to meet in every order */
	EXPECT_LE(rounds < 200 ? rounds : 200, round - 1);
	close(net);
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

/* Send @req, a MAP or UNMAP of gigabytes, without waiting for it */
static int big_post(struct _test_data_viommu *self, const void *req,
		    size_t size)
{
	struct vring_desc *d = self->rq.desc;

	memcpy(gpa_ptr(self->mem, GPA_BASE + OFF_REQ), req, size);
	*(uint8_t *)gpa_ptr(self->mem, GPA_BASE + OFF_RESP) = 0xff;
	d[0] = (struct vring_desc){ GPA_BASE + OFF_REQ, size - 4,
				    VRING_DESC_F_NEXT, 1 };
	d[1] = (struct vring_desc){ GPA_BASE + OFF_RESP, 4, VRING_DESC_F_WRITE,
				    0 };
	self->rq.avail->ring[self->rq.avail_idx % self->rq.num] = 0;
	return vq_kick_n(&self->rq, 1);
}

/*
 * Its status, waited for up to ten minutes where the helpers give a
 * request two seconds: under KASAN the UNMAP of what a MAP took half a
 * second for takes longer than that.  -1 if the device never answered.
 */
static int big_wait(struct _test_data_viommu *self)
{
	int i;

	for (i = 0; i < 120; i++) {
		if (!vq_wait_used(&self->rq, 1)) {
			self->rq.used_idx++;
			return *(uint8_t *)gpa_ptr(self->mem, GPA_BASE + OFF_RESP);
		}
	}
	return -1;
}

TEST_F_TIMEOUT(viommu, vhost_net_misses_not_lost, 600)
{
	uint64_t size, last = LOST_IOVA + (LOST_KICKS - 1) * PG, one = 1;
	struct virtio_iommu_req_map big = {
		.head.type = VIRTIO_IOMMU_T_MAP, .domain = 8,
		.virt_start = LOST_BIG, .flags = RW,
		/* 4 KiB pages only: the slowest MAP there is */
		.phys_start = PG,
	};
	struct virtio_iommu_req_unmap big_unmap = {
		.head.type = VIRTIO_IOMMU_T_UNMAP, .domain = 8,
		.virt_start = LOST_BIG,
	};
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
		big.virt_end = LOST_BIG + size - 1;
		big_unmap.virt_end = big.virt_end;
		t = now_s();
		ASSERT_EQ(0, big_post(self, &big, sizeof(big)));
		ASSERT_EQ(OK, big_wait(self));
		t = now_s() - t;
		ASSERT_EQ(0, big_post(self, &big_unmap, sizeof(big_unmap)));
		ASSERT_EQ(OK, big_wait(self));
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
	ASSERT_EQ(0, big_post(self, &big, sizeof(big)));
	usleep(50000);

	/* The guest's packet, at a new unmapped IOVA for every kick */
	for (i = 0; i < LOST_KICKS; i++) {
		n.desc[0] = (struct vring_desc){ LOST_IOVA + i * PG, 64, 0, 0 };
		ASSERT_EQ(sizeof(one), write(n.kick, &one, sizeof(one)));
		usleep(t * 1e6 / (3 * LOST_KICKS));
	}
	busy = __atomic_load_n(&self->rq.used->idx, __ATOMIC_ACQUIRE) ==
	       self->rq.used_idx;
	ASSERT_EQ(OK, big_wait(self));
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
 * Several guest CPUs on the one request queue, as a guest driver has them:
 * CPU u owns request slots u * SQ_SLOTS on (slot s: descriptors 2s and
 * 2s + 1, the request at breq(s), the answer at bresp(s)).  Publishing in
 * the avail ring and reaping the used ring take a lock; the device serves
 * the CPUs' requests in whatever order they come.
 */
#define SQ_SLOTS	4
#define SQ_USERS	(QSZ / 2 / SQ_SLOTS)

struct sq {
	pthread_mutex_t lock;
	void *mem;
	struct vq *vq;
	/* By head, under @lock */
	uint8_t inflight[QSZ];
	uint8_t done[QSZ];
	uint32_t len[QSZ];
	unsigned long strays;		/* used heads nobody had sent */
};

static int sq_send(struct sq *q, unsigned int user, const struct rreq *r,
		   unsigned int n)
{
	struct vq *vq = q->vq;
	uint64_t one = 1;
	uint16_t head;
	unsigned int i;
	int ret;

	pthread_mutex_lock(&q->lock);
	for (i = 0; i < n; i++) {
		head = slot_fill(q->mem, vq, user * SQ_SLOTS + i, &r[i]);
		q->inflight[head] = 1;
		q->done[head] = 0;
		vq->avail->ring[(uint16_t)(vq->avail_idx + i) % vq->num] = head;
	}
	/* used_event: a call for every answer, whichever CPU waits for it */
	vq->avail->ring[vq->num] = vq->used_idx;
	__atomic_thread_fence(__ATOMIC_RELEASE);
	vq->avail_idx += n;
	__atomic_store_n(&vq->avail->idx, vq->avail_idx, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	ret = write(vq->kick, &one, sizeof(one)) == sizeof(one) ? 0 : -1;
	pthread_mutex_unlock(&q->lock);
	return ret;
}

/* Take what the device used, for whichever CPU sent it; under q->lock */
static void sq_reap(struct sq *q)
{
	struct vq *vq = q->vq;
	struct vring_used_elem e;

	while (vq->used_idx !=
	       __atomic_load_n(&vq->used->idx, __ATOMIC_ACQUIRE)) {
		e = vq->used->ring[vq->used_idx++ % vq->num];
		if (e.id >= QSZ || !q->inflight[e.id]) {
			q->strays++;
			continue;
		}
		q->inflight[e.id] = 0;
		q->done[e.id] = 1;
		q->len[e.id] = e.len;
	}
	vq->avail->ring[vq->num] = vq->used_idx;
}

/* Wait until the device used @user's @n requests: 0, or -1 after @secs */
static int sq_wait(struct sq *q, unsigned int user, unsigned int n,
		   double secs)
{
	struct pollfd pfd = { .fd = q->vq->call, .events = POLLIN };
	double end = now_s() + secs;
	unsigned int i, got;
	uint64_t val;

	for (;;) {
		pthread_mutex_lock(&q->lock);
		sq_reap(q);
		for (got = 0, i = 0; i < n; i++)
			got += q->done[2 * (user * SQ_SLOTS + i)];
		pthread_mutex_unlock(&q->lock);
		if (got == n)
			return 0;
		if (now_s() > end)
			return -1;
		/* The CPU that reads the call eventfd reaps for the others */
		if (poll(&pfd, 1, 2) > 0 && read(pfd.fd, &val, sizeof(val)) < 0 &&
		    errno != EAGAIN)
			return -1;
	}
}

/*
 * Send @user's @n requests and check each answer against its r->want:
 * "" if all are allowed, else what went wrong, written in @why.
 */
static const char *sq_do(struct sq *q, unsigned int user, struct rreq *r,
			 unsigned int n, char *why, size_t len)
{
	struct vring_used_elem e;
	const char *what;
	unsigned int i, s;
	int status;

	if (sq_send(q, user, r, n))
		return "cannot kick";
	if (sq_wait(q, user, n, 5))
		return "no answer within 5 s: the queue is stuck";
	for (i = 0; i < n; i++) {
		s = user * SQ_SLOTS + i;
		e = (struct vring_used_elem){ .id = 2 * s, .len = q->len[2 * s] };
		what = check_answer(q->mem, &r[i], s, &e, &status);
		if (*what) {
			snprintf(why, len, "request type %u: %s (status %d)",
				 r[i].head.type, what, status);
			return why;
		}
	}
	return "";
}

/* Requests of the concurrent test: well-formed, each with what it wants */
static void rq_ep(struct rreq *r, uint8_t type, uint32_t dom, uint32_t ep)
{
	memset(r, 0, sizeof(*r));
	/* ATTACH and DETACH: domain and endpoint in the same place */
	r->attach.head.type = type;
	r->attach.domain = dom;
	r->attach.endpoint = ep;
	r->out_len = sizeof(r->attach) - 4;
	r->in_len = 4;
	r->want = S(OK);
}

/* One page at @iova */
static void rq_map(struct rreq *r, uint32_t dom, uint64_t iova,
		   uint64_t phys, uint32_t flags, uint32_t want)
{
	memset(r, 0, sizeof(*r));
	r->map.head.type = VIRTIO_IOMMU_T_MAP;
	r->map.domain = dom;
	r->map.virt_start = iova;
	r->map.virt_end = iova + PG - 1;
	r->map.phys_start = phys;
	r->map.flags = flags;
	r->out_len = sizeof(r->map) - 4;
	r->in_len = 4;
	r->want = want;
}

static void rq_unmap(struct rreq *r, uint32_t dom, uint64_t iova)
{
	memset(r, 0, sizeof(*r));
	r->unmap.head.type = VIRTIO_IOMMU_T_UNMAP;
	r->unmap.domain = dom;
	r->unmap.virt_start = iova;
	r->unmap.virt_end = iova + PG - 1;
	r->out_len = sizeof(r->unmap) - 4;
	r->in_len = 4;
	r->want = S(OK);
}

/*
 * vhost-iommu with several VMM threads and a bound vhost-net at once.
 * This thread is the guest's network driver:
 * vhost-net, bound to endpoint NET_EP of domain 7, transmits one frame
 * after the other, each from a page the guest maps just before at one of
 * four IOVAs and unmaps once it went out, so that every frame takes an
 * IOTLB miss, and an IOVA maps a different page (with other bytes) each
 * time round: a translation kept past its UNMAP sends the wrong bytes.
 * Meanwhile, on the same request queue, CONC_CPUS guest CPUs ATTACH,
 * MAP, TRANSLATE, UNMAP and DETACH their own endpoints in disjoint IOVA
 * windows (the first in domain 7 itself, so that its UNMAPs invalidate
 * the bound device while it misses), and a VMM thread binds a second
 * vhost-net to an endpoint, then deletes and adds that endpoint back.
 * Every answer must be the one expected, every frame must come out byte
 * for byte within 5 s (no miss lost or left waiting), no fault may be
 * reported, and all of it must end in bounded time.
 * VHOST_IOMMU_CONC_SECONDS sets how long (default 3).
 */
#define CONC_CPUS	3
#define NET_DOM		7
#define CHURN_EP	8
#define CHURN_DOM	30

struct conc {
	struct _test_data_viommu *self;
	struct sq q;
	int stop;			/* __atomic */
};

struct conc_thread {
	struct conc *c;
	pthread_t thread;
	unsigned int user;		/* request slots */
	uint32_t ep, dom;
	uint64_t iova;			/* a CPU's IOVA window */
	int net;			/* the VMM thread's vhost-net */
	unsigned long rounds;
	char err[256];
};

static void *conc_fail(struct conc_thread *t, unsigned long round,
		       const char *step, const char *what)
{
	snprintf(t->err, sizeof(t->err), "round %lu: %s: %s", round, step,
		 what);
	return NULL;
}

static void *conc_cpu(void *arg)
{
	struct conc_thread *t = arg;
	struct conc *c = t->c;
	uint64_t iova[SQ_SLOTS], phys[SQ_SLOTS];
	struct vhost_iommu_translate x;
	struct rreq r[SQ_SLOTS];
	const char *what;
	char why[160];
	unsigned long k;
	unsigned int j;

	for (k = 0; !__atomic_load_n(&c->stop, __ATOMIC_RELAXED); k++) {
		rq_ep(&r[0], VIRTIO_IOMMU_T_ATTACH, t->dom, t->ep);
		what = sq_do(&c->q, t->user, r, 1, why, sizeof(why));
		if (*what)
			return conc_fail(t, k, "ATTACH", what);
		for (j = 0; j < SQ_SLOTS; j++) {
			iova[j] = t->iova + ((k * SQ_SLOTS + j) % 512) * PG;
			phys[j] = GPA_BASE + ((k + 7 * j) % (MEM_SIZE / PG)) * PG;
			rq_map(&r[j], t->dom, iova[j], phys[j], RW, S(OK));
		}
		what = sq_do(&c->q, t->user, r, SQ_SLOTS, why, sizeof(why));
		if (*what)
			return conc_fail(t, k, "MAP", what);
		for (j = 0; j < SQ_SLOTS; j++) {
			if (xlate(c->self, t->ep, iova[j] + 8, &x) ||
			    x.gpa != phys[j] + 8 ||
			    x.perm != (VHOST_IOMMU_PERM_READ |
				       VHOST_IOMMU_PERM_WRITE))
				return conc_fail(t, k, "TRANSLATE",
						 "not the page just mapped");
			rq_unmap(&r[j], t->dom, iova[j]);
		}
		what = sq_do(&c->q, t->user, r, SQ_SLOTS, why, sizeof(why));
		if (*what)
			return conc_fail(t, k, "UNMAP", what);
		for (j = 0; j < SQ_SLOTS; j++)
			if (xlate(c->self, t->ep, iova[j], &x) != -ENOENT)
				return conc_fail(t, k, "TRANSLATE",
						 "still mapped after UNMAP");
		t->rounds++;
		if (!(k % 2))
			continue;
		rq_ep(&r[0], VIRTIO_IOMMU_T_DETACH, t->dom, t->ep);
		/* Its own domain goes with it; domain 7 keeps NET_EP */
		rq_map(&r[1], t->dom, iova[0], phys[0], RW,
		       t->dom == NET_DOM ? S(OK) : S(NOENT));
		rq_unmap(&r[2], t->dom, iova[0]);
		r[2].want = t->dom == NET_DOM ? S(OK) : S(NOENT);
		what = sq_do(&c->q, t->user, r, 3, why, sizeof(why));
		if (*what)
			return conc_fail(t, k, "DETACH, MAP, UNMAP", what);
	}
	return NULL;
}

static void *conc_vmm(void *arg)
{
	struct conc_thread *t = arg;
	struct conc *c = t->c;
	struct vhost_iommu_binding bind = {
		.fd = c->self->fd, .endpoint = CHURN_EP,
	};
	struct vhost_iommu_translate x;
	uint32_t id = CHURN_EP;
	const char *what;
	struct rreq r[2];
	char why[160];
	unsigned long k;

	for (k = 0; !__atomic_load_n(&c->stop, __ATOMIC_RELAXED); k++) {
		if (ioctl(t->net, VHOST_SET_IOMMU, &bind))
			return conc_fail(t, k, "VHOST_SET_IOMMU", strerror(errno));
		rq_ep(&r[0], VIRTIO_IOMMU_T_ATTACH, CHURN_DOM, CHURN_EP);
		rq_map(&r[1], CHURN_DOM, 0, GPA_BASE, RW, S(OK));
		what = sq_do(&c->q, t->user, r, 2, why, sizeof(why));
		if (*what)
			return conc_fail(t, k, "ATTACH, MAP", what);
		if (xlate(c->self, CHURN_EP, 0, &x) || x.gpa != GPA_BASE)
			return conc_fail(t, k, "TRANSLATE", "not mapped");
		if (ioctl(c->self->fd, VHOST_IOMMU_DEL_ENDPOINT, &id))
			return conc_fail(t, k, "DEL_ENDPOINT", strerror(errno));
		/* The domain went with its endpoint, the binding too */
		rq_map(&r[0], CHURN_DOM, PG, GPA_BASE, RW, S(NOENT));
		what = sq_do(&c->q, t->user, r, 1, why, sizeof(why));
		if (*what)
			return conc_fail(t, k, "MAP after DEL_ENDPOINT", what);
		if (xlate(c->self, CHURN_EP, 0, &x) != -ENODEV)
			return conc_fail(t, k, "TRANSLATE", "endpoint still there");
		if (!ioctl(t->net, VHOST_SET_IOMMU, &bind) || errno != ENOENT)
			return conc_fail(t, k, "VHOST_SET_IOMMU",
					 "bound to a deleted endpoint");
		if (add_ep(c->self->fd, CHURN_EP, NULL, 0))
			return conc_fail(t, k, "ADD_ENDPOINT", strerror(errno));
		t->rounds++;
	}
	return NULL;
}

TEST_F_TIMEOUT(viommu, vhost_net_concurrent_vmm, 300)
{
	double secs = count_from_env("VHOST_IOMMU_CONC_SECONDS", 3), end;
	uint64_t feat = (1ULL << VIRTIO_F_VERSION_1) |
			(1ULL << VIRTIO_F_ACCESS_PLATFORM);
	struct conc c = { .self = self };
	struct conc_thread t[CONC_CPUS + 1] = { 0 };
	unsigned int net_user = CONC_CPUS + 1, k;
	unsigned long sent = 0;
	char err[256] = "", why[160];
	uint8_t got[2048], *pkt;
	const char *what;
	struct net_dev n;
	struct rreq r;
	uint64_t one = 1, iova, gpa;
	uint16_t head;
	int len, i;

	if (access("/dev/vhost-net", F_OK))
		SKIP(return, "no /dev/vhost-net (modprobe vhost_net)");
	ASSERT_GE(SQ_USERS, net_user + 1);
	ASSERT_EQ(0, net_up(_metadata, self, &n));
	evt_post(&self->eq, self->mem, 0, 8, 32);
	t[CONC_CPUS].net = open("/dev/vhost-net", O_RDWR);
	ASSERT_LE(0, t[CONC_CPUS].net);
	ASSERT_EQ(0, ioctl(t[CONC_CPUS].net, VHOST_SET_OWNER));
	ASSERT_EQ(0, ioctl(t[CONC_CPUS].net, VHOST_SET_FEATURES, &feat));

	c.q.mem = self->mem;
	c.q.vq = &self->rq;
	ASSERT_EQ(0, pthread_mutex_init(&c.q.lock, NULL));
	for (k = 0; k <= CONC_CPUS; k++) {
		t[k].c = &c;
		t[k].user = k;
		t[k].ep = k < CONC_CPUS ? 2 + k : CHURN_EP;
		t[k].dom = k ? 20 + k : NET_DOM;
		t[k].iova = (uint64_t)(k + 1) << 32;
		ASSERT_EQ(0, pthread_create(&t[k].thread, NULL,
					    k < CONC_CPUS ? conc_cpu : conc_vmm,
					    &t[k]));
	}

	for (end = now_s() + secs; now_s() < end; sent++) {
		head = sent % QSZ;
		iova = NET_IOVA_BUF + (sent % 4) * PG;
		gpa = GPA_BASE + NET_OFF_BUF + (sent % 8) * PG;
		pkt = gpa_ptr(self->mem, gpa);
		net_frame(pkt, sent);
		rq_map(&r, NET_DOM, iova, gpa, VIRTIO_IOMMU_MAP_F_READ, S(OK));
		what = sq_do(&c.q, net_user, &r, 1, why, sizeof(why));
		if (*what) {
			snprintf(err, sizeof(err), "frame %lu: MAP: %s", sent,
				 what);
			break;
		}
		n.desc[head] = (struct vring_desc){ iova, NET_HDR + NET_FRAME,
						    0, 0 };
		n.avail->ring[head] = head;
		__atomic_store_n(&n.avail->idx, (uint16_t)(sent + 1),
				 __ATOMIC_RELEASE);
		if (write(n.kick, &one, sizeof(one)) != sizeof(one)) {
			snprintf(err, sizeof(err), "frame %lu: kick", sent);
			break;
		}
		len = tap_frame(&n.tap, got, sizeof(got), 5000);
		if (len != NET_FRAME || memcmp(got, pkt + NET_HDR, NET_FRAME)) {
			snprintf(err, sizeof(err),
				 "frame %lu: %d bytes out, %s", sent, len,
				 len < 0 ? "none within 5 s" :
				 "not the bytes mapped at its IOVA");
			break;
		}
		for (i = 0; i < 500 && __atomic_load_n(&n.used->idx,
						       __ATOMIC_ACQUIRE) !=
				       (uint16_t)(sent + 1); i++)
			usleep(10000);
		if (i == 500) {
			snprintf(err, sizeof(err), "frame %lu: not used", sent);
			break;
		}
		rq_unmap(&r, NET_DOM, iova);
		what = sq_do(&c.q, net_user, &r, 1, why, sizeof(why));
		if (*what) {
			snprintf(err, sizeof(err), "frame %lu: UNMAP: %s",
				 sent, what);
			break;
		}
	}
	__atomic_store_n(&c.stop, 1, __ATOMIC_RELAXED);
	for (k = 0; k <= CONC_CPUS; k++)
		ASSERT_EQ(0, pthread_join(t[k].thread, NULL));
	TH_LOG("%.0f s: %lu frames; CPU rounds %lu %lu %lu; VMM rounds %lu",
	       secs, sent, t[0].rounds, t[1].rounds, t[2].rounds,
	       t[CONC_CPUS].rounds);
	EXPECT_STREQ("", err);
	for (k = 0; k <= CONC_CPUS; k++) {
		EXPECT_STREQ("", t[k].err)
			TH_LOG("thread %u (endpoint %u)", k, t[k].ep);
		/* Each did its part alongside the others */
		EXPECT_LT(0, t[k].rounds);
	}
	EXPECT_LT(0, sent);
	EXPECT_EQ(0, c.q.strays);
	/* Every DMA was to a mapped IOVA: no fault */
	EXPECT_TRUE(evt_none(&self->eq));
	close(t[CONC_CPUS].net);
	net_down(&n);
}

/*
 * Closing either file while misses are in flight (the
 * IOMMU may unbind a device whose owner is closing it).  A thread kicks
 * vhost-net as fast as it can at IOVAs that miss: unmapped ones, answered
 * with faults, and now and then a mapped one, answered and sent.  Then,
 * after a delay that differs each round, this thread closes vhost-net,
 * closes vhost-iommu, deletes the endpoint, or closes both files at once
 * with a second thread.  On the debug kernel nothing may be used after it
 * is freed (KASAN) or locked out of order (lockdep), and what is left
 * must work: a vhost-net whose IOMMU or endpoint went hands its next miss
 * to its own VMM again, and the endpoint of a vhost-net that went binds
 * the next one.  VHOST_IOMMU_CLOSE_ROUNDS sets the rounds (default 40).
 */
#define CLOSE_IOVA	0xb0000000ULL

struct kicker {
	struct net_dev *n;
	int stop;			/* __atomic */
	unsigned long kicks;
};

static void *kick_loop(void *arg)
{
	struct kicker *k = arg;
	struct net_dev *n = k->n;
	uint16_t next = 0, used;
	uint64_t one = 1, iova;

	while (!__atomic_load_n(&k->stop, __ATOMIC_RELAXED)) {
		iova = k->kicks % 4 ? CLOSE_IOVA + (k->kicks % 64) * PG :
				      NET_IOVA_BUF;
		used = __atomic_load_n(&n->used->idx, __ATOMIC_ACQUIRE);
		if (used == next) {
			/* The last one went: queue another */
			n->desc[next % QSZ] = (struct vring_desc){ iova, 64,
								   0, 0 };
			n->avail->ring[next % QSZ] = next % QSZ;
			__atomic_store_n(&n->avail->idx, ++next,
					 __ATOMIC_RELEASE);
		} else {
			/* Stuck on a fault: the guest points it elsewhere */
			n->desc[(uint16_t)(next - 1) % QSZ].addr = iova;
		}
		if (write(n->kick, &one, sizeof(one)) != sizeof(one))
			break;
		k->kicks++;
		sched_yield();
	}
	return NULL;
}

static void *close_fd(void *arg)
{
	int *fd = arg;

	close(*fd);
	*fd = -1;
	return NULL;
}

/* vhost-net, unbound, asks its VMM: a miss message comes within 3 s */
static int misses_to_vmm(struct net_dev *n)
{
	struct pollfd pfd = { .fd = n->fd, .events = POLLIN };
	struct vhost_msg msg;
	uint64_t one = 1;

	if (write(n->kick, &one, sizeof(one)) != sizeof(one) ||
	    poll(&pfd, 1, 3000) != 1 ||
	    read(n->fd, &msg, sizeof(msg)) != sizeof(msg))
		return 0;
	return msg.type == VHOST_IOTLB_MSG &&
	       msg.iotlb.type == VHOST_IOTLB_MISS;
}

TEST_F_TIMEOUT(viommu, close_while_missing, 600)
{
	unsigned long rounds = count_from_env("VHOST_IOMMU_CLOSE_ROUNDS", 40);
	double t0 = now_s();
	static const char *const kind[] = {
		"close vhost-net", "close vhost-iommu", "DEL_ENDPOINT",
		"close both at once",
	};
	uint32_t id = NET_EP;
	struct kicker k;
	struct net_dev n;
	unsigned long r, kicks = 0;
	pthread_t thread, closer;

	if (access("/dev/vhost-net", F_OK))
		SKIP(return, "no /dev/vhost-net (modprobe vhost_net)");
	for (r = 0; r < rounds; r++) {
		ASSERT_EQ(0, net_up(_metadata, self, &n))
			TH_LOG("round %lu: the endpoint does not bind", r);
		ASSERT_EQ(OK, map(self, NET_DOM, NET_IOVA_BUF,
				  NET_IOVA_BUF + PG - 1,
				  GPA_BASE + NET_OFF_BUF,
				  VIRTIO_IOMMU_MAP_F_READ));
		k = (struct kicker){ .n = &n };
		ASSERT_EQ(0, pthread_create(&thread, NULL, kick_loop, &k));
		usleep(2000 + (r * 337) % 8000);
		switch (r % 4) {
		case 0:
			close(n.fd);
			n.fd = -1;
			break;
		case 1:
			viommu_dev_down(self);
			break;
		case 2:
			ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_DEL_ENDPOINT,
					   &id));
			break;
		default:
			ASSERT_EQ(0, pthread_create(&closer, NULL, close_fd,
						    &n.fd));
			viommu_dev_down(self);
			ASSERT_EQ(0, pthread_join(closer, NULL));
			break;
		}
		/* Kicks go on into what is left for a while */
		usleep(5000);
		__atomic_store_n(&k.stop, 1, __ATOMIC_RELAXED);
		ASSERT_EQ(0, pthread_join(thread, NULL));
		EXPECT_LT(0, k.kicks)
			TH_LOG("round %lu (%s): no kick before it", r,
			       kind[r % 4]);
		kicks += k.kicks;
		switch (r % 4) {
		case 0:
			/* The device served on; the domain goes with NET_EP */
			EXPECT_EQ(OK, detach(self, NET_DOM, NET_EP));
			break;
		case 1:
			EXPECT_TRUE(misses_to_vmm(&n))
				TH_LOG("round %lu: still bound to a closed IOMMU",
				       r);
			break;
		case 2:
			EXPECT_TRUE(misses_to_vmm(&n))
				TH_LOG("round %lu: still bound to a deleted endpoint",
				       r);
			ASSERT_EQ(0, add_ep(self->fd, NET_EP, NULL, 0));
			break;
		}
		net_down(&n);
		if (self->fd < 0)
			viommu_dev_up(_metadata, self);
	}
	TH_LOG("%lu rounds, %lu kicks, %.0f s", rounds, kicks, now_s() - t0);
	/* What is left serves, and binds */
	ASSERT_EQ(0, net_up(_metadata, self, &n));
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	net_down(&n);
}

/*
 * Page-table sharing: the endpoint in a table domain, vhost-net's ring and
 * packet mapped by the guest's VT-d table (vhost_iommu_pt.h's writer).
 * Each frame's bytes are checked; after a leaf is cleared, or a table
 * unlinked, and INVALIDATE answered, vhost-net may not use what it cached:
 * the guest gets a fault and nothing goes out.
 */
/* Publish the packet at @iova, avail slot @idx, and kick; the frame or -1 */
static int shared_send_at(struct net_dev *n, uint16_t idx, uint64_t iova,
			  uint8_t *got, size_t len, int ms)
{
	uint64_t one = 1;

	n->desc[0] = (struct vring_desc){ iova, NET_HDR + NET_FRAME, 0, 0 };
	n->avail->ring[idx % QSZ] = 0;
	__atomic_store_n(&n->avail->idx, idx + 1, __ATOMIC_RELEASE);
	if (write(n->kick, &one, sizeof(one)) != sizeof(one))
		return -1;
	return tap_frame(&n->tap, got, len, ms);
}

static int shared_send(struct net_dev *n, uint16_t idx, uint8_t *got,
		       size_t len, int ms)
{
	return shared_send_at(n, idx, NET_IOVA_BUF, got, len, ms);
}

/* Kick again (a faulted queue waits for one), the frame or -1 */
static int shared_kick(struct net_dev *n, uint8_t *got, size_t len)
{
	uint64_t one = 1;

	if (write(n->kick, &one, sizeof(one)) != sizeof(one))
		return -1;
	return tap_frame(&n->tap, got, len, 3000);
}

/*
 * vhost-net bound to NET_EP in table domain 7 of a VT-d table @p whose
 * ring pages are mapped; the buffer is the caller's to map.  0 or -1.
 */
static int shared_net_up(struct __test_metadata *_metadata,
			 struct _test_data_viommu *self, struct pt *p,
			 struct net_dev *n)
{
	int i;

	table_up(_metadata, self, 0);
	if (net_open(self, n))
		return -1;
	pt_init(p, self->mem, PT_VTD, 4);
	for (i = 0; i < 16; i++)
		if (pt_map(p, NET_IOVA_RING + i * PG,
			   GPA_BASE + NET_OFF_RING + i * PG, 0, PT_R | PT_W))
			return -1;
	if (pt_attach(self, p, 7, NET_EP) != OK)
		return -1;
	return net_bind_start(self, n);
}

TEST_F_TIMEOUT(viommu, vhost_net_shared_table, 120)
{
	uint8_t *pkt = gpa_ptr(self->mem, GPA_BASE + NET_OFF_BUF);
	struct net_dev n;
	uint8_t got[2048];
	struct pt p;

	if (access("/dev/vhost-net", F_OK))
		SKIP(return, "no /dev/vhost-net (modprobe vhost_net)");
	ASSERT_EQ(0, shared_net_up(_metadata, self, &p, &n));
	ASSERT_EQ(0, pt_map(&p, NET_IOVA_BUF, GPA_BASE + NET_OFF_BUF, 0, PT_R));
	evt_post(&self->eq, self->mem, 0, 8, 32);

	/* Through the guest's table */
	net_frame(pkt, 3);
	ASSERT_EQ(NET_FRAME, shared_send(&n, 0, got, sizeof(got), 3000));
	EXPECT_EQ(0, memcmp(got, pkt + NET_HDR, NET_FRAME));
	EXPECT_TRUE(evt_none(&self->eq));

	/* The leaf cleared, INVALIDATE (leaf only) answered: a fault */
	pt_clear(&p, NET_IOVA_BUF, 0);
	ASSERT_EQ(OK, invalidate(self, 7, INV_RANGE, INV_LEAF, NET_IOVA_BUF,
				 NET_IOVA_BUF + PG - 1));
	EXPECT_EQ(-1, shared_send(&n, 1, got, sizeof(got), 300));
	EXPECT_FAULT(VIRTIO_IOMMU_FAULT_R_MAPPING,
		     VIRTIO_IOMMU_FAULT_F_READ | FF_A, NET_EP, NET_IOVA_BUF);

	/* Mapped again elsewhere: no INVALIDATE needed for a new entry */
	net_frame(pkt + PG, 5);
	ASSERT_EQ(0, pt_map(&p, NET_IOVA_BUF, GPA_BASE + NET_OFF_BUF + PG, 0,
			    PT_R));
	ASSERT_EQ(NET_FRAME, shared_kick(&n, got, sizeof(got)));
	EXPECT_EQ(0, memcmp(got, pkt + PG + NET_HDR, NET_FRAME));

	/* Changed in place, then INVALIDATE of the whole domain */
	net_frame(pkt + 2 * PG, 9);
	pt_store(pt_entry(&p, NET_IOVA_BUF, 0),
		 pt_mk_leaf(&p, GPA_BASE + NET_OFF_BUF + 2 * PG, 0, PT_R));
	ASSERT_EQ(OK, invalidate(self, 7, INV_DOMAIN, 0, 0, 0));
	ASSERT_EQ(NET_FRAME, shared_send(&n, 2, got, sizeof(got), 3000));
	EXPECT_EQ(0, memcmp(got, pkt + 2 * PG + NET_HDR, NET_FRAME));

	/* The buffer's whole leaf table unlinked: a range INVALIDATE */
	pt_clear(&p, NET_IOVA_BUF, 1);
	ASSERT_EQ(OK, invalidate(self, 7, INV_RANGE, 0, NET_IOVA_BUF,
				 NET_IOVA_BUF + 0x1fffff));
	EXPECT_EQ(-1, shared_send(&n, 3, got, sizeof(got), 300));
	EXPECT_FAULT(VIRTIO_IOMMU_FAULT_R_MAPPING,
		     VIRTIO_IOMMU_FAULT_F_READ | FF_A, NET_EP, NET_IOVA_BUF);
	EXPECT_EQ(3, __atomic_load_n(&n.used->idx, __ATOMIC_ACQUIRE));

	/* DETACH drops the table: the ring itself goes */
	ASSERT_EQ(0, pt_map(&p, NET_IOVA_BUF, GPA_BASE + NET_OFF_BUF, 0, PT_R));
	ASSERT_EQ(OK, detach(self, 7, NET_EP));
	EXPECT_NE(NET_FRAME, shared_kick(&n, got, sizeof(got)));
	net_down(&n);
}

/*
 * A seeded random run through the shared table: four buffer IOVAs, each
 * mapped to one of eight pages of distinct frames, or to none; the guest
 * remaps and unmaps them with the INVALIDATEs the rules ask for (none for
 * a new entry, range or domain, leaf hint or not), and after each change
 * vhost-net sends from one of them.  Every frame must carry the bytes of
 * the page mapped at that moment, every unmapped IOVA must fault: a
 * translation vhost-net kept past its INVALIDATE would show.
 * VHOST_IOMMU_SEED replays, VHOST_IOMMU_NET_ROUNDS sets the rounds.
 */
#define SR_IOVAS	4
#define SR_PAGES	8

TEST_F_TIMEOUT(viommu, vhost_net_shared_table_random, 600)
{
	unsigned long rounds = count_from_env("VHOST_IOMMU_NET_ROUNDS", 300);
	uint64_t seed = count_from_env("VHOST_IOMMU_SEED", 0) ?: time(NULL);
	uint8_t *pages = gpa_ptr(self->mem, GPA_BASE + NET_OFF_BUF);
	int map[SR_IOVAS], frames = 0, faults = 0, repeats = 0, evt = 0;
	unsigned int faulted = 0;
	unsigned long r, i;
	struct net_dev n;
	uint8_t got[2048];
	uint16_t idx = 0;
	struct pt p;

	if (access("/dev/vhost-net", F_OK))
		SKIP(return, "no /dev/vhost-net (modprobe vhost_net)");
	TH_LOG("seed %llu (VHOST_IOMMU_SEED replays it)",
	       (unsigned long long)seed);
	srandom(seed);
	ASSERT_EQ(0, shared_net_up(_metadata, self, &p, &n));
	for (i = 0; i < SR_PAGES; i++)
		net_frame(pages + i * PG, 1000 + i);
	for (i = 0; i < SR_IOVAS; i++) {
		map[i] = i;
		ASSERT_EQ(0, pt_map(&p, NET_IOVA_BUF + i * PG,
				    GPA_BASE + NET_OFF_BUF + i * PG, 0, PT_R));
	}
	for (r = 0; r < rounds; r++) {
		unsigned int v = random() % SR_IOVAS, pg = random() % SR_PAGES;
		uint64_t iova = NET_IOVA_BUF + v * PG;
		uint64_t *e = pt_entry(&p, iova, 0);
		int op = random() % 8, len;

		ASSERT_NE(NULL, e);
		if (op == 0 && map[v] >= 0) {
			/* Unmap: the leaf goes, then INVALIDATE */
			pt_store(e, 0);
			map[v] = -1;
			ASSERT_EQ(OK, invalidate(self, 7, INV_RANGE, INV_LEAF,
						 iova, iova + PG - 1));
		} else if (op < 5) {
			/* Remap: a changed entry needs INVALIDATE, a new one not */
			int was = map[v];

			pt_store(e, pt_mk_leaf(&p, GPA_BASE + NET_OFF_BUF + pg * PG,
					       0, PT_R));
			map[v] = pg;
			if (was >= 0)
				ASSERT_EQ(OK, invalidate(self, 7,
							 op & 1 ? INV_RANGE :
								  INV_DOMAIN,
							 op & 2 ? INV_LEAF : 0,
							 iova, iova + PG - 1));
		}
		if (map[v] < 0) {
			evt_post(&self->eq, self->mem, evt++, 1, 32);
			EXPECT_EQ(-1, shared_send_at(&n, idx, iova, got,
						     sizeof(got), 200));
			/*
			 * Each access that faults may be reported, and
			 * vhost-net may try a waiting descriptor again before
			 * the guest remaps it (woken by its socket): a record
			 * of an IOVA that faulted before may come first.
			 */
			for (;;) {
				struct virtio_iommu_fault f;
				uint32_t flen;
				uint64_t at;

				ASSERT_EQ(0, evt_next(&self->eq, self->mem, &f,
						      &flen));
				ASSERT_EQ(sizeof(f), flen);
				ASSERT_EQ(VIRTIO_IOMMU_FAULT_R_MAPPING, f.reason);
				ASSERT_EQ(VIRTIO_IOMMU_FAULT_F_READ | FF_A,
					  f.flags);
				ASSERT_EQ(NET_EP, f.endpoint);
				if (f.address == iova)
					break;
				at = (f.address - NET_IOVA_BUF) / PG;
				ASSERT_TRUE(at < SR_IOVAS &&
					    (faulted & (1U << at)))
					TH_LOG("round %lu: fault at %#llx", r,
					       (unsigned long long)f.address);
				repeats++;
				evt_post(&self->eq, self->mem, evt++, 1, 32);
			}
			faulted |= 1U << v;
			faults++;
			/* Mapped again, the waiting descriptor goes out */
			pt_store(e, pt_mk_leaf(&p, GPA_BASE + NET_OFF_BUF +
						   pg * PG, 0, PT_R));
			map[v] = pg;
			len = shared_kick(&n, got, sizeof(got));
		} else {
			len = shared_send_at(&n, idx, iova, got, sizeof(got),
					     3000);
		}
		idx++;
		ASSERT_EQ(NET_FRAME, len)
			TH_LOG("round %lu: IOVA %u", r, v);
		ASSERT_EQ(0, memcmp(got, pages + map[v] * PG + NET_HDR,
				    NET_FRAME))
			TH_LOG("round %lu: IOVA %u sent another page than %d",
			       r, v, map[v]);
		frames++;
	}
	TH_LOG("%d frames checked, %d faults (%d reported again)", frames,
	       faults, repeats);
	EXPECT_TRUE(evt_none(&self->eq));
	net_down(&n);
}

TEST_HARNESS_MAIN
