/* SPDX-License-Identifier: MIT */
/* The x86-64 unwind step: apply a CFI row or follow the frame pointer. */
#include <errno.h>

#include "unwind_internal.h"

/*
 * Registers are in DWARF numbering (struct sp_regs). One step turns the
 * registers of a frame into its caller's:
 *
 *   CFA  = reg + off, or an expression (PLT, signal trampoline)
 *   RIP' = *(CFA + ra)           RSP' = CFA
 *   RBP' = RBP | *(CFA + rbp)    RBX', R12'-R15' = same | *(CFA - 8n)
 *
 * Caller-saved registers are unknown in the caller (their valid bits are
 * cleared) unless a rule restores them, which only signal frames do: the
 * kernel saved every register in the ucontext on the stack.
 *
 * Memory comes only from the stack copy, which starts at the sampled RSP.
 * A return address outside it is SP_SAMPLE_ERR_STACK_TRUNCATED. A
 * callee-saved register's slot past the copy's end fails the step for
 * RBP (truncated) and makes RBX and R12-R15 unknown; a slot below the
 * copy's start (an epilogue after the pop: GCC's and Clang's CFI still
 * name it) keeps the register's value (step_rules.c).
 * The CFA of a normal frame must be above
 * the callee's RSP (the call pushed the return address), which is what
 * makes every walk end: the stack pointer strictly increases. A signal
 * frame may jump anywhere (the handler may run on an alternate stack), so
 * it is exempt; the depth cap bounds a chain of those.
 *
 * The frame-pointer step reads the record [RBP] = caller's RBP, [RBP + 8]
 * = return address, and requires RBP inside the copy, 8-byte aligned and
 * not below RSP, so garbage registers do not invent frames.
 */

int sp__arch_check_regs(const struct sp_regs *regs, enum sp_sample_error *error)
{
	if (regs->abi == SP_REGS_ABI_NONE) {
		*error = SP_SAMPLE_ERR_USER_REGISTERS_MISSING;
		return -1;
	}
	/* A 32-bit task's registers never enter the 64-bit unwinder. */
	if (regs->abi != SP_REGS_ABI_64 ||
	    (regs->valid & SP__PC_SP) != SP__PC_SP) {
		*error = SP_SAMPLE_ERR_REGISTER_CAPTURE;
		return -1;
	}
	if (regs->r[SP_X86_64_RIP] == 0) {
		*error = SP_SAMPLE_ERR_RETURN_ADDRESS_NULL;
		return -1;
	}
	return 0;
}

/* Starts the caller's registers: callee-saved ones carry over. */
static void carry_callee_saved(const struct sp_regs *cur, struct sp_regs *next)
{
	next->r[3] = cur->r[3];
	next->r[SP_X86_64_RBP] = cur->r[SP_X86_64_RBP];
	next->r[12] = cur->r[12];
	next->r[13] = cur->r[13];
	next->r[14] = cur->r[14];
	next->r[15] = cur->r[15];
	next->valid = cur->valid & SP__CALLEE_SAVED;
	next->abi = cur->abi;
}

static int compute_cfa(const struct sp__cfi_table *table,
		       const struct sp__cfi_rules *row,
		       const struct sp__stack *stack, const struct sp_regs *cur,
		       uint64_t *cfa, struct sp__step_fail *fail)
{
	int err;

	if (__builtin_expect(row->cfa_reg == SP__CFA_EXPR, 0)) {
		err = sp__cfi_expr_eval(table, (uint32_t)row->cfa_off, cur,
					stack, false, 0, cfa);
		if (err == -ERANGE)
			return sp__step_fail(fail,
					     SP_SAMPLE_ERR_STACK_TRUNCATED,
					     SP_FALLBACK_DWARF_NO_CFA);
		if (err)
			return sp__step_fail(fail,
					     SP_SAMPLE_ERR_REGISTER_CAPTURE,
					     SP_FALLBACK_DWARF_NO_CFA);
		return 0;
	}
	if (row->cfa_reg >= SP_X86_64_NREGS ||
	    !(cur->valid & SP__REG_BIT(row->cfa_reg)))
		return sp__step_fail(fail, SP_SAMPLE_ERR_REGISTER_CAPTURE,
				     SP_FALLBACK_DWARF_NO_CFA);
	if (!sp__step_add_off(cur->r[row->cfa_reg], row->cfa_off, cfa))
		return sp__step_fail(fail, SP_SAMPLE_ERR_INTEGER_OVERFLOW,
				     SP_FALLBACK_DWARF_NO_CFA);
	return 0;
}

