/* SPDX-License-Identifier: MIT */
/* Runs CFA programs forward: the rows of an FDE, and its expressions. */
#include <elf.h>
#include <errno.h>
#include <string.h>

#include <dwarf.h>

#include "cfi_rows.h"

/*
 * The interpreter follows libdw's execute_cfi (elfutils 0.188), which the
 * table builder used before, so that the tables stay what they were:
 *
 *   initial state   the ABI's (x86-64: RAX, RBP, R12-R16 same value,
 *                   RSP = CFA; AArch64: CFA = X30 + 0, X19-X30 same,
 *                   SP = CFA), then the CIE's initial instructions, once
 *                   per CIE; an advance or a restore there fails the CIE
 *   row of pc       the state after every instruction before the first
 *                   advance (advance_loc*, set_loc) to a location past
 *                   pc; it ends at that location, or at the FDE's end
 *                   when the program ends first
 *   register rules  offsets multiplied by the data alignment and kept in
 *                   61 bits; a register number of 2^28 - 1 or more fails
 *                   the FDE there; DW_CFA_GNU_window_save is a no-op on
 *                   AArch64 (negate_ra_state) and SPARC's register
 *                   window elsewhere
 *   CFA rules       def_cfa_register/offset after anything but a
 *                   register rule make the CFA invalid
 *
 * Unlike libdw, a truncated operand fails the FDE instead of reading past
 * its end, and remember_state nests at most SP__CFI_STACK deep. The
 * cursor (struct sp__cfi_cursor) makes a walk over increasing pcs run
 * each program once: a row is answered when the program reaches an
 * advance past pc, and the next query, at or past that advance, goes on
 * from there.
 */

#define REG_LIMIT 268435455u /* libdw: INT32_MAX / sizeof(register rule) */

static int64_t trunc61(uint64_t v)
{
	return (int64_t)(v << 3) >> 3;
}

static void set_rule(struct sp__cfi_state *st, uint64_t reg, uint8_t rule,
		     uint64_t value)
{
	if (reg < SP__ARCH_NREGS) {
		st->reg[reg].rule = rule;
		st->reg[reg].value = trunc61(value);
	}
}

/* The ABI's state before any CIE instruction: 0, or -1 (unknown ABI). */
static int abi_state(uint16_t machine, struct sp__cfi_state *st)
{
	static const uint8_t x86_same[] = { 0, 6, 12, 13, 14, 15, 16 };
	unsigned i;

	memset(st, 0, sizeof(*st));
	switch (machine) {
	case EM_X86_64:
		for (i = 0; i < sizeof(x86_same); i++)
			set_rule(st, x86_same[i], SP__CFI_R_SAME, 0);
		set_rule(st, 7, SP__CFI_R_VAL_OFFSET, 0);
		return 0;
	case EM_AARCH64:
		st->cfa_rule = SP__CFI_CFA_OFFSET;
		st->cfa_reg = 30;
		for (i = 19; i <= 30; i++)
			set_rule(st, i, SP__CFI_R_SAME, 0);
		set_rule(st, 31, SP__CFI_R_VAL_OFFSET, 0);
		for (i = 72; i <= 79; i++)
			set_rule(st, i, SP__CFI_R_SAME, 0);
		return 0;
	default:
		return -1;
	}
}

static void require_offset(struct sp__cfi_state *st)
{
	if (st->cfa_rule != SP__CFI_CFA_OFFSET)
		st->cfa_rule = SP__CFI_CFA_INVALID;
}

/* SPARC's DW_CFA_GNU_window_save, as libdw spells it out. */
static void window_save(const struct sp__cfi_src *src, struct sp__cfi_state *st)
{
	uint64_t reg;

	for (reg = 8; reg < 16; reg++)
		set_rule(st, reg, SP__CFI_R_REGISTER, reg + 16);
	for (; reg < 32; reg++)
		set_rule(st, reg, SP__CFI_R_OFFSET,
			 (reg - 16) * src->addr_size);
}

