/* SPDX-License-Identifier: MIT */
/* The AArch64 step on synthetic frames: LR, PAC, SP recovery, signals, PLT. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "image.h"
#include "self.h"
#include "unwind_internal.h"

/*
 * Each case lays out a stack copy by hand, with a rule set of the shape
 * the table builder makes, and checks what sp__arch_step_cfi (and the
 * inline fast path, where it applies) and sp__arch_step_fp give:
 *  - a leaf whose return address is still in X30, and that a second
 *    "RA in X30" step finds none (X30 is used once);
 *  - return addresses signed by pointer authentication come out stripped,
 *    from a stack slot, from X30 and from a frame record;
 *  - after a frame-record step SP is a guess: an SP-relative row takes
 *    its CFA from X29 when it saves X29, and fails when it does not;
 *  - a signal frame reads X0-X30, SP and PC from the sigcontext at SP;
 *  - the fast path and the full step agree on a simple row with X19-X28
 *    saves;
 *  - an epilogue after ldp x29, x30, [sp], #16 whose CFI still names the
 *    slots (now below the copy): X29 and X19 keep their values and the
 *    return address comes from X30 in the leaf; below it the step fails;
 *  - the rows made for this executable's PLT (no CFI there).
 */

#define BASE 0x7ff000000000ull
#define WORDS 512

static uint64_t words[WORDS];
static const struct sp__stack stack = { (const uint8_t *)words, sizeof(words),
					BASE };
static const struct sp__cfi_table no_table = { 0 };

static void put(uint64_t addr, uint64_t v)
{
	words[(addr - BASE) / 8] = v;
}

static struct sp_regs leaf_regs(uint64_t pc, uint64_t sp)
{
	struct sp_regs r = { .valid = SELF_ALL, .abi = SP_REGS_ABI_64 };
	unsigned i;

	for (i = 0; i < SP_AARCH64_NREGS; i++)
		r.r[i] = 0x1000 + i;
	r.r[SP_AARCH64_PC] = pc;
	r.r[SP_AARCH64_SP] = sp;
	return r;
}

static void test_leaf_lr(void)
{
	struct sp__cfi_rules row = { .cfa_reg = SP_AARCH64_SP,
				     .flags = SP__ROW_RA_LR };
	struct sp_regs cur = leaf_regs(0x400100, BASE + 64), next, again;
	struct sp__step_fail fail;

	cur.r[SP_AARCH64_X30] = 0x400200;
	CHECK_EQ(sp__arch_step_simple(&row, &stack, &cur), 1); /* declined */
	CHECK_EQ(sp__arch_step_cfi(&no_table, &row, &stack, &cur, &next, &fail),
		 0);
	CHECK_EQ(next.r[SP_AARCH64_PC], 0x400200);
	CHECK_EQ(next.r[SP_AARCH64_SP], BASE + 64); /* no stack: same SP */
	CHECK(!(next.valid & (1ull << SP_AARCH64_X30)));
	CHECK_EQ(next.r[19], 0x1000 + 19); /* callee-saved carried */
	CHECK(!(next.valid & 1ull));	   /* X0 is the callee's */
	/* Below the leaf X30 holds no return address. */
	CHECK_EQ(sp__arch_step_cfi(&no_table, &row, &stack, &next, &again,
				   &fail),
		 -1);
	CHECK_EQ(fail.error, SP_SAMPLE_ERR_REGISTER_CAPTURE);
	CHECK_EQ(fail.fallback, SP_FALLBACK_DWARF_NO_RETURN_ADDRESS);
}

static void test_pac(void)
{
	/* stp x29, x30, [sp, -32]! ... : CFA = SP + 32, X29, X30 at -32. */
	struct sp__cfi_rules row = { .cfa_off = 32,
				     .cfa_reg = SP_AARCH64_SP,
				     .flags = SP__ROW_FP_SAVED,
				     .ra = -3,
				     .fp = -4 };
	const uint64_t signed_ra = 0x002b000000401234ull;
	struct sp_regs cur = leaf_regs(0x400100, BASE + 64), next, fast;
	struct sp__step_fail fail;

	put(BASE + 64, BASE + 256); /* X29 */
	put(BASE + 72, signed_ra);
	CHECK_EQ(sp__arch_step_cfi(&no_table, &row, &stack, &cur, &next, &fail),
		 0);
	CHECK_EQ(next.r[SP_AARCH64_PC], 0x401234);
	CHECK_EQ(next.r[SP_AARCH64_SP], BASE + 96);
	CHECK_EQ(next.r[SP_AARCH64_X29], BASE + 256);
	fast = cur;
	CHECK_EQ(sp__arch_step_simple(&row, &stack, &fast), 0);
	CHECK_EQ(fast.r[SP_AARCH64_PC], 0x401234);
	CHECK_EQ(fast.r[SP_AARCH64_SP], BASE + 96);
	CHECK_EQ(fast.r[SP_AARCH64_X29], BASE + 256);
	CHECK_EQ(fast.valid, next.valid);
	/* A signed X30 in the leaf. */
	row = (struct sp__cfi_rules){ .cfa_reg = SP_AARCH64_SP,
				      .flags = SP__ROW_RA_LR };
	cur.r[SP_AARCH64_X30] = signed_ra;
	CHECK_EQ(sp__arch_step_cfi(&no_table, &row, &stack, &cur, &next, &fail),
		 0);
	CHECK_EQ(next.r[SP_AARCH64_PC], 0x401234);
	/* A signed frame record. */
	cur.r[SP_AARCH64_X29] = BASE + 64;
	CHECK_EQ(sp__arch_step_fp(&stack, &cur, &next, &fail), 0);
	CHECK_EQ(next.r[SP_AARCH64_PC], 0x401234);
	CHECK_EQ(next.r[SP_AARCH64_X29], BASE + 256);
	CHECK_EQ(next.r[SP_AARCH64_SP], BASE + 80);
	CHECK(!(next.valid & (1ull << SP_AARCH64_SP))); /* a lower bound */
}

