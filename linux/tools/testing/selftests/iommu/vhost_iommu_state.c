// SPDX-License-Identifier: GPL-2.0-only
/*
 * vhost-iommu selftests: the state a VMM saves out of a paused device and
 * restores into a fresh one (VHOST_IOMMU_GET_STATE, VHOST_IOMMU_SET_STATE).
 *
 * A state comes back exactly: the same translations, the same mappings as
 * the rules of UNMAP see them, the same pending faults.  Every bad state (a
 * VMM's mistake, a corrupted file, or a hostile one) gets an errno and
 * leaves the device without domains, ready for a good one; fail-nth makes
 * each allocation of a restore fail in turn, with the debug kernel's KASAN
 * and kmemleak watching.
 */
#include "vhost_iommu_fail_nth.h"

static const uint32_t zero = 0, one = 1;

/* GET_STATE into a new buffer; its size in *size */
static uint8_t *get_state(struct __test_metadata *_metadata, int fd,
			  uint64_t *size)
{
	struct vhost_iommu_state s = { .argsz = sizeof(s) };
	uint8_t *buf;

	/* Asked with no room: ENOSPC and the size */
	EXPECT_EQ(-1, ioctl(fd, VHOST_IOMMU_GET_STATE, &s));
	EXPECT_EQ(ENOSPC, errno);
	buf = malloc(s.size);
	if (!buf)
		return NULL;
	s.data = (uintptr_t)buf;
	if (ioctl(fd, VHOST_IOMMU_GET_STATE, &s)) {
		free(buf);
		return NULL;
	}
	*size = s.size;
	return buf;
}

static int set_state(int fd, const void *buf, uint64_t size)
{
	struct vhost_iommu_state s = {
		.argsz = sizeof(s), .size = size, .data = (uintptr_t)buf,
	};

	return ioctl(fd, VHOST_IOMMU_SET_STATE, &s) ? errno : 0;
}

/* The same device again, started, then paused for a restore */
static void fresh_device(struct __test_metadata *_metadata,
			 struct _test_data_viommu *self)
{
	viommu_dev_down(self);
	viommu_dev_up(_metadata, self);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &zero));
}

/* What the tests build: three kinds of domain, four kinds of mapping */
static void build(struct __test_metadata *_metadata,
		  struct _test_data_viommu *self)
{
	ASSERT_EQ(OK, attach(self, 1, 1, 0));
	ASSERT_EQ(OK, attach(self, 1, 2, 0));
	ASSERT_EQ(OK, attach(self, 7, 3, VIRTIO_IOMMU_ATTACH_F_BYPASS));
	ASSERT_EQ(OK, attach(self, 9, 4, 0));
	ASSERT_EQ(OK, map(self, 1, 0x200000, 0x5fffff, 0x40000000, RW));
	ASSERT_EQ(OK, map(self, 1, 0x1000, 0x1fff, 0x7000,
			  VIRTIO_IOMMU_MAP_F_READ));
	ASSERT_EQ(OK, map(self, 1, 0x8000, 0x8fff, 0x9000, 0));
	ASSERT_EQ(OK, map(self, 9, 1ULL << 40, (1ULL << 40) + 0x3fff, 0x5000,
			  VIRTIO_IOMMU_MAP_F_WRITE));
}

/* Translations of build()'s domains: "gpa size perm" or "-errno" */
static void describe(struct _test_data_viommu *self, char *out, size_t len)
{
	static const struct { uint32_t ep; uint64_t iova; } at[] = {
		{ 1, 0x200010 }, { 2, 0x5ff000 }, { 1, 0x1000 }, { 1, 0x8000 },
		{ 3, 0x123000 }, { 4, (1ULL << 40) + 0x2000 }, { 4, 0x1000 },
		{ 5, 0x1000 },
	};
	struct vhost_iommu_translate t;
	size_t n = 0;
	unsigned int i;

	out[0] = 0;
	for (i = 0; i < ARRAY_SIZE(at); i++) {
		int ret = xlate(self, at[i].ep, at[i].iova, &t);

		if (ret)
			n += snprintf(out + n, len - n, "%d;", ret);
		else
			n += snprintf(out + n, len - n, "%llx %llx %x;",
				      (unsigned long long)t.gpa,
				      (unsigned long long)t.size, t.perm);
	}
}