static int apply_extra(const struct sp__cfi_table *table,
		       const struct sp__cfi_extra *x,
		       const struct sp__stack *stack, const struct sp_regs *cur,
		       uint64_t cfa, struct sp_regs *next,
		       struct sp__step_fail *fail)
{
	uint32_t todo;
	uint64_t v;
	unsigned reg;
	int r;

	if (!(x->mask & SP__REG_BIT(SP_X86_64_RIP)))
		return sp__step_fail(fail, SP_SAMPLE_ERR_DID_NOT_ADVANCE,
				     SP_FALLBACK_DWARF_NO_RETURN_ADDRESS);
	if (x->rule[SP_X86_64_RIP].kind == SP__RULE_UNDEF)
		return SP__STEP_END;
	for (todo = x->mask & ~SP__REG_BIT(SP_X86_64_RSP); todo;
	     todo &= todo - 1) {
		reg = (unsigned)__builtin_ctz(todo);
		if (reg >= SP_X86_64_NREGS)
			break;
		r = sp__step_rule_value(table, &x->rule[reg], stack, cur, cfa,
					&v);
		/* A return address is never popped ahead of the return: a
		 * slot below the copy is as unreadable as one past it. */
		if ((r < 0 || r == SP__SLOT_RESTORED) && reg == SP_X86_64_RIP)
			return sp__step_fail(
				fail, SP_SAMPLE_ERR_STACK_TRUNCATED,
				SP_FALLBACK_DWARF_NO_RETURN_ADDRESS);
		if (r < 0 && reg == SP_X86_64_RBP)
			return sp__step_fail(
				fail, SP_SAMPLE_ERR_STACK_TRUNCATED,
				SP_FALLBACK_DWARF_NO_FRAME_POINTER);
		/* RA in a register that was not captured: no caller. */
		if (r > 0 && reg == SP_X86_64_RIP)
			return sp__step_fail(
				fail, SP_SAMPLE_ERR_REGISTER_CAPTURE,
				SP_FALLBACK_DWARF_NO_RETURN_ADDRESS);
		/* Carried over: callee-saved registers keep their value. */
		if (r == SP__SLOT_RESTORED)
			continue;
		if (r != 0) {
			next->valid &= ~SP__REG_BIT(reg);
			continue;
		}
		next->r[reg] = v;
		next->valid |= SP__REG_BIT(reg);
	}
	return 0;
}

static int apply_simple(const struct sp__cfi_rules *row,
			const struct sp__stack *stack, uint64_t cfa,
			struct sp_regs *next, struct sp__step_fail *fail)
{
	int r;

	if (row->flags & SP__ROW_RA_UNDEF)
		return SP__STEP_END;
	if (sp__step_read_at(stack, cfa, 8 * (int64_t)row->ra,
			     &next->r[SP_X86_64_RIP], fail,
			     SP_FALLBACK_DWARF_NO_RETURN_ADDRESS))
		return -1;
	if (row->flags & SP__ROW_RBP_UNDEF)
		next->valid &= ~SP__REG_BIT(SP_X86_64_RBP);
	if (row->flags & SP__ROW_RBP_SAVED) {
		r = sp__step_read_fp_at(stack, cfa, 8 * (int64_t)row->rbp,
					&next->r[SP_X86_64_RBP], fail);
		if (r < 0)
			return -1;
		if (r == 0)
			next->valid |= SP__REG_BIT(SP_X86_64_RBP);
	}
	if (row->saves)
		sp__arch_apply_saves(row->saves, stack, cfa, next);
	return 0;
}

