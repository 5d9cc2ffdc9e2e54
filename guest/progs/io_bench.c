// SPDX-License-Identifier: GPL-2.0
/*
 * io_bench: the guest side of `make bench-mmio` (testbed/bench.py).
 *
 *   io_bench rr ADDR PORT SECONDS    one-byte requests over TCP to a host
 *                                    that answers each with one byte
 *   io_bench randread DEV SECONDS    4 KiB O_DIRECT reads at random
 *                                    4 KiB-aligned offsets of DEV
 *   io_bench echo PORT               the answering side of rr, for a
 *                                    guest that serves another (the
 *                                    nested bed's L1): one connection at
 *                                    a time, every byte sent back, until
 *                                    killed
 *   io_bench trap PHYS SECONDS       32-bit reads of the device register
 *                                    at physical address PHYS (through
 *                                    /dev/mem), one after another: what
 *                                    one trapped register access costs
 *
 * Each prints one line, "bench-mmio: <mode> ops=N seconds=S": the host
 * computes the rates, so a line is consistent whatever its rounding.
 * One request at a time: what is measured is a round trip's latency, the
 * interrupt path included, not a throughput that batching could hide.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 4096

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int rr(const char *addr, int port, double seconds)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	double t0, t;
	long ops = 0;
	int fd, one = 1;
	char c = 'x';

	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "io_bench: bad address %s\n", addr);
		return 1;
	}
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("io_bench: connect");
		return 1;
	}
	/* Each request leaves at once, not when a timer or the next one says */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	t0 = now();
	do {
		if (write(fd, &c, 1) != 1 || read(fd, &c, 1) != 1) {
			perror("io_bench: round trip");
			return 1;
		}
		ops++;
	} while ((t = now()) - t0 < seconds);
	close(fd);
	printf("bench-mmio: rr ops=%ld seconds=%.3f\n", ops, t - t0);
	return 0;
}

static int randread(const char *dev, double seconds)
{
	unsigned long long size, blocks;
	unsigned int seed = 1;
	double t0, t;
	long ops = 0;
	void *buf;
	int fd;

	fd = open(dev, O_RDONLY | O_DIRECT);
	if (fd < 0 || ioctl(fd, BLKGETSIZE64, &size)) {
		perror("io_bench: open");
		return 1;
	}
	blocks = size / BLOCK;
	if (!blocks || posix_memalign(&buf, BLOCK, BLOCK)) {
		fprintf(stderr, "io_bench: %s is empty or no memory\n", dev);
		return 1;
	}
	t0 = now();
	do {
		off_t off = (off_t)(rand_r(&seed) % blocks) * BLOCK;

		if (pread(fd, buf, BLOCK, off) != BLOCK) {
			perror("io_bench: read");
			return 1;
		}
		ops++;
	} while ((t = now()) - t0 < seconds);
	close(fd);
	printf("bench-mmio: randread ops=%ld seconds=%.3f\n", ops, t - t0);
	return 0;
}

static int echo(int port)
{
	struct sockaddr_in sa = {
		.sin_family = AF_INET, .sin_port = htons(port),
		.sin_addr.s_addr = htonl(INADDR_ANY),
	};
	int lfd, fd, one = 1;
	char buf[256];
	ssize_t n;

	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 ||
	    setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 4)) {
		perror("io_bench: listen");
		return 1;
	}
	for (;;) {
		fd = accept(lfd, NULL, NULL);
		if (fd < 0)
			continue;
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		while ((n = read(fd, buf, sizeof(buf))) > 0)
			if (write(fd, buf, n) != n)
				break;
		close(fd);
	}
}

/*
 * The register is read where a driver reads it, so each read leaves the
 * guest's code for the device's emulation as the transport's own status
 * reads and acknowledgements do: the time a read takes is the price of
 * each trap the wired interrupt costs and MSI saves. A read-only register
 * (the transport's MagicValue, say) keeps the device's state as it was.
 */
static int trap(const char *phys, double seconds)
{
	unsigned long long addr = strtoull(phys, NULL, 0);
	long page = sysconf(_SC_PAGESIZE);
	volatile unsigned int *reg;
	unsigned int value = 0;
	double t0, t;
	long ops = 0;
	void *map;
	int fd, i;

	if (!addr || addr % 4) {
		fprintf(stderr, "io_bench: bad register address %s\n", phys);
		return 1;
	}
	/* O_SYNC: an uncached mapping, so every read reaches the device */
	fd = open("/dev/mem", O_RDONLY | O_SYNC);
	if (fd < 0) {
		perror("io_bench: /dev/mem");
		return 1;
	}
	map = mmap(NULL, page, PROT_READ, MAP_SHARED, fd, addr & ~(page - 1ULL));
	if (map == MAP_FAILED) {
		perror("io_bench: mmap");
		return 1;
	}
	reg = (volatile unsigned int *)((char *)map + (addr & (page - 1)));
	t0 = now();
	do {
		/* The clock read costs a trap's order itself: amortise it */
		for (i = 0; i < 1000; i++)
			value = *reg;
		ops += 1000;
	} while ((t = now()) - t0 < seconds);
	munmap(map, page);
	close(fd);
	/* The value read, for the host to check the address was the register */
	printf("bench-mmio: trap ops=%ld seconds=%.3f value=0x%x\n", ops, t - t0, value);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "rr"))
		return rr(argv[2], atoi(argv[3]), atof(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "randread"))
		return randread(argv[2], atof(argv[3]));
	if (argc == 3 && !strcmp(argv[1], "echo"))
		return echo(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "trap"))
		return trap(argv[2], atof(argv[3]));
	fprintf(stderr, "usage: io_bench rr ADDR PORT SECONDS\n"
			"       io_bench randread DEV SECONDS\n"
			"       io_bench echo PORT\n"
			"       io_bench trap PHYS SECONDS\n");
	return 2;
}