/* No domain left: every endpoint translates nothing (bypass is 0) */
static int no_domain(struct _test_data_viommu *self)
{
	struct vhost_iommu_translate t;
	uint32_t ep;

	for (ep = 1; ep <= NR_EPS; ep++)
		if (xlate(self, ep, 0x200000, &t) != -ENOENT)
			return 0;
	return 1;
}

/*
 * build(), its translations in @before, the device paused and its state
 * saved: the state (malloc'ed) and its size in *size, or NULL
 */
static uint8_t *build_and_save(struct __test_metadata *_metadata,
			       struct _test_data_viommu *self, char *before,
			       size_t len, uint64_t *size)
{
	build(_metadata, self);
	describe(self, before, len);
	if (ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &zero))
		return NULL;
	return get_state(_metadata, self->fd, size);
}

/*
 * Save, restore into a fresh device, and the guest finds what it built:
 * the same translations, each MAP whole (an UNMAP that would split one is
 * refused, one that covers it unmaps it), new requests served.
 */
TEST_F(viommu, state_round_trip)
{
	char before[512], after[512];
	uint64_t size;
	uint8_t *st;

	st = build_and_save(_metadata, self, before, sizeof(before), &size);
	ASSERT_NE(NULL, st);

	fresh_device(_metadata, self);
	EXPECT_TRUE(no_domain(self));
	ASSERT_EQ(0, set_state(self->fd, st, size));
	describe(self, after, sizeof(after));
	EXPECT_STREQ(before, after);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
	EXPECT_EQ(VIRTIO_IOMMU_S_RANGE, unmap(self, 1, 0x200000, 0x3fffff));
	EXPECT_EQ(OK, unmap(self, 1, 0x200000, 0x5fffff));
	EXPECT_FALSE(mapped(self, 2, 0x200000));
	/* A no-access MAP is still there: a MAP over it is refused */
	EXPECT_EQ(VIRTIO_IOMMU_S_INVAL, map(self, 1, 0x8000, 0x8fff, 0, RW));
	EXPECT_EQ(OK, map(self, 1, 0x10000, 0x10fff, 0x1000, RW));
	EXPECT_EQ(OK, detach(self, 9, 4));

	/* Saved again, the same state */
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &zero));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
	ASSERT_EQ(0, set_state(self->fd, st, size));
	free(st);
	st = get_state(_metadata, self->fd, &size);
	ASSERT_NE(NULL, st);
	fresh_device(_metadata, self);
	ASSERT_EQ(0, set_state(self->fd, st, size));
	describe(self, after, sizeof(after));
	EXPECT_STREQ(before, after);
	free(st);
}

/* Is the page of guest-physical @gpa dirty in @log (a bit per 4 KiB)? */
static int logged(const uint64_t *log, uint64_t gpa)
{
	return !!(log[gpa / PG / 64] & (1ULL << (gpa / PG % 64)));
}

/*
 * A migration turns dirty logging on while the device runs (VHOST_F_LOG_ALL,
 * a log base, the used ring's log address): what the device writes is then
 * in the log, the answer's page and the used ring's; the request's page,
 * which it only reads, is not.  Before it, nothing is logged.
 */
TEST_F(viommu, dirty_log_marks_what_the_device_writes)
{
	uint8_t *base = (uint8_t *)self->mem + OFF_VQ(0);
	struct vhost_vring_addr addr = {
		.index = 0, .flags = 1 << VHOST_VRING_F_LOG,
		.desc_user_addr = (uintptr_t)base,
		.avail_user_addr = (uintptr_t)(base + OFF_AVAIL),
		.used_user_addr = (uintptr_t)(base + OFF_USED),
		.log_guest_addr = GPA_BASE + OFF_VQ(0) + OFF_USED,
	};
	uint64_t *log = calloc(1, 4096);
	uint64_t logp = (uintptr_t)log, f;

	ASSERT_NE(NULL, log);
	ASSERT_EQ(OK, attach(self, 1, 1, 0));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_SET_LOG_BASE, &logp));
	EXPECT_EQ(OK, map(self, 1, 0x200000, 0x200fff, 0x1000, RW));
	EXPECT_FALSE(logged(log, GPA_BASE + OFF_RESP));

	ASSERT_EQ(0, ioctl(self->fd, VHOST_GET_FEATURES, &f));
	ASSERT_TRUE(f & (1ULL << VHOST_F_LOG_ALL));
	f &= ~(1ULL << VIRTIO_IOMMU_F_ATTACH_TABLE |
	       1ULL << VIRTIO_IOMMU_F_POSTED_MAP);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_SET_FEATURES, &f));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_SET_VRING_ADDR, &addr));
	EXPECT_EQ(OK, map(self, 1, 0x300000, 0x300fff, 0x2000, RW));
	EXPECT_TRUE(logged(log, GPA_BASE + OFF_RESP));
	EXPECT_TRUE(logged(log, GPA_BASE + OFF_VQ(0) + OFF_USED));
	EXPECT_FALSE(logged(log, GPA_BASE + OFF_REQ));
	/* Only logging may change while the device runs */
	f &= ~(1ULL << VIRTIO_IOMMU_F_PROBE);
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_SET_FEATURES, &f));
	EXPECT_EQ(EBUSY, errno);
	f |= 1ULL << VIRTIO_IOMMU_F_PROBE;
	f &= ~(1ULL << VHOST_F_LOG_ALL);
	EXPECT_EQ(0, ioctl(self->fd, VHOST_SET_FEATURES, &f));
	free(log);
}

