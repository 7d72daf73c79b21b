/* SPDX-License-Identifier: MIT */
/* Self-unwind: capture our own stack in known call chains and unwind it. */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "self.h"
#include "self_common.h"

/*
 * Each test captures registers and a stack copy in sample_here() inside a
 * known chain, unwinds it with the public API against /proc/self/maps and
 * checks the frames by name (dladdr; the executable is linked with
 * -rdynamic). The chains are built -O2 -fomit-frame-pointer, so only CFI
 * can unwind them; frame-pointer fallback would skip or invent frames.
 */

/* Not static: dladdr must name these frames. */
void test_chain(struct sp_unwinder *u);
void test_libc(struct sp_unwinder *u);
void test_dso(struct sp_unwinder *u);
void test_cfa_rbx(struct sp_unwinder *u);
void test_cfa_rbx_saved(struct sp_unwinder *u);
void clobber_then_chain(void *arg);
void test_depth_cap(void);
void test_plt_pc(struct sp_unwinder *u);

#define CAP 1100

static struct sp_frame frames[CAP];

static void sample_free(struct self_sample *s)
{
	free(s->stack);
	memset(s, 0, sizeof(*s));
}

SELF_NOIPA void test_chain(struct sp_unwinder *u)
{
	static const char *const want[] = { "sample_here", "chain_c",
					    "chain_b",	   "chain_a",
					    "test_chain",  "main" };
	struct self_sample s = { 0 };
	struct sp_unwind_stats st;
	int n;

	chain_a(&s, 1);
	CHECK(s.taken);
	n = self_unwind(u, &s, frames, CAP, &st);
	CHECK(self_expect(frames, n, 0, want, 6));
	CHECK(self_is_complete(frames, n, &st));
	CHECK_EQ(st.samples, 1);
	CHECK_EQ(st.frames, (uint64_t)n);
	/* Pinned frames: file-relative pc within the module. */
	CHECK(frames[0].module_id != SP_NO_MODULE);
	CHECK(frames[0].file_relative_ip < frames[0].abs_ip);
	/* Callers are reported as return address - 1 (inside the call). */
	CHECK(frames[1].abs_ip > (uint64_t)(uintptr_t)chain_c);
	sample_free(&s);
}

/*
 * libc (Debian: no frame pointers) between our callback and us
 * (self_capture_twalk: twalk's recursion calls self_walk_action).
 */
SELF_NOIPA void test_libc(struct sp_unwinder *u)
{
	struct self_sample s = { 0 };
	struct sp_unwind_stats st;
	int n, k, in_libc = 0;
	const char *file;

	self_capture_twalk(&s);
	CHECK(s.taken);
	n = self_unwind(u, &s, frames, CAP, &st);
	CHECK(self_expect(
		frames, n, 0,
		(const char *const[]){ "sample_here", "self_walk_action" }, 2));
	for (k = 2; k < n; k++) {
		if (strcmp(self_name(frames[k].abs_ip, &file),
			   "self_capture_twalk") == 0)
			break;
		in_libc += strstr(file, "libc.so") != NULL;
	}
	if (in_libc < 2)
		self_print(frames, n);
	CHECK(in_libc >= 2); /* twalk and at least one trecurse */
	CHECK(self_expect(frames, n, k,
			  (const char *const[]){ "self_capture_twalk",
						 "test_libc", "main" },
			  3));
	CHECK(self_is_complete(frames, n, &st));
	sample_free(&s);
}

SELF_NOIPA void test_dso(struct sp_unwinder *u)
{
	static const char *const want[] = { "sample_here", "chain_c",
					    "chain_cb",	   "dso_entry",
					    "dso_entry2",  "test_dso",
					    "main" };
	struct self_sample s = { 0 };
	struct sp_unwind_stats st;
	int n;

	/* The first, lazily bound call of both PLT entries. */
	dso_entry2(chain_cb, &s);
	CHECK(s.taken);
	n = self_unwind(u, &s, frames, CAP, &st);
	CHECK(self_expect(frames, n, 0, want, 7));
	CHECK(self_is_complete(frames, n, &st));
	sample_free(&s);
}

