/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * virtio-iommu wire format helpers: request encoding, completion status,
 * PROBE property and fault record decoding.
 *
 * These are pure functions over byte buffers, kept apart from the driver so
 * that KUnit can feed them well-formed and malformed input on any
 * architecture (the driver itself only builds where a virtio-iommu exists).
 * Nothing here trusts the device: every length and offset is checked before
 * a byte is read.
 */
#ifndef _DRIVERS_IOMMU_VIRTIO_IOMMU_WIRE_H
#define _DRIVERS_IOMMU_VIRTIO_IOMMU_WIRE_H

#include <linux/build_bug.h>
#include <linux/errno.h>
#include <linux/stddef.h>
#include <linux/string.h>
#include <linux/types.h>
#include <linux/unaligned.h>
#include <asm/byteorder.h>
#include <uapi/linux/virtio_iommu.h>

static_assert(sizeof(struct virtio_iommu_config) == 40);
static_assert(sizeof(struct virtio_iommu_req_attach) == 24);
static_assert(sizeof(struct virtio_iommu_req_detach) == 24);
static_assert(sizeof(struct virtio_iommu_req_map) == 40);
static_assert(sizeof(struct virtio_iommu_req_unmap) == 32);
static_assert(sizeof(struct virtio_iommu_req_probe) == 72);
static_assert(sizeof(struct virtio_iommu_probe_resv_mem) == 24);
static_assert(sizeof(struct virtio_iommu_fault) == 24);
static_assert(sizeof(struct virtio_iommu_probe_table_format) == 16);
static_assert(sizeof(struct virtio_iommu_req_attach_table) == 64);
static_assert(sizeof(struct virtio_iommu_req_invalidate) == 48);
/* The tail is the last 4 bytes: no padding a device would read as tail */
static_assert(offsetof(struct virtio_iommu_req_attach_table, tail) == 60);
static_assert(offsetof(struct virtio_iommu_req_invalidate, tail) == 44);

/*
 * Any fixed-size request: the driver keeps one of these per preallocated
 * request slot, so that no request on the DMA path allocates memory.
 */
union viommu_req_buf {
	struct virtio_iommu_req_head		head;
	struct virtio_iommu_req_attach		attach;
	struct virtio_iommu_req_detach		detach;
	struct virtio_iommu_req_map		map;
	struct virtio_iommu_req_unmap		unmap;
	struct virtio_iommu_req_attach_table	attach_table;
	struct virtio_iommu_req_invalidate	invalidate;
};

/*
 * The device-writable part of a fixed-size request is its tail: the part the
 * driver writes is everything before it.
 */
#define VIOMMU_TAIL_LEN		sizeof(struct virtio_iommu_req_tail)

static inline void viommu_encode_attach(struct virtio_iommu_req_attach *req,
					u32 domain, u32 endpoint, u32 flags)
{
	memset(req, 0, sizeof(*req));
	req->head.type = VIRTIO_IOMMU_T_ATTACH;
	req->domain = cpu_to_le32(domain);
	req->endpoint = cpu_to_le32(endpoint);
	req->flags = cpu_to_le32(flags);
}

static inline void viommu_encode_detach(struct virtio_iommu_req_detach *req,
					u32 domain, u32 endpoint)
{
	memset(req, 0, sizeof(*req));
	req->head.type = VIRTIO_IOMMU_T_DETACH;
	req->domain = cpu_to_le32(domain);
	req->endpoint = cpu_to_le32(endpoint);
}

/* @last is inclusive, as on the wire. */
static inline void viommu_encode_map(struct virtio_iommu_req_map *req,
				     u32 domain, u64 start, u64 last,
				     u64 phys, u32 flags)
{
	memset(req, 0, sizeof(*req));
	req->head.type = VIRTIO_IOMMU_T_MAP;
	req->domain = cpu_to_le32(domain);
	req->virt_start = cpu_to_le64(start);
	req->virt_end = cpu_to_le64(last);
	req->phys_start = cpu_to_le64(phys);
	req->flags = cpu_to_le32(flags);
}

