/* SPDX-License-Identifier: MIT */
/* Self-unwind through signal frames (__restore_rt), normal and alt stacks. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "check.h"
#include "self.h"
#include "self_common.h"

/*
 * ThreadSanitizer delivers asynchronous signals only when the thread next
 * enters its runtime (a call it intercepts), never inside a loop without
 * calls: chain_spin() would never be interrupted. The test needs exactly
 * that, so a TSan build skips it.
 */
#if defined(__SANITIZE_THREAD__)
#define SELF_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SELF_TSAN 1
#endif
#endif

/*
 * The main thread spins in chain_spin() (no calls, so the interrupted pc
 * is in it) while a helper thread sends SIGUSR1. The handler captures the
 * stack. The unwound stack must be: sample_here, the handler, the signal
 * trampoline (a libc frame flagged as a signal frame in the CFI) at the
 * exact return address the kernel gave the handler (its
 * __builtin_return_address: __restore_rt itself, not the byte before),
 * then chain_spin at its exact interrupted pc and its callers.
 *
 * On an alternate stack the handler's frames and the interrupted frames
 * live in different places while the API takes one stack region:
 *  - alt stack inside the main stack (a local buffer of a caller) and a
 *    copy from the interrupted RSP up: one region holds both, so the
 *    stack is complete;
 *  - alt stack in its own allocation, copy of the alt stack only: the walk
 *    reaches chain_spin and then stops with SP_SAMPLE_ERR_STACK_TRUNCATED.
 */

/* Not static: dladdr must name these frames. */
void on_usr1(int sig, siginfo_t *info, void *uc_);
void run_spin(void);
void test_normal_stack(struct sp_unwinder *u);
void test_alt_inside_main(struct sp_unwinder *u);
void test_alt_separate(struct sp_unwinder *u);

#define CAP 256

/*
 * The interrupted pc and stack pointer; and where the handler returns
 * to: libc's __restore_rt on x86-64; on AArch64 the vDSO's
 * __kernel_rt_sigreturn, or with SA_RESTORER (raw_install) a restorer
 * of ours with the same CFI, which is what qemu-user (no vDSO) can run.
 */
#if defined(__aarch64__)
static uint64_t uc_pc(const ucontext_t *uc)
{
	return uc->uc_mcontext.pc;
}

static uint64_t uc_sp(const ucontext_t *uc)
{
	return uc->uc_mcontext.sp;
}
#define TRAMPOLINE_FILE "linux-vdso.so.1"
#else
static uint64_t uc_pc(const ucontext_t *uc)
{
	return (uint64_t)uc->uc_mcontext.gregs[REG_RIP];
}

static uint64_t uc_sp(const ucontext_t *uc)
{
	return (uint64_t)uc->uc_mcontext.gregs[REG_RSP];
}
#define TRAMPOLINE_FILE "libc.so"
#endif

static struct sp_frame frames[CAP];
static struct self_sample sig_sample;
static uint64_t sig_ra; /* the handler's return address: the trampoline */
static volatile int handled;
static int copy_from_interrupted;

SELF_NOIPA void on_usr1(int sig, siginfo_t *info, void *uc_)
{
	ucontext_t *uc = uc_;
	uint64_t pc;

	(void)sig;
	(void)info;
	/* Sample only once the main thread spins in chain_spin (tiny). */
	pc = uc_pc(uc);
	if (pc < (uint64_t)(uintptr_t)chain_spin ||
	    pc >= (uint64_t)(uintptr_t)chain_spin + 256)
		return;
	if (copy_from_interrupted)
		self_stack_bottom = uc_sp(uc);
	sample_here(&sig_sample);
	sig_ra = (uint64_t)(uintptr_t)__builtin_return_address(0);
	self_stack_bottom = 0;
	handled = 1;
}

