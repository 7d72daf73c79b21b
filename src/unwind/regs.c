/* SPDX-License-Identifier: MIT */
/* Register sets by role, and the names of architectures. */
#include <errno.h>

#include "unwind_internal.h"

/*
 * The role of a register is the architecture's (SP__ARCH_PC, SP__ARCH_SP
 * and SP__ARCH_FP of arch/<arch>_regs.h); a build knows the numbering of
 * its own architecture only, which is all it unwinds.
 */

static const uint8_t role_reg[] = {
	[SP_REG_PC] = SP__ARCH_PC,
	[SP_REG_SP] = SP__ARCH_SP,
	[SP_REG_FP] = SP__ARCH_FP,
};

int sp_regs_get(const struct sp_regs *regs, enum sp_reg_role role,
		uint64_t *out)
{
	unsigned reg;

	if (!regs || !out || (unsigned)role >= sizeof(role_reg) ||
	    (regs->arch != SP_ARCH_NATIVE && regs->arch != SP__ARCH))
		return -EINVAL;
	reg = role_reg[role];
	if (!(regs->valid & (1ull << reg)))
		return -ENOENT;
	*out = regs->r[reg];
	return 0;
}

uint32_t sp_unwind_arch(void)
{
	return SP__ARCH;
}

const char *sp_arch_name(uint32_t arch)
{
	switch (arch == SP_ARCH_NATIVE ? SP__ARCH : arch) {
	case SP_ARCH_X86_64:
		return "x86_64";
	case SP_ARCH_AARCH64:
		return "aarch64";
	default:
		return NULL;
	}
}
