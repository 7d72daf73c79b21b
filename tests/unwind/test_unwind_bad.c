/* SPDX-License-Identifier: MIT */
/* Bad input to the unwinder: short, garbage and looping stacks, bad regs. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "self.h"
#include "self_common.h"

/*
 * Every case must end: the return value is the number of frames stored,
 * at most the caller's capacity, and a walk that could not finish ends
 * with the truncated marker and one counted error kind.
 */

#define CAP 64

static struct sp_frame frames[CAP];
static struct self_maps maps;

static uint64_t errors_total(const struct sp_unwind_stats *st)
{
	uint64_t sum = 0;
	int i;

	for (i = 0; i < SP_SAMPLE_ERR_COUNT; i++)
		sum += st->errors[i];
	return sum;
}

static int unwind_raw(struct sp_unwinder *u, const struct sp_regs *regs,
		      const void *stack, size_t len, uint64_t addr,
		      struct sp_unwind_stats *st)
{
	int n;

	memset(st, 0, sizeof(*st));
	n = sp_unwinder_unwind(u, regs, stack, len, addr, maps.maps, maps.n,
			       frames, CAP, st);
	CHECK_OK(n);
	CHECK(n >= 1 && n <= CAP);
	return n;
}

static void test_bad_regs(struct sp_unwinder *u)
{
	struct sp_regs regs = { .valid = SELF_ALL, .abi = SP_REGS_ABI_32 };
	struct sp_unwind_stats st;
	uint64_t stack[4] = { 0 };
	int n;

	regs.r[SELF_PC] = (uint64_t)(uintptr_t)chain_a;
	regs.r[SELF_SP] = (uint64_t)(uintptr_t)stack;
	n = unwind_raw(u, &regs, stack, sizeof(stack), regs.r[SELF_SP], &st);
	CHECK_EQ(n, 1);
	CHECK_EQ(frames[0].mode, SP_FRAME_TRUNCATED);
	CHECK_EQ(st.errors[SP_SAMPLE_ERR_REGISTER_CAPTURE], 1);
	CHECK_EQ(st.truncated, 1);

	regs.abi = SP_REGS_ABI_NONE;
	unwind_raw(u, &regs, stack, sizeof(stack), regs.r[SELF_SP], &st);
	CHECK_EQ(st.errors[SP_SAMPLE_ERR_USER_REGISTERS_MISSING], 1);

	regs.abi = SP_REGS_ABI_64;
	regs.valid &= ~(1ull << SELF_SP);
	unwind_raw(u, &regs, stack, sizeof(stack), regs.r[SELF_SP], &st);
	CHECK_EQ(st.errors[SP_SAMPLE_ERR_REGISTER_CAPTURE], 1);

	regs.valid = SELF_ALL;
	regs.r[SELF_PC] = 0;
	unwind_raw(u, &regs, stack, sizeof(stack), regs.r[SELF_SP], &st);
	CHECK_EQ(st.errors[SP_SAMPLE_ERR_RETURN_ADDRESS_NULL], 1);

	/* No stack bytes: the leaf alone, then the marker. */
	regs.r[SELF_PC] = (uint64_t)(uintptr_t)chain_a;
	n = unwind_raw(u, &regs, NULL, 0, regs.r[SELF_SP], &st);
	CHECK_EQ(n, 2);
	CHECK_EQ(frames[0].abs_ip, (uint64_t)(uintptr_t)chain_a);
	CHECK(frames[0].module_id != SP_NO_MODULE);
	CHECK_EQ(frames[1].mode, SP_FRAME_TRUNCATED);
	CHECK_EQ(st.errors[SP_SAMPLE_ERR_STACK_READ], 1);

	CHECK_EQ(sp_unwinder_unwind(u, NULL, stack, 8, 0, NULL, 0, frames, CAP,
				    NULL),
		 -EINVAL);
	CHECK_EQ(sp_unwinder_unwind(u, &regs, stack, 8, 0, NULL, 0, frames, 0,
				    NULL),
		 -EINVAL);
}

