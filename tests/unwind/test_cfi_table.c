/* SPDX-License-Identifier: MIT */
/* CFI tables: rows built from libc and from this executable, expressions. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <dwarf.h>
#include <errno.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "self.h"
#include "unwind_internal.h"

/*
 * The table of libc must describe qsort's first instruction as
 * CFA = RSP + 8, RA at CFA - 8 (the state right after a call), and the
 * sp_test_cfa_rbx assembly (self_asm.S) as CFA = RBX + 16 after its
 * prologue, with RBX saved in the packed slot 2 (CFA - 16). The table's
 * shape is checked too: 16 bytes or less per row in all, rule sets
 * interned (no duplicates, no two adjacent rows with the same one) and
 * almost every libc rule set simple. Expressions are checked by
 * evaluating the PLT rule by hand.
 */

static struct sp__mem mem;

static struct sp__cfi_table *build_for(uint64_t pc, uint64_t *bias)
{
	struct sp__cfi_table *t;
	struct sp__image *img;
	struct link_map *lm;
	Dl_info info;
	void *extra;

	CHECK(dladdr1((void *)(uintptr_t)pc, &info, &extra, RTLD_DL_LINKMAP) !=
	      0);
	lm = extra;
	*bias = lm->l_addr;
	CHECK_OK(sp__image_open_path(&mem, info.dli_fname, &img));
	sp__image_lock(img);
	CHECK_OK(sp__cfi_table_build(&mem, sp__image_elf(img), &t));
	sp__image_unlock(img);
	sp__image_unref(img);
	CHECK(t->nrows > 0);
	return t;
}

static int cmp_rules(const void *a, const void *b)
{
	return memcmp(a, b, sizeof(struct sp__cfi_rules));
}

/* Rule sets are unique, [0] is the gap, and libc's are nearly all simple. */
static void check_rules(const struct sp__cfi_table *t)
{
	struct sp__cfi_rules *sorted;
	size_t i, extra = 0;

	CHECK(t->nrules > 1);
	CHECK_EQ(t->rules[SP__RULES_NONE].cfa_reg, SP__CFA_NONE);
	for (i = 1; i < t->nrules; i++)
		CHECK(t->rules[i].cfa_reg != SP__CFA_NONE);
	for (i = 0; i < t->nrows; i++)
		extra += (t->rules[t->rows[i].rules].flags & SP__ROW_EXTRA) !=
			 0;
	/* Before RBX/R12-R15 were packed, most of libc's rows were extras. */
	CHECK(extra * 100 < t->nrows);
	sorted = malloc(t->nrules * sizeof(*sorted));
	CHECK_PTR(sorted);
	memcpy(sorted, t->rules, t->nrules * sizeof(*sorted));
	qsort(sorted, t->nrules, sizeof(*sorted), cmp_rules);
	for (i = 1; i < t->nrules; i++)
		CHECK(cmp_rules(&sorted[i - 1], &sorted[i]) != 0);
	free(sorted);
}

