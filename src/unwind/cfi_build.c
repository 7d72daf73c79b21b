/* SPDX-License-Identifier: MIT */
/* Builds the compact CFI table of an ELF image, once. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <gelf.h>

#include "cfi_rows.h"
#include "hash.h"
#include "map.h"
#include "unwind_internal.h"
#include "vec.h"

/*
 * The builder walks the code from the first FDE start: at each pc it asks
 * for the row covering it (.eh_frame first, it is what the runtime uses;
 * .debug_frame for the rest), emits it and jumps to the row's end; where
 * no CFI covers pc (a gap between functions) it emits a SP__RULES_NONE
 * row and jumps to the next FDE start.
 *
 *   FDE starts:   s0            s1        s2
 *   code:         [r r r r r ] gap [r r r ][r r r r]
 *   rows:         0 1 2 3 4   N    5 6 7   8 9 ...  N (end sentinel)
 *
 * The rows come from cfi_parse.c and cfi_exec.c, which read the sections
 * once and run each FDE's program once, forward (libdw, used here before,
 * has no row iterator: every row was a fresh FDE search and a re-run of
 * the program up to pc, 0.6 us a row in libc). They keep libdw's rule
 * forms, so the rules, extras and expressions come out as libdw's
 * dwarf_frame_cfa / dwarf_frame_register gave them (the tests compare
 * with that builder, tests/unwind/cfi_oracle.c). Rule sets are interned
 * (rows hold an index) and adjacent rows with the same rule set are
 * merged. The table points into no section: it outlives the ELF.
 *
 * Hostile input: the number of lookups is capped by the CFI byte size
 * (each row needs at least one instruction byte), and a walk over
 * increasing pcs runs each instruction at most once.
 */

struct builder {
	const struct sp__mem *mem;
	struct sp__cfi_src src[2]; /* .eh_frame, .debug_frame */
	bool open[2];
	struct sp__vec starts; /* uint64_t */
	struct sp__vec rows;   /* struct sp__cfi_row, pc relative to base */
	struct sp__vec rules;  /* struct sp__cfi_rules, [0] = gap */
	struct sp__vec extras;
	struct sp__vec exprs;
	struct sp__vec ops;
	struct sp__vec synth; /* struct sp__cfi_synth, by start */
	struct sp__map dedup;
	/* The last rule sets interned, by a hash of their words: most rows
	 * use one of a few hundred, and intern() hashes bytewise. */
	struct {
		struct sp__cfi_rules rules;
		uint32_t index;
		bool valid;
	} recent[64];
	/* Rows by their CFI state (struct seen): the same state gives the
	 * same rule set, whose entries were interned the first time. */
	struct seen *seen;
	uint64_t base;
	size_t budget; /* lookups left */
};

/* ---- rules ------------------------------------------------------------ */

/* The CFA and tracked register rules of an ordinary row, as words. */
#define SEEN_WORDS (3 + 2 * 16)
#define SEEN_SLOTS 256

struct seen {
	uint64_t key[SEEN_WORDS];
	uint32_t rules; /* index into rules[] */
	bool valid;
};

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

#define EXPR_MAX 64 /* longer expressions leave the rule undefined */

static uint64_t hash_ops(const struct sp__cfi_op *ops, size_t nops)
{
	uint64_t h = nops;
	size_t i;

	for (i = 0; i < nops; i++) {
		uint64_t w[3] = { ops[i].atom, ops[i].number, ops[i].number2 };

		h = sp__hash_mix(h ^ sp__hash_words(w, 3));
	}
	return h;
}

static bool same_ops(const struct builder *b, uint32_t idx,
		     const struct sp__cfi_op *ops, size_t nops)
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