/* Frame-pointer records that point to themselves must not loop. */
static void test_fp_loop(struct sp_unwinder *u)
{
	struct sp_regs regs = { .valid = SELF_ALL, .abi = SP_REGS_ABI_64 };
	struct sp_unwind_stats st;
	uint64_t stack[8];
	uint64_t base = (uint64_t)(uintptr_t)stack;
	int n;

	stack[0] = base;	  /* saved rbp = this record */
	stack[1] = 0x2000;	  /* return address in no mapping */
	regs.r[SELF_PC] = 0x1000; /* pc in no mapping: FP fallback */
	regs.r[SELF_SP] = base;
	regs.r[SELF_FP] = base;
	n = unwind_raw(u, &regs, stack, sizeof(stack), base, &st);
	CHECK_EQ(n, 3);
	CHECK_EQ(frames[0].module_id, SP_NO_MODULE);
	CHECK_EQ(frames[0].file_relative_ip, 0x1000);
	CHECK_EQ(frames[1].abs_ip, 0x1fff);
	CHECK_EQ(frames[2].mode, SP_FRAME_TRUNCATED);
	CHECK_EQ(st.fallbacks[SP_FALLBACK_NO_MODULE], 1);
	CHECK_EQ(st.errors[SP_SAMPLE_ERR_MOVED_BACKWARDS], 1);

	/* RBP outside the copy: nothing invented. */
	regs.r[SELF_FP] = base + 4096;
	n = unwind_raw(u, &regs, stack, sizeof(stack), base, &st);
	CHECK_EQ(n, 2);
	CHECK_EQ(st.errors[SP_SAMPLE_ERR_STACK_TRUNCATED], 1);
	CHECK_EQ(st.fallbacks[SP_FALLBACK_NO_MODULE], 0);
}

/*
 * A mapping whose file is not an ELF image (no unwind data): the frame
 * pointer step is used and counted as NO_MODULE_UNWIND_DATA; frames are
 * pinned to the mapping.
 */
static void test_no_unwind_data(struct sp_unwinder *u)
{
	struct sp_mapping m = { .start = 0x1000,
				.end = 0x3000,
				.file_offset = 0x5000,
				.path = "/proc/self/maps",
				.module_id = 7 };
	struct sp_regs regs = { .valid = SELF_ALL, .abi = SP_REGS_ABI_64 };
	struct sp_unwind_stats st = { 0 };
	uint64_t stack[8] = { 0 };
	uint64_t base = (uint64_t)(uintptr_t)stack;
	int n;

	stack[2] = 0; /* outermost record: saved rbp 0 */
	stack[3] = 0x2001;
	regs.r[SELF_PC] = 0x1800;
	regs.r[SELF_SP] = base;
	regs.r[SELF_FP] = base + 16;
	n = sp_unwinder_unwind(u, &regs, stack, sizeof(stack), base, &m, 1,
			       frames, CAP, &st);
	CHECK_EQ(n, 2);
	CHECK_EQ(frames[0].module_id, 7);
	CHECK_EQ(frames[0].file_relative_ip, 0x5800);
	CHECK_EQ(frames[1].abs_ip, 0x2000);
	CHECK_EQ(frames[1].file_relative_ip, 0x6000);
	CHECK_EQ(st.fallbacks[SP_FALLBACK_NO_MODULE_UNWIND_DATA], 1);
	CHECK_EQ(st.truncated, 0);
	CHECK(sp_unwinder_prepare(u, &m) < 0);
}

/* A real sample whose copy is cut short. */
static void test_short_copy(struct sp_unwinder *u)
{
	struct self_sample s = { 0 };
	struct sp_unwind_stats st;
	size_t len;
	int n;

	chain_a(&s, 3);
	CHECK(s.taken);
	for (len = 0; len < 512 && len <= s.stack_len; len += 8) {
		n = unwind_raw(u, &s.regs, s.stack, len, s.stack_addr, &st);
		CHECK_EQ(frames[n - 1].mode, SP_FRAME_TRUNCATED);
		CHECK_EQ(errors_total(&st), 1);
		CHECK_EQ(st.truncated, 1);
	}
	free(s.stack);
}

