/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * virtio-iommu guest driver: what its two files share.
 *
 * virtio-iommu.c is the IOMMU driver (domains, endpoints, probe, events);
 * virtio-iommu-queue.c the request queue engine under it (preallocated
 * slots, sequence numbers, the kick protocol and kick combining, waiting by
 * sleep or poll); virtio-iommu-table.c the domains whose page table the
 * device walks (page-table sharing). The driver builds requests in slots
 * and syncs; the queue tells the driver which domain requests failed.
 */
#ifndef _DRIVERS_IOMMU_VIRTIO_IOMMU_H
#define _DRIVERS_IOMMU_VIRTIO_IOMMU_H

#include <linux/iommu.h>
#include <linux/list.h>
#include <linux/mutex.h>
#include <linux/percpu.h>
#include <linux/spinlock.h>
#include <linux/virtio.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "virtio-iommu-maps.h"
#include "virtio-iommu-table.h"
#include "virtio-iommu-wire.h"

#define VIOMMU_REQUEST_VQ		0
#define VIOMMU_EVENT_VQ			1
#define VIOMMU_NR_VQS			2

/* Buckets of the combining wait histogram (debugfs) */
#define VIOMMU_WAIT_BUCKETS		5

/* Counters of the whole device, under viommu_dev.rq_lock. */
struct viommu_stats {
	u64	requests[VIRTIO_IOMMU_T_INVALIDATE + 1];
	u64	errors;			/* requests that failed */
	u64	bad_answers;		/* of which the device's answer was unusable */
	u64	domain_gone;		/* NOENT: queued behind their domain's last move */
	u64	kicks;			/* notifications sent to the device */
	u64	kicked_requests;	/* requests those notifications covered */
	u64	kicks_unneeded;		/* batches the device took unnotified */
	u64	combine_waits;		/* notifiers that waited for another CPU */
	u64	combine_joins;		/* of which another CPU's batch joined */
	u64	combine_wait_ns;	/* time those notifiers waited */
	/* those waits by length: <2, 2-4, 4-8, 8-16, >=16 us (2^11 ns units) */
	u64	combine_wait_hist[VIOMMU_WAIT_BUCKETS];
	u64	combine_overruns;	/* waits that ended late (vCPU preempted) */
	u64	notify_ns;		/* time spent notifying the device */
	u64	answer_wait_ns;		/* time syncers then waited for answers */
	u64	sleeps;			/* waits on the request queue interrupt */
	u64	polls;			/* bounded polls */
	u64	late_waits;		/* waits past their timeout, which went on */
	u64	gave_up;		/* waits a broken request queue ended */
	u64	slot_waits;		/* no free slot: waited for one */
};

/* Counters of the event queue, under viommu_dev.ep_lock. */
struct viommu_event_stats {
	u64	faults;			/* fault records received */
	u64	reported;		/* of which reported to the IOMMU core */
	u64	unknown_ep;		/* endpoint or domain not found */
	u64	bad_events;		/* malformed event buffers */
};

struct viommu_dev {
	struct iommu_device		iommu;
	struct device			*dev;
	struct virtio_device		*vdev;
	struct virtqueue		*vqs[VIOMMU_NR_VQS];

	/* Request queue: slots, in-flight list, counters */
	spinlock_t			rq_lock;
	struct viommu_slot		*slots;
	unsigned int			nr_slots;
	struct list_head		free_slots;
	struct list_head		inflight;	/* in submission order */
	unsigned int			unkicked;
	bool				notifying;	/* a CPU waits to kick, or kicks */
	unsigned int			joins;		/* syncs left to the notifier */
	int				last_cpu;	/* the CPU that synced last */
	u64				last_ns;	/* when it did */
	u64				other_ns;	/* the last sync of any other CPU */
	u64				exit_ns;	/* average cost of a notification */
	u64				combine_ns;	/* longest combining wait */
	u64				next_seq;
	unsigned int			reaps;		/* reaps that found answers */
	unsigned int			sleepers;
	wait_queue_head_t		rq_wait;
	struct viommu_stats		stats;

	/* Endpoints move between domains one at a time (attach, detach) */
	struct mutex			attach_mutex;

	/* PROBE buffer; PROBE requests are serialised by probe_mutex */
	struct mutex			probe_mutex;
	void				*probe_buf;

	/* Endpoint IDs to endpoints, and each endpoint's domain */
	spinlock_t			ep_lock;
	struct xarray			endpoints;
	struct viommu_event_stats	evstats;

