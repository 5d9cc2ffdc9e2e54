/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Generic IOMMU page table library: the algorithms.
 *
 * This header is included once by each format file after the format has
 * defined PTF_PREFIX and the ptf_*() accessors listed below.  Every function
 * here is instantiated for that format only, so the accessors inline into
 * the loops and no entry is ever touched through an indirect call.
 *
 * Vocabulary: a table holds 2^bits entries; level 0 holds the smallest
 * pages and the top table has the highest level.  An entry is empty, a
 * pointer to a table one level down, or a leaf.  A leaf may be one of a
 * "run" of 2^k entries that together map one larger page (the ARM
 * contiguous hint, the AMD v1 replicated page size encoding).
 *
 * The format provides, all static inline:
 *  ptf_shift(t, lvl)         log2 of the bytes one entry at @lvl spans
 *  ptf_bits(t, lvl, top)     index bits of a table at @lvl (@top: the root)
 *  ptf_order(t, lvl, top)    page order of a table at @lvl
 *  ptf_runs(t, lvl)          bit k set if a leaf run of 2^k entries is allowed
 *  ptf_present(pte)          entry is valid
 *  ptf_is_table(t, pte, lvl) a valid entry at @lvl points to a table
 *  ptf_table_va(t, pte)      virtual address of that table
 *  ptf_mk_table(t, pa, lvl)  entry at @lvl pointing to a table at @lvl - 1
 *  ptf_run_log2(t, pte, lvl) k of the run a valid leaf belongs to
 *  ptf_leaf_pa(t, pte, lvl, size) output address of the page, size aligned
 *  ptf_leaf_attr(t, pte)     everything but address and size encoding
 *  ptf_mk_leaf(t, pa, lvl, k, attr) first entry of a run of 2^k
 *  ptf_run_step(t, lvl)      added to each next entry of a run
 *  ptf_prot(t, prot, &attr)  iommu prot flags to leaf attributes
 *  ptf_leaf_prot(t, pte)     leaf attributes back to iommu prot flags
 *  ptf_sw_shift(t)           bit of GPT_SW_FIRST in a leaf, 0 if no room
 *  ptf_dirty_ok(t), ptf_dirty(t, pte), ptf_clean(t, pte)
 *  ptf_rsvd(t, pte, lvl), ptf_table_prot(t, pte): see pt_foreign.h
 */
#include "gpt_priv.h"

#define PT__CAT(a, b) a##_##b
#define PT_CAT(a, b) PT__CAT(a, b)
#define PTN(name) PT_CAT(PTF_PREFIX, name)

/* Input address bits a table with its top at @lvl translates */
static inline unsigned int PTN(reach)(const struct gpt_table *t,
				      unsigned int lvl)
{
	return ptf_shift(t, lvl) + ptf_bits(t, lvl, true);
}

static inline unsigned int PTN(index)(const struct gpt_table *t, u64 iova,
				      unsigned int lvl, unsigned int bits)
{
	return (iova >> ptf_shift(t, lvl)) & ((1ULL << bits) - 1);
}

/*
 * How many entries of 2^@shift bytes fit wholly in @left + 1 bytes starting
 * at an entry boundary.  Entries that only start inside the range do not
 * count: a shorter tail goes one level down.  (@left + 1 may overflow.)
 */
static inline u64 PTN(whole)(u64 left, unsigned int shift)
{
	u64 span = 1ULL << shift;

	return (left >> shift) + ((left & (span - 1)) == span - 1);
}

/*
 * Largest allowed run at @lvl whose page size divides the alignment of
 * @align (iova | pa) and fits in @left + 1 bytes; -1 if none.
 */
static inline int PTN(pick_run)(unsigned int runs, u64 align, u64 left,
				unsigned int shift)
{
	unsigned int max_log2 = align ? __ffs64(align) : 63;
	unsigned int len_log2 = left == U64_MAX ? 63 : fls64(left + 1) - 1;

	max_log2 = min(max_log2, len_log2);
	if (max_log2 < shift)
		return -1;
	max_log2 -= shift;
	if (max_log2 < 31)
		runs &= (2U << max_log2) - 1;
	return runs ? fls(runs) - 1 : -1;
}

/* GPT_SW_* bits @sw as they sit in a leaf; 0 for formats without them */
static inline u64 PTN(sw)(const struct gpt_table *t, unsigned int sw)
{
	return ptf_sw_shift(t) ? (u64)sw << ptf_sw_shift(t) : 0;
}

static inline unsigned int PTN(leaf_sw)(const struct gpt_table *t, u64 pte)
{
	return ptf_sw_shift(t) ? (pte >> ptf_sw_shift(t)) & GPT_SW_MASK : 0;
}

