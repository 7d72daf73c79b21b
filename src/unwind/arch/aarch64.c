/* SPDX-License-Identifier: MIT */
/* The AArch64 unwind step: apply a CFI row or follow the frame record. */
#include <errno.h>

#include "unwind_internal.h"

/*
 * Registers are in DWARF numbering (struct sp_regs). One step turns the
 * registers of a frame into its caller's:
 *
 *   CFA  = reg + off, or an expression
 *   PC'  = X30 rule: *(CFA + ra), or X30 itself (SP__ROW_RA_LR)
 *   SP'  = CFA
 *   X29' = X29 | *(CFA + fp)    X19'-X28' = same | *(CFA - 8n)
 *
 * and strips the pointer authentication code of every return address
 * (sp__a64_strip), wherever it came from.
 *
 * The link register holds a return address only in the leaf (the
 * sample's X30) and right after a signal frame (the interrupted X30):
 * every other step clears X30's valid bit in the caller, so a "RA in
 * X30" rule below the leaf fails (SP_SAMPLE_ERR_REGISTER_CAPTURE) rather
 * than report a frame twice. Such a frame may not have moved SP at all
 * (a leaf without a stack frame, a PLT stub: CFA = SP), so for it an
 * unchanged SP is an advance; a frame whose RA came from memory must
 * raise SP, as on x86-64, which makes every walk end. Signal frames are
 * exempt and bounded by the depth cap.
 *
 * Signal frames (SP__ROW_SIGNAL: the 'S' CIE of __kernel_rt_sigreturn in
 * the vDSO, or of a restorer like it): SP is the struct rt_sigframe the
 * kernel pushed, its ucontext's sigcontext at SIGFRAME_MCONTEXT, and the
 * caller's X0-X30, SP and PC are read from there. The vDSO's own CFI
 * would only give X29 and X30 of the interrupted frame, which loses the
 * interrupted function itself (the comment in the kernel's sigreturn.S).
 *
 * A register's slot below the stack copy (below the sampled SP) was
 * popped already: an epilogue sampled after its ldp, where the CFI still
 * names the slot (step_rules.c). X29 and X19-X28 keep their values;
 * the return address was loaded into X30 by the same ldp, so the leaf
 * takes it from there (ra_popped), and a frame above the leaf fails.
 *
 * The frame-record step reads [X29] = caller's X29, [X29 + 8] = return
 * address (AAPCS64 frame records), and requires X29 inside the copy,
 * 8-byte aligned and not below SP. The record sits at the bottom of the
 * caller's frame, not at its top, so the caller's SP is not known: the
 * step sets SP to X29 + 16, the least it can be, and clears SP's valid
 * bit. A CFI row of the caller that computes its CFA from SP then takes
 * it from X29 instead, when the row saves X29 at CFA + fp: the caller's
 * X29 points at that very slot (its own frame record), so CFA = X29 -
 * fp. That is the "SP recovery after a frame-pointer step followed by an
 * SP-relative rule" of stackpulse 0.11; without it the CFA would come
 * from the guess and read garbage. A row that does not save X29 fails
 * and frame records go on.
 */

/* struct rt_sigframe: siginfo (128), then the ucontext, whose
 * uc_mcontext is at 176 (arch/arm64/include/uapi/asm/ucontext.h). */
#define SIGFRAME_MCONTEXT (128 + 176)
/* struct sigcontext: fault_address, regs[31], sp, pc. */
#define SIGCTX_REGS 8
#define SIGCTX_SP (8 + 31 * 8)
#define SIGCTX_PC (SIGCTX_SP + 8)

int sp__arch_check_regs(const struct sp_regs *regs, enum sp_sample_error *error)
{
	if (regs->abi == SP_REGS_ABI_NONE) {
		*error = SP_SAMPLE_ERR_USER_REGISTERS_MISSING;
		return -1;
	}
	/* A 32-bit (AArch32) task's registers never enter this unwinder. */
	if (regs->abi != SP_REGS_ABI_64 ||
	    (regs->valid & SP__PC_SP) != SP__PC_SP) {
		*error = SP_SAMPLE_ERR_REGISTER_CAPTURE;
		return -1;
	}
	if (regs->r[SP_AARCH64_PC] == 0) {
		*error = SP_SAMPLE_ERR_RETURN_ADDRESS_NULL;
		return -1;
	}
	return 0;
}

/* Starts the caller's registers: callee-saved ones carry over. */
static void carry_callee_saved(const struct sp_regs *cur, struct sp_regs *next)
{
	unsigned r;

	for (r = 19; r <= SP_AARCH64_X29; r++)
		next->r[r] = cur->r[r];
	next->valid = cur->valid & SP__CALLEE_SAVED;
	next->arch = cur->arch;
	next->abi = cur->abi;
}

