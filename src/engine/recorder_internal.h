/* SPDX-License-Identifier: MIT */
/* The recorder object shared by the engine's files. */
#ifndef SP_ENGINE_RECORDER_INTERNAL_H
#define SP_ENGINE_RECORDER_INTERNAL_H

#include <stdatomic.h>

#include <stackpulse/recorder.h>
#include <stackpulse/writer.h>

#include "guardian.h"
#include "jit_side.h"
#include "kernel_module.h"
#include "mem.h"
#include "merge.h"
#include "perf_event.h"
#include "pool.h"
#include "process.h"
#include "ring.h"
#include "vec.h"

struct sp__out_file;

/*
 * Inline mode: one struct, driven by the caller's thread. Rings are
 * indexed per CPU through @cpu_ring; a ring keeps the event it was mapped
 * from open for its whole life, so later events can SET_OUTPUT into it
 * even after the first task exits.
 */

/* Kinds of epoll registrations (high 32 bits of epoll_data.u64). */
#define SP__EP_EVENT 1ull
#define SP__EP_PIDFD 2ull
#define SP__EP_WAKE 3ull /* threaded mode: readers have records */

/* Per-CPU ring budgets (stackpulse 0.10.2). */
#define SP__RING_CPU_MAX (256ull << 20)
#define SP__RING_TOTAL_MAX (1ull << 30)

struct sp_recorder {
	struct sp__mem mem;
	const struct sp_logger *logger;
	struct sp_writer *writer;
	struct sp_unwinder *unwinder;
	struct sp__procs procs;
	struct sp__merge merge;
	struct sp__perf_cfg cfg;
	uint64_t sample_type; /* fixed by the first open */
	bool sample_type_fixed;
	uint64_t ring_samples;
	uint64_t ring_bytes_total;
	int *cpus;
	int ncpus;
	struct sp__vec rings; /* struct sp__ring */
	int *cpu_ring;	      /* index into rings per cpu slot, -1 = none */
	int epfd;
	void *scratch;	     /* SP__RING_RECORD_MAX bytes */
	struct sp__job *job; /* inline mode's only job */
	/*
	 * Threaded mode (NULL: inline). While a record is applied,
	 * @cur_owner is the reader block holding it (NULL when it was
	 * copied); a sample handed to a worker sets @owner_taken so the
	 * block is released only once the sample is written.
	 */
	struct sp__pipeline *pipe;
	void *cur_owner;
	bool owner_taken;
	/* The replay harness (harness.h): fixture capture, virtual clock. */
	struct sp__vec *capture;
	int capture_err;
	const _Atomic uint64_t *vclock;
	bool replay;
	struct sp__jit_side jit_side;
	struct sp_recording_summary sum;
	struct sp_unwind_stats ustats;
	struct sp_poll_summary poll;
	char *path;		  /* spool path (NULL for a caller's sink) */
	struct sp__out_file *out; /* its file until closed (out_file.h) */
	struct sp__guardian guardian; /* for STOP attaches (guardian.h) */
	uint64_t lost_pending; /* lost deltas not yet counted as a batch */
	uint64_t last_lost_ns;
	uint64_t last_sweep_ns;
	uint64_t last_flush_ns;
	/*
	 * Inline mode: every record older than this was applied (the last
	 * released watermark; the pipeline keeps its own).
	 */
	uint64_t released_ns;
	bool sweep_pending; /* a loss batch made lifecycle state uncertain */
	bool enabled;
	bool finished;
	bool tail_taken;
	struct sp__kmod kmod; /* kernel text module (kernel_module.c) */
	/* System-wide / cgroup mode (system.c); NULL in process mode. */
	struct sp__system *sys;
	/* JIT code (jit_track.h); NULL with SP_RECORDER_NO_JIT_CODE. */
	struct sp__jit *jit;
};

/* Upper bound of unwinder threads in threaded mode. */
#define SP__WORKERS_MAX SP_RECORDER_THREADS_MAX

/* Pacing of loss reads and recovery sweeps during polls (§1.4). */
#define SP__LOST_READ_NS 100000000ull
#define SP__SWEEP_NS 250000000ull
/*
 * Buffered records reach the spool at least this often, so a Tail (spulse
 * top, a live UI) sees a recording while it runs, not only at its end.
 */
#define SP__FLUSH_NS 250000000ull
/*
 * Inline mode reads samples in the ring only up to this far past now; a
 * later timestamp (never from a sane kernel) is copied, so it cannot keep
 * the ring from being consumed.
 */
