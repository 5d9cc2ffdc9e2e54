/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * vhost-iommu selftests: fault injection (fail-nth), for
 * vhost_iommu_limits.c and vhost_iommu_vfio.c.
 *
 * Fault injection: every allocation on the ioctl and the request paths
 * fails once in turn, through fail-nth (Documentation/fault-injection/),
 * as iommufd_fail_nth does.  The ioctls run in this thread; requests run in
 * the device's vhost worker, a thread of this process, whose own fail-nth
 * file arms it.  Every failure must come back as ENOMEM or NOMEM and change
 * nothing, with no WARN or leak (the debug kernel's KASAN and kmemleak
 * watch), and the queue must keep answering.
 *
 * Needs CONFIG_FAULT_INJECTION, CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC and
 * CONFIG_FAULT_INJECTION_DEBUG_FS; skipped without them unless
 * VHOST_IOMMU_NEED_FAIL_NTH=1 (the debug scenario) says they must be there.
 */
#ifndef __SELFTEST_VHOST_IOMMU_FAIL_NTH_H
#define __SELFTEST_VHOST_IOMMU_FAIL_NTH_H

#include "vhost_iommu_utils.h"

#define FAIL_NTH_MAX	400

/* Let every allocation fail, quietly: 0, or -1 without fault injection. */
static int fail_nth_setup(struct __test_metadata *_metadata)
{
	static const char *const quiet[] = {
		"/sys/kernel/debug/failslab/verbose",
		"/sys/kernel/debug/fail_page_alloc/verbose",
	};
	const char *need = getenv("VHOST_IOMMU_NEED_FAIL_NTH");
	unsigned int i;

	if (access("/proc/self/fail-nth", F_OK) ||
	    write_file("/sys/kernel/debug/failslab/ignore-gfp-wait", "N") ||
	    write_file("/sys/kernel/debug/fail_page_alloc/ignore-gfp-wait", "N") ||
	    write_file("/sys/kernel/debug/fail_page_alloc/ignore-gfp-highmem", "N") ||
	    /* page tables are single pages: order 0 as well */
	    write_file("/sys/kernel/debug/fail_page_alloc/min-order", "0")) {
		if (need && *need == '1') {
			TH_LOG("no fail-nth or no failslab/fail_page_alloc in debugfs");
			return -2;
		}
		return -1;
	}
	for (i = 0; i < ARRAY_SIZE(quiet); i++)
		write_file(quiet[i], "0");
	return 0;
}

static int open_fail_nth(pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/task/%d/fail-nth", tid);
	return open(path, O_RDWR);
}

/* Arm @fd to fail the @n-th fault site from now on; 0 disarms. */
static void fail_nth_set(struct __test_metadata *_metadata, int fd,
			 unsigned int n)
{
	char buf[16];

	snprintf(buf, sizeof(buf), "%u", n);
	ASSERT_EQ((ssize_t)strlen(buf), pwrite(fd, buf, strlen(buf), 0));
}

/* Whether the armed failure happened (the count reached 0); disarms. */
static int fail_nth_hit(struct __test_metadata *_metadata, int fd)
{
	char buf[16] = "";
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	ASSERT_LT(0, n);
	fail_nth_set(_metadata, fd, 0);
	return atoi(buf) == 0;
}

/* The thread id of the vhost worker of the device this process owns */
static pid_t vhost_worker_tid(void)
{
	char path[300], comm[32], want[32];
	struct dirent *de;
	pid_t tid = -1;
	DIR *d;
	int fd;

	snprintf(want, sizeof(want), "vhost-%d\n", getpid());
	d = opendir("/proc/self/task");
	if (!d)
		return -1;
	while ((de = readdir(d))) {
		ssize_t n;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 de->d_name);
		fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		n = read(fd, comm, sizeof(comm) - 1);
		close(fd);
		comm[n > 0 ? n : 0] = 0;
		if (!strcmp(comm, want))
			tid = atoi(de->d_name);
	}
	closedir(d);
	return tid;
}

#endif
