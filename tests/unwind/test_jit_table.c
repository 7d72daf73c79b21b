/* SPDX-License-Identifier: MIT */
/* JIT trampoline tables: template decoding, tiling checks, unwinding through them. */

/*
 * The templates are the bytes CPython copies into its -X perf arenas:
 * 3.12/3.13 (sub $8, %rsp; call *%rcx; add $8, %rsp; ret, read from a
 * live python3.12 -X perf on this machine) and the frame-pointer form of
 * later versions (push %rbp; mov %rsp, %rbp; call *%rcx; pop %rbp; ret).
 * Each is decoded, tiled over a 64 KiB arena, registered with an
 * unwinder and unwound through on a hand-built stack whose layout is the
 * one those instructions create, so the expected chain is known exactly.
 */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "jit_table.h"
#include "unwind_internal.h"

#define ARENA (64u << 10)
#define BASE 0x7f0000000000ull
#define STACK 0x7ffc00000000ull

static const uint8_t sub_form[] = { 0x48, 0x83, 0xec, 0x08, 0xff, 0xd1,
				    0x48, 0x83, 0xc4, 0x08, 0xc3 };
static const uint8_t fp_form[] = { 0x55, 0x48, 0x89, 0xe5,
				   0xff, 0xd1, 0x5d, 0xc3 };

static void check_row(const struct sp__jit_template *t, size_t i, uint32_t off,
		      unsigned reg, int32_t cfa_off, uint8_t rbp_slot)
{
	CHECK(i < t->nrows);
	CHECK_EQ(t->rows[i].off, off);
	CHECK_EQ(t->rows[i].cfa_reg, reg);
	CHECK_EQ_INT(t->rows[i].cfa_off, cfa_off);
	CHECK_EQ(t->rows[i].saved[SP_X86_64_RBP], rbp_slot);
}

static void test_decode(void)
{
	static const uint8_t no_call[] = { 0x48, 0x83, 0xec, 0x08, 0x48,
					   0x83, 0xc4, 0x08, 0xc3 };
	static const uint8_t unbalanced[] = { 0x48, 0x83, 0xec, 0x08,
					      0xff, 0xd1, 0xc3 };
	static const uint8_t lost_rbp[] = { 0x48, 0x89, 0xe5, 0xff, 0xd1, 0xc3 };
	static const uint8_t unknown[] = { 0x48, 0x83, 0xec, 0x08, 0x0f, 0x0b };
	static const uint8_t callee_pops[] = { 0x53, 0xff, 0xd0, 0x5b, 0xc3 };
	struct sp__jit_template t;

	CHECK_OK(sp__arch_jit_decode(sub_form, sizeof(sub_form), &t));
	CHECK_EQ(t.len, sizeof(sub_form));
	CHECK_EQ(t.nrows, 3);
	check_row(&t, 0, 0, SP_X86_64_RSP, 8, 0);
	check_row(&t, 1, 4, SP_X86_64_RSP, 16, 0); /* call and return site */
	check_row(&t, 2, 10, SP_X86_64_RSP, 8, 0); /* ret */

	CHECK_OK(sp__arch_jit_decode(fp_form, sizeof(fp_form), &t));
	CHECK_EQ(t.len, sizeof(fp_form));
	CHECK_EQ(t.nrows, 4);
	check_row(&t, 0, 0, SP_X86_64_RSP, 8, 0);
	check_row(&t, 1, 1, SP_X86_64_RSP, 16, 2);
	check_row(&t, 2, 4, SP_X86_64_RBP, 16, 2); /* call, pop */
	check_row(&t, 3, 7, SP_X86_64_RSP, 8, 0);  /* ret */

	/* rbx pushed and popped around the call: its slot is tracked. */
	CHECK_OK(sp__arch_jit_decode(callee_pops, sizeof(callee_pops), &t));
	CHECK_EQ(t.rows[1].saved[3], 2);
	CHECK_EQ(t.rows[2].saved[3], 0);

	CHECK_EQ_INT(sp__arch_jit_decode(no_call, sizeof(no_call), &t),
		     -EINVAL);
	CHECK_EQ_INT(sp__arch_jit_decode(unbalanced, sizeof(unbalanced), &t),
		     -EINVAL);
	CHECK_EQ_INT(sp__arch_jit_decode(lost_rbp, sizeof(lost_rbp), &t),
		     -EINVAL);
	CHECK_EQ_INT(sp__arch_jit_decode(unknown, sizeof(unknown), &t),
		     -EINVAL);
	/* Cut before its return: not a whole function. */
	CHECK_EQ_INT(sp__arch_jit_decode(sub_form, 6, &t), -EINVAL);
}