static void test_libc(void)
{
	uint64_t bias, pc = (uint64_t)(uintptr_t)qsort;
	const struct sp__cfi_rules *row, *want;
	struct sp__cfi_table *t = build_for(pc, &bias);
	size_t i;

	/* At a function's entry: CFA = SP + 8, RA at CFA - 8 on x86-64;
	 * CFA = SP, RA still in the link register on AArch64. */
	row = sp__cfi_table_find(t, pc - bias);
	CHECK(row != NULL);
	CHECK_EQ(row->cfa_reg, SELF_SP);
	CHECK(!(row->flags & SP__ROW_EXTRA));
	CHECK_EQ(row->saves, 0);
#if defined(__aarch64__)
	CHECK_EQ(row->cfa_off, 0);
	CHECK(row->flags & SP__ROW_RA_LR);
#else
	CHECK_EQ(row->cfa_off, 8);
	CHECK_EQ(row->ra, -1);
#endif
	CHECK(sp__cfi_table_find(t, t->base - 1) == NULL);
	CHECK(sp__cfi_table_find(t, t->base + t->span) == NULL);
	CHECK(t->bytes <= t->nrows * (8 + sizeof(struct sp__cfi_rules)));
	check_rules(t);
	/* Sorted, strictly increasing, ends with a gap sentinel. */
	CHECK_EQ(t->rows[0].pc, 0);
	for (i = 1; i < t->nrows; i++) {
		CHECK(t->rows[i - 1].pc < t->rows[i].pc);
		CHECK(t->rows[i - 1].rules != t->rows[i].rules);
		CHECK(t->rows[i].rules < t->nrules);
	}
	CHECK_EQ(t->rows[t->nrows - 1].rules, SP__RULES_NONE);
	CHECK_EQ(t->rows[t->nrows - 1].pc, t->span);
	/* Every row is found at its first and its last byte. */
	for (i = 0; i + 1 < t->nrows; i++) {
		want = t->rows[i].rules == SP__RULES_NONE ?
			       NULL :
			       &t->rules[t->rows[i].rules];
		row = sp__cfi_table_find(t, t->base + t->rows[i].pc);
		CHECK(row == want);
		row = sp__cfi_table_find(t, t->base + t->rows[i + 1].pc - 1);
		CHECK(row == want);
	}
	sp__cfi_table_free(t);
}

static void test_cfa_rbx(void)
{
	uint64_t bias, pc = (uint64_t)(uintptr_t)sp_test_cfa_rbx;
	const struct sp__cfi_rules *row;
	struct sp__cfi_table *t = build_for(pc, &bias);

#if defined(__aarch64__)
	/* stp x29, x30, [sp, -32]!; str x19, [sp, 16]; mov x19, sp (12
	 * bytes): then CFA = X19 + 32, X19 at CFA - 16 (slot 2 of its
	 * field), X30 at CFA - 24, X29 at CFA - 32. */
	row = sp__cfi_table_find(t, pc - bias + 12);
	CHECK(row != NULL);
	CHECK_EQ(row->cfa_reg, 19);
	CHECK_EQ(row->cfa_off, 32);
	CHECK(!(row->flags & SP__ROW_EXTRA));
	CHECK_EQ(row->saves, 2);
	CHECK_EQ(row->ra, -3);
	CHECK(row->flags & SP__ROW_FP_SAVED);
	CHECK_EQ(row->fp, -4);
	row = sp__cfi_table_find(t, pc - bias);
	CHECK(row != NULL);
	CHECK_EQ(row->cfa_reg, SP_AARCH64_SP);
	CHECK_EQ(row->cfa_off, 0);
	CHECK(row->flags & SP__ROW_RA_LR);
	CHECK_EQ(row->saves, 0);
#else
	/* push %rbx (1 byte), mov %rsp,%rbx (3 bytes): then CFA = RBX+16,
	 * RBX saved at CFA - 16: slot 2 of RBX's packed field. */
	row = sp__cfi_table_find(t, pc - bias + 4);
	CHECK(row != NULL);
	CHECK_EQ(row->cfa_reg, 3);
	CHECK_EQ(row->cfa_off, 16);
	CHECK(!(row->flags & SP__ROW_EXTRA));
	CHECK_EQ(row->saves, 2);
	CHECK_EQ(row->ra, -1);
	row = sp__cfi_table_find(t, pc - bias);
	CHECK(row != NULL);
	CHECK_EQ(row->cfa_reg, SP_X86_64_RSP);
	CHECK_EQ(row->cfa_off, 8);
	CHECK_EQ(row->saves, 0);
#endif
	sp__cfi_table_free(t);
}

/*
 * The x86-64 PLT rule: CFA = RSP + 8 + ((RIP & 15) >= 11) * 8, with the
 * build's stack pointer and pc registers.
 */