static inline void viommu_encode_unmap(struct virtio_iommu_req_unmap *req,
				       u32 domain, u64 start, u64 last)
{
	memset(req, 0, sizeof(*req));
	req->head.type = VIRTIO_IOMMU_T_UNMAP;
	req->domain = cpu_to_le32(domain);
	req->virt_start = cpu_to_le64(start);
	req->virt_end = cpu_to_le64(last);
}

/**
 * viommu_encode_attach_table() - build an ATTACH_TABLE request
 * @req: the request
 * @domain: the domain ID
 * @endpoint: the endpoint ID
 * @format: VIRTIO_IOMMU_PGTF_*
 * @root: guest-physical address of the top-level table
 * @ias: input address bits the table translates
 * @granule_shift: log2 of the granule
 * @asid: ARM_LPAE's ASID, else 0
 * @mair: ARM_LPAE's attribute indirection, else 0
 */
static inline void
viommu_encode_attach_table(struct virtio_iommu_req_attach_table *req,
			   u32 domain, u32 endpoint, u16 format, u64 root,
			   u8 ias, u8 granule_shift, u16 asid, u64 mair)
{
	memset(req, 0, sizeof(*req));
	req->head.type = VIRTIO_IOMMU_T_ATTACH_TABLE;
	req->domain = cpu_to_le32(domain);
	req->endpoint = cpu_to_le32(endpoint);
	req->format = cpu_to_le16(format);
	req->root = cpu_to_le64(root);
	req->ias = ias;
	req->granule = granule_shift;
	req->asid = cpu_to_le16(asid);
	req->mair = cpu_to_le64(mair);
}

/**
 * viommu_encode_invalidate() - build an INVALIDATE request
 * @req: the request
 * @domain: the domain ID
 * @scope: VIRTIO_IOMMU_INVAL_S_DOMAIN (@start and @last unused) or _RANGE
 * @flags: VIRTIO_IOMMU_INVAL_F_*
 * @start: first address of the range
 * @last: last address of the range, inclusive
 */
static inline void
viommu_encode_invalidate(struct virtio_iommu_req_invalidate *req, u32 domain,
			 u16 scope, u16 flags, u64 start, u64 last)
{
	memset(req, 0, sizeof(*req));
	req->head.type = VIRTIO_IOMMU_T_INVALIDATE;
	req->scope = cpu_to_le16(scope);
	req->flags = cpu_to_le16(flags);
	req->domain = cpu_to_le32(domain);
	if (scope == VIRTIO_IOMMU_INVAL_S_RANGE) {
		req->virt_start = cpu_to_le64(start);
		req->virt_end = cpu_to_le64(last);
	}
}

/*
 * The driver-written part of a PROBE request. The caller provides a buffer
 * of sizeof(*req) + probe_size + tail bytes; the device-written part is
 * cleared too, so that a device writing less leaves zeroes (the end marker).
 */
static inline void viommu_encode_probe(struct virtio_iommu_req_probe *req,
				       u32 endpoint, size_t probe_size)
{
	memset(req, 0, sizeof(*req) + probe_size + VIOMMU_TAIL_LEN);
	req->head.type = VIRTIO_IOMMU_T_PROBE;
	req->endpoint = cpu_to_le32(endpoint);
}

/**
 * viommu_status_errno() - the errno for a request status
 * @status: the status byte the device wrote in the tail
 *
 * Return: 0 for VIRTIO_IOMMU_S_OK, a negative errno for the other status
 * codes of virtio 1.3, -EPROTO for a value the specification does not define.
 */
