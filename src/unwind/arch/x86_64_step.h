/* SPDX-License-Identifier: MIT */
/* The x86-64 per-frame fast path, inline: it runs once per unwound frame. */
#ifndef SP_UNWIND_ARCH_X86_64_STEP_H
#define SP_UNWIND_ARCH_X86_64_STEP_H

/*
 * Included by unwind_internal.h after the table and stack types. Only the
 * step that nearly every frame takes lives here (a simple rule set: CFA =
 * reg + off, RA and RBP at fixed slots, RBX and R12-R15 packed); arch
 * x86_64.c has the full step, which the fast path defers to for anything
 * else, and for every failure so that it can name the error.
 *
 * Inline because a call per frame, with the registers spilled around it,
 * cost more than the step itself (bench_unwind, perf annotate), and
 * branch-free where the choice varies from frame to frame (whether RBP or
 * some callee-saved register is restored): those branches mispredict on
 * real stacks, whose frames alternate between functions of any shape.
 */

#define SP__REG_BIT(r) (1u << (r))
/*
 * RBX and R12-R15: the registers whose saves a simple rule set packs in
 * @saves, and that the fast path leaves to its caller
 * (sp__arch_step_simple). With RBP, the callee-saved ones.
 */
#define SP__SAVES_MASK                                                         \
	(SP__REG_BIT(3) | SP__REG_BIT(12) | SP__REG_BIT(13) |                  \
	 SP__REG_BIT(14) | SP__REG_BIT(15))
#define SP__CALLEE_SAVED (SP__SAVES_MASK | SP__REG_BIT(SP_X86_64_RBP))
#define SP__PC_SP (SP__REG_BIT(SP_X86_64_RIP) | SP__REG_BIT(SP_X86_64_RSP))

static inline uint64_t sp__arch_pc(const struct sp_regs *regs)
{
	return regs->r[SP_X86_64_RIP];
}

static inline uint64_t sp__arch_sp(const struct sp_regs *regs)
{
	return regs->r[SP_X86_64_RSP];
}

/*
 * RBX and R12-R15 from their slots at CFA - 8n when some slot may lie
 * outside the copy: past its end such a register becomes unknown, below
 * its start (popped already) it keeps its value (step_rules.c).
 */
void sp__arch_saves_checked(uint64_t saves, const struct sp__stack *stack,
			    uint64_t cfa, struct sp_regs *next);

/*
 * Applies the packed RBX, R12-R15 slots of a rule set. Usually every slot
 * a rule set can name, [CFA - 8 * 63, CFA), lies in the copy; then the
 * five fields are applied without a branch per field: an unused field
 * reads CFA - 8 and keeps the old value.
 */
static inline void sp__arch_apply_saves(uint32_t saves,
					const struct sp__stack *stack,
					uint64_t cfa, struct sp_regs *next)
{
	const uint64_t window = 8 * SP__SAVE_MAX;
	const uint8_t *top;
	unsigned k, n, reg;
	uint64_t v;

	if (cfa < stack->addr + window || cfa - stack->addr > stack->len ||
	    stack->addr > UINT64_MAX - window) {
		sp__arch_saves_checked(saves, stack, cfa, next);
		return;
	}
	top = stack->data + (cfa - stack->addr);
	for (k = 0; k < SP__SAVE_NREGS; k++, saves >>= SP__SAVE_BITS) {
		n = saves & SP__SAVE_MAX;
		reg = sp__cfi_saved_reg(k);
		memcpy(&v, top - 8 * (n ? n : 1), 8);
		next->r[reg] = n ? v : next->r[reg];
		next->valid |= (uint32_t)(n != 0) << reg;
	}
}

/*
 * Whether the full step with @row (NULL: frame pointers) may read or
 * write RBX or R12-R15, so that their pending saves must be applied
 * first. Frame pointers carry them unchanged. The outermost frame's row
 * (RA undefined) only computes its CFA before it ends the stack; every
 * other row that the fast path declined may need them (register or
 * expression rules, signal frames, the saves of a simple row).
 */
static inline bool sp__arch_step_needs_saves(const struct sp__cfi_rules *row)
{
	if (!row)
		return false;
	if ((row->flags & (SP__ROW_RA_UNDEF | SP__ROW_EXTRA)) !=
	    SP__ROW_RA_UNDEF)
		return true;
	return row->cfa_reg >= SP_X86_64_NREGS ||
	       (SP__SAVES_MASK & SP__REG_BIT(row->cfa_reg));
}