SELF_NOIPA void test_cfa_rbx(struct sp_unwinder *u)
{
	static const char *const want[] = { "sample_here",  "chain_c",
					    "chain_cb",	    "sp_test_cfa_rbx",
					    "test_cfa_rbx", "main" };
	struct self_sample s = { 0 };
	struct sp_unwind_stats st;
	int n;

	sp_test_cfa_rbx(chain_cb, &s);
	CHECK(s.taken);
	n = self_unwind(u, &s, frames, CAP, &st);
	CHECK(self_expect(frames, n, 0, want, 6));
	CHECK(self_is_complete(frames, n, &st));
	sample_free(&s);
}

/* Calls chain_cb under a frame that saved and replaced RBX. */
SELF_NOIPA void clobber_then_chain(void *arg)
{
	sp_test_clobber_rbx(chain_cb, arg);
	__asm__ volatile("" ::: "memory"); /* not a tail call */
}

/*
 * The CFA of sp_test_cfa_rbx is RBX + 16, and the RBX of the sample is
 * garbage: the value comes from sp_test_clobber_rbx's save slot, three
 * frames below. The unwinder applies such saves only when a step needs
 * them, so this checks that it does apply them then.
 */
SELF_NOIPA void test_cfa_rbx_saved(struct sp_unwinder *u)
{
	static const char *const want[] = {
		"sample_here",	      "chain_c",
		"chain_cb",	      "sp_test_clobber_rbx",
		"clobber_then_chain", "sp_test_cfa_rbx",
		"test_cfa_rbx_saved", "main"
	};
	struct self_sample s = { 0 };
	struct sp_unwind_stats st;
	int n;

	sp_test_cfa_rbx(clobber_then_chain, &s);
	CHECK(s.taken);
	n = self_unwind(u, &s, frames, CAP, &st);
	CHECK(self_expect(frames, n, 0, want, 8));
	CHECK(self_is_complete(frames, n, &st));
	sample_free(&s);
}

SELF_NOIPA void test_depth_cap(void)
{
	struct sp_unwinder_opts o = { .size = sizeof(o), .max_depth = 16 };
	struct self_sample s = { 0 };
	struct sp_unwind_stats st;
	struct sp_unwinder *u;
	int n, i;

	CHECK_OK(sp_unwinder_new(&o, &u));
	chain_recurse(&s, 100);
	n = self_unwind(u, &s, frames, CAP, &st);
	CHECK_EQ(n, 17);
	CHECK_EQ(frames[16].mode, SP_FRAME_TRUNCATED);
	CHECK_EQ(frames[16].abs_ip, 0);
	CHECK_EQ(frames[16].module_id, SP_NO_MODULE);
	for (i = 1; i < 16; i++)
		CHECK(strcmp(self_name(frames[i].abs_ip, NULL),
			     "chain_recurse") == 0);
	CHECK_EQ(st.truncated, 1);
	CHECK_EQ(st.frames, 16);
	/* The cut is counted, as the depth limit and nothing else. */
	for (i = 0; i < SP_SAMPLE_ERR_COUNT; i++)
		CHECK_EQ(st.errors[i], i == SP_SAMPLE_ERR_DEPTH_LIMIT);
	/* A caller array smaller than the stack: cap - 1 frames + marker. */
	memset(&st, 0, sizeof(st));
	n = self_unwind(u, &s, frames, 5, &st);
	CHECK_EQ(n, 5);
	CHECK_EQ(frames[4].mode, SP_FRAME_TRUNCATED);
	CHECK_EQ(st.frames, 4);
	CHECK_EQ(st.errors[SP_SAMPLE_ERR_DEPTH_LIMIT], 1);
	/* Default depth: the whole recursion fits below 1024. */
	sp_unwinder_free(u);
	CHECK_OK(sp_unwinder_new(NULL, &u));
	n = self_unwind(u, &s, frames, CAP, &st);
	CHECK(n > 101);
	CHECK(self_is_complete(frames, n, &st));
	sp_unwinder_free(u);
	sample_free(&s);
}