/* Copies an expression into ops[] and returns its exprs[] index. */
static int intern_expr(struct builder *b, const struct sp__cfi_op *ops,
		       size_t nops, uint32_t *index)
{
	uint64_t key[3] = { hash_ops(ops, nops), nops, 2 };
	uint64_t h = sp__map_hash(key);
	struct sp__cfi_expr ex;
	uint32_t idx;
	bool known;
	size_t i;
	int err;

	if (nops == 0 || nops > EXPR_MAX)
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
	for (i = 0; i < nops; i++)
		sp__vec_push(&b->ops, b->mem, &ops[i]); /* reserved above */
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

bool sp__cfi_small_off(const struct sp__cfi_rule *r)
{
	return r->off % 8 == 0 && r->off / 8 >= INT8_MIN &&
	       r->off / 8 <= INT8_MAX;
}

bool sp__cfi_pack_saves(const struct sp__cfi_extra *x, uint64_t *saves)
{
	unsigned k;

	*saves = 0;
	for (k = 0; k < SP__SAVE_NREGS; k++) {
		const struct sp__cfi_rule *r = &x->rule[sp__cfi_saved_reg(k)];

		if (r->kind == SP__RULE_SAME)
			continue;
		if (r->kind != SP__RULE_AT_CFA || r->off % 8 != 0 ||
		    r->off > -8 || r->off < -8 * SP__SAVE_MAX)
			return false;
		*saves |= (uint64_t)(-r->off / 8) << (SP__SAVE_BITS * k);
	}
	return true;
}

/* Classifies a rule given as operations (@nops > 0), as libdw gave it. */
static int classify_ops(struct builder *b, const struct sp__cfi_op *ops,
			size_t nops, struct sp__cfi_rule *rule)
{
	bool val = ops[nops - 1].atom == DW_OP_stack_value;
	size_t n = val ? nops - 1 : nops;
	uint32_t idx;
	int err;

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

/*
 * Classifies the rule of @reg in @st. libdw reported it as operations:
 * CFA-relative ones as call_frame_cfa [plus_uconst N] [stack_value],
 * a register as regx R, an expression decoded after a call_frame_cfa;
 * unspecified and undefined rules, empty and undecodable expressions as
 * none (undefined); same value as none too, told apart by its pointer.
 */
static int classify(struct builder *b, const struct sp__cfi_src *src,
		    const struct sp__cfi_state *st, unsigned reg,
		    struct sp__cfi_rule *rule)
{
	const struct sp__cfi_reg *r = &st->reg[reg];
	struct sp__cfi_op ops[EXPR_MAX];
	struct sp__cfi_rd rd = { src, 0, src->size };
	uint64_t len;
	int n = 0;

	memset(rule, 0, sizeof(*rule));
	switch (r->rule) {
	case SP__CFI_R_UNSPEC:
	case SP__CFI_R_UNDEF:
		rule->kind = SP__RULE_UNDEF;
		return 0;
	case SP__CFI_R_SAME:
		rule->kind = SP__RULE_SAME;
		return 0;
	case SP__CFI_R_OFFSET:
		if (fits_i32(r->value)) {
			/* call_frame_cfa [plus_uconst N]: at CFA + N. */
			rule->kind = SP__RULE_AT_CFA;
			rule->off = (int32_t)r->value;
			return 0;
		}
		/* fall through */
	case SP__CFI_R_VAL_OFFSET:
	case SP__CFI_R_REGISTER:
		memset(ops, 0, 3 * sizeof(ops[0]));
		break;
	default:
		break;
	}
	switch (r->rule) {
	case SP__CFI_R_OFFSET:
	case SP__CFI_R_VAL_OFFSET:
		ops[n++].atom = DW_OP_call_frame_cfa;
		if (r->value != 0) {
			ops[n].atom = DW_OP_plus_uconst;
			ops[n++].number = (uint64_t)r->value;
		}
		if (r->rule == SP__CFI_R_VAL_OFFSET)
			ops[n++].atom = DW_OP_stack_value;
		break;
	case SP__CFI_R_REGISTER:
		ops[n].atom = DW_OP_regx;
		ops[n++].number = (uint64_t)r->value;
		break;
	case SP__CFI_R_EXPR:
	case SP__CFI_R_VAL_EXPR:
		rd.pos = (size_t)r->value;
		if (sp__cfi_rd_uleb(&rd, &len))
			break;
		n = sp__cfi_ops_decode(src, rd.pos, (size_t)len, true,
				       r->rule == SP__CFI_R_VAL_EXPR, ops,
				       EXPR_MAX);
		break;
	default:
		break;
	}
	if (n <= 0) {
		rule->kind = SP__RULE_UNDEF;
		return 0;
	}
	return classify_ops(b, ops, (size_t)n, rule);
}

static int frame_cfa(struct builder *b, const struct sp__cfi_src *src,
		     const struct sp__cfi_state *st, struct sp__cfi_rules *row)
{
	struct sp__cfi_op ops[EXPR_MAX];
	uint32_t idx;
	int n, err;

	row->cfa_reg = SP__CFA_NONE;
	if (st->cfa_rule == SP__CFI_CFA_OFFSET) {
		if (st->cfa_reg < SP__ARCH_NREGS &&
		    fits_i32((int64_t)st->cfa_off)) {
			row->cfa_reg = (uint8_t)st->cfa_reg;
			row->cfa_off = (int32_t)(int64_t)st->cfa_off;
			return 0;
		}
		memset(ops, 0, sizeof(ops[0]));
		ops[0].atom = DW_OP_bregx;
		ops[0].number = st->cfa_reg;
		ops[0].number2 = st->cfa_off;
		n = 1;
	} else if (st->cfa_rule == SP__CFI_CFA_EXPR) {
		n = sp__cfi_ops_decode(src, (size_t)st->cfa_reg,
				       (size_t)st->cfa_off, false, false, ops,
				       EXPR_MAX);
	} else {
		return 0;
	}
	if (n <= 0)
		return 0;
	err = intern_expr(b, ops, (size_t)n, &idx);
	if (err == -EINVAL)
		return 0;
	row->cfa_reg = SP__CFA_EXPR;
	row->cfa_off = (int32_t)idx;
	return err;
}

/*
 * The register rules of row @st: the tracked registers of an ordinary
 * row, packed when the architecture's simple form holds them, else every
 * register into an extras[] entry (signal frames always).
 */
static int frame_regs(struct builder *b, const struct sp__cfi_src *src,
		      const struct sp__cfi_state *st, bool signalp,
		      struct sp__cfi_rules *row)
{
	struct sp__cfi_extra x;
	size_t i, n = signalp ? SP__ARCH_NREGS : sp__arch_ntracked;
	int err;

	memset(&x, 0, sizeof(x));
	for (i = 0; i < n; i++) {
		unsigned reg = signalp ? (unsigned)i : sp__arch_tracked_regs[i];

		err = classify(b, src, st, reg, &x.rule[reg]);
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

/* intern() of a rule set, through the recent[] cache. */
static int intern_rules(struct builder *b, const struct sp__cfi_rules *r,
			uint32_t *index)
{
	uint64_t w[sizeof(*r) / 8];
	unsigned slot;
	int err;

	_Static_assert(sizeof(*r) % 8 == 0, "rule sets are whole words");
	memcpy(w, r, sizeof(w));
	slot = (unsigned)(sp__hash_words(w, sizeof(w) / 8) % 64);
	if (b->recent[slot].valid &&
	    memcmp(&b->recent[slot].rules, r, sizeof(*r)) == 0) {
		*index = b->recent[slot].index;
		return 0;
	}
	err = intern(b, &b->rules, r, sizeof(*r), 3, index);
	if (!err) {
		b->recent[slot].rules = *r;
		b->recent[slot].index = *index;
		b->recent[slot].valid = true;
	}
	return err;
}

/* Appends a row at svma @pc unless it only continues the previous row. */
static int emit(struct builder *b, uint64_t pc, const struct sp__cfi_rules *r)
{
	struct sp__cfi_row row, *last = NULL;
	int err;

	if (pc - b->base > UINT32_MAX)
		return -E2BIG;
	row.pc = (uint32_t)(pc - b->base);
	err = intern_rules(b, r, &row.rules);
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

/* Appends a row of rule set @rules at svma @pc (see emit). */
static int emit_index(struct builder *b, uint64_t pc, uint32_t rules)
{
	struct sp__cfi_row row = { (uint32_t)(pc - b->base), rules }, *last;

	if (pc - b->base > UINT32_MAX)
		return -E2BIG;
	if (b->rows.len) {
		last = sp__vec_at(&b->rows, b->rows.len - 1);
		if (last->rules == rules)
			return 0;
	}
	return sp__vec_push(&b->rows, b->mem, &row);
}

/*
 * The row of an ordinary (non-signal) state @st of source @si at @pc:
 * classified once per distinct state, the rule set index remembered in
 * seen[] (the classification of the same state interns nothing new).
 */
static int emit_seen(struct builder *b, uint64_t pc, size_t si,
		     const struct sp__cfi_state *st)
{
	struct sp__cfi_rules row = { 0 };
	uint64_t key[SEEN_WORDS];
	size_t i, n = 3 + 2 * sp__arch_ntracked;
	uint64_t h = 0;
	struct seen *e;
	int err;

	key[0] = st->cfa_rule | (uint64_t)si << 8;
	key[1] = st->cfa_reg;
	key[2] = st->cfa_off;
	for (i = 0; i < sp__arch_ntracked; i++) {
		const struct sp__cfi_reg *r =
			&st->reg[sp__arch_tracked_regs[i]];

		key[3 + 2 * i] = r->rule;
		key[4 + 2 * i] = (uint64_t)r->value;
	}
	for (i = 0; i < n; i++) /* a cheap mix: the slot, not the identity */
		h = (h ^ key[i]) * 0x9e3779b97f4a7c15ull;
	e = &b->seen[(h >> 40) % SEEN_SLOTS];
	if (e->valid && memcmp(e->key, key, n * sizeof(key[0])) == 0)
		return emit_index(b, pc, e->rules);
	err = frame_cfa(b, &b->src[si], st, &row);
	if (!err && row.cfa_reg != SP__CFA_NONE)
		err = frame_regs(b, &b->src[si], st, false, &row);
	if (!err)
		err = intern_rules(b, &row, &e->rules);
	if (err) {
		e->valid = false;
		return err;
	}
	memcpy(e->key, key, n * sizeof(key[0]));
	e->valid = true;
	return emit_index(b, pc, e->rules);
}

/*
 * One lookup at @pc: emits its row and returns the row's end in *@next,
 * or returns 1 when no CFI covers @pc (a gap).
 */
static int walk_one(struct builder *b, uint64_t pc, uint64_t *next)
{
	struct sp__cfi_rules row = { 0 };
	const struct sp__cfi_state *st = NULL;
	const struct sp__cfi_src *src = NULL;
	uint64_t end = 0;
	bool signalp = false;
	size_t i;
	int err;

	for (i = 0; i < 2 && !src; i++) {
		if (!b->open[i])
			continue;
		err = sp__cfi_src_row(&b->src[i], b->mem, pc, &st, &end,
				      &signalp);
		if (err < 0)
			return err;
		if (err == 0)
			src = &b->src[i];
	}
	if (!src)
		return synth_one(b, pc, next);
	if (end <= pc)
		return 1;
	*next = end;
	if (!signalp && b->seen)
		return emit_seen(b, pc, (size_t)(src - b->src), st);
	err = frame_cfa(b, src, st, &row);
	if (!err && row.cfa_reg != SP__CFA_NONE)
		err = frame_regs(b, src, st, signalp, &row);
	if (!err)
		err = emit(b, pc, &row);
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

/* Opens one section's rows for the walk. */
static int open_src(struct builder *b, Elf *elf, Elf_Scn *scn, size_t i)
{
	const unsigned char *ident =
		(const unsigned char *)elf_getident(elf, NULL);
	GElf_Ehdr ehdr;
	GElf_Shdr shdr;
	Elf_Data *data;
	bool swap;
	int err;

	if (!ident || !gelf_getehdr(elf, &ehdr) || !gelf_getshdr(scn, &shdr) ||
	    (shdr.sh_flags & SHF_COMPRESSED))
		return 0;
	/* libdw reads .eh_frame raw, .debug_frame converted (no-op: bytes). */
	data = i == 0 ? elf_rawdata(scn, NULL) : elf_getdata(scn, NULL);
	if (!data || !data->d_buf)
		return 0;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	swap = ident[EI_DATA] == ELFDATA2MSB;
#else
	swap = ident[EI_DATA] == ELFDATA2LSB;
#endif
	err = sp__cfi_src_open(&b->src[i], b->mem, data->d_buf, data->d_size,
			       i == 0 ? shdr.sh_addr : 0, i == 0, swap,
			       ident[EI_CLASS] == ELFCLASS32 ? 4 : 8,
			       (uint16_t)ehdr.e_machine);
	b->open[i] = true;
	return err;
}

/*
 * The FDE starts of both sections (cfi_fde.c), and their rows: a
 * section whose entries give no start is not read further.
 */
static int open_cfi(struct builder *b, Elf *elf)
{
	Elf_Scn *eh, *debug;
	size_t before;
	int err;

	err = sp__cfi_find_sections(elf, &eh, &debug);
	if (err)
		return err;
	if (eh) {
		err = sp__cfi_fde_starts(b->mem, elf, eh, true, &b->starts,
					 &b->budget);
		if (!err && b->starts.len)
			err = open_src(b, elf, eh, 0);
	}
	if (!err && debug) {
		before = b->starts.len;
		err = sp__cfi_fde_starts(b->mem, elf, debug, false, &b->starts,
					 &b->budget);
		if (!err && b->starts.len > before)
			err = open_src(b, elf, debug, 1);
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

/* Sorts and deduplicates the FDE starts. */
static int sort_starts(struct builder *b)
{
	uint64_t *s = b->starts.data;
	size_t i, n = 0;
	int err = sp__cfi_sort_keys(b->mem, s, NULL, b->starts.len);

	for (i = 0; !err && i < b->starts.len; i++)
		if (n == 0 || s[n - 1] != s[i])
			s[n++] = s[i];
	if (!err)
		b->starts.len = n;
	return err;
}

/*
 * Room for the rows the walk will emit, about one per 8 bytes of CFI
 * (libc: 28,491 rows from 1.3 MiB of code), so that the vectors do not
 * grow by copying.
 */
static int presize(struct builder *b)
{
	size_t n = b->budget / 8 + 2 * b->starts.len + 16;
	int err = sp__vec_reserve(&b->rows, b->mem, n);

	if (!err)
		err = sp__vec_reserve(&b->rules, b->mem, 256);
	if (!err)
		err = sp__map_reserve(&b->dedup, b->mem, 512);
	/* Without it rows are classified one by one: same table. */
	if (!err && sp__arch_ntracked <= 16)
		b->seen = sp__mem_calloc(b->mem, SEEN_SLOTS, sizeof(*b->seen));
	return err;
}

static void builder_fini(struct builder *b)
{
	size_t i;

	for (i = 0; i < 2; i++)
		if (b->open[i])
			sp__cfi_src_close(&b->src[i], b->mem);
	if (b->seen)
		sp__mem_free(b->mem, b->seen, SEEN_SLOTS * sizeof(*b->seen));
	sp__vec_fini(&b->starts, b->mem);
	sp__vec_fini(&b->rows, b->mem);
	sp__vec_fini(&b->rules, b->mem);
	sp__vec_fini(&b->extras, b->mem);
	sp__vec_fini(&b->exprs, b->mem);
	sp__vec_fini(&b->ops, b->mem);
	sp__vec_fini(&b->synth, b->mem);
	sp__map_fini(&b->dedup, b->mem);
}

int sp__cfi_table_build(const struct sp__mem *mem, Elf *elf,
			struct sp__cfi_table **out)
{
	struct builder b = { .mem = mem, .budget = 1024 };
	struct sp__cfi_table *t;
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
	err = open_cfi(&b, elf);
	if (!err)
		err = open_synth(&b, elf);
	if (!err)
		err = sort_starts(&b);
	if (!err)
		err = presize(&b);
	if (!err)
		err = walk(&b);
	if (!err)
		err = assemble(&b, t);
	builder_fini(&b);
	if (err) {
		sp__cfi_table_free(t);
		return err;
	}
	*out = t;
	return 0;
}
