/* SPDX-License-Identifier: MIT */
/* A sample as the pipeline queues it: parsed fields, then its bytes. */
#ifndef SP_ENGINE_QSAMPLE_H
#define SP_ENGINE_QSAMPLE_H

#include <stdint.h>

#include <stackpulse/unwind.h>

/*
 * A drain (drain.c) turns each PERF_RECORD_SAMPLE into this struct, then
 * its callchain (nr_ips u64s), then its user stack (stack_len bytes), and
 * queues the three as one record. Inline mode may leave the callchain and
 * the stack in the perf ring instead (ext_*), since it consumes the ring
 * only once the sample is written; the stack is then never copied.
 */
/*
 * Set in @misc above perf's 16 bits: the sample's period was 1, one
 * event per sample (context switches; cpu-clock's period is its
 * interval in ns, never 1).
 */
#define SP__QSAMPLE_UNIT_PERIOD (1u << 16)
/*
 * Set in @misc: @regs are a 64-bit task's with a pc and a stack pointer,
 * the pc in @user_pc (read where the sample is parsed: in threaded mode
 * a reader thread, not the sequencer).
 */
#define SP__QSAMPLE_USER_PC (1u << 17)

/** struct sp__qsample is a sample as queued (stack bytes follow ips). */
struct sp__qsample {
	uint64_t ip;
	uint64_t time;
	int32_t pid;
	int32_t tid;
	uint32_t cpu;
	uint32_t misc;
	uint64_t nr_ips;
	uint64_t stack_len;
	/*
	 * NULL: the callchain and stack follow this struct (a copy). Else
	 * they are still in the perf ring, which inline mode consumes only
	 * once the sample is written, so the stack is never copied.
	 */
	const uint64_t *ext_ips;
	const unsigned char *ext_stack;
	uint64_t user_pc; /* with SP__QSAMPLE_USER_PC */
	struct sp_regs regs;
};

static inline const uint64_t *sp__qsample_ips(const struct sp__qsample *s)
{
	return s->ext_ips ? s->ext_ips :
			    (const uint64_t *)(const void *)(s + 1);
}

static inline const unsigned char *
sp__qsample_stack(const struct sp__qsample *s)
{
	return s->ext_stack ?
		       s->ext_stack :
		       (const unsigned char *)(sp__qsample_ips(s) + s->nr_ips);
}

#endif /* SP_ENGINE_QSAMPLE_H */
