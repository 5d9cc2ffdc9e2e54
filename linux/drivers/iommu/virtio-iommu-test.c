// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit tests of the virtio-iommu wire helpers: request encoding byte for
 * byte, status to errno, and the decoding of PROBE properties and fault
 * records, with well-formed and malformed device answers. Of the choice
 * of a table format for page-table sharing. And of the record of a
 * domain's MAP requests in its page table.
 */
#include <kunit/test.h>
#include <linux/unaligned.h>

#include "virtio-iommu-maps.h"
#include "virtio-iommu-table.h"
#include "virtio-iommu-wire.h"

static void viommu_test_encode_attach(struct kunit *test)
{
	static const u8 want[24] = {
		0x01, 0, 0, 0,			/* type, reserved */
		0x44, 0x33, 0x22, 0x11,		/* domain */
		0x08, 0x00, 0x00, 0x80,		/* endpoint */
		0x01, 0, 0, 0,			/* flags: BYPASS */
		0, 0, 0, 0,			/* reserved */
		0, 0, 0, 0,			/* tail */
	};
	struct virtio_iommu_req_attach req;

	memset(&req, 0xa5, sizeof(req));
	viommu_encode_attach(&req, 0x11223344, 0x80000008,
			     VIRTIO_IOMMU_ATTACH_F_BYPASS);
	KUNIT_EXPECT_MEMEQ(test, &req, want, sizeof(want));
}

static void viommu_test_encode_detach(struct kunit *test)
{
	static const u8 want[24] = {
		0x02, 0, 0, 0,
		0x07, 0, 0, 0,
		0x10, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0,
	};
	struct virtio_iommu_req_detach req;

	memset(&req, 0xff, sizeof(req));
	viommu_encode_detach(&req, 7, 16);
	KUNIT_EXPECT_MEMEQ(test, &req, want, sizeof(want));
}

static void viommu_test_encode_map(struct kunit *test)
{
	static const u8 want[40] = {
		0x03, 0, 0, 0,
		0x02, 0, 0, 0,					/* domain */
		0x00, 0x10, 0, 0, 0, 0, 0, 0,			/* virt_start */
		0xff, 0x2f, 0, 0, 0, 0, 0, 0,			/* virt_end */
		0x00, 0x00, 0x00, 0x80, 0x01, 0, 0, 0,		/* phys_start */
		0x07, 0, 0, 0,					/* flags */
		0, 0, 0, 0,
	};
	struct virtio_iommu_req_map req;

	memset(&req, 0x5a, sizeof(req));
	viommu_encode_map(&req, 2, 0x1000, 0x2fff, 0x180000000ULL,
			  VIRTIO_IOMMU_MAP_F_MASK);
	KUNIT_EXPECT_MEMEQ(test, &req, want, sizeof(want));
}

static void viommu_test_encode_unmap(struct kunit *test)
{
	static const u8 want[32] = {
		0x04, 0, 0, 0,
		0xff, 0xff, 0xff, 0xff,
		0, 0, 0, 0, 0, 0, 0, 0,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0, 0, 0, 0,
		0, 0, 0, 0,
	};
	struct virtio_iommu_req_unmap req;

	memset(&req, 0x33, sizeof(req));
	viommu_encode_unmap(&req, U32_MAX, 0, U64_MAX);
	KUNIT_EXPECT_MEMEQ(test, &req, want, sizeof(want));
}

static void viommu_test_encode_attach_table(struct kunit *test)
{
	static const u8 want[64] = {
		0x06, 0, 0, 0,					/* type */
		0x05, 0, 0, 0,					/* domain */
		0x18, 0x00, 0x01, 0x00,				/* endpoint */
		0x01, 0x00, 0, 0,				/* format, reserved */
		0x00, 0x30, 0x45, 0x23, 0x01, 0, 0, 0,		/* root */
		48, 12, 0x05, 0x00, 0, 0, 0, 0,			/* ias, granule, asid */
		0x44, 0xff, 0x04, 0, 0, 0, 0, 0,		/* mair */
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,		/* reserved */
		0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0,					/* tail */
	};
	struct virtio_iommu_req_attach_table req;

	memset(&req, 0xa5, sizeof(req));
	viommu_encode_attach_table(&req, 5, 0x10018, VIRTIO_IOMMU_PGTF_ARM_LPAE,
				   0x123453000ULL, 48, 12, 5, VIOMMU_ARM_MAIR);
	KUNIT_EXPECT_MEMEQ(test, &req, want, sizeof(want));

	/* An x86 format: no ASID, no MAIR, a 39-bit table */
	viommu_encode_attach_table(&req, 0xfffffffe, 8, VIRTIO_IOMMU_PGTF_VTD_SL,
				   0x7000, 39, 12, 0, 0);
	KUNIT_EXPECT_EQ(test, req.head.type, VIRTIO_IOMMU_T_ATTACH_TABLE);
	KUNIT_EXPECT_EQ(test, le32_to_cpu(req.domain), 0xfffffffe);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(req.format), VIRTIO_IOMMU_PGTF_VTD_SL);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(req.root), 0x7000);
	KUNIT_EXPECT_EQ(test, req.ias, 39);
	KUNIT_EXPECT_EQ(test, le16_to_cpu(req.asid), 0);
	KUNIT_EXPECT_EQ(test, le64_to_cpu(req.mair), 0);
}

static void viommu_test_encode_invalidate(struct kunit *test)
{
	static const u8 want[48] = {
		0x07, 0, 0, 0,					/* type */
		0x01, 0x00, 0x01, 0x00,				/* scope RANGE, LEAF */
		0x09, 0, 0, 0,					/* domain */
		0, 0, 0, 0,					/* reserved */
		0x00, 0x00, 0x20, 0, 0, 0, 0, 0,		/* virt_start */
		0xff, 0xff, 0x3f, 0, 0, 0, 0, 0,		/* virt_end */
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,		/* reserved */
		0, 0, 0, 0,					/* tail */
	};
	struct virtio_iommu_req_invalidate req;
	u8 domain_scope[48] = { 0x07, 0, 0, 0, 0, 0, 0, 0, 0x09 };

	memset(&req, 0x5a, sizeof(req));
	viommu_encode_invalidate(&req, 9, VIRTIO_IOMMU_INVAL_S_RANGE,
				 VIRTIO_IOMMU_INVAL_F_LEAF, 0x200000, 0x3fffff);
	KUNIT_EXPECT_MEMEQ(test, &req, want, sizeof(want));

	/* Scope DOMAIN: the range fields stay zero whatever is passed */
	memset(&req, 0x5a, sizeof(req));
	viommu_encode_invalidate(&req, 9, VIRTIO_IOMMU_INVAL_S_DOMAIN, 0,
				 0x1000, 0x1fff);
	KUNIT_EXPECT_MEMEQ(test, &req, domain_scope, sizeof(domain_scope));
}

static void viommu_test_encode_probe(struct kunit *test)
{
	const size_t probe_size = 64;
	struct virtio_iommu_req_probe *req;
	u8 *raw;
	size_t i;

	raw = kunit_kmalloc(test, sizeof(*req) + probe_size + VIOMMU_TAIL_LEN,
			    GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, raw);
	memset(raw, 0xee, sizeof(*req) + probe_size + VIOMMU_TAIL_LEN);
	req = (void *)raw;
	viommu_encode_probe(req, 0x1234, probe_size);
	KUNIT_EXPECT_EQ(test, raw[0], VIRTIO_IOMMU_T_PROBE);
	KUNIT_EXPECT_EQ(test, get_unaligned_le32(raw + 4), 0x1234);
	/* Reserved bytes, properties and tail all cleared */
	for (i = 8; i < sizeof(*req) + probe_size + VIOMMU_TAIL_LEN; i++)
		KUNIT_EXPECT_EQ_MSG(test, raw[i], 0, "byte %zu", i);
}

