// SPDX-License-Identifier: GPL-2.0-only
/*
 * vhost-iommu selftest: the device against virtio 1.3.  Each request and
 * each rule on reserved fields and statuses has its case; a seeded random
 * run checks every answer against a model of the spec; a guest rewrites
 * its requests while the device reads them; faults go out on the event
 * queue; and the VMM's ioctls are checked, in order and out of it.
 */
#include "vhost_iommu_model.h"

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
	/*
	 * To the end of its 2 MiB page: a lookup follows a MAP no more than
	 * 256 KiB; near the MAP's end, to that end
	 */
	EXPECT_EQ(0x3fffff - 0x345678 + 1, t.size);
	ASSERT_EQ(0, xlate(self, 1, 0x5f0000, &t));
	EXPECT_EQ(0x10000, t.size);
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
	uint32_t one = 1;
	uint64_t f;
	struct answer a;

	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_GET_FEATURES, &f));
	/* Page-table sharing and posted MAP need PROBE: off too */
	f &= ~(1ULL << VIRTIO_IOMMU_F_PROBE);
	f &= ~(1ULL << VIRTIO_IOMMU_F_ATTACH_TABLE);
	f &= ~(1ULL << VIRTIO_IOMMU_F_POSTED_MAP);
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
	uint8_t types[] = { 0, 8, 0x42, 0xff };
	unsigned int i;

	for (i = 0; i < sizeof(types); i++) {
		struct answer a;

		r.head.type = types[i];
		a = do_req(self->mem, &self->rq, &r, sizeof(r) - 4, 4, 0);
		EXPECT_TRUE(a.done);
		EXPECT_EQ(0, a.len);
		EXPECT_EQ(0xff, resp[0]);	/* buffer left unwritten */
	}
	/*
	 * ATTACH_TABLE and INVALIDATE without their feature: types the
	 * device does not know, short or whole (virtio-iommu.rst,
	 * "Page-table sharing": the extension changes nothing without it)
	 */
	for (i = VIRTIO_IOMMU_T_ATTACH_TABLE; i <= VIRTIO_IOMMU_T_INVALIDATE;
	     i++) {
		struct virtio_iommu_req_attach_table t = { .head.type = i };
		struct answer a;

		r.head.type = i;
		a = do_req(self->mem, &self->rq, &r, sizeof(r) - 4, 4, 0);
		EXPECT_TRUE(a.done);
		EXPECT_EQ(0, a.len);
		EXPECT_EQ(0xff, resp[0]);
		a = do_req(self->mem, &self->rq, &t, sizeof(t) - 4, 4, 0);
		EXPECT_TRUE(a.done);
		EXPECT_EQ(0, a.len);
		EXPECT_EQ(0xff, resp[0]);
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

#define MAX_MAPPINGS_PARAM "/sys/module/vhost_iommu/parameters/max_mappings"

static unsigned long read_param(const char *path)
{
	unsigned long v = 0;
	FILE *f = fopen(path, "r");

	if (f) {
		if (fscanf(f, "%lu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

static int write_param(const char *path, unsigned long v)
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f)
		return -1;
	ret = fprintf(f, "%lu\n", v) < 0;
	return fclose(f) || ret ? -1 : 0;
}

/*
 * A running device takes its config again, as the VMM gave it (0: the
 * module's default) or as it read it back, although root changed the
 * module parameter a 0 stood for meanwhile: nothing would change.
 */
TEST_F(viommu, config_again_after_module_parameter_change)
{
	struct vhost_iommu_config c = self->cfg, got = { .argsz = sizeof(got) };
	unsigned long was = read_param(MAX_MAPPINGS_PARAM);
	uint32_t one = 1;

	if (!was)
		SKIP(return, "no " MAX_MAPPINGS_PARAM);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
	c.max_mappings = 0;
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_GET_CONFIG, &got));
	EXPECT_EQ(was, got.max_mappings);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
	ASSERT_EQ(0, write_param(MAX_MAPPINGS_PARAM, was - 1));
	EXPECT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &got));
	c.bypass = 1;
	EXPECT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(0, ioctl(self->fd, VHOST_IOMMU_GET_CONFIG, &got));
	EXPECT_EQ(1, got.bypass);
	/* The limit in effect is the one the config was set with */
	EXPECT_EQ(was, got.max_mappings);
	EXPECT_EQ(0, write_param(MAX_MAPPINGS_PARAM, was));
}