/*
 * The software bits piece @i of @n keeps when a leaf whose bits are @sw is
 * cut: the range's first page is still the first piece, its last the last.
 */
static inline u64 PTN(piece_sw)(const struct gpt_table *t, unsigned int sw,
				u64 i, u64 n)
{
	if (i)
		sw &= ~(GPT_SW_FIRST | GPT_SW_USER);
	if (i != n - 1)
		sw &= ~GPT_SW_LAST;
	return PTN(sw)(t, sw);
}

/*
 * Install an empty table in the empty entry at @ptep (level @lvl), or use
 * the one a concurrent map installed first.  Out of line: after warm-up
 * almost every walk finds its tables in place.
 */
static noinline int PTN(install_table)(struct gpt_table *t, u64 *ptep,
				       u64 pte, unsigned int lvl, gfp_t gfp,
				       u64 *ptev)
{
	unsigned int order = ptf_order(t, lvl - 1, false);
	u64 *new = gpt_alloc_table(t, order, gfp);
	u64 newpte, old;

	if (!new)
		return -ENOMEM;
	newpte = ptf_mk_table(t, virt_to_phys(new), lvl);
	/*
	 * The zeroed table must be visible to a hardware walker before the
	 * entry that points to it. cmpxchg64() is fully ordered, but only
	 * among CPUs (on arm64 a DMB ISH); dma_wmb() orders the stores for
	 * the IOMMU too, as io-pgtable-arm does before it installs a table.
	 */
	dma_wmb();
	old = cmpxchg64(ptep, pte, newpte);
	if (old != pte) {
		/* A concurrent map of a neighbour won */
		gpt_free_table(t, new, order);
		if (!ptf_present(old) || !ptf_is_table(t, old, lvl))
			return -EADDRINUSE;
		newpte = old;
	}
	*ptev = newpte;
	return 0;
}

/*
 * The table below the entry at @ptep (level @lvl), installing an empty one
 * if the entry is empty.  Returns -EADDRINUSE if the entry is a leaf.
 */
static __always_inline int PTN(next_table)(struct gpt_table *t, u64 *ptep,
					   unsigned int lvl, gfp_t gfp,
					   u64 *ptev)
{
	u64 pte = READ_ONCE(*ptep);

	if (unlikely(!ptf_present(pte)))
		return PTN(install_table)(t, ptep, pte, lvl, gfp, ptev);
	if (!ptf_is_table(t, pte, lvl))
		return -EADDRINUSE;
	*ptev = pte;
	return 0;
}

static int PTN(map_level)(struct gpt_map_state *s, u64 *table,
			  unsigned int lvl, unsigned int bits)
{
	struct gpt_table *t = s->t;
	unsigned int shift = ptf_shift(t, lvl);
	unsigned int runs = ptf_runs(t, lvl);
	unsigned int nents = 1U << bits;
	unsigned int idx = PTN(index)(t, s->iova, lvl, bits);
	u64 span = 1ULL << shift;
	int ret;

	while (idx < nents) {
		u64 *ptep = &table[idx];
		u64 pte;
		int k = -1;

		if (runs)
			k = PTN(pick_run)(runs, s->iova | s->pa, s->left, shift);

		if (k == 0) {
			/*
			 * The common case of many single entries in a row:
			 * fill until the table, the range or an occupied
			 * entry ends it, without looking at alignment again.
			 */
			u64 n = min_t(u64, nents - idx,
				      PTN(whole)(s->left, shift));
			u64 v = ptf_mk_leaf(t, s->pa, lvl, 0, s->attr);
			u64 first = s->first;
			u64 i;

			/*
			 * A run may fit from the next boundary of the
			 * smallest run size on: stop there and look again.
			 */
			if (runs > 1) {
				unsigned int rk = __ffs(runs & ~1U);

				n = min_t(u64, n, (1U << rk) -
					  (idx & ((1U << rk) - 1)));
			}
			for (i = 0; i < n; i++) {
				u64 sw = first;

				if (ptf_present(READ_ONCE(ptep[i])))
					break;
				/* The range's last page: its mark in the same store */
				if (s->left < ((i + 1) << shift))
					sw |= s->last;
				WRITE_ONCE(ptep[i], v | sw);
				first = 0;
				v += span;
			}
			if (i) {
				s->first = 0;
				idx += i;
				s->iova += i << shift;
				s->pa += i << shift;
				if (s->left < (i << shift)) {
					s->done = true;
					return 0;
				}
				s->left -= i << shift;
				continue;
			}
		} else if (k > 0) {
			unsigned int n = 1U << k, i;
			u64 step = ptf_run_step(t, lvl);
			u64 v;

			for (i = 0; i < n; i++)
				if (ptf_present(READ_ONCE(ptep[i])))
					break;
			if (i == n) {
				u64 sw = s->first;

				if (s->left < (span << k))
					sw |= s->last;
				v = ptf_mk_leaf(t, s->pa, lvl, k, s->attr | sw);
				s->first = 0;
				for (i = 0; i < n; i++) {
					WRITE_ONCE(ptep[i], v);
					v += step;
				}
				idx += n;
				s->iova += span << k;
				s->pa += span << k;
				if (s->left < (span << k)) {
					s->done = true;
					return 0;
				}
				s->left -= span << k;
				continue;
			}
			/* Something is in the way: a single entry may still fit */
			if (!ptf_present(READ_ONCE(ptep[0])) && (runs & 1)) {
				u64 sw = s->first;

				if (s->left < span)
					sw |= s->last;
				WRITE_ONCE(ptep[0], ptf_mk_leaf(t, s->pa, lvl, 0,
								s->attr | sw));
				s->first = 0;
				idx++;
				s->iova += span;
				s->pa += span;
				if (s->left < span) {
					s->done = true;
					return 0;
				}
				s->left -= span;
				continue;
			}
		}

		/* Descend, installing a table if there is none */
		if (!lvl)
			return -EADDRINUSE;
		ret = PTN(next_table)(t, ptep, lvl, s->gfp, &pte);
		if (ret)
			return ret;
		ret = PTN(map_level)(s, ptf_table_va(t, pte), lvl - 1,
				     ptf_bits(t, lvl - 1, false));
		if (ret || s->done)
			return ret;
		idx++;
	}
	return 0;
}