	/*
	 * Domain IDs from the device's range; every bypass domain shares
	 * one, bypass_id, held by bypass_refs domains. ids_lock protects
	 * them all.
	 */
	struct mutex			ids_lock;
	struct ida			domain_ids;
	u64				ids_used;
	u32				bypass_id;
	unsigned int			bypass_refs;
	bool				ids_warned;	/* said they ran short */

	spinlock_t			domains_lock;	/* protects domains */
	struct list_head		domains;	/* for debugfs */

	struct virtio_iommu_fault	*events;
	unsigned int			nr_events;

	/* Device configuration, read at probe */
	struct iommu_domain_geometry	geometry;
	u64				pgsize_bitmap;
	u32				first_domain;
	u32				last_domain;
	u32				map_flags;	/* MAP flags the device accepts */
	u32				probe_size;
	/* What the driver serves, decided at probe: viommu_decide_service() */
	bool				paging;		/* DMA and VFIO domains */
	bool				bypass;		/* identity by bypassing */
	bool				identity;	/* by bypass or 1:1 maps */
	bool				tables;		/* ATTACH_TABLE negotiated */
	bool				posted;		/* POSTED_MAP negotiated */
	unsigned long			fmts_said;	/* formats logged, by number */
	u64 __percpu			*dma_maps;	/* map_pages() calls */
	u64 __percpu			*posted_syncs;	/* MAPs left unnotified */

	struct dentry			*debugfs;
};

/*
 * A request slot. The request buffer comes first and is cache-line aligned
 * so that the device-visible bytes of two slots never share a line.
 */
struct viommu_slot {
	union viommu_req_buf		req ____cacheline_aligned;
	void				*buf;		/* &req, or the PROBE buffer */
	u32				len;		/* bytes at @buf */
	u32				write_len;	/* device-writable bytes at the end */
	struct list_head		node;		/* free or in-flight list */
	u64				seq;
	struct viommu_domain		*vdomain;	/* failures are reported on it */
	u8				type;
	bool				waited;		/* a caller collects the result */
	bool				done;
	int				result;
};

/*
 * What every map and unmap counts. Maps and unmaps of a domain run on
 * several CPUs at once without a lock (the table needs none): per-CPU
 * counters cost them no atomic (a helper call under TCG). Read summed.
 */
struct viommu_domain_counts {
	u64		maps;
	u64		unmaps;
	u64		mapped_bytes;
	u64		unmapped_bytes;
};

/* Per-domain counters: the rarer ones atomic */
struct viommu_domain_stats {
	struct viommu_domain_counts __percpu *counts;
	atomic64_t	errors;
	atomic64_t	invalidates;		/* INVALIDATEs sent for unmaps */
	atomic64_t	invalidates_map;	/* and for maps (INVAL_MAP) */
	atomic64_t	invalidates_skipped;	/* not needed (NO_CACHE) */
	atomic64_t	invalidates_posted;	/* sent unnotified (POSTED_INVAL) */
	atomic64_t	resent;			/* refused posted MAPs sent again */
	u64		faults;			/* viommu_dev.ep_lock */
};

/*
 * A domain's mappings live in a generic_pt table of its own. In MAP/UNMAP
 * mode it also tells where each MAP request began and ended
 * (virtio-iommu-maps.h), and no device walks it. A table domain's table is
 * built in a format the device walks (@table) and attached with
 * ATTACH_TABLE: the device translates from it, and the driver only sends
 * INVALIDATEs (virtio-iommu-table.c).
 */

struct viommu_domain {
	struct iommu_domain		domain;
	struct viommu_dev		*viommu;
	struct mutex			mutex;		/* finalise, attach, nr_endpoints */
	/*
	 * Keeps a replay of the MAPs out of their table while map_pages() and
	 * unmap_pages() change it and send what they changed: they read it,
	 * the replay writes it, a batch at a time, all with interrupts off (a
	 * reader may run in an interrupt, and a waiting writer holds back new
	 * readers). nr_endpoints and replayed_to change under both it and the
	 * mutex.
	 */
	rwlock_t			replay_lock;
	unsigned int			id;
	u32				map_flags;
	bool				bypass;
	unsigned int			nr_endpoints;
	/* With endpoints, the device holds the MAPs that start below it */
	u64				replayed_to;
	/* Endpoints attached or attaching without POSTED_MAP: MAPs kick */
	atomic_t			nr_unposted;

