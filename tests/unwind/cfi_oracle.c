/* SPDX-License-Identifier: MIT */
/* The tests' oracle: the CFI table builder as it was, on libdw. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>

#include "hash.h"
#include "map.h"
#include "unwind_internal.h"
#include "vec.h"

#include "cfi_oracle.h"

/*
 * This is src/unwind/cfi_build.c before it read the sections itself
 * (commit 421804b), kept verbatim but for its name so that
 * test_cfi_differential and bench_unwind compare the new builder with
 * it: same rows, rule sets, extras, expressions and operations.
 *
 * libdw answers "which row covers pc" (dwarf_cfi_addrframe) and tells the
 * row's [start, end) range (dwarf_frame_info), but it has no row iterator.
 * So the builder first lists where every FDE begins (dwarf_next_cfi over
 * the raw sections, decoding the initial location with the CIE's pointer
 * encoding), then walks from each FDE start: look up pc, emit a row, jump
 * to the row's end, and when a lookup fails (a gap between functions),
 * emit a SP__RULES_NONE row and jump to the next FDE start.
 *
 *   FDE starts:   s0            s1        s2
 *   code:         [r r r r r ] gap [r r r ][r r r r]
 *   rows:         0 1 2 3 4   N    5 6 7   8 9 ...  N (end sentinel)
 *
 * .eh_frame wins where both sections describe a pc (it is what the runtime
 * uses); .debug_frame fills the rest. Rule sets are interned (rows hold
 * an index) and adjacent rows with the same rule set are merged. Everything libdw hands out is copied: the Dwarf_CFI handles are
 * ended before returning, so the finished table outlives them and is read
 * by many threads while libdw is never touched again.
 *
 * Hostile input: the number of lookups is capped by the CFI byte size
 * (each row needs at least one instruction byte), so a crafted FDE cannot
 * make the build quadratic without bound.
 */

struct builder {
	const struct sp__mem *mem;
	Dwarf_CFI *cfi[2];     /* .eh_frame, .debug_frame */
	struct sp__vec starts; /* uint64_t */
	struct sp__vec rows;   /* struct sp__cfi_row, pc relative to base */
	struct sp__vec rules;  /* struct sp__cfi_rules, [0] = gap */
	struct sp__vec extras;
	struct sp__vec exprs;
	struct sp__vec ops;
	struct sp__vec synth; /* struct sp__cfi_synth, by start */
	struct sp__map dedup;
	uint64_t base;
	size_t budget; /* lookups left */
};

/* ---- rules ------------------------------------------------------------ */

static int intern(struct builder *b, struct sp__vec *vec, const void *item,
		  size_t size, uint64_t kind, uint32_t *index)
{
	uint64_t key[3] = { sp__hash_bytes(item, size), size, kind };
	uint64_t h = sp__map_hash(key);
	uint32_t idx;
	int err;
	bool known = sp__map_get(&b->dedup, key, h, &idx);

	if (known && memcmp(sp__vec_at(vec, idx), item, size) == 0) {
		*index = idx;
		return 0;
	}
	if (vec->len >= UINT32_MAX)
		return -E2BIG;
	idx = (uint32_t)vec->len;
	err = sp__vec_push(vec, b->mem, item);
	if (!err && !known)
		err = sp__map_put(&b->dedup, b->mem, key, h, idx);
	*index = idx;
	return err;
}

static uint64_t hash_ops(const Dwarf_Op *ops, size_t nops)
{
	uint64_t h = nops;
	size_t i;

	for (i = 0; i < nops; i++) {
		uint64_t w[3] = { ops[i].atom, ops[i].number, ops[i].number2 };

		h = sp__hash_mix(h ^ sp__hash_words(w, 3));
	}
	return h;
}

static bool same_ops(const struct builder *b, uint32_t idx, const Dwarf_Op *ops,
		     size_t nops)
{
	const struct sp__cfi_expr *ex = sp__vec_at(&b->exprs, idx);
	const struct sp__cfi_op *o = sp__vec_at(&b->ops, ex->first);
	size_t i;

	if (ex->nops != nops)
		return false;
	for (i = 0; i < nops; i++)
		if (o[i].atom != ops[i].atom || o[i].number != ops[i].number ||
		    o[i].number2 != ops[i].number2)
			return false;
	return true;
}