/*
 * Make the table tall enough for @last.  The new top is built privately and
 * published with one cmpxchg of the packed root|level word, so a concurrent
 * walker sees either the old or the new table, both complete.
 */
static noinline int PTN(grow)(struct gpt_table *t, u64 last, gfp_t gfp)
{
	unsigned long top = READ_ONCE(t->top);

	while (PTN(reach)(t, gpt_top_lvl(top)) < 64 &&
	       (last >> PTN(reach)(t, gpt_top_lvl(top)))) {
		unsigned int lvl = gpt_top_lvl(top) + 1;
		unsigned int order = ptf_order(t, lvl, true);
		unsigned long old;
		u64 *new;

		if (lvl > t->max_level)
			return -ERANGE;
		new = gpt_alloc_table(t, order, gfp);
		if (!new)
			return -ENOMEM;
		new[0] = ptf_mk_table(t, virt_to_phys(gpt_top_table(top)), lvl);
		/* The new top's entry before the root that shows it (see install_table) */
		dma_wmb();
		old = cmpxchg(&t->top, top, (unsigned long)new | lvl);
		if (old != top) {
			gpt_free_table(t, new, order);
			top = old;
			continue;
		}
		top = (unsigned long)new | lvl;
		t->ias = min(PTN(reach)(t, lvl), 64U);
		if (t->top_changed)
			t->top_changed(t);
	}
	return 0;
}

/*
 * The general map walk from @table at @lvl down.  Out of line so that the
 * walk state stays off the stack of the one-page fast path in map.
 */
static noinline int PTN(map_walk)(struct gpt_table *t, u64 *table,
				  unsigned int lvl, unsigned int bits, u64 iova,
				  phys_addr_t pa, u64 len, u64 attr, u64 mark,
				  gfp_t gfp, size_t *mapped)
{
	struct gpt_map_state s = {
		.t = t, .iova = iova, .pa = pa, .left = len - 1, .attr = attr,
		.gfp = gfp,
	};

	if (mark) {
		s.first = PTN(sw)(t, GPT_SW_FIRST);
		s.last = PTN(sw)(t, GPT_SW_LAST);
	}
	int ret;

	ret = PTN(map_level)(&s, table, lvl, bits);
	if (mapped)
		*mapped += s.iova - iova;
	return ret;
}

