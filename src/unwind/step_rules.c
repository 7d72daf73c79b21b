/* SPDX-License-Identifier: MIT */
/* The parts of a CFI step that every architecture's step shares. */
#include "unwind_internal.h"

/*
 * Rules name registers by number and read only the stack copy; nothing
 * here knows which register is which (the arch/<arch>.c steps call it).
 */

int sp__step_fail(struct sp__step_fail *fail, enum sp_sample_error error,
		  enum sp_unwind_fallback fallback)
{
	fail->error = error;
	fail->fallback = fallback;
	return -1;
}

bool sp__step_add_off(uint64_t base, int64_t off, uint64_t *out)
{
	uint64_t r = base + (uint64_t)off;

	if ((off >= 0 && r < base) || (off < 0 && r > base))
		return false;
	*out = r;
	return true;
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
		return sp__stack_read(stack, addr, out);
	case SP__RULE_VAL_CFA:
		return sp__step_add_off(cfa, rule->off, out) ? 0 : -1;
	case SP__RULE_REG:
		if (rule->reg >= SP__ARCH_NREGS ||
		    !(cur->valid & (1ull << rule->reg)))
			return 1;
		*out = cur->r[rule->reg];
		return 0;
	case SP__RULE_AT_EXPR:
		if (sp__cfi_expr_eval(table, (uint32_t)rule->off, cur, stack,
				      true, cfa, &addr))
			return -1;
		return sp__stack_read(stack, addr, out);
	case SP__RULE_VAL_EXPR:
		return sp__cfi_expr_eval(table, (uint32_t)rule->off, cur, stack,
					 true, cfa, out) ?
			       -1 :
			       0;
	default:
		return 1; /* undefined */
	}
}