/* Copies a libdw expression into ops[] and returns its exprs[] index. */
static int intern_expr(struct builder *b, const Dwarf_Op *ops, size_t nops,
		       uint32_t *index)
{
	uint64_t key[3] = { hash_ops(ops, nops), nops, 2 };
	uint64_t h = sp__map_hash(key);
	struct sp__cfi_expr ex;
	uint32_t idx;
	bool known;
	size_t i;
	int err;

	if (nops == 0 || nops > 64)
		return -EINVAL;
	known = sp__map_get(&b->dedup, key, h, &idx);
	if (known && same_ops(b, idx, ops, nops)) {
		*index = idx;
		return 0;
	}
	if (b->ops.len + nops >= UINT32_MAX || b->exprs.len >= UINT32_MAX)
		return -E2BIG;
	err = sp__vec_reserve(&b->ops, b->mem, nops);
	if (err)
		return err;
	ex.first = (uint32_t)b->ops.len;
	ex.nops = (uint32_t)nops;
	for (i = 0; i < nops; i++) {
		struct sp__cfi_op op = { .number = ops[i].number,
					 .number2 = ops[i].number2,
					 .atom = ops[i].atom };

		sp__vec_push(&b->ops, b->mem, &op); /* reserved above */
	}
	idx = (uint32_t)b->exprs.len;
	err = sp__vec_push(&b->exprs, b->mem, &ex);
	if (!err && !known)
		err = sp__map_put(&b->dedup, b->mem, key, h, idx);
	*index = idx;
	return err;
}

static bool fits_i32(int64_t v)
{
	return v >= INT32_MIN && v <= INT32_MAX;
}

/* Classifies one register rule as dwarf_frame_register reports it. */
static int classify(struct builder *b, const Dwarf_Op *ops, size_t nops,
		    const Dwarf_Op *ops_mem, struct sp__cfi_rule *rule)
{
	bool val = nops > 0 && ops[nops - 1].atom == DW_OP_stack_value;
	size_t n = val ? nops - 1 : nops;
	uint32_t idx;
	int err;

	memset(rule, 0, sizeof(*rule));
	/* research/feasibility.md §3: same_value and undefined both have
	 * nops == 0; only the pointer tells them apart. */
	if (nops == 0) {
		rule->kind = ops == ops_mem ? SP__RULE_UNDEF : SP__RULE_SAME;
		return 0;
	}
	if (ops[0].atom == DW_OP_call_frame_cfa &&
	    (n == 1 || (n == 2 && ops[1].atom == DW_OP_plus_uconst &&
			fits_i32((int64_t)ops[1].number)))) {
		rule->kind = val ? SP__RULE_VAL_CFA : SP__RULE_AT_CFA;
		rule->off = n == 2 ? (int32_t)(int64_t)ops[1].number : 0;
		return 0;
	}
	if (!val && n == 1 && ops[0].atom == DW_OP_regx &&
	    ops[0].number < SP__ARCH_NREGS) {
		rule->kind = SP__RULE_REG;
		rule->reg = (uint8_t)ops[0].number;
		return 0;
	}
	err = intern_expr(b, ops, nops, &idx);
	if (err == -EINVAL) {
		rule->kind = SP__RULE_UNDEF;
		return 0;
	}
	rule->kind = val ? SP__RULE_VAL_EXPR : SP__RULE_AT_EXPR;
	rule->off = (int32_t)idx;
	return err;
}

static int frame_cfa(struct builder *b, Dwarf_Frame *fr,
		     struct sp__cfi_rules *row)
{
	Dwarf_Op *ops;
	size_t nops;
	uint32_t idx;
	int err;

	row->cfa_reg = SP__CFA_NONE;
	if (dwarf_frame_cfa(fr, &ops, &nops) != 0 || nops == 0)
		return 0;
	if (nops == 1 && ops[0].atom == DW_OP_bregx &&
	    ops[0].number < SP__ARCH_NREGS &&
	    fits_i32((int64_t)ops[0].number2)) {
		row->cfa_reg = (uint8_t)ops[0].number;
		row->cfa_off = (int32_t)(int64_t)ops[0].number2;
		return 0;
	}
	err = intern_expr(b, ops, nops, &idx);
	if (err == -EINVAL)
		return 0;
	row->cfa_reg = SP__CFA_EXPR;
	row->cfa_off = (int32_t)idx;
	return err;
}

/*
 * The register rules of row @fr: the tracked registers of an ordinary
 * row, packed when the architecture's simple form holds them, else every
 * register into an extras[] entry (signal frames always).
 */
static int frame_regs(struct builder *b, Dwarf_Frame *fr, bool signalp,
		      struct sp__cfi_rules *row)
{
	struct sp__cfi_extra x;
	size_t i, n = signalp ? SP__ARCH_NREGS : sp__arch_ntracked;
	int err;