static void viommu_test_status(struct kunit *test)
{
	static const struct {
		u8 status;
		int err;
	} cases[] = {
		{ VIRTIO_IOMMU_S_OK, 0 },
		{ VIRTIO_IOMMU_S_IOERR, -EIO },
		{ VIRTIO_IOMMU_S_UNSUPP, -EOPNOTSUPP },
		{ VIRTIO_IOMMU_S_DEVERR, -EREMOTEIO },
		{ VIRTIO_IOMMU_S_INVAL, -EINVAL },
		{ VIRTIO_IOMMU_S_RANGE, -ERANGE },
		{ VIRTIO_IOMMU_S_NOENT, -ENOENT },
		{ VIRTIO_IOMMU_S_FAULT, -EFAULT },
		{ VIRTIO_IOMMU_S_NOMEM, -ENOMEM },
		{ 9, -EPROTO },
		{ 0x80, -EPROTO },
		{ 0xff, -EPROTO },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(cases); i++)
		KUNIT_EXPECT_EQ_MSG(test, viommu_status_errno(cases[i].status),
				    cases[i].err, "status %u", cases[i].status);
}

static void viommu_test_req_result(struct kunit *test)
{
	/* A fixed-size request: 4 writable bytes */
	KUNIT_EXPECT_EQ(test, viommu_req_result(4, 4, VIRTIO_IOMMU_S_OK), 0);
	KUNIT_EXPECT_EQ(test, viommu_req_result(4, 4, VIRTIO_IOMMU_S_RANGE),
			-ERANGE);
	/* Used length 0: the device could not parse the request */
	KUNIT_EXPECT_EQ(test, viommu_req_result(0, 4, VIRTIO_IOMMU_S_OK),
			-EPROTO);
	/* Short, or longer than the buffer: the tail is not trustworthy */
	KUNIT_EXPECT_EQ(test, viommu_req_result(3, 4, VIRTIO_IOMMU_S_OK),
			-EPROTO);
	KUNIT_EXPECT_EQ(test, viommu_req_result(8, 4, VIRTIO_IOMMU_S_OK),
			-EPROTO);
	KUNIT_EXPECT_EQ(test, viommu_req_result(U32_MAX, 4, VIRTIO_IOMMU_S_OK),
			-EPROTO);
	/* PROBE: properties and tail */
	KUNIT_EXPECT_EQ(test, viommu_req_result(516, 516, VIRTIO_IOMMU_S_OK), 0);
	KUNIT_EXPECT_EQ(test, viommu_req_result(4, 516, VIRTIO_IOMMU_S_OK),
			-EPROTO);
	/* No room for a tail at all */
	KUNIT_EXPECT_EQ(test, viommu_req_result(0, 0, VIRTIO_IOMMU_S_OK),
			-EPROTO);
}

/* Append a property to @buf at *@pos */
static void put_prop(u8 *buf, size_t *pos, u16 type, u16 len)
{
	put_unaligned_le16(type, buf + *pos);
	put_unaligned_le16(len, buf + *pos + 2);
	*pos += 4;
}

static void put_resv(u8 *buf, size_t *pos, u8 subtype, u64 start, u64 end)
{
	put_prop(buf, pos, VIRTIO_IOMMU_PROBE_T_RESV_MEM, 20);
	buf[*pos] = subtype;
	put_unaligned_le64(start, buf + *pos + 4);
	put_unaligned_le64(end, buf + *pos + 12);
	*pos += 20;
}

/* A PAGE_TABLE_FMT property, @len bytes after the header (12 or more) */
static void put_table(u8 *buf, size_t *pos, u16 len, u16 format, u8 ias,
		      u8 oas, u32 granules, u8 levels, u8 asid_bits, u16 flags)
{
	put_prop(buf, pos, VIRTIO_IOMMU_PROBE_T_PAGE_TABLE_FMT, len);
	put_unaligned_le16(format, buf + *pos);
	buf[*pos + 2] = ias;
	buf[*pos + 3] = oas;
	put_unaligned_le32(granules, buf + *pos + 4);
	buf[*pos + 8] = levels;
	buf[*pos + 9] = asid_bits;
	put_unaligned_le16(flags, buf + *pos + 10);
	*pos += len;
}

/* The next property of @buf from *@pos is the RESV_MEM [@start, @last] */
static void expect_resv(struct kunit *test, const u8 *buf, size_t len,
			size_t *pos, u8 subtype, u64 start, u64 last)
{
	struct viommu_probe_prop prop;

	KUNIT_ASSERT_EQ(test, viommu_probe_next(buf, len, pos, &prop), 1);
	KUNIT_EXPECT_EQ(test, prop.type, VIRTIO_IOMMU_PROBE_T_RESV_MEM);
	KUNIT_EXPECT_EQ(test, prop.subtype, subtype);
	KUNIT_EXPECT_EQ(test, prop.start, start);
	KUNIT_EXPECT_EQ(test, prop.last, last);
}

/*
 * The property of @buf at @pos is malformed: refused, and a caller that
 * went on would not be moved past it.
 */
static void expect_malformed(struct kunit *test, const u8 *buf, size_t len,
			     size_t pos)
{
	struct viommu_probe_prop prop;
	size_t at = pos;

	KUNIT_EXPECT_EQ(test, viommu_probe_next(buf, len, &at, &prop), -EPROTO);
	KUNIT_EXPECT_EQ(test, at, pos);
}

static void viommu_test_probe_table(struct kunit *test)
{
	struct viommu_probe_prop prop;
	u8 buf[128] = {};
	size_t w = 0, pos = 0;

	put_table(buf, &w, 12, VIRTIO_IOMMU_PGTF_VTD_SL, 48, 46, SZ_4K, 4, 0,
		  VIRTIO_IOMMU_PGTF_F_INVAL_MAP);
	/* Unknown format, and flags the driver does not know */
	put_table(buf, &w, 12, 0x77, 64, 64, ~0U, 9, 16, 0xfff8);
	/* Longer than its fields: a later revision's; the rest is skipped */
	put_table(buf, &w, 20, VIRTIO_IOMMU_PGTF_ARM_LPAE, 48, 48,
		  SZ_4K | SZ_16K | SZ_64K, 4, 16, 0x8001);
	put_resv(buf, &w, VIRTIO_IOMMU_RESV_MEM_T_MSI, 0x8000000, 0x80fffff);

	KUNIT_ASSERT_EQ(test, viommu_probe_next(buf, sizeof(buf), &pos, &prop),
			1);
	KUNIT_EXPECT_EQ(test, prop.type, VIRTIO_IOMMU_PROBE_T_PAGE_TABLE_FMT);
	KUNIT_EXPECT_EQ(test, prop.table.format, VIRTIO_IOMMU_PGTF_VTD_SL);
	KUNIT_EXPECT_EQ(test, prop.table.ias, 48);
	KUNIT_EXPECT_EQ(test, prop.table.oas, 46);
	KUNIT_EXPECT_EQ(test, prop.table.granules, SZ_4K);
	KUNIT_EXPECT_EQ(test, prop.table.max_levels, 4);
	KUNIT_EXPECT_EQ(test, prop.table.asid_bits, 0);
	KUNIT_EXPECT_EQ(test, prop.table.flags, VIRTIO_IOMMU_PGTF_F_INVAL_MAP);
	KUNIT_EXPECT_EQ(test, pos, 16);

	KUNIT_ASSERT_EQ(test, viommu_probe_next(buf, sizeof(buf), &pos, &prop),
			1);
	KUNIT_EXPECT_EQ(test, prop.table.format, 0x77);
	/* The driver MUST ignore flags it does not know: cleared */
	KUNIT_EXPECT_EQ(test, prop.table.flags, 0);
	KUNIT_EXPECT_EQ(test, pos, 32);

	KUNIT_ASSERT_EQ(test, viommu_probe_next(buf, sizeof(buf), &pos, &prop),
			1);
	KUNIT_EXPECT_EQ(test, prop.table.format, VIRTIO_IOMMU_PGTF_ARM_LPAE);
	KUNIT_EXPECT_EQ(test, prop.table.asid_bits, 16);
	KUNIT_EXPECT_EQ(test, prop.table.flags, VIRTIO_IOMMU_PGTF_F_INVAL_MAP);
	KUNIT_EXPECT_EQ(test, pos, 56);

	/* The property after the long one is read where it starts */
	expect_resv(test, buf, sizeof(buf), &pos, VIRTIO_IOMMU_RESV_MEM_T_MSI,
		    0x8000000, 0x80fffff);
	KUNIT_EXPECT_EQ(test, viommu_probe_next(buf, sizeof(buf), &pos, &prop),
			0);
}

