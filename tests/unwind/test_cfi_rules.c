/* SPDX-License-Identifier: MIT */
/* CFI rule sets against libdw, the page index, and the packed-save step. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "self.h"
#include "unwind_internal.h"

/*
 * The compact table must say exactly what libdw says. For every row of
 * libc's table and of this executable's, at the row's first and last
 * byte, the CFA rule and the rules of RA, RBP, RBX and R12-R15 decoded
 * from the rule set (packed fields or extras) are compared with
 * dwarf_cfi_addrframe's. Then the page index and its binary search are
 * checked against a linear scan on synthetic rows (dense clusters make
 * long pages, wide gaps make empty ones), and the step is checked on a
 * packed rule set: slots read from the stack copy, a slot outside the copy
 * making only that register unknown, an RA outside it failing the step.
 * Last, the in-place fast step is compared with the full step on random
 * rule sets, registers and stack bytes.
 */

static struct sp__mem mem;

struct rule_view {
	int kind; /* enum sp__rule_kind, or -1: some expression */
	int64_t off;
};

/* What libdw reports for @reg, normalised as the builder does. */
static struct rule_view dw_rule(Dwarf_Frame *fr, int reg)
{
	struct rule_view v = { SP__RULE_UNDEF, 0 };
	Dwarf_Op mem_ops[3], *ops;
	size_t nops, n;
	bool val;

	if (dwarf_frame_register(fr, reg, mem_ops, &ops, &nops) != 0)
		return v;
	val = nops > 0 && ops[nops - 1].atom == DW_OP_stack_value;
	n = val ? nops - 1 : nops;
	if (nops == 0)
		v.kind = ops == mem_ops ? SP__RULE_UNDEF : SP__RULE_SAME;
	else if (ops[0].atom == DW_OP_call_frame_cfa &&
		 (n == 1 || (n == 2 && ops[1].atom == DW_OP_plus_uconst)))
		v = (struct rule_view){ val ? SP__RULE_VAL_CFA :
					      SP__RULE_AT_CFA,
					n == 2 ? (int64_t)ops[1].number : 0 };
	else if (!val && n == 1 && ops[0].atom == DW_OP_regx)
		v = (struct rule_view){ SP__RULE_REG, (int64_t)ops[0].number };
	else
		v.kind = -1;
	/* The psABI: an unspecified callee-saved register keeps its value. */
	if (reg != SP_X86_64_RIP && v.kind == SP__RULE_UNDEF)
		v.kind = SP__RULE_SAME;
	return v;
}

/* The same rule decoded from a rule set. */
static struct rule_view our_rule(const struct sp__cfi_table *t,
				 const struct sp__cfi_rules *r, int reg)
{
	struct rule_view v = { SP__RULE_SAME, 0 };
	unsigned k, n;

	if (r->flags & SP__ROW_EXTRA) {
		const struct sp__cfi_rule *x = &t->extras[r->extra].rule[reg];

		v.kind = x->kind >= SP__RULE_AT_EXPR ? -1 : x->kind;
		v.off = x->kind == SP__RULE_REG ? x->reg : x->off;
		if (reg != SP_X86_64_RIP && v.kind == SP__RULE_UNDEF)
			v.kind = SP__RULE_SAME;
		return v;
	}
	if (reg == SP_X86_64_RIP) {
		if (r->flags & SP__ROW_RA_UNDEF)
			return (struct rule_view){ SP__RULE_UNDEF, 0 };
		return (struct rule_view){ SP__RULE_AT_CFA, 8 * r->ra };
	}
	if (reg == SP_X86_64_RBP) {
		if (r->flags & SP__ROW_RBP_SAVED)
			return (struct rule_view){ SP__RULE_AT_CFA,
						   8 * r->rbp };
		return v; /* undefined is "same" after normalisation */
	}
	for (k = 0; k < SP__SAVE_NREGS; k++) {
		n = (r->saves >> (SP__SAVE_BITS * k)) & SP__SAVE_MAX;
		if ((int)sp__cfi_saved_reg(k) == reg && n)
			return (struct rule_view){ SP__RULE_AT_CFA,
						   -8 * (int64_t)n };
	}
	return v;
}