static int PTN(map)(struct gpt_table *t, u64 iova, phys_addr_t pa, u64 len,
		    int prot, gfp_t gfp, size_t *mapped)
{
	u64 min_size = 1ULL << ptf_shift(t, 0);
	unsigned int lvl, bits, max_log2;
	unsigned long top;
	bool mark = prot & GPT_PROT_MARK;
	u64 *table, attr;
	int ret;

	if (!len || ((iova | pa | len) & (min_size - 1)))
		return -EINVAL;
	if (mark && !ptf_sw_shift(t))
		return -EOPNOTSUPP;
	prot &= ~GPT_PROT_MARK;
	if (iova + len - 1 < iova || (u64)pa + len - 1 < pa)
		return -ERANGE;
	if (t->oas < 64 && (((u64)pa + len - 1) >> t->oas))
		return -ERANGE;
	ret = ptf_prot(t, prot, &attr);
	if (ret)
		return ret;
	top = READ_ONCE(t->top);
	if (PTN(reach)(t, gpt_top_lvl(top)) < 64 &&
	    ((iova + len - 1) >> PTN(reach)(t, gpt_top_lvl(top)))) {
		if (gpt_top_lvl(top) == t->max_level)
			return -ERANGE;
		ret = PTN(grow)(t, iova + len - 1, gfp);
		if (ret)
			return ret;
		top = READ_ONCE(t->top);
	}

	/*
	 * Most maps fit in one entry of the upper levels: walk down without
	 * recursion to the first level where the range spans several entries
	 * or a leaf may go, and start the general walk there.
	 */
	max_log2 = min_t(unsigned int, __ffs64(iova | pa | BIT_ULL(63)),
			 fls64(len) - 1);
	table = gpt_top_table(top);
	lvl = gpt_top_lvl(top);
	bits = ptf_bits(t, lvl, true);
	for (;;) {
		unsigned int shift = ptf_shift(t, lvl);
		u64 *ptep = &table[PTN(index)(t, iova, lvl, bits)];
		u64 pte;

		if ((iova ^ (iova + len - 1)) >> shift)
			break;
		/* A page of this level's size fits: a leaf goes here */
		if (max_log2 >= shift && ptf_runs(t, lvl)) {
			/*
			 * Inside one entry and aligned to it: exactly one
			 * page, the commonest map of all.
			 */
			if ((ptf_runs(t, lvl) & 1) &&
			    !ptf_present(READ_ONCE(*ptep))) {
				u64 sw = mark ? PTN(sw)(t, GPT_SW_FIRST |
							    GPT_SW_LAST) : 0;

				/*
				 * A leaf points at no table, so there is
				 * nothing to order before it; the caller's
				 * IOTLB sync or queue kick shows it to the
				 * IOMMU with its own barrier.
				 */
				WRITE_ONCE(*ptep,
					   ptf_mk_leaf(t, pa, lvl, 0, attr | sw));
				if (mapped)
					*mapped += len;
				return 0;
			}
			break;
		}
		if (!lvl)
			break;
		ret = PTN(next_table)(t, ptep, lvl, gfp, &pte);
		if (ret)
			return ret;
		table = ptf_table_va(t, pte);
		lvl--;
		bits = ptf_bits(t, lvl, false);
	}
	return PTN(map_walk)(t, table, lvl, bits, iova, pa, len, attr, mark,
			     gfp, mapped);
}

/*
 * Queue @table and every table below it for freeing.  Returns true if any
 * of them still held a leaf, so that unmapping a range that only held empty
 * tables reports nothing unmapped.
 */
static bool PTN(gather_tree)(struct gpt_table *t, u64 *table,
			     unsigned int lvl, struct iommu_iotlb_gather *g)
{
	unsigned int i, nents = 1U << ptf_bits(t, lvl, false);
	bool leaves = false;

	for (i = 0; i < nents; i++) {
		u64 pte = READ_ONCE(table[i]);

		if (!ptf_present(pte))
			continue;
		if (lvl && ptf_is_table(t, pte, lvl))
			leaves |= PTN(gather_tree)(t, ptf_table_va(t, pte),
						   lvl - 1, g);
		else
			leaves = true;
	}
	gpt_gather_table(t, table, g);
	return leaves;
}

/* Does @table (at @lvl, not the top) hold no entry at all? */
static bool PTN(table_empty)(struct gpt_table *t, u64 *table, unsigned int lvl)
{
	return !memchr_inv(table, 0, sizeof(*table) << ptf_bits(t, lvl, false));
}

