/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Generic IOMMU page table library: public interface.
 *
 * One set of algorithms (map, unmap, lookup, cut, dirty tracking, free) is
 * instantiated once per page table format.  A user embeds a struct gpt_table
 * in its domain, initialises it with the init function of the format the
 * hardware walks, and calls the gpt_*() helpers below.
 *
 * Locking: the library takes no locks.  Calls that touch disjoint IOVA
 * ranges may run concurrently (new tables are published with cmpxchg, the
 * AMD top level is grown with cmpxchg).  Calls on overlapping ranges must be
 * serialised by the caller, as must gpt_deinit() against everything else.
 * Tables freed by gpt_unmap() are handed back on the gather freelist and must
 * only be released (iommu_put_pages_list(), or gpt_free_gathered() outside
 * drivers/iommu) after the IOTLB was flushed.
 */
#ifndef __LINUX_GENERIC_PT_GPT_H
#define __LINUX_GENERIC_PT_GPT_H

#include <linux/atomic.h>
#include <linux/errno.h>
#include <linux/iommu.h>
#include <linux/types.h>

struct gpt_table;
struct gpt_leaf;

/*
 * Software bits: formats with descriptor bits the hardware ignores let a
 * leaf carry a little of the caller's own state (gpt_walk() reads it,
 * gpt_set_sw() changes it).  gpt_map() sets the first two itself when asked
 * with GPT_PROT_MARK: a paravirtual IOMMU that sends each mapped range to a
 * device as one request then finds in the table where each request began
 * and ended, without a record of its own.  The bits of a run (one large
 * page made of several entries) are those of its first entry.
 */
#define GPT_SW_FIRST	BIT(0)	/* first page of a range mapped with GPT_PROT_MARK */
#define GPT_SW_LAST	BIT(1)	/* last page of such a range */
#define GPT_SW_USER	BIT(2)	/* the caller's, see gpt_set_sw() */
#define GPT_SW_MASK	(GPT_SW_FIRST | GPT_SW_LAST | GPT_SW_USER)

/* In @prot of gpt_map(): mark the range's first and last pages */
#define GPT_PROT_MARK	BIT(30)

/**
 * typedef gpt_leaf_fn - called by gpt_walk() for each page it finds
 * @leaf: the page; only valid during the call
 * @arg: the caller's argument to gpt_walk()
 *
 * Return: 0 to go on, anything else to stop the walk and return it.
 */
typedef int (*gpt_leaf_fn)(const struct gpt_leaf *leaf, void *arg);

/**
 * struct gpt_ops - per-format instance of the generic algorithms
 * @map: see gpt_map()
 * @unmap: see gpt_unmap()
 * @unmap_prune: see gpt_unmap_prune()
 * @lookup: see gpt_lookup()
 * @cut: see gpt_cut()
 * @read_and_clear_dirty: see gpt_read_and_clear_dirty()
 * @walk: see gpt_walk()
 * @set_sw: see gpt_set_sw()
 * @deinit: see gpt_deinit()
 *
 * Filled in by the format's init function; users call the gpt_*() wrappers.
 */
struct gpt_ops {
	int (*map)(struct gpt_table *t, u64 iova, phys_addr_t pa, u64 len,
		   int prot, gfp_t gfp, size_t *mapped);
	size_t (*unmap)(struct gpt_table *t, u64 iova, u64 len,
			struct iommu_iotlb_gather *gather);
	size_t (*unmap_prune)(struct gpt_table *t, u64 iova, u64 len,
			      struct iommu_iotlb_gather *gather);
	int (*lookup)(struct gpt_table *t, u64 iova, phys_addr_t *pa,
		      u64 *leaf_size, u64 **ptepp);
	int (*cut)(struct gpt_table *t, u64 iova, gfp_t gfp);
	int (*read_and_clear_dirty)(struct gpt_table *t, u64 iova, u64 len,
				    unsigned long flags,
				    struct iommu_dirty_bitmap *dirty);
	int (*walk)(struct gpt_table *t, u64 iova, u64 len, gpt_leaf_fn fn,
		    void *arg);
	int (*set_sw)(struct gpt_table *t, u64 iova, unsigned int set,
		      unsigned int clear);
	void (*deinit)(struct gpt_table *t);
};