/* Faults waiting for an event buffer go with the state, in order */
TEST_F(viommu, state_keeps_pending_faults)
{
	struct virtio_iommu_fault f;
	uint64_t size;
	uint32_t len;
	uint8_t *st;
	int i;

	ASSERT_EQ(OK, attach(self, 1, 1, 0));
	for (i = 0; i < 3; i++)
		EXPECT_EQ(-ENOENT, xlate_f(self, 5, 0x10000 * (i + 1),
					   TF_W | TF_F));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &zero));
	st = get_state(_metadata, self->fd, &size);
	ASSERT_NE(NULL, st);
	fresh_device(_metadata, self);
	ASSERT_EQ(0, set_state(self->fd, st, size));
	free(st);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
	evt_post(&self->eq, self->mem, 0, 4, 32);
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, evt_next(&self->eq, self->mem, &f, &len));
		EXPECT_EQ(sizeof(f), len);
		EXPECT_EQ(VIRTIO_IOMMU_FAULT_R_DOMAIN, f.reason);
		EXPECT_EQ(VIRTIO_IOMMU_FAULT_F_WRITE | FF_A, f.flags);
		EXPECT_EQ(5, f.endpoint);
		EXPECT_EQ(0x10000ULL * (i + 1), f.address);
	}
	EXPECT_TRUE(evt_none(&self->eq));
}

/* Only a paused device gives its state; only a fresh one takes one */
TEST_F(viommu, state_needs_a_paused_device)
{
	struct vhost_iommu_state s = { .argsz = sizeof(s) };
	uint64_t size;
	uint8_t *st;

	EXPECT_EQ(-1, ioctl(self->fd, VHOST_IOMMU_GET_STATE, &s));
	EXPECT_EQ(EBUSY, errno);
	build(_metadata, self);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &zero));
	st = get_state(_metadata, self->fd, &size);
	ASSERT_NE(NULL, st);
	/* Into itself: it holds domains */
	EXPECT_EQ(EBUSY, set_state(self->fd, st, size));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
	EXPECT_EQ(EBUSY, set_state(self->fd, st, size));
	/* The argument's own checks */
	s.argsz = 16;
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_IOMMU_SET_STATE, &s));
	EXPECT_EQ(EINVAL, errno);
	s.argsz = sizeof(s);
	s.flags = 1;
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_IOMMU_GET_STATE, &s));
	EXPECT_EQ(EINVAL, errno);
	free(st);
}

/* A state with a request appended: one record of @len bytes at its end */
static uint8_t *append(const uint8_t *st, uint64_t size, uint16_t type,
		       const void *payload, uint32_t len, uint64_t *out)
{
	struct vhost_iommu_state_header *h;
	struct vhost_iommu_state_record r = { .type = type, .len = len };
	uint64_t n = size + ((sizeof(r) + len + 7) & ~7ULL);
	uint8_t *buf = calloc(1, n);

	if (!buf)
		return NULL;
	memcpy(buf, st, size);
	memcpy(buf + size, &r, sizeof(r));
	memcpy(buf + size + sizeof(r), payload, len);
	h = (void *)buf;
	h->size = n;
	*out = n;
	return buf;
}

#define HDR	sizeof(struct vhost_iommu_state_header)
#define CFG_AT	(HDR + sizeof(struct vhost_iommu_state_record))

