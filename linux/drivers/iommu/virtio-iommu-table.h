/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * virtio-iommu page-table sharing: which table format an endpoint gets.
 *
 * The device lists the formats it walks for an endpoint in PAGE_TABLE_FMT
 * PROBE properties (decoded by virtio-iommu-wire.h). The driver picks one it
 * can build with generic_pt, its own architecture's first, and the table
 * shape (input bits, levels, granule) within what the property offers.
 * Pure functions, so that KUnit checks the choice on any architecture.
 */
#ifndef _DRIVERS_IOMMU_VIRTIO_IOMMU_TABLE_H
#define _DRIVERS_IOMMU_VIRTIO_IOMMU_TABLE_H

#include <linux/kernel.h>
#include <linux/minmax.h>
#include <linux/types.h>

#include "virtio-iommu-wire.h"

/* At most this many PAGE_TABLE_FMT properties per endpoint ID are kept */
#define VIOMMU_MAX_TABLE_FMTS	8

/*
 * The attribute indirection of ARM_LPAE tables: generic_pt's stage-1
 * entries select index 0 for normal non-cacheable memory, 1 for
 * write-back cacheable (IOMMU_CACHE) and 2 for device memory (IOMMU_MMIO),
 * the indexes io-pgtable-arm programs.
 */
#define VIOMMU_ARM_MAIR		(0x44ULL | (0xffULL << 8) | (0x04ULL << 16))

/* generic_pt's ARMv8 format translates at most 48 bits in and out */
#define VIOMMU_ARM_MAX_BITS	48
/* The x86 formats' output addresses: 52 bits */
#define VIOMMU_X86_MAX_OAS	52
/* A table must reach at least this much guest memory and input space */
#define VIOMMU_TABLE_MIN_BITS	32

/**
 * struct viommu_table_cfg - the table a domain shares with the device
 * @format: VIRTIO_IOMMU_PGTF_*, 0 for none (MAP/UNMAP mode)
 * @ias: input address bits of the table (the ATTACH_TABLE field)
 * @oas: output address bits an entry may hold
 * @granule_shift: log2 of the granule (the ATTACH_TABLE field)
 * @levels: levels of the table, fixed by @ias and @granule_shift
 * @asid_bits: ASID bits the device tags ARM_LPAE tables with
 * @inval_map: the device asks for an INVALIDATE after maps too
 * @no_cache: the device caches nothing: cleared leaves need no INVALIDATE
 * @posted_inval: the device serves the request queue before it translates:
 *	the INVALIDATE of cleared leaves needs no notification
 */
struct viommu_table_cfg {
	u16	format;
	u8	ias;
	u8	oas;
	u8	granule_shift;
	u8	levels;
	u8	asid_bits;
	bool	inval_map;
	bool	no_cache;
	bool	posted_inval;
};

static inline const char *viommu_table_fmt_name(u16 format)
{
	switch (format) {
	case VIRTIO_IOMMU_PGTF_ARM_LPAE:
		return "ARM_LPAE";
	case VIRTIO_IOMMU_PGTF_VTD_SL:
		return "VTD_SL";
	case VIRTIO_IOMMU_PGTF_AMD_V1:
		return "AMD_V1";
	default:
		return "none";
	}
}

/*
 * VT-d second stage and AMD v1 at a 4K granule: 4 levels (48 bits) where
 * the device walks them, else 3 (39 bits). Five levels are never needed:
 * the DMA layer and VFIO do with 48 bits.
 */
static inline bool viommu_table_fit_x86(const struct viommu_table_fmt *f,
					unsigned int page_shift,
					struct viommu_table_cfg *cfg)
{
	unsigned int levels;

	if (page_shift != 12 || !(f->granules & BIT(12)) ||
	    f->oas < VIOMMU_TABLE_MIN_BITS)
		return false;
	for (levels = 4; levels >= 3; levels--) {
		if (levels <= f->max_levels && 12 + 9 * levels <= f->ias)
			break;
	}
	if (levels < 3)
		return false;
	cfg->ias = 12 + 9 * levels;
	cfg->levels = levels;
	cfg->oas = min_t(u8, f->oas, VIOMMU_X86_MAX_OAS);
	return true;
}

/*
 * ARMv8 stage 1 at the CPU's page size: as many input bits as the device
 * and generic_pt allow (48 at most), fewer when the device walks fewer
 * levels than that needs.
 */
