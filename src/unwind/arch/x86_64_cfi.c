/* SPDX-License-Identifier: MIT */
/* x86-64 rows of the CFI table: tracked registers, the packed rule set. */
#include "unwind_internal.h"

/*
 * What cfi_build.c asks of x86-64 (unwind_internal.h): a normal
 * (non-signal) row tracks RA, RBP, RBX and R12-R15, RA first; libdw
 * reports an unspecified RBX as undefined, while the psABI says
 * callee-saved registers keep their value; and a row whose rules fit
 * struct sp__cfi_rules (arch/x86_64_regs.h) is packed into it.
 */

const uint8_t sp__arch_tracked_regs[] = {
	SP_X86_64_RIP, SP_X86_64_RBP, 3, 12, 13, 14, 15
};
const size_t sp__arch_ntracked = sizeof(sp__arch_tracked_regs);

void sp__arch_rule_default(unsigned reg, struct sp__cfi_rule *rule)
{
	if (reg != SP_X86_64_RIP)
		rule->kind = SP__RULE_SAME;
}

/* Packs the rules into the rule set when they fit the simple shape. */
bool sp__arch_pack(const struct sp__cfi_extra *x, struct sp__cfi_rules *row)
{
	const struct sp__cfi_rule *ra = &x->rule[SP_X86_64_RIP];
	const struct sp__cfi_rule *bp = &x->rule[SP_X86_64_RBP];
	uint64_t saves, others = x->mask & ~((1u << SP_X86_64_RIP) |
					     (1u << SP_X86_64_RBP) | (1u << 3) |
					     (0xfu << 12));

	if (others || !sp__cfi_pack_saves(x, &saves))
		return false;
	row->saves = (uint32_t)saves; /* 5 fields of 6 bits */
	if (ra->kind == SP__RULE_UNDEF)
		row->flags |= SP__ROW_RA_UNDEF;
	else if (ra->kind == SP__RULE_AT_CFA && sp__cfi_small_off(ra))
		row->ra = (int8_t)(ra->off / 8);
	else
		return false;
	if (bp->kind == SP__RULE_UNDEF)
		row->flags |= SP__ROW_RBP_UNDEF;
	else if (bp->kind == SP__RULE_AT_CFA && sp__cfi_small_off(bp))
		row->flags |= SP__ROW_RBP_SAVED;
	else if (bp->kind != SP__RULE_SAME)
		return false;
	row->rbp = bp->kind == SP__RULE_AT_CFA ? (int8_t)(bp->off / 8) : 0;
	return true;
}

/* ld describes x86-64 PLT stubs in .eh_frame itself: nothing to add. */
int sp__arch_synth(const struct sp__mem *mem, Elf *elf, struct sp__vec *out)
{
	(void)mem;
	(void)elf;
	(void)out;
	return 0;
}