/* An arena as CPython fills it: copies back to back, the rest zero. */
static uint8_t *arena(const uint8_t *tpl, size_t len)
{
	uint8_t *a = calloc(1, ARENA);
	size_t i;

	CHECK_PTR(a);
	for (i = 0; i + len <= ARENA; i += len)
		memcpy(a + i, tpl, len);
	return a;
}

static void test_tiles(void)
{
	struct sp__mem mem;
	struct sp__cfi_table *t;
	const struct sp__cfi_rules *r;
	uint8_t *a = arena(sub_form, sizeof(sub_form));
	size_t last = (ARENA / sizeof(sub_form) - 1) * sizeof(sub_form);

	sp__mem_init(&mem, NULL);
	CHECK_OK(sp__jit_tiled_table(&mem, a, ARENA, &t));
	/* Copy 100, the byte before its return site: CFA = RSP + 16. */
	r = sp__cfi_table_find(t, 100 * sizeof(sub_form) + 5);
	CHECK_PTR(r);
	CHECK_EQ(r->cfa_reg, SP_X86_64_RSP);
	CHECK_EQ_INT(r->cfa_off, 16);
	CHECK_EQ_INT(r->ra, -1);
	CHECK_PTR(sp__cfi_table_find(t, last));
	CHECK(!sp__cfi_table_find(t, last + sizeof(sub_form))); /* the zeros */
	sp__cfi_table_free(t);

	/* One copy changed, or nothing but zeros: no table at all. */
	a[5000] ^= 0x10;
	CHECK_EQ_INT(sp__jit_tiled_table(&mem, a, ARENA, &t), -EINVAL);
	memset(a, 0, ARENA);
	CHECK_EQ_INT(sp__jit_tiled_table(&mem, a, ARENA, &t), -EINVAL);
	free(a);
}

struct frame_stack {
	uint64_t words[16];
};

/*
 * Unwinds from @regs over @st (at STACK) with one mapping for the arena
 * (JIT table @id, or none when 0); returns the frame count.
 */
static int unwind(struct sp_unwinder *u, uint64_t id,
		  const struct sp_regs *regs, const struct frame_stack *st,
		  struct sp_frame *out, struct sp_unwind_stats *stats)
{
	struct sp_mapping m = { .start = BASE,
				.end = BASE + ARENA,
				.file_offset = BASE,
				.path = "//anon",
				.module_id = 0 };

	if (id) {
		m.flags = SP__MAPPING_JIT;
		m.inode = id;
	}
	memset(stats, 0, sizeof(*stats));
	return sp_unwinder_unwind(u, regs, st->words, sizeof(st->words), STACK,
				  &m, 1, out, 16, stats);
}

static void regs_at(struct sp_regs *r, uint64_t pc, uint64_t sp, uint64_t bp)
{
	memset(r, 0, sizeof(*r));
	r->abi = SP_REGS_ABI_64;
	r->r[SP_X86_64_RIP] = pc;
	r->r[SP_X86_64_RSP] = sp;
	r->r[SP_X86_64_RBP] = bp;
	r->valid = 1u << SP_X86_64_RIP | 1u << SP_X86_64_RSP |
		   1u << SP_X86_64_RBP;
}

/*
 * sub form: a sample at copy 5's return site (RSP -> the sub's slot),
 * which was called from copy 2's call, which was called from outside
 * every mapping with RBP 0: three frames, the last by frame pointers at
 * the chain's end (no caller, no fallback counted). Without the table
 * the frame-pointer guess at the first frame finds RBP 0 and stops.
 */
static void test_unwind_sub(void)
{
	struct sp_unwinder *u;
	struct sp_unwind_stats st;
	struct sp_frame f[16];
	struct frame_stack s = { { 0 } };
	struct sp_regs r;
	uint8_t *a = arena(sub_form, sizeof(sub_form));
	uint64_t id = 0, i;

	CHECK_OK(sp_unwinder_new(NULL, &u));
	CHECK_OK(sp__unwinder_jit_tiled(u, a, ARENA, &id));
	CHECK(id != 0);
	s.words[1] = BASE + 2 * 11 + 6; /* copy 2's return site */
	s.words[3] = 0x1000;		/* outside every mapping */
	regs_at(&r, BASE + 5 * 11 + 6, STACK, 0);
	CHECK_EQ_INT(unwind(u, id, &r, &s, f, &st), 3);
	CHECK_EQ(f[0].abs_ip, BASE + 5 * 11 + 6);
	CHECK_EQ(f[1].abs_ip, BASE + 2 * 11 + 5);
	CHECK_EQ(f[2].abs_ip, 0xfff);
	CHECK_EQ(st.truncated, 0);
	for (i = 0; i < SP_FALLBACK_COUNT; i++)
		CHECK_EQ(st.fallbacks[i], 0);
	for (i = 0; i < SP_SAMPLE_ERR_COUNT; i++)
		CHECK_EQ(st.errors[i], 0);
	CHECK_EQ_INT(unwind(u, 0, &r, &s, f, &st), 1);
	/* The same bytes register once. */
	{
		uint64_t again = 0;

		CHECK_OK(sp__unwinder_jit_tiled(u, a, ARENA, &again));
		CHECK_EQ(again, id);
	}
	sp_unwinder_free(u);
	free(a);
}