static inline bool viommu_table_fit_arm(const struct viommu_table_fmt *f,
					unsigned int page_shift,
					struct viommu_table_cfg *cfg)
{
	unsigned int bits = page_shift - 3, ias, levels;

	if ((page_shift != 12 && page_shift != 14 && page_shift != 16) ||
	    page_shift >= 32 || !(f->granules & BIT(page_shift)) ||
	    f->oas < VIOMMU_TABLE_MIN_BITS || !f->max_levels)
		return false;
	ias = min_t(unsigned int, f->ias, VIOMMU_ARM_MAX_BITS);
	if (ias <= page_shift)
		return false;
	levels = DIV_ROUND_UP(ias - page_shift, bits);
	if (levels > f->max_levels) {
		levels = f->max_levels;
		ias = page_shift + bits * levels;
	}
	if (ias < VIOMMU_TABLE_MIN_BITS)
		return false;
	cfg->ias = ias;
	cfg->levels = levels;
	cfg->oas = min_t(u8, f->oas, VIOMMU_ARM_MAX_BITS);
	cfg->asid_bits = min_t(u8, f->asid_bits, 16);
	return true;
}

/**
 * viommu_table_choose() - the table format for an endpoint
 * @offers: the endpoint's PAGE_TABLE_FMT properties, decoded
 * @n: how many
 * @prefs: the formats the driver builds, most wanted first
 * @nprefs: how many
 * @page_shift: the CPU's page shift; DMA and VFIO domains map CPU pages
 * @cfg: the table to build, when one fits
 *
 * Formats not in @prefs are ignored, unknown ones included, as are offers
 * of a known format that cannot hold a table the driver builds (no granule
 * of a CPU page, too few input or output bits, too few levels).
 *
 * Return: true with @cfg filled, false when no offer fits.
 */
static inline bool viommu_table_choose(const struct viommu_table_fmt *offers,
				       unsigned int n, const u16 *prefs,
				       unsigned int nprefs,
				       unsigned int page_shift,
				       struct viommu_table_cfg *cfg)
{
	unsigned int p, i;
	bool fits;

	for (p = 0; p < nprefs; p++) {
		for (i = 0; i < n; i++) {
			const struct viommu_table_fmt *f = &offers[i];

			if (f->format != prefs[p])
				continue;
			memset(cfg, 0, sizeof(*cfg));
			switch (f->format) {
			case VIRTIO_IOMMU_PGTF_ARM_LPAE:
				fits = viommu_table_fit_arm(f, page_shift, cfg);
				break;
			case VIRTIO_IOMMU_PGTF_VTD_SL:
			case VIRTIO_IOMMU_PGTF_AMD_V1:
				fits = viommu_table_fit_x86(f, page_shift, cfg);
				break;
			default:
				fits = false;
				break;
			}
			if (!fits)
				continue;
			cfg->format = f->format;
			cfg->granule_shift = page_shift;
			cfg->inval_map = f->flags & VIRTIO_IOMMU_PGTF_F_INVAL_MAP;
			/* A device that says both caches: INVAL_MAP wins */
			cfg->no_cache = !cfg->inval_map &&
					(f->flags & VIRTIO_IOMMU_PGTF_F_NO_CACHE);
			/* And an uncached walk needs no INVALIDATE at all */
			cfg->posted_inval = !cfg->inval_map && !cfg->no_cache &&
				(f->flags & VIRTIO_IOMMU_PGTF_F_POSTED_INVAL);
			return true;
		}
	}
	memset(cfg, 0, sizeof(*cfg));
	return false;
}

/**
 * viommu_table_joins() - whether an endpoint can walk a domain's table
 * @ep: the table the endpoint's offers allow
 * @dom: the domain's table
 *
 * The same format and granule, and at least the domain's input and output
 * bits (so at least its levels). The ASID is checked by the caller.
 */
static inline bool viommu_table_joins(const struct viommu_table_cfg *ep,
				      const struct viommu_table_cfg *dom)
{
	return ep->format && ep->format == dom->format &&
	       ep->granule_shift == dom->granule_shift &&
	       ep->ias >= dom->ias && ep->oas >= dom->oas;
}

#endif /* _DRIVERS_IOMMU_VIRTIO_IOMMU_TABLE_H */