	memset(&x, 0, sizeof(x));
	for (i = 0; i < n; i++) {
		unsigned reg = signalp ? (unsigned)i : sp__arch_tracked_regs[i];
		Dwarf_Op mem[3], *ops;
		size_t nops;

		if (dwarf_frame_register(fr, (int)reg, mem, &ops, &nops) != 0) {
			ops = mem;
			nops = 0; /* unreadable rule: undefined */
		}
		err = classify(b, ops, nops, mem, &x.rule[reg]);
		if (err)
			return err;
		if (!signalp && x.rule[reg].kind == SP__RULE_UNDEF)
			sp__arch_rule_default(reg, &x.rule[reg]);
		if (x.rule[reg].kind != SP__RULE_SAME)
			x.mask |= 1ull << reg;
	}
	if (signalp)
		row->flags |= SP__ROW_SIGNAL;
	else if (sp__arch_pack(&x, row))
		return 0;
	/* Keeps the CFA; clears the packed fields pack may have written. */
	memset(&row->flags, 0,
	       sizeof(*row) - offsetof(struct sp__cfi_rules, flags));
	row->flags = (uint8_t)(signalp ? SP__ROW_SIGNAL : 0) | SP__ROW_EXTRA;
	return intern(b, &b->extras, &x, sizeof(x), 1, &row->extra);
}

/* ---- the walk ---------------------------------------------------------- */

/* Looks up @pc in .eh_frame, then .debug_frame. NULL when neither covers. */
static Dwarf_Frame *lookup(struct builder *b, uint64_t pc)
{
	Dwarf_Frame *fr = NULL;
	size_t i;

	for (i = 0; i < 2; i++) {
		if (b->cfi[i] && dwarf_cfi_addrframe(b->cfi[i], pc, &fr) == 0)
			return fr;
		fr = NULL;
	}
	return NULL;
}

/* Appends a row at svma @pc unless it only continues the previous row. */
static int emit(struct builder *b, uint64_t pc, const struct sp__cfi_rules *r)
{
	struct sp__cfi_row row, *last = NULL;
	int err;

	if (pc - b->base > UINT32_MAX)
		return -E2BIG;
	row.pc = (uint32_t)(pc - b->base);
	err = intern(b, &b->rules, r, sizeof(*r), 3, &row.rules);
	if (err)
		return err;
	if (b->rows.len)
		last = sp__vec_at(&b->rows, b->rows.len - 1);
	if (last && last->rules == row.rules)
		return 0;
	return sp__vec_push(&b->rows, b->mem, &row);
}

/*
 * Where no CFI covers @pc: the architecture's own row when one of its
 * ranges does (emitted, its end in *@next, 0), else 1.
 */
static int synth_one(struct builder *b, uint64_t pc, uint64_t *next)
{
	const struct sp__cfi_synth *sy = b->synth.data;
	size_t i;

	for (i = 0; i < b->synth.len; i++) {
		if (pc < sy[i].start || pc >= sy[i].end)
			continue;
		*next = sy[i].end;
		return emit(b, pc, &sy[i].rules);
	}
	return 1;
}

/*
 * One lookup at @pc: emits its row and returns the row's end in *@next,
 * or returns 1 when no CFI covers @pc (a gap).
 */
static int walk_one(struct builder *b, uint64_t pc, uint64_t *next)
{
	struct sp__cfi_rules row = { 0 };
	Dwarf_Addr start, end;
	Dwarf_Frame *fr;
	bool signalp;
	int err;

	fr = lookup(b, pc);
	if (!fr)
		return synth_one(b, pc, next);
	err = 1;
	if (dwarf_frame_info(fr, &start, &end, &signalp) < 0 || end <= pc)
		goto out_free;
	err = frame_cfa(b, fr, &row);
	if (!err && row.cfa_reg != SP__CFA_NONE)
		err = frame_regs(b, fr, signalp, &row);
	if (!err)
		err = emit(b, pc, &row);
	*next = end;
out_free:
	free(fr); /* libdw mallocs every Dwarf_Frame */
	return err;
}

static int walk(struct builder *b)
{
	const uint64_t *starts = b->starts.data;
	static const struct sp__cfi_rules none = { .cfa_reg = SP__CFA_NONE };
	size_t i = 0, n = b->starts.len;
	uint64_t pc, next;
	uint32_t gap;
	int err;

	if (n == 0)
		return 0;
	/* The gap rule set is interned first: it is SP__RULES_NONE. */
	err = intern(b, &b->rules, &none, sizeof(none), 3, &gap);
	if (err)
		return err;
	b->base = pc = starts[0];
	/* pc strictly increases every round, so the walk ends. */
	while (b->budget-- > 0 && pc - b->base < UINT32_MAX) {
		err = walk_one(b, pc, &next);
		if (err < 0)
			return err;
		if (err == 0) {
			pc = next;
			while (i < n && starts[i] < pc)
				i++;
			continue;
		}
		err = emit(b, pc, &none);
		if (err)
			return err;
		while (i < n && starts[i] <= pc)
			i++;
		if (i == n)
			break;
		pc = starts[i];
	}
	if (pc - b->base > UINT32_MAX)
		pc = b->base + UINT32_MAX;
	return emit(b, pc, &none);
}

/* ---- assembly ---------------------------------------------------------- */