/* Reads a register operand libdw would accept. */
static int rd_reg(struct sp__cfi_rd *rd, uint64_t *reg)
{
	return sp__cfi_rd_uleb(rd, reg) || *reg >= REG_LIMIT ? -1 : 0;
}

/* An expression block operand: its length's offset in *@at. */
static int rd_block(struct sp__cfi_rd *rd, size_t *at, uint64_t *len)
{
	*at = rd->pos;
	if (sp__cfi_rd_uleb(rd, len) || *len > rd->end - rd->pos)
		return -1;
	rd->pos += (size_t)*len;
	return 0;
}

/*
 * Rules that set a register: DW_CFA_offset* and val_offset* (@op the
 * extended opcode, @reg read already for DW_CFA_offset).
 */
static int exec_reg(const struct sp__cfi_cie *cie, struct sp__cfi_rd *rd,
		    uint8_t op, uint64_t reg, struct sp__cfi_state *st)
{
	uint8_t rule = SP__CFI_R_OFFSET;
	uint64_t u, da = (uint64_t)cie->data_align;
	int64_t s;
	size_t at;

	if (op != DW_CFA_offset && rd_reg(rd, &reg))
		return -1;
	switch (op) {
	case DW_CFA_val_offset:
		rule = SP__CFI_R_VAL_OFFSET;
		/* fall through */
	case DW_CFA_offset:
	case DW_CFA_offset_extended:
		if (sp__cfi_rd_uleb(rd, &u))
			return -1;
		set_rule(st, reg, rule, u * da);
		return 0;
	case DW_CFA_val_offset_sf:
		rule = SP__CFI_R_VAL_OFFSET;
		/* fall through */
	case DW_CFA_offset_extended_sf:
		if (sp__cfi_rd_sleb(rd, &s))
			return -1;
		set_rule(st, reg, rule, (uint64_t)s * da);
		return 0;
	case DW_CFA_GNU_negative_offset_extended:
		if (sp__cfi_rd_uleb(rd, &u))
			return -1;
		set_rule(st, reg, rule, (0 - u) * da);
		return 0;
	case DW_CFA_undefined:
		set_rule(st, reg, SP__CFI_R_UNDEF, 0);
		return 0;
	case DW_CFA_same_value:
		set_rule(st, reg, SP__CFI_R_SAME, 0);
		return 0;
	case DW_CFA_register:
		if (sp__cfi_rd_uleb(rd, &u))
			return -1;
		set_rule(st, reg, SP__CFI_R_REGISTER, u);
		return 0;
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		if (rd_block(rd, &at, &u))
			return -1;
		set_rule(st, reg,
			 op == DW_CFA_expression ? SP__CFI_R_EXPR :
						   SP__CFI_R_VAL_EXPR,
			 at);
		return 0;
	default:
		return -1;
	}
}

/* The CFA rules. */
static int exec_cfa(const struct sp__cfi_cie *cie, struct sp__cfi_rd *rd,
		    uint8_t op, struct sp__cfi_state *st)
{
	uint64_t reg, u;
	int64_t s;
	size_t at;

	switch (op) {
	case DW_CFA_def_cfa:
	case DW_CFA_def_cfa_sf:
		if (sp__cfi_rd_uleb(rd, &reg))
			return -1;
		if (op == DW_CFA_def_cfa ? sp__cfi_rd_uleb(rd, &u) :
					   sp__cfi_rd_sleb(rd, &s))
			return -1;
		if (op == DW_CFA_def_cfa_sf)
			u = (uint64_t)s * (uint64_t)cie->data_align;
		st->cfa_rule = SP__CFI_CFA_OFFSET;
		st->cfa_reg = reg;
		st->cfa_off = u;
		return 0;
	case DW_CFA_def_cfa_register:
		if (sp__cfi_rd_uleb(rd, &reg))
			return -1;
		require_offset(st);
		st->cfa_reg = reg;
		return 0;
	case DW_CFA_def_cfa_offset:
	case DW_CFA_def_cfa_offset_sf:
		if (op == DW_CFA_def_cfa_offset ? sp__cfi_rd_uleb(rd, &u) :
						  sp__cfi_rd_sleb(rd, &s))
			return -1;
		if (op == DW_CFA_def_cfa_offset_sf)
			u = (uint64_t)s * (uint64_t)cie->data_align;
		require_offset(st);
		st->cfa_off = u;
		return 0;
	case DW_CFA_def_cfa_expression:
		if (rd_block(rd, &at, &u))
			return -1;
		st->cfa_rule = SP__CFI_CFA_EXPR;
		st->cfa_reg = rd->pos - (size_t)u;
		st->cfa_off = u;
		return 0;
	default:
		return -1;
	}
}

