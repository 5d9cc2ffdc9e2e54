// SPDX-License-Identifier: GPL-2.0
/*
 * kprof: where a guest's CPUs spend their time, by kernel function.
 *
 *   kprof SECONDS [TOP]
 *
 * Samples every online CPU's instruction pointer with the software
 * cpu-clock perf event (1000 samples a second a CPU) for SECONDS, then
 * names each kernel sample's function from /proc/kallsyms and prints the
 * TOP (default 30) functions, most samples first:
 *
 *   kprof: samples=N user=U idle=I
 *   kprof: 12.5% 625 function [module]
 *
 * Samples taken in user space count as "user", those in the idle loop
 * (default_idle and its kin) as "idle". Under TCG, where the guest has no
 * PMU and perf(1) is not in the initramfs, this is the profile `make
 * bench-throughput` can give of the guest's own code: the host's profile of
 * QEMU sees only translated blocks.
 */
#define _GNU_SOURCE
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define RING_PAGES	64
#define MAX_CPUS	64
#define MAX_IPS		(1 << 20)

struct sym {
	uint64_t addr;
	char name[168];
	uint64_t hits;
};

struct ring {
	int fd;
	struct perf_event_mmap_page *meta;
	char *data;
	size_t size;
};

static uint64_t *ips;
static size_t nr_ips;
static uint64_t user_hits;

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static int open_ring(struct ring *r, int cpu)
{
	struct perf_event_attr attr = {
		.type = PERF_TYPE_SOFTWARE,
		.size = sizeof(attr),
		.config = PERF_COUNT_SW_CPU_CLOCK,
		.sample_freq = 1000,
		.freq = 1,
		.sample_type = PERF_SAMPLE_IP,
		.disabled = 1,
		.exclude_hv = 1,
	};
	long page = sysconf(_SC_PAGESIZE);
	void *p;

	r->fd = syscall(SYS_perf_event_open, &attr, -1, cpu, -1, 0);
	if (r->fd < 0)
		return -1;
	r->size = RING_PAGES * page;
	p = mmap(NULL, r->size + page, PROT_READ | PROT_WRITE, MAP_SHARED, r->fd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	r->meta = p;
	r->data = (char *)p + page;
	return 0;
}

/* Take every sample the kernel has written to @r since the last call. */
static void drain(struct ring *r)
{
	uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->meta->data_tail;

	while (tail < head) {
		struct perf_event_header hdr;
		size_t off = tail % r->size;
		uint64_t ip;
		size_t i;
		char rec[64];

		/* a record may wrap around the end of the ring: copy it out */
		for (i = 0; i < sizeof(hdr); i++)
			((char *)&hdr)[i] = r->data[(off + i) % r->size];
		if (hdr.size < sizeof(hdr))
			break;
		if (hdr.type == PERF_RECORD_SAMPLE && hdr.size <= sizeof(rec)) {
			for (i = 0; i < hdr.size; i++)
				rec[i] = r->data[(off + i) % r->size];
			memcpy(&ip, rec + sizeof(hdr), sizeof(ip));
			if ((hdr.misc & PERF_RECORD_MISC_CPUMODE_MASK) ==
			    PERF_RECORD_MISC_KERNEL) {
				if (nr_ips < MAX_IPS)
					ips[nr_ips++] = ip;
			} else {
				user_hits++;
			}
		}
		tail += hdr.size;
	}
	__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
}

static int by_addr(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int by_hits(const void *a, const void *b)
{
	const struct sym *x = a, *y = b;

	return x->hits > y->hits ? -1 : x->hits < y->hits;
}

static struct sym *load_kallsyms(size_t *nr)
{
	FILE *f = fopen("/proc/kallsyms", "r");
	size_t cap = 1 << 16, n = 0;
	struct sym *syms = malloc(cap * sizeof(*syms));
	char line[256], type, name[80], mod[80];
	unsigned long long addr;

	if (!f || !syms)
		die("/proc/kallsyms");
	while (fgets(line, sizeof(line), f)) {
		int fields = sscanf(line, "%llx %c %79s %79s", &addr, &type, name, mod);

		if (fields < 3 || !addr)
			continue;
		if (type != 't' && type != 'T')
			continue;
		if (n == cap) {
			cap *= 2;
			syms = realloc(syms, cap * sizeof(*syms));
			if (!syms)
				die("realloc");
		}
		syms[n].addr = addr;
		syms[n].hits = 0;
		snprintf(syms[n].name, sizeof(syms[n].name), "%s%s%s", name,
			 fields == 4 ? " " : "", fields == 4 ? mod : "");
		n++;
	}
	fclose(f);
	qsort(syms, n, sizeof(*syms), by_addr);
	*nr = n;
	return syms;
}

/* The function holding @ip: the last symbol at or below it. */
static struct sym *lookup(struct sym *syms, size_t n, uint64_t ip)
{
	size_t lo = 0, hi = n;

	if (!n || ip < syms[0].addr)
		return NULL;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;

		if (syms[mid].addr <= ip)
			lo = mid;
		else
			hi = mid;
	}
	return &syms[lo];
}

static int is_idle(const char *name)
{
	static const char *const idle[] = {
		"default_idle", "pv_native_safe_halt", "native_safe_halt",
		"acpi_safe_halt", "acpi_idle_do_entry", "mwait_idle",
	};
	size_t i;

	for (i = 0; i < sizeof(idle) / sizeof(idle[0]); i++)
		if (!strncmp(name, idle[i], strlen(idle[i])))
			return 1;
	return 0;
}

int main(int argc, char **argv)
{
	struct ring rings[MAX_CPUS];
	int nr_rings = 0, cpus, top, cpu, i;
	uint64_t idle = 0, total;
	struct timespec tick = { 0, 50 * 1000 * 1000 };
	double seconds, waited = 0;
	struct sym *syms;
	size_t nr_syms, k;

	if (argc < 2) {
		fprintf(stderr, "usage: kprof SECONDS [TOP]\n");
		return 2;
	}
	seconds = atof(argv[1]);
	top = argc > 2 ? atoi(argv[2]) : 30;
	ips = malloc(MAX_IPS * sizeof(*ips));
	if (!ips)
		die("malloc");
	cpus = sysconf(_SC_NPROCESSORS_ONLN);
	for (cpu = 0; cpu < cpus && nr_rings < MAX_CPUS; cpu++)
		if (!open_ring(&rings[nr_rings], cpu))
			nr_rings++;
	if (!nr_rings)
		die("perf_event_open");
	for (i = 0; i < nr_rings; i++)
		ioctl(rings[i].fd, PERF_EVENT_IOC_ENABLE, 0);
	while (waited < seconds) {
		nanosleep(&tick, NULL);
		waited += 0.05;
		for (i = 0; i < nr_rings; i++)
			drain(&rings[i]);
	}
	for (i = 0; i < nr_rings; i++) {
		ioctl(rings[i].fd, PERF_EVENT_IOC_DISABLE, 0);
		drain(&rings[i]);
	}

	syms = load_kallsyms(&nr_syms);
	for (k = 0; k < nr_ips; k++) {
		struct sym *s = lookup(syms, nr_syms, ips[k]);

		if (s && is_idle(s->name))
			idle++;
		else if (s)
			s->hits++;
	}
	qsort(syms, nr_syms, sizeof(*syms), by_hits);
	total = nr_ips + user_hits;
	printf("kprof: samples=%llu user=%llu idle=%llu\n",
	       (unsigned long long)total, (unsigned long long)user_hits,
	       (unsigned long long)idle);
	for (k = 0; k < nr_syms && (int)k < top && syms[k].hits; k++)
		printf("kprof: %5.1f%% %llu %s\n",
		       total ? 100.0 * syms[k].hits / total : 0.0,
		       (unsigned long long)syms[k].hits, syms[k].name);
	return 0;
}
