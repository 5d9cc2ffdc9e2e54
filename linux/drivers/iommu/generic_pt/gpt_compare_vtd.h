/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * The Intel VT-d driver's own second-stage table code as a reference for
 * gpt_compare_kunit.c and gpt_bench.c, in a file of its own: the Intel and AMD driver
 * headers cannot be included together.
 */
#ifndef __GPT_COMPARE_VTD_H
#define __GPT_COMPARE_VTD_H

#include <linux/iommu.h>

struct iommu_domain *gpt_cmp_vtd_domain(unsigned int width,
					unsigned int superpage, bool snp);
struct iommu_domain *gpt_cmp_vtd_gpt_domain(unsigned int width,
					    unsigned int superpage, bool snp);
u64 *gpt_cmp_vtd_top(struct iommu_domain *dom, unsigned int *lvl);

#endif
