/* SPDX-License-Identifier: MIT */
/* Unwind tables for tiled JIT trampolines, built from the code bytes. */
#include <errno.h>
#include <string.h>

#include "jit_table.h"
#include "unwind_internal.h"
#include "vec.h"

/*
 * A tiled mapping, as CPython fills each trampoline arena:
 *
 *   offset  0         S         2S             (n-1)S     (n-1)S+L  len
 *           [template][template][template] ... [template]  (rest)
 *            ^ L bytes, decoded; the stride S >= L is found by search
 *
 * The table has the template's rows at i * S + off for every copy i (a
 * gap row where S > L) and ends after the last copy, so the rest of the
 * mapping (never executed: CPython leaves it zeroed) is not covered.
 * Rule sets are those of the template, a handful; rows are 8 bytes, so a
 * 64 KiB arena of 11-byte copies costs about 150 KiB, once per distinct
 * arena content (every arena of one Python build is the same).
 */

#define STRIDE_SLACK 64 /* padding after a copy that the search accepts */

/* The rule set of one template row; -E2BIG if a slot cannot be encoded. */
static int row_rules(const struct sp__jit_row *r, struct sp__cfi_rules *out)
{
	static const unsigned packed[SP__SAVE_NREGS] = { 3, 12, 13, 14, 15 };
	unsigned k;

	memset(out, 0, sizeof(*out));
	out->cfa_reg = r->cfa_reg;
	out->cfa_off = r->cfa_off;
	out->ra = -1;
	if (r->saved[SP_X86_64_RBP]) {
		if (r->saved[SP_X86_64_RBP] > 127)
			return -E2BIG;
		out->flags |= SP__ROW_RBP_SAVED;
		out->rbp = (int8_t)-r->saved[SP_X86_64_RBP];
	}
	for (k = 0; k < SP__SAVE_NREGS; k++) {
		if (r->saved[packed[k]] > SP__SAVE_MAX)
			return -E2BIG;
		out->saves |= (uint32_t)r->saved[packed[k]]
			      << (SP__SAVE_BITS * k);
	}
	return 0;
}

/* The smallest stride at which a second copy starts, 0 when none does. */
static size_t find_stride(const uint8_t *code, size_t len, size_t tlen)
{
	size_t s;

	for (s = tlen; s <= tlen + STRIDE_SLACK && s + tlen <= len; s++)
		if (memcmp(code + s, code, tlen) == 0)
			return s;
	return 0;
}

struct build {
	const struct sp__mem *mem;
	struct sp__vec rows; /* struct sp__cfi_row */
	struct sp__cfi_rules rules[SP__JIT_TPL_ROWS + 1];
	uint32_t tpl_rules[SP__JIT_TPL_ROWS]; /* rules index per template row */
	size_t nrules;
};

static int push_row(struct build *b, uint64_t pc, uint32_t rules)
{
	struct sp__cfi_row row = { .pc = (uint32_t)pc, .rules = rules };
	const struct sp__cfi_row *last =
		b->rows.len ? sp__vec_at(&b->rows, b->rows.len - 1) : NULL;

	if (pc > UINT32_MAX)
		return -E2BIG;
	if (last && last->rules == rules)
		return 0;
	return sp__vec_push(&b->rows, b->mem, &row);
}

/* Interns the template's rule sets; rules[0] is the gap (no CFI). */
static int intern_template(struct build *b, const struct sp__jit_template *t)
{
	struct sp__cfi_rules r;
	size_t i, j;
	int err;

	memset(&b->rules[0], 0, sizeof(b->rules[0]));
	b->rules[0].cfa_reg = SP__CFA_NONE;
	b->nrules = 1;
	for (i = 0; i < t->nrows; i++) {
		err = row_rules(&t->rows[i], &r);
		if (err)
			return err;
		for (j = 1; j < b->nrules; j++)
			if (memcmp(&b->rules[j], &r, sizeof(r)) == 0)
				break;
		if (j == b->nrules)
			b->rules[b->nrules++] = r;
		b->tpl_rules[i] = (uint32_t)j;
	}
	return 0;
}

static int emit_copies(struct build *b, const struct sp__jit_template *t,
		       size_t stride, size_t copies)
{
	size_t i, k;
	int err = 0;

	for (i = 0; i < copies && !err; i++) {
		for (k = 0; k < t->nrows && !err; k++)
			err = push_row(b, i * stride + t->rows[k].off,
				       b->tpl_rules[k]);
		if (!err && (stride > t->len || i + 1 == copies))
			err = push_row(b, i * stride + t->len, SP__RULES_NONE);
	}
	return err;
}

static int assemble(struct build *b, struct sp__cfi_table *t)
{
	const struct sp__cfi_row *last = sp__vec_at(&b->rows, b->rows.len - 1);
	size_t rows = b->rows.len * sizeof(struct sp__cfi_row);
	size_t rules = b->nrules * sizeof(struct sp__cfi_rules);

	t->base = 0;
	t->span = last->pc;
	/* Counts set with each block: the table is freed by them. */
	t->rows = sp__mem_alloc(b->mem, rows);
	if (!t->rows)
		return -ENOMEM;
	t->nrows = b->rows.len;
	t->rules = sp__mem_alloc(b->mem, rules);
	if (!t->rules)
		return -ENOMEM;
	t->nrules = b->nrules;
	memcpy(t->rows, b->rows.data, rows);
	memcpy(t->rules, b->rules, rules);
	t->bytes = sizeof(*t) + rows + rules;
	return sp__cfi_table_index(t);
}

int sp__jit_tiled_table(const struct sp__mem *mem, const uint8_t *code,
			size_t len, struct sp__cfi_table **out)
{
	struct build b = { .mem = mem };
	struct sp__jit_template tpl;
	struct sp__cfi_table *t = NULL;
	size_t stride, copies, i;
	int err;

	if (!code || len > UINT32_MAX)
		return -EINVAL;
	err = sp__arch_jit_decode(code, len, &tpl);
	stride = err ? 0 : find_stride(code, len, tpl.len);
	if (!stride)
		return -EINVAL;
	copies = (len - tpl.len) / stride + 1;
	for (i = 1; i < copies; i++)
		if (memcmp(code + i * stride, code, tpl.len) != 0)
			return -EINVAL;
	sp__vec_init(&b.rows, sizeof(struct sp__cfi_row));
	err = intern_template(&b, &tpl);
	if (!err)
		err = emit_copies(&b, &tpl, stride, copies);
	if (!err && !(t = sp__mem_calloc(mem, 1, sizeof(*t))))
		err = -ENOMEM;
	if (!err) {
		t->mem = *mem;
		err = assemble(&b, t);
	}
	sp__vec_fini(&b.rows, mem);
	if (err) {
		sp__cfi_table_free(t);
		return err;
	}
	*out = t;
	return 0;
}