/**
 * struct gpt_leaf - one page found by gpt_walk()
 * @iova: first input address of the page
 * @pa: first output address of the page
 * @size: size of the page (of the whole run, for a run of entries)
 * @prot: the iommu prot flags the leaf encodes, as far as the format can
 *        tell them apart (ARMv8 stage 1 cannot map write-only, so it reads
 *        back as IOMMU_READ | IOMMU_WRITE)
 * @sw: the leaf's software bits, GPT_SW_*; 0 for formats without any
 */
struct gpt_leaf {
	u64 iova;
	phys_addr_t pa;
	u64 size;
	int prot;
	unsigned int sw;
};

/**
 * enum gpt_format - page table formats the library can build
 * @GPT_FMT_ARMV8: ARMv8 VMSA long descriptor, stage 1 or 2, 4K/16K/64K
 * @GPT_FMT_AMDV1: AMD IOMMU v1 (host) page table
 * @GPT_FMT_VTDSS: Intel VT-d second-stage page table
 */
enum gpt_format {
	GPT_FMT_ARMV8,
	GPT_FMT_AMDV1,
	GPT_FMT_VTDSS,
};

/* How many formats there are (not a format: switches need not handle it) */
#define GPT_FMT_NR	(GPT_FMT_VTDSS + 1)

/* Flags for struct gpt_armv8_cfg */
#define GPT_ARMV8_CONTIG	BIT(0)	/* use the contiguous hint (bit 52) */
#define GPT_ARMV8_DBM		BIT(1)	/* writable leaves get DBM: dirty tracking */

/**
 * struct gpt_armv8_cfg - ARMv8 long descriptor configuration
 * @granule: translation granule, SZ_4K, SZ_16K or SZ_64K
 * @stage: 1 or 2
 * @ias: input address bits, at most 48
 * @oas: output address bits, at most 48
 * @flags: GPT_ARMV8_*
 * @nid: NUMA node for table pages
 *
 * At stage 2 the top level is made of concatenated tables whenever that
 * saves a level and needs at most 16 of them, as the architecture allows.
 */
struct gpt_armv8_cfg {
	unsigned int granule;
	unsigned int stage;
	unsigned int ias;
	unsigned int oas;
	unsigned int flags;
	int nid;
};

/* Flags for struct gpt_vtdss_cfg */
#define GPT_VTDSS_NO_1G		BIT(0)	/* hardware lacks 1G super pages */
#define GPT_VTDSS_SNP		BIT(1)	/* set SNP (bit 11) in every leaf */

/**
 * struct gpt_vtdss_cfg - Intel VT-d second-stage configuration
 * @levels: 3, 4 or 5 (39, 48 or 57 bit input)
 * @flags: GPT_VTDSS_*
 * @nid: NUMA node for table pages
 */
struct gpt_vtdss_cfg {
	unsigned int levels;
	unsigned int flags;
	int nid;
};

/**
 * struct gpt_amdv1_cfg - AMD IOMMU v1 configuration
 * @levels: number of levels to start with, 1 to 6; the table grows up to
 *          6 levels on demand when a map needs more input address bits
 * @nid: NUMA node for table pages
 * @top_changed: optional, called after a map grew the top level so the
 *               driver can point the device table at gpt_top_pa(); it may
 *               run concurrently with other map calls
 */
struct gpt_amdv1_cfg {
	unsigned int levels;
	int nid;
	void (*top_changed)(struct gpt_table *t);
};

/**
 * struct gpt_table - one IOMMU page table
 * @ops: the format's instance of the algorithms
 * @top: virtual address of the top table ORed with the top level (0 is the
 *       leaf level); one word so that root and depth change atomically
 * @pgsize_bitmap: every page size the format can map, for the iommu core
 * @nr_tables: table allocations currently live (leak checking, statistics)
 * @fmt: enum gpt_format
 * @ias: input address bits the table can translate (grows for AMD v1)
 * @oas: output address bits
 * @max_level: highest top level the table may ever have
 * @nid: NUMA node of table pages
 * @top_changed: see struct gpt_amdv1_cfg
 * @fmtd: format private constants, set at init and read-only afterwards
 *
 * Embed in the driver's domain structure.  Never written by the library
 * outside map (top level growth), so it may be read without locks.
 */