/*
 * The config is sized by its argsz: a VMM built against a larger
 * structure passes its zeros, a kernel that knows fewer bytes refuses
 * what it cannot honour, and GET_CONFIG writes no more than asked and
 * says how much it knows.
 */
TEST_F(viommu, config_argsz)
{
	const size_t sz = sizeof(struct vhost_iommu_config);
	union {
		struct vhost_iommu_config c;
		uint8_t b[sizeof(struct vhost_iommu_config) + 16];
	} big;
	struct vhost_iommu_config c = self->cfg;
	uint32_t one = 1;

	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
	memset(&big, 0, sizeof(big));
	big.c = self->cfg;
	big.c.argsz = sizeof(big);
	EXPECT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &big));
	big.b[sz + 3] = 1;
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &big));
	EXPECT_EQ(E2BIG, errno);
	c.argsz = 87;
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(EINVAL, errno);
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_IOMMU_GET_CONFIG, &c));
	EXPECT_EQ(EINVAL, errno);
	/* GET_CONFIG: the bytes it knows, the rest untouched */
	memset(&big, 0xa5, sizeof(big));
	big.c.argsz = sizeof(big);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_GET_CONFIG, &big));
	EXPECT_EQ(sz, big.c.argsz);
	EXPECT_EQ(self->cfg.domain_end, big.c.domain_end);
	EXPECT_EQ(0xa5, big.b[sz]);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
}

/* RESET drops every domain, stops the device and keeps the endpoints */
TEST_F(viommu, reset_drops_domains)
{
	struct vhost_iommu_config c = self->cfg;
	uint32_t one = 1;

	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, map(self, 1, 0, PG - 1, 0, RW));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
	EXPECT_FALSE(mapped(self, 1, 0));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
	EXPECT_EQ(VIRTIO_IOMMU_S_NOENT, map(self, 1, 0, PG - 1, 0, RW));
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	/* bypass SHOULD NOT change on device reset */
	c.bypass = 1;
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_GET_CONFIG, &c));
	EXPECT_EQ(1, c.bypass);
}

/*
 * SET_RUNNING 0 pauses: the queues wait, and every domain and mapping
 * stays, translations answering from them (a VM its VMM stopped, for a
 * snapshot or a migration: its vhost-net and emulated devices still look
 * up what the guest mapped). A request the guest queues meanwhile is
 * served once the device runs again.
 */
TEST_F(viommu, pause_keeps_state)
{
	uint8_t *resp = gpa_ptr(self->mem, GPA_BASE + OFF_RESP);
	struct vhost_iommu_translate t;
	uint32_t zero = 0, one = 1;

	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	EXPECT_EQ(OK, map(self, 1, 0x200000, 0x3fffff, 0x40000000, RW));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &zero));
	ASSERT_EQ(0, xlate(self, 1, 0x200010, &t));
	EXPECT_EQ(0x40000010, t.gpa);
	EXPECT_EQ(0x200000 - 0x10, t.size);
	/* Queued while paused: no answer until the device runs */
	EXPECT_EQ(-1, map(self, 1, 0x400000, 0x400fff, 0x1000, RW));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
	ASSERT_EQ(0, vq_wait_used(&self->rq, 1));
	self->rq.used_idx++;
	EXPECT_EQ(OK, resp[0]);
	EXPECT_TRUE(mapped(self, 1, 0x3ff000));
	EXPECT_TRUE(mapped(self, 1, 0x400000));
	EXPECT_EQ(OK, unmap(self, 1, 0x200000, 0x3fffff));
	EXPECT_FALSE(mapped(self, 1, 0x200000));
}

/*
 * Paused with domains, the device keeps what they were built under: the
 * features and the config but bypass stay (EBUSY), unless the same are
 * set again (a VMM resuming), until a reset.
 */