/*
 * Frame-pointer form: at the return site RBP holds the trampoline's frame
 * (as the eval loop's CFI step restored it): RBP -> [caller's RBP, RA].
 */
static void test_unwind_fp(void)
{
	struct sp_unwinder *u;
	struct sp_unwind_stats st;
	struct sp_frame f[16];
	struct frame_stack s = { { 0 } };
	struct sp_regs r;
	uint8_t *a = arena(fp_form, sizeof(fp_form));
	uint64_t id = 0;

	CHECK_OK(sp_unwinder_new(NULL, &u));
	CHECK_OK(sp__unwinder_jit_tiled(u, a, ARENA, &id));
	s.words[2] = 0; /* trampoline frame at STACK + 16: saved RBP */
	s.words[3] = BASE + 7 * 8 + 6; /* RA: copy 7's return site */
	s.words[4] = 0;		       /* copy 7's saved RBP */
	s.words[5] = 0x2000;	       /* RA outside */
	regs_at(&r, BASE + 3 * 8 + 6, STACK + 16, STACK + 16);
	/* Copy 7's frame starts right above copy 3's: RBP chain 16 -> 32. */
	s.words[2] = STACK + 32;
	CHECK_EQ_INT(unwind(u, id, &r, &s, f, &st), 3);
	CHECK_EQ(f[1].abs_ip, BASE + 7 * 8 + 5);
	CHECK_EQ(f[2].abs_ip, 0x1fff);
	CHECK_EQ(st.truncated, 0);
	sp_unwinder_free(u);
	free(a);
}

/*
 * The unwinder's caches outlive a mapping: the resolution slot is keyed
 * by the mapping's start, the pc cache by table and offset. Arena A
 * (sub form) is unwound through, then unmapped and arena B (frame-pointer
 * form, other rules at the same offset) mapped at the same address: the
 * same pc over the same stack must now step by B's rules, exactly as a
 * fresh unwinder that never saw A does, and not by A's cached rule set.
 * A's rule there (CFA = RSP + 16) finds the return address 0x1000 at
 * STACK + 8, B's (CFA = RBP + 16) finds 0x3000 at STACK + 40.
 */
static void test_remap_same_address(void)
{
	struct sp_unwinder *u, *fresh;
	struct sp_unwind_stats st;
	struct sp_frame fa[16], fb[16], fr[16];
	struct frame_stack s = { { 0 } };
	struct sp_regs r;
	uint8_t *a = arena(sub_form, sizeof(sub_form));
	uint8_t *b = arena(fp_form, sizeof(fp_form));
	uint64_t ida = 0, idb = 0, idr = 0;
	int na, nb, nr, round;

	CHECK_OK(sp_unwinder_new(NULL, &u));
	CHECK_OK(sp_unwinder_new(NULL, &fresh));
	CHECK_OK(sp__unwinder_jit_tiled(u, a, ARENA, &ida));
	CHECK_OK(sp__unwinder_jit_tiled(u, b, ARENA, &idb));
	CHECK_OK(sp__unwinder_jit_tiled(fresh, b, ARENA, &idr));
	CHECK(ida != idb);
	s.words[1] = 0x1000; /* A: RA at CFA - 8 = RSP + 8 */
	s.words[4] = 0;	     /* B: saved RBP at CFA - 16 */
	s.words[5] = 0x3000; /* B: RA at CFA - 8 = RBP + 8 */
	regs_at(&r, BASE + 61, STACK, STACK + 32);
	for (round = 0; round < 2; round++) { /* the second: all cached */
		na = unwind(u, ida, &r, &s, fa, &st);
		nb = unwind(u, idb, &r, &s, fb, &st);
		nr = unwind(fresh, idr, &r, &s, fr, &st);
		CHECK(na >= 2);
		CHECK_EQ(fa[1].abs_ip, 0xfff);
		CHECK_EQ_INT(nb, nr);
		CHECK(nb >= 2);
		CHECK_EQ(fb[1].abs_ip, 0x2fff);
		CHECK(memcmp(fb, fr, (size_t)nb * sizeof(fb[0])) == 0);
	}
	sp_unwinder_free(fresh);
	sp_unwinder_free(u);
	free(b);
	free(a);
}

int main(void)
{
	test_decode();
	test_tiles();
	test_unwind_sub();
	test_unwind_fp();
	test_remap_same_address();
	return T_EXIT_PASS;
}