/* Emptied tables a table no hardware walks keeps for its next maps */
#define GPT_MAX_SPARES	2

struct gpt_table {
	const struct gpt_ops *ops;
	unsigned long top;
	u64 pgsize_bitmap;
	atomic_long_t nr_tables;
	u8 fmt;
	u8 ias;
	u8 oas;
	u8 max_level;
	u8 counted;	/* mapped through gpt_iommu_map_pages() once */
	u8 keep_spares;	/* see gpt_keep_spares() */
	int nid;
	u64 *spares[GPT_MAX_SPARES];
	void (*top_changed)(struct gpt_table *t);
	union {
		struct {
			u8 granule_shift;
			u8 bits;	/* index bits of a non-top table */
			u8 top_bits;	/* index bits of the top table */
			u8 stage;
			u8 contig;
			u8 dbm;
			u8 runs[4];	/* allowed leaf runs per level */
		} arm;
		struct {
			u8 no_1g;
			u8 snp;
		} vtd;
		struct {
			u64 enc;	/* ORed into every address held */
		} amd;
	} fmtd;
};

#define GPT_TOP_LEVEL_MASK	0x7UL

int gpt_armv8_init(struct gpt_table *t, const struct gpt_armv8_cfg *cfg,
		   gfp_t gfp);
int gpt_amdv1_init(struct gpt_table *t, const struct gpt_amdv1_cfg *cfg,
		   gfp_t gfp);
int gpt_vtdss_init(struct gpt_table *t, const struct gpt_vtdss_cfg *cfg,
		   gfp_t gfp);

/**
 * gpt_top_level() - current top level of a table
 * @t: the table
 *
 * Return: 0 for a single-level table, the number of levels minus one
 * otherwise.  Lock-free; for AMD v1 it may grow right after reading.
 */
static inline unsigned int gpt_top_level(const struct gpt_table *t)
{
	return READ_ONCE(t->top) & GPT_TOP_LEVEL_MASK;
}

/**
 * gpt_top_pa() - physical address of the top table, for the hardware
 * @t: the table
 *
 * Return: the address to program into the context/device table.
 */
static inline phys_addr_t gpt_top_pa(const struct gpt_table *t)
{
	return virt_to_phys((void *)(READ_ONCE(t->top) & ~GPT_TOP_LEVEL_MASK));
}

/**
 * gpt_map() - map a physically contiguous range
 * @t: the table
 * @iova: first input address, aligned to the smallest page size
 * @pa: first output address, aligned to the smallest page size
 * @len: length in bytes, a multiple of the smallest page size, not zero
 * @prot: IOMMU_READ, IOMMU_WRITE, IOMMU_CACHE, IOMMU_NOEXEC, IOMMU_MMIO,
 *        IOMMU_PRIV; at least one of IOMMU_READ and IOMMU_WRITE; and
 *        GPT_PROT_MARK to set GPT_SW_FIRST in the first page and
 *        GPT_SW_LAST in the last, each in the store that makes it valid
 * @gfp: allocation flags for new tables
 * @mapped: optional, incremented by the bytes mapped, also on error
 *
 * Uses the largest page size that the alignment of @iova, @pa and the
 * remaining length allow, walking the whole range in one descent.  A larger
 * page is not used where a (possibly empty) table already exists; smaller
 * pages are mapped inside it instead.  On error the bytes mapped so far (from
 * @iova, reported in @mapped) stay mapped and the caller must unmap them, as
 * the iommu core does.  Caller serialises against calls on overlapping
 * ranges.
 *
 * Return: 0; -EINVAL for misaligned or empty input or no access in @prot;
 * -ERANGE when the range does not fit the input address size; -EADDRINUSE
 * when part of the range is already mapped; -ENOMEM; -EOPNOTSUPP for
 * GPT_PROT_MARK on a format without software bits.
 */