static void compare_at(Dwarf_CFI *cfi, const struct sp__cfi_table *t,
		       const struct sp__cfi_rules *r, uint64_t svma)
{
	static const int regs[] = {
		SP_X86_64_RIP, SP_X86_64_RBP, 3, 12, 13, 14, 15
	};
	Dwarf_Frame *fr = NULL;
	Dwarf_Op *ops;
	size_t i, nops;

	CHECK_OK(dwarf_cfi_addrframe(cfi, svma, &fr));
	CHECK_OK(dwarf_frame_cfa(fr, &ops, &nops));
	if (nops == 1 && ops[0].atom == DW_OP_bregx) {
		CHECK_EQ(r->cfa_reg, ops[0].number);
		CHECK_EQ((int64_t)r->cfa_off, (int64_t)ops[0].number2);
	} else {
		CHECK_EQ(r->cfa_reg, SP__CFA_EXPR);
	}
	for (i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
		struct rule_view want = dw_rule(fr, regs[i]);
		struct rule_view got = our_rule(t, r, regs[i]);

		CHECK_EQ_INT(got.kind, want.kind);
		if (want.kind >= SP__RULE_AT_CFA)
			CHECK_EQ(got.off, want.off);
	}
	free(fr);
}

/* Every row of the image holding @pc, checked against libdw. */
static void test_against_libdw(uint64_t pc)
{
	struct sp__cfi_table *t;
	struct sp__image *img;
	Dwarf_CFI *cfi;
	Dl_info info;
	size_t i, checked = 0;

	CHECK(dladdr((void *)(uintptr_t)pc, &info) != 0);
	CHECK_OK(sp__image_open_path(&mem, info.dli_fname, &img));
	sp__image_lock(img);
	CHECK_OK(sp__cfi_table_build(&mem, sp__image_elf(img), &t));
	cfi = dwarf_getcfi_elf(sp__image_elf(img));
	CHECK_PTR(cfi);
	for (i = 0; i + 1 < t->nrows; i++) {
		const struct sp__cfi_rules *r = &t->rules[t->rows[i].rules];

		if (t->rows[i].rules == SP__RULES_NONE)
			continue;
		compare_at(cfi, t, r, t->base + t->rows[i].pc);
		compare_at(cfi, t, r, t->base + t->rows[i + 1].pc - 1);
		checked++;
	}
	CHECK(checked > 10);
	dwarf_cfi_end(cfi);
	sp__image_unlock(img);
	sp__image_unref(img);
	sp__cfi_table_free(t);
}

/* ---- page index ------------------------------------------------------- */

static uint32_t next_rand(uint32_t *s)
{
	*s = *s * 1103515245u + 12345u;
	return *s >> 8;
}

/* Rows 0..n-1 at clustered and spread pcs; rule set i + 1 for row i. */
static void test_index(uint32_t seed, size_t n)
{
	struct sp__cfi_table t = { 0 };
	uint32_t pc = 0, s = seed;
	uint64_t off;
	size_t i, j;

	t.mem = mem;
	t.nrows = n;
	t.nrules = n + 1;
	t.rows = calloc(n, sizeof(*t.rows));
	t.rules = calloc(n + 1, sizeof(*t.rules));
	CHECK(t.rows && t.rules);
	for (i = 0; i < n; i++) {
		t.rows[i].pc = pc;
		/* Every 7th row is a gap; the sentinel is one. */
		t.rows[i].rules = i % 7 == 3 || i + 1 == n ? 0 :
							     (uint32_t)i + 1;
		pc += next_rand(&s) % 16 == 0 ? 1 + next_rand(&s) % 4000 :
						1 + next_rand(&s) % 3;
	}
	t.span = t.rows[n - 1].pc;
	CHECK_OK(sp__cfi_table_index(&t));
	for (off = 0, j = 0; off < t.span; off++) {
		const struct sp__cfi_rules *got = sp__cfi_table_find(&t, off);

		while (j + 1 < n && t.rows[j + 1].pc <= off)
			j++;
		CHECK(got ==
		      (t.rows[j].rules ? &t.rules[t.rows[j].rules] : NULL));
	}
	CHECK(sp__cfi_table_find(&t, t.span) == NULL);
	t.bytes = 0;
	sp__mem_free(&mem, t.page_first, (t.npages + 1) * sizeof(uint32_t));
	free(t.rows);
	free(t.rules);
}

/* ---- the step on packed saves ----------------------------------------- */

