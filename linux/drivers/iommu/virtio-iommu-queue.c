// SPDX-License-Identifier: GPL-2.0-only
/*
 * virtio-iommu guest driver: the request queue.
 *
 * Requests live in slots allocated when the device is probed, so the DMA
 * path allocates nothing. A caller builds its request on its stack and
 * queues it into a slot; a sync kicks the device and waits until
 * everything queued so far has an answer. A caller that may sleep waits for
 * the request queue interrupt; the DMA path, which may run in atomic
 * context, polls with interrupts enabled between looks and gives up after a
 * bounded time. See viommu_kick() for the kick protocol and kick combining.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/device.h>
#include <linux/fault-inject.h>
#include <linux/ktime.h>
#include <linux/moduleparam.h>
#include <linux/nmi.h>
#include <linux/slab.h>
#include <linux/virtio.h>
#include <linux/virtio_config.h>

#include "virtio-iommu.h"

/* At most this many requests in flight: the slots are allocated up front. */
#define VIOMMU_MAX_SLOTS		256

/*
 * A caller waits for its answer however long the device takes: until the
 * device answered an unmap, it may still translate the old mapping, and
 * what the caller frees next could be reached by DMA. After this long, a
 * polling caller says so (and counts a late wait); a sleeping caller says
 * so after VIOMMU_SLEEP_TIMEOUT, each time it passes.
 */
#define VIOMMU_POLL_TIMEOUT_US		(2 * USEC_PER_SEC)
#define VIOMMU_SLEEP_TIMEOUT		(10 * HZ)

/*
 * Kick combining (see viommu_kick()): another CPU counts as busy with the
 * IOMMU if it came to sync within this many (exit + combining wait) times.
 */
#define VIOMMU_COMBINE_WINDOW		8

/* The longest combining wait, whatever an exit costs: interrupts are off */
#define VIOMMU_COMBINE_MAX_NS		(20 * NSEC_PER_USEC)

/* Weight of the newest sample in the average notification cost: 1/8 */
#define VIOMMU_EXIT_EWMA_SHIFT		3

/* A slower notification (a stalled VMM) counts as this long */
#define VIOMMU_EXIT_MAX_NS		(100 * NSEC_PER_USEC)

/*
 * Off by default: the wait spins with interrupts off betting that another
 * CPU comes to sync, a bet that loses whenever the other vCPU is not
 * running, and under KVM, where an exit costs less than the wait.
 */
static unsigned int combine_wait;
module_param(combine_wait, uint, 0644);
MODULE_PARM_DESC(combine_wait,
		 "How long a notifier may wait for another CPU's requests, in percent of one exit (0: never, the default; 200 makes CPUs share exits)");

/* A combining wait that ends this much past its limit overran it */
#define VIOMMU_OVERRUN_NS		NSEC_PER_USEC

/* A request came back; rq_lock held. */
static void viommu_complete(struct viommu_dev *viommu, struct viommu_slot *slot,
			    unsigned int used)
{
	const struct virtio_iommu_req_tail *tail = slot->buf + slot->len -
						   VIOMMU_TAIL_LEN;
	int ret = viommu_req_result(used, slot->write_len, tail->status);

	list_del(&slot->node);
	/*
	 * The device forgot the domain: its last endpoint left for another
	 * domain, or detached, while this MAP, UNMAP or INVALIDATE waited
	 * behind the ATTACH or DETACH (the endpoint is counted out only once
	 * that is answered). Nothing of the domain is mapped there, which is
	 * all an UNMAP or INVALIDATE asked; a MAP stays in the domain's
	 * table, and the replay sends it when an endpoint comes back.
	 */
	if (ret == -ENOENT && slot->vdomain &&
	    slot->type != VIRTIO_IOMMU_T_ATTACH_TABLE) {
		viommu->stats.domain_gone++;
		ret = 0;
	}
	if (ret) {
		viommu->stats.errors++;
		if (ret == -EPROTO) {
			viommu->stats.bad_answers++;
			dev_err_ratelimited(viommu->dev,
					    "request type %u: unusable answer (used length %u of %u, status %u)\n",
					    slot->type, used, slot->write_len,
					    tail->status);
		}
	}
	if (ret && slot->vdomain)
		viommu_domain_request_failed(slot->vdomain, slot, ret);

	if (slot->waited) {
		slot->result = ret;
		slot->done = true;
	} else {
		list_add(&slot->node, &viommu->free_slots);
	}
}