/* The X29 slot of @row (bytes from the CFA): true when it saves X29. */
static bool fp_slot(const struct sp__cfi_table *table,
		    const struct sp__cfi_rules *row, int64_t *off)
{
	const struct sp__cfi_rule *r;

	if (!(row->flags & SP__ROW_EXTRA)) {
		*off = 8 * (int64_t)row->fp;
		return row->flags & SP__ROW_FP_SAVED;
	}
	if (row->extra >= table->nextras)
		return false;
	r = &table->extras[row->extra].rule[SP_AARCH64_X29];
	*off = r->off;
	return r->kind == SP__RULE_AT_CFA;
}

/*
 * The CFA of an SP-relative row when SP is only the frame-record step's
 * guess: from the caller's X29, which points at its saved X29.
 */
static int recover_cfa(const struct sp__cfi_table *table,
		       const struct sp__cfi_rules *row,
		       const struct sp_regs *cur, uint64_t *cfa,
		       struct sp__step_fail *fail)
{
	int64_t off;

	if (!(cur->valid & SP__REG_BIT(SP_AARCH64_X29)) ||
	    !fp_slot(table, row, &off))
		return sp__step_fail(fail, SP_SAMPLE_ERR_REGISTER_CAPTURE,
				     SP_FALLBACK_DWARF_NO_CFA);
	if (off == INT64_MIN ||
	    !sp__step_add_off(cur->r[SP_AARCH64_X29], -off, cfa))
		return sp__step_fail(fail, SP_SAMPLE_ERR_INTEGER_OVERFLOW,
				     SP_FALLBACK_DWARF_NO_CFA);
	return 0;
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
	if (row->cfa_reg == SP_AARCH64_SP &&
	    !(cur->valid & SP__REG_BIT(SP_AARCH64_SP)))
		return recover_cfa(table, row, cur, cfa, fail);
	if (row->cfa_reg >= SP_AARCH64_NREGS ||
	    !(cur->valid & SP__REG_BIT(row->cfa_reg)))
		return sp__step_fail(fail, SP_SAMPLE_ERR_REGISTER_CAPTURE,
				     SP_FALLBACK_DWARF_NO_CFA);
	if (!sp__step_add_off(cur->r[row->cfa_reg], row->cfa_off, cfa))
		return sp__step_fail(fail, SP_SAMPLE_ERR_INTEGER_OVERFLOW,
				     SP_FALLBACK_DWARF_NO_CFA);
	return 0;
}

/* The return address in the link register; -1 when it holds none. */
static int ra_from_lr(const struct sp_regs *cur, struct sp_regs *next,
		      struct sp__step_fail *fail)
{
	if (!(cur->valid & SP__REG_BIT(SP__A64_LR)))
		return sp__step_fail(fail, SP_SAMPLE_ERR_REGISTER_CAPTURE,
				     SP_FALLBACK_DWARF_NO_RETURN_ADDRESS);
	next->r[SP_AARCH64_PC] = cur->r[SP__A64_LR];
	return 0;
}

/*
 * The return address's slot lies below the copy: an epilogue has loaded
 * it already (ldp x29, x30, [sp], #16 before ret), into the link
 * register, where it is when this is the leaf. Below the leaf the link
 * register holds none, and the step fails as for a slot past the copy.
 */
static int ra_popped(const struct sp_regs *cur, struct sp_regs *next, bool *lr,
		     struct sp__step_fail *fail)
{
	if (!(cur->valid & SP__REG_BIT(SP__A64_LR)))
		return sp__step_fail(fail, SP_SAMPLE_ERR_STACK_TRUNCATED,
				     SP_FALLBACK_DWARF_NO_RETURN_ADDRESS);
	*lr = true;
	next->r[SP_AARCH64_PC] = cur->r[SP__A64_LR];
	return 0;
}

/*
 * The full rules of an extras[] entry. Sets *@lr when the return address
 * came from the link register.
 */
static int apply_extra(const struct sp__cfi_table *table,
		       const struct sp__cfi_extra *x,
		       const struct sp__stack *stack, const struct sp_regs *cur,
		       uint64_t cfa, struct sp_regs *next, bool *lr,
		       struct sp__step_fail *fail)
{
	const struct sp__cfi_rule *ra = &x->rule[SP__A64_LR];
	uint64_t todo, v;
	unsigned reg;
	int r;