/* Random registers and stack bytes: any result, but it ends. */
static void test_garbage(struct sp_unwinder *u)
{
	struct sp_regs regs = { .valid = SELF_ALL, .abi = SP_REGS_ABI_64 };
	struct sp_unwind_stats st;
	uint64_t stack[512];
	uint64_t seed = 0x9e3779b97f4a7c15ull, base;
	int round;
	size_t i;

	base = (uint64_t)(uintptr_t)stack;
	for (round = 0; round < 2000; round++) {
		for (i = 0; i < 512; i++) {
			seed = seed * 6364136223846793005ull +
			       1442695040888963407ull;
			/* Mix code pointers, stack pointers and noise. */
			stack[i] = (seed >> 62) == 0 ?
					   (uint64_t)(uintptr_t)chain_b +
						   (seed >> 40) % 64 :
				   (seed >> 62) == 1 ?
					   base + (seed >> 32) % 4096 :
					   seed;
		}
		for (i = 0; i < 17; i++)
			regs.r[i] = stack[(i * 31 + (size_t)round) % 512];
		regs.r[SELF_SP] = base + (uint64_t)(round % 64) * 8;
		regs.r[SELF_PC] =
			(uint64_t)(uintptr_t)chain_c + (uint64_t)(round % 48);
		unwind_raw(u, &regs, stack, sizeof(stack), base, &st);
		CHECK_EQ(st.samples, 1);
	}
}

/* First sight of every image from several threads at once. */
struct race {
	struct sp_unwinder *u;
	const struct self_sample *s;
	int n;
};

static void *race_main(void *arg)
{
	struct race *r = arg;
	struct sp_frame f[CAP];
	int i;

	for (i = 0; i < 50; i++) {
		r->n = sp_unwinder_unwind(r->u, &r->s->regs, r->s->stack,
					  r->s->stack_len, r->s->stack_addr,
					  maps.maps, maps.n, f, CAP, NULL);
		if (r->n < 0 || f[r->n - 1].mode == SP_FRAME_TRUNCATED)
			r->n = -1;
	}
	return NULL;
}

static void test_threads(void)
{
	struct self_sample s = { 0 };
	struct race r[4];
	pthread_t th[4];
	struct sp_unwinder *u;
	int i;

	chain_a(&s, 7);
	CHECK_OK(sp_unwinder_new(NULL, &u));
	for (i = 0; i < 4; i++) {
		r[i] = (struct race){ u, &s, 0 };
		CHECK_EQ(pthread_create(&th[i], NULL, race_main, &r[i]), 0);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		CHECK(r[i].n > 5);
		CHECK_EQ(r[i].n, r[0].n);
	}
	sp_unwinder_free(u);
	free(s.stack);
}

static void test_opts(void)
{
	struct sp_unwinder_opts o = { .size = sizeof(o),
				      .max_depth = SP_DEPTH_MAX + 1 };
	struct sp_unwinder *u;
	struct sp_mapping m = { .start = 0x1000,
				.end = 0x2000,
				.path = "/nonexistent/file" };

	CHECK_EQ(sp_unwinder_new(&o, &u), -EINVAL);
	o.max_depth = 0;
	o.flags = 1;
	CHECK_EQ(sp_unwinder_new(&o, &u), -EINVAL);
	CHECK_OK(sp_unwinder_new(NULL, &u));
	CHECK_EQ(sp_unwinder_prepare(u, &m), -ENOENT);
	for (size_t i = 0; i < maps.n; i++)
		if (maps.maps[i].flags & SP_MAPPING_VDSO)
			CHECK_OK(sp_unwinder_prepare(u, &maps.maps[i]));
	sp_unwinder_free(u);
	sp_unwinder_free(NULL);
}

int main(void)
{
	struct sp_unwinder *u;

	self_load_maps(&maps);
	CHECK_OK(sp_unwinder_new(NULL, &u));
	test_bad_regs(u);
	test_fp_loop(u);
	test_no_unwind_data(u);
	test_short_copy(u);
	test_garbage(u);
	sp_unwinder_free(u);
	test_threads();
	test_opts();
	return T_EXIT_PASS;
}