static void viommu_test_probe_table_malformed(struct kunit *test)
{
	struct viommu_probe_prop prop;
	u8 buf[64] = {};
	size_t w = 0, pos = 0;

	/* Shorter than its fields */
	put_prop(buf, &w, VIRTIO_IOMMU_PROBE_T_PAGE_TABLE_FMT, 8);
	expect_malformed(test, buf, sizeof(buf), 0);

	/* Its fields run past the area */
	memset(buf, 0, sizeof(buf));
	w = sizeof(buf) - 8;
	put_prop(buf, &w, VIRTIO_IOMMU_PROBE_T_PAGE_TABLE_FMT, 12);
	expect_malformed(test, buf, sizeof(buf), sizeof(buf) - 8);

	/* Reserved bits in the header: skipped whole, matching no type */
	memset(buf, 0, sizeof(buf));
	w = 0;
	put_table(buf, &w, 12, VIRTIO_IOMMU_PGTF_VTD_SL, 48, 48, SZ_4K, 4, 0, 0);
	put_unaligned_le16(0x1000 | VIRTIO_IOMMU_PROBE_T_PAGE_TABLE_FMT, buf);
	KUNIT_EXPECT_EQ(test, viommu_probe_next(buf, sizeof(buf), &pos, &prop),
			1);
	KUNIT_EXPECT_NE(test, prop.type, VIRTIO_IOMMU_PROBE_T_PAGE_TABLE_FMT);
	KUNIT_EXPECT_EQ(test, prop.table.format, 0);
	KUNIT_EXPECT_EQ(test, pos, 16);
}

static const u16 x86_prefs[] = {
	VIRTIO_IOMMU_PGTF_VTD_SL, VIRTIO_IOMMU_PGTF_AMD_V1,
	VIRTIO_IOMMU_PGTF_ARM_LPAE,
};

static const u16 arm_prefs[] = { VIRTIO_IOMMU_PGTF_ARM_LPAE };

static bool pick_x86(const struct viommu_table_fmt *o, unsigned int n,
		     unsigned int page_shift, struct viommu_table_cfg *cfg)
{
	return viommu_table_choose(o, n, x86_prefs, ARRAY_SIZE(x86_prefs),
				   page_shift, cfg);
}

static bool pick_arm(const struct viommu_table_fmt *o, unsigned int n,
		     unsigned int page_shift, struct viommu_table_cfg *cfg)
{
	return viommu_table_choose(o, n, arm_prefs, ARRAY_SIZE(arm_prefs),
				   page_shift, cfg);
}

static struct viommu_table_fmt offer(u16 format, u8 ias, u8 oas, u32 granules,
				     u8 levels, u8 asid_bits, u16 flags)
{
	return (struct viommu_table_fmt) {
		.format = format, .ias = ias, .oas = oas, .granules = granules,
		.max_levels = levels, .asid_bits = asid_bits, .flags = flags,
	};
}

/*
 * NO_CACHE is taken from the property; a device that says both it and
 * INVAL_MAP caches, so the driver MUST take INVAL_MAP alone.
 */
static void viommu_test_probe_no_cache(struct kunit *test)
{
	struct viommu_probe_prop prop;
	struct viommu_table_fmt o[1];
	struct viommu_table_cfg cfg;
	u8 buf[32] = {};
	size_t w = 0, pos = 0;

	put_table(buf, &w, 12, VIRTIO_IOMMU_PGTF_VTD_SL, 48, 46, SZ_4K, 4, 0,
		  VIRTIO_IOMMU_PGTF_F_NO_CACHE | 0x8000);
	KUNIT_ASSERT_EQ(test, viommu_probe_next(buf, sizeof(buf), &pos, &prop),
			1);
	KUNIT_EXPECT_EQ(test, prop.table.flags, VIRTIO_IOMMU_PGTF_F_NO_CACHE);

	o[0] = offer(VIRTIO_IOMMU_PGTF_VTD_SL, 48, 46, SZ_4K, 4, 0,
		     VIRTIO_IOMMU_PGTF_F_NO_CACHE);
	KUNIT_ASSERT_TRUE(test, pick_x86(o, 1, 12, &cfg));
	KUNIT_EXPECT_TRUE(test, cfg.no_cache);
	KUNIT_EXPECT_FALSE(test, cfg.inval_map);

	o[0] = offer(VIRTIO_IOMMU_PGTF_VTD_SL, 48, 46, SZ_4K, 4, 0,
		     VIRTIO_IOMMU_PGTF_F_NO_CACHE |
		     VIRTIO_IOMMU_PGTF_F_INVAL_MAP);
	KUNIT_ASSERT_TRUE(test, pick_x86(o, 1, 12, &cfg));
	KUNIT_EXPECT_FALSE(test, cfg.no_cache);
	KUNIT_EXPECT_TRUE(test, cfg.inval_map);

	o[0] = offer(VIRTIO_IOMMU_PGTF_VTD_SL, 48, 46, SZ_4K, 4, 0, 0);
	KUNIT_ASSERT_TRUE(test, pick_x86(o, 1, 12, &cfg));
	KUNIT_EXPECT_FALSE(test, cfg.no_cache);
}

/*
 * POSTED_INVAL is taken from the property, and dropped beside INVAL_MAP
 * (a device that copies the table) or NO_CACHE (nothing to invalidate).
 */
static void viommu_test_probe_posted_inval(struct kunit *test)
{
	static const u16 with[] = { VIRTIO_IOMMU_PGTF_F_INVAL_MAP,
				    VIRTIO_IOMMU_PGTF_F_NO_CACHE };
	struct viommu_probe_prop prop;
	struct viommu_table_fmt o[1];
	struct viommu_table_cfg cfg;
	u8 buf[32] = {};
	size_t w = 0, pos = 0;
	unsigned int i;

	put_table(buf, &w, 12, VIRTIO_IOMMU_PGTF_VTD_SL, 48, 46, SZ_4K, 4, 0,
		  VIRTIO_IOMMU_PGTF_F_POSTED_INVAL | 0x8000);
	KUNIT_ASSERT_EQ(test, viommu_probe_next(buf, sizeof(buf), &pos, &prop),
			1);
	KUNIT_EXPECT_EQ(test, prop.table.flags,
			VIRTIO_IOMMU_PGTF_F_POSTED_INVAL);

	o[0] = offer(VIRTIO_IOMMU_PGTF_VTD_SL, 48, 46, SZ_4K, 4, 0,
		     VIRTIO_IOMMU_PGTF_F_POSTED_INVAL);
	KUNIT_ASSERT_TRUE(test, pick_x86(o, 1, 12, &cfg));
	KUNIT_EXPECT_TRUE(test, cfg.posted_inval);
	KUNIT_EXPECT_FALSE(test, cfg.no_cache);
	KUNIT_EXPECT_FALSE(test, cfg.inval_map);

	for (i = 0; i < ARRAY_SIZE(with); i++) {
		o[0] = offer(VIRTIO_IOMMU_PGTF_VTD_SL, 48, 46, SZ_4K, 4, 0,
			     VIRTIO_IOMMU_PGTF_F_POSTED_INVAL | with[i]);
		KUNIT_ASSERT_TRUE(test, pick_x86(o, 1, 12, &cfg));
		KUNIT_EXPECT_FALSE(test, cfg.posted_inval);
		KUNIT_EXPECT_EQ(test, cfg.inval_map,
				with[i] == VIRTIO_IOMMU_PGTF_F_INVAL_MAP);
		KUNIT_EXPECT_EQ(test, cfg.no_cache,
				with[i] == VIRTIO_IOMMU_PGTF_F_NO_CACHE);
	}
}

