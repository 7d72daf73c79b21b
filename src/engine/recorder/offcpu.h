/* SPDX-License-Identifier: MIT */
/* Off-CPU spans: switch-out stacks weighed by the time until switch-in. */
#ifndef SP_ENGINE_OFFCPU_H
#define SP_ENGINE_OFFCPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stackpulse/spool.h>

#include "map.h"
#include "mem.h"
#include "vec.h"

struct sp_recorder;
struct sp__job;

/*
 * Off-CPU and wall mode (docs/explanation/off-cpu.md). A thread's span
 * off the CPU starts with the context-switch sample taken as it is
 * switched out (its stack) and ends with the switch-in record of its
 * return. It is measured from the SWITCH_OUT record, not the sample: the
 * kernel copies the stack between the two, on the CPU. SPULSE3 has no
 * weights, so at the end the span of D ns becomes (carry + D) / interval
 * samples of the switch-out stack (the remainder carried to the thread's
 * next span, so many short waits add up exactly), stamped evenly across
 * the span, each ending in the leaf pseudo-frame [off-cpu] (blocked) or
 * its preempted twin.
 *
 * Wall mode also keeps the thread's wall-clock ledger: the time from its
 * last switch-in to this one less what its cpu-clock samples in between
 * already stand for. cpu-clock runs a little beyond the window the switch
 * records draw (some µs per switch, perf shows the same), so a thread
 * that switches thousands of times a second would otherwise weigh more
 * than its wall time. A span gets the lesser of both, never more than it
 * measured; the ledger is reset where samples may be missing (a loss).
 *
 * Order: samples are unwound (maybe by workers) and written in dispatch
 * order, so the switch records, losses and exits that end spans are
 * dispatched as jobs too (tagged, with nothing to unwind) and act when
 * written, after every sample before them. All of it runs on the
 * sequencer thread.
 *
 * Records are applied in time order only as far as the rings showed
 * them: one committed to its ring after a drain that had passed its
 * timestamp (a switch-out sample whose stack copy outlasted the drain)
 * is applied after newer records of other rings ("late"). Spans are
 * therefore matched by the records' own times, not their order: a
 * switch-in with no armed span is kept (@in_pending), and a switch-out
 * sample older than it, arriving later, is closed at it (@close_pending
 * until its SWITCH_OUT record, which follows it in its ring, says where
 * the span starts). A cpu-clock sample written while its thread's span
 * is open but stamped after the switch-out belongs to the run after the
 * span (@on_after).
 */

/* Tags of struct sp__job (0: an ordinary sample). */
enum sp__job_tag {
	SP__JOB_SAMPLE = 0,
	SP__JOB_SWITCH_OUT = 1, /* a context-switch sample: opens a span */
	SP__JOB_SWITCH_IN = 2, /* ends @tid's span (ip: out << 1 | preempted) */
	SP__JOB_LOSS = 3,      /* records were lost: cut every open span */
	SP__JOB_EXIT = 4,      /* @tid exited: cut its span */
};