/*
 * One instruction at the cursor: 0 (the state changed or not), 1 (the
 * location moved: c->loc), 2 (end of program), -1 (bad instruction).
 * @init: the CIE's own initial state, NULL while running the CIE.
 */
static int exec_one(const struct sp__cfi_src *src,
		    const struct sp__cfi_cie *cie,
		    const struct sp__cfi_state *init, struct sp__cfi_cursor *c,
		    size_t end)
{
	struct sp__cfi_rd rd = { src, c->pos, end };
	struct sp__cfi_state *st = &c->st;
	uint64_t op, reg, delta;
	int err = 0;

	if (rd.pos >= end)
		return 2;
	op = src->data[rd.pos++];
	switch (op & 0xc0) {
	case DW_CFA_advance_loc:
		delta = op & 0x3f;
		goto advance;
	case DW_CFA_offset:
		err = exec_reg(cie, &rd, DW_CFA_offset, op & 0x3f, st);
		goto done;
	case DW_CFA_restore:
		reg = op & 0x3f;
		goto restore;
	default:
		break;
	}
	switch (op) {
	case DW_CFA_nop:
		break;
	case DW_CFA_set_loc:
		if (sp__cfi_rd_encoded(&rd, cie->fde_enc, &c->loc))
			return -1;
		goto moved;
	case DW_CFA_advance_loc1:
	case DW_CFA_advance_loc2:
	case DW_CFA_advance_loc4:
	case DW_CFA_MIPS_advance_loc8: {
		static const uint8_t width[] = { 1, 2, 4 };
		unsigned n = op == DW_CFA_MIPS_advance_loc8 ?
				     8 :
				     width[op - DW_CFA_advance_loc1];

		if (sp__cfi_rd_fixed(&rd, n, &delta))
			return -1;
		goto advance;
	}
	case DW_CFA_def_cfa:
	case DW_CFA_def_cfa_sf:
	case DW_CFA_def_cfa_register:
	case DW_CFA_def_cfa_offset:
	case DW_CFA_def_cfa_offset_sf:
	case DW_CFA_def_cfa_expression:
		err = exec_cfa(cie, &rd, (uint8_t)op, st);
		break;
	case DW_CFA_offset_extended:
	case DW_CFA_offset_extended_sf:
	case DW_CFA_GNU_negative_offset_extended:
	case DW_CFA_val_offset:
	case DW_CFA_val_offset_sf:
	case DW_CFA_undefined:
	case DW_CFA_same_value:
	case DW_CFA_register:
	case DW_CFA_expression:
	case DW_CFA_val_expression:
		err = exec_reg(cie, &rd, (uint8_t)op, 0, st);
		break;
	case DW_CFA_restore_extended:
		if (sp__cfi_rd_uleb(&rd, &reg))
			return -1;
		goto restore;
	case DW_CFA_remember_state:
		if (c->depth == SP__CFI_STACK)
			return -1;
		c->stack[c->depth++] = *st;
		break;
	case DW_CFA_restore_state:
		if (c->depth == 0)
			return -1;
		*st = c->stack[--c->depth];
		break;
	case DW_CFA_GNU_window_save:
		if (src->machine != EM_AARCH64)
			window_save(src, st);
		break;
	case DW_CFA_GNU_args_size:
		err = sp__cfi_rd_uleb(&rd, &delta);
		break;
	default:
		return -1;
	}
done:
	c->pos = rd.pos;
	return err ? -1 : 0;
restore:
	if (!init || reg >= REG_LIMIT)
		return -1;
	if (reg < SP__ARCH_NREGS)
		st->reg[reg] = init->reg[reg];
	c->pos = rd.pos;
	return 0;
advance:
	c->loc += delta * cie->code_align;
moved:
	if (!init)
		return -1;
	c->pos = rd.pos;
	return 1;
}