/* Moves a vec into an exactly sized block (the table frees by size). */
static int take(struct builder *b, struct sp__vec *vec, void **out, size_t *len,
		size_t *bytes)
{
	size_t size = vec->len * vec->elem;

	*out = NULL;
	*len = vec->len;
	if (size == 0)
		return 0;
	*out = sp__mem_alloc(b->mem, size);
	if (!*out)
		return -ENOMEM;
	memcpy(*out, vec->data, size);
	*bytes += size;
	return 0;
}

static int assemble(struct builder *b, struct sp__cfi_table *t)
{
	const struct sp__cfi_row *last;
	int err;

	t->base = b->base;
	if (b->rows.len) {
		last = sp__vec_at(&b->rows, b->rows.len - 1);
		t->span = last->pc;
	}
	t->bytes = sizeof(*t);
	err = take(b, &b->rows, (void **)&t->rows, &t->nrows, &t->bytes);
	if (!err)
		err = take(b, &b->rules, (void **)&t->rules, &t->nrules,
			   &t->bytes);
	if (!err)
		err = take(b, &b->extras, (void **)&t->extras, &t->nextras,
			   &t->bytes);
	if (!err)
		err = take(b, &b->exprs, (void **)&t->exprs, &t->nexprs,
			   &t->bytes);
	if (!err)
		err = take(b, &b->ops, (void **)&t->ops, &t->nops, &t->bytes);
	if (!err)
		err = sp__cfi_table_index(t);
	return err;
}

static int open_cfi(struct builder *b, Elf *elf, Dwarf **dw)
{
	Elf_Scn *eh, *debug;
	int err;

	*dw = NULL;
	err = sp__cfi_find_sections(elf, &eh, &debug);
	if (err)
		return err;
	if (eh) {
		err = sp__cfi_fde_starts(b->mem, elf, eh, true, &b->starts,
					 &b->budget);
		if (!err && b->starts.len)
			b->cfi[0] = dwarf_getcfi_elf(elf);
	}
	if (!err && debug) {
		size_t before = b->starts.len;

		err = sp__cfi_fde_starts(b->mem, elf, debug, false, &b->starts,
					 &b->budget);
		if (!err && b->starts.len > before)
			*dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		if (*dw)
			b->cfi[1] = dwarf_getcfi(*dw);
	}
	return err;
}

/* The architecture's own ranges, their starts among the FDE starts. */
static int open_synth(struct builder *b, Elf *elf)
{
	const struct sp__cfi_synth *sy;
	size_t i;
	int err = sp__arch_synth(b->mem, elf, &b->synth);

	sy = b->synth.data;
	for (i = 0; !err && i < b->synth.len; i++) {
		err = sp__vec_push(&b->starts, b->mem, &sy[i].start);
		b->budget += 2;
	}
	return err;
}

static void builder_fini(struct builder *b, Dwarf *dw)
{
	if (b->cfi[0])
		dwarf_cfi_end(b->cfi[0]);
	if (dw)
		dwarf_end(dw); /* also ends cfi[1], which it owns */
	sp__vec_fini(&b->starts, b->mem);
	sp__vec_fini(&b->rows, b->mem);
	sp__vec_fini(&b->rules, b->mem);
	sp__vec_fini(&b->extras, b->mem);
	sp__vec_fini(&b->exprs, b->mem);
	sp__vec_fini(&b->ops, b->mem);
	sp__vec_fini(&b->synth, b->mem);
	sp__map_fini(&b->dedup, b->mem);
}

int cfi_oracle_build(const struct sp__mem *mem, Elf *elf,
		     struct sp__cfi_table **out)
{
	struct builder b = { .mem = mem, .budget = 1024 };
	struct sp__cfi_table *t;
	Dwarf *dw = NULL;
	int err;

	sp__vec_init(&b.starts, sizeof(uint64_t));
	sp__vec_init(&b.rows, sizeof(struct sp__cfi_row));
	sp__vec_init(&b.rules, sizeof(struct sp__cfi_rules));
	sp__vec_init(&b.extras, sizeof(struct sp__cfi_extra));
	sp__vec_init(&b.exprs, sizeof(struct sp__cfi_expr));
	sp__vec_init(&b.ops, sizeof(struct sp__cfi_op));
	sp__vec_init(&b.synth, sizeof(struct sp__cfi_synth));
	sp__map_init(&b.dedup);
	t = sp__mem_calloc(mem, 1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	t->mem = *mem;
	err = open_cfi(&b, elf, &dw);
	if (!err)
		err = open_synth(&b, elf);
	if (!err) {
		sp__cfi_sort_starts(&b.starts);
		err = walk(&b);
	}
	if (!err)
		err = assemble(&b, t);
	builder_fini(&b, dw);
	if (err) {
		sp__cfi_table_free(t);
		return err;
	}
	*out = t;
	return 0;
}
