// SPDX-License-Identifier: GPL-2.0-only
/*
 * The generic page table algorithms for the ARMv8 long descriptor format
 * with the 64K granule.
 */
#define ARMV8_GSHIFT 16
#define PTF_PREFIX armv8_64k
#include "fmt_armv8.h"