/* One byte of a saved state changed, in its header or its config record */
static const struct {
	const char *what;
	uint64_t off;
	uint8_t xor;
} flips[] = {
	{ "magic", 0, 1 },
	{ "version", 4, 2 },
	{ "size", 8, 8 },
	{ "features", 16, 1 << VIRTIO_IOMMU_F_BYPASS_CONFIG },
	{ "header reserved", 24, 1 },
	{ "record type", HDR, 7 },
	{ "record reserved", HDR + 2, 1 },
	{ "record length", HDR + 4, 0x80 },
	{ "config input_end", CFG_AT + 16, 1 },
	{ "config bypass 2", CFG_AT + 40, 2 },
	{ "config reserved", CFG_AT + 41, 1 },
};

/*
 * Every way a state can be bad gets its errno, and the device is left
 * without domains, able to take the good state right after.
 */
TEST_F(viommu, bad_states_are_refused)
{
	struct virtio_iommu_req_map m = {
		.head.type = VIRTIO_IOMMU_T_MAP, .domain = 1,
		.virt_start = 0xfee00000, .virt_end = 0xfee00fff,
		.phys_start = 0x1000, .flags = RW,
	};
	struct virtio_iommu_req_attach a = {
		.head.type = VIRTIO_IOMMU_T_ATTACH, .domain = 1,
		.endpoint = 77,
	};
	struct virtio_iommu_req_unmap u = {
		.head.type = VIRTIO_IOMMU_T_UNMAP, .domain = 1,
		.virt_start = 0x200000, .virt_end = 0x5fffff,
	};
	struct virtio_iommu_fault f = {
		.reason = VIRTIO_IOMMU_FAULT_R_MAPPING, .endpoint = 1,
	};
	char before[512], after[512];
	uint64_t size, n;
	uint8_t *st, *bad;
	unsigned int i;

	st = build_and_save(_metadata, self, before, sizeof(before), &size);
	ASSERT_NE(NULL, st);
	fresh_device(_metadata, self);
	bad = malloc(size);
	ASSERT_NE(NULL, bad);

	for (i = 0; i < ARRAY_SIZE(flips); i++) {
		memcpy(bad, st, size);
		bad[flips[i].off] ^= flips[i].xor;
		EXPECT_EQ(EINVAL, set_state(self->fd, bad, size))
			TH_LOG("%s", flips[i].what);
		EXPECT_TRUE(no_domain(self)) TH_LOG("%s", flips[i].what);
	}
	/* Truncated anywhere: the header, a record, a record's payload */
	for (n = 0; n < size; n += 4) {
		int err = set_state(self->fd, st, n);

		EXPECT_TRUE(err == EINVAL) TH_LOG("cut at %llu: %d",
						  (unsigned long long)n, err);
		EXPECT_TRUE(no_domain(self));
	}
	/* Not the caller's memory */
	EXPECT_EQ(EFAULT, set_state(self->fd, (void *)8, size));

	/* Records the device refuses as it would the guest's request */
	free(bad);
	bad = append(st, size, VHOST_IOMMU_STATE_R_REQUEST, &m,
		     offsetof(typeof(m), tail), &n);
	ASSERT_NE(NULL, bad);
	EXPECT_EQ(EINVAL, set_state(self->fd, bad, n));	/* the MSI window */
	EXPECT_TRUE(no_domain(self));
	free(bad);
	bad = append(st, size, VHOST_IOMMU_STATE_R_REQUEST, &a,
		     offsetof(typeof(a), tail), &n);
	EXPECT_EQ(ENODEV, set_state(self->fd, bad, n));	/* no endpoint 77 */
	EXPECT_TRUE(no_domain(self));
	free(bad);
	bad = append(st, size, VHOST_IOMMU_STATE_R_REQUEST, &u,
		     offsetof(typeof(u), tail), &n);
	EXPECT_EQ(EINVAL, set_state(self->fd, bad, n));	/* builds nothing */
	EXPECT_TRUE(no_domain(self));
	free(bad);
	/* A MAP record one byte short */
	m.virt_start = 0x20000000;
	m.virt_end = 0x20000fff;
	bad = append(st, size, VHOST_IOMMU_STATE_R_REQUEST, &m,
		     offsetof(typeof(m), tail) - 1, &n);
	EXPECT_EQ(EINVAL, set_state(self->fd, bad, n));
	EXPECT_TRUE(no_domain(self));
	free(bad);
	/* A fault with a reserved byte set, one for an unknown endpoint */
	f.reserved[1] = 1;
	bad = append(st, size, VHOST_IOMMU_STATE_R_FAULT, &f, sizeof(f), &n);
	EXPECT_EQ(EINVAL, set_state(self->fd, bad, n));
	free(bad);
	f.reserved[1] = 0;
	f.endpoint = 77;
	bad = append(st, size, VHOST_IOMMU_STATE_R_FAULT, &f, sizeof(f), &n);
	EXPECT_EQ(EINVAL, set_state(self->fd, bad, n));
	EXPECT_TRUE(no_domain(self));
	free(bad);

	/* And after all that, the good state */
	ASSERT_EQ(0, set_state(self->fd, st, size));
	describe(self, after, sizeof(after));
	EXPECT_STREQ(before, after);
	free(st);
}

