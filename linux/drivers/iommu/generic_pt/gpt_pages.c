// SPDX-License-Identifier: GPL-2.0-only
/*
 * Generic IOMMU page table library: releasing table pages for users that
 * live outside drivers/iommu and so cannot reach its page allocator.
 */
#include <linux/export.h>
#include <linux/generic_pt/gpt.h>

#include "../iommu-pages.h"

void gpt_free_gathered(struct iommu_iotlb_gather *gather)
{
	iommu_put_pages_list(&gather->freelist);
}
EXPORT_SYMBOL_GPL(gpt_free_gathered);