/*
 * The PLT stub the executable calls dso_entry2 through, decoded from the
 * call instruction before the return address @ra: x86-64 call rel32,
 * AArch64 bl imm26.
 */
static uint64_t call_target(uint64_t ra)
{
#if defined(__aarch64__)
	uint32_t insn;
	int64_t imm;

	memcpy(&insn, (const void *)(uintptr_t)(ra - 4), 4);
	CHECK_EQ(insn >> 26, 0x25); /* bl */
	imm = (int64_t)((uint64_t)(insn & 0x3ffffff) << 38) >> 36;
	return ra - 4 + (uint64_t)imm;
#else
	int32_t rel;

	CHECK_EQ(*(const uint8_t *)(uintptr_t)(ra - 5), 0xe8);
	memcpy(&rel, (const void *)(uintptr_t)(ra - 4), 4);
	return ra + (uint64_t)(int64_t)rel;
#endif
}

/*
 * A pc inside a PLT stub: on x86-64 the stub has a CFA expression; on
 * AArch64 it has no CFI, and the unwinder's own row says the return
 * address is in X30. The sample is synthesized from a real one: the pc =
 * the stub, the stack pointer as at the call (on x86-64 the slot holding
 * the return address, on AArch64 the caller's SP and X30 = the return
 * address), the callee-saved registers captured just before the call.
 */
SELF_NOIPA void test_plt_pc(struct sp_unwinder *u)
{
	struct self_sample s = { 0 };
	struct sp_unwind_stats st;
	uint64_t ra = 0, slot = 0, v;
	struct sp_regs at_call;
	int n, i;

	/* Callee-saved registers as they are at the call below. */
	memset(&at_call, 0, sizeof(at_call));
	sp_test_capture(&at_call);
	dso_entry2(chain_cb, &s);
	n = self_unwind(u, &s, frames, CAP, &st);
	for (i = 0; i < n; i++)
		if (strcmp(self_name(frames[i].abs_ip, NULL), "test_plt_pc") ==
		    0)
			ra = frames[i].abs_ip + 1;
	CHECK(ra != 0);
	memcpy(s.regs.r, at_call.r, sizeof(s.regs.r));
	s.regs.r[SELF_PC] = call_target(ra);
#if defined(__aarch64__)
	/* SP as captured: a call uses no stack. (The saved return address
	 * may be signed, so it is not looked for on the stack.) */
	(void)v;
	(void)slot;
	s.regs.r[SELF_LR] = ra;
#else
	for (v = 0; v + 8 <= s.stack_len && !slot; v += 8)
		if (memcmp(s.stack + v, &ra, 8) == 0)
			slot = s.stack_addr + v;
	CHECK(slot != 0);
	s.regs.r[SELF_SP] = slot;
#endif
	n = self_unwind(u, &s, frames, CAP, &st);
	CHECK(self_expect(frames, n, 1,
			  (const char *const[]){ "test_plt_pc", "main" }, 2));
	CHECK_EQ(st.fallbacks[SP_FALLBACK_DWARF_CFI_INDEX_LOOKUP], 0);
	sample_free(&s);
}

int main(void)
{
	struct sp_unwinder *u;

	CHECK_OK(sp_unwinder_new(NULL, &u));
	test_chain(u);
	test_libc(u);
	test_dso(u);
	test_cfa_rbx(u);
	test_cfa_rbx_saved(u);
	test_plt_pc(u);
	test_depth_cap();
	sp_unwinder_free(u);
	return T_EXIT_PASS;
}
