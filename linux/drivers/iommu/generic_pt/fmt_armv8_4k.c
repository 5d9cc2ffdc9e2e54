// SPDX-License-Identifier: GPL-2.0-only
/*
 * The generic page table algorithms for the ARMv8 long descriptor format
 * with the 4K granule.
 */
#define ARMV8_GSHIFT 12
#define PTF_PREFIX armv8_4k
#include "fmt_armv8.h"