	if (ra->kind == SP__RULE_UNDEF)
		return SP__STEP_END;
	if (ra->kind == SP__RULE_SAME) {
		*lr = true;
		if (ra_from_lr(cur, next, fail))
			return -1;
	} else {
		r = sp__step_rule_value(table, ra, stack, cur, cfa, &v);
		if (r == SP__SLOT_RESTORED)
			return ra_popped(cur, next, lr, fail);
		if (r < 0)
			return sp__step_fail(
				fail, SP_SAMPLE_ERR_STACK_TRUNCATED,
				SP_FALLBACK_DWARF_NO_RETURN_ADDRESS);
		if (r > 0)
			return sp__step_fail(
				fail, SP_SAMPLE_ERR_REGISTER_CAPTURE,
				SP_FALLBACK_DWARF_NO_RETURN_ADDRESS);
		next->r[SP_AARCH64_PC] = v;
	}
	/* Every other rule, X30 and SP aside (the RA and the CFA). */
	todo = x->mask &
	       ~(SP__REG_BIT(SP__A64_LR) | SP__REG_BIT(SP_AARCH64_SP));
	for (; todo; todo &= todo - 1) {
		reg = (unsigned)__builtin_ctzll(todo);
		if (reg >= SP_AARCH64_NREGS)
			break;
		r = sp__step_rule_value(table, &x->rule[reg], stack, cur, cfa,
					&v);
		if (r < 0 && reg == SP_AARCH64_X29)
			return sp__step_fail(
				fail, SP_SAMPLE_ERR_STACK_TRUNCATED,
				SP_FALLBACK_DWARF_NO_FRAME_POINTER);
		/* Popped already: callee-saved registers keep their value. */
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

/*
 * The return address from its slot at CFA + @off, or, when the slot lies
 * below the copy (ra_popped), from the link register.
 */
static int ra_slot(const struct sp__stack *stack, uint64_t cfa, int64_t off,
		   const struct sp_regs *cur, struct sp_regs *next, bool *lr,
		   struct sp__step_fail *fail)
{
	uint64_t addr;
	int r;

	if (!sp__step_add_off(cfa, off, &addr))
		return sp__step_fail(fail, SP_SAMPLE_ERR_INTEGER_OVERFLOW,
				     SP_FALLBACK_DWARF_NO_RETURN_ADDRESS);
	r = sp__step_read_saved(stack, addr, &next->r[SP_AARCH64_PC]);
	if (r == SP__SLOT_RESTORED)
		return ra_popped(cur, next, lr, fail);
	if (r < 0)
		return sp__step_fail(fail, SP_SAMPLE_ERR_STACK_TRUNCATED,
				     SP_FALLBACK_DWARF_NO_RETURN_ADDRESS);
	return 0;
}

static int apply_simple(const struct sp__cfi_rules *row,
			const struct sp__stack *stack, uint64_t cfa,
			const struct sp_regs *cur, struct sp_regs *next,
			bool *lr, struct sp__step_fail *fail)
{
	int r;

	if (row->flags & SP__ROW_RA_UNDEF)
		return SP__STEP_END;
	if (row->flags & SP__ROW_RA_LR) {
		*lr = true;
		if (ra_from_lr(cur, next, fail))
			return -1;
	} else {
		r = ra_slot(stack, cfa, 8 * (int64_t)row->ra, cur, next, lr,
			    fail);
		if (r)
			return r;
	}
	if (row->flags & SP__ROW_FP_UNDEF)
		next->valid &= ~SP__REG_BIT(SP_AARCH64_X29);
	if (row->flags & SP__ROW_FP_SAVED) {
		r = sp__step_read_fp_at(stack, cfa, 8 * (int64_t)row->fp,
					&next->r[SP_AARCH64_X29], fail);
		if (r < 0)
			return -1;
		if (r == 0)
			next->valid |= SP__REG_BIT(SP_AARCH64_X29);
	}
	if (row->saves)
		sp__arch_apply_saves(row->saves, stack, cfa, next);
	return 0;
}

/*
 * A signal frame: every register from the sigcontext at SP. Registers
 * whose slots lie outside the copy stay unknown; PC and SP must be read.
 */
static int apply_signal(const struct sp__stack *stack,
			const struct sp_regs *cur, struct sp_regs *next,
			struct sp__step_fail *fail)
{
	uint64_t base, v;
	unsigned r;

	if (!sp__step_add_off(cur->r[SP_AARCH64_SP], SIGFRAME_MCONTEXT,
			      &base) ||
	    base > UINT64_MAX - SIGCTX_PC - 8)
		return sp__step_fail(fail, SP_SAMPLE_ERR_INTEGER_OVERFLOW,
				     SP_FALLBACK_DWARF_NO_CFA);
	if (sp__stack_read(stack, base + SIGCTX_PC, &next->r[SP_AARCH64_PC]) ||
	    sp__stack_read(stack, base + SIGCTX_SP, &next->r[SP_AARCH64_SP]))
		return sp__step_fail(fail, SP_SAMPLE_ERR_STACK_TRUNCATED,
				     SP_FALLBACK_DWARF_NO_RETURN_ADDRESS);
	next->valid = SP__PC_SP;
	for (r = 0; r <= SP__A64_LR; r++) {
		if (sp__stack_read(stack, base + SIGCTX_REGS + 8 * r, &v))
			continue;
		next->r[r] = v;
		next->valid |= SP__REG_BIT(r);
	}
	return 0;
}

/*
 * The checks every step's result must pass; @lr: the return address came
 * from the link register, so SP may stay where it is.
 */
static int check_next(const struct sp_regs *cur, struct sp_regs *next,
		      bool signal, bool lr, struct sp__step_fail *fail)
{
	uint64_t sp = cur->r[SP_AARCH64_SP], nsp = next->r[SP_AARCH64_SP];

	next->r[SP_AARCH64_PC] = sp__a64_strip(next->r[SP_AARCH64_PC]);
	if (next->r[SP_AARCH64_PC] == 0)
		return sp__step_fail(fail, SP_SAMPLE_ERR_RETURN_ADDRESS_NULL,
				     SP_FALLBACK_DWARF_NO_RETURN_ADDRESS);
	if (signal)
		return 0;
	/* A return address is used once: the caller's X30 holds none. */
	next->valid &= ~SP__REG_BIT(SP__A64_LR);
	if (nsp < sp)
		return sp__step_fail(fail, SP_SAMPLE_ERR_MOVED_BACKWARDS,
				     SP_FALLBACK_DWARF_SP_MOVED_BACKWARDS);
	if (nsp == sp && !lr)
		return sp__step_fail(fail, SP_SAMPLE_ERR_DID_NOT_ADVANCE,
				     SP_FALLBACK_DWARF_DID_NOT_ADVANCE);
	return 0;
}

int sp__arch_step_cfi(const struct sp__cfi_table *table,
		      const struct sp__cfi_rules *row,
		      const struct sp__stack *stack, const struct sp_regs *cur,
		      struct sp_regs *next, struct sp__step_fail *fail)
{
	bool signal = row->flags & SP__ROW_SIGNAL, lr = false;
	uint64_t cfa;
	int r;

	carry_callee_saved(cur, next);
	if (signal) {
		r = apply_signal(stack, cur, next, fail);
		return r ? r : check_next(cur, next, true, false, fail);
	}
	if (compute_cfa(table, row, stack, cur, &cfa, fail))
		return -1;
	if (__builtin_expect(row->flags & SP__ROW_EXTRA, 0)) {
		if (row->extra >= table->nextras)
			return sp__step_fail(fail,
					     SP_SAMPLE_ERR_DID_NOT_ADVANCE,
					     SP_FALLBACK_DWARF_UNWIND_INFO);
		r = apply_extra(table, &table->extras[row->extra], stack, cur,
				cfa, next, &lr, fail);
	} else {
		r = apply_simple(row, stack, cfa, cur, next, &lr, fail);
	}
	if (r != 0)
		return r;
	next->r[SP_AARCH64_SP] = cfa;
	next->valid |= SP__PC_SP;
	return check_next(cur, next, false, lr, fail);
}

int sp__arch_step_fp(const struct sp__stack *stack, const struct sp_regs *cur,
		     struct sp_regs *next, struct sp__step_fail *fail)
{
	uint64_t fp = cur->r[SP_AARCH64_X29], caller_fp, ra;

	fail->fallback = SP_FALLBACK_DWARF_NO_FRAME_POINTER;
	if (!(cur->valid & SP__REG_BIT(SP_AARCH64_X29)))
		return sp__step_fail(fail, SP_SAMPLE_ERR_REGISTER_CAPTURE,
				     fail->fallback);
	/* The outermost frame record has X29 = 0 (glibc's _start). */
	if (fp == 0)
		return SP__STEP_END;
	if (fp < cur->r[SP_AARCH64_SP])
		return sp__step_fail(fail, SP_SAMPLE_ERR_MOVED_BACKWARDS,
				     fail->fallback);
	if (fp > UINT64_MAX - 16)
		return sp__step_fail(fail, SP_SAMPLE_ERR_INTEGER_OVERFLOW,
				     fail->fallback);
	if ((fp & 7) || sp__stack_read(stack, fp, &caller_fp) ||
	    sp__stack_read(stack, fp + 8, &ra))
		return sp__step_fail(fail, SP_SAMPLE_ERR_STACK_TRUNCATED,
				     fail->fallback);
	carry_callee_saved(cur, next);
	/* SP is only a lower bound now: valid bit clear (see above). */
	next->valid |= SP__REG_BIT(SP_AARCH64_PC);
	next->r[SP_AARCH64_X29] = caller_fp;
	next->r[SP_AARCH64_SP] = fp + 16;
	next->r[SP_AARCH64_PC] = ra;
	return check_next(cur, next, false, false, fail);
}