	struct viommu_maps		maps;
	/* Sends again the posted MAPs the device refused: see sync */
	struct work_struct		resend_work;

	/* Page-table sharing; table.format 0: MAP/UNMAP mode */
	struct viommu_table_cfg		table;
	u16				asid;
	bool				inval_map;	/* INVALIDATE after maps */
	/* Every endpoint attached so far walks uncached: see sync */
	bool				no_cache;
	/* ... serves the queue before it translates: see sync */
	bool				posted_inval;
	int				attach_err;	/* of the last ATTACH_TABLE */
	atomic_t			inval_failures;
	/* Table pages no INVALIDATE covered: freed with the domain */
	spinlock_t			limbo_lock;
	struct list_head		limbo;

	struct list_head		list;		/* viommu_dev.domains */
	struct viommu_domain_stats	stats;
};

struct viommu_endpoint {
	struct device			*dev;
	struct viommu_dev		*viommu;
	struct viommu_domain		*vdomain;	/* under viommu_dev.ep_lock */
	struct list_head		resv_regions;
	/* The table the endpoint's PROBE allows; format 0: none */
	struct viommu_table_cfg		table;
	/* Every ID's PROBE had POSTED_MAP: MAPs may wait unnotified */
	bool				posted;
};

#define to_viommu_domain(d)	container_of(d, struct viommu_domain, domain)

static inline void viommu_count_map(struct viommu_domain *vdomain, u64 bytes)
{
	this_cpu_inc(vdomain->stats.counts->maps);
	this_cpu_add(vdomain->stats.counts->mapped_bytes, bytes);
}

static inline void viommu_count_unmap(struct viommu_domain *vdomain,
				      u64 bytes)
{
	this_cpu_inc(vdomain->stats.counts->unmaps);
	this_cpu_add(vdomain->stats.counts->unmapped_bytes, bytes);
}

/* virtio-iommu-queue.c: the request queue */
int viommu_init_slots(struct viommu_dev *viommu);

void viommu_request_done(struct virtqueue *vq);

int viommu_sync(struct viommu_dev *viommu, bool may_sleep, bool combine);

int viommu_send_sync(struct viommu_dev *viommu,
		     const union viommu_req_buf *req, void *buf,
		     size_t len, size_t write_len);
int viommu_queue_req(struct viommu_domain *vdomain,
		     const union viommu_req_buf *req, size_t len);
void viommu_forget_domain(struct viommu_dev *viommu,
			  struct viommu_domain *vdomain);
void viommu_queue_debugfs(struct dentry *root);

/*
 * Whether the syncs of @vdomain combine their kicks with other CPUs' (see
 * viommu_kick()). Not on a lazy domain: its flush queue already batches the
 * unmaps, so only its maps sync, a whole map and unmap apart on each CPU,
 * and a map would wait longer for another CPU than the exit it saves.
 */
static inline bool viommu_domain_combines(struct viommu_domain *vdomain)
{
	return vdomain->domain.type != IOMMU_DOMAIN_DMA_FQ;
}

/* virtio-iommu-table.c: table domains */
static inline bool viommu_is_table(const struct viommu_domain *vdomain)
{
	return vdomain->table.format;
}

int viommu_table_setup(struct viommu_domain *vdomain,
		       const struct viommu_table_cfg *cfg);
bool viommu_table_fits(struct viommu_domain *vdomain,
		       struct viommu_endpoint *vdev);
int viommu_table_attach(struct viommu_domain *vdomain,
			struct viommu_endpoint *vdev);
int viommu_table_map(struct viommu_domain *vdomain, unsigned long iova,
		     phys_addr_t paddr, size_t pgsize, size_t pgcount,
		     int prot, gfp_t gfp, size_t *mapped);
size_t viommu_table_unmap(struct viommu_domain *vdomain, unsigned long iova,
			  size_t pgsize, size_t pgcount,
			  struct iommu_iotlb_gather *gather);
int viommu_table_sync_map(struct viommu_domain *vdomain, unsigned long iova,
			  size_t size);
void viommu_table_sync(struct viommu_domain *vdomain,
		       struct iommu_iotlb_gather *gather);
void viommu_table_flush_all(struct viommu_domain *vdomain);
void viommu_table_free(struct viommu_domain *vdomain);

/* virtio-iommu.c: what the queue reports back */
void viommu_domain_request_failed(struct viommu_domain *vdomain,
				  const struct viommu_slot *slot, int err);

#endif /* _DRIVERS_IOMMU_VIRTIO_IOMMU_H */
