/* SPDX-License-Identifier: MIT */
/* Shared declarations of the self-unwind tests (capture, chains, library). */
#ifndef SP_TESTS_UNWIND_SELF_H
#define SP_TESTS_UNWIND_SELF_H

#include <stddef.h>
#include <stdint.h>

#include <stackpulse/unwind.h>

#if defined(__has_attribute)
#if __has_attribute(noipa)
#define SELF_NOIPA __attribute__((noipa))
#endif
#endif
#ifndef SELF_NOIPA
#define SELF_NOIPA __attribute__((noinline))
#endif

/* One captured sample: registers and a copy of the stack above RSP. */
struct self_sample {
	struct sp_regs regs;
	uint8_t *stack;
	size_t stack_len;
	uint64_t stack_addr;
	int taken;
};

/* self_asm.S */
void sp_test_capture(struct sp_regs *out);
void sp_test_cfa_rbx(void (*fn)(void *), void *arg);
void sp_test_clobber_rbx(void (*fn)(void *), void *arg);

/* Where the next sample_here() copies to (exclusive top; 0 = [stack]). */
extern uint64_t self_stack_top;
extern uint64_t self_stack_bottom; /* copy from here when nonzero */
void sample_here(struct self_sample *s);

/* self_chain.c, built -O2 -fomit-frame-pointer. */
int chain_a(struct self_sample *s, int x);
int chain_b(struct self_sample *s, int x);
int chain_c(struct self_sample *s, int x);
int chain_recurse(struct self_sample *s, int depth);
void chain_cb(void *arg);
void chain_spin(volatile int *flag);

/* self_dso.c, a shared library linked -z lazy. */
int dso_entry(void (*cb)(void *), void *arg);
int dso_entry2(void (*cb)(void *), void *arg);

#endif /* SP_TESTS_UNWIND_SELF_H */