/* Collect what the device has answered; rq_lock held. */
static void viommu_reap(struct viommu_dev *viommu)
{
	struct virtqueue *vq = viommu->vqs[VIOMMU_REQUEST_VQ];
	struct viommu_slot *slot;
	unsigned int used;
	bool any = false;

	while ((slot = virtqueue_get_buf(vq, &used))) {
		viommu_complete(viommu, slot, used);
		any = true;
	}
	if (any)
		WRITE_ONCE(viommu->reaps, viommu->reaps + 1);
	if (any && viommu->sleepers)
		wake_up_all(&viommu->rq_wait);
}

/*
 * A CPU comes to sync (viommu_wait()) at @now; rq_lock held. Record it, and
 * say whether another CPU came recently enough to be worth waiting for:
 * within VIOMMU_COMBINE_WINDOW rounds of an exit and a combining wait.
 */
static bool viommu_note_arrival(struct viommu_dev *viommu, u64 now)
	__must_hold(&viommu->rq_lock)
{
	int cpu = smp_processor_id();
	u64 other = viommu->last_cpu == cpu ? viommu->other_ns : viommu->last_ns;

	if (viommu->last_cpu != cpu) {
		viommu->other_ns = viommu->last_ns;
		viommu->last_cpu = cpu;
	}
	viommu->last_ns = now;
	return other &&
	       now - other < VIOMMU_COMBINE_WINDOW *
			     (viommu->exit_ns + viommu->combine_ns);
}

/*
 * Spin, rq_lock not held, until another CPU moves *@counter from @seen (a
 * counter it writes under rq_lock) or @deadline (ktime ns) passes.
 */
static void viommu_spin_until(const unsigned int *counter, unsigned int seen,
			      u64 deadline)
{
	while (READ_ONCE(*counter) == seen && ktime_get_ns() < deadline)
		cpu_relax();
}

/*
 * The notifier waits, with rq_lock dropped, until another CPU brings its
 * batch to sync (viommu_kick() counts it in @joins) or combine_ns has
 * passed; interrupts stay off, as for the exit.
 */
static void viommu_combine(struct viommu_dev *viommu, u64 now)
	__must_hold(&viommu->rq_lock)
{
	unsigned int joins = viommu->joins;
	u64 limit = viommu->combine_ns, waited;

	viommu->stats.combine_waits++;
	spin_unlock(&viommu->rq_lock);
	viommu_spin_until(&viommu->joins, joins, now + limit);
	spin_lock(&viommu->rq_lock);
	waited = ktime_get_ns() - now;
	viommu->stats.combine_wait_ns += waited;
	viommu->stats.combine_wait_hist[min_t(unsigned int, fls64(waited >> 11),
					      VIOMMU_WAIT_BUCKETS - 1)]++;
	if (waited > limit + VIOMMU_OVERRUN_NS)
		viommu->stats.combine_overruns++;
	if (viommu->joins != joins)
		viommu->stats.combine_joins++;
}

/* Why viommu_kick() is called */
enum viommu_kick_why {
	VIOMMU_KICK_AGAIN,		/* a poller looks again */
	VIOMMU_KICK_SYNC,		/* a caller comes to sync */
	VIOMMU_KICK_SYNC_COMBINE,	/* one that may wait for other CPUs */
};