static inline int gpt_map(struct gpt_table *t, u64 iova, phys_addr_t pa,
			  u64 len, int prot, gfp_t gfp, size_t *mapped)
{
	return t->ops->map(t, iova, pa, len, prot, gfp, mapped);
}

/**
 * gpt_unmap() - unmap a range
 * @t: the table
 * @iova: first input address, aligned to the smallest page size
 * @len: length in bytes, a multiple of the smallest page size
 * @gather: receives the IOVA range to flush and the freed tables on its
 *          freelist; release those with iommu_put_pages_list() (or
 *          gpt_free_gathered()) after the IOTLB flush
 *
 * Never leaves part of a large page mapped: the walk stops at the first
 * leaf that is only partly inside the range (use gpt_cut() first to unmap
 * part of a large page).  Tables whose whole span is inside the range are
 * freed.  Caller serialises against calls on overlapping ranges.
 *
 * Return: bytes unmapped counting from @iova (holes included) up to the
 * first partly covered leaf, or 0 when there was nothing to unmap or the
 * input is invalid.
 */
static inline size_t gpt_unmap(struct gpt_table *t, u64 iova, u64 len,
			       struct iommu_iotlb_gather *gather)
{
	return t->ops->unmap(t, iova, len, gather);
}

/**
 * gpt_unmap_prune() - unmap a range and free the tables it leaves empty
 * @t: the table
 * @iova: as for gpt_unmap()
 * @len: as for gpt_unmap()
 * @gather: as for gpt_unmap(); also receives every table below the top
 *          that the unmap left without an entry
 *
 * gpt_unmap() frees only the tables whose whole span is in the range, so
 * single pages mapped and unmapped all over a large space leave empty
 * tables behind.  This variant looks at each table the range covered in
 * part once its entries are cleared, and frees it (and so on up) when no
 * entry is left: one scan of a table per level the range goes down,
 * where a caller's own search for empty spans walks them entry by entry.
 * Same rules as gpt_unmap() otherwise.
 *
 * Return: as for gpt_unmap().
 */
static inline size_t gpt_unmap_prune(struct gpt_table *t, u64 iova, u64 len,
				     struct iommu_iotlb_gather *gather)
{
	return t->ops->unmap_prune(t, iova, len, gather);
}

/**
 * gpt_lookup() - translate one input address
 * @t: the table
 * @iova: input address
 * @pa: optional, receives the output address
 * @leaf_size: optional, receives the size of the page that maps @iova
 * @ptepp: optional, receives the address of the leaf entry (for tests,
 *         debugging and walkers that emulate the IOMMU)
 *
 * Lock-free; the result is only stable if the caller excludes unmap.
 *
 * Return: 0, -ENOENT if @iova is not mapped, -ERANGE if out of range.
 */
static inline int gpt_lookup(struct gpt_table *t, u64 iova, phys_addr_t *pa,
			     u64 *leaf_size, u64 **ptepp)
{
	return t->ops->lookup(t, iova, pa, leaf_size, ptepp);
}

/**
 * gpt_iova_to_phys() - translate one input address
 * @t: the table
 * @iova: input address
 *
 * Return: the output address, 0 when @iova is not mapped.
 */
static inline phys_addr_t gpt_iova_to_phys(struct gpt_table *t, u64 iova)
{
	phys_addr_t pa;

	if (t->ops->lookup(t, iova, &pa, NULL, NULL))
		return 0;
	return pa;
}

/**
 * gpt_cut() - split the large page containing @iova one step down
 * @t: the table
 * @iova: an address inside the page
 * @gfp: allocation flags for a new table
 *
 * A contiguous run of entries becomes single entries in place; a single
 * large entry becomes a table of next-level entries, installed atomically,
 * so translation never changes for a concurrent walker.  Software bits
 * stay where they mean the same: GPT_SW_FIRST and GPT_SW_USER on the first
 * piece, GPT_SW_LAST on the last.  The caller must
 * still flush the IOTLB for the old large page before unmapping part of it.
 * Serialise against calls on the same page.
 *
 * Return: 0 when split; -EEXIST when the page is already the smallest size;
 * -ENOENT when @iova is not mapped; -ERANGE; -ENOMEM; -EOPNOTSUPP when the
 * format cannot express the smaller size.
 */