static void PTN(unmap_level)(struct gpt_unmap_state *s, u64 *table,
			     unsigned int lvl, unsigned int bits)
{
	struct gpt_table *t = s->t;
	unsigned int shift = ptf_shift(t, lvl);
	unsigned int nents = 1U << bits;
	unsigned int idx = PTN(index)(t, s->iova, lvl, bits);
	u64 span = 1ULL << shift;

	while (idx < nents) {
		u64 pte = READ_ONCE(table[idx]);
		u64 adv;

		if (!ptf_present(pte)) {
			adv = span - (s->iova & (span - 1));
			idx++;
		} else if (lvl && ptf_is_table(t, pte, lvl)) {
			if ((s->iova & (span - 1)) || s->left < span - 1) {
				u64 *below = ptf_table_va(t, pte);

				PTN(unmap_level)(s, below, lvl - 1,
						 ptf_bits(t, lvl - 1, false));
				if (s->prune &&
				    PTN(table_empty)(t, below, lvl - 1)) {
					WRITE_ONCE(table[idx], 0);
					gpt_retire_table(t, below,
							 ptf_order(t, lvl - 1,
								   false),
							 s->gather);
				}
				if (s->done)
					return;
				idx++;
				continue;
			}
			/* The whole table goes: no entry-by-entry clearing */
			WRITE_ONCE(table[idx], 0);
			if (PTN(gather_tree)(t, ptf_table_va(t, pte), lvl - 1,
					     s->gather))
				s->cleared = true;
			adv = span;
			idx++;
		} else if (!ptf_run_log2(t, pte, lvl) &&
			   !(s->iova & (span - 1)) && s->left >= span - 1) {
			/*
			 * A row of single pages, the common case: clear until
			 * the range, the table or an entry of another kind
			 * ends it, without the per-entry bookkeeping below.
			 */
			u64 n = min_t(u64, nents - idx,
				      PTN(whole)(s->left, shift));
			u64 i;

			for (i = 1; i < n; i++) {
				u64 next = READ_ONCE(table[idx + i]);

				if (ptf_present(next) &&
				    ((lvl && ptf_is_table(t, next, lvl)) ||
				     ptf_run_log2(t, next, lvl)))
					break;
			}
			memset(&table[idx], 0, i * sizeof(*table));
			s->cleared = true;
			adv = i << shift;
			idx += i;
		} else {
			unsigned int k = ptf_run_log2(t, pte, lvl);
			unsigned int n = 1U << k, i;
			u64 size = span << k;

			if ((s->iova & (size - 1)) || s->left < size - 1) {
				/* Never leave half of a large page */
				s->done = true;
				return;
			}
			idx &= ~(n - 1);
			for (i = 0; i < n; i++)
				WRITE_ONCE(table[idx + i], 0);
			s->cleared = true;
			adv = size;
			idx += n;
		}
		if (s->left < adv) {
			s->iova += s->left + 1;
			s->done = true;
			return;
		}
		s->iova += adv;
		s->left -= adv;
	}
}

/* The general unmap walk; out of line for the same reason as map_walk */
static noinline size_t PTN(unmap_walk)(struct gpt_table *t, u64 *table,
				       unsigned int lvl, unsigned int bits,
				       u64 iova, u64 len,
				       struct iommu_iotlb_gather *gather,
				       bool prune)
{
	struct gpt_unmap_state s = {
		.t = t, .iova = iova, .left = len - 1, .gather = gather,
		.prune = prune,
	};

	PTN(unmap_level)(&s, table, lvl, bits);
	if (!s.cleared || s.iova == iova)
		return 0;
	iommu_iotlb_gather_add_range(gather, iova, s.iova - iova);
	return s.iova - iova;
}

static size_t PTN(unmap_common)(struct gpt_table *t, u64 iova, u64 len,
				struct iommu_iotlb_gather *gather, bool prune)
{
	u64 min_size = 1ULL << ptf_shift(t, 0);
	unsigned long top = READ_ONCE(t->top);
	unsigned int reach = PTN(reach)(t, gpt_top_lvl(top));
	unsigned int lvl, bits;
	u64 *table;

	if (!len || !gather || ((iova | len) & (min_size - 1)) ||
	    iova + len - 1 < iova)
		return 0;
	if (reach < 64 && (iova >> reach))
		return 0;
	/* Nothing is mapped above the reach of the current top */
	if (reach < 64 && ((iova + len - 1) >> reach))
		len = (1ULL << reach) - iova;

	/* As in map: no recursion while the range sits inside one entry */
	table = gpt_top_table(top);
	lvl = gpt_top_lvl(top);
	bits = ptf_bits(t, lvl, true);
	/* Pruning looks at each table on the way back up: from the top */
	while (!prune) {
		unsigned int shift = ptf_shift(t, lvl);
		u64 *ptep = &table[PTN(index)(t, iova, lvl, bits)];
		u64 pte;

		if ((iova ^ (iova + len - 1)) >> shift)
			break;
		pte = READ_ONCE(*ptep);
		if (!ptf_present(pte))
			return 0;
		if (!lvl || !ptf_is_table(t, pte, lvl)) {
			/* Exactly one page of this size, not part of a run */
			if (len == 1ULL << shift && !ptf_run_log2(t, pte, lvl)) {
				WRITE_ONCE(*ptep, 0);
				iommu_iotlb_gather_add_range(gather, iova, len);
				return len;
			}
			break;
		}
		/* A whole table goes: the general walk gathers it */
		if (len == 1ULL << shift)
			break;
		table = ptf_table_va(t, pte);
		lvl--;
		bits = ptf_bits(t, lvl, false);
	}
	return PTN(unmap_walk)(t, table, lvl, bits, iova, len, gather, prune);
}