/*
 * viommu_kick() - notify the device of the requests added since the last kick
 * @viommu: the device, rq_lock held (dropped around the notification itself)
 * @why: a caller coming to sync, which may combine its kick or not, or a
 *	poller looking again
 *
 * The notification is the expensive part, an exit to the VMM that serves the
 * queue before it returns. Leaving the lock free meanwhile lets other CPUs
 * add their requests, which the device picks up in the same exit; with
 * VIRTIO_RING_F_EVENT_IDX it then publishes an avail event past them and
 * virtqueue_kick_prepare() says they need no notification of their own. A
 * CPU that finds a notification under way leaves its requests to it: the
 * notifier looks again when its exit returns and kicks whatever the device
 * has not taken, so a sleeping waiter is never left without a kick. Pollers
 * call this again on every look.
 *
 * Kick combining: when CPUs map and unmap side by side (a multiqueue NIC, a
 * benchmark's threads), each sync would otherwise pay an exit of its own,
 * since a request that arrives during another CPU's exit is most often
 * too late for it. A CPU about to notify while another CPU came to sync
 * recently waits until that CPU brings its batch, for at most combine_wait
 * percent of an exit (0 by default: no combining; never more than
 * VIOMMU_COMBINE_MAX_NS); one exit then serves both, and the two leave it
 * together, so their next syncs meet again. The wait must outlast the time
 * a CPU spends between syncs, not only an exit, or the CPUs never fall
 * into step. The cost of an exit is measured here (a moving average), so
 * the wait follows the VMM.
 * A CPU alone never waits, nor does a sync that may not combine (a lazy
 * domain's, the control path's: see viommu_domain_combines()).
 *
 * Interrupts stay off across the wait and the exit, as they were under the
 * lock: an interrupt or softirq on this CPU (the flush queue's timer, a
 * completion unmapping its buffer) that waited for the device would
 * otherwise spin on the very notification it interrupted until its wait
 * timed out.
 */
static void viommu_kick(struct viommu_dev *viommu, enum viommu_kick_why why)
	__must_hold(&viommu->rq_lock)
{
	struct virtqueue *vq = viommu->vqs[VIOMMU_REQUEST_VQ];
	bool combine = false;
	u64 now = 0, start, cost;

	/* With combining off (combine_ns 0) no arrival needs recording */
	if (why != VIOMMU_KICK_AGAIN && viommu->combine_ns) {
		now = ktime_get_ns();
		combine = viommu_note_arrival(viommu, now) &&
			  why == VIOMMU_KICK_SYNC_COMBINE;
		if (viommu->notifying && viommu->unkicked)
			WRITE_ONCE(viommu->joins, viommu->joins + 1);
	}
	while (viommu->unkicked && !viommu->notifying) {
		viommu->notifying = true;
		if (combine) {
			viommu_combine(viommu, now);
			combine = false;
		}
		viommu->stats.kicked_requests += viommu->unkicked;
		viommu->unkicked = 0;
		if (!virtqueue_kick_prepare(vq)) {
			viommu->stats.kicks_unneeded++;
			viommu->notifying = false;
			return;
		}
		viommu->stats.kicks++;
		spin_unlock(&viommu->rq_lock);
		start = ktime_get_ns();
		virtqueue_notify(vq);
		cost = ktime_get_ns() - start;
		spin_lock(&viommu->rq_lock);
		viommu->stats.notify_ns += cost;
		cost = min_t(u64, cost, VIOMMU_EXIT_MAX_NS);
		if (viommu->exit_ns)
			viommu->exit_ns += (s64)(cost - viommu->exit_ns) >>
					   VIOMMU_EXIT_EWMA_SHIFT;
		else
			viommu->exit_ns = cost;
		viommu->combine_ns = min_t(u64, VIOMMU_COMBINE_MAX_NS,
					   div_u64(viommu->exit_ns *
						   READ_ONCE(combine_wait), 100));
		viommu->notifying = false;
	}
}

/* The request queue interrupt: used only while a caller sleeps on it. */
void viommu_request_done(struct virtqueue *vq)
{
	struct viommu_dev *viommu = vq->vdev->priv;
	unsigned long flags;

	spin_lock_irqsave(&viommu->rq_lock, flags);
	viommu_reap(viommu);
	spin_unlock_irqrestore(&viommu->rq_lock, flags);
}

/* Conditions a caller waits for, evaluated with rq_lock held after a reap. */
static bool viommu_seq_done(struct viommu_dev *viommu, u64 seq)
{
	struct viommu_slot *first;

	first = list_first_entry_or_null(&viommu->inflight, struct viommu_slot,
					 node);
	return !first || first->seq > seq;
}

