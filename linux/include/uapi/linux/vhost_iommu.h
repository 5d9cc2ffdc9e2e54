/* SPDX-License-Identifier: GPL-2.0 WITH Linux-syscall-note */
/*
 * vhost-iommu: the virtio-iommu device (virtio 1.3, device ID 23) served by
 * the host kernel.  See Documentation/iommu/vhost-iommu.rst.
 *
 * A VMM opens /dev/vhost-iommu and drives it with the usual vhost calls
 * (VHOST_SET_OWNER, VHOST_GET_FEATURES, VHOST_SET_FEATURES,
 * VHOST_SET_MEM_TABLE, VHOST_SET_VRING_NUM/ADDR/BASE/KICK/CALL) for the
 * request queue (index 0) and the event queue (index 1), plus the calls
 * below.  Every structure has fixed-size fields; reserved fields and unknown
 * flags must be zero and are rejected with EINVAL otherwise, so that they
 * can gain a meaning later.
 */
#ifndef _UAPI_LINUX_VHOST_IOMMU_H
#define _UAPI_LINUX_VHOST_IOMMU_H

#include <linux/types.h>
#include <linux/vhost.h>

/* Virtqueue indices */
#define VHOST_IOMMU_VQ_REQUEST		0
#define VHOST_IOMMU_VQ_EVENT		1
#define VHOST_IOMMU_VQ_MAX		2

/**
 * struct vhost_iommu_config - the device configuration the guest sees
 * @argsz: the size of the structure as the caller knows it, so that it can
 *         grow: at least its first version's (88 bytes, else EINVAL); the
 *         bytes of a larger one that this kernel does not know must be zero
 *         (E2BIG).  GET_CONFIG writes no more than @argsz bytes and sets
 *         @argsz to the size it knows
 * @flags: zero (reserved)
 * @page_size_mask: page sizes; the lowest set bit is the granule, at least
 *                  4 KiB
 * @input_start: first IOVA a mapping may use
 * @input_end: last IOVA a mapping may use
 * @domain_start: first domain ID
 * @domain_end: last domain ID
 * @probe_size: size of the PROBE properties buffer, a multiple of 4; the
 *              reserved regions of every endpoint must fit
 * @bypass: 1 when endpoints that are not attached bypass translation; the
 *          only field the guest may write, so the only one that may change
 *          while the device runs
 * @padding: zero
 * @max_domains: domains the guest may create (0: the module default, at
 *               most the max_domains module parameter); ATTACH answers
 *               NOMEM past it
 * @max_mappings: mappings over all domains (0: the module default, at most
 *                the max_mappings module parameter); MAP answers NOMEM past
 *                it
 * @max_table_pages: page-table pages over all domains (0: the module
 *                   default, at most the max_table_pages module parameter);
 *                   ATTACH and MAP answer NOMEM once the tables reach it.
 *                   The tables are what a MAP costs the host (a huge range
 *                   whose alignment allows only small pages needs many), so
 *                   this, not @max_mappings, bounds the memory a guest pins
 * @table_formats: with VIRTIO_IOMMU_F_ATTACH_TABLE negotiated, the page
 *                 table formats the device offers every endpoint in PROBE
 *                 and accepts in ATTACH_TABLE: bit n for format n
 *                 (VIRTIO_IOMMU_PGTF_*).  0: every format the device walks
 *                 (VHOST_IOMMU_TABLE_FORMATS); GET_CONFIG says which.  Each
 *                 takes 16 bytes of @probe_size once the feature is
 *                 negotiated
 * @reserved: zero
 *
 * The VMM mirrors @page_size_mask to @probe_size and @bypass into the
 * virtio config space it exposes, and forwards the guest's writes of
 * @bypass with VHOST_IOMMU_SET_CONFIG.
 */
struct vhost_iommu_config {
	__u32 argsz;
	__u32 flags;
	__u64 page_size_mask;
	__u64 input_start;
	__u64 input_end;
	__u32 domain_start;
	__u32 domain_end;
	__u32 probe_size;
	__u8 bypass;
	__u8 padding[3];
	__u32 max_domains;
	__u32 table_formats;
	__u64 max_mappings;
	__u64 max_table_pages;
	__u64 reserved[2];
};

/* The formats vhost-iommu walks: ARM_LPAE (4K, 16K, 64K), VTD_SL, AMD_V1 */
#define VHOST_IOMMU_TABLE_FORMATS	((1 << 1) | (1 << 3) | (1 << 4))

