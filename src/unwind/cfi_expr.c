/* SPDX-License-Identifier: MIT */
/* A small, bounded DWARF expression evaluator for CFA and register rules. */
#include <errno.h>

#include <dwarf.h>

#include "unwind_internal.h"

/*
 * Only a few expressions appear in real CFI: on x86-64 the PLT's
 *   DW_CFA_def_cfa_expression (breg7 8; breg16 0; lit15; and; lit11; ge;
 *                              lit3; shl; plus)
 * and the signal trampoline's (breg7 160; deref) plus one
 * (call_frame_cfa; breg7 N) rule per saved register. The evaluator covers
 * the stack-machine subset those and hand-written assembly use (literals,
 * constants, breg, arithmetic, comparisons, stack shuffles, deref from the
 * copied stack) and fails on anything else: control flow (skip, bra),
 * register locations inside an expression, calls, TLS and the like. Every
 * evaluation is bounded (64 operations, 16 stack slots), so hostile CFI can
 * neither loop nor overflow.
 */

#define EXPR_MAX_OPS 64
#define EXPR_MAX_STACK 16

struct machine {
	uint64_t s[EXPR_MAX_STACK];
	unsigned n;
};

static int push(struct machine *m, uint64_t v)
{
	if (m->n == EXPR_MAX_STACK)
		return -EINVAL;
	m->s[m->n++] = v;
	return 0;
}

static int reg_value(const struct sp_regs *regs, uint64_t reg, uint64_t *out)
{
	if (reg >= SP__ARCH_NREGS || !(regs->valid & (1ull << reg)))
		return -EINVAL;
	*out = regs->r[reg];
	return 0;
}

static bool comparison(uint8_t atom, int64_t a, int64_t b, uint64_t *out)
{
	switch (atom) {
	case DW_OP_eq:
		*out = a == b;
		return true;
	case DW_OP_ne:
		*out = a != b;
		return true;
	case DW_OP_ge:
		*out = a >= b;
		return true;
	case DW_OP_gt:
		*out = a > b;
		return true;
	case DW_OP_le:
		*out = a <= b;
		return true;
	case DW_OP_lt:
		*out = a < b;
		return true;
	default:
		return false;
	}
}

/* Binary operators: pops b (top) and a, pushes a OP b. */
static int binary(struct machine *m, uint8_t atom)
{
	uint64_t a, b, r;

	if (m->n < 2)
		return -EINVAL;
	b = m->s[--m->n];
	a = m->s[m->n - 1];
	if (comparison(atom, (int64_t)a, (int64_t)b, &r)) {
		m->s[m->n - 1] = r;
		return 0;
	}
	switch (atom) {
	case DW_OP_and:
		r = a & b;
		break;
	case DW_OP_or:
		r = a | b;
		break;
	case DW_OP_xor:
		r = a ^ b;
		break;
	case DW_OP_plus:
		r = a + b;
		break;
	case DW_OP_minus:
		r = a - b;
		break;
	case DW_OP_mul:
		r = a * b;
		break;
	case DW_OP_shl:
		r = b < 64 ? a << b : 0;
		break;
	case DW_OP_shr:
		r = b < 64 ? a >> b : 0;
		break;
	case DW_OP_shra:
		r = b < 64 ? (uint64_t)((int64_t)a >> b) :
			     ((int64_t)a < 0 ? ~(uint64_t)0 : 0);
		break;
	case DW_OP_div:
		if (b == 0 || ((int64_t)a == INT64_MIN && (int64_t)b == -1))
			return -EINVAL;
		r = (uint64_t)((int64_t)a / (int64_t)b);
		break;
	case DW_OP_mod:
		if (b == 0)
			return -EINVAL;
		r = a % b;
		break;
	default:
		return -EINVAL;
	}
	m->s[m->n - 1] = r;
	return 0;
}

/* Stack shuffles and unary operators. */
static int shuffle(struct machine *m, const struct sp__cfi_op *op)
{
	uint64_t t;

	switch (op->atom) {
	case DW_OP_dup:
		return m->n ? push(m, m->s[m->n - 1]) : -EINVAL;
	case DW_OP_drop:
		return m->n ? (m->n--, 0) : -EINVAL;
	case DW_OP_over:
		return m->n >= 2 ? push(m, m->s[m->n - 2]) : -EINVAL;
	case DW_OP_pick:
		return op->number < m->n ?
			       push(m, m->s[m->n - 1 - op->number]) :
			       -EINVAL;
	case DW_OP_swap:
		if (m->n < 2)
			return -EINVAL;
		t = m->s[m->n - 1];
		m->s[m->n - 1] = m->s[m->n - 2];
		m->s[m->n - 2] = t;
		return 0;
	case DW_OP_rot:
		if (m->n < 3)
			return -EINVAL;
		t = m->s[m->n - 1];
		m->s[m->n - 1] = m->s[m->n - 2];
		m->s[m->n - 2] = m->s[m->n - 3];
		m->s[m->n - 3] = t;
		return 0;
	default:
		break;
	}
	if (m->n == 0)
		return -EINVAL;
	t = m->s[m->n - 1];
	switch (op->atom) {
	case DW_OP_neg:
		t = 0 - t;
		break;
	case DW_OP_not:
		t = ~t;
		break;
	case DW_OP_abs:
		t = (int64_t)t < 0 ? 0 - t : t;
		break;
	case DW_OP_plus_uconst:
		t += op->number;
		break;
	default:
		return -EINVAL;
	}
	m->s[m->n - 1] = t;
	return 0;
}