/*
 * The destination's own limits hold: more mappings than it allows, or more
 * bytes than it could ever have saved, are refused.
 */
TEST_F(viommu, state_past_the_limits_is_refused)
{
	struct vhost_iommu_config c = self->cfg;
	uint64_t size, n;
	uint8_t *st, *big;
	int i;

	ASSERT_EQ(OK, attach(self, 1, 2, 0));
	for (i = 0; i < 8; i++)
		ASSERT_EQ(OK, map(self, 1, 0x100000 * (i + 1),
				  0x100000 * (i + 1) + 0xfff, 0x1000, RW));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &zero));
	st = get_state(_metadata, self->fd, &size);
	ASSERT_NE(NULL, st);

	viommu_dev_down(self);
	viommu_dev_up(_metadata, self);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
	c.max_mappings = 4;
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(ENOSPC, set_state(self->fd, st, size));
	EXPECT_TRUE(no_domain(self));

	/* A huge state is not even read */
	n = 64ULL << 20;
	big = calloc(1, n);
	ASSERT_NE(NULL, big);
	memcpy(big, st, size);
	((struct vhost_iommu_state_header *)big)->size = n;
	EXPECT_EQ(EINVAL, set_state(self->fd, big, n));
	free(big);

	c.max_mappings = MAX_MAPPINGS;
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(0, set_state(self->fd, st, size));
	EXPECT_TRUE(mapped(self, 2, 0x800000));
	free(st);
}

/*
 * Each allocation of a restore fails in turn: an errno, no domain left,
 * nothing leaked (kmemleak), and the restore works once nothing fails.
 */
TEST_F_TIMEOUT(viommu, fail_nth_restore, 600)
{
	char before[512], after[512];
	unsigned int n, failed = 0;
	int nth, ret, err, hit;
	uint64_t size;
	uint8_t *st;

	ret = fail_nth_setup(_metadata);
	if (ret == -1)
		SKIP(return, "no fault injection");
	ASSERT_EQ(0, ret);
	st = build_and_save(_metadata, self, before, sizeof(before), &size);
	ASSERT_NE(NULL, st);
	fresh_device(_metadata, self);
	nth = open_fail_nth(syscall(SYS_gettid));
	ASSERT_LE(0, nth);
	for (n = 1; n < FAIL_NTH_MAX; n++) {
		fail_nth_set(_metadata, nth, n);
		err = set_state(self->fd, st, size);
		hit = fail_nth_hit(_metadata, nth);
		if (err) {
			/* An allocation refused: NOMEM to a request, or ENOMEM */
			EXPECT_TRUE(hit) TH_LOG("fail at %u: %d", n, err);
			EXPECT_TRUE(err == ENOMEM || err == ENOSPC)
				TH_LOG("fail at %u: %d", n, err);
			EXPECT_TRUE(no_domain(self)) TH_LOG("fail at %u", n);
			failed++;
			continue;
		}
		if (!hit)
			break;		/* ran through: every site was tried */
		/* A site with a way around it: loaded all the same */
		describe(self, after, sizeof(after));
		EXPECT_STREQ(before, after) TH_LOG("fail at %u", n);
		ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
	}
	close(nth);
	TH_LOG("fail-nth restore: %u fault sites, %u made it fail", n - 1,
	       failed);
	EXPECT_LT(0, failed);
	describe(self, after, sizeof(after));
	EXPECT_STREQ(before, after);
	free(st);
}

TEST_HARNESS_MAIN
