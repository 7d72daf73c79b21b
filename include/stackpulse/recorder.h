/* SPDX-License-Identifier: MIT */
/* stackpulse: the Recorder (perf_event sampling of processes into a spool). */
#ifndef STACKPULSE_RECORDER_H
#define STACKPULSE_RECORDER_H

#include <stdbool.h>

#include <stackpulse/alloc.h>
#include <stackpulse/api.h>
#include <stackpulse/log.h>
#include <stackpulse/sink.h>
#include <stackpulse/tail.h>
#include <stackpulse/unwind.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A Recorder samples CPU stacks with perf_event_open (software
 * cpu-clock), of the processes the caller attaches (process mode) or of
 * the whole machine or a cgroup (system mode, struct sp_system_opts),
 * unwinds user stacks at record time and writes a SPULSE3 spool. In inline mode (threads = 0) all work happens inside
 * sp_recorder_poll() on the caller's thread: drain every ring, order
 * records by time, apply process/module changes, unwind, write. In
 * threaded mode (threads = N unwinder threads, or SP_THREADS_AUTO) reader
 * threads drain the rings and worker threads unwind in the background,
 * while sp_recorder_poll() still orders, applies and writes on the
 * caller's thread, so the spool is the same as inline mode would write
 * for the same records. Call poll regularly either way. A Recorder is
 * single-owner; in threaded mode a custom allocator must be thread-safe.
 */
struct sp_recorder;

/** Threads value meaning "pick for this machine" (see @threads). */
#define SP_THREADS_AUTO UINT32_MAX

/** Sample rate meaning "the kernel's perf_event_max_sample_rate". */
#define SP_RATE_MAX UINT32_MAX

/** Largest @stack_size: the kernel's sample_stack_user limit, 8-aligned. */
#define SP_RECORDER_STACK_MAX 65528u

/** Most unwinder threads (@threads); larger counts are clamped to it. */
#define SP_RECORDER_THREADS_MAX 64u

/* Flags of struct sp_recorder_opts. */
#define SP_RECORDER_KERNEL 0x1u /* kernel callchains (retried user-only) */
#define SP_RECORDER_INHERIT_CHILDREN 0x2u /* follow forked children */
#define SP_RECORDER_ZSTD 0x4u /* compress the spool (zstd frame per chunk) */
/*
 * Never read JIT runtimes' code or what they describe of it from the
 * targets: no CPython -X perf trampolines (docs/explanation/jit.md), no
 * jitdump files (their unwinding info), no GDB JIT objects
 * (docs/how-to/jit.md). Stacks through JIT code then end where the
 * frame-pointer fallback stops, and GDB JIT names are not kept.
 */
#define SP_RECORDER_NO_JIT_CODE 0x8u
/* sp_recorder_open(): the file at the path is kept as PATH.old (perf's habit) */
#define SP_RECORDER_KEEP_OLD 0x10u

/* Flags of struct sp_system_opts. */
#define SP_SYSTEM_EXCLUDE_SELF 0x1u /* drop the recording process itself */

/**
 * struct sp_system_opts selects what a system-wide Recorder keeps. Set
 * @size to sizeof(struct sp_system_opts); zero fields mean "everything".
 * @pids / @npids: keep only these processes (thread-group ids).
 * @comms / @ncomms: keep only processes whose command name (the 15-byte
 *   kernel comm, as in /proc/PID/comm) equals one of these; checked when a
 *   process is first seen and at every exec.
 * @cgroup_path: a cgroup v2 directory; only its processes (and those of
 *   its descendants) are sampled.
 * Filters combine with AND; processes they reject are neither sampled nor
 * tracked. The arrays are copied: the caller may free them after open.
 */
struct sp_system_opts {
	size_t size;
	const int32_t *pids;
	size_t npids;
	const char *const *comms;
	size_t ncomms;
	const char *cgroup_path;
	uint32_t flags;
};

