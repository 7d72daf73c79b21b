/* SPDX-License-Identifier: MIT */
/* The AArch64 per-frame fast path, inline: it runs once per unwound frame. */
#ifndef SP_UNWIND_ARCH_AARCH64_STEP_H
#define SP_UNWIND_ARCH_AARCH64_STEP_H

/*
 * Included by unwind_internal.h (SP__ARCH_STEP_H) after the table and
 * stack types. As on x86-64 (arch/x86_64_step.h, whose reasons hold here
 * too) only the step that nearly every frame takes lives here: a simple
 * rule set whose CFA is SP or X29 plus an offset, with X30 and X29 at
 * fixed slots and X19-X28 packed. arch/aarch64.c has the full step, for
 * everything else and every failure: the return address still in the
 * link register (the leaf, PLT stubs), signal frames, the stack pointer
 * recovered through X29 after a frame-pointer step, expressions.
 */

#define SP__REG_BIT(r) (1ull << (r))
/* X19-X28: the registers a simple rule set packs in @saves. */
#define SP__SAVES_MASK (0x3ffull << 19)
/* With X29, the callee-saved ones (AAPCS64). */
#define SP__CALLEE_SAVED (SP__SAVES_MASK | SP__REG_BIT(SP_AARCH64_X29))
#define SP__PC_SP (SP__REG_BIT(SP_AARCH64_PC) | SP__REG_BIT(SP_AARCH64_SP))

static inline uint64_t sp__arch_pc(const struct sp_regs *regs)
{
	return regs->r[SP_AARCH64_PC];
}

static inline uint64_t sp__arch_sp(const struct sp_regs *regs)
{
	return regs->r[SP_AARCH64_SP];
}

/*
 * X19-X28 from their slots at CFA - 8n when some slot may lie outside
 * the copy: past its end such a register becomes unknown, below its
 * start (popped already) it keeps its value (step_rules.c).
 */
void sp__arch_saves_checked(uint64_t saves, const struct sp__stack *stack,
			    uint64_t cfa, struct sp_regs *next);

/*
 * Applies the packed X19-X28 slots of a rule set, branch-free when every
 * slot a rule set can name, [CFA - 8 * 63, CFA), lies in the copy: an
 * unused field reads CFA - 8 and keeps the old value.
 */
static inline void sp__arch_apply_saves(uint64_t saves,
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
		n = (unsigned)(saves & SP__SAVE_MAX);
		reg = sp__cfi_saved_reg(k);
		memcpy(&v, top - 8 * (n ? n : 1), 8);
		next->r[reg] = n ? v : next->r[reg];
		next->valid |= (uint64_t)(n != 0) << reg;
	}
}

/*
 * Whether the full step with @row (NULL: frame pointers) may read or
 * write X19-X28, so that their pending saves must be applied first
 * (the same rule as on x86-64: frame pointers carry them unchanged, the
 * outermost frame's row only computes its CFA).
 */
static inline bool sp__arch_step_needs_saves(const struct sp__cfi_rules *row)
{
	if (!row)
		return false;
	if ((row->flags & (SP__ROW_RA_UNDEF | SP__ROW_EXTRA)) !=
	    SP__ROW_RA_UNDEF)
		return true;
	return row->cfa_reg >= SP_AARCH64_NREGS ||
	       (SP__SAVES_MASK & SP__REG_BIT(row->cfa_reg));
}

/*
 * The common case of sp__arch_step_cfi(), in place, with the contract of
 * the x86-64 one: returns 0 with @regs the caller's (X19-X28 left to the
 * caller's sp__arch_apply_saves(row->saves, stack, new SP, regs)), or 1
 * with @regs untouched for the full step. The return address has its
 * authentication code stripped; the caller's X30 is no longer a return
 * address (its valid bit is cleared), which keeps a later "RA in the
 * link register" rule from reusing it. A CFA at or below SP (a frame
 * without stack, whose RA is in X30) is the full step's.
 */
static inline int sp__arch_step_simple(const struct sp__cfi_rules *row,
				       const struct sp__stack *stack,
				       struct sp_regs *regs)
{
	uint64_t valid = regs->valid, cfa, lim, ra_off, fp_off, ra, fp;
	uint32_t flags = row->flags;
	unsigned reg = row->cfa_reg;
	bool fp_saved = flags & SP__ROW_FP_SAVED;

	if (flags & (SP__ROW_EXTRA | SP__ROW_RA_UNDEF | SP__ROW_SIGNAL |
		     SP__ROW_RA_LR) ||
	    reg >= SP_AARCH64_NREGS || !(valid & SP__REG_BIT(reg)) ||
	    (SP__SAVES_MASK & SP__REG_BIT(reg)) || stack->len < 8)
		return 1;
	cfa = regs->r[reg] + (uint64_t)(int64_t)row->cfa_off;
	if ((row->cfa_off < 0) != (cfa < regs->r[reg]) ||
	    cfa <= regs->r[SP_AARCH64_SP] || cfa - 1024 > UINT64_MAX - 2048)
		return 1;
	lim = stack->len - 8;
	ra_off = cfa + 8 * (uint64_t)(int64_t)row->ra - stack->addr;
	fp_off = fp_saved ? cfa + 8 * (uint64_t)(int64_t)row->fp - stack->addr :
			    ra_off;
	if (ra_off > lim || fp_off > lim)
		return 1;
	memcpy(&ra, stack->data + ra_off, 8);
	memcpy(&fp, stack->data + fp_off, 8);
	ra = sp__a64_strip(ra);
	if (ra == 0)
		return 1;
	valid &= SP__CALLEE_SAVED;
	valid &= ~((uint64_t) !!(flags & SP__ROW_FP_UNDEF) << SP_AARCH64_X29);
	valid |= (uint64_t)fp_saved << SP_AARCH64_X29;
	regs->valid = valid | SP__PC_SP;
	regs->r[SP_AARCH64_X29] = fp_saved ? fp : regs->r[SP_AARCH64_X29];
	regs->r[SP_AARCH64_SP] = cfa;
	regs->r[SP_AARCH64_PC] = ra;
	return 0;
}

/*
 * The walk memo's view of a simple step (walk_memo.h): the two slots
 * sp__arch_step_simple read for @row with CFA @cfa and what they held:
 * X29 @fp, and the return address @ra after stripping, compared with
 * the raw slot, so a signed return address never matches (no reuse).
 */
static inline void sp__arch_simple_slots(const struct sp__cfi_rules *row,
					 uint64_t cfa, uint64_t ra, uint64_t fp,
					 uint64_t addr[2], uint64_t val[2])
{
	bool saved = row->flags & SP__ROW_FP_SAVED;

	addr[0] = cfa + 8 * (uint64_t)(int64_t)row->ra;
	val[0] = ra;
	addr[1] = saved ? cfa + 8 * (uint64_t)(int64_t)row->fp : addr[0];
	val[1] = saved ? fp : ra;
}

#endif /* SP_UNWIND_ARCH_AARCH64_STEP_H */