static void *kicker(void *arg)
{
	pthread_t main_thread = *(pthread_t *)arg;
	struct timespec ts = { 0, 1000000 };

	while (!handled) {
		pthread_kill(main_thread, SIGUSR1);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

SELF_NOIPA void run_spin(void)
{
	pthread_t self = pthread_self(), th;

	handled = 0;
	memset(&sig_sample, 0, sizeof(sig_sample));
	CHECK_EQ(pthread_create(&th, NULL, kicker, &self), 0);
	chain_spin(&handled);
	pthread_join(th, NULL);
	CHECK(sig_sample.taken);
}

static int own_restorer; /* AArch64: handlers return to ours */

#if defined(__aarch64__)
/* The kernel's struct sigaction (asm-generic), for SA_RESTORER. */
struct ksigaction {
	void (*handler)(int, siginfo_t *, void *);
	unsigned long flags;
	void (*restorer)(void);
	uint64_t mask;
};

#define KSA_RESTORER 0x04000000ul

static void raw_install(int flags)
{
	struct ksigaction ka = {
		.handler = on_usr1,
		.flags = SA_SIGINFO | (unsigned long)flags | KSA_RESTORER,
		.restorer = sp_test_sigreturn,
	};

	CHECK_EQ(syscall(SYS_rt_sigaction, SIGUSR1, &ka, NULL, 8), 0);
}
#endif

static void install(int flags)
{
	struct sigaction sa;

#if defined(__aarch64__)
	if (own_restorer) {
		raw_install(flags);
		return;
	}
#endif
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_usr1;
	sa.sa_flags = SA_SIGINFO | flags;
	sigemptyset(&sa.sa_mask);
	CHECK_EQ(sigaction(SIGUSR1, &sa, NULL), 0);
}

/* Checks sample_here, on_usr1, trampoline, chain_spin; returns frames. */
static int unwind_signal(struct sp_unwinder *u, struct sp_unwind_stats *st)
{
	const char *file;
	int n = self_unwind(u, &sig_sample, frames, CAP, st);

	CHECK(self_expect(frames, n, 0,
			  (const char *const[]){ "sample_here", "on_usr1" },
			  2));
	CHECK(n > 3);
	/* The trampoline's frame is at the return address itself. */
	CHECK_EQ(frames[2].abs_ip, sig_ra);
	if (own_restorer) {
		CHECK(strcmp(self_name(frames[2].abs_ip, &file),
			     "sp_test_sigreturn") == 0);
	} else {
		self_name(frames[2].abs_ip, &file);
		CHECK(strstr(file, TRAMPOLINE_FILE) != NULL);
	}
	CHECK(self_expect(frames, n, 3, (const char *const[]){ "chain_spin" },
			  1));
	return n;
}

SELF_NOIPA void test_normal_stack(struct sp_unwinder *u)
{
	struct sp_unwind_stats st;
	int n;

	install(0);
	run_spin();
	n = unwind_signal(u, &st);
	CHECK(self_expect(frames, n, 4,
			  (const char *const[]){ "run_spin",
						 "test_normal_stack", "main" },
			  3));
	CHECK(self_is_complete(frames, n, &st));
	free(sig_sample.stack);
}

SELF_NOIPA void test_alt_inside_main(struct sp_unwinder *u)
{
	char altbuf[64 * 1024] __attribute__((aligned(16)));
	struct sp_unwind_stats st;
	stack_t ss = { .ss_sp = altbuf, .ss_size = sizeof(altbuf) };
	int n;

	CHECK_EQ(sigaltstack(&ss, NULL), 0);
	install(SA_ONSTACK);
	copy_from_interrupted = 1;
	run_spin();
	copy_from_interrupted = 0;
	ss.ss_flags = SS_DISABLE;
	CHECK_EQ(sigaltstack(&ss, NULL), 0);
	/* The handler ran on the alternate stack, above chain_spin's frame. */
	CHECK(sig_sample.regs.r[SELF_SP] >= (uint64_t)(uintptr_t)altbuf);
	CHECK(sig_sample.regs.r[SELF_SP] <
	      (uint64_t)(uintptr_t)altbuf + sizeof(altbuf));
	n = unwind_signal(u, &st);
	CHECK(self_expect(frames, n, 4,
			  (const char *const[]){
				  "run_spin", "test_alt_inside_main", "main" },
			  3));
	CHECK(self_is_complete(frames, n, &st));
	free(sig_sample.stack);
}

SELF_NOIPA void test_alt_separate(struct sp_unwinder *u)
{
	struct sp_unwind_stats st;
	size_t size = 64 * 1024;
	char *alt = malloc(size);
	stack_t ss = { .ss_sp = alt, .ss_size = size };
	int n;

	CHECK(alt != NULL);
	CHECK_EQ(sigaltstack(&ss, NULL), 0);
	install(SA_ONSTACK);
	self_stack_top = (uint64_t)(uintptr_t)alt + size;
	run_spin();
	self_stack_top = 0;
	ss.ss_flags = SS_DISABLE;
	CHECK_EQ(sigaltstack(&ss, NULL), 0);
	n = unwind_signal(u, &st);
#if defined(__aarch64__)
	/* chain_spin keeps its return address in X30, which the signal
	 * frame restored: its caller needs no stack, then the copy ends. */
	CHECK_EQ(n, 6);
	CHECK(self_expect(frames, n, 4, (const char *const[]){ "run_spin" },
			  1));
#else
	CHECK_EQ(n, 5);
#endif
	CHECK_EQ(frames[n - 1].mode, SP_FRAME_TRUNCATED);
	CHECK_EQ(st.errors[SP_SAMPLE_ERR_STACK_TRUNCATED], 1);
	CHECK_EQ(st.truncated, 1);
	free(sig_sample.stack);
	free(alt);
}

int main(void)
{
	struct sp_unwinder *u;

#ifdef SELF_TSAN
	fprintf(stderr, "skip: TSan defers signals past chain_spin()\n");
	return T_EXIT_SKIP;
#endif
	CHECK_OK(sp_unwinder_new(NULL, &u));
#if defined(__aarch64__)
	/* Our restorer always; the vDSO's when there is one (not qemu). */
	own_restorer = 1;
	test_normal_stack(u);
	test_alt_inside_main(u);
	test_alt_separate(u);
	own_restorer = 0;
	if (!getauxval(AT_SYSINFO_EHDR)) {
		fprintf(stderr, "no vDSO: __kernel_rt_sigreturn not tested\n");
		sp_unwinder_free(u);
		return T_EXIT_PASS;
	}
#endif
	test_normal_stack(u);
	test_alt_inside_main(u);
	test_alt_separate(u);
	sp_unwinder_free(u);
	return T_EXIT_PASS;
}
