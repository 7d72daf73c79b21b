/* SPDX-License-Identifier: MIT */
/* bench_unwind internals: a corpus of real, asynchronously taken samples. */
#ifndef SP_BENCH_UNWIND_H
#define SP_BENCH_UNWIND_H

#include <stddef.h>
#include <stdint.h>

#include <stackpulse/unwind.h>

/*
 * The corpus is what perf_event would hand the recorder: a high-resolution
 * timer interrupts a varied workload (deep recursion of different frame
 * shapes, then one of many libc and libm routines, some of which call back
 * into recursion), and the signal handler copies the interrupted context's
 * full GPR set (perf's 0xff0fff mask) and the stack bytes from the
 * interrupted RSP up to the top of the stack (at most 65528 bytes, perf's
 * limit). Samples therefore land on any instruction, including prologues,
 * epilogues, PLT stubs and syscalls, not just on call sites.
 */

#define BENCH_STACK_MAX 32768

struct bench_sample {
	struct sp_regs regs;
	const uint8_t *stack;
	size_t len;
	uint64_t addr;
};

struct bench_corpus {
	struct bench_sample *s;
	size_t n, cap;
	uint8_t *arena; /* stack copies, preallocated: the handler cannot
			 * allocate */
	size_t used, arena_size;
	uint64_t stack_lo, stack_top; /* the [stack] mapping */
	uint64_t ticks;		      /* signals received */
};

/*
 * Runs the workload until @cap samples are taken (timer every
 * @interval_us microseconds). Returns 0 or -errno.
 */
int bench_corpus_capture(struct bench_corpus *c, size_t cap,
			 unsigned interval_us);
void bench_corpus_free(struct bench_corpus *c);

#endif /* SP_BENCH_UNWIND_H */
