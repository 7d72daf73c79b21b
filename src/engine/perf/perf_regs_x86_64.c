/* SPDX-License-Identifier: MIT */
/* perf's x86-64 register indices in DWARF numbering. */
#include <stdint.h>

#include "perf_record.h"

/* perf x86 index -> DWARF number; -1 for FLAGS, CS, SS, DS..GS. */
const int8_t sp__perf_regs_dwarf[SP__PERF_REGS_N] = {
	SP_X86_64_RAX,
	SP_X86_64_RBX,
	SP_X86_64_RCX,
	SP_X86_64_RDX,
	SP_X86_64_RSI,
	SP_X86_64_RDI,
	SP_X86_64_RBP,
	SP_X86_64_RSP,
	SP_X86_64_RIP,
	-1,
	-1,
	-1,
	-1,
	-1,
	-1,
	-1,
	8,
	9,
	10,
	11,
	12,
	13,
	14,
	15,
};