static inline int viommu_status_errno(u8 status)
{
	switch (status) {
	case VIRTIO_IOMMU_S_OK:
		return 0;
	case VIRTIO_IOMMU_S_IOERR:
		return -EIO;
	case VIRTIO_IOMMU_S_UNSUPP:
		return -EOPNOTSUPP;
	case VIRTIO_IOMMU_S_DEVERR:
		return -EREMOTEIO;
	case VIRTIO_IOMMU_S_INVAL:
		return -EINVAL;
	case VIRTIO_IOMMU_S_RANGE:
		return -ERANGE;
	case VIRTIO_IOMMU_S_NOENT:
		return -ENOENT;
	case VIRTIO_IOMMU_S_FAULT:
		return -EFAULT;
	case VIRTIO_IOMMU_S_NOMEM:
		return -ENOMEM;
	default:
		return -EPROTO;
	}
}

/**
 * viommu_req_result() - the outcome of a completed request
 * @used: the used length the device reported
 * @write_len: the size of the request's device-writable part (tail included)
 * @status: the status byte in the tail
 *
 * The tail sits at the end of the device-writable part, so the device has
 * written it only if it reports the whole part as used. A used length of 0
 * is how a device answers a request it could not parse.
 *
 * Return: 0 on success, -EPROTO if the device did not (or could not) write
 * the tail, else the errno of @status.
 */
static inline int viommu_req_result(u32 used, u32 write_len, u8 status)
{
	if (write_len < VIOMMU_TAIL_LEN || used != write_len)
		return -EPROTO;
	return viommu_status_errno(status);
}

/* Format flags the driver knows; the others it MUST ignore */
#define VIOMMU_PGTF_KNOWN_FLAGS		(VIRTIO_IOMMU_PGTF_F_INVAL_MAP | \
					 VIRTIO_IOMMU_PGTF_F_NO_CACHE | \
					 VIRTIO_IOMMU_PGTF_F_POSTED_INVAL)

/**
 * struct viommu_table_fmt - a decoded PAGE_TABLE_FMT property
 * @format: VIRTIO_IOMMU_PGTF_*, possibly one the driver does not know
 * @ias: most input address bits
 * @oas: most output address bits
 * @granules: bit n set: a granule of 2^n bytes
 * @max_levels: most levels
 * @asid_bits: ASID bits (ARM_LPAE)
 * @flags: the VIRTIO_IOMMU_PGTF_F_* bits the driver knows, the rest cleared
 */
struct viommu_table_fmt {
	u16	format;
	u8	ias;
	u8	oas;
	u32	granules;
	u8	max_levels;
	u8	asid_bits;
	u16	flags;
};

/**
 * struct viommu_probe_prop - one decoded PROBE property
 * @type: property type (VIRTIO_IOMMU_PROBE_T_*); the whole type field when
 *        its reserved bits are set, so that it matches no known type
 * @subtype: RESV_MEM subtype as the device wrote it
 * @start: RESV_MEM first address
 * @last: RESV_MEM last address (inclusive)
 * @table: PAGE_TABLE_FMT fields
 */
struct viommu_probe_prop {
	u16			type;
	u8			subtype;
	u64			start;
	u64			last;
	struct viommu_table_fmt	table;
};

/**
 * viommu_probe_next() - decode the next property of a PROBE answer
 * @buf: the properties area the device wrote
 * @len: its size, config.probe_size
 * @pos: offset of the next property; advanced past it on success
 * @prop: the decoded property
 *
 * Properties follow each other without padding; the list ends at a property
 * of type NONE or at the end of the area. Properties of unknown type are
 * returned with only @type set, for the caller to skip. So are properties
 * whose header has reserved bits set: the driver MUST ignore them (virtio
 * 1.3, PROBE driver requirements), a NONE among them.
 *
 * A PAGE_TABLE_FMT property is decoded whatever its format (the caller
 * ignores the formats it does not know), with the flags the driver does
 * not know cleared, as the driver MUST ignore them. It may be longer than
 * its fields: a later revision may add some.
 *
 * Return: 1 if @prop holds a property, 0 at the end of the list, -EPROTO if
 * a property overruns the area, a RESV_MEM property is too short or
 * describes an empty or inverted range, or a PAGE_TABLE_FMT property is
 * too short.
 */