TEST_F(viommu, paused_keeps_its_contract)
{
	struct vhost_iommu_config c = self->cfg;
	uint32_t zero = 0, one = 1;
	uint64_t f, acked;

	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &zero));
	/* What viommu_dev_up() acknowledged, then without PROBE */
	ASSERT_EQ(0, ioctl(self->fd, VHOST_GET_FEATURES, &f));
	acked = f & ~(1ULL << VIRTIO_IOMMU_F_ATTACH_TABLE |
		      1ULL << VIRTIO_IOMMU_F_POSTED_MAP);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_SET_FEATURES, &acked));
	f = acked & ~(1ULL << VIRTIO_IOMMU_F_PROBE);
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_SET_FEATURES, &f));
	EXPECT_EQ(EBUSY, errno);
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	c.max_mappings = 1;
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	EXPECT_EQ(EBUSY, errno);
	c = self->cfg;
	c.bypass = !c.bypass;
	EXPECT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	/* Reset: anything goes again */
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
	c.max_mappings = 1;
	EXPECT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	c = self->cfg;
	EXPECT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_CONFIG, &c));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
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
	ep.flags = 1 << 2;	/* 0 and 1 are NO_POSTED_MAP and VFIO */
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_IOMMU_ADD_ENDPOINT, &ep));
	EXPECT_EQ(EINVAL, errno);
	ep.flags = 0;
	/* A group descriptor without EP_F_VFIO */
	ep.vfio_group_fd = 3;
	EXPECT_EQ(-1, ioctl(self->fd, VHOST_IOMMU_ADD_ENDPOINT, &ep));
	EXPECT_EQ(EINVAL, errno);
	ep.vfio_group_fd = 0;
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
	c.reserved[1] = 1;
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
	EXPECT_EQ(-EINVAL, xlate_f(self, 1, 0x10, 1 << 4));
	EXPECT_TRUE(evt_none(&self->eq));
	/* A bypass domain translates everything */
	EXPECT_EQ(OK, attach(self, 2, 2, VIRTIO_IOMMU_ATTACH_F_BYPASS));
	EXPECT_EQ(0, xlate_f(self, 2, 0x10, TF_R | TF_W | TF_F));
	EXPECT_TRUE(evt_none(&self->eq));
}

TEST_F(viommu, fault_waits_for_buffers)
{
	struct virtio_iommu_fault f;
	uint32_t len, one = 1;
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
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_RESET));
	ASSERT_EQ(0, ioctl(self->fd, VHOST_IOMMU_SET_RUNNING, &one));
	EXPECT_EQ(-ENOENT, xlate_f(self, 1, 0x7000, TF_R | TF_F));
	evt_post(&self->eq, self->mem, 8, 4, 32);
	EXPECT_FAULT(VIRTIO_IOMMU_FAULT_R_DOMAIN,
		     VIRTIO_IOMMU_FAULT_F_READ | FF_A, 1, 0x7000);
	EXPECT_TRUE(evt_none(&self->eq));
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
	struct vq *vq = &self->rq;
	unsigned int b, i;

	/* A queue of 1024: 256 requests of two descriptors, MAP and UNMAP */
	big_request_queue(_metadata, self);
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

/*
 * What a TRANSLATE costs in a 4 KiB MAP and in 4 MiB and 1 GiB ones made
 * of 4 KiB pages (their guest-physical side is not 2 MiB aligned, so no
 * larger page fits): a VMM's emulated devices look up every access, and vhost devices'
 * misses walk the same way. The lookup is at the mapping's first page,
 * where the rest of the mapping is longest.
 */
TEST_F_TIMEOUT(viommu, bench_translate, 600)
{
	static const struct {
		const char *name;
		uint64_t size;
	} maps[] = { { "4K", PG }, { "4M", 4ULL << 20 }, { "1G", 1ULL << 30 } };
	const char *env = getenv("VHOST_IOMMU_BENCH_SECONDS");
	double secs = env && *env ? atof(env) : 0.2;
	const uint64_t iova = 1ULL << 32;
	struct vhost_iommu_translate t;
	unsigned int m;

	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	for (m = 0; m < ARRAY_SIZE(maps); m++) {
		unsigned long n = 0;
		struct timespec t0, t1;
		double elapsed;

		/* 262,144 pages to map: for make bench-vhost only */
		if (maps[m].size > (4ULL << 20) && !(env && *env))
			break;
		ASSERT_EQ(OK, map(self, 1, iova, iova + maps[m].size - 1,
				  0x201000, RW));
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			ASSERT_EQ(0, xlate(self, 1, iova, &t));
			n++;
			clock_gettime(CLOCK_MONOTONIC, &t1);
			elapsed = (t1.tv_sec - t0.tv_sec) +
				  (t1.tv_nsec - t0.tv_nsec) / 1e9;
		} while (elapsed < secs);
		EXPECT_EQ(0x201000, t.gpa);
		ASSERT_EQ(OK, unmap(self, 1, iova, iova + maps[m].size - 1));
		printf("# bench-vhost-translate: mapping=%s translates=%lu ",
		       maps[m].name, n);
		printf("seconds=%.3f us_per_translate=%.2f\n",
		       elapsed, elapsed * 1e6 / n);
		fflush(stdout);
	}
}