static size_t PTN(unmap)(struct gpt_table *t, u64 iova, u64 len,
			 struct iommu_iotlb_gather *gather)
{
	return PTN(unmap_common)(t, iova, len, gather, false);
}

static size_t PTN(unmap_prune)(struct gpt_table *t, u64 iova, u64 len,
			       struct iommu_iotlb_gather *gather)
{
	return PTN(unmap_common)(t, iova, len, gather, true);
}

/*
 * Find the entry mapping @iova.  Returns the level, or -ENOENT / -ERANGE;
 * *@ptepp and *@ptep receive the entry's address and value.
 */
static int PTN(find)(struct gpt_table *t, u64 iova, u64 **ptepp, u64 *ptep)
{
	unsigned long top = READ_ONCE(t->top);
	unsigned int lvl = gpt_top_lvl(top);
	unsigned int reach = PTN(reach)(t, lvl);
	u64 *table = gpt_top_table(top);
	bool is_top = true;

	/* Beyond the top: not mapped yet if the table can still grow */
	if (reach < 64 && (iova >> reach))
		return lvl < t->max_level ? -ENOENT : -ERANGE;
	for (;;) {
		u64 *p = &table[PTN(index)(t, iova, lvl,
					   ptf_bits(t, lvl, is_top))];
		u64 pte = READ_ONCE(*p);

		if (!ptf_present(pte))
			return -ENOENT;
		if (!lvl || !ptf_is_table(t, pte, lvl)) {
			*ptepp = p;
			*ptep = pte;
			return lvl;
		}
		table = ptf_table_va(t, pte);
		lvl--;
		is_top = false;
	}
}

static int PTN(lookup)(struct gpt_table *t, u64 iova, phys_addr_t *pa,
		       u64 *leaf_size, u64 **ptepp)
{
	u64 *p, pte, size;
	int lvl;

	lvl = PTN(find)(t, iova, &p, &pte);
	if (lvl < 0)
		return lvl;
	size = 1ULL << (ptf_shift(t, lvl) + ptf_run_log2(t, pte, lvl));
	if (pa)
		*pa = ptf_leaf_pa(t, pte, lvl, size) + (iova & (size - 1));
	if (leaf_size)
		*leaf_size = size;
	if (ptepp)
		*ptepp = p;
	return 0;
}

static int PTN(cut)(struct gpt_table *t, u64 iova, gfp_t gfp)
{
	unsigned int k, n, i, j, sw;
	u64 *p, pte, span, sw_mask;
	int lvl;

	lvl = PTN(find)(t, iova, &p, &pte);
	if (lvl < 0)
		return lvl;
	k = ptf_run_log2(t, pte, lvl);
	n = 1U << k;
	span = 1ULL << ptf_shift(t, lvl);
	/* Step back to the first entry of the run */
	p -= (PTN(index)(t, iova, lvl, 31) & (n - 1));
	sw = PTN(leaf_sw)(t, READ_ONCE(p[0]));
	sw_mask = PTN(sw)(t, GPT_SW_MASK);

	if (k && (ptf_runs(t, lvl) & 1)) {
		/*
		 * In place: each entry of the run becomes a page of its own.
		 * cmpxchg keeps a dirty bit the IOMMU sets meanwhile.  Only
		 * leaves change, no table is published: nothing to order.
		 */
		for (i = 0; i < n; i++) {
			u64 old = READ_ONCE(p[i]), new;
			phys_addr_t pa;

			do {
				pa = ptf_leaf_pa(t, old, lvl, span << k) +
				     i * span;
				new = ptf_mk_leaf(t, pa, lvl, 0,
						  (ptf_leaf_attr(t, old) & ~sw_mask) |
						  PTN(piece_sw)(t, sw, i, n));
			} while (!try_cmpxchg64(&p[i], &old, new));
		}
		return 0;
	}
	if (!lvl)
		return -EEXIST;
	if (!(ptf_runs(t, lvl - 1) & 1))
		return -EOPNOTSUPP;

	/* Each entry of the run becomes a table of next-level pages */
	for (i = 0; i < n; i++) {
		unsigned int order = ptf_order(t, lvl - 1, false);
		unsigned int sub_shift = ptf_shift(t, lvl - 1);
		unsigned int nents = 1U << ptf_bits(t, lvl - 1, false);
		u64 *new = gpt_alloc_table(t, order, gfp);
		u64 old = READ_ONCE(p[i]);
		phys_addr_t pa;

		if (!new)
			return -ENOMEM;
		do {
			u64 v;

			u64 attr = ptf_leaf_attr(t, old) & ~sw_mask;

			pa = ptf_leaf_pa(t, old, lvl, span << k) + i * span;
			v = ptf_mk_leaf(t, pa, lvl - 1, 0, attr);
			for (j = 0; j < nents; j++, v += 1ULL << sub_shift)
				new[j] = v | PTN(piece_sw)(t, sw,
							   (u64)i * nents + j,
							   (u64)n * nents);
			/*
			 * The filled table before the entry that links it,
			 * for a walking IOMMU too (see install_table); again
			 * on each try, as the table is refilled.
			 */
			dma_wmb();
		} while (!try_cmpxchg64(&p[i], &old,
					ptf_mk_table(t, virt_to_phys(new),
						     lvl)));
	}
	return 0;
}