#define SP__HOLD_NS 1000000000ull
/* Per process, at most one uncovered-PC maps reconcile per this. */
#define SP__UNCOVERED_NS 100000000ull

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

/* poll.c: draining rings into the merge queue and applying records. */
/*
 * Collects ready epoll events without waiting (hang-ups, pidfds of exited
 * processes), so flush and finish retire processes that died since the
 * last poll.
 */
void sp__recorder_collect(struct sp_recorder *rec);
/*
 * sp__recorder_flush is sp_recorder_flush() without the publish: an
 * attach may flush a recording that has not started yet.
 */
int sp__recorder_flush(struct sp_recorder *rec);
/*
 * sp__recorder_publish makes the spool path name the file (out_file.h)
 * at the first poll, flush, finish or tail: a recorder closed before that
 * leaves the path as it was.
 */
int sp__recorder_publish(struct sp_recorder *rec);
/*
 * Whether records wait outside the merge queue: unread in a ring (inline
 * mode) or anywhere in the threaded pipeline.
 */
bool sp__recorder_rings_pending(const struct sp_recorder *rec);

int sp__recorder_drain(struct sp_recorder *rec);
int sp__recorder_release(struct sp_recorder *rec, uint64_t watermark);
void sp__recorder_reap(struct sp_recorder *rec);

/* apply.c: one ordered record's effect on state and spool. */
int sp__recorder_apply(void *ctx, uint32_t type, const void *data, size_t len);

/*
 * sample.c: one queued sample to spool frames. Inline mode unwinds and
 * writes at once; threaded mode dispatches a job that
 * sp__recorder_sample_write() writes later, in order.
 */
int sp__recorder_sample(struct sp_recorder *rec, const struct sp__qsample *s);
int sp__recorder_sample_write(struct sp_recorder *rec, struct sp__job *job);

/* attach.c / events.c */
int sp__recorder_open_events(struct sp_recorder *rec, struct sp__process *proc,
			     int32_t tid, bool on_exec);
int sp__recorder_set_enabled(struct sp_recorder *rec, bool on);
/*
 * Maps a new ring for cpu slot @slot from event @fd (the ring keeps a
 * duplicate of @fd) within the ring budget.
 */
int sp__recorder_ring_new(struct sp_recorder *rec, int fd, int slot);
/* Registers @fd of @kind (SP__EP_*) with the recorder's epoll. */
int sp__recorder_ep_add(struct sp_recorder *rec, int fd, uint64_t kind);
/*
 * Marks @proc finished: tag 7, pidfd closed, fds closed (children mode:
 * held open while a tracked descendant that inherited them lives).
 */
int sp__recorder_retire(struct sp_recorder *rec, struct sp__process *proc);
/* 1 alive, 0 gone, -errno. */
int sp__process_alive(const struct sp__process *proc);
/* CLOCK_MONOTONIC now, in ns (the clock of every perf timestamp). */
uint64_t sp__now_ns(void);
/* The clock ordering uses: sp__now_ns(), or the replay's virtual one. */
static inline uint64_t sp__recorder_clock(const struct sp_recorder *rec)
{
	return rec->vclock ? atomic_load(rec->vclock) : sp__now_ns();
}

/* loss.c: PERF_FORMAT_LOST deltas. */
/* Adds the lost deltas of @proc's events to the pending batch. */
int sp__recorder_collect_lost(struct sp_recorder *rec,
			      struct sp__process *proc);
/* The same for a vector of struct sp__event (system mode's CPU events). */
int sp__recorder_collect_lost_events(struct sp_recorder *rec,
				     struct sp__vec *events);
/*
 * Reads every live event's lost counter (at most every 100 ms unless
 * @force); a non-zero batch is counted, bumps lifecycle_gaps and schedules
 * a recovery sweep. Returns 0 or -EPROTO (a counter went backwards or the
 * total overflowed).
 */
int sp__recorder_read_lost(struct sp_recorder *rec, bool force);

/* recovery.c: the loss recovery sweep and thread refresh. */
/*
 * Runs a pending sweep (at most every 250 ms unless @force): each tracked
 * process is checked for death or pid reuse, reconciled with its maps and
 * its threads refreshed. A failed sweep stays pending.
 */
int sp__recorder_sweep(struct sp_recorder *rec, bool force);
/* Reconciles @proc with /proc/PID/maps at time @now (uncovered PC). */
int sp__recorder_reconcile(struct sp_recorder *rec, struct sp__process *proc);

#endif /* SP_ENGINE_RECORDER_INTERNAL_H */
