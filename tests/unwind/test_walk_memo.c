/* SPDX-License-Identifier: MIT */
/* The walk memo: a reused walk equals the full walk, frame by frame. */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "for_engine/stack_hash.h"
#include "self.h"
#include "self_common.h"
#include "unwind_jit.h"

/*
 * The corpus is real captures of this program (its -fomit-frame-pointer
 * chains, recursion of many depths, a lazily bound shared library, a
 * CFA held in RBX, whose frames need the pending saves). Every unwind
 * through a memo is compared with a full walk of the same bytes by an
 * unwinder without one: the frames, their count and every counter.
 *
 *   sequences   the captures in many orders through one thread's memo
 *               (hits must happen, or the test proves nothing)
 *   every word  a deep capture with each 8-byte word of its copy changed
 *               in turn, after the memo saw it whole: the same pc and
 *               stack pointer, one stack word different
 *   cuts        copies cut short (the memo's suffix no longer covered)
 *   depth       unwinders whose depth limit cuts the reused suffix
 *   gens        a new map generation (another module id) is never reused
 *   threads     more threads than the memo keeps, interleaved
 *   synthetic   frame-pointer chains in code without unwind data (every
 *               frame a counted fallback), their words changed at random
 *               and their copies cut at random (a fuzz of the replay)
 */

#define CAP 1100
#define MAX_CAPTURES 64

static struct self_sample captures[MAX_CAPTURES];
static size_t ncaptures;
static struct self_maps maps;
static struct sp_frame want[CAP], got[CAP];
static size_t compared, tails;

static struct self_sample *next_capture(void)
{
	CHECK(ncaptures < MAX_CAPTURES);
	return &captures[ncaptures++];
}

static void capture_all(void)
{
	int depth;

	chain_a(next_capture(), 1);
	self_capture_twalk(next_capture());
	dso_entry2(chain_cb, next_capture());
	sp_test_cfa_rbx(chain_cb, next_capture());
	for (depth = 1; depth <= 90; depth += 4)
		chain_recurse(next_capture(), depth);
	for (size_t i = 0; i < ncaptures; i++)
		CHECK(captures[i].taken && captures[i].stack);
}

