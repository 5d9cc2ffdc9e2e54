// SPDX-License-Identifier: GPL-2.0
/*
 * scatter_read: read a block device in 64 KiB direct requests whose 16
 * pages are scattered in memory, and write the bytes to stdout in the
 * device's order.
 *
 *   scatter_read DEV MIB
 *
 * Each request is one preadv() of 16 iovecs of 4 KiB over one 64 KiB
 * buffer, taken in the order 0, 8, 1, 9, ... 7, 15: neighbours in the
 * request are never neighbours in the buffer, so the block layer cannot
 * merge them (whether the buffer's pages are physically contiguous or
 * not) and the request's scatterlist has 16 data entries. The
 * ring-map-sg step counts what the IOMMU domain unmapped for them.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#define PAGE	4096
#define PAGES	16
#define REQ	(PAGE * PAGES)

/* Write a request's bytes to stdout in the device's order, via @out */
static int write_all(const struct iovec *iov, char *out)
{
	ssize_t done = 0, n;
	int i;

	for (i = 0; i < PAGES; i++)
		memcpy(out + i * PAGE, iov[i].iov_base, PAGE);
	while (done < REQ) {
		n = write(1, out + done, REQ - done);
		if (n <= 0)
			return -1;
		done += n;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct iovec iov[PAGES];
	long mib, reqs, r;
	static char out[REQ];
	char *buf;
	int fd, i;

	if (argc != 3) {
		fprintf(stderr, "usage: scatter_read DEV MIB\n");
		return 2;
	}
	mib = strtol(argv[2], NULL, 0);
	reqs = mib * (1024 * 1024 / REQ);
	fd = open(argv[1], O_RDONLY | O_DIRECT);
	if (fd < 0) {
		perror(argv[1]);
		return 1;
	}
	buf = mmap(NULL, REQ, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (buf == MAP_FAILED) {
		perror("mmap");
		return 1;
	}
	for (i = 0; i < PAGES; i++) {
		/* 0, 8, 1, 9, ...: no two neighbours adjacent */
		iov[i].iov_base = buf + ((i % 2) * (PAGES / 2) + i / 2) * PAGE;
		iov[i].iov_len = PAGE;
	}
	for (r = 0; r < reqs; r++) {
		if (preadv(fd, iov, PAGES, r * REQ) != REQ) {
			fprintf(stderr, "scatter_read: request %ld failed\n", r);
			return 1;
		}
		if (write_all(iov, out)) {
			perror("write");
			return 1;
		}
	}
	return 0;
}
