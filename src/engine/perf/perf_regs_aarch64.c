/* SPDX-License-Identifier: MIT */
/* perf's AArch64 register indices in DWARF numbering. */
#include <stdint.h>

#include "perf_record.h"

/*
 * PERF_REG_ARM64_X0..X28, X29, LR, SP, PC are 0..32: the DWARF numbers
 * of X0-X30 and SP, and SP_AARCH64_PC for the pc (AADWARF64).
 */
const int8_t sp__perf_regs_dwarf[SP__PERF_REGS_N] = {
	0,  1,	2,  3,	4,  5,	6,  7,	8,  9,	10, 11, 12, 13, 14, 15, 16,
	17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32,
};