static bool viommu_slot_free(struct viommu_dev *viommu, u64 unused)
{
	return !list_empty(&viommu->free_slots);
}

static bool viommu_slot_done(struct viommu_dev *viommu, u64 slot)
{
	return ((struct viommu_slot *)(uintptr_t)slot)->done;
}

typedef bool (*viommu_cond_t)(struct viommu_dev *viommu, u64 arg);

static bool viommu_check(struct viommu_dev *viommu, viommu_cond_t cond,
			 u64 arg)
{
	unsigned long flags;
	bool ret;

	spin_lock_irqsave(&viommu->rq_lock, flags);
	viommu_reap(viommu);
	ret = cond(viommu, arg) ||
	      virtqueue_is_broken(viommu->vqs[VIOMMU_REQUEST_VQ]);
	spin_unlock_irqrestore(&viommu->rq_lock, flags);
	return ret;
}

/* Say that the device is late, once a wait passed one of its timeouts */
static void viommu_late(struct viommu_dev *viommu, u64 start)
{
	dev_warn_ratelimited(viommu->dev,
			     "device has not answered for %llu ms, still waiting\n",
			     div_u64(ktime_get_ns() - start, NSEC_PER_MSEC));
}

/*
 * viommu_wait() - wait for @cond, rq_lock held (and dropped while waiting)
 *
 * A caller that may sleep enables the request queue interrupt and sleeps;
 * any other caller polls, with the lock dropped (and its interrupts as they
 * were before it took the lock) between two looks. Either waits until
 * @cond holds or the request queue is broken: a request the device has not
 * answered is never taken as answered.
 * @combine lets the kick wait for other CPUs' requests (see viommu_kick()).
 *
 * Return: 0, or -ESHUTDOWN when the queue broke first (the device may still
 * hold the requests: their buffers must not be reused).
 */
static int viommu_wait(struct viommu_dev *viommu, viommu_cond_t cond, u64 arg,
		       bool may_sleep, bool combine, unsigned long *flags)
	__must_hold(&viommu->rq_lock)
{
	struct virtqueue *vq = viommu->vqs[VIOMMU_REQUEST_VQ];
	bool late = false;
	ktime_t deadline;
	u64 start;

	viommu_kick(viommu, combine ? VIOMMU_KICK_SYNC_COMBINE :
				      VIOMMU_KICK_SYNC);
	viommu_reap(viommu);
	if (cond(viommu, arg))
		return 0;

	start = ktime_get_ns();

	if (may_sleep) {
		viommu->stats.sleeps++;
		if (!viommu->sleepers++)
			virtqueue_enable_cb(vq);
		spin_unlock_irqrestore(&viommu->rq_lock, *flags);
		while (!wait_event_timeout(viommu->rq_wait,
					   viommu_check(viommu, cond, arg),
					   VIOMMU_SLEEP_TIMEOUT)) {
			late = true;
			viommu_late(viommu, start);
		}
		spin_lock_irqsave(&viommu->rq_lock, *flags);
		if (!--viommu->sleepers)
			virtqueue_disable_cb(vq);
		viommu_reap(viommu);
	} else {
		viommu->stats.polls++;
		deadline = ktime_add_us(ns_to_ktime(start),
					VIOMMU_POLL_TIMEOUT_US);
		/*
		 * Between two looks, pause for a microsecond, or less if
		 * another CPU reaps meanwhile (a notifier back from an exit
		 * that served our requests too): we see our answer at once,
		 * and CPUs whose kicks combined leave together.
		 */
		for (;;) {
			unsigned int reaps = viommu->reaps;

			spin_unlock_irqrestore(&viommu->rq_lock, *flags);
			viommu_spin_until(&viommu->reaps, reaps,
					  ktime_get_ns() + NSEC_PER_USEC);
			if (late) {
				/*
				 * A caller with interrupts off: no lockup
				 * report for a device that is only slow
				 */
				touch_nmi_watchdog();
			} else if (ktime_after(ktime_get(), deadline)) {
				late = true;
				viommu_late(viommu, start);
			}
			spin_lock_irqsave(&viommu->rq_lock, *flags);
			viommu_kick(viommu, VIOMMU_KICK_AGAIN);
			viommu_reap(viommu);
			if (cond(viommu, arg) || virtqueue_is_broken(vq))
				break;
		}
	}
	viommu->stats.answer_wait_ns += ktime_get_ns() - start;
	viommu->stats.late_waits += late;
	if (cond(viommu, arg))
		return 0;
	viommu->stats.gave_up++;
	dev_err_ratelimited(viommu->dev, "request queue is broken\n");
	return -ESHUTDOWN;
}

