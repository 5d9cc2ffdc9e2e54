/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The virtio-iommu device (virtio 1.3, device ID 23): configuration layout,
 * requests, probe properties and fault events, as they travel on the wire.
 *
 * Every multi-byte field is little-endian. A request starts with a
 * driver-written part (head and body) and ends with a device-written part
 * (the tail, plus the properties of a PROBE request). The names below are
 * user ABI: VMMs build their device model on them.
 */
#ifndef _UAPI_LINUX_VIRTIO_IOMMU_H
#define _UAPI_LINUX_VIRTIO_IOMMU_H

#include <linux/types.h>

/* Feature bits */
#define VIRTIO_IOMMU_F_INPUT_RANGE		0	/* config.input_range is valid */
#define VIRTIO_IOMMU_F_DOMAIN_RANGE		1	/* config.domain_range is valid */
#define VIRTIO_IOMMU_F_MAP_UNMAP		2	/* MAP and UNMAP requests */
#define VIRTIO_IOMMU_F_BYPASS			3	/* legacy: unattached endpoints bypass */
#define VIRTIO_IOMMU_F_PROBE			4	/* PROBE request, config.probe_size */
#define VIRTIO_IOMMU_F_MMIO			5	/* VIRTIO_IOMMU_MAP_F_MMIO */
#define VIRTIO_IOMMU_F_BYPASS_CONFIG		6	/* config.bypass, ATTACH_F_BYPASS */

struct virtio_iommu_range_64 {
	__le64					start;
	__le64					end;	/* inclusive */
};

struct virtio_iommu_range_32 {
	__le32					start;
	__le32					end;	/* inclusive */
};

/* Device configuration space, 40 bytes. */
struct virtio_iommu_config {
	/* Lowest set bit: the granule; the other bits are hints */
	__le64					page_size_mask;
	/* The IOVA window endpoints may use (VIRTIO_IOMMU_F_INPUT_RANGE) */
	struct virtio_iommu_range_64		input_range;
	/* The domain IDs the driver may use (VIRTIO_IOMMU_F_DOMAIN_RANGE) */
	struct virtio_iommu_range_32		domain_range;
	/* Size of the properties area of a PROBE request */
	__le32					probe_size;
	/* Writable (BYPASS_CONFIG): 1 lets unattached endpoints bypass */
	__u8					bypass;
	__u8					reserved[3];
};

/* Request types */
#define VIRTIO_IOMMU_T_ATTACH			0x01
#define VIRTIO_IOMMU_T_DETACH			0x02
#define VIRTIO_IOMMU_T_MAP			0x03
#define VIRTIO_IOMMU_T_UNMAP			0x04
#define VIRTIO_IOMMU_T_PROBE			0x05

/* Request status, written by the device in the tail */
#define VIRTIO_IOMMU_S_OK			0x00	/* success */
#define VIRTIO_IOMMU_S_IOERR			0x01	/* virtio transport error */
#define VIRTIO_IOMMU_S_UNSUPP			0x02	/* request not supported */
#define VIRTIO_IOMMU_S_DEVERR			0x03	/* internal device error */
#define VIRTIO_IOMMU_S_INVAL			0x04	/* invalid parameter */
#define VIRTIO_IOMMU_S_RANGE			0x05	/* parameter out of range */
#define VIRTIO_IOMMU_S_NOENT			0x06	/* no such domain/endpoint */
#define VIRTIO_IOMMU_S_FAULT			0x07	/* bad address */
#define VIRTIO_IOMMU_S_NOMEM			0x08	/* out of resources */

struct virtio_iommu_req_head {
	__u8					type;
	__u8					reserved[3];
};

struct virtio_iommu_req_tail {
	__u8					status;
	__u8					reserved[3];
};

/* Attach the endpoint to a domain with identity translation */
#define VIRTIO_IOMMU_ATTACH_F_BYPASS		(1 << 0)

/* ATTACH: 24 bytes; creates the domain if it does not exist */
struct virtio_iommu_req_attach {
	struct virtio_iommu_req_head		head;
	__le32					domain;
	__le32					endpoint;
	__le32					flags;
	__u8					reserved[4];
	struct virtio_iommu_req_tail		tail;
};