static void viommu_test_choose_x86(struct kunit *test)
{
	struct viommu_table_fmt o[4];
	struct viommu_table_cfg cfg;

	/* The own architecture's format first, whatever the device's order */
	o[0] = offer(VIRTIO_IOMMU_PGTF_ARM_LPAE, 48, 48, SZ_4K, 4, 16, 0);
	o[1] = offer(VIRTIO_IOMMU_PGTF_AMD_V1, 48, 52, SZ_4K, 6, 0, 0);
	o[2] = offer(VIRTIO_IOMMU_PGTF_VTD_SL, 57, 46, SZ_4K, 5, 0,
		     VIRTIO_IOMMU_PGTF_F_INVAL_MAP);
	KUNIT_ASSERT_TRUE(test, pick_x86(o, 3, 12, &cfg));
	KUNIT_EXPECT_EQ(test, cfg.format, VIRTIO_IOMMU_PGTF_VTD_SL);
	/* Four levels, 48 bits, even where five are offered */
	KUNIT_EXPECT_EQ(test, cfg.ias, 48);
	KUNIT_EXPECT_EQ(test, cfg.levels, 4);
	KUNIT_EXPECT_EQ(test, cfg.oas, 46);
	KUNIT_EXPECT_EQ(test, cfg.granule_shift, 12);
	KUNIT_EXPECT_TRUE(test, cfg.inval_map);

	/* Three levels where the device walks no more */
	o[2] = offer(VIRTIO_IOMMU_PGTF_VTD_SL, 48, 46, SZ_4K, 3, 0, 0);
	KUNIT_ASSERT_TRUE(test, pick_x86(o, 3, 12, &cfg));
	KUNIT_EXPECT_EQ(test, cfg.format, VIRTIO_IOMMU_PGTF_VTD_SL);
	KUNIT_EXPECT_EQ(test, cfg.ias, 39);
	KUNIT_EXPECT_EQ(test, cfg.levels, 3);
	KUNIT_EXPECT_FALSE(test, cfg.inval_map);

	/* VT-d unusable (no 4K granule, then too few bits): AMD v1 */
	o[2] = offer(VIRTIO_IOMMU_PGTF_VTD_SL, 48, 46, SZ_2M, 4, 0, 0);
	KUNIT_ASSERT_TRUE(test, pick_x86(o, 3, 12, &cfg));
	KUNIT_EXPECT_EQ(test, cfg.format, VIRTIO_IOMMU_PGTF_AMD_V1);
	KUNIT_EXPECT_EQ(test, cfg.ias, 48);
	KUNIT_EXPECT_EQ(test, cfg.oas, 52);
	o[2] = offer(VIRTIO_IOMMU_PGTF_VTD_SL, 38, 46, SZ_4K, 4, 0, 0);
	KUNIT_ASSERT_TRUE(test, pick_x86(o, 3, 12, &cfg));
	KUNIT_EXPECT_EQ(test, cfg.format, VIRTIO_IOMMU_PGTF_AMD_V1);

	/* Only ARM_LPAE left: the last preference still serves */
	KUNIT_ASSERT_TRUE(test, pick_x86(o, 1, 12, &cfg));
	KUNIT_EXPECT_EQ(test, cfg.format, VIRTIO_IOMMU_PGTF_ARM_LPAE);
	/* ... but not on a driver that does not prefer it */
	o[0] = offer(VIRTIO_IOMMU_PGTF_VTD_SL, 48, 48, SZ_4K, 4, 0, 0);
	KUNIT_EXPECT_FALSE(test, pick_arm(o, 1, 12, &cfg));
	KUNIT_EXPECT_EQ(test, cfg.format, 0);
}

static void viommu_test_choose_arm(struct kunit *test)
{
	struct viommu_table_fmt o[3];
	struct viommu_table_cfg cfg;

	/* Unknown formats ignored; the granule of the CPU page taken */
	o[0] = offer(0x99, 48, 48, ~0U, 4, 16, 0);
	o[1] = offer(VIRTIO_IOMMU_PGTF_ARM_LPAE, 52, 52,
		     SZ_4K | SZ_16K | SZ_64K, 4, 16, 0);
	KUNIT_ASSERT_TRUE(test, pick_arm(o, 2, 14, &cfg));
	KUNIT_EXPECT_EQ(test, cfg.format, VIRTIO_IOMMU_PGTF_ARM_LPAE);
	KUNIT_EXPECT_EQ(test, cfg.granule_shift, 14);
	/* generic_pt's ARMv8 goes to 48 bits in and out */
	KUNIT_EXPECT_EQ(test, cfg.ias, 48);
	KUNIT_EXPECT_EQ(test, cfg.oas, 48);
	KUNIT_EXPECT_EQ(test, cfg.levels, 4);
	KUNIT_EXPECT_EQ(test, cfg.asid_bits, 16);

	/* 64K granule, 48 bits: three levels */
	KUNIT_ASSERT_TRUE(test, pick_arm(o, 2, 16, &cfg));
	KUNIT_EXPECT_EQ(test, cfg.levels, 3);
	KUNIT_EXPECT_EQ(test, cfg.ias, 48);

	/* Three levels of 4K walked: 39 bits */
	o[1] = offer(VIRTIO_IOMMU_PGTF_ARM_LPAE, 48, 44, SZ_4K, 3, 8, 0);
	KUNIT_ASSERT_TRUE(test, pick_arm(o, 2, 12, &cfg));
	KUNIT_EXPECT_EQ(test, cfg.ias, 39);
	KUNIT_EXPECT_EQ(test, cfg.levels, 3);
	KUNIT_EXPECT_EQ(test, cfg.oas, 44);
	KUNIT_EXPECT_EQ(test, cfg.asid_bits, 8);

	/* No granule of the CPU page; the first fitting offer wins */
	o[1] = offer(VIRTIO_IOMMU_PGTF_ARM_LPAE, 48, 48, SZ_64K, 4, 16, 0);
	o[2] = offer(VIRTIO_IOMMU_PGTF_ARM_LPAE, 40, 40, SZ_4K, 4, 16,
		     VIRTIO_IOMMU_PGTF_F_INVAL_MAP);
	KUNIT_ASSERT_TRUE(test, pick_arm(o, 3, 12, &cfg));
	KUNIT_EXPECT_EQ(test, cfg.ias, 40);
	KUNIT_EXPECT_TRUE(test, cfg.inval_map);
	KUNIT_EXPECT_FALSE(test, pick_arm(o, 2, 12, &cfg));
}

/* Offers no table can be built from: MAP/UNMAP mode */
static void viommu_test_choose_none(struct kunit *test)
{
	static const struct {
		struct viommu_table_fmt o;
		unsigned int page_shift;
	} cases[] = {
		/* Too few output bits for guest memory */
		{ { VIRTIO_IOMMU_PGTF_ARM_LPAE, 48, 31, SZ_4K, 4, 0, 0 }, 12 },
		{ { VIRTIO_IOMMU_PGTF_VTD_SL, 48, 20, SZ_4K, 4, 0, 0 }, 12 },
		/* Too few input bits, or levels */
		{ { VIRTIO_IOMMU_PGTF_ARM_LPAE, 31, 48, SZ_4K, 4, 0, 0 }, 12 },
		{ { VIRTIO_IOMMU_PGTF_ARM_LPAE, 48, 48, SZ_4K, 2, 0, 0 }, 12 },
		{ { VIRTIO_IOMMU_PGTF_ARM_LPAE, 48, 48, SZ_4K, 0, 0, 0 }, 12 },
		{ { VIRTIO_IOMMU_PGTF_AMD_V1, 48, 48, SZ_4K, 2, 0, 0 }, 12 },
		{ { VIRTIO_IOMMU_PGTF_VTD_SL, 0, 0, 0, 0, 0, 0 }, 12 },
		/* The x86 formats have a 4K granule only */
		{ { VIRTIO_IOMMU_PGTF_VTD_SL, 48, 48, ~0U, 4, 0, 0 }, 16 },
		/* No granule at all */
		{ { VIRTIO_IOMMU_PGTF_ARM_LPAE, 48, 48, 0, 4, 0, 0 }, 12 },
		/* The drafts' SMMUv3 context descriptors: not defined here */
		{ { 2, 48, 48, SZ_4K, 4, 16, 0 }, 12 },
	};
	struct viommu_table_cfg cfg;
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(cases); i++) {
		KUNIT_EXPECT_FALSE_MSG(test, pick_x86(&cases[i].o, 1,
						      cases[i].page_shift, &cfg),
				       "case %u", i);
		KUNIT_EXPECT_EQ(test, cfg.format, 0);
	}
	KUNIT_EXPECT_FALSE(test, pick_x86(NULL, 0, 12, &cfg));
}

