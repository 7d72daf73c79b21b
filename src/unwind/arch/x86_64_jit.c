/* SPDX-License-Identifier: MIT */
/* x86-64 decoder of JIT trampoline templates: the frame at every instruction. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "jit_table.h"
#include "unwind_internal.h"

/*
 * A trampoline is a few instructions that set up a frame, call, tear it
 * down and return. CPython 3.12 and 3.13 (-X perf) copy
 *
 *   48 83 ec 08   sub  $8, %rsp
 *   ff d1         call *%rcx         <- return address: CFA = RSP + 16
 *   48 83 c4 08   add  $8, %rsp
 *   c3            ret
 *
 * and later versions keep a frame pointer instead
 *
 *   55            push %rbp
 *   48 89 e5      mov  %rsp, %rbp
 *   ff d1         call *%rcx         <- CFA = RBP + 16, RBP at CFA - 16
 *   5d            pop  %rbp
 *   c3            ret
 *
 * The decoder follows the stack pointer through each instruction it
 * knows, exactly as a CFI row would describe it (CFA = RSP + sp_off, or
 * RBP + off once RBP holds the frame; saved registers at CFA - 8n), and
 * gives up on anything else: an instruction it does not know could move
 * the stack in a way it cannot see, and then no row would be exact. The
 * row of an instruction holds from its first byte, which is also where a
 * return address minus one lands for the call before it.
 */

#define SP_OFF_MAX (8 * 127) /* what an rbp slot field can hold */

struct state {
	int32_t sp_off;	 /* CFA - RSP */
	int32_t rbp_off; /* CFA - RBP, when @frame */
	bool frame;	 /* RBP points into this frame: CFA = RBP + rbp_off */
	bool called;
	uint8_t saved[SP_X86_64_NREGS]; /* slot CFA - 8n of a caller's value */
};

/* x86 register number (ModRM / opcode order) to DWARF. */
static const uint8_t dwarf_reg[16] = { 0, 2, 1,	 3,  7,	 6,  4,	 5,
				       8, 9, 10, 11, 12, 13, 14, 15 };

static bool callee_saved(unsigned r)
{
	return r == 3 || r == SP_X86_64_RBP || (r >= 12 && r <= 15);
}

static int add_row(const struct state *st, uint32_t off,
		   struct sp__jit_template *out)
{
	struct sp__jit_row r = { .off = off };

	r.cfa_reg = st->frame ? SP_X86_64_RBP : SP_X86_64_RSP;
	r.cfa_off = st->frame ? st->rbp_off : st->sp_off;
	memcpy(r.saved, st->saved, sizeof(r.saved));
	if (out->nrows) {
		const struct sp__jit_row *last = &out->rows[out->nrows - 1];

		if (last->cfa_reg == r.cfa_reg && last->cfa_off == r.cfa_off &&
		    memcmp(last->saved, r.saved, sizeof(r.saved)) == 0)
			return 0;
	}
	if (out->nrows == SP__JIT_TPL_ROWS)
		return -EINVAL;
	out->rows[out->nrows++] = r;
	return 0;
}

static int push(struct state *st, unsigned reg)
{
	if (reg == SP_X86_64_RSP || st->sp_off + 8 > SP_OFF_MAX)
		return -EINVAL;
	st->sp_off += 8;
	if (callee_saved(reg) && !st->saved[reg])
		st->saved[reg] = (uint8_t)(st->sp_off / 8);
	return 0;
}

static int pop(struct state *st, unsigned reg)
{
	if (reg == SP_X86_64_RSP || st->sp_off <= 8)
		return -EINVAL;
	if (callee_saved(reg)) {
		/* A callee-saved register gets back only its own slot. */
		if (st->saved[reg] != st->sp_off / 8)
			return -EINVAL;
		st->saved[reg] = 0;
		if (reg == SP_X86_64_RBP)
			st->frame = false;
	}
	st->sp_off -= 8;
	return 0;
}

static int adjust(struct state *st, int64_t delta)
{
	int64_t v = st->sp_off + delta;

	if (v < 8 || v > SP_OFF_MAX || (v & 7))
		return -EINVAL;
	st->sp_off = (int32_t)v;
	return 0;
}

