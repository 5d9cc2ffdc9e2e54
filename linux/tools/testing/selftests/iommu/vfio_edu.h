/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * QEMU's edu device through vfio-pci, for the tests that judge an IOMMU
 * by what the edu's DMA reaches: vfio_edu_dma (type1, iommufd) and
 * vfio_nested (a guest's stage 1 over a nesting container).
 */
#ifndef __SELFTEST_VFIO_EDU_H
#define __SELFTEST_VFIO_EDU_H

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <regex.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/pci_regs.h>
#include <linux/vfio.h>

#include "../kselftest_harness.h"

#define EDU_VENDOR	0x1234
#define EDU_DEVICE	0x11e8

/* edu registers (BAR0) */
#define EDU_ID		0x00	/* 0xRRrr00ed: major, minor revision */
#define EDU_LIVENESS	0x04	/* reads back the bitwise inverse */
#define EDU_DMA_SRC	0x80
#define EDU_DMA_DST	0x88
#define EDU_DMA_COUNT	0x90
#define EDU_DMA_CMD	0x98
#define EDU_CMD_RUN	0x1
#define EDU_CMD_TO_RAM	0x2	/* direction: edu buffer -> memory */
#define EDU_BUFFER	0x40000	/* device address of the internal buffer */

/*
 * QEMU 7.2 aborts on a transfer that ends exactly at the end of the 4 KiB
 * buffer (an off-by-one in its bound check), so stay well inside it.
 */
#define EDU_MAX_XFER	2048

/*
 * A transfer that faults is kept to one 4-byte access: QEMU reports a fault
 * per access, and the IOMMU drivers rate-limit their fault messages (ten per
 * five seconds), which a longer transfer would use up for the next test.
 */
#define EDU_FAULT_XFER	4

static char edu_bdf[NAME_MAX + 1];

static int find_edu(void)
{
	struct dirent *de;
	DIR *dir;

	dir = opendir("/sys/bus/pci/devices");
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		unsigned int vendor = 0, device = 0;
		char path[PATH_MAX];
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor",
			 de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%x", &vendor) != 1)
			vendor = 0;
		fclose(f);
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/device",
			 de->d_name);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%x", &device) != 1)
			device = 0;
		fclose(f);
		if (vendor == EDU_VENDOR && device == EDU_DEVICE) {
			snprintf(edu_bdf, sizeof(edu_bdf), "%s", de->d_name);
			closedir(dir);
			return 0;
		}
	}
	closedir(dir);
	return -ENODEV;
}

static int write_str(const char *path, const char *val)
{
	int fd = open(path, O_WRONLY);
	ssize_t ret;

	if (fd < 0)
		return -errno;
	ret = write(fd, val, strlen(val));
	close(fd);
	return ret < 0 ? -errno : 0;
}

/* Hand the device to vfio-pci unless it already has it. */
static int bind_vfio_pci(void)
{
	char path[PATH_MAX], drv[PATH_MAX];
	ssize_t len;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", edu_bdf);
	len = readlink(path, drv, sizeof(drv) - 1);
	if (len > 0) {
		drv[len] = '\0';
		if (!strcmp(strrchr(drv, '/') + 1, "vfio-pci"))
			return 0;
		snprintf(path, sizeof(path),
			 "/sys/bus/pci/devices/%s/driver/unbind", edu_bdf);
		if (write_str(path, edu_bdf))
			return -EIO;
	}
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver_override",
		 edu_bdf);
	if (write_str(path, "vfio-pci"))
		return -EIO;
	return write_str("/sys/bus/pci/drivers_probe", edu_bdf);
}

static int edu_iommu_group(void)
{
	char path[PATH_MAX], link[PATH_MAX];
	ssize_t len;

	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/iommu_group",
		 edu_bdf);
	len = readlink(path, link, sizeof(link) - 1);
	if (len <= 0)
		return -ENOENT;
	link[len] = '\0';
	return atoi(strrchr(link, '/') + 1);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/* Fill @buf with a pattern that no other buffer of the test carries. */
static void fill(uint8_t *buf, size_t len, uint32_t seed)
{
	size_t i;

	for (i = 0; i < len; i++) {
		seed = seed * 1103515245 + 12345;
		buf[i] = seed >> 16;
	}
}

/*
 * Map the edu's BAR 0 from the VFIO device @device and turn on memory
 * decode and bus mastering: without the latter, no DMA at all.
 */
