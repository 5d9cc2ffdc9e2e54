// SPDX-License-Identifier: GPL-2.0-only
/*
 * vhost-iommu selftest: what a guest may cost the host.  The device's
 * limits (domains, mappings, page-table pages) answer NOMEM and give back
 * what the guest frees; and every allocation on the ioctl and the request
 * paths fails once in turn (fail-nth), changing nothing, page-table
 * sharing's requests included.
 */
#include "vhost_iommu_fail_nth.h"
#include "vhost_iommu_model.h"
#include "vhost_iommu_pt.h"

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
	/* In a region of its own, so that it allocates tables */
	{ "MAP without access", VIRTIO_IOMMU_T_MAP, 1, 0, 0, 0x80000000,
	  0x80000fff, 0, 1 },
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
	uint32_t one = 1, bad_ep;
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
			ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
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

/*
 * Page-table sharing's requests with the n-th allocation of the worker
 * failing: ATTACH_TABLE answers NOMEM and attaches nothing, or OK and the
 * endpoint translates through the table; INVALIDATE and PROBE go on.
 */
enum {
	FT_ATTACH, FT_JOIN, FT_INVAL_RANGE, FT_INVAL_DOMAIN, FT_PROBE,
	FT_DETACH, FT_NR
};

static const char *const ft_names[FT_NR] = {
	"ATTACH_TABLE a new domain", "ATTACH_TABLE a second endpoint",
	"INVALIDATE a range", "INVALIDATE the domain", "PROBE with formats",
	"DETACH from the table domain",
};

static int ft_send(struct _test_data_viommu *self, struct pt *p, int step)
{
	struct virtio_iommu_req_probe pr = {
		.head.type = VIRTIO_IOMMU_T_PROBE, .endpoint = 2,
	};
	struct answer a;

	switch (step) {
	case FT_ATTACH:
		return pt_attach(self, p, 20, 2);
	case FT_JOIN:
		return pt_attach(self, p, 20, 3);
	case FT_INVAL_RANGE:
		return invalidate(self, 20, INV_RANGE, INV_LEAF, 0x40000000,
				  0x40000fff);
	case FT_INVAL_DOMAIN:
		return invalidate(self, 20, INV_DOMAIN, 0, 0, 0);
	case FT_PROBE:
		a = do_req(self->mem, &self->rq, &pr, sizeof(pr),
			   PROBE_SIZE + 4, PROBE_SIZE);
		return a.done && a.len == PROBE_SIZE + 4 ? a.status : -1;
	default:
		return detach(self, 20, 2);
	}
}

TEST_F_TIMEOUT(viommu, fail_nth_table_requests, 600)
{
	uint32_t one = 1;
	unsigned int s, k, n, nomem, total = 0;
	struct vhost_iommu_translate t;
	int nth, ret, status, hit;
	pid_t worker;
	struct pt p;

	ret = fail_nth_setup(_metadata);
	ASSERT_NE(-2, ret);
	if (ret)
		SKIP(return, "no fault injection in this kernel");
	table_up(_metadata, self, 0);
	pt_init(&p, self->mem, PT_VTD, 4);
	ASSERT_EQ(0, pt_map(&p, 0x40000000, GPA_BASE + OFF_PT_DATA, 0,
			    PT_R | PT_W));
	worker = vhost_worker_tid();
	ASSERT_LT(0, worker);
	nth = open_fail_nth(worker);
	ASSERT_LE(0, nth);
	for (s = 0; s < FT_NR; s++) {
		nomem = 0;
		for (n = 1; n < FAIL_NTH_MAX; n++) {
			ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
			ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING,
					   &one));
			for (k = 0; k < s; k++)
				ASSERT_EQ(OK, ft_send(self, &p, k));
			fail_nth_set(_metadata, nth, n);
			status = ft_send(self, &p, s);
			hit = fail_nth_hit(_metadata, nth);
			if (status == VIRTIO_IOMMU_S_NOMEM) {
				ASSERT_TRUE(hit);
				nomem++;
			} else {
				ASSERT_EQ(OK, status)
					TH_LOG("%s, fail-nth %u", ft_names[s], n);
			}
			/* The endpoints are where the answer says */
			ret = xlate(self, 2, 0x40000000, &t);
			if ((s == FT_DETACH && status == OK) ||
			    (s == FT_ATTACH && status != OK)) {
				EXPECT_EQ(-ENOENT, ret);
			} else {
				EXPECT_EQ(0, ret);
			}
			if (s == FT_JOIN) {
				EXPECT_EQ(status == OK ? 0 : -ENOENT,
					  xlate(self, 3, 0x40000000, &t));
			}
			/* And the queue still serves the step */
			if (s != FT_DETACH || status != OK)
				EXPECT_EQ(OK, ft_send(self, &p, s));
			if (!hit)
				break;
		}
		TH_LOG("fail-nth %-32s %3u fault sites, %3u answered NOMEM",
		       ft_names[s], n - 1, nomem);
		ASSERT_GT(FAIL_NTH_MAX, n);
		total += nomem;
	}
	EXPECT_LT(0, total);
	close(nth);
}

TEST_HARNESS_MAIN
