// SPDX-License-Identifier: GPL-2.0-only
/*
 * vhost-iommu: counters in debugfs.
 *
 * /sys/kernel/debug/vhost-iommu/<n>/stats describes open device n: what it
 * served, how its lookups went, and its endpoints (the domain each is in,
 * in which mode, and who does its DMA).  /sys/kernel/debug/vhost-iommu/totals
 * adds up the counters of every device since the module loaded, closed
 * ones included, so that a test can read them once its VMM has exited.
 * Debugfs, not uAPI: the names may change.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>

#include "iommu.h"

struct vhost_iommu_stats vhost_iommu_totals;

static struct dentry *vhost_iommu_debugfs_root;
static atomic_t vhost_iommu_debugfs_seq = ATOMIC_INIT(0);

static const char * const vhost_iommu_req_names[] = {
	[0] = "unanswered",
	[VIRTIO_IOMMU_T_ATTACH] = "attach",
	[VIRTIO_IOMMU_T_DETACH] = "detach",
	[VIRTIO_IOMMU_T_MAP] = "map",
	[VIRTIO_IOMMU_T_UNMAP] = "unmap",
	[VIRTIO_IOMMU_T_PROBE] = "probe",
	[VIRTIO_IOMMU_T_ATTACH_TABLE] = "attach_table",
	[VIRTIO_IOMMU_T_INVALIDATE] = "invalidate",
};

static_assert(ARRAY_SIZE(vhost_iommu_req_names) ==
	      ARRAY_SIZE(((struct vhost_iommu_stats *)0)->requests));

static void vhost_iommu_show_stats(struct seq_file *s,
				   struct vhost_iommu_stats *st)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(st->requests); i++)
		seq_printf(s, "%s %lld\n", vhost_iommu_req_names[i],
			   atomic64_read(&st->requests[i]));
	seq_printf(s, "failed %lld\n", atomic64_read(&st->failed));
	seq_printf(s, "fetches %lld\nfetched %lld\n",
		   atomic64_read(&st->fetches), atomic64_read(&st->fetched));
	seq_printf(s, "misses %lld\nmiss_faults %lld\n",
		   atomic64_read(&st->misses), atomic64_read(&st->miss_faults));
	seq_printf(s, "translates %lld\ntranslate_faults %lld\n",
		   atomic64_read(&st->translates),
		   atomic64_read(&st->translate_faults));
	seq_printf(s, "busy_polls %lld\nbusy_poll_hits %lld\n",
		   atomic64_read(&st->busy_polls),
		   atomic64_read(&st->busy_poll_hits));
	seq_printf(s, "serve_ns %lld\n", atomic64_read(&st->serve_ns));
}

static const char *vhost_iommu_ep_mode(struct vhost_iommu *v,
				       struct vhost_iommu_ep *ep)
{
	if (!ep->domain)
		return v->cfg.bypass ? "bypass" : "blocked";
	if (ep->domain->bypass)
		return "bypass";
	return ep->domain->table ? "table" : "map";
}

static int vhost_iommu_stats_show(struct seq_file *s, void *unused)
{
	struct vhost_iommu *v = s->private;
	struct vhost_iommu_ep *ep;
	unsigned long id;
	bool posted;

	vhost_iommu_show_stats(s, &v->stats);
	mutex_lock(&v->lock);
	posted = vhost_iommu_acked(v, VIRTIO_IOMMU_F_POSTED_MAP);
	seq_printf(s, "running %d\nposted_map %d\ntable_sharing %d\n",
		   v->running, posted,
		   vhost_iommu_acked(v, VIRTIO_IOMMU_F_ATTACH_TABLE));
	seq_printf(s, "domains %u\nmappings %lu\ntable_pages %ld\n",
		   v->nr_domains, v->nr_mappings, v->nr_table_pages);
	seq_printf(s, "faults_waiting %u\nfaults_dropped %lu\n",
		   READ_ONCE(v->nr_faults), READ_ONCE(v->faults_dropped));
	xa_for_each(&v->endpoints, id, ep) {
		seq_printf(s, "endpoint %u domain=", ep->id);
		if (ep->domain)
			seq_printf(s, "%u", ep->domain->id);
		else
			seq_puts(s, "none");
		seq_printf(s, " mode=%s dma=%s posted=%s\n",
			   vhost_iommu_ep_mode(v, ep),
			   ep->binding ? "vhost" : ep->vfio ? "vfio" : "lookups",
			   posted && !(ep->flags & VHOST_IOMMU_EP_F_NO_POSTED_MAP) ?
			   "yes" : "no");
	}
	mutex_unlock(&v->lock);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vhost_iommu_stats);

static int vhost_iommu_totals_show(struct seq_file *s, void *unused)
{
	vhost_iommu_show_stats(s, &vhost_iommu_totals);
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(vhost_iommu_totals);

/**
 * vhost_iommu_debugfs_add() - give an open device its directory
 * @v: the device
 */
void vhost_iommu_debugfs_add(struct vhost_iommu *v)
{
	char name[16];

	snprintf(name, sizeof(name), "%d",
		 atomic_inc_return(&vhost_iommu_debugfs_seq));
	v->debugfs = debugfs_create_dir(name, vhost_iommu_debugfs_root);
	debugfs_create_file("stats", 0400, v->debugfs, v,
			    &vhost_iommu_stats_fops);
}

/**
 * vhost_iommu_debugfs_remove() - take a closing device's directory away
 * @v: the device
 */
void vhost_iommu_debugfs_remove(struct vhost_iommu *v)
{
	debugfs_remove_recursive(v->debugfs);
}

void vhost_iommu_debugfs_init(void)
{
	vhost_iommu_debugfs_root = debugfs_create_dir("vhost-iommu", NULL);
	debugfs_create_file("totals", 0400, vhost_iommu_debugfs_root, NULL,
			    &vhost_iommu_totals_fops);
}

void vhost_iommu_debugfs_exit(void)
{
	debugfs_remove_recursive(vhost_iommu_debugfs_root);
}