/* Runs a CIE's initial instructions over the ABI state, once. */
static int cie_init(struct sp__cfi_src *src, const struct sp__mem *mem,
		    struct sp__cfi_cie *cie)
{
	struct sp__cfi_cursor *c = &src->cur;
	int r, err;

	src->cur.fde = SIZE_MAX; /* the cursor is borrowed */
	cie->init = -1;
	if (abi_state(src->machine, &c->st))
		return 0;
	c->pos = cie->insn;
	c->depth = 0;
	while ((r = exec_one(src, cie, NULL, c, cie->insn_end)) == 0)
		;
	if (r != 2 || src->states.len >= UINT32_MAX)
		return 0;
	err = sp__vec_push(&src->states, mem, &c->st);
	if (err)
		return err;
	cie->state = (uint32_t)(src->states.len - 1);
	cie->init = 1;
	return 0;
}

/* The FDE with the greatest start <= pc, or SIZE_MAX. */
static size_t find_fde(struct sp__cfi_src *src, uint64_t pc)
{
	const struct sp__cfi_fde *f = src->fdes.data;
	size_t lo = 0, hi = src->fdes.len, h = src->hint;

	if (h < hi && f[h].start <= pc && (h + 1 == hi || f[h + 1].start > pc))
		return h;
	h++;
	if (h < hi && f[h].start <= pc && (h + 1 == hi || f[h + 1].start > pc))
		return src->hint = h;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return SIZE_MAX;
	return src->hint = lo - 1;
}

int sp__cfi_src_row(struct sp__cfi_src *src, const struct sp__mem *mem,
		    uint64_t pc, const struct sp__cfi_state **st, uint64_t *end,
		    bool *signalp)
{
	struct sp__cfi_cursor *c = &src->cur;
	const struct sp__cfi_fde *fde;
	struct sp__cfi_cie *cie;
	size_t idx = find_fde(src, pc);
	int r, err;

	if (idx == SIZE_MAX)
		return 1;
	fde = sp__vec_at(&src->fdes, idx);
	if (pc >= fde->end)
		return 1;
	cie = sp__vec_at(&src->cies, fde->cie);
	if (cie->init == 0) {
		err = cie_init(src, mem, cie);
		if (err)
			return err;
	}
	if (cie->init < 0)
		return 1;
	if (c->fde != idx || pc < c->max) {
		c->fde = idx;
		c->pos = fde->insn;
		c->loc = c->max = fde->start;
		c->status = 0;
		c->depth = 0;
		c->st = *(const struct sp__cfi_state *)sp__vec_at(&src->states,
								  cie->state);
	}
	*st = &c->st;
	*signalp = cie->signal;
	while (c->status == 0) {
		r = exec_one(src, cie, sp__vec_at(&src->states, cie->state), c,
			     fde->insn_end);
		if (r == 0)
			continue;
		if (r == 2) {
			c->status = 1;
			break;
		}
		if (r < 0) {
			c->status = -1;
			c->max = pc;
			break;
		}
		if (c->loc > c->max)
			c->max = c->loc;
		if (c->loc > pc) {
			*end = c->loc;
			return 0;
		}
	}
	if (c->status < 0)
		return 1;
	*end = fde->end;
	return 0;
}