/* Which endpoints can walk a domain's table */
static void viommu_test_table_joins(struct kunit *test)
{
	const struct viommu_table_cfg dom = {
		.format = VIRTIO_IOMMU_PGTF_VTD_SL, .ias = 48, .oas = 46,
		.granule_shift = 12, .levels = 4,
	};
	struct viommu_table_cfg ep = dom;

	KUNIT_EXPECT_TRUE(test, viommu_table_joins(&ep, &dom));
	ep.oas = 52;
	ep.inval_map = true;
	KUNIT_EXPECT_TRUE(test, viommu_table_joins(&ep, &dom));
	ep.ias = 39;
	ep.levels = 3;
	KUNIT_EXPECT_FALSE(test, viommu_table_joins(&ep, &dom));
	ep = dom;
	ep.oas = 40;
	KUNIT_EXPECT_FALSE(test, viommu_table_joins(&ep, &dom));
	ep = dom;
	ep.format = VIRTIO_IOMMU_PGTF_AMD_V1;
	KUNIT_EXPECT_FALSE(test, viommu_table_joins(&ep, &dom));
	ep.format = 0;
	KUNIT_EXPECT_FALSE(test, viommu_table_joins(&ep, &ep));
}

static void viommu_test_probe_good(struct kunit *test)
{
	struct viommu_probe_prop prop;
	u8 buf[128] = {};
	size_t w = 0, pos = 0;

	put_resv(buf, &w, VIRTIO_IOMMU_RESV_MEM_T_MSI, 0xfee00000, 0xfeefffff);
	put_prop(buf, &w, 0x7ff, 4);			/* unknown type */
	w += 4;
	put_resv(buf, &w, VIRTIO_IOMMU_RESV_MEM_T_RESERVED, 0, 0xfff);

	expect_resv(test, buf, sizeof(buf), &pos, VIRTIO_IOMMU_RESV_MEM_T_MSI,
		    0xfee00000, 0xfeefffff);
	KUNIT_EXPECT_EQ(test, pos, 24);

	KUNIT_ASSERT_EQ(test, viommu_probe_next(buf, sizeof(buf), &pos, &prop),
			1);
	KUNIT_EXPECT_EQ(test, prop.type, 0x7ff);
	KUNIT_EXPECT_EQ(test, pos, 32);

	expect_resv(test, buf, sizeof(buf), &pos,
		    VIRTIO_IOMMU_RESV_MEM_T_RESERVED, 0, 0xfff);
	/* Zeroes: the NONE property ends the list */
	KUNIT_EXPECT_EQ(test, viommu_probe_next(buf, sizeof(buf), &pos, &prop),
			0);
}

/*
 * virtio 1.3, PROBE, driver requirements: the driver MUST ignore a property
 * whose header has reserved bits set. It is skipped whole, its type
 * matching none (not even NONE, which would end the list), and the
 * properties after it are still read.
 */
static void viommu_test_probe_reserved_bits(struct kunit *test)
{
	struct viommu_probe_prop prop;
	u8 buf[128] = {};
	size_t w = 0, pos = 0;

	put_resv(buf, &w, VIRTIO_IOMMU_RESV_MEM_T_MSI, 0xfee00000, 0xfeefffff);
	put_unaligned_le16(0xf000 | VIRTIO_IOMMU_PROBE_T_RESV_MEM, buf);
	put_prop(buf, &w, 0x8000 | VIRTIO_IOMMU_PROBE_T_NONE, 4);
	w += 4;
	put_resv(buf, &w, VIRTIO_IOMMU_RESV_MEM_T_RESERVED, 0, 0xfff);

	KUNIT_ASSERT_EQ(test, viommu_probe_next(buf, sizeof(buf), &pos, &prop),
			1);
	KUNIT_EXPECT_NE(test, prop.type, VIRTIO_IOMMU_PROBE_T_RESV_MEM);
	KUNIT_EXPECT_EQ(test, prop.start, 0);
	KUNIT_EXPECT_EQ(test, prop.last, 0);
	KUNIT_EXPECT_EQ(test, pos, 24);

	KUNIT_ASSERT_EQ(test, viommu_probe_next(buf, sizeof(buf), &pos, &prop),
			1);
	KUNIT_EXPECT_NE(test, prop.type, VIRTIO_IOMMU_PROBE_T_NONE);
	KUNIT_EXPECT_EQ(test, pos, 32);

	expect_resv(test, buf, sizeof(buf), &pos,
		    VIRTIO_IOMMU_RESV_MEM_T_RESERVED, 0, 0xfff);
	KUNIT_EXPECT_EQ(test, viommu_probe_next(buf, sizeof(buf), &pos, &prop),
			0);
}

static void viommu_test_probe_edges(struct kunit *test)
{
	struct viommu_probe_prop prop;
	u8 buf[24] = {};
	size_t w = 0, pos;

	/* An empty area, and one too short for a header */
	pos = 0;
	KUNIT_EXPECT_EQ(test, viommu_probe_next(buf, 0, &pos, &prop), 0);
	KUNIT_EXPECT_EQ(test, viommu_probe_next(buf, 3, &pos, &prop), 0);
	/* A position past the end */
	pos = 100;
	KUNIT_EXPECT_EQ(test, viommu_probe_next(buf, sizeof(buf), &pos, &prop),
			0);

	/* A property that fills the area exactly, without a NONE after it */
	put_resv(buf, &w, 0, 0x1000, 0x1fff);
	pos = 0;
	KUNIT_EXPECT_EQ(test, viommu_probe_next(buf, sizeof(buf), &pos, &prop),
			1);
	KUNIT_EXPECT_EQ(test, viommu_probe_next(buf, sizeof(buf), &pos, &prop),
			0);

	/* A one-byte range */
	w = 0;
	put_resv(buf, &w, 0, 0x5000, 0x5000);
	pos = 0;
	KUNIT_EXPECT_EQ(test, viommu_probe_next(buf, sizeof(buf), &pos, &prop),
			1);
	KUNIT_EXPECT_EQ(test, prop.start, prop.last);
}

/* RESV_MEM ranges the IOMMU core's regions (start, size) can hold, or not */
static void viommu_test_resv_extent(struct kunit *test)
{
	struct viommu_probe_prop prop = { .type = VIRTIO_IOMMU_PROBE_T_RESV_MEM };
	phys_addr_t start;
	size_t size;

	prop.start = 0xfee00000;
	prop.last = 0xfeefffff;
	KUNIT_EXPECT_EQ(test, viommu_resv_extent(&prop, &start, &size), 0);
	KUNIT_EXPECT_EQ(test, start, 0xfee00000);
	KUNIT_EXPECT_EQ(test, size, 0x100000);

	/* One byte, at the very top */
	prop.start = ~0ULL;
	prop.last = ~0ULL;
	KUNIT_EXPECT_EQ(test, viommu_resv_extent(&prop, &start, &size), 0);
	KUNIT_EXPECT_EQ(test, size, 1);

	/* The whole 64-bit space: its size wraps to 0 */
	prop.start = 0;
	prop.last = ~0ULL;
	KUNIT_EXPECT_EQ(test, viommu_resv_extent(&prop, &start, &size),
			-EOVERFLOW);

	/* All but one byte fits */
	prop.last = ~0ULL - 1;
	KUNIT_EXPECT_EQ(test, viommu_resv_extent(&prop, &start, &size), 0);
	KUNIT_EXPECT_EQ(test, size, (size_t)~0ULL);
}