static int deref(struct machine *m, const struct sp__stack *stack,
		 uint64_t size)
{
	uint64_t v;

	if (m->n == 0 || size == 0 || size > 8)
		return -EINVAL;
	if (sp__stack_read(stack, m->s[m->n - 1], &v))
		return -ERANGE;
	if (size < 8)
		v &= (~(uint64_t)0) >> (64 - 8 * size);
	m->s[m->n - 1] = v;
	return 0;
}

/* Operations that push one value. 1 = not one of them. */
static int push_op(struct machine *m, const struct sp__cfi_op *op,
		   const struct sp_regs *regs, bool cfa_valid, uint64_t cfa)
{
	uint64_t v;
	int err;

	if (op->atom >= DW_OP_lit0 && op->atom <= DW_OP_lit31)
		return push(m, (uint64_t)(op->atom - DW_OP_lit0));
	if (op->atom >= DW_OP_breg0 && op->atom <= DW_OP_breg31) {
		err = reg_value(regs, (uint64_t)(op->atom - DW_OP_breg0), &v);
		return err ? err : push(m, v + op->number);
	}
	switch (op->atom) {
	case DW_OP_bregx:
		err = reg_value(regs, op->number, &v);
		return err ? err : push(m, v + op->number2);
	case DW_OP_const1u:
	case DW_OP_const1s:
	case DW_OP_const2u:
	case DW_OP_const2s:
	case DW_OP_const4u:
	case DW_OP_const4s:
	case DW_OP_const8u:
	case DW_OP_const8s:
	case DW_OP_constu:
	case DW_OP_consts:
	case DW_OP_addr:
		/* libdw already sign-extended the signed forms. */
		return push(m, op->number);
	case DW_OP_call_frame_cfa:
		return cfa_valid ? push(m, cfa) : -EINVAL;
	default:
		return 1;
	}
}

static int step(struct machine *m, const struct sp__cfi_op *op,
		const struct sp_regs *regs, const struct sp__stack *stack,
		bool cfa_valid, uint64_t cfa)
{
	int err = push_op(m, op, regs, cfa_valid, cfa);

	if (err <= 0)
		return err;
	switch (op->atom) {
	case DW_OP_nop:
	case DW_OP_stack_value:
		return 0;
	case DW_OP_deref:
		return deref(m, stack, 8);
	case DW_OP_deref_size:
		return deref(m, stack, op->number);
	case DW_OP_and:
	case DW_OP_or:
	case DW_OP_xor:
	case DW_OP_plus:
	case DW_OP_minus:
	case DW_OP_mul:
	case DW_OP_shl:
	case DW_OP_shr:
	case DW_OP_shra:
	case DW_OP_div:
	case DW_OP_mod:
	case DW_OP_eq:
	case DW_OP_ne:
	case DW_OP_ge:
	case DW_OP_gt:
	case DW_OP_le:
	case DW_OP_lt:
		return binary(m, op->atom);
	default:
		return shuffle(m, op);
	}
}

int sp__cfi_expr_eval(const struct sp__cfi_table *table, uint32_t expr,
		      const struct sp_regs *regs, const struct sp__stack *stack,
		      bool cfa_valid, uint64_t cfa, uint64_t *out)
{
	const struct sp__cfi_expr *ex;
	struct machine m;
	uint32_t i;
	int err;

	if (expr >= table->nexprs)
		return -EINVAL;
	ex = &table->exprs[expr];
	if (ex->nops > EXPR_MAX_OPS || ex->first > table->nops ||
	    ex->nops > table->nops - ex->first)
		return -EINVAL;
	m.n = 0;
	for (i = 0; i < ex->nops; i++) {
		err = step(&m, &table->ops[ex->first + i], regs, stack,
			   cfa_valid, cfa);
		if (err)
			return err;
	}
	if (m.n == 0)
		return -EINVAL;
	*out = m.s[m.n - 1];
	return 0;
}
