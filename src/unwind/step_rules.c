/* SPDX-License-Identifier: MIT */
/* The parts of a CFI step that every architecture's step shares. */
#include "unwind_internal.h"

/*
 * Rules name registers by number and read only the stack copy; nothing
 * here knows which register is which (the arch/<arch>.c steps call it).
 *
 * A callee-saved register's slot is treated by where it lies, on every
 * architecture:
 *
 *   above the copy's end   not copied: the frame pointer fails the step
 *                          (truncated), other registers become unknown
 *   inside the copy        read
 *   below the copy's start below the sampled SP, so below the SP of every
 *                          frame of this stack: the slot is dead, its
 *                          function has already restored the register (an
 *                          epilogue, where the CFI of GCC and Clang on
 *                          x86-64 still names the slot after the pop), so
 *                          the register holds the caller's value: kept
 *                          (SP__SLOT_RESTORED)
 *
 * A frame's own slots lie at or above its SP except in an epilogue, and
 * only the leaf (or a frame a signal interrupted, whose popped slots the
 * kernel leaves intact in the red zone, inside the copy) can be in one.
 * A return address's slot below the copy is a failure like one past it:
 * the architecture step decides (the caller's pc is never "kept").
 */

int sp__step_fail(struct sp__step_fail *fail, enum sp_sample_error error,
		  enum sp_unwind_fallback fallback)
{
	fail->error = error;
	fail->fallback = fallback;
	return -1;
}

int sp__step_read_at(const struct sp__stack *stack, uint64_t cfa, int64_t off,
		     uint64_t *out, struct sp__step_fail *fail,
		     enum sp_unwind_fallback fallback)
{
	uint64_t addr;

	if (!sp__step_add_off(cfa, off, &addr))
		return sp__step_fail(fail, SP_SAMPLE_ERR_INTEGER_OVERFLOW,
				     fallback);
	if (sp__stack_read(stack, addr, out))
		return sp__step_fail(fail, SP_SAMPLE_ERR_STACK_TRUNCATED,
				     fallback);
	return 0;
}

int sp__step_read_saved(const struct sp__stack *stack, uint64_t addr,
			uint64_t *out)
{
	if (addr < stack->addr)
		return SP__SLOT_RESTORED;
	return sp__stack_read(stack, addr, out);
}

int sp__step_read_fp_at(const struct sp__stack *stack, uint64_t cfa,
			int64_t off, uint64_t *out, struct sp__step_fail *fail)
{
	uint64_t addr;
	int r;

	if (!sp__step_add_off(cfa, off, &addr))
		return sp__step_fail(fail, SP_SAMPLE_ERR_INTEGER_OVERFLOW,
				     SP_FALLBACK_DWARF_NO_FRAME_POINTER);
	r = sp__step_read_saved(stack, addr, out);
	if (r < 0)
		return sp__step_fail(fail, SP_SAMPLE_ERR_STACK_TRUNCATED,
				     SP_FALLBACK_DWARF_NO_FRAME_POINTER);
	return r;
}

int sp__step_rule_value(const struct sp__cfi_table *table,
			const struct sp__cfi_rule *rule,
			const struct sp__stack *stack,
			const struct sp_regs *cur, uint64_t cfa, uint64_t *out)
{
	uint64_t addr;

	switch (rule->kind) {
	case SP__RULE_AT_CFA:
		if (!sp__step_add_off(cfa, rule->off, &addr))
			return -1;
		return sp__step_read_saved(stack, addr, out);
	case SP__RULE_VAL_CFA:
		return sp__step_add_off(cfa, rule->off, out) ? 0 : -1;
	case SP__RULE_REG:
		if (rule->reg >= SP__ARCH_NREGS ||
		    !(cur->valid & (1ull << rule->reg)))
			return SP__RULE_UNKNOWN;
		*out = cur->r[rule->reg];
		return 0;
	case SP__RULE_AT_EXPR:
		if (sp__cfi_expr_eval(table, (uint32_t)rule->off, cur, stack,
				      true, cfa, &addr))
			return -1;
		return sp__step_read_saved(stack, addr, out);
	case SP__RULE_VAL_EXPR:
		return sp__cfi_expr_eval(table, (uint32_t)rule->off, cur, stack,
					 true, cfa, out) ?
			       -1 :
			       0;
	default:
		return SP__RULE_UNKNOWN; /* undefined */
	}
}

/*
 * The packed saves (sp__cfi_saved_reg(k) at CFA - 8n) of a rule set near
 * the copy's edges, slot by slot: past the copy's end the register
 * becomes unknown in the caller rather than failing the step (only the
 * return address and the frame pointer are essential), below its start
 * it keeps its value (popped already).
 */
void sp__arch_saves_checked(uint64_t saves, const struct sp__stack *stack,
			    uint64_t cfa, struct sp_regs *next)
{
	unsigned k, n, reg;
	int r;

	for (k = 0; saves; k++, saves >>= SP__SAVE_BITS) {
		n = (unsigned)(saves & SP__SAVE_MAX);
		if (!n)
			continue;
		reg = sp__cfi_saved_reg(k);
		r = cfa >= 8 * n ? sp__step_read_saved(stack, cfa - 8 * n,
						       &next->r[reg]) :
				   -1;
		if (r == 0)
			next->valid |= SP__REG_BIT(reg);
		else if (r < 0)
			next->valid &= ~SP__REG_BIT(reg);
	}
}