static void viommu_test_probe_malformed(struct kunit *test)
{
	struct viommu_probe_prop prop;
	u8 buf[64];
	size_t w, pos;

	/* Length runs past the area */
	memset(buf, 0, sizeof(buf));
	w = 0;
	put_prop(buf, &w, VIRTIO_IOMMU_PROBE_T_RESV_MEM, 0xffff);
	expect_malformed(test, buf, sizeof(buf), 0);

	/* An unknown property whose length runs one byte past the area */
	memset(buf, 0, sizeof(buf));
	w = 0;
	put_prop(buf, &w, 0x123, sizeof(buf) - 3);
	expect_malformed(test, buf, sizeof(buf), 0);

	/* RESV_MEM shorter than its fields */
	memset(buf, 0, sizeof(buf));
	w = 0;
	put_prop(buf, &w, VIRTIO_IOMMU_PROBE_T_RESV_MEM, 12);
	expect_malformed(test, buf, sizeof(buf), 0);

	/* RESV_MEM with start after end */
	memset(buf, 0, sizeof(buf));
	w = 0;
	put_resv(buf, &w, VIRTIO_IOMMU_RESV_MEM_T_MSI, 0x2000, 0x1fff);
	expect_malformed(test, buf, sizeof(buf), 0);

	/* A good property, then garbage that overruns */
	memset(buf, 0, sizeof(buf));
	w = 0;
	put_resv(buf, &w, 0, 0, 0xfff);
	put_prop(buf, &w, VIRTIO_IOMMU_PROBE_T_RESV_MEM, 40);
	pos = 0;
	KUNIT_EXPECT_EQ(test, viommu_probe_next(buf, sizeof(buf), &pos, &prop),
			1);
	expect_malformed(test, buf, sizeof(buf), pos);

	/* All ones: an unknown type with a huge length */
	memset(buf, 0xff, sizeof(buf));
	expect_malformed(test, buf, sizeof(buf), 0);
}

static void viommu_test_fault(struct kunit *test)
{
	struct viommu_fault_info info;
	u8 raw[25] = {};
	u8 *rec = raw + 1;		/* deliberately unaligned */

	rec[0] = VIRTIO_IOMMU_FAULT_R_MAPPING;
	put_unaligned_le32(VIRTIO_IOMMU_FAULT_F_WRITE |
			   VIRTIO_IOMMU_FAULT_F_ADDRESS, rec + 4);
	put_unaligned_le32(0x18, rec + 8);
	put_unaligned_le64(0xdead000, rec + 16);

	KUNIT_ASSERT_EQ(test, viommu_decode_fault(rec, 24, &info), 0);
	KUNIT_EXPECT_EQ(test, info.reason, VIRTIO_IOMMU_FAULT_R_MAPPING);
	KUNIT_EXPECT_EQ(test, info.flags, VIRTIO_IOMMU_FAULT_F_WRITE |
					  VIRTIO_IOMMU_FAULT_F_ADDRESS);
	KUNIT_EXPECT_EQ(test, info.endpoint, 0x18);
	KUNIT_EXPECT_EQ(test, info.address, 0xdead000);

	/* Wrong used lengths */
	KUNIT_EXPECT_EQ(test, viommu_decode_fault(rec, 0, &info), -EPROTO);
	KUNIT_EXPECT_EQ(test, viommu_decode_fault(rec, 23, &info), -EPROTO);
	KUNIT_EXPECT_EQ(test, viommu_decode_fault(rec, 25, &info), -EPROTO);
	KUNIT_EXPECT_EQ(test, info.endpoint, 0);

	/* Reserved bytes set: not a fault record this driver knows */
	rec[2] = 1;
	KUNIT_EXPECT_EQ(test, viommu_decode_fault(rec, 24, &info), -EPROTO);
	rec[2] = 0;

	/* Unknown reason and flags are passed on, not rejected */
	rec[0] = 0x42;
	put_unaligned_le32(0xffffffff, rec + 4);
	KUNIT_EXPECT_EQ(test, viommu_decode_fault(rec, 24, &info), 0);
	KUNIT_EXPECT_EQ(test, info.reason, 0x42);
}

/* The MAP record */

#define VIOMMU_TEST_RW	(IOMMU_READ | IOMMU_WRITE)

static void viommu_test_maps_init(struct kunit *test, struct viommu_maps *m)
{
	KUNIT_ASSERT_EQ(test, viommu_maps_init(m, GFP_KERNEL), 0);
}

/* Every table page goes with the domain */
static void viommu_test_maps_done(struct kunit *test, struct viommu_maps *m)
{
	viommu_maps_destroy(m);
	KUNIT_EXPECT_EQ(test, atomic_long_read(&m->table.nr_tables), 0);
}

static u64 viommu_test_phys(struct viommu_maps *m, u64 iova)
{
	return gpt_iova_to_phys(&m->table, iova);
}