/**
 * struct sp_recorder_opts configures a Recorder. Set @size to
 * sizeof(struct sp_recorder_opts); zero fields mean defaults.
 * @sample_hz: samples per CPU-second (default 999; SP_RATE_MAX = kernel
 *   maximum; above the kernel maximum fails with SP_EFREQ).
 * @stack_size: user stack bytes copied per sample, rounded up to 8,
 *   at most SP_RECORDER_STACK_MAX (default 32768).
 * @threads: 0 = inline mode; N = threaded mode with N unwinder threads
 *   (at most SP_RECORDER_THREADS_MAX) plus one reader thread per 16
 *   CPUs; SP_THREADS_AUTO = inline mode on machines with up to 2 CPUs
 *   (measured faster there), else online CPUs - 1 unwinder threads.
 * @ring_samples: per-CPU ring sized to hold this many samples (default:
 *   100 ms of samples at the rate, at least 256; 512 in system mode; a
 *   sample record takes the full @stack_size), within a 256 MiB per-CPU
 *   and 1 GiB total budget; halved on EPERM/ENOMEM.
 * @start_timestamp_us: spool header metadata, the wall-clock time
 *   (microseconds since the Unix epoch) of the first sample; 0 = none
 *   (readers then show no absolute time).
 * @sample_interval_us: spool header metadata; 0 = derived from the
 *   resolved rate (1000000 / Hz, rounded to the nearest microsecond).
 * @max_depth: user frames per stack before the truncated marker
 *   (default SP_DEPTH_DEFAULT = 1024, at most SP_DEPTH_MAX = 8192); the
 *   stacks it cuts count SP_SAMPLE_ERR_DEPTH_LIMIT.
 * @reserved: must be 0.
 * @jit_dir: the spool's JIT side directory (NULL: none): the recorder
 *   keeps there a copy of each process generation's perf map
 *   (/tmp/perf-<pid>.map) as the generation ends (exit, exec) or the
 *   recording does, so JIT names survive the process and a later reuse
 *   of its pid, and, per process, a jitdump file with the function names
 *   of its GDB JIT objects (gdbjit-<pid>-<n>.dump), written as the
 *   objects are read from the target, so those names survive code
 *   removal and the process (docs/how-to/jit.md; without a directory,
 *   GDB JIT code is still unwound through, but its names are not kept).
 *   Give the same directory to sp_symbolizer_opts.jit_dir.
 *   Created (0700, with a marker file) on the first file; a previous
 *   recording's files are removed from it when the recorder opens; a
 *   directory without the marker that holds such names is refused
 *   (sp_recorder_open fails with -EEXIST), /tmp with -EINVAL.
 *   docs/explanation/jit.md.
 * @system: NULL = process mode: the caller adds targets with
 *   sp_recorder_attach(). Non-NULL = system mode: every process of the
 *   machine (or of @system's cgroup) is sampled through one event per
 *   CPU, filtered by @system (a zeroed struct keeps everything).
 *   Processes that exist are read from /proc once (maps, comm) without
 *   being stopped; later ones are followed through the kernel's
 *   fork/exec/mmap/exit records, or read from /proc when their first
 *   sample shows up. Kernel threads appear when SP_RECORDER_KERNEL is
 *   set. Needs root or CAP_PERFMON. Copied at open: it may be freed after.
 * @mode: enum sp_profile_mode. SP_PROFILE_CPU (0, default): cpu-clock
 *   samples of on-CPU time. SP_PROFILE_OFF_CPU: the user stack (and the
 *   kernel callchain with SP_RECORDER_KERNEL) of every context switch out
 *   of a sampled thread, weighed by the time until it runs again: a span
 *   of D ns becomes D / interval samples of that stack (the remainder
 *   carried to the thread's next span), stamped across the span, with a
 *   leaf pseudo-frame (spool.h) named "[off-cpu]" (blocked) or
 *   "[off-cpu:preempted]" (preempted while runnable). SP_PROFILE_WALL:
 *   both, so a thread's samples add up to the time it existed. Needs
 *   kernel-mode events (the switch happens in the kernel): refused with
 *   -EACCES when perf_event_paranoid forbids them.
 *   docs/explanation/off-cpu.md.
 * @off_cpu_min_us: off-CPU spans shorter than this are dropped (counted
 *   in blocks_below_threshold); 0 keeps every span.
 */