/* A free slot, rq_lock held (dropped while waiting for one). */
static struct viommu_slot *viommu_get_slot(struct viommu_dev *viommu,
					   bool may_sleep, unsigned long *flags)
	__must_hold(&viommu->rq_lock)
{
	int ret;

	/* Answers nobody waits for (posted requests) free their slots here */
	if (list_empty(&viommu->free_slots))
		viommu_reap(viommu);
	if (list_empty(&viommu->free_slots)) {
		viommu->stats.slot_waits++;
		ret = viommu_wait(viommu, viommu_slot_free, 0, may_sleep, false,
				  flags);
		if (ret)
			return ERR_PTR(ret);
	}
	return list_first_entry(&viommu->free_slots, struct viommu_slot, node);
}

/*
 * Queue the request in @slot without notifying the device; rq_lock held.
 * @slot->buf, len and write_len describe it.
 */
static int viommu_queue(struct viommu_dev *viommu, struct viommu_slot *slot,
			struct viommu_domain *vdomain)
{
	struct virtqueue *vq = viommu->vqs[VIOMMU_REQUEST_VQ];
	struct scatterlist out, in, *sgs[2] = { &out, &in };
	int ret;

	slot->type = ((struct virtio_iommu_req_head *)slot->buf)->type;
	slot->vdomain = vdomain;
	slot->done = false;
	sg_init_one(&out, slot->buf, slot->len - slot->write_len);
	sg_init_one(&in, slot->buf + slot->len - slot->write_len,
		    slot->write_len);
	ret = virtqueue_add_sgs(vq, sgs, 1, 1, slot, GFP_ATOMIC);
	if (ret) {
		dev_err_ratelimited(viommu->dev, "cannot queue a request: %d\n",
				    ret);
		return ret;
	}
	list_move_tail(&slot->node, &viommu->inflight);
	slot->seq = ++viommu->next_seq;
	viommu->unkicked++;
	if (slot->type < ARRAY_SIZE(viommu->stats.requests))
		viommu->stats.requests[slot->type]++;
	return 0;
}

/*
 * Wait for every request queued so far (by anyone) to complete; @combine as
 * for viommu_wait().
 */
int viommu_sync(struct viommu_dev *viommu, bool may_sleep, bool combine)
{
	unsigned long flags;
	int ret;

	spin_lock_irqsave(&viommu->rq_lock, flags);
	ret = viommu_wait(viommu, viommu_seq_done, viommu->next_seq, may_sleep,
			  combine, &flags);
	spin_unlock_irqrestore(&viommu->rq_lock, flags);
	return ret;
}

/*
 * viommu_send_sync() - send one request and wait for its answer (may sleep)
 * @viommu: the device
 * @req: a fixed-size request to copy into a slot, or NULL
 * @buf: with @req NULL, a buffer the request lives in (PROBE)
 * @len: size of the request, tail included
 * @write_len: size of its device-writable part
 *
 * Return: 0, the request's errno, or -ESHUTDOWN when the queue broke
 * before the answer: the request then stays with the device, and @buf must
 * not be reused.
 */