static inline int gpt_cut(struct gpt_table *t, u64 iova, gfp_t gfp)
{
	return t->ops->cut(t, iova, gfp);
}

/**
 * gpt_read_and_clear_dirty() - report and clear hardware dirty state
 * @t: the table
 * @iova: first input address
 * @len: length in bytes
 * @flags: IOMMU_DIRTY_NO_CLEAR to only read
 * @dirty: receives every dirty page via iommu_dirty_bitmap_record()
 *
 * Return: 0, -EOPNOTSUPP when the format (or configuration) has no dirty
 * state, -EINVAL or -ERANGE for bad input.
 */
static inline int gpt_read_and_clear_dirty(struct gpt_table *t, u64 iova,
					   u64 len, unsigned long flags,
					   struct iommu_dirty_bitmap *dirty)
{
	return t->ops->read_and_clear_dirty(t, iova, len, flags, dirty);
}

/**
 * gpt_walk() - visit every page mapped in a range, in address order
 * @t: the table
 * @iova: first input address; the page containing it is the first visited
 * @len: length in bytes, not zero, no alignment needed
 * @fn: called for each page, see gpt_leaf_fn
 * @arg: passed to @fn
 *
 * Holes are skipped.  Lock-free, like gpt_lookup(): the caller excludes
 * unmap of the range, and @fn may sleep if the caller may.
 *
 * Return: 0 when every page was visited, what @fn returned when it stopped
 * the walk, or -EINVAL for an empty or wrapping range or no @fn.
 */
static inline int gpt_walk(struct gpt_table *t, u64 iova, u64 len,
			   gpt_leaf_fn fn, void *arg)
{
	return t->ops->walk(t, iova, len, fn, arg);
}

/**
 * gpt_set_sw() - change the software bits of the page containing @iova
 * @t: the table
 * @iova: an address inside the page
 * @set: GPT_SW_* bits to set
 * @clear: GPT_SW_* bits to clear (@set wins)
 *
 * Atomic against the hardware and other gpt_set_sw() calls on the page;
 * safe in any context.  For a run, changes its first entry.
 *
 * Return: the bits before the change; -ENOENT when @iova is not mapped;
 * -ERANGE; -EINVAL for bits outside GPT_SW_MASK; -EOPNOTSUPP for a format
 * without software bits.
 */
static inline int gpt_set_sw(struct gpt_table *t, u64 iova, unsigned int set,
			     unsigned int clear)
{
	return t->ops->set_sw(t, iova, set, clear);
}

/**
 * gpt_free_gathered() - free the tables gpt_unmap() queued on @gather
 * @gather: the gather passed to gpt_unmap(); its freelist ends up empty
 *
 * For users outside drivers/iommu, and for tables no hardware walks: call
 * it once no walker can hold the tables, after the IOTLB flush if any.
 * Pages are accounted as the library allocated them (IOMMU page tables).
 */
void gpt_free_gathered(struct iommu_iotlb_gather *gather);

/**
 * gpt_keep_spares() - keep emptied tables for the next maps
 * @t: a table no hardware walks (a paravirtual IOMMU's record of its
 *     mappings, a software IOMMU's table), before its first map
 *
 * An unmap that empties a table of the smallest size frees it at once into
 * the table's spares, up to GPT_MAX_SPARES, instead of the gather's
 * freelist: a map that needs a new table then takes one, already zeroed,
 * without the page allocator. A DMA domain mapping and unmapping one page
 * in an otherwise empty region does just that on every pair. The spares
 * stay counted in @t->nr_tables until gpt_deinit() frees them.
 */
static inline void gpt_keep_spares(struct gpt_table *t)
{
	t->keep_spares = 1;
}

/**
 * gpt_deinit() - free every table
 * @t: the table
 *
 * The hardware must no longer walk the table.  Mappings still present are
 * dropped.  No other call may run concurrently or follow.
 */
static inline void gpt_deinit(struct gpt_table *t)
{
	t->ops->deinit(t);
}

#endif /* __LINUX_GENERIC_PT_GPT_H */
