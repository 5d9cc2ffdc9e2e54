// SPDX-License-Identifier: GPL-2.0-only
/*
 * KUnit test of the unmap gathers of generic_pt stage-1 domains, on a live
 * SMMUv3.
 *
 * Included by arm-smmu-v3.c (as ext4's mballoc.c includes its test): the
 * cases check the driver's own domain state and need an SMMU that has
 * probed a device, so they run built in, at boot, on a machine with one.
 * They drive the paths no user of the IOMMU API reaches today: an unmap
 * that meets only empty tables (VFIO and iommufd unmap only what they
 * mapped, and a table emptied page by page stays until an unmap covers
 * it), and one gather fed two disjoint ranges.
 */

#include <kunit/test.h>
#include <linux/pci.h>

struct gpt_test_ctx {
	struct iommu_domain *domain;
	struct page *page;
	size_t granule;
	/* Two IOVAs far apart, each starting a last-level table's span */
	unsigned long a, b;
};

/* A device the SMMUv3 driver probed: any will do, the domain stays unattached */
static struct device *gpt_test_find_master(void)
{
	struct pci_dev *pdev = NULL;

	for_each_pci_dev(pdev) {
		struct dev_iommu *param = pdev->dev.iommu;

		if (param && param->iommu_dev &&
		    param->iommu_dev->ops == &arm_smmu_ops) {
			/* The domain takes no reference to the device */
			pci_dev_put(pdev);
			return &pdev->dev;
		}
	}
	return NULL;
}

static int gpt_test_init(struct kunit *test)
{
	struct iommu_domain *domain;
	struct gpt_test_ctx *ctx;
	struct device *dev;
	size_t span;

	dev = gpt_test_find_master();
	if (!dev)
		kunit_skip(test, "no device behind an SMMUv3");
	ctx = kunit_kzalloc(test, sizeof(*ctx), GFP_KERNEL);
	KUNIT_ASSERT_NOT_NULL(test, ctx);
	domain = iommu_paging_domain_alloc(dev);
	KUNIT_ASSERT_FALSE(test, IS_ERR(domain));
	if (!to_smmu_domain(domain)->use_gpt) {
		iommu_domain_free(domain);
		kunit_skip(test, "stage-1 tables from io-pgtable-arm (generic_pt=0)");
	}
	ctx->page = alloc_page(GFP_KERNEL);
	if (!ctx->page) {
		iommu_domain_free(domain);
		KUNIT_FAIL_AND_ABORT(test, "no page");
	}
	ctx->domain = domain;
	/* 4K, 16K or 64K; a last-level table spans 2M, 32M or 512M */
	ctx->granule = 1UL << __ffs(domain->pgsize_bitmap);
	span = ctx->granule << (ilog2(ctx->granule) - 3);
	ctx->a = 4 * span;
	ctx->b = 12 * span;
	test->priv = ctx;
	return 0;
}

static void gpt_test_exit(struct kunit *test)
{
	struct gpt_test_ctx *ctx = test->priv;

	if (!ctx)
		return;
	iommu_domain_free(ctx->domain);
	__free_page(ctx->page);
}

static void gpt_test_map_page(struct kunit *test, unsigned long iova)
{
	struct gpt_test_ctx *ctx = test->priv;

	KUNIT_ASSERT_EQ(test, iommu_map(ctx->domain, iova,
					page_to_phys(ctx->page), ctx->granule,
					IOMMU_READ | IOMMU_WRITE, GFP_KERNEL), 0);
}

/* Unmap the page at @iova into @gather, which is left to the case to sync */
static void gpt_test_unmap_page(struct kunit *test, unsigned long iova,
				struct iommu_iotlb_gather *gather)
{
	struct gpt_test_ctx *ctx = test->priv;

	KUNIT_ASSERT_EQ(test, iommu_unmap_fast(ctx->domain, iova, ctx->granule,
					       gather), ctx->granule);
}

/*
 * A table emptied one page at a time stays in place; an unmap covering its
 * whole span then unmaps nothing but frees the table.  The gather holds no
 * range, only the table on its freelist, and the sync must still
 * invalidate the walk caches and give the page back: returning early on
 * the empty range leaked it.
 */