static inline int viommu_probe_next(const u8 *buf, size_t len, size_t *pos,
				    struct viommu_probe_prop *prop)
{
	const size_t hdr = sizeof(struct virtio_iommu_probe_property);
	const struct virtio_iommu_probe_table_format *fmt;
	const struct virtio_iommu_probe_resv_mem *mem;
	size_t off = *pos, plen;
	u16 type;

	memset(prop, 0, sizeof(*prop));
	if (off > len || len - off < hdr)
		return 0;
	type = get_unaligned_le16(buf + off);
	plen = get_unaligned_le16(buf + off + 2);
	if (type == VIRTIO_IOMMU_PROBE_T_NONE)
		return 0;
	if (plen > len - off - hdr)
		return -EPROTO;

	prop->type = type;
	if (type == VIRTIO_IOMMU_PROBE_T_RESV_MEM) {
		if (plen < sizeof(*mem) - hdr)
			return -EPROTO;
		mem = (const void *)(buf + off);
		prop->subtype = mem->subtype;
		prop->start = get_unaligned_le64(&mem->start);
		prop->last = get_unaligned_le64(&mem->end);
		if (prop->start > prop->last)
			return -EPROTO;
	} else if (type == VIRTIO_IOMMU_PROBE_T_PAGE_TABLE_FMT) {
		if (plen < sizeof(*fmt) - hdr)
			return -EPROTO;
		fmt = (const void *)(buf + off);
		prop->table.format = get_unaligned_le16(&fmt->format);
		prop->table.ias = fmt->ias;
		prop->table.oas = fmt->oas;
		prop->table.granules = get_unaligned_le32(&fmt->granules);
		prop->table.max_levels = fmt->max_levels;
		prop->table.asid_bits = fmt->asid_bits;
		prop->table.flags = get_unaligned_le16(&fmt->flags) &
				    VIOMMU_PGTF_KNOWN_FLAGS;
	}
	*pos = off + hdr + plen;
	return 1;
}

/**
 * viommu_resv_extent() - a RESV_MEM range as the IOMMU core's start and size
 * @prop: a decoded RESV_MEM property (start <= last)
 * @start: its first address
 * @size: its size in bytes
 *
 * Return: 0, or -EOVERFLOW when the range does not fit: above what a
 * phys_addr_t holds, or the whole 64-bit space, whose size wraps to 0.
 */
static inline int viommu_resv_extent(const struct viommu_probe_prop *prop,
				     phys_addr_t *start, size_t *size)
{
	*start = prop->start;
	*size = prop->last - prop->start + 1;
	if (*start != prop->start || !*size ||
	    *size - 1 != prop->last - prop->start)
		return -EOVERFLOW;
	return 0;
}

/**
 * struct viommu_fault_info - one decoded fault record
 * @reason: VIRTIO_IOMMU_FAULT_R_*
 * @flags: VIRTIO_IOMMU_FAULT_F_*
 * @endpoint: the endpoint ID that faulted
 * @address: the faulting address, valid if @flags has FAULT_F_ADDRESS
 */
struct viommu_fault_info {
	u8	reason;
	u32	flags;
	u32	endpoint;
	u64	address;
};

/**
 * viommu_decode_fault() - decode an event queue buffer
 * @buf: the buffer the device filled
 * @used: the used length the device reported
 * @info: the decoded fault
 *
 * Return: 0 on success, -EPROTO if the record has the wrong size or sets
 * reserved bytes (a future event type the driver does not know).
 */
static inline int viommu_decode_fault(const void *buf, u32 used,
				      struct viommu_fault_info *info)
{
	const struct virtio_iommu_fault *f = buf;

	memset(info, 0, sizeof(*info));
	if (used != sizeof(*f))
		return -EPROTO;
	if (f->reserved[0] || f->reserved[1] || f->reserved[2])
		return -EPROTO;
	info->reason = f->reason;
	info->flags = get_unaligned_le32(&f->flags);
	info->endpoint = get_unaligned_le32(&f->endpoint);
	info->address = get_unaligned_le64(&f->address);
	return 0;
}

#endif /* _DRIVERS_IOMMU_VIRTIO_IOMMU_WIRE_H */