/* Subtypes of a reserved region, as in the PROBE RESV_MEM property */
#define VHOST_IOMMU_RESV_MEM_T_RESERVED	0
#define VHOST_IOMMU_RESV_MEM_T_MSI	1

/**
 * struct vhost_iommu_resv_region - a reserved region of an endpoint
 * @start: first address
 * @end: last address (inclusive)
 * @subtype: VHOST_IOMMU_RESV_MEM_T_*
 * @reserved: zero
 */
struct vhost_iommu_resv_region {
	__u64 start;
	__u64 end;
	__u8 subtype;
	__u8 reserved[7];
};

/* Most reserved regions per endpoint */
#define VHOST_IOMMU_MAX_RESV		32

/**
 * struct vhost_iommu_endpoint - an endpoint the guest may attach
 * @id: the endpoint ID (QEMU uses the PCI requester ID)
 * @flags: VHOST_IOMMU_EP_F_*, others reserved (EINVAL)
 * @nr_resv: number of entries at @resv_ptr, at most VHOST_IOMMU_MAX_RESV
 * @vfio_group_fd: with VHOST_IOMMU_EP_F_VFIO, a file descriptor of the
 *                 endpoint's VFIO group (/dev/vfio/N), else zero
 * @resv_ptr: user pointer to @nr_resv struct vhost_iommu_resv_region,
 *            reported to the guest by PROBE as RESV_MEM properties; at
 *            most one of subtype MSI, and none overlapping another
 *            (EINVAL: virtio 1.3 says the device SHOULD NOT present
 *            either).  MAP answers INVAL for a range that meets a region
 *            of an endpoint in its domain, and ATTACH for a domain that
 *            maps into one of the endpoint's regions
 * @reserved2: zero
 */
/*
 * struct vhost_iommu_endpoint.flags: the endpoint's DMA is not translated
 * here (a device assigned to the guest, translated by a hardware IOMMU):
 * with VIRTIO_IOMMU_F_POSTED_MAP negotiated, its PROBE answer has no
 * POSTED_MAP property, since nothing would fetch a MAP the guest did not
 * notify before that DMA faults.
 */
#define VHOST_IOMMU_EP_F_NO_POSTED_MAP	(1 << 0)
/*
 * The endpoint is a device assigned with VFIO, its group in a container set
 * to VFIO_TYPE1_NESTING_IOMMU whose MAP_DMA mappings are the guest's memory
 * (stage 2): the domain the guest attaches it to, a table or the MAPs,
 * becomes the group's stage 1 in the container, kept up to date by each
 * INVALIDATE, MAP and UNMAP (Documentation/iommu/vfio-nesting.rst), and
 * its faults come back as fault events.  Implies NO_POSTED_MAP.  Needs
 * CONFIG_VHOST_IOMMU_VFIO (EOPNOTSUPP without); EBADF for a bad descriptor,
 * EINVAL for one that is not a VFIO group.
 */
#define VHOST_IOMMU_EP_F_VFIO		(1 << 1)

struct vhost_iommu_endpoint {
	__u32 id;
	__u32 flags;
	__u32 nr_resv;
	__s32 vfio_group_fd;
	__u64 resv_ptr;
	__u64 reserved2[2];
};

/* struct vhost_iommu_translate.perm */
#define VHOST_IOMMU_PERM_READ		(1 << 0)
#define VHOST_IOMMU_PERM_WRITE		(1 << 1)
#define VHOST_IOMMU_PERM_MMIO		(1 << 2)
#define VHOST_IOMMU_PERM_BYPASS		(1 << 3)

/* struct vhost_iommu_translate.flags */
#define VHOST_IOMMU_TRANSLATE_F_READ	(1 << 0)
#define VHOST_IOMMU_TRANSLATE_F_WRITE	(1 << 1)
#define VHOST_IOMMU_TRANSLATE_F_FAULT	(1 << 2)
#define VHOST_IOMMU_TRANSLATE_F_PREFETCH (1 << 3)