/* DETACH: 24 bytes; a domain without endpoints disappears */
struct virtio_iommu_req_detach {
	struct virtio_iommu_req_head		head;
	__le32					domain;
	__le32					endpoint;
	__u8					reserved[8];
	struct virtio_iommu_req_tail		tail;
};

/* MAP flags */
#define VIRTIO_IOMMU_MAP_F_READ			(1 << 0)
#define VIRTIO_IOMMU_MAP_F_WRITE		(1 << 1)
#define VIRTIO_IOMMU_MAP_F_MMIO			(1 << 2)

#define VIRTIO_IOMMU_MAP_F_MASK			(VIRTIO_IOMMU_MAP_F_READ |	\
						 VIRTIO_IOMMU_MAP_F_WRITE |	\
						 VIRTIO_IOMMU_MAP_F_MMIO)

/* MAP: 40 bytes; [virt_start, virt_end] -> phys_start, granule-aligned */
struct virtio_iommu_req_map {
	struct virtio_iommu_req_head		head;
	__le32					domain;
	__le64					virt_start;
	__le64					virt_end;	/* inclusive */
	__le64					phys_start;
	__le32					flags;
	struct virtio_iommu_req_tail		tail;
};

/*
 * UNMAP: 32 bytes; removes every mapping inside [virt_start, virt_end].
 * A range that would split a mapping fails with RANGE and removes nothing.
 */
struct virtio_iommu_req_unmap {
	struct virtio_iommu_req_head		head;
	__le32					domain;
	__le64					virt_start;
	__le64					virt_end;	/* inclusive */
	__u8					reserved[4];
	struct virtio_iommu_req_tail		tail;
};

/* PROBE property types (12 bits; the upper 4 bits of the field are reserved) */
#define VIRTIO_IOMMU_PROBE_T_NONE		0	/* end of the list */
#define VIRTIO_IOMMU_PROBE_T_RESV_MEM		1

#define VIRTIO_IOMMU_PROBE_T_MASK		0xfff

/* Property header; @length counts the bytes after this header */
struct virtio_iommu_probe_property {
	__le16					type;
	__le16					length;
};

/* RESV_MEM subtypes */
#define VIRTIO_IOMMU_RESV_MEM_T_RESERVED	0	/* never mapped, never used */
#define VIRTIO_IOMMU_RESV_MEM_T_MSI		1	/* MSI doorbells, bypassing */

/* RESV_MEM property: 24 bytes including the header */
struct virtio_iommu_probe_resv_mem {
	struct virtio_iommu_probe_property	head;
	__u8					subtype;
	__u8					reserved[3];
	__le64					start;
	__le64					end;	/* inclusive */
};

/*
 * PROBE: the driver-written part is the head, endpoint and reserved bytes;
 * the device writes config.probe_size bytes of properties, then the tail,
 * right after them.
 */
struct virtio_iommu_req_probe {
	struct virtio_iommu_req_head		head;
	__le32					endpoint;
	__u8					reserved[64];
	__u8					properties[];
};

/* Fault reasons */
#define VIRTIO_IOMMU_FAULT_R_UNKNOWN		0
#define VIRTIO_IOMMU_FAULT_R_DOMAIN		1	/* endpoint has no domain */
#define VIRTIO_IOMMU_FAULT_R_MAPPING		2	/* no (adequate) mapping */

/* Fault flags */
#define VIRTIO_IOMMU_FAULT_F_READ		(1 << 0)
#define VIRTIO_IOMMU_FAULT_F_WRITE		(1 << 1)
#define VIRTIO_IOMMU_FAULT_F_EXEC		(1 << 2)
#define VIRTIO_IOMMU_FAULT_F_ADDRESS		(1 << 8)	/* @address is valid */

/* A fault record on the event queue, 24 bytes */
struct virtio_iommu_fault {
	__u8					reason;
	__u8					reserved[3];
	__le32					flags;
	__le32					endpoint;
	__u8					reserved2[4];
	__le64					address;
};

#endif /* _UAPI_LINUX_VIRTIO_IOMMU_H */