struct sp_recorder_opts {
	size_t size;
	const struct sp_allocator *allocator;
	const struct sp_logger *logger;
	uint32_t sample_hz;
	uint32_t stack_size;
	uint32_t flags;
	uint32_t threads;
	uint64_t ring_samples;
	uint64_t start_timestamp_us;
	uint64_t sample_interval_us;
	uint32_t max_depth;
	uint32_t reserved;
	const char *jit_dir;
	const struct sp_system_opts *system;
	uint32_t mode;
	uint32_t off_cpu_min_us;
};

enum sp_attach_mode {
	/** Attach without stopping the target (maps snapshot may race). */
	SP_ATTACH_RUNNING = 0,
	/** Stop the whole thread group, attach, resume what we stopped. */
	SP_ATTACH_STOP_WHILE_ATTACHING = 1,
	/**
	 * A forked child blocked before execve (sp_launch_suspended(),
	 * launch.h): counters enable on exec.
	 */
	SP_ATTACH_ON_EXEC = 2,
};

/** Results of sp_recorder_attach(). */
enum sp_attach_outcome {
	SP_ATTACHED = 0,
	SP_ALREADY_ATTACHED = 1,
	SP_EXITED = 2,
};

/**
 * struct sp_recording_summary mirrors stackpulse's RecordingSummary. Set
 * @size to sizeof(struct sp_recording_summary) before
 * sp_recorder_summary() fills it.
 * @sample_events: sample records read (usable or not); @samples: samples
 *   written to the spool; @lost_events: samples the kernel (or a full
 *   queue) dropped; @lifecycle_gaps: loss batches that may have hidden
 *   process or module changes (each triggers a recovery sweep).
 * @kernel_enabled: 1 when kernel callchains are recorded.
 * @minimum_ring_buffer_bytes / @maximum_ring_buffer_bytes: the ring sizes
 *   mapped (after any halving).
 * @missing_pid_samples .. @empty_stack_samples: samples skipped, by
 *   reason; @truncated_frame_markers: stacks cut short (any reason);
 *   @ignored_user_callchain_frames: user entries of kernel callchains.
 * @errors / @fallbacks: the unwinder's counters (enum sp_sample_error,
 *   enum sp_fallback).
 * @truncation_reasons: why the unwinder cut each truncated stack, one
 *   reason per stack: sums to @truncated_frame_markers (less the rare
 *   sample the writer rejected, which is logged). @errors also counts
 *   samples skipped before unwinding (registers missing), which have no
 *   marker.
 * @jit_maps_kept: perf maps copied to the JIT side directory
 *   (@sp_recorder_opts.jit_dir); @jit_maps_failed: copies that failed
 *   (logged).
 * Off-CPU and wall mode: @switch_events: context-switch records read
 *   (switch-out and switch-in); @switch_lost: off-CPU spans whose end was
 *   lost (ring overflow: cut where the loss began; a switch-in never
 *   seen: dropped); @off_cpu_spans: spans turned into samples;
 *   @blocks_below_threshold: spans shorter than
 *   @sp_recorder_opts.off_cpu_min_us, dropped;
 *   @samples_synthesized: samples written for off-CPU spans (included in
 *   @samples); @switch_anomalies: spans dropped as inconsistent (ending
 *   before they start, a tid reused by another process).
 *   @switch_in_unmatched: switch-ins of a thread seen switching out
 *   before that no switch-out sample matched, even late (it was lost or
 *   throttled); @spans_cut_at_exit:
 *   spans cut at their thread's exit (in @switch_lost too);
 *   @spans_open_at_end: spans still open when the recording ended, cut
 *   there; @late_records: records applied after a newer one (committed
 *   to their ring after a drain had passed their time; their spans are
 *   still matched by their own times).
 * Wall mode (docs/explanation/off-cpu.md, "the ledger"):
 *   @wall_clipped_ns: off-CPU time not weighed because the thread's
 *   cpu-clock samples already stood for more than its runs;
 *   @wall_unsampled_ns: time a thread ran with no cpu-clock sample to
 *   show for it, beyond one interval (throttling, a late or coalesced
 *   timer): missing from the profile; @wall_oversampled_ns: cpu-clock
 *   samples beyond the runs they fell in, after @wall_clipped_ns.
 * @throttle_events: PERF_RECORD_THROTTLE records (the kernel stopped an
 *   event for exceeding its sample rate; in every mode).
 */