static void test_plt_expr(void)
{
	static const uint8_t atoms[] = { DW_OP_breg0 + SELF_SP,
					 DW_OP_breg0 + SELF_PC,
					 DW_OP_lit15,
					 DW_OP_and,
					 DW_OP_lit11,
					 DW_OP_ge,
					 DW_OP_lit3,
					 DW_OP_shl,
					 DW_OP_plus };
	struct sp__cfi_op ops[9];
	struct sp__cfi_expr ex = { 0, 9 };
	struct sp__cfi_table t = {
		.exprs = &ex, .nexprs = 1, .ops = ops, .nops = 9
	};
	struct sp_regs regs = { .valid = SELF_ALL, .abi = SP_REGS_ABI_64 };
	struct sp__stack stack = { 0 };
	uint64_t v;
	size_t i;

	memset(ops, 0, sizeof(ops));
	for (i = 0; i < 9; i++)
		ops[i].atom = atoms[i];
	ops[0].number = 8;
#if defined(__aarch64__)
	ops[1].atom = DW_OP_bregx; /* PC is register 32: no breg of its own */
	ops[1].number = SELF_PC;
#endif
	regs.r[SELF_SP] = 0x7000;
	regs.r[SELF_PC] = 0x1000 + 10;
	CHECK_OK(sp__cfi_expr_eval(&t, 0, &regs, &stack, false, 0, &v));
	CHECK_EQ(v, 0x7008);
	regs.r[SELF_PC] = 0x1000 + 11;
	CHECK_OK(sp__cfi_expr_eval(&t, 0, &regs, &stack, false, 0, &v));
	CHECK_EQ(v, 0x7010);
	/* A missing register, an unknown op, a bad index: errors. */
	regs.valid &= ~(1ull << SELF_PC);
	CHECK_EQ(sp__cfi_expr_eval(&t, 0, &regs, &stack, false, 0, &v),
		 -EINVAL);
	CHECK_EQ(sp__cfi_expr_eval(&t, 1, &regs, &stack, false, 0, &v),
		 -EINVAL);
	ops[3].atom = DW_OP_bra;
	regs.valid |= 1ull << SELF_PC;
	CHECK_EQ(sp__cfi_expr_eval(&t, 0, &regs, &stack, false, 0, &v),
		 -EINVAL);
}

/* breg7 160; deref (the __restore_rt CFA) reads only the stack copy. */
static void test_deref(void)
{
	struct sp__cfi_op ops[2] = { { .atom = DW_OP_breg0 + SELF_SP,
				       .number = 16 },
				     { .atom = DW_OP_deref } };
	struct sp__cfi_expr ex = { 0, 2 };
	struct sp__cfi_table t = {
		.exprs = &ex, .nexprs = 1, .ops = ops, .nops = 2
	};
	struct sp_regs regs = { .valid = 1ull << SELF_SP,
				.abi = SP_REGS_ABI_64 };
	uint8_t bytes[24] = { 0 };
	struct sp__stack stack = { bytes, sizeof(bytes), 0x5000 };
	uint64_t v;

	bytes[16] = 0x34;
	bytes[17] = 0x12;
	regs.r[SELF_SP] = 0x5000;
	CHECK_OK(sp__cfi_expr_eval(&t, 0, &regs, &stack, false, 0, &v));
	CHECK_EQ(v, 0x1234);
	regs.r[SELF_SP] = 0x5001; /* the 8 bytes would run past the copy */
	CHECK_EQ(sp__cfi_expr_eval(&t, 0, &regs, &stack, false, 0, &v),
		 -ERANGE);
	regs.r[SELF_SP] = UINT64_MAX - 4; /* wraps */
	CHECK_EQ(sp__cfi_expr_eval(&t, 0, &regs, &stack, false, 0, &v),
		 -ERANGE);
}

int main(void)
{
	sp__mem_init(&mem, NULL);
	test_libc();
	test_cfa_rbx();
	test_plt_expr();
	test_deref();
	return T_EXIT_PASS;
}