/*
 * The common case of sp__arch_step_cfi(), in place: when @row is a simple
 * rule set and the step succeeds (a caller is found, not the outermost
 * frame), updates @regs to the caller's and returns 0, exactly as
 * sp__arch_step_cfi() would have, except for RBX and R12-R15: the caller
 * applies their saves, sp__arch_apply_saves(row->saves, stack, new RSP,
 * regs), now or later. Later is the point: those values are needed only
 * when some frame's CFA is computed from one of them (the fast path
 * declines such rows) or the full step runs, so the unwinder keeps the
 * saves of the last frames pending and most stacks end before anything
 * asks for them. Otherwise returns 1 and leaves @regs untouched, for the
 * full step to produce the result or the error.
 *
 * Everything is read before anything is written. The CFA must lie in
 * [1024, 2^64 - 1024] and slots are at most 8 * 128 bytes from it, so no
 * slot address wraps and no overflow error is skipped. A slot offset is
 * taken modulo 2^64 from the copy's start: one comparison rejects slots
 * on both sides, because the copy does not wrap (sp_unwinder_unwind
 * checks stack_addr + stack_len). When RBP is not saved its load reads
 * the RA slot again and the old value is kept. An RBP slot below the copy
 * (an epilogue after the pop, x86_64.c) is rejected by the same
 * comparison and left to the full step.
 */
static inline int sp__arch_step_simple(const struct sp__cfi_rules *row,
				       const struct sp__stack *stack,
				       struct sp_regs *regs)
{
	uint32_t flags = row->flags, valid = regs->valid;
	unsigned reg = row->cfa_reg;
	uint64_t cfa, lim, ra_off, bp_off, ra, bp;
	bool bp_saved = flags & SP__ROW_RBP_SAVED;

	if (flags & (SP__ROW_EXTRA | SP__ROW_RA_UNDEF | SP__ROW_SIGNAL) ||
	    reg >= SP_X86_64_NREGS || !(valid & SP__REG_BIT(reg)) ||
	    (SP__SAVES_MASK & SP__REG_BIT(reg)) || stack->len < 8)
		return 1;
	cfa = regs->r[reg] + (uint64_t)(int64_t)row->cfa_off;
	if ((row->cfa_off < 0) != (cfa < regs->r[reg]) ||
	    cfa <= regs->r[SP_X86_64_RSP] || cfa - 1024 > UINT64_MAX - 2048)
		return 1;
	lim = stack->len - 8;
	ra_off = cfa + 8 * (uint64_t)(int64_t)row->ra - stack->addr;
	bp_off = bp_saved ?
			 cfa + 8 * (uint64_t)(int64_t)row->rbp - stack->addr :
			 ra_off;
	if (ra_off > lim || bp_off > lim)
		return 1;
	memcpy(&ra, stack->data + ra_off, 8);
	memcpy(&bp, stack->data + bp_off, 8);
	if (ra == 0)
		return 1;
	valid &= SP__CALLEE_SAVED;
	valid &= ~((uint32_t) !!(flags & SP__ROW_RBP_UNDEF) << SP_X86_64_RBP);
	valid |= (uint32_t)bp_saved << SP_X86_64_RBP;
	regs->valid = valid | SP__PC_SP;
	regs->r[SP_X86_64_RBP] = bp_saved ? bp : regs->r[SP_X86_64_RBP];
	regs->r[SP_X86_64_RSP] = cfa;
	regs->r[SP_X86_64_RIP] = ra;
	return 0;
}

/*
 * The walk memo's view of a simple step (walk_memo.h): the two slots
 * sp__arch_step_simple read for @row with CFA (the caller's RSP) @cfa
 * and what they held, the return address @ra and RBP @fp. When RBP is
 * not saved the second slot is the first again (the step reads it so).
 * With the state before the step unchanged, the step depends on the copy
 * only through them: where they lie in it and their values.
 */
static inline void sp__arch_simple_slots(const struct sp__cfi_rules *row,
					 uint64_t cfa, uint64_t ra, uint64_t fp,
					 uint64_t addr[2], uint64_t val[2])
{
	bool saved = row->flags & SP__ROW_RBP_SAVED;

	addr[0] = cfa + 8 * (uint64_t)(int64_t)row->ra;
	val[0] = ra;
	addr[1] = saved ? cfa + 8 * (uint64_t)(int64_t)row->rbp : addr[0];
	val[1] = saved ? fp : ra;
}

#endif /* SP_UNWIND_ARCH_X86_64_STEP_H */
