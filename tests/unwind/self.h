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

/*
 * The build's register numbering (the tests capture their own registers,
 * self_asm.S or self_asm_aarch64.S): the pc, the stack pointer, the
 * frame pointer, what sample_here() captures and every register.
 */
#if defined(__aarch64__)
#define SELF_PC SP_AARCH64_PC
#define SELF_SP SP_AARCH64_SP
#define SELF_FP SP_AARCH64_X29
#define SELF_LR SP_AARCH64_X30
#define SELF_CAPTURED (0x3fffull << 19) /* X19-X30, SP, PC */
#define SELF_NREGS SP_AARCH64_NREGS
#else
#define SELF_PC SP_X86_64_RIP
#define SELF_SP SP_X86_64_RSP
#define SELF_FP SP_X86_64_RBP
#define SELF_CAPTURED                                                          \
	((1ull << 3) | (1ull << 6) | (1ull << 7) | (0xfull << 12) |            \
	 (1ull << 16))
#define SELF_NREGS SP_X86_64_NREGS
#endif
#define SELF_ALL ((1ull << SELF_NREGS) - 1)

/* One captured sample: registers and a copy of the stack above its SP. */
struct self_sample {
	struct sp_regs regs;
	uint8_t *stack;
	size_t stack_len;
	uint64_t stack_addr;
	int taken;
};

/*
 * self_asm.S, self_asm_aarch64.S. "rbx" names the callee-saved register
 * the CFA is computed from: RBX, or X19 on AArch64.
 */
void sp_test_capture(struct sp_regs *out);
void sp_test_cfa_rbx(void (*fn)(void *), void *arg);
void sp_test_clobber_rbx(void (*fn)(void *), void *arg);
#if defined(__aarch64__)
/* A signal restorer with the vDSO's CFI (kernel sigreturn.S). */
void sp_test_sigreturn(void);
#endif

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