struct sp_recording_summary {
	size_t size;
	uint64_t sample_events;
	uint64_t samples;
	uint64_t lost_events;
	uint64_t lifecycle_gaps;
	uint32_t kernel_enabled;
	uint32_t pad;
	uint64_t minimum_ring_buffer_bytes;
	uint64_t maximum_ring_buffer_bytes;
	uint64_t missing_pid_samples;
	uint64_t missing_tid_samples;
	uint64_t idle_tid_samples;
	uint64_t missing_timestamp_samples;
	uint64_t empty_stack_samples;
	uint64_t truncated_frame_markers;
	uint64_t ignored_user_callchain_frames;
	uint64_t errors[SP_SAMPLE_ERR_COUNT];
	uint64_t fallbacks[SP_FALLBACK_COUNT];
	uint64_t truncation_reasons[SP_SAMPLE_ERR_COUNT];
	uint64_t jit_maps_kept;
	uint64_t jit_maps_failed;
	uint64_t switch_events;
	uint64_t switch_lost;
	uint64_t off_cpu_spans;
	uint64_t blocks_below_threshold;
	uint64_t samples_synthesized;
	uint64_t switch_anomalies;
	uint64_t switch_in_unmatched;
	uint64_t spans_cut_at_exit;
	uint64_t spans_open_at_end;
	uint64_t late_records;
	uint64_t wall_clipped_ns;
	uint64_t wall_unsampled_ns;
	uint64_t wall_oversampled_ns;
	uint64_t throttle_events;
};

/**
 * struct sp_poll_summary is what one poll did.
 * @samples: samples written since the previous poll returned (in
 *   threaded mode the unwinder threads also write between polls).
 * @lost_events: records the kernel dropped, as read by this poll.
 */
struct sp_poll_summary {
	uint64_t samples;
	uint64_t lost_events;
};

/**
 * sp_recorder_open creates a Recorder writing a spool to @path, a new
 * file of mode 0600 (out_file rules, shared with sp_sink_open_file()):
 * with no targets yet in process mode, sampling the machine in system
 * mode (@opts->system). @path itself is not touched until the recording
 * starts: the options are checked, and a system-mode cgroup opened,
 * first (nothing is created when they are refused), the spool is written
 * into an unnamed file in @path's directory, and the first
 * sp_recorder_poll(), sp_recorder_flush(), sp_recorder_finish() or
 * sp_recorder_tail() puts it at @path by an atomic rename (never
 * truncating a file a reader has open). A recorder closed before that,
 * e.g. after failed attaches, leaves @path as it was. With
 * SP_RECORDER_KEEP_OLD, what @path held then (unless an empty file) is
 * renamed to @path.old first. An existing device, FIFO or socket at @path
 * (also through a symbolic link, as /dev/stdout) is written in place
 * instead. A symbolic link is followed only where the kernel's
 * protected_symlinks rule would allow it; the regular file it leads to
 * is replaced as above. Threaded mode writes through io_uring, inline
 * mode (and a device or FIFO) through a plain file sink.
 * @param opts NULL for defaults (process mode).
 * @return 0, -EINVAL (bad options), SP_EFREQ (rate above the kernel
 *         maximum), -EACCES/-EPERM (system mode without root or
 *         CAP_PERFMON; -EPERM also when the sticky bit forbids replacing
 *         @path or @path.old), -ENOENT (no such cgroup), -EISDIR (@path
 *         or @path.old is a directory), -ELOOP (a symbolic link that is
 *         not followed), -ENOMEM, -errno.
 * Caller owns the result; free it with sp_recorder_close().
 * Thread: any. Allocates: yes. Blocks: yes (creates the unnamed file;
 * opening a FIFO waits for its reader; system mode reads /proc).
 */