static void test_sp_recovery(void)
{
	/* The caller's frame: 96 bytes, its record 48 below its CFA. */
	struct sp__cfi_rules row = { .cfa_off = 96,
				     .cfa_reg = SP_AARCH64_SP,
				     .flags = SP__ROW_FP_SAVED,
				     .ra = -5,
				     .fp = -6 };
	struct sp_regs cur = leaf_regs(0x400100, BASE), mid, next;
	struct sp__step_fail fail;
	const uint64_t rec = BASE + 128, crec = BASE + 400;

	memset(words, 0, sizeof(words));
	/* The leaf's record at X29 = BASE + 32, its caller's at rec. */
	cur.r[SP_AARCH64_X29] = BASE + 32;
	put(BASE + 32, rec);
	put(BASE + 40, 0x401000);
	put(rec, crec);
	put(rec + 8, 0x402000);
	CHECK_EQ(sp__arch_step_fp(&stack, &cur, &mid, &fail), 0);
	CHECK_EQ(mid.r[SP_AARCH64_PC], 0x401000);
	CHECK_EQ(mid.r[SP_AARCH64_SP], BASE + 48); /* a guess: 80 too low */
	CHECK(!(mid.valid & (1ull << SP_AARCH64_SP)));
	/* The SP-relative row: CFA = X29 - 8 * fp = rec + 48. */
	CHECK_EQ(sp__arch_step_simple(&row, &stack, &mid), 1);
	CHECK_EQ(sp__arch_step_cfi(&no_table, &row, &stack, &mid, &next, &fail),
		 0);
	CHECK_EQ(next.r[SP_AARCH64_SP], rec + 48);
	CHECK_EQ(next.r[SP_AARCH64_PC], 0x402000);
	CHECK_EQ(next.r[SP_AARCH64_X29], crec);
	CHECK(next.valid & (1ull << SP_AARCH64_SP));
	/* A row that does not save X29 cannot recover SP. */
	row.flags = 0;
	CHECK_EQ(sp__arch_step_cfi(&no_table, &row, &stack, &mid, &next, &fail),
		 -1);
	CHECK_EQ(fail.error, SP_SAMPLE_ERR_REGISTER_CAPTURE);
	CHECK_EQ(fail.fallback, SP_FALLBACK_DWARF_NO_CFA);
}

static void test_signal(void)
{
	struct sp__cfi_rules row = { .cfa_reg = SP_AARCH64_X29,
				     .flags = SP__ROW_SIGNAL | SP__ROW_EXTRA };
	struct sp_regs cur = leaf_regs(0x400100, BASE + 64), next;
	const uint64_t ctx = BASE + 64 + 128 + 176;
	struct sp__step_fail fail;
	unsigned i;

	memset(words, 0, sizeof(words));
	for (i = 0; i < 31; i++)
		put(ctx + 8 + 8 * i, 0x5000 + i);
	put(ctx + 256, BASE + 8); /* SP: anywhere, e.g. below */
	put(ctx + 264, 0x0011000000403000ull);
	CHECK_EQ(sp__arch_step_cfi(&no_table, &row, &stack, &cur, &next, &fail),
		 0);
	CHECK_EQ(next.r[SP_AARCH64_PC], 0x403000);
	CHECK_EQ(next.r[SP_AARCH64_SP], BASE + 8);
	CHECK_EQ(next.r[0], 0x5000);
	CHECK_EQ(next.r[SP_AARCH64_X30], 0x5000 + 30);
	CHECK(next.valid & (1ull << SP_AARCH64_X30)); /* LR of a leaf */
	CHECK_EQ(next.valid, SELF_ALL);
	/* The sigcontext must be in the copy. */
	cur.r[SP_AARCH64_SP] = BASE + sizeof(words) - 64;
	CHECK_EQ(sp__arch_step_cfi(&no_table, &row, &stack, &cur, &next, &fail),
		 -1);
	CHECK_EQ(fail.error, SP_SAMPLE_ERR_STACK_TRUNCATED);
}

