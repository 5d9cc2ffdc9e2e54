// SPDX-License-Identifier: GPL-2.0-only
/*
 * Generic IOMMU page table library: iommu_domain_ops callbacks.
 *
 * The iommu core hands out (pgsize, pgcount) pairs; the library picks page
 * sizes itself from the alignment of the whole range, so the pair is only
 * turned into a length here.
 */
#include <linux/debugfs.h>
#include <linux/export.h>
#include <linux/generic_pt/iommu.h>
#include <linux/init.h>
#include <linux/overflow.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>

/*
 * Tables that mapped through gpt_iommu_map_pages(), per format: a driver
 * that says it uses generic_pt but fell back to its old page tables shows
 * none. Per CPU, so that no two tables' first maps share a cache line.
 * debugfs: generic_pt/iommu_tables.
 */
static const char *const gpt_fmt_names[GPT_FMT_NR] = {
	[GPT_FMT_ARMV8] = "armv8",
	[GPT_FMT_AMDV1] = "amdv1",
	[GPT_FMT_VTDSS] = "vtdss",
};

DEFINE_PER_CPU(struct gpt_iommu_counts, gpt_iommu_counts);
EXPORT_PER_CPU_SYMBOL_GPL(gpt_iommu_counts);

/**
 * gpt_iommu_unmap_cut() - the rest of gpt_iommu_unmap_pages()
 * @t: the domain's table
 * @iova: first input address of the whole range
 * @len: length of the whole range
 * @done: bytes unmapped from @iova so far, less than @len
 * @gather: as for gpt_iommu_unmap_pages()
 *
 * The unmap stopped at a large page only partly inside the range: cut it
 * (GFP_ATOMIC, since unmap may be called in atomic context) until the part
 * inside can go on its own, and go on.
 *
 * Return: bytes unmapped from @iova, as gpt_iommu_unmap_pages().
 */
size_t gpt_iommu_unmap_cut(struct gpt_table *t, unsigned long iova,
			   size_t len, size_t done,
			   struct iommu_iotlb_gather *gather)
{
	while (done < len && !gpt_cut(t, iova + done, GFP_ATOMIC))
		done += gpt_unmap(t, iova + done, len - done, gather);
	return done;
}
EXPORT_SYMBOL_GPL(gpt_iommu_unmap_cut);

/**
 * gpt_iommu_iova_to_phys() - iommu_domain_ops.iova_to_phys
 * @t: the domain's table
 * @iova: input address
 *
 * Lock-free.
 *
 * Return: the output address, or 0 when not mapped.
 */
phys_addr_t gpt_iommu_iova_to_phys(struct gpt_table *t, dma_addr_t iova)
{
	return gpt_iova_to_phys(t, iova);
}
EXPORT_SYMBOL_GPL(gpt_iommu_iova_to_phys);

/**
 * gpt_iommu_read_and_clear_dirty() - iommu_dirty_ops.read_and_clear_dirty
 * @t: the domain's table
 * @iova: first input address
 * @size: length in bytes
 * @flags: IOMMU_DIRTY_NO_CLEAR or 0
 * @dirty: receives the dirty ranges
 *
 * The caller serialises against map and unmap of the range.
 *
 * Return: see gpt_read_and_clear_dirty().
 */
int gpt_iommu_read_and_clear_dirty(struct gpt_table *t, unsigned long iova,
				   size_t size, unsigned long flags,
				   struct iommu_dirty_bitmap *dirty)
{
	return gpt_read_and_clear_dirty(t, iova, size, flags, dirty);
}
EXPORT_SYMBOL_GPL(gpt_iommu_read_and_clear_dirty);

static int gpt_iommu_tables_show(struct seq_file *s, void *unused)
{
	unsigned int fmt;
	int cpu;

	for (fmt = 0; fmt < ARRAY_SIZE(gpt_fmt_names); fmt++) {
		unsigned long sum = 0;

		for_each_possible_cpu(cpu)
			sum += per_cpu(gpt_iommu_counts, cpu).tables[fmt];
		seq_printf(s, "%s %lu\n", gpt_fmt_names[fmt], sum);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(gpt_iommu_tables);

static int __init gpt_iommu_debugfs_init(void)
{
	struct dentry *dir = debugfs_create_dir("generic_pt", NULL);

	debugfs_create_file("iommu_tables", 0444, dir, NULL,
			    &gpt_iommu_tables_fops);
	return 0;
}
late_initcall(gpt_iommu_debugfs_init);