static void gpt_test_unmap_only_empty_tables(struct kunit *test)
{
	struct gpt_test_ctx *ctx = test->priv;
	unsigned long page = ctx->a + 16 * ctx->granule;
	size_t span = ctx->b - ctx->a;
	struct iommu_iotlb_gather gather;

	gpt_test_map_page(test, page);
	KUNIT_ASSERT_EQ(test, iommu_unmap(ctx->domain, page, ctx->granule),
			ctx->granule);

	iommu_iotlb_gather_init(&gather);
	KUNIT_EXPECT_EQ(test, iommu_unmap_fast(ctx->domain, ctx->a, span,
					       &gather), 0);
	/* Otherwise the case no longer reaches the path it is about */
	KUNIT_ASSERT_FALSE_MSG(test, list_empty(&gather.freelist),
			       "the unmap freed no emptied table");
	KUNIT_EXPECT_GT(test, gather.start, gather.end);

	/*
	 * The driver's op itself: iommu_iotlb_sync() re-initialises the
	 * gather after it, which would hide a table the op left on the list.
	 */
	arm_smmu_iotlb_sync(ctx->domain, &gather);
	KUNIT_EXPECT_TRUE_MSG(test, list_empty(&gather.freelist),
			      "iotlb_sync left the freed table on the list");
	/* When it did, give the pages back here: the failing case leaks none */
	iommu_put_pages_list(&gather.freelist);
}

/*
 * In a strict unmap, a range disjoint from what was gathered syncs what was
 * gathered first (as iommu_iotlb_gather_add_page() does for io-pgtable), so
 * two distant unmaps do not widen into one invalidation of everything
 * between them; a range that continues the gathered one is merged.
 */
static void gpt_test_disjoint_unmap_syncs_first(struct kunit *test)
{
	struct gpt_test_ctx *ctx = test->priv;
	unsigned long a = ctx->a, b = ctx->b;
	size_t gr = ctx->granule;
	struct iommu_iotlb_gather gather;

	gpt_test_map_page(test, a);
	gpt_test_map_page(test, a + gr);
	gpt_test_map_page(test, b);

	iommu_iotlb_gather_init(&gather);
	gpt_test_unmap_page(test, a, &gather);
	gpt_test_unmap_page(test, a + gr, &gather);
	KUNIT_EXPECT_EQ(test, gather.start, a);
	KUNIT_EXPECT_EQ(test, gather.end, a + 2 * gr - 1);

	gpt_test_unmap_page(test, b, &gather);
	KUNIT_EXPECT_EQ_MSG(test, gather.start, b,
			    "the gathered range was widened, not synced");
	KUNIT_EXPECT_EQ(test, gather.end, b + gr - 1);
	iommu_iotlb_sync(ctx->domain, &gather);
	KUNIT_EXPECT_TRUE(test, list_empty(&gather.freelist));
	KUNIT_EXPECT_EQ(test, iommu_iova_to_phys(ctx->domain, a), 0);
	KUNIT_EXPECT_EQ(test, iommu_iova_to_phys(ctx->domain, b), 0);
}

/*
 * The flush queue flushes the whole domain later: a queued gather merges
 * disjoint ranges instead of syncing in the middle of a lazy unmap.
 */
static void gpt_test_queued_unmap_merges(struct kunit *test)
{
	struct gpt_test_ctx *ctx = test->priv;
	unsigned long a = ctx->a, b = ctx->b;
	size_t gr = ctx->granule;
	struct iommu_iotlb_gather gather;

	gpt_test_map_page(test, a);
	gpt_test_map_page(test, b);

	iommu_iotlb_gather_init(&gather);
	gather.queued = true;
	gpt_test_unmap_page(test, a, &gather);
	gpt_test_unmap_page(test, b, &gather);
	KUNIT_EXPECT_EQ(test, gather.start, a);
	KUNIT_EXPECT_EQ(test, gather.end, b + gr - 1);
	/* What dma-iommu's flush queue does when its timer fires */
	arm_smmu_flush_iotlb_all(ctx->domain);
	iommu_put_pages_list(&gather.freelist);
}

static struct kunit_case gpt_test_cases[] = {
	KUNIT_CASE(gpt_test_unmap_only_empty_tables),
	KUNIT_CASE(gpt_test_disjoint_unmap_syncs_first),
	KUNIT_CASE(gpt_test_queued_unmap_merges),
	{}
};

static struct kunit_suite gpt_test_suite = {
	.name = "arm-smmu-v3-gpt",
	.init = gpt_test_init,
	.exit = gpt_test_exit,
	.test_cases = gpt_test_cases,
};

kunit_test_suites(&gpt_test_suite);