SP_API int sp_recorder_open(const char *path,
			    const struct sp_recorder_opts *opts,
			    struct sp_recorder **out);

/**
 * sp_recorder_open_sink is sp_recorder_open() writing into @sink instead
 * of a file (sp_recorder_tail() is then refused).
 * @param sink Takes ownership of `sink` (freed on failure too).
 * @return as sp_recorder_open(); -EINVAL for a NULL @sink.
 * Caller owns the result; free it with sp_recorder_close().
 * Thread: any. Allocates: yes. Blocks: system mode reads /proc.
 */
SP_API int sp_recorder_open_sink(struct sp_sink *sink,
				 const struct sp_recorder_opts *opts,
				 struct sp_recorder **out);

/**
 * sp_recorder_attach adds process @pid (a thread-group leader) to a
 * process-mode Recorder. Idempotent for the same process generation;
 * transactional (a failure rolls back and resumes what was stopped).
 *
 * SP_ATTACH_STOP_WHILE_ATTACHING guarantees that a target it stopped is
 * resumed even if this process dies during the attach (SIGKILL, a crash):
 * before the SIGSTOP, a helper process (the "guardian") is handed a pidfd
 * of the target, and it sends SIGCONT through it as soon as this process
 * exits or execs. Only killing both processes together (a whole cgroup)
 * defeats that. The guardian is started at the first STOP attach and
 * lives until sp_recorder_close(), which reaps it: a child made by
 * clone() with no exit signal (no SIGCHLD, invisible to wait(-1), seen by
 * waitpid(-1, __WALL)), in its own session, holding none of our other
 * descriptors. No signal disposition is changed. Stop and resume go
 * through pidfds, so a reused pid is never signalled.
 * @return SP_ATTACHED, SP_ALREADY_ATTACHED, SP_EXITED, -EINVAL (pid <= 0,
 *         not a leader, our own process with STOP mode, a system-mode
 *         Recorder), -EPIPE (finished), SP_ETARGETGONE, -EPERM/-EACCES,
 *         -EOPNOTSUPP (STOP mode without pidfds, before Linux 5.3),
 *         -EAGAIN (no guardian process could be made), -errno.
 * Thread: single-owner. Allocates: yes. Blocks: yes (STOP mode waits up
 * to 5 s for the group to stop).
 */
SP_API int sp_recorder_attach(struct sp_recorder *recorder, int32_t pid,
			      enum sp_attach_mode mode);

/**
 * sp_recorder_poll waits up to @timeout_ms (0 = do not wait, -1 = forever)
 * when nothing is queued, then drains every ring, orders, unwinds and
 * writes. The first poll of a recorder opened on a path puts the spool at
 * that path (see sp_recorder_open(); an error there is returned and
 * retried by the next poll).
 * @param out what this poll did (may be NULL).
 * @return 0, -EINVAL, -EPIPE (finished) or a negative code from the
 *         writer or the kernel (the recording stays usable on -EINTR).
 * Thread: single-owner. Allocates: only for new processes/modules.
 * Blocks: yes (up to @timeout_ms, then the spool writes).
 */
SP_API int sp_recorder_poll(struct sp_recorder *recorder, int timeout_ms,
			    struct sp_poll_summary *out);

/**
 * sp_recorder_has_pending_events tells whether records are queued in the
 * recorder or waiting in a ring, so a poll(0) would make progress.
 * @return true or false (false for NULL).
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API bool sp_recorder_has_pending_events(const struct sp_recorder *recorder);

/**
 * sp_recorder_refresh_threads rescans /proc/@pid/task of an attached
 * process: threads the attach missed get counters (threads created later
 * are covered by inheritance), counters of vanished threads are closed
 * when no live thread depends on them. Nothing to do in system mode.
 * @return 0, SP_EXITED (the process is gone), -EINVAL (not attached),
 *         -errno.
 * Thread: single-owner. Allocates: yes. Blocks: no.
 */