/**
 * struct vhost_iommu_translate - translate an IOVA as an endpoint's DMA
 * @endpoint: in: the endpoint ID
 * @flags: in: VHOST_IOMMU_TRANSLATE_F_READ and _WRITE, the access the
 *         device makes (none: only look the IOVA up); _FAULT to report a
 *         failed translation to the guest, as a fault on the event queue;
 *         _PREFETCH to also put the translation into the IOTLB of the vhost
 *         device bound to @endpoint, as the answer to its miss would
 * @iova: in: the input address
 * @gpa: out: the guest-physical address @iova maps to
 * @size: out: bytes from @iova to the end of its mapping, or at least
 *        256 KiB of it where it goes further (a lookup follows a mapping no
 *        further, whatever its size: ask again from there); 0 in bypass,
 *        the whole space
 * @perm: out: VHOST_IOMMU_PERM_*
 * @reserved: zero
 *
 * For a VMM's emulated devices behind the IOMMU, and for tests.  Fails with
 * ENOENT when @iova is not mapped or the endpoint is not attached (and the
 * config does not bypass), EACCES when the mapping does not allow the
 * access, ENODEV for an unknown endpoint.  With _FAULT, ENOENT and EACCES
 * also queue a fault record (struct virtio_iommu_fault: reason DOMAIN for an
 * endpoint without a domain, MAPPING otherwise; flags READ and WRITE as
 * asked, and ADDRESS) for the event queue; while the guest has no buffer
 * there up to 64 records wait, in order, and later ones are dropped.
 * With VIRTIO_IOMMU_F_POSTED_MAP negotiated, a lookup about to fail first
 * serves the requests the guest queued without notifying, then looks
 * again: only what still fails is an error (or a fault).
 * _PREFETCH is for a VMM starting a bound device: its first access to a
 * ring (VHOST_NET_SET_BACKEND writes the used ring's flags) is made in the
 * VMM's call and cannot wait for its miss to be answered, so the VMM gives
 * it the rings' translations first.  It fails with ENODEV when no device
 * is bound to the endpoint or this device does not run; a failed
 * translation puts nothing into the IOTLB.
 */
struct vhost_iommu_translate {
	__u32 endpoint;
	__u32 flags;
	__u64 iova;
	__u64 gpa;
	__u64 size;
	__u32 perm;
	__u32 reserved;
};

/**
 * struct vhost_iommu_state - the argument of VHOST_IOMMU_GET_STATE and
 *                            VHOST_IOMMU_SET_STATE
 * @argsz: the size of the structure as the caller knows it, at least 32
 *         (EINVAL); bytes past what this kernel knows must be zero (E2BIG)
 * @flags: zero (reserved)
 * @size: GET_STATE: in, the bytes at @data; out, the size of the state,
 *        also when it does not fit (ENOSPC, nothing written: ask with 0 to
 *        learn it).  SET_STATE: the bytes of the state at @data
 * @data: user pointer to the state
 * @reserved: zero
 */
struct vhost_iommu_state {
	__u32 argsz;
	__u32 flags;
	__u64 size;
	__u64 data;
	__u64 reserved;
};

/*
 * The state: a header, then records, each 8-byte aligned, all fields
 * little-endian, whatever the host.  Version 1 has three kinds of record:
 * the config (first, once), the requests that build the domains again (an
 * ATTACH or ATTACH_TABLE for each endpoint in a domain, then the domain's
 * MAPs, each as the driver sends it, without its tail), and the fault
 * records waiting for an event buffer, oldest first.
 */
#define VHOST_IOMMU_STATE_MAGIC		0x4d4f4956	/* "VIOM" */
#define VHOST_IOMMU_STATE_VERSION	1

/**
 * struct vhost_iommu_state_header - the start of a state
 * @magic: VHOST_IOMMU_STATE_MAGIC
 * @version: VHOST_IOMMU_STATE_VERSION
 * @size: bytes of the whole state, this header included
 * @features: the virtio features the guest negotiated (VHOST_F_LOG_ALL,
 *            the VMM's, is never in them)
 * @reserved: zero
 */
struct vhost_iommu_state_header {
	__le32 magic;
	__le32 version;
	__le64 size;
	__le64 features;
	__le64 reserved;
};

/* struct vhost_iommu_state_record.type */
#define VHOST_IOMMU_STATE_R_CONFIG	1	/* struct vhost_iommu_state_config */
#define VHOST_IOMMU_STATE_R_REQUEST	2	/* a virtio_iommu_req_* */
#define VHOST_IOMMU_STATE_R_FAULT	3	/* struct virtio_iommu_fault */

/**
 * struct vhost_iommu_state_record - a record's header, @len bytes follow
 * @type: VHOST_IOMMU_STATE_R_*
 * @reserved: zero
 * @len: bytes of the record after this header (the next record starts at
 *       the next multiple of 8)
 */
struct vhost_iommu_state_record {
	__le16 type;
	__le16 reserved;
	__le32 len;
};