/* Maps and unmaps of the same ranges, as the DMA API makes them */
static void viommu_test_maps_exact(struct kunit *test)
{
	struct viommu_maps m;

	viommu_test_maps_init(test, &m);
	KUNIT_EXPECT_EQ(test, viommu_maps_add(&m, 0x10000, 0x10fff, 0x80000,
					      VIOMMU_TEST_RW, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, viommu_maps_add(&m, 0x11000, 0x18fff, 0x90000,
					      IOMMU_READ, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, viommu_test_phys(&m, 0x11234), 0x90234);
	KUNIT_EXPECT_EQ(test, viommu_maps_del(&m, 0x10000, 0x10fff), 0x1000);
	KUNIT_EXPECT_EQ(test, viommu_test_phys(&m, 0x10000), 0);
	KUNIT_EXPECT_EQ(test, viommu_test_phys(&m, 0x11000), 0x90000);
	KUNIT_EXPECT_EQ(test, viommu_maps_del(&m, 0x11000, 0x18fff), 0x8000);
	KUNIT_EXPECT_EQ(test, viommu_maps_del(&m, 0x11000, 0x18fff), 0);

	/* A 2M block and a page after it, removed together */
	KUNIT_EXPECT_EQ(test, viommu_maps_add(&m, SZ_2M, SZ_4M + SZ_4K - 1,
					      SZ_2M, VIOMMU_TEST_RW,
					      GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, viommu_test_phys(&m, SZ_4M + 8), SZ_4M + 8);
	KUNIT_EXPECT_EQ(test, viommu_maps_del(&m, SZ_2M, SZ_4M + SZ_4K - 1),
			SZ_2M + SZ_4K);
	viommu_test_maps_done(test, &m);
}

/* A MAP over another is refused and leaves nothing of itself behind */
static void viommu_test_maps_overlap(struct kunit *test)
{
	struct viommu_maps m;

	viommu_test_maps_init(test, &m);
	KUNIT_EXPECT_EQ(test, viommu_maps_add(&m, 0x20000, 0x20fff, 0x1000,
					      VIOMMU_TEST_RW, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, viommu_maps_add(&m, 0x1e000, 0x21fff, 0x100000,
					      VIOMMU_TEST_RW, GFP_KERNEL),
			-EEXIST);
	KUNIT_EXPECT_EQ(test, viommu_test_phys(&m, 0x1e000), 0);
	KUNIT_EXPECT_EQ(test, viommu_test_phys(&m, 0x20000), 0x1000);
	KUNIT_EXPECT_EQ(test, viommu_maps_add(&m, 0x20000, 0x20fff, 0x1000,
					      VIOMMU_TEST_RW, GFP_KERNEL),
			-EEXIST);
	/* Out of reach, backwards, no access, misaligned */
	KUNIT_EXPECT_EQ(test, viommu_maps_add(&m, 0, VIOMMU_TABLE_LAST + SZ_4K,
					      0, VIOMMU_TEST_RW, GFP_KERNEL),
			-ERANGE);
	KUNIT_EXPECT_EQ(test, viommu_maps_add(&m, 0x5000, 0x4fff, 0,
					      VIOMMU_TEST_RW, GFP_KERNEL),
			-ERANGE);
	KUNIT_EXPECT_EQ(test, viommu_maps_add(&m, 0x30000, 0x30fff, 0, 0,
					      GFP_KERNEL), -EINVAL);
	KUNIT_EXPECT_EQ(test, viommu_maps_add(&m, 0x30800, 0x317ff, 0,
					      VIOMMU_TEST_RW, GFP_KERNEL),
			-EINVAL);
	/* The refused range is free for a MAP that fits */
	KUNIT_EXPECT_EQ(test, viommu_maps_add(&m, 0x1e000, 0x1ffff, 0x100000,
					      VIOMMU_TEST_RW, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, viommu_maps_del(&m, 0x1e000, 0x20fff), 0x3000);
	viommu_test_maps_done(test, &m);
}

/* Unmaps that do not match MAPs: refused at the start, widened at the end */
static void viommu_test_maps_partial(struct kunit *test)
{
	struct viommu_maps m;

	viommu_test_maps_init(test, &m);
	KUNIT_EXPECT_EQ(test, viommu_maps_add(&m, 0x40000, 0x47fff, 0x200000,
					      VIOMMU_TEST_RW, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, viommu_maps_del(&m, 0x41000, 0x47fff), 0);
	KUNIT_EXPECT_EQ(test, viommu_test_phys(&m, 0x41000), 0x201000);
	KUNIT_EXPECT_EQ(test, viommu_maps_del(&m, 0x40000, 0x40fff), 0x8000);
	KUNIT_EXPECT_EQ(test, viommu_test_phys(&m, 0x47000), 0);

	/* Widening stops where the next MAP starts, even right after */
	KUNIT_EXPECT_EQ(test, viommu_maps_add(&m, 0x50000, 0x51fff, 0x300000,
					      VIOMMU_TEST_RW, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, viommu_maps_add(&m, 0x52000, 0x52fff, 0x400000,
					      VIOMMU_TEST_RW, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, viommu_maps_del(&m, 0x50000, 0x50fff), 0x2000);
	KUNIT_EXPECT_EQ(test, viommu_test_phys(&m, 0x52000), 0x400000);
	/* Holes at either end are covered, not refused */
	KUNIT_EXPECT_EQ(test, viommu_maps_del(&m, 0x51000, 0x52fff), 0x2000);
	KUNIT_EXPECT_EQ(test, viommu_maps_add(&m, 0x60000, 0x60fff, 0x500000,
					      VIOMMU_TEST_RW, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, viommu_maps_del(&m, 0x60000, 0x6ffff), 0x10000);
	/* Nothing there, or out of reach */
	KUNIT_EXPECT_EQ(test, viommu_maps_del(&m, 0x70000, 0x7ffff), 0);
	KUNIT_EXPECT_EQ(test, viommu_maps_del(&m, VIOMMU_TABLE_LAST + 1,
					      U64_MAX), 0);
	viommu_test_maps_done(test, &m);
}

/* Refusals are found through the MAP's first page and go with the MAP */
static void viommu_test_maps_refused(struct kunit *test)
{
	struct viommu_maps m;

	viommu_test_maps_init(test, &m);
	KUNIT_EXPECT_EQ(test, viommu_maps_add(&m, 0x80000, 0x83fff, 0x600000,
					      VIOMMU_TEST_RW, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, viommu_maps_add(&m, 0x90000, 0x90fff, 0x700000,
					      VIOMMU_TEST_RW, GFP_KERNEL), 0);
	KUNIT_EXPECT_EQ(test, viommu_maps_error(&m, 0, VIOMMU_TABLE_LAST), 0);
	viommu_maps_refused(&m, 0x80000, -ENOMEM);
	viommu_maps_refused(&m, 0x80000, -ENOMEM);
	KUNIT_EXPECT_EQ(test, atomic_read(&m.failed), 1);
	KUNIT_EXPECT_EQ(test, viommu_maps_error(&m, 0x80000, 0x83fff), -ENOMEM);
	KUNIT_EXPECT_EQ(test, viommu_maps_error(&m, 0x90000, 0x90fff), 0);
	/* A refusal where nothing is mapped any more is ignored */
	viommu_maps_refused(&m, 0xa0000, -EIO);
	KUNIT_EXPECT_EQ(test, atomic_read(&m.failed), 1);
	KUNIT_EXPECT_EQ(test, viommu_maps_del(&m, 0x80000, 0x83fff), 0x4000);
	KUNIT_EXPECT_EQ(test, atomic_read(&m.failed), 0);
	KUNIT_EXPECT_EQ(test, viommu_maps_error(&m, 0, U64_MAX), 0);
	viommu_test_maps_done(test, &m);
}

/*
 * An unmap starting inside a large page of a MAP starts inside the MAP,
 * even where that page carries the MAP's first mark: refused, nothing
 * removed, and a refusal recorded on the MAP stays counted once.
 */
static void viommu_test_maps_inside_block(struct kunit *test)
{
	struct viommu_maps m;

	viommu_test_maps_init(test, &m);
	KUNIT_EXPECT_EQ(test, viommu_maps_add(&m, SZ_2M, SZ_4M - 1, SZ_2M,
					      VIOMMU_TEST_RW, GFP_KERNEL), 0);
	viommu_maps_refused(&m, SZ_2M, -ENOMEM);
	KUNIT_EXPECT_EQ(test, atomic_read(&m.failed), 1);
	KUNIT_EXPECT_EQ(test, viommu_maps_del(&m, SZ_2M + SZ_4K, SZ_4M - 1), 0);
	KUNIT_EXPECT_EQ(test, viommu_maps_del(&m, SZ_2M + SZ_1M, SZ_4M - 1), 0);
	KUNIT_EXPECT_EQ(test, viommu_test_phys(&m, SZ_2M + SZ_1M), SZ_2M + SZ_1M);
	KUNIT_EXPECT_EQ(test, atomic_read(&m.failed), 1);
	KUNIT_EXPECT_EQ(test, viommu_maps_error(&m, SZ_2M, SZ_4M - 1), -ENOMEM);
	/* An unmap ending in a hole after the MAP covers the hole, no more */
	KUNIT_EXPECT_EQ(test, viommu_maps_add(&m, SZ_8M, SZ_8M + SZ_4K - 1,
					      SZ_8M, VIOMMU_TEST_RW, GFP_KERNEL),
			0);
	KUNIT_EXPECT_EQ(test, viommu_maps_del(&m, SZ_2M, SZ_4M + SZ_4K - 1),
			SZ_2M + SZ_4K);
	KUNIT_EXPECT_EQ(test, atomic_read(&m.failed), 0);
	KUNIT_EXPECT_EQ(test, viommu_test_phys(&m, SZ_8M), SZ_8M);
	KUNIT_EXPECT_EQ(test, viommu_maps_del(&m, SZ_8M, SZ_8M + SZ_4K - 1),
			SZ_4K);
	viommu_test_maps_done(test, &m);
}

struct viommu_test_replayed {
	u64 start[4], last[4], pa[4];
	int prot[4];
	unsigned int n;
	unsigned int stop;		/* stop after this many, 0: never */
};

static int viommu_test_replay_fn(u64 start, u64 last, phys_addr_t pa,
				 int prot, void *arg)
{
	struct viommu_test_replayed *r = arg;

	if (r->n < ARRAY_SIZE(r->start)) {
		r->start[r->n] = start;
		r->last[r->n] = last;
		r->pa[r->n] = pa;
		r->prot[r->n] = prot & (VIOMMU_TEST_RW | IOMMU_MMIO);
	}
	r->n++;
	return r->n == r->stop ? 7 : 0;
}

/* Replay gives back the MAPs as recorded, whatever pages hold them */
static void viommu_test_maps_replay(struct kunit *test)
{
	static const struct {
		u64 start, last, pa;
		int prot;
	} want[] = {
		{ 0x1000, 0x1fff, 0x2000, IOMMU_READ },
		{ 0x2000, 0x3fff, 0x9000, IOMMU_WRITE },
		{ SZ_2M, SZ_4M + SZ_8K - 1, 5 * SZ_2M,
		  VIOMMU_TEST_RW | IOMMU_MMIO },
		{ SZ_1G, SZ_2G - 1, SZ_1G, VIOMMU_TEST_RW },
	};
	static const struct {
		u64 from;
		unsigned int n;
	} inside[] = {
		{ 0x3000, 2 }, { SZ_2M + SZ_4K, 1 }, { SZ_4M, 1 },
	};
	struct viommu_test_replayed r = {};
	struct viommu_maps m;
	unsigned int i;

	viommu_test_maps_init(test, &m);
	for (i = 0; i < ARRAY_SIZE(want); i++)
		KUNIT_ASSERT_EQ(test, viommu_maps_add(&m, want[i].start,
						      want[i].last, want[i].pa,
						      want[i].prot, GFP_KERNEL),
				0);
	KUNIT_EXPECT_EQ(test, viommu_maps_replay(&m, 0, viommu_test_replay_fn,
						 &r), 0);
	KUNIT_ASSERT_EQ(test, r.n, ARRAY_SIZE(want));
	for (i = 0; i < ARRAY_SIZE(want); i++) {
		KUNIT_EXPECT_EQ(test, r.start[i], want[i].start);
		KUNIT_EXPECT_EQ(test, r.last[i], want[i].last);
		KUNIT_EXPECT_EQ(test, r.pa[i], want[i].pa);
		KUNIT_EXPECT_EQ(test, r.prot[i], want[i].prot);
	}
	r = (struct viommu_test_replayed){ .stop = 2 };
	KUNIT_EXPECT_EQ(test, viommu_maps_replay(&m, 0, viommu_test_replay_fn,
						 &r), 7);
	KUNIT_EXPECT_EQ(test, r.n, 2U);

	/* From the end of one MAP: the next one on */
	r = (struct viommu_test_replayed){};
	KUNIT_EXPECT_EQ(test, viommu_maps_replay(&m, 0x2000,
						 viommu_test_replay_fn, &r), 0);
	KUNIT_ASSERT_EQ(test, r.n, 3U);
	KUNIT_EXPECT_EQ(test, r.start[0], 0x2000ULL);

	/*
	 * From inside a MAP, in one of its pages or in its 2 MiB block: that
	 * MAP is left out
	 */
	for (i = 0; i < ARRAY_SIZE(inside); i++) {
		r = (struct viommu_test_replayed){};
		KUNIT_EXPECT_EQ(test, viommu_maps_replay(&m, inside[i].from,
							 viommu_test_replay_fn,
							 &r), 0);
		KUNIT_ASSERT_EQ(test, r.n, inside[i].n);
		KUNIT_EXPECT_EQ(test, r.start[r.n - 1], (u64)SZ_1G);
	}
	viommu_test_maps_done(test, &m);
}

/*
 * The refused MAPs alone, as recorded, and each once: a MAP sent again is
 * no longer refused until the device says so again
 */
static void viommu_test_maps_replay_refused(struct kunit *test)
{
	struct viommu_test_replayed r = {};
	struct viommu_maps m;

	viommu_test_maps_init(test, &m);
	KUNIT_ASSERT_EQ(test, viommu_maps_add(&m, 0x1000, 0x1fff, 0x2000,
					      IOMMU_READ, GFP_KERNEL), 0);
	KUNIT_ASSERT_EQ(test, viommu_maps_add(&m, SZ_2M, SZ_4M + SZ_8K - 1,
					      5 * SZ_2M, VIOMMU_TEST_RW,
					      GFP_KERNEL), 0);
	KUNIT_ASSERT_EQ(test, viommu_maps_add(&m, SZ_1G, SZ_1G + SZ_4K - 1,
					      SZ_1G, IOMMU_WRITE, GFP_KERNEL),
			0);
	/* None refused: no walk */
	KUNIT_EXPECT_EQ(test, viommu_maps_replay_refused(&m, 0,
							 viommu_test_replay_fn,
							 &r), 0);
	KUNIT_EXPECT_EQ(test, r.n, 0U);

	viommu_maps_refused(&m, SZ_2M, -ENOMEM);
	viommu_maps_refused(&m, SZ_1G, -ENOMEM);
	KUNIT_EXPECT_EQ(test, viommu_maps_replay_refused(&m, 0,
							 viommu_test_replay_fn,
							 &r), 0);
	KUNIT_ASSERT_EQ(test, r.n, 2U);
	KUNIT_EXPECT_EQ(test, r.start[0], (u64)SZ_2M);
	KUNIT_EXPECT_EQ(test, r.last[0], (u64)SZ_4M + SZ_8K - 1);
	KUNIT_EXPECT_EQ(test, r.pa[0], (u64)5 * SZ_2M);
	KUNIT_EXPECT_EQ(test, r.prot[0], VIOMMU_TEST_RW);
	KUNIT_EXPECT_EQ(test, r.start[1], (u64)SZ_1G);
	KUNIT_EXPECT_EQ(test, r.prot[1], IOMMU_WRITE);

	/* Sent again: one left; a MAP never refused changes nothing */
	viommu_maps_resent(&m, SZ_2M);
	viommu_maps_resent(&m, SZ_2M);
	viommu_maps_resent(&m, 0x1000);
	KUNIT_EXPECT_EQ(test, atomic_read(&m.failed), 1);
	KUNIT_EXPECT_EQ(test, viommu_maps_error(&m, SZ_2M, SZ_4M - 1), 0);
	r = (struct viommu_test_replayed){};
	KUNIT_EXPECT_EQ(test, viommu_maps_replay_refused(&m, 0,
							 viommu_test_replay_fn,
							 &r), 0);
	KUNIT_ASSERT_EQ(test, r.n, 1U);
	KUNIT_EXPECT_EQ(test, r.start[0], (u64)SZ_1G);
	/* From past it, none */
	r = (struct viommu_test_replayed){};
	KUNIT_EXPECT_EQ(test, viommu_maps_replay_refused(&m, SZ_1G + SZ_4K,
							 viommu_test_replay_fn,
							 &r), 0);
	KUNIT_EXPECT_EQ(test, r.n, 0U);
	viommu_maps_resent(&m, SZ_1G);
	KUNIT_EXPECT_EQ(test, atomic_read(&m.failed), 0);
	viommu_test_maps_done(test, &m);
}

static struct kunit_case viommu_maps_cases[] = {
	KUNIT_CASE(viommu_test_maps_exact),
	KUNIT_CASE(viommu_test_maps_overlap),
	KUNIT_CASE(viommu_test_maps_partial),
	KUNIT_CASE(viommu_test_maps_refused),
	KUNIT_CASE(viommu_test_maps_inside_block),
	KUNIT_CASE(viommu_test_maps_replay),
	KUNIT_CASE(viommu_test_maps_replay_refused),
	{}
};

static struct kunit_suite viommu_maps_suite = {
	.name = "virtio-iommu-maps",
	.test_cases = viommu_maps_cases,
};

static struct kunit_case viommu_wire_cases[] = {
	KUNIT_CASE(viommu_test_encode_attach),
	KUNIT_CASE(viommu_test_encode_detach),
	KUNIT_CASE(viommu_test_encode_map),
	KUNIT_CASE(viommu_test_encode_unmap),
	KUNIT_CASE(viommu_test_encode_attach_table),
	KUNIT_CASE(viommu_test_encode_invalidate),
	KUNIT_CASE(viommu_test_encode_probe),
	KUNIT_CASE(viommu_test_status),
	KUNIT_CASE(viommu_test_req_result),
	KUNIT_CASE(viommu_test_probe_good),
	KUNIT_CASE(viommu_test_probe_reserved_bits),
	KUNIT_CASE(viommu_test_probe_edges),
	KUNIT_CASE(viommu_test_resv_extent),
	KUNIT_CASE(viommu_test_probe_malformed),
	KUNIT_CASE(viommu_test_fault),
	KUNIT_CASE(viommu_test_probe_table),
	KUNIT_CASE(viommu_test_probe_table_malformed),
	KUNIT_CASE(viommu_test_probe_no_cache),
	KUNIT_CASE(viommu_test_probe_posted_inval),
	KUNIT_CASE(viommu_test_choose_x86),
	KUNIT_CASE(viommu_test_choose_arm),
	KUNIT_CASE(viommu_test_choose_none),
	KUNIT_CASE(viommu_test_table_joins),
	{}
};

static struct kunit_suite viommu_wire_suite = {
	.name = "virtio-iommu-wire",
	.test_cases = viommu_wire_cases,
};

kunit_test_suites(&viommu_wire_suite, &viommu_maps_suite);

MODULE_DESCRIPTION("KUnit tests of the virtio-iommu wire helpers");
MODULE_LICENSE("GPL");