SP_API int sp_recorder_refresh_threads(struct sp_recorder *recorder,
				       int32_t pid);

/**
 * sp_recorder_enable starts every counter (a Recorder starts enabled).
 * After a disable, system mode first reads /proc again (its CPU events
 * saw no fork, exec or mmap meanwhile).
 * @return 0, -EINVAL, or a /proc or writer error of that rescan.
 * Thread: single-owner. Allocates: system mode only. Blocks: system mode
 * reads /proc.
 */
SP_API int sp_recorder_enable(struct sp_recorder *recorder);

/**
 * sp_recorder_disable stops every counter; queued records stay queued
 * for the next poll or flush.
 * @return 0 or -EINVAL.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API int sp_recorder_disable(struct sp_recorder *recorder);

/**
 * sp_recorder_flush drains everything queued, reads loss counters, runs
 * a pending recovery sweep and flushes the spool writer (durably: a file
 * sink calls fdatasync()).
 * @return 0, -EINVAL, or the first error (the writer flush is attempted
 *         anyway). 0 after sp_recorder_finish().
 * Thread: single-owner. Allocates: only for new processes/modules.
 * Blocks: yes (waits for the threaded pipeline, writes).
 */
SP_API int sp_recorder_flush(struct sp_recorder *recorder);

/**
 * sp_recorder_process_is_active tells whether an attached process is still
 * alive (pidfd based).
 * @return 1 alive, 0 exited, -EINVAL not attached, -errno.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API int sp_recorder_process_is_active(struct sp_recorder *recorder,
					 int32_t pid);

/**
 * sp_recorder_active_process_count returns how many tracked processes
 * live.
 * @return the count, -EINVAL or -errno.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API int sp_recorder_active_process_count(struct sp_recorder *recorder);

/**
 * sp_recorder_tail flushes, then opens the one Tail of the spool file that
 * may discard consumed bytes (SP_READER_OWNS_FILE).
 * @return 0, -EBUSY (already handed out), -EOPNOTSUPP (the recorder
 *         writes to a caller's sink), or an sp_tail_open() error.
 * Caller owns the result; free it with sp_tail_close().
 * Thread: single-owner. Allocates: yes. Blocks: yes (flush, file I/O).
 */
SP_API int sp_recorder_tail(struct sp_recorder *recorder, struct sp_tail **out);

/**
 * struct sp_pipeline_stats describes threaded mode's stages. Set @size
 * to sizeof(struct sp_pipeline_stats).
 * @readers, @workers: threads running (both 0 in inline mode).
 * @reader_stalls: drains a reader stopped because its blocks, queue or
 *   held ring positions were full (the records waited in the kernel
 *   ring; what the kernel then dropped is in the summary's lost_events).
 * @records_copied: queued records the sequencer copied out of a starved
 *   reader's blocks, or out of a ring half full of held samples, so
 *   the reader, or the kernel, could go on.
 * @jobs: samples handed to the unwinder threads.
 * @jobs_inline: samples unwound on the polling thread instead (their
 *   bytes had been copied out of a reader).
 * @jobs_written_by_workers: samples the unwinder threads also wrote to
 *   the spool, in order (CPU profiles); the polling thread wrote the
 *   rest.
 */
struct sp_pipeline_stats {
	size_t size;
	uint32_t readers;
	uint32_t workers;
	uint64_t reader_stalls;
	uint64_t records_copied;
	uint64_t jobs;
	uint64_t jobs_inline;
	uint64_t jobs_written_by_workers;
};