/**
 * struct vhost_iommu_state_config - what of the config the guest sees
 * @page_size_mask: as in struct vhost_iommu_config
 * @input_start: as in struct vhost_iommu_config
 * @input_end: as in struct vhost_iommu_config
 * @domain_start: as in struct vhost_iommu_config
 * @domain_end: as in struct vhost_iommu_config
 * @probe_size: as in struct vhost_iommu_config
 * @table_formats: as in struct vhost_iommu_config
 * @bypass: as in struct vhost_iommu_config, as the guest last wrote it
 * @reserved: zero
 *
 * SET_STATE refuses a state whose config differs from the device's in
 * anything but @bypass, which it takes.  The limits are the device's own:
 * a state that does not fit them is refused.
 */
struct vhost_iommu_state_config {
	__le64 page_size_mask;
	__le64 input_start;
	__le64 input_end;
	__le32 domain_start;
	__le32 domain_end;
	__le32 probe_size;
	__le32 table_formats;
	__u8 bypass;
	__u8 reserved[7];
};

/*
 * Our calls, in the VHOST_VIRTIO (0xAF) space from 0xA0 on, which
 * include/uapi/linux/vhost.h does not use.
 *
 * VHOST_IOMMU_SET_CONFIG: set the device config.  Before the device runs,
 * any field; while it runs, or is paused with domains, only @bypass may
 * change (EBUSY otherwise).
 * VHOST_IOMMU_GET_CONFIG: read it back, with the limits in effect.
 * VHOST_IOMMU_ADD_ENDPOINT / VHOST_IOMMU_DEL_ENDPOINT (argument: the ID):
 * register an endpoint, or remove it (detaching it first).  Allowed while
 * the device runs (hotplug).
 * VHOST_IOMMU_SET_RUNNING (argument: 1 start, 0 pause): start serving the
 * queues, or stop serving them and keep every domain, mapping and pending
 * fault, translations answering from them (a VM stopped by its VMM).
 * VHOST_IOMMU_RESET: the device reset: stopped, every domain and mapping
 * goes, endpoints stay registered.
 * VHOST_IOMMU_TRANSLATE: see struct vhost_iommu_translate.
 * VHOST_IOMMU_GET_STATE: the state of a paused device (EBUSY while it runs
 * or before a config), see struct vhost_iommu_state.
 * VHOST_IOMMU_SET_STATE: load a state into a configured device that is
 * paused and has no domain (EBUSY otherwise), its features, memory table
 * and endpoints set as where it was saved.  Every record is checked as the
 * request or value it stands for; on any error (EINVAL malformed, or saved
 * under other features or config; ENOSPC past this device's limits; ENODEV
 * an endpoint not added; ERANGE; EOPNOTSUPP) the device is left without
 * domains, as before.
 *
 * A vhost device (vhost-net) is bound to an endpoint on its own file, with
 * VHOST_SET_IOMMU (include/uapi/linux/vhost.h) naming this file and the
 * endpoint: its IOTLB misses are then translated here, and UNMAP, DETACH
 * and resets invalidate what it cached before they complete.
 *
 * Page-table sharing (VIRTIO_IOMMU_F_ATTACH_TABLE, requests ATTACH_TABLE
 * and INVALIDATE) is offered by VHOST_GET_FEATURES like the other feature
 * bits, needs VIRTIO_IOMMU_F_PROBE with it, and is configured with
 * @table_formats of struct vhost_iommu_config.  A table domain's
 * translations come from walking the guest's table through the memory
 * table; see Documentation/iommu/vhost-iommu.rst.
 *
 * Reserved for later, so they keep their numbers: 0xA8 statistics.
 */
/* Sized by their @argsz, not by the number, so that the structures can grow */
#define VHOST_IOMMU_SET_CONFIG	_IO(VHOST_VIRTIO, 0xA0)
#define VHOST_IOMMU_GET_CONFIG	_IO(VHOST_VIRTIO, 0xA1)
#define VHOST_IOMMU_ADD_ENDPOINT _IOW(VHOST_VIRTIO, 0xA2, struct vhost_iommu_endpoint)
#define VHOST_IOMMU_DEL_ENDPOINT _IOW(VHOST_VIRTIO, 0xA3, __u32)
#define VHOST_IOMMU_SET_RUNNING	_IOW(VHOST_VIRTIO, 0xA4, __u32)
#define VHOST_IOMMU_TRANSLATE	_IOWR(VHOST_VIRTIO, 0xA5, struct vhost_iommu_translate)
#define VHOST_IOMMU_RESET	_IO(VHOST_VIRTIO, 0xA6)
#define VHOST_IOMMU_GET_STATE	_IO(VHOST_VIRTIO, 0xA7)
#define VHOST_IOMMU_SET_STATE	_IO(VHOST_VIRTIO, 0xA9)

#endif /* _UAPI_LINUX_VHOST_IOMMU_H */