/** struct sp__offcpu_span is one thread's state. */
struct sp__offcpu_span {
	int32_t pid;
	int32_t tid;
	uint64_t t_out;
	int64_t carry; /* span time not yet weighed (below one interval) */
	/*
	 * Wall mode's ledger: wall time not yet weighed (the time between
	 * switch-ins less @on intervals and the samples synthesised), from
	 * @prev_end, the last span's end (0: unknown since a loss or a cut).
	 */
	int64_t slack;
	uint64_t prev_end;
	uint32_t on;   /* cpu-clock samples written since @prev_end */
	uint32_t leaf; /* stack node of the switch-out stack */
	/*
	 * cpu-clock samples stamped after @t_out (written while open, or
	 * before a late switch-out: @recent, the last few samples' times,
	 * tells), and the earliest's time.
	 */
	uint32_t on_after;
	uint64_t after_ns;
	uint64_t recent[4];
	uint32_t nrecent;
	bool open; /* written side: the switch-out stack is in the spool */
	/*
	 * Applied side (records in time order, ahead of the writes in
	 * threaded mode): a switch-out sample was dispatched and no end
	 * since; how its SWITCH_OUT record says it left.
	 */
	bool armed;
	bool preempt;	    /* what the last SWITCH_OUT record said */
	bool out_fresh;	    /* that record came since the last switch-in */
	bool in_pending;    /* the last switch-in found no armed span */
	bool close_pending; /* armed, late: ends at @in_ns (offcpu.c) */
	bool ever_armed;    /* a switch-out sample of it was seen */
	bool in_counted;    /* @in_pending is in switch_in_unmatched */
	int32_t in_pid;	    /* the last switch-in's pid */
	uint64_t arm_ns;    /* the armed switch-out sample's time */
	uint64_t out_ns;    /* the last SWITCH_OUT record's time */
	uint64_t in_ns;	    /* the last switch-in's time */
};

/** struct sp__offcpu is the recorder's off-CPU state. */
struct sp__offcpu {
	int mode; /* enum sp_profile_mode */
	uint64_t interval_ns;
	uint64_t min_ns;
	uint32_t module;       /* the SP_OFF_CPU_MODULE kernel module's id */
	struct sp__map by_tid; /* tid -> index in @spans */
	struct sp__vec spans;  /* struct sp__offcpu_span */
	/*
	 * Applied side: by CPU (so by ring), the time of the last record
	 * applied from it, 0 none: where a loss in that ring began.
	 */
	struct sp__vec cpu_last; /* uint64_t */
	uint64_t newest;	 /* the newest record time applied */
	size_t nopen;		 /* written side */
	size_t narmed;		 /* applied side */
};

/*
 * Sets the mode up and writes its module records (before any sample).
 * Returns 0 or a writer error.
 */
int sp__offcpu_init(struct sp_recorder *rec, int mode, uint32_t min_us,
		    uint64_t interval_us);
void sp__offcpu_fini(struct sp_recorder *rec);

/*
 * sample.c: a switch-out sample of @tid at @time is about to be
 * dispatched (before its job is taken: a late span it supersedes is
 * closed first), then was (sp__offcpu_armed: closes it at once when its
 * switch-in was applied before it).
 */
int sp__offcpu_arm(struct sp_recorder *rec, int32_t tid, uint64_t time);
int sp__offcpu_armed(struct sp_recorder *rec, int32_t tid);
/* apply.c: a switch record, a loss, an exit (dispatched as tagged jobs). */
int sp__offcpu_apply_switch(struct sp_recorder *rec, uint32_t type,
			    const void *data, size_t len);
int sp__offcpu_apply_cut(struct sp_recorder *rec, uint32_t tag, int32_t pid,
			 int32_t tid, uint64_t time);
/*
 * apply.c: a record of @cpu's ring at @time was applied (0 when no mode
 * but cpu); the loss on @cpu's ring that a PERF_RECORD_LOST reports
 * began after the time noted last, which sp__offcpu_loss_start returns.
 */
void sp__offcpu_note(struct sp_recorder *rec, uint32_t cpu, uint64_t time);
uint64_t sp__offcpu_loss_start(const struct sp_recorder *rec, uint32_t cpu);

/* sample.c: a cpu-clock sample of @tid at @time was written (the ledger). */
void sp__offcpu_on_cpu(struct sp_recorder *rec, int32_t tid, uint64_t time);

/*
 * sample.c: a tagged job's write; @f / @n the frames of a switch-out
 * sample. Returns 0 or a writer error.
 */
int sp__offcpu_write(struct sp_recorder *rec, struct sp__job *job,
		     const struct sp_frame *f, size_t n);

/* Ends every open span at @now (the recording ends). */
int sp__offcpu_finish(struct sp_recorder *rec, uint64_t now);

#endif /* SP_ENGINE_OFFCPU_H */