static void open_bar(struct __test_metadata *_metadata, int device,
		     uint8_t **bar, size_t *bar_size)
{
	struct vfio_region_info reg = { .argsz = sizeof(reg) };
	uint16_t cmd;

	reg.index = VFIO_PCI_BAR0_REGION_INDEX;
	ASSERT_EQ(0, ioctl(device, VFIO_DEVICE_GET_REGION_INFO, &reg));
	ASSERT_TRUE(reg.flags & VFIO_REGION_INFO_FLAG_MMAP);
	*bar_size = reg.size;
	*bar = mmap(NULL, reg.size, PROT_READ | PROT_WRITE, MAP_SHARED,
		    device, reg.offset);
	ASSERT_NE(MAP_FAILED, *bar);

	reg.index = VFIO_PCI_CONFIG_REGION_INDEX;
	ASSERT_EQ(0, ioctl(device, VFIO_DEVICE_GET_REGION_INFO, &reg));
	ASSERT_EQ(2, pread(device, &cmd, 2, reg.offset + PCI_COMMAND));
	cmd |= PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER;
	ASSERT_EQ(2, pwrite(device, &cmd, 2, reg.offset + PCI_COMMAND));
}

static uint32_t rd32(uint8_t *bar, unsigned int off)
{
	return __atomic_load_n((uint32_t *)(bar + off), __ATOMIC_RELAXED);
}

static inline void wr32(uint8_t *bar, unsigned int off, uint32_t val)
{
	__atomic_store_n((uint32_t *)(bar + off), val, __ATOMIC_RELAXED);
}

static void wr64(uint8_t *bar, unsigned int off, uint64_t val)
{
	__atomic_store_n((uint64_t *)(bar + off), val, __ATOMIC_RELAXED);
}

/* Run one edu DMA and wait for it: edu completes after 100 ms of virtual time. */
static int edu_dma(uint8_t *bar, uint64_t src, uint64_t dst, uint64_t len,
		   bool to_ram)
{
	int i;

	wr64(bar, EDU_DMA_SRC, src);
	wr64(bar, EDU_DMA_DST, dst);
	wr64(bar, EDU_DMA_COUNT, len);
	wr64(bar, EDU_DMA_CMD, EDU_CMD_RUN | (to_ram ? EDU_CMD_TO_RAM : 0));
	for (i = 0; i < 500; i++) {
		if (!(rd32(bar, EDU_DMA_CMD) & EDU_CMD_RUN))
			return 0;
		sleep_ms(10);
	}
	return -ETIMEDOUT;
}

static int map_dma(int container, void *va, uint64_t iova, uint64_t size)
{
	struct vfio_iommu_type1_dma_map map = {
		.argsz = sizeof(map),
		.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
		.vaddr = (uintptr_t)va,
		.iova = iova,
		.size = size,
	};

	return ioctl(container, VFIO_IOMMU_MAP_DMA, &map) ? -errno : 0;
}

static int unmap_dma(int container, uint64_t iova, uint64_t size)
{
	struct vfio_iommu_type1_dma_unmap unmap = {
		.argsz = sizeof(unmap),
		.iova = iova,
		.size = size,
	};

	if (ioctl(container, VFIO_IOMMU_UNMAP_DMA, &unmap))
		return -errno;
	return unmap.size == size ? 0 : -EIO;
}

/*
 * What a fixture's teardown closes: the BAR mapping and the descriptors
 * it opened. A failed setup leaves any of them unset (NULL or -1).
 */
static void edu_close(uint8_t *bar, size_t bar_size, const int *fds,
		      unsigned int nr_fds)
{
	unsigned int i;

	if (bar && bar != MAP_FAILED)
		munmap(bar, bar_size);
	for (i = 0; i < nr_fds; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

/*
 * Wait up to two seconds for the IOMMU driver to log a translation fault
 * (it learns of it from a fault interrupt or an event queue).
 */
static bool fault_reported(int kmsg, char *seen, size_t seen_len)
{
	const char *pattern = getenv("EDU_FAULT_PATTERN");
	char rec[1024];
	regex_t re;
	int tries;

	seen[0] = '\0';
	if (regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB))
		return false;
	for (tries = 0; tries < 200; tries++) {
		ssize_t n = read(kmsg, rec, sizeof(rec) - 1);

		if (n < 0) {
			if (errno != EAGAIN && errno != EPIPE)
				break;
			if (errno == EAGAIN)
				sleep_ms(10);
			continue;
		}
		rec[n] = '\0';
		if (!regexec(&re, rec, 0, NULL, 0)) {
			const char *msg = strchr(rec, ';') ? strchr(rec, ';') + 1 : rec;
			size_t len = strcspn(msg, "\n");

			if (len >= seen_len)
				len = seen_len - 1;
			memcpy(seen, msg, len);
			seen[len] = '\0';
			regfree(&re);
			return true;
		}
	}
	regfree(&re);
	return false;
}

#endif /* __SELFTEST_VFIO_EDU_H */