/* The 48-prefixed forms: mov between RSP and RBP, add/sub on RSP. */
static int rex_w(struct state *st, const uint8_t *p, size_t left, size_t *n)
{
	if (left >= 3 && ((p[1] == 0x89 && p[2] == 0xe5) ||
			  (p[1] == 0x8b && p[2] == 0xec))) {
		if (!st->saved[SP_X86_64_RBP]) /* the caller's RBP is lost */
			return -EINVAL;
		st->frame = true;
		st->rbp_off = st->sp_off;
		*n = 3;
		return 0;
	}
	if (left >= 3 && ((p[1] == 0x89 && p[2] == 0xec) ||
			  (p[1] == 0x8b && p[2] == 0xe5))) {
		if (!st->frame)
			return -EINVAL;
		st->sp_off = st->rbp_off;
		*n = 3;
		return 0;
	}
	if (left >= 4 && p[1] == 0x83 && (p[2] == 0xec || p[2] == 0xc4)) {
		*n = 4;
		return adjust(st, (p[2] == 0xec ? 1 : -1) * (int8_t)p[3]);
	}
	if (left >= 7 && p[1] == 0x81 && (p[2] == 0xec || p[2] == 0xc4)) {
		int32_t imm;

		memcpy(&imm, p + 3, 4);
		*n = 7;
		return adjust(st, (p[2] == 0xec ? 1 : -1) * (int64_t)imm);
	}
	return -EINVAL;
}

/*
 * One instruction at @p: its length in *@n, 1 in *@end after a return
 * (or a tail jump). Returns 0 or -EINVAL.
 */
static int step(struct state *st, const uint8_t *p, size_t left, size_t *n,
		bool *end)
{
	unsigned hi = 0, op = p[0];

	if (op == 0x41 && left >= 2) { /* REX.B: r8-r15 */
		hi = 8;
		op = p[1];
		p++, left--;
	}
	*n = hi ? 2 : 1;
	if (op >= 0x50 && op <= 0x57)
		return push(st, dwarf_reg[hi + op - 0x50]);
	if (op >= 0x58 && op <= 0x5f)
		return pop(st, dwarf_reg[hi + op - 0x58]);
	if (op == 0xff && left >= 2 && (p[1] & 0xf0) >= 0xd0 &&
	    (p[1] & 0xf8) != 0xd8 && p[1] <= 0xe7) {
		bool jump = p[1] >= 0xe0; /* ff /4 jmp *reg, ff /2 call *reg */

		(*n)++;
		st->called |= !jump;
		*end = jump;
		return jump && st->sp_off != 8 ? -EINVAL : 0;
	}
	if (hi)
		return -EINVAL;
	switch (op) {
	case 0x48:
		return rex_w(st, p, left, n);
	case 0xe8: /* call rel32 */
		if (left < 5)
			return -EINVAL;
		*n = 5;
		st->called = true;
		return 0;
	case 0xc9: /* leave */
		if (!st->frame)
			return -EINVAL;
		st->sp_off = st->rbp_off;
		return pop(st, SP_X86_64_RBP);
	case 0xc3:
		*end = true;
		return st->sp_off == 8 ? 0 : -EINVAL;
	case 0x90:
		return 0;
	case 0xf3: /* endbr64 */
		if (left < 4 || p[1] != 0x0f || p[2] != 0x1e || p[3] != 0xfa)
			return -EINVAL;
		*n = 4;
		return 0;
	default:
		return -EINVAL;
	}
}

int sp__arch_jit_decode(const uint8_t *code, size_t len,
			struct sp__jit_template *out)
{
	struct state st = { .sp_off = 8 };
	size_t off = 0, n;
	bool end = false;
	int err;

	memset(out, 0, sizeof(*out));
	if (len > SP__JIT_TPL_MAX)
		len = SP__JIT_TPL_MAX;
	while (!end) {
		if (off >= len)
			return -EINVAL;
		err = add_row(&st, (uint32_t)off, out);
		if (!err)
			err = step(&st, code + off, len - off, &n, &end);
		if (err)
			return err;
		off += n;
	}
	out->len = off;
	return st.called ? 0 : -EINVAL;
}