/*
 * Visit the leaves of a range in order, for the walks that look at them one
 * by one (dirty tracking, gpt_walk()): s->leaf gets the first entry of each
 * leaf or run, how many entries it has, its level and the first address and
 * size of its page; non-zero stops the walk.
 */
static bool PTN(visit_level)(struct gpt_visit_state *s, u64 *table,
			     unsigned int lvl, unsigned int bits)
{
	struct gpt_table *t = s->t;
	unsigned int shift = ptf_shift(t, lvl);
	unsigned int nents = 1U << bits;
	unsigned int idx = PTN(index)(t, s->iova, lvl, bits);
	u64 span = 1ULL << shift;

	while (idx < nents) {
		u64 pte = READ_ONCE(table[idx]);
		u64 adv = span - (s->iova & (span - 1));

		if (ptf_present(pte) && lvl && ptf_is_table(t, pte, lvl)) {
			if (PTN(visit_level)(s, ptf_table_va(t, pte), lvl - 1,
					     ptf_bits(t, lvl - 1, false)))
				return true;
			idx++;
			continue;
		}
		if (ptf_present(pte)) {
			unsigned int k = ptf_run_log2(t, pte, lvl);
			unsigned int n = 1U << k, first = idx & ~(n - 1);
			u64 size = span << k;

			s->ret = s->leaf(s, &table[first], n, lvl,
					 s->iova & ~(size - 1), size);
			if (s->ret)
				return true;
			adv = size - (s->iova & (size - 1));
			idx = first + n;
		} else {
			idx++;
		}
		if (s->left < adv)
			return true;
		s->iova += adv;
		s->left -= adv;
	}
	return false;
}

/* Visit [iova, iova + len - 1], clipped to what the table reaches */
static int PTN(visit)(struct gpt_visit_state *s, u64 iova, u64 len)
{
	struct gpt_table *t = s->t;
	unsigned long top = READ_ONCE(t->top);
	unsigned int reach = PTN(reach)(t, gpt_top_lvl(top));

	if (reach < 64 && (iova >> reach))
		return 0;
	if (reach < 64 && ((iova + len - 1) >> reach))
		len = (1ULL << reach) - iova;
	s->iova = iova;
	s->left = len - 1;
	s->ret = 0;
	PTN(visit_level)(s, gpt_top_table(top), gpt_top_lvl(top),
			 ptf_bits(t, gpt_top_lvl(top), true));
	return s->ret;
}

static int PTN(dirty_leaf)(struct gpt_visit_state *v, u64 *ptep,
			   unsigned int n, unsigned int lvl, u64 iova, u64 size)
{
	struct gpt_dirty_state *s = container_of(v, struct gpt_dirty_state, v);
	struct gpt_table *t = v->t;
	bool dirty = false;
	unsigned int i;

	/* The IOMMU may mark any entry of a run */
	for (i = 0; i < n; i++) {
		u64 old = READ_ONCE(ptep[i]);

		if (!ptf_dirty(t, old))
			continue;
		dirty = true;
		if (s->flags & IOMMU_DIRTY_NO_CLEAR)
			continue;
		while (ptf_dirty(t, old) &&
		       !try_cmpxchg64(&ptep[i], &old, ptf_clean(t, old)))
			;
	}
	if (dirty)
		iommu_dirty_bitmap_record(s->dirty, iova, size);
	return 0;
}

static int PTN(read_and_clear_dirty)(struct gpt_table *t, u64 iova, u64 len,
				     unsigned long flags,
				     struct iommu_dirty_bitmap *dirty)
{
	struct gpt_dirty_state s = {
		.v = { .t = t, .leaf = PTN(dirty_leaf) },
		.flags = flags, .dirty = dirty,
	};

	if (!ptf_dirty_ok(t))
		return -EOPNOTSUPP;
	if (!len || !dirty || iova + len - 1 < iova)
		return -EINVAL;
	return PTN(visit)(&s.v, iova, len);
}