static void test_step_saves(void)
{
	struct sp__cfi_table t = { 0 };
	struct sp__cfi_rules r = { .cfa_off = 64,
				   .cfa_reg = SP_X86_64_RSP,
				   .flags = SP__ROW_RBP_SAVED,
				   .ra = -1,
				   .rbp = -2 };
	struct sp_regs cur = { .valid = 0x1ffff, .abi = SP_REGS_ABI_64 };
	struct sp_regs next;
	uint64_t words[8];
	struct sp__stack stack = { (const uint8_t *)words, sizeof(words),
				   0x10000 };
	struct sp__step_fail fail;
	size_t i;

	/* RBX at CFA - 24, R12 at CFA - 32, R15 at CFA - 64. */
	r.saves = 3u | 4u << SP__SAVE_BITS | 8u << (4 * SP__SAVE_BITS);
	for (i = 0; i < 8; i++)
		words[i] = 0x1000 + i;
	for (i = 0; i < SP_X86_64_NREGS; i++)
		cur.r[i] = 0x500 + i;
	cur.r[SP_X86_64_RSP] = 0x10000;
	CHECK_EQ_INT(sp__arch_step_cfi(&t, &r, &stack, &cur, &next, &fail), 0);
	CHECK_EQ(next.r[SP_X86_64_RSP], 0x10040);
	CHECK_EQ(next.r[SP_X86_64_RIP], 0x1007);
	CHECK_EQ(next.r[SP_X86_64_RBP], 0x1006);
	CHECK_EQ(next.r[3], 0x1005);
	CHECK_EQ(next.r[12], 0x1004);
	CHECK_EQ(next.r[13], cur.r[13]);
	CHECK_EQ(next.r[14], cur.r[14]);
	CHECK_EQ(next.r[15], 0x1000);
	/* Caller-saved registers are unknown in the caller. */
	CHECK_EQ(next.valid, 0x1f0c8u | 1u << SP_X86_64_RIP);
	/* R15's slot is below the copy: popped already, R15 is kept. */
	stack.data += 8;
	stack.len -= 8;
	stack.addr += 8;
	CHECK_EQ_INT(sp__arch_step_cfi(&t, &r, &stack, &cur, &next, &fail), 0);
	CHECK(next.valid & (1u << 15));
	CHECK_EQ(next.r[15], cur.r[15]);
	CHECK_EQ(next.r[12], 0x1004);
	CHECK_EQ(next.r[SP_X86_64_RIP], 0x1007);
	/* At the ret: every save but RA's is below the copy. */
	stack.data += 6 * 8;
	stack.len -= 6 * 8;
	stack.addr += 6 * 8;
	CHECK_EQ_INT(sp__arch_step_cfi(&t, &r, &stack, &cur, &next, &fail), 0);
	CHECK_EQ(next.r[SP_X86_64_RIP], 0x1007);
	CHECK_EQ(next.r[SP_X86_64_RBP], cur.r[SP_X86_64_RBP]);
	CHECK_EQ(next.r[3], cur.r[3]);
	CHECK_EQ(next.r[12], cur.r[12]);
	CHECK_EQ(next.valid, 0x1f0c8u | 1u << SP_X86_64_RIP);
	/* The RA slot past the copy fails the step. */
	stack = (struct sp__stack){ (const uint8_t *)words, 8, 0x10000 };
	CHECK_EQ_INT(sp__arch_step_cfi(&t, &r, &stack, &cur, &next, &fail), -1);
	CHECK_EQ_INT(fail.error, SP_SAMPLE_ERR_STACK_TRUNCATED);
}

/* ---- the in-place fast step equals the full step ------------------------ */

static struct sp__cfi_rules random_rules(uint32_t *s)
{
	static const uint8_t flag_sets[] = { 0,
					     SP__ROW_RBP_SAVED,
					     SP__ROW_RBP_UNDEF,
					     SP__ROW_RA_UNDEF,
					     SP__ROW_SIGNAL,
					     SP__ROW_RBP_SAVED |
						     SP__ROW_RA_UNDEF };
	struct sp__cfi_rules r = { 0 };
	unsigned k;

	r.cfa_reg = (uint8_t)(next_rand(s) % 8 == 0 ? SP__CFA_EXPR :
						      next_rand(s) % 19);
	r.cfa_off = (int32_t)(next_rand(s) % 600) - 64;
	if (next_rand(s) % 4)
		r.cfa_off &= ~7;
	r.flags = flag_sets[next_rand(s) % sizeof(flag_sets)];
	r.ra = (int8_t)((int)(next_rand(s) % 4) - 2);
	r.rbp = (int8_t)((int)(next_rand(s) % 8) - 6);
	for (k = 0; k < SP__SAVE_NREGS; k++)
		if (next_rand(s) % 2)
			r.saves |= (next_rand(s) % 12) << (SP__SAVE_BITS * k);
	return r;
}