int viommu_send_sync(struct viommu_dev *viommu,
		     const union viommu_req_buf *req, void *buf,
		     size_t len, size_t write_len)
{
	struct viommu_slot *slot;
	unsigned long flags;
	int ret;

	might_sleep();
	spin_lock_irqsave(&viommu->rq_lock, flags);
	slot = viommu_get_slot(viommu, true, &flags);
	if (IS_ERR(slot)) {
		ret = PTR_ERR(slot);
		goto out_unlock;
	}
	if (req) {
		slot->req = *req;
		slot->buf = &slot->req;
	} else {
		slot->buf = buf;
	}
	slot->len = len;
	slot->write_len = write_len;
	slot->waited = true;
	ret = viommu_queue(viommu, slot, NULL);
	if (ret)
		goto out_unlock;
	ret = viommu_wait(viommu, viommu_slot_done, (uintptr_t)slot, true,
			  false, &flags);
	if (ret) {
		/* Abandoned: the completion returns the slot to the free list. */
		slot->waited = false;
		goto out_unlock;
	}
	ret = slot->result;
	slot->waited = false;
	list_add(&slot->node, &viommu->free_slots);
out_unlock:
	spin_unlock_irqrestore(&viommu->rq_lock, flags);
	return ret;
}

/*
 * Queueing a MAP or UNMAP fails on request (debugfs virtio-iommu/fail_queue,
 * see fault-injection.rst), as it does when the device broke the queue:
 * tests check that an UNMAP that could not be queued unmaps nothing.
 */
static DECLARE_FAULT_ATTR(viommu_fail_queue);

/**
 * viommu_queue_debugfs() - add the request queue's debugfs files
 * @root: the driver's debugfs directory
 */
void viommu_queue_debugfs(struct dentry *root)
{
	fault_create_debugfs_attr("fail_queue", root, &viommu_fail_queue);
}

/**
 * viommu_queue_req() - queue a MAP or UNMAP of @vdomain for the next sync
 * @vdomain: the domain; a failure of the request is reported on it
 * @req: the request, tail included
 * @len: its size
 *
 * The request is copied into a free slot (a few dozen bytes, from the
 * caller's stack: nothing is allocated). Without a free slot, the caller
 * polls until one is, for a bounded time.
 *
 * Return: 0, or the errno of a failed wait or of the virtqueue.
 */
int viommu_queue_req(struct viommu_domain *vdomain,
		     const union viommu_req_buf *req, size_t len)
{
	struct viommu_dev *viommu = vdomain->viommu;
	struct viommu_slot *slot;
	unsigned long flags;
	int ret;

	if (should_fail(&viommu_fail_queue, 1))
		return -EIO;

	spin_lock_irqsave(&viommu->rq_lock, flags);
	slot = viommu_get_slot(viommu, false, &flags);
	if (IS_ERR(slot)) {
		ret = PTR_ERR(slot);
		goto out_unlock;
	}
	memcpy(&slot->req, req, len);
	slot->buf = &slot->req;
	slot->waited = false;
	slot->len = len;
	slot->write_len = VIOMMU_TAIL_LEN;
	ret = viommu_queue(viommu, slot, vdomain);
out_unlock:
	spin_unlock_irqrestore(&viommu->rq_lock, flags);
	return ret;
}

/* Forget @vdomain in requests still in flight (it is going away). */
void viommu_forget_domain(struct viommu_dev *viommu,
			  struct viommu_domain *vdomain)
{
	struct viommu_slot *slot;
	unsigned long flags;

	spin_lock_irqsave(&viommu->rq_lock, flags);
	list_for_each_entry(slot, &viommu->inflight, node)
		if (slot->vdomain == vdomain)
			slot->vdomain = NULL;
	spin_unlock_irqrestore(&viommu->rq_lock, flags);
}

int viommu_init_slots(struct viommu_dev *viommu)
{
	struct virtqueue *vq = viommu->vqs[VIOMMU_REQUEST_VQ];
	unsigned int i;

	/* Two descriptors a request: the queue never runs out before us */
	viommu->nr_slots = min_t(unsigned int,
				 virtqueue_get_vring_size(vq) / 2,
				 VIOMMU_MAX_SLOTS);
	if (!viommu->nr_slots)
		return -EINVAL;
	viommu->slots = devm_kcalloc(viommu->dev, viommu->nr_slots,
				     sizeof(*viommu->slots), GFP_KERNEL);
	if (!viommu->slots)
		return -ENOMEM;
	for (i = 0; i < viommu->nr_slots; i++)
		list_add_tail(&viommu->slots[i].node, &viommu->free_slots);
	virtqueue_disable_cb(vq);
	return 0;
}