/* Fast path and full step agree, X19-X28 saves applied after both. */
static void test_fast_matches_full(void)
{
	struct sp__cfi_rules row = { .cfa_off = 160,
				     .cfa_reg = SP_AARCH64_SP,
				     .flags = SP__ROW_FP_SAVED,
				     .ra = -11,
				     .fp = -12 };
	struct sp_regs cur = leaf_regs(0x400100, BASE + 64), next, fast;
	struct sp__step_fail fail;
	unsigned k;

	for (k = 0; k < WORDS; k++)
		words[k] = 0x9000 + k;
	put(BASE + 64 + 160 - 88, 0x404000);
	for (k = 0; k < SP__SAVE_NREGS; k++)
		row.saves |= (uint64_t)(10 - k) << (SP__SAVE_BITS * k);
	CHECK_EQ(sp__arch_step_cfi(&no_table, &row, &stack, &cur, &next, &fail),
		 0);
	fast = cur;
	CHECK_EQ(sp__arch_step_simple(&row, &stack, &fast), 0);
	sp__arch_apply_saves(row.saves, &stack, fast.r[SP_AARCH64_SP], &fast);
	CHECK_EQ(fast.valid, next.valid);
	for (k = 19; k <= SP_AARCH64_PC; k++)
		if (next.valid & (1ull << k))
			CHECK_EQ(fast.r[k], next.r[k]);
	CHECK_EQ(next.r[19], words[(BASE + 224 - 80 - BASE) / 8]);
}

/*
 * Sampled after the pop: SP (the copy's start) is the CFA, and the rules
 * still say X29, X30 and X19 are at CFA - 16, - 8 and - 24.
 */
static void test_epilogue(void)
{
	struct sp__cfi_rules row = { .cfa_reg = SP_AARCH64_SP,
				     .flags = SP__ROW_FP_SAVED,
				     .ra = -1,
				     .fp = -2,
				     .saves = 3 };
	struct sp_regs cur = leaf_regs(0x400100, BASE), next, fast;
	struct sp__step_fail fail;

	cur.r[SP_AARCH64_X30] = 0x400300;
	fast = cur;
	CHECK_EQ(sp__arch_step_simple(&row, &stack, &fast), 1); /* declined */
	CHECK_EQ(sp__arch_step_cfi(&no_table, &row, &stack, &cur, &next, &fail),
		 0);
	CHECK_EQ(next.r[SP_AARCH64_PC], 0x400300);
	CHECK_EQ(next.r[SP_AARCH64_SP], BASE);
	CHECK_EQ(next.r[SP_AARCH64_X29], cur.r[SP_AARCH64_X29]);
	CHECK(next.valid & (1ull << SP_AARCH64_X29));
	CHECK_EQ(next.r[19], cur.r[19]);
	CHECK(next.valid & (1ull << 19));
	CHECK(!(next.valid & (1ull << SP_AARCH64_X30)));
	/* Not the leaf: X30 holds no return address, the slot is gone. */
	cur.valid &= ~(1ull << SP_AARCH64_X30);
	CHECK_EQ(sp__arch_step_cfi(&no_table, &row, &stack, &cur, &next, &fail),
		 -1);
	CHECK_EQ(fail.error, SP_SAMPLE_ERR_STACK_TRUNCATED);
	CHECK_EQ(fail.fallback, SP_FALLBACK_DWARF_NO_RETURN_ADDRESS);
}

/* This executable calls libc through its PLT, which has no CFI. */
static void test_plt_rows(void)
{
	struct sp__cfi_synth *sy;
	struct sp__image *img;
	struct sp__mem mem;
	struct sp__vec v;
	size_t i, pushed = 0, lr = 0;

	sp__mem_init(&mem, NULL);
	sp__vec_init(&v, sizeof(struct sp__cfi_synth));
	CHECK_OK(sp__image_open_path(&mem, "/proc/self/exe", &img));
	sp__image_lock(img);
	CHECK_OK(sp__arch_synth(&mem, sp__image_elf(img), &v));
	sp__image_unlock(img);
	CHECK(v.len >= 2);
	sy = v.data;
	for (i = 0; i < v.len; i++) {
		CHECK(sy[i].start < sy[i].end);
		CHECK_EQ(sy[i].rules.cfa_reg, SP_AARCH64_SP);
		if (sy[i].rules.flags & SP__ROW_RA_LR) {
			CHECK_EQ(sy[i].rules.cfa_off, 0);
			lr++;
		} else {
			CHECK_EQ(sy[i].rules.cfa_off, 16);
			CHECK_EQ(sy[i].rules.ra, -1);
			pushed++;
		}
	}
	CHECK_EQ(pushed, 1); /* PLT0 after its stp x16, x30 */
	CHECK(lr >= 2);
	sp__vec_fini(&v, &mem);
	sp__image_unref(img);
}

int main(void)
{
	test_leaf_lr();
	test_pac();
	test_sp_recovery();
	test_signal();
	test_fast_matches_full();
	test_epilogue();
	test_plt_rows();
	return T_EXIT_PASS;
}