static int PTN(walk_leaf)(struct gpt_visit_state *v, u64 *ptep,
			  unsigned int n, unsigned int lvl, u64 iova, u64 size)
{
	struct gpt_walk_state *s = container_of(v, struct gpt_walk_state, v);
	struct gpt_table *t = v->t;
	u64 head = READ_ONCE(*ptep);
	struct gpt_leaf leaf = {
		.iova = iova,
		.pa = ptf_leaf_pa(t, head, lvl, size),
		.size = size,
		.prot = ptf_leaf_prot(t, head),
		.sw = PTN(leaf_sw)(t, head),
	};

	return s->fn(&leaf, s->arg);
}

static int PTN(walk)(struct gpt_table *t, u64 iova, u64 len, gpt_leaf_fn fn,
		     void *arg)
{
	struct gpt_walk_state s = {
		.v = { .t = t, .leaf = PTN(walk_leaf) }, .fn = fn, .arg = arg,
	};

	if (!len || !fn || iova + len - 1 < iova)
		return -EINVAL;
	return PTN(visit)(&s.v, iova, len);
}

static int PTN(set_sw)(struct gpt_table *t, u64 iova, unsigned int set,
		       unsigned int clear)
{
	u64 *p, pte, new;
	int lvl;

	if (!ptf_sw_shift(t))
		return -EOPNOTSUPP;
	if ((set | clear) & ~GPT_SW_MASK)
		return -EINVAL;
	lvl = PTN(find)(t, iova, &p, &pte);
	if (lvl < 0)
		return lvl;
	/* A run keeps its bits in its first entry */
	p -= PTN(index)(t, iova, lvl, 31) &
	     ((1U << ptf_run_log2(t, pte, lvl)) - 1);
	pte = READ_ONCE(*p);
	do {
		new = (pte & ~PTN(sw)(t, clear)) | PTN(sw)(t, set);
	} while (!try_cmpxchg64(p, &pte, new));
	return PTN(leaf_sw)(t, pte);
}

static void PTN(free_level)(struct gpt_table *t, u64 *table, unsigned int lvl,
			    bool is_top)
{
	unsigned int i, nents = 1U << ptf_bits(t, lvl, is_top);

	if (lvl) {
		for (i = 0; i < nents; i++) {
			u64 pte = table[i];

			if (ptf_present(pte) && ptf_is_table(t, pte, lvl))
				PTN(free_level)(t, ptf_table_va(t, pte),
						lvl - 1, false);
		}
	}
	gpt_free_table(t, table, ptf_order(t, lvl, is_top));
}

static void PTN(deinit)(struct gpt_table *t)
{
	unsigned long top = t->top;

	gpt_free_spares(t);
	if (!top)
		return;
	PTN(free_level)(t, gpt_top_table(top), gpt_top_lvl(top), true);
	t->top = 0;
}

static const struct gpt_ops PTN(ops) = {
	.map = PTN(map),
	.unmap = PTN(unmap),
	.unmap_prune = PTN(unmap_prune),
	.lookup = PTN(lookup),
	.cut = PTN(cut),
	.read_and_clear_dirty = PTN(read_and_clear_dirty),
	.walk = PTN(walk),
	.set_sw = PTN(set_sw),
	.deinit = PTN(deinit),
};

/*
 * Finish initialising @t once the format filled in its constants: allocate
 * the top table at @top_lvl and derive the page sizes.
 */
static int PTN(init_common)(struct gpt_table *t, unsigned int top_lvl,
			    gfp_t gfp)
{
	unsigned int lvl;
	u64 *table;

	t->pgsize_bitmap = 0;
	for (lvl = 0; lvl <= t->max_level; lvl++) {
		unsigned long runs = ptf_runs(t, lvl);
		unsigned int k;

		for_each_set_bit(k, &runs, BITS_PER_LONG)
			if (ptf_shift(t, lvl) + k < 64)
				t->pgsize_bitmap |= 1ULL << (ptf_shift(t, lvl) + k);
	}
	atomic_long_set(&t->nr_tables, 0);
	/*
	 * Zeroed and not yet shown to any walker: the caller publishes the
	 * root (a device context or an attach request on a virtqueue) with
	 * the barrier that publication needs.
	 */
	table = gpt_alloc_table(t, ptf_order(t, top_lvl, true), gfp);
	if (!table)
		return -ENOMEM;
	t->top = (unsigned long)table | top_lvl;
	t->ias = min(PTN(reach)(t, top_lvl), 64U);
	t->ops = &PTN(ops);
	return 0;
}

#include "pt_foreign.h"