/**
 * sp_recorder_pipeline_stats fills the first @out->size bytes of @out
 * (zeros in inline mode).
 * @return 0, -EINVAL (NULL argument, @out->size below sizeof(size_t) or
 *         not a multiple of it).
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API int sp_recorder_pipeline_stats(const struct sp_recorder *recorder,
				      struct sp_pipeline_stats *out);

/**
 * struct sp_jit_stats counts what the recorder did with JIT code
 * (docs/how-to/jit.md). Set @size to sizeof(struct sp_jit_stats).
 * @jitdump_files: jitdump files followed (modules named jit-PID.dump).
 * @jitdump_records: complete records read from them.
 * @jitdump_unwind: code loads that came with unwinding info (regions
 *   with CFI).
 * @jitdump_errors: files that could not be opened, or stopped on a
 *   corrupt record, a newer format, a file that shrank, or the size
 *   bound.
 * @gdb_processes: processes whose GDB JIT descriptor was found.
 * @gdb_checks: descriptor reads; @gdb_walks: entry lists walked.
 * @gdb_objects: objects read and accepted; @gdb_removed: objects seen
 *   gone; @gdb_bytes: object bytes read.
 * @gdb_list_errors: lists that looped, had over 4,096 entries, or could
 *   not be read.
 * @gdb_bad_objects: objects skipped: size 0 or over 64 MiB, over the
 *   256 MiB total, changed while read, or not an ELF object of the recorder's architecture.
 * @retries: unwinds redone after a refresh because they stopped in
 *   possible JIT code; @retries_better: of those, how many went deeper.
 * @regenerations: anonymous modules written again as a new generation
 *   because JIT code replaced other code in them.
 * @names: code-load records written for GDB JIT functions;
 *   @names_lost: functions whose names could not be kept (no directory,
 *   sidecar I/O errors, code not readable).
 */
struct sp_jit_stats {
	size_t size;
	uint64_t jitdump_files;
	uint64_t jitdump_records;
	uint64_t jitdump_unwind;
	uint64_t jitdump_errors;
	uint64_t gdb_processes;
	uint64_t gdb_checks;
	uint64_t gdb_walks;
	uint64_t gdb_objects;
	uint64_t gdb_removed;
	uint64_t gdb_bytes;
	uint64_t gdb_list_errors;
	uint64_t gdb_bad_objects;
	uint64_t retries;
	uint64_t retries_better;
	uint64_t regenerations;
	uint64_t names;
	uint64_t names_lost;
};

/**
 * sp_recorder_jit_stats fills the first @out->size bytes of @out (a
 * caller's older, smaller struct gets its part).
 * @return 0, -EINVAL (NULL argument, @out->size below sizeof(size_t) or
 *         not a multiple of it).
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API int sp_recorder_jit_stats(const struct sp_recorder *recorder,
				 struct sp_jit_stats *out);

/**
 * sp_recorder_summary fills the first @out->size bytes of @out with the
 * counters so far (a caller's older, smaller struct gets its part).
 * @return 0, -EINVAL (NULL argument, @out->size below sizeof(size_t) or
 *         not a multiple of it).
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API int sp_recorder_summary(const struct sp_recorder *recorder,
			       struct sp_recording_summary *out);

/**
 * sp_recorder_finish disables counters, drains and flushes, then
 * finishes the spool (a zstd stream is ended). Later calls return 0;
 * polls return -EPIPE.
 * @return 0, -EINVAL, or the first error (flushing is always attempted).
 * Thread: single-owner. Allocates: only for new processes/modules.
 * Blocks: yes (as sp_recorder_flush()).
 */
SP_API int sp_recorder_finish(struct sp_recorder *recorder);

/**
 * sp_recorder_close releases everything (best-effort disable, no flush:
 * call sp_recorder_finish() first), including the guardian process of
 * STOP attaches, which it reaps. Threads are joined. NULL is a no-op.
 * Thread: single-owner. Allocates: no. Blocks: yes (joins threads, waits
 * for writes in flight).
 */
SP_API void sp_recorder_close(struct sp_recorder *recorder);

#ifdef __cplusplus
}
#endif

#endif /* STACKPULSE_RECORDER_H */
