/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Ranges recorded in a generic_pt table by their marks.
 *
 * A paravirtual IOMMU sends each mapped range as one request (virtio-iommu's
 * MAP), and both of its ends must know those ranges: the device refuses an
 * UNMAP that would split one, the driver must send UNMAPs the device accepts.
 * Mapping each range with GPT_PROT_MARK records it in the table itself, its
 * first page marked GPT_SW_FIRST and its last GPT_SW_LAST; the lookups here
 * find ranges back from those marks, for the driver
 * (drivers/iommu/virtio-iommu-maps.h) and for a device alike.
 *
 * Each lookup is a gpt_walk() and has its rules: the caller excludes
 * unmaps of what it looks at.
 */
#ifndef __LINUX_GENERIC_PT_MARKS_H
#define __LINUX_GENERIC_PT_MARKS_H

#include <linux/bits.h>
#include <linux/generic_pt/gpt.h>

static inline int gpt_marks_copy_leaf(const struct gpt_leaf *leaf, void *arg)
{
	*(struct gpt_leaf *)arg = *leaf;
	return 1;
}

/**
 * gpt_marks_page() - the page that maps an address
 * @t: the table
 * @iova: the address
 * @page: filled with the page when there is one
 *
 * Return: true when @iova is mapped.
 */
static inline bool gpt_marks_page(struct gpt_table *t, u64 iova,
				  struct gpt_leaf *page)
{
	return gpt_walk(t, iova, 1, gpt_marks_copy_leaf, page) == 1;
}

/**
 * gpt_marks_walk() - gpt_walk() over [@start, @last]
 * @t: the table
 * @start: first address
 * @last: last address, at least @start; the whole 64-bit space may be asked
 * @fn: called for each page, see gpt_leaf_fn
 * @arg: passed to @fn
 *
 * Return: what gpt_walk() returns.
 */
static inline int gpt_marks_walk(struct gpt_table *t, u64 start, u64 last,
				 gpt_leaf_fn fn, void *arg)
{
	u64 len = last - start + 1;
	int ret;

	/* A length cannot say 2^64: that walk goes in two halves */
	if (!len) {
		ret = gpt_walk(t, start, BIT_ULL(63), fn, arg);
		if (ret)
			return ret;
		start += BIT_ULL(63);
		len = BIT_ULL(63);
	}
	return gpt_walk(t, start, len, fn, arg);
}

static inline int gpt_marks_any_leaf(const struct gpt_leaf *leaf, void *arg)
{
	return 1;
}

/**
 * gpt_marks_any() - whether anything is mapped in a range
 * @t: the table
 * @start: first address
 * @last: last address, at least @start; the whole 64-bit space may be asked
 *
 * Return: true when a page of the table meets [@start, @last].
 */
static inline bool gpt_marks_any(struct gpt_table *t, u64 start, u64 last)
{
	return gpt_marks_walk(t, start, last, gpt_marks_any_leaf, NULL) == 1;
}

/* Follow a range page by page from the page that ends at *@arg */
static inline int gpt_marks_follow(const struct gpt_leaf *leaf, void *arg)
{
	u64 *end = arg;

	if (leaf->iova != *end + 1 || (leaf->sw & GPT_SW_FIRST))
		return 1;
	*end = leaf->iova + leaf->size - 1;
	return leaf->sw & GPT_SW_LAST ? 1 : 0;
}

/**
 * gpt_marks_end() - where the range holding a page ends
 * @t: the table
 * @page: a page of the range, from gpt_marks_page()
 * @limit: look no further than this address
 *
 * A range has no holes: the lookup follows its pages from @page to the one
 * marked last, and never leaves the range.  It costs one step per page, so
 * @limit bounds it where the caller needs no more.
 *
 * Return: the last address of the range; an address at or past @limit when
 * the range goes on that far.
 */
static inline u64 gpt_marks_end(struct gpt_table *t,
				const struct gpt_leaf *page, u64 limit)
{
	u64 end = page->iova + page->size - 1;

	if (!(page->sw & GPT_SW_LAST) && end < limit)
		gpt_walk(t, end + 1, limit - end, gpt_marks_follow, &end);
	return end;
}

#endif /* __LINUX_GENERIC_PT_MARKS_H */