/* RBX, R12-R15 after a step, from the packed fields, read by hand. */
static void check_saves(const struct sp__cfi_rules *r, const uint64_t *words,
			size_t nwords, uint64_t addr,
			const struct sp_regs *before,
			const struct sp_regs *after)
{
	uint64_t cfa = after->r[SP_X86_64_RSP], slot, v;
	unsigned k, n, reg;

	for (k = 0; k < SP__SAVE_NREGS; k++) {
		n = (r->saves >> (SP__SAVE_BITS * k)) & SP__SAVE_MAX;
		reg = sp__cfi_saved_reg(k);
		slot = cfa - 8 * n;
		if (n == 0) {
			CHECK_EQ(after->r[reg], before->r[reg]);
			CHECK_EQ(after->valid & (1u << reg),
				 before->valid & (1u << reg));
		} else if (slot >= addr && slot + 8 <= addr + 8 * nwords) {
			/* Registers and offsets need not be aligned. */
			memcpy(&v, (const uint8_t *)words + (slot - addr), 8);
			CHECK(after->valid & (1u << reg));
			CHECK_EQ(after->r[reg], v);
		} else if (slot < addr && cfa >= 8 * n) {
			/* Below the copy: already restored, kept. */
			CHECK_EQ(after->r[reg], before->r[reg]);
			CHECK_EQ(after->valid & (1u << reg),
				 before->valid & (1u << reg));
		} else {
			CHECK(!(after->valid & (1u << reg)));
		}
	}
}

/*
 * Random rule sets, registers and stack bytes: whenever the fast path
 * takes a step it must give, once its caller applies the rule set's
 * saves, the full step's caller registers, and when it
 * declines it must leave the registers alone. The saved registers are
 * also checked by hand: the stack is large enough for the branch-free
 * path of apply_saves() and small enough for its checked one.
 */
static void test_fast_equals_full(void)
{
	static uint64_t words[128];
	struct sp__cfi_table t = { 0 };
	struct sp__stack stack = { (const uint8_t *)words, sizeof(words),
				   0x7000 };
	struct sp_regs cur, next, fast;
	struct sp__step_fail fail;
	uint32_t s = 99, reg, fast_steps = 0;
	int iter, full;

	for (iter = 0; iter < 200000; iter++) {
		struct sp__cfi_rules r = random_rules(&s);

		for (reg = 0; reg < 128; reg++)
			words[reg] = next_rand(&s) % 5 == 0 ?
					     0 :
					     0x7000 + next_rand(&s) % 1400;
		for (reg = 0; reg < SP_X86_64_NREGS; reg++)
			cur.r[reg] = 0x7000 + next_rand(&s) % 1000;
		cur.valid = next_rand(&s) % 3 ? 0x1ffff : next_rand(&s);
		cur.abi = SP_REGS_ABI_64;
		full = sp__arch_step_cfi(&t, &r, &stack, &cur, &next, &fail);
		fast = cur;
		if (sp__arch_step_simple(&r, &stack, &fast) != 0) {
			CHECK(memcmp(&fast, &cur, sizeof(cur)) == 0);
			continue;
		}
		fast_steps++;
		/* The fast path leaves RBX and R12-R15 to its caller. */
		sp__arch_apply_saves(r.saves, &stack, fast.r[SP_X86_64_RSP],
				     &fast);
		CHECK_EQ_INT(full, 0);
		CHECK_EQ(fast.valid, next.valid);
		for (reg = 0; reg < SP_X86_64_NREGS; reg++)
			if (next.valid & (1u << reg))
				CHECK_EQ(fast.r[reg], next.r[reg]);
		check_saves(&r, words, 128, stack.addr, &cur, &fast);
	}
	CHECK(fast_steps > 1000);
}

int main(void)
{
	sp__mem_init(&mem, NULL);
	test_against_libdw((uint64_t)(uintptr_t)qsort);
	test_against_libdw((uint64_t)(uintptr_t)sp_test_cfa_rbx);
	test_index(1, 2);
	test_index(7, 300);
	test_index(42, 5000);
	test_step_saves();
	test_fast_equals_full();
	return T_EXIT_PASS;
}