/* The checks every step's result must pass. */
static int check_next(const struct sp_regs *cur, const struct sp_regs *next,
		      bool signal, struct sp__step_fail *fail)
{
	uint64_t sp = cur->r[SP_X86_64_RSP], nsp = next->r[SP_X86_64_RSP];

	if (next->r[SP_X86_64_RIP] == 0)
		return sp__step_fail(fail, SP_SAMPLE_ERR_RETURN_ADDRESS_NULL,
				     SP_FALLBACK_DWARF_NO_RETURN_ADDRESS);
	if (signal)
		return 0;
	if (nsp < sp)
		return sp__step_fail(fail, SP_SAMPLE_ERR_MOVED_BACKWARDS,
				     SP_FALLBACK_DWARF_SP_MOVED_BACKWARDS);
	if (nsp == sp)
		return sp__step_fail(fail, SP_SAMPLE_ERR_DID_NOT_ADVANCE,
				     SP_FALLBACK_DWARF_DID_NOT_ADVANCE);
	return 0;
}

int sp__arch_step_cfi(const struct sp__cfi_table *table,
		      const struct sp__cfi_rules *row,
		      const struct sp__stack *stack, const struct sp_regs *cur,
		      struct sp_regs *next, struct sp__step_fail *fail)
{
	uint64_t cfa;
	int r;

	if (compute_cfa(table, row, stack, cur, &cfa, fail))
		return -1;
	carry_callee_saved(cur, next);
	if (__builtin_expect(row->flags & SP__ROW_EXTRA, 0)) {
		if (row->extra >= table->nextras)
			return sp__step_fail(fail,
					     SP_SAMPLE_ERR_DID_NOT_ADVANCE,
					     SP_FALLBACK_DWARF_UNWIND_INFO);
		r = apply_extra(table, &table->extras[row->extra], stack, cur,
				cfa, next, fail);
	} else {
		r = apply_simple(row, stack, cfa, next, fail);
	}
	if (r != 0)
		return r;
	next->r[SP_X86_64_RSP] = cfa;
	next->valid |= SP__PC_SP;
	return check_next(cur, next, row->flags & SP__ROW_SIGNAL, fail);
}

int sp__arch_step_fp(const struct sp__stack *stack, const struct sp_regs *cur,
		     struct sp_regs *next, struct sp__step_fail *fail)
{
	uint64_t bp = cur->r[SP_X86_64_RBP], caller_bp, ra;

	fail->fallback = SP_FALLBACK_DWARF_NO_FRAME_POINTER;
	if (!(cur->valid & SP__REG_BIT(SP_X86_64_RBP)))
		return sp__step_fail(fail, SP_SAMPLE_ERR_REGISTER_CAPTURE,
				     fail->fallback);
	/* The outermost frame of a frame-pointer chain has RBP = 0. */
	if (bp == 0)
		return SP__STEP_END;
	if (bp < cur->r[SP_X86_64_RSP])
		return sp__step_fail(fail, SP_SAMPLE_ERR_MOVED_BACKWARDS,
				     fail->fallback);
	if (bp > UINT64_MAX - 16)
		return sp__step_fail(fail, SP_SAMPLE_ERR_INTEGER_OVERFLOW,
				     fail->fallback);
	/* A misaligned RBP is not a frame record: it cannot be read as one. */
	if ((bp & 7) || sp__stack_read(stack, bp, &caller_bp) ||
	    sp__stack_read(stack, bp + 8, &ra))
		return sp__step_fail(fail, SP_SAMPLE_ERR_STACK_TRUNCATED,
				     fail->fallback);
	carry_callee_saved(cur, next);
	next->valid |= SP__PC_SP;
	next->r[SP_X86_64_RBP] = caller_bp;
	next->r[SP_X86_64_RSP] = bp + 16;
	next->r[SP_X86_64_RIP] = ra;
	return check_next(cur, next, false, fail);
}