static uint32_t rng(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

/*
 * The hash state the memo keeps for the walk's outer frames [1, n) must
 * be theirs: the stack's hash resumed from it equals the hash of all.
 */
static void check_tail(const struct sp__walk_memo *memo,
		       const struct sp_frame *f, size_t n)
{
	uint64_t h, all[2], resumed[2];

	if (!sp__walk_memo_tail(memo, n, &h))
		return;
	sp__stack_hash(f, n, all);
	sp__stack_hash_resume(f, 1, h, resumed);
	CHECK_EQ(resumed[0], all[0]);
	CHECK_EQ(resumed[1], all[1]);
	tails++;
}

/*
 * Unwinds @stack (@len bytes at the capture's address) with @memo as
 * thread @tid, map generation @gen, and without a memo through @ref; the
 * two must agree on everything.
 */
static void check_one(struct sp_unwinder *u, struct sp_unwinder *ref,
		      struct sp__walk_memo *memo, const struct self_sample *s,
		      const uint8_t *stack, size_t len, int32_t tid,
		      uint64_t gen, const struct sp_mapping *m, size_t nm)
{
	struct sp_unwind_stats st_want, st_got;
	int nwant, ngot;

	memset(&st_want, 0, sizeof(st_want));
	memset(&st_got, 0, sizeof(st_got));
	nwant = sp__unwinder_unwind_jit(ref, &s->regs, stack, len,
					s->stack_addr, m, nm, NULL, 0, NULL, 0,
					0, want, CAP, &st_want);
	ngot = sp__unwinder_unwind_jit(u, &s->regs, stack, len, s->stack_addr,
				       m, nm, NULL, 0, memo, tid, gen, got, CAP,
				       &st_got);
	CHECK_EQ_INT(ngot, nwant);
	CHECK(nwant > 0);
	CHECK_MEM(got, (size_t)ngot * sizeof(*got), want,
		  (size_t)nwant * sizeof(*want));
	CHECK_MEM(&st_got, sizeof(st_got), &st_want, sizeof(st_want));
	check_tail(memo, got, (size_t)ngot);
	compared++;
}

static void check_capture(struct sp_unwinder *u, struct sp_unwinder *ref,
			  struct sp__walk_memo *memo,
			  const struct self_sample *s, int32_t tid)
{
	check_one(u, ref, memo, s, s->stack, s->stack_len, tid, 1, maps.maps,
		  maps.n);
}

static uint64_t hits(const struct sp__walk_memo *memo)
{
	uint64_t h, m, f;

	sp__walk_memo_counters(memo, &h, &m, &f);
	return h;
}

static void sequences(struct sp_unwinder *u, struct sp_unwinder *ref,
		      struct sp__walk_memo *memo)
{
	uint32_t seed = 12345;
	size_t i, r;

	for (r = 0; r < 3; r++)
		for (i = 0; i < ncaptures; i++)
			check_capture(u, ref, memo, &captures[i], 7);
	for (i = ncaptures; i-- > 0;)
		check_capture(u, ref, memo, &captures[i], 7);
	for (i = 0; i < 400; i++)
		check_capture(u, ref, memo, &captures[rng(&seed) % ncaptures],
			      7);
	CHECK(hits(memo) > 100);
}

/* Each word of a deep capture changed in turn, the memo primed whole. */
static void every_word(struct sp_unwinder *u, struct sp_unwinder *ref,
		       struct sp__walk_memo *memo)
{
	const struct self_sample *s = &captures[ncaptures - 1];
	const struct self_sample *t = &captures[ncaptures - 2];
	uint8_t *copy = malloc(s->stack_len);
	uint64_t before = hits(memo), v;
	size_t off;

	CHECK_PTR(copy);
	for (off = 0; off + 8 <= s->stack_len; off += 8) {
		memcpy(copy, s->stack, s->stack_len);
		memcpy(&v, copy + off, 8);
		v = off % 16 ? v + 1 : v ^ 0x40;
		memcpy(copy + off, &v, 8);
		check_capture(u, ref, memo, off % 24 ? s : t, 9);
		check_one(u, ref, memo, s, copy, s->stack_len, 9, 1, maps.maps,
			  maps.n);
	}
	CHECK(hits(memo) > before);
	free(copy);
}

/* Copies cut short after the memo saw them whole. */
static void cuts(struct sp_unwinder *u, struct sp_unwinder *ref,
		 struct sp__walk_memo *memo)
{
	size_t i, len;

	for (i = 0; i < ncaptures; i++) {
		const struct self_sample *s = &captures[i];

		for (len = 0; len <= s->stack_len; len += len < 64 ? 8 : 200) {
			check_capture(u, ref, memo, s, 11);
			check_one(u, ref, memo, s, s->stack, len, 11, 1,
				  maps.maps, maps.n);
		}
	}
}

/* Limits below, at and above the depths of the captures. */
static void depths(struct sp__walk_memo *memo)
{
	static const uint32_t limits[] = { 1, 2, 5, 17, 40, 64 };
	struct sp_unwinder_opts o = { .size = sizeof(o) };
	struct sp_unwinder *u, *ref;
	uint32_t seed = 99;
	size_t l, i;

	for (l = 0; l < sizeof(limits) / sizeof(limits[0]); l++) {
		o.max_depth = limits[l];
		CHECK_OK(sp_unwinder_new(&o, &u));
		CHECK_OK(sp_unwinder_new(&o, &ref));
		for (i = 0; i < 200; i++)
			check_capture(u, ref, memo,
				      &captures[rng(&seed) % ncaptures], 13);
		sp_unwinder_free(u);
		sp_unwinder_free(ref);
	}
}

/* Another generation: the map changed (a module id), never reused. */
/*
 * Output arrays shorter than the walk: the marker then replaces the last
 * frame, and the memo's hash state (of the walk it kept, marker after
 * its last frame) is not the output's, so it must not be offered.
 */
static void small_caps(struct sp_unwinder *u, struct sp_unwinder *ref,
		       struct sp__walk_memo *memo)
{
	static const size_t caps[] = { 1, 2, 3, 7, 30 };
	uint32_t seed = 7;
	size_t c, i;

	for (c = 0; c < sizeof(caps) / sizeof(caps[0]); c++) {
		for (i = 0; i < 100; i++) {
			const struct self_sample *s =
				&captures[rng(&seed) % ncaptures];
			int nwant, ngot;

			nwant = sp__unwinder_unwind_jit(
				ref, &s->regs, s->stack, s->stack_len,
				s->stack_addr, maps.maps, maps.n, NULL, 0, NULL,
				0, 0, want, caps[c], NULL);
			ngot = sp__unwinder_unwind_jit(
				u, &s->regs, s->stack, s->stack_len,
				s->stack_addr, maps.maps, maps.n, NULL, 0, memo,
				21, 1, got, caps[c], NULL);
			CHECK_EQ_INT(ngot, nwant);
			CHECK(ngot > 0);
			CHECK_MEM(got, (size_t)ngot * sizeof(*got), want,
				  (size_t)nwant * sizeof(*want));
			check_tail(memo, got, (size_t)ngot);
			compared++;
		}
	}
}

static void gens(struct sp_unwinder *u, struct sp_unwinder *ref,
		 struct sp__walk_memo *memo)
{
	static struct self_maps other;
	const struct self_sample *s = &captures[ncaptures - 1];
	uint64_t before;
	size_t i;

	other = maps;
	for (i = 0; i < other.n; i++) {
		other.maps[i].module_id += 1000;
		if (other.maps[i].path)
			other.maps[i].path = other.paths[i];
	}
	check_capture(u, ref, memo, s, 15);
	check_capture(u, ref, memo, s, 15);
	before = hits(memo);
	check_one(u, ref, memo, s, s->stack, s->stack_len, 15, 2, other.maps,
		  other.n);
	CHECK_EQ(hits(memo), before);
	check_one(u, ref, memo, s, s->stack, s->stack_len, 15, 2, other.maps,
		  other.n);
	CHECK_EQ(hits(memo), before + 1);
	/* No generation: no memo. */
	check_one(u, ref, memo, s, s->stack, s->stack_len, 15, 0, maps.maps,
		  maps.n);
	CHECK_EQ(hits(memo), before + 1);
}

/* More threads than the memo keeps, interleaved. */
static void threads(struct sp_unwinder *u, struct sp_unwinder *ref,
		    struct sp__walk_memo *memo)
{
	uint32_t seed = 4242;
	size_t i;

	for (i = 0; i < 600; i++) {
		uint32_t x = rng(&seed);

		check_capture(u, ref, memo, &captures[x % ncaptures],
			      (int32_t)(100 + (x >> 8) % 9));
	}
}

/*
 * Synthetic frame-pointer chains: records [RBP] = caller's RBP, [RBP + 8]
 * = return address every 256 bytes of a 4 KiB copy, the last with RBP 0;
 * return addresses in an anonymous mapping without unwind data or in no
 * mapping (both counted fallbacks). A sample starts at a random record
 * with a random leaf pc; some words are changed, some copies cut.
 */
#define SYN_ADDR 0x7ffd00000000ull
#define SYN_LEN 4096
#define SYN_CODE 0x400000ull

static void syn_build(uint8_t *stack, uint32_t *seed)
{
	uint64_t w;
	size_t off;

	memset(stack, 0, SYN_LEN);
	for (off = 256; off + 256 < SYN_LEN; off += 256) {
		w = off + 512 < SYN_LEN ? SYN_ADDR + off + 256 : 0;
		memcpy(stack + off, &w, 8);
		w = rng(seed) % 4 ? SYN_CODE + rng(seed) % 0x100000 :
				    0x900000 + rng(seed) % 0x1000;
		memcpy(stack + off + 8, &w, 8);
	}
}

static void synthetic(struct sp_unwinder *u, struct sp_unwinder *ref,
		      struct sp__walk_memo *memo)
{
	static uint8_t base[SYN_LEN], copy[SYN_LEN];
	struct sp_mapping m = { .start = SYN_CODE,
				.end = SYN_CODE + 0x200000,
				.flags = 0,
				.module_id = 3 };
	struct self_sample s;
	uint64_t before = hits(memo), w;
	uint32_t seed = 777;
	size_t i, k, len;

	syn_build(base, &seed);
	memset(&s, 0, sizeof(s));
	s.regs.abi = SP_REGS_ABI_64;
	s.regs.arch = SP_ARCH_NATIVE;
	s.regs.valid = (1ull << SELF_PC) | (1ull << SELF_SP) |
		       (1ull << SELF_FP);
	s.stack_addr = SYN_ADDR;
	for (i = 0; i < 3000; i++) {
		if (i % 500 == 499)
			syn_build(base, &seed);
		memcpy(copy, base, SYN_LEN);
		s.regs.r[SELF_PC] = SYN_CODE + rng(&seed) % 64;
		s.regs.r[SELF_SP] = SYN_ADDR;
		s.regs.r[SELF_FP] = SYN_ADDR + 256 * (1 + rng(&seed) % 14);
		for (k = rng(&seed) % 8 ? 0 : 1 + rng(&seed) % 3; k > 0; k--) {
			w = rng(&seed) % 3 ? rng(&seed) : 0;
			memcpy(copy + 8 * (rng(&seed) % (SYN_LEN / 8)), &w, 8);
		}
		len = rng(&seed) % 6 ? SYN_LEN : rng(&seed) % SYN_LEN;
		check_one(u, ref, memo, &s, copy, len, 21, 1, &m, 1);
	}
	CHECK(hits(memo) > before + 500);
}

int main(void)
{
	struct sp_unwinder *u, *ref;
	struct sp__walk_memo *memo;
	struct sp__mem mem;

	capture_all();
	self_load_maps(&maps);
	sp__mem_init(&mem, NULL);
	CHECK_OK(sp__walk_memo_new(&mem, &memo));
	CHECK_OK(sp_unwinder_new(NULL, &u));
	CHECK_OK(sp_unwinder_new(NULL, &ref));
	sequences(u, ref, memo);
	every_word(u, ref, memo);
	cuts(u, ref, memo);
	depths(memo);
	small_caps(u, ref, memo);
	gens(u, ref, memo);
	threads(u, ref, memo);
	synthetic(u, ref, memo);
	/* The kept walks offer their hash state, or that proves nothing. */
	CHECK(tails > compared / 2);
	printf("walk memo: %zu unwinds compared, %llu reused, %zu hash "
	       "states checked\n",
	       compared, (unsigned long long)hits(memo), tails);
	sp_unwinder_free(u);
	sp_unwinder_free(ref);
	sp__walk_memo_free(memo);
	return 0;
}