/*
 * What freeing an emptied table costs an UNMAP: MAP+UNMAP pairs of one
 * page, 128 pairs a kick, each pair in its own 2 MiB region. In the first
 * row nothing else is mapped in the pair's region, so its MAP allocates
 * the region's leaf table and its UNMAP frees it; in the second a page
 * stays mapped in each region, and the table with it. Another page stays
 * mapped in the same 1 GiB region in both: only the leaf table comes and
 * goes.
 */
TEST_F_TIMEOUT(viommu, bench_table_pairs, 600)
{
	const char *env = getenv("VHOST_IOMMU_BENCH_SECONDS");
	double secs = env && *env ? atof(env) : 0.2;
	const uint64_t base = 1ULL << 32, region = 2ULL << 20;
	const unsigned int pairs = BENCH_MAX / 2;
	double us[2];
	struct vq *vq = &self->rq;
	unsigned int row, i;

	big_request_queue(_metadata, self);
	EXPECT_EQ(OK, attach(self, 1, 1, 0));
	/* The 1 GiB region's neighbour page: its upper tables stay */
	ASSERT_EQ(OK, map(self, 1, base + (1ULL << 30) - PG,
			  base + (1ULL << 30) - 1, GPA_BASE, RW));
	for (row = 0; row < 2; row++) {
		uint8_t *st = gpa_ptr(self->mem, GPA_BASE + OFF_BRESP);
		unsigned long done = 0;
		struct timespec t0, t1;
		double elapsed;

		/* Second row: a page stays in each pair's region */
		for (i = 0; row && i < pairs; i++)
			ASSERT_EQ(OK, map(self, 1, base + i * region + region / 2,
					  base + i * region + region / 2 + PG - 1,
					  GPA_BASE, RW));
		/*
		 * Request 2k MAPs pair k's page, 2k + 1 UNMAPs it: set after
		 * the single requests above, which use descriptors 0 and 1
		 */
		for (i = 0; i < BENCH_MAX; i++) {
			uint64_t iova = base + (i / 2) * region;
			uint8_t *q = breq(self->mem, i);

			memset(q, 0, BREQ_SZ);
			if (!(i & 1)) {
				struct virtio_iommu_req_map *r = (void *)q;

				r->head.type = VIRTIO_IOMMU_T_MAP;
				r->domain = 1;
				r->virt_start = iova;
				r->virt_end = iova + PG - 1;
				r->phys_start = GPA_BASE;
				r->flags = RW;
			} else {
				struct virtio_iommu_req_unmap *r = (void *)q;

				r->head.type = VIRTIO_IOMMU_T_UNMAP;
				r->domain = 1;
				r->virt_start = iova;
				r->virt_end = iova + PG - 1;
			}
			vq->desc[2 * i] = (struct vring_desc){
				GPA_BASE + OFF_BREQ + i * BREQ_SZ,
				i & 1 ? sizeof(struct virtio_iommu_req_unmap) - 4 :
					sizeof(struct virtio_iommu_req_map) - 4,
				VRING_DESC_F_NEXT, 2 * i + 1 };
			vq->desc[2 * i + 1] = (struct vring_desc){
				GPA_BASE + OFF_BRESP + i * 4, 4, VRING_DESC_F_WRITE, 0 };
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		do {
			memset(st, 0xff, BENCH_MAX * 4);
			for (i = 0; i < BENCH_MAX; i++)
				vq->avail->ring[(uint16_t)(vq->avail_idx + i) %
						vq->num] = 2 * i;
			ASSERT_EQ(0, vq_kick_n(vq, BENCH_MAX));
			ASSERT_EQ(0, vq_wait_used(vq, BENCH_MAX));
			vq->used_idx += BENCH_MAX;
			for (i = 0; i < BENCH_MAX; i++)
				ASSERT_EQ(OK, st[i * 4]);
			done += pairs;
			clock_gettime(CLOCK_MONOTONIC, &t1);
			elapsed = (t1.tv_sec - t0.tv_sec) +
				  (t1.tv_nsec - t0.tv_nsec) / 1e9;
		} while (elapsed < secs);
		us[row] = elapsed * 1e6 / done;
		EXPECT_FALSE(mapped(self, 1, base));
	}
	printf("# bench-vhost-tables: pairs=%u freed_us_per_pair=%.2f ",
	       pairs, us[0]);
	printf("kept_us_per_pair=%.2f ratio=%.3f\n", us[1], us[0] / us[1]);
	fflush(stdout);
}

TEST_HARNESS_MAIN
