/* SPDX-License-Identifier: MIT */
/* stackpulse: recording a launched command or a running process for a while. */
#ifndef STACKPULSE_RECORD_RUN_H
#define STACKPULSE_RECORD_RUN_H

#include <stdbool.h>

#include <stackpulse/api.h>
#include <stackpulse/recorder.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The loop every embedder of a Recorder writes: start or attach the
 * target, call sp_recorder_poll() until the target exits, a time limit
 * passes or the caller wants to stop, and then end a command that is
 * still running (SIGTERM, a bounded wait, SIGKILL) and reap it. The
 * functions below are that loop, on a Recorder the caller opened with
 * sp_recorder_open() or sp_recorder_open_sink() and still owns: they do
 * not finish it (call sp_recorder_finish() afterwards, which drains what
 * is left) and never leave a process they started running, stopped or
 * unreaped. Signals are the caller's: a handler that sets a flag, checked
 * by @tick, ends the run cleanly (an interrupted poll is not an error).
 */

/** Why a run ended (struct sp_record_run_result @end). */
enum sp_record_run_end {
	/** The command, or every attached process, exited. */
	SP_RECORD_RUN_EXITED = 0,
	/** @duration_ms passed. */
	SP_RECORD_RUN_DURATION = 1,
	/** @tick returned a positive value. */
	SP_RECORD_RUN_STOPPED = 2,
};

/**
 * struct sp_record_run_opts configures a run. Set @size to
 * sizeof(struct sp_record_run_opts); zero fields mean defaults.
 * @duration_ms: stop after this long (0 = until the targets exit).
 * @poll_ms: longest wait of one sp_recorder_poll() (default 100).
 * @term_wait_ms: how long a command still running at the end gets between
 *   SIGTERM and SIGKILL (default 2000); the recorder keeps polling
 *   meanwhile, so what the command does while exiting is recorded.
 * @tick: called after every poll with @ctx and the Recorder; return 0 to
 *   go on, > 0 to stop (SP_RECORD_RUN_STOPPED), < 0 to stop with that
 *   error. NULL: never called.
 */
struct sp_record_run_opts {
	size_t size;
	uint64_t duration_ms;
	uint32_t poll_ms;
	uint32_t term_wait_ms;
	int (*tick)(void *ctx, struct sp_recorder *recorder);
	void *ctx;
};

/**
 * struct sp_record_run_result is what a run did. Set @size to
 * sizeof(struct sp_record_run_result); the library fills what fits.
 * @end: enum sp_record_run_end.
 * @pid: the command's pid (sp_recorder_run_command), or the attached pid.
 * @reaped: 1 when @wait_status holds the command's raw wait status
 *   (WIFEXITED()...); always 1 after sp_recorder_run_command() returns 0.
 * @signalled: 1 when the run had to SIGTERM the command, 2 when it also
 *   had to SIGKILL it.
 * @elapsed_ns: from the start of the target to the end of the run.
 */
struct sp_record_run_result {
	size_t size;
	uint32_t end;
	int32_t pid;
	int32_t wait_status;
	uint32_t reaped;
	uint32_t signalled;
	uint32_t pad;
	uint64_t elapsed_ns;
};

/**
 * sp_recorder_run_command runs @argv (execvp: PATH honoured; @envp NULL =
 * the current environment) under @recorder from its first instruction:
 * launched suspended, attached with SP_ATTACH_ON_EXEC, then let go. It
 * polls until the command exits, @opts->duration_ms passes or @tick
 * stops it; a command still running then gets SIGTERM and, after
 * @term_wait_ms, SIGKILL, and is reaped in every case.
 * @param opts NULL = defaults. @param out NULL, or what the run did.
 * @return 0; -EINVAL (bad argument or options, a system-wide recorder);
 *         -ENOENT, -EACCES, -ENOEXEC... when the command could not be
 *         executed; attach and poll errors; @tick's error.
 * Thread: single-owner (of @recorder). Allocates: yes. Blocks: yes (for
 * the whole run).
 */
SP_API int sp_recorder_run_command(struct sp_recorder *recorder,
				   char *const argv[], char *const envp[],
				   const struct sp_record_run_opts *opts,
				   struct sp_record_run_result *out);

/**
 * sp_recorder_run_pid attaches @recorder to running process @pid with
 * SP_ATTACH_STOP_WHILE_ATTACHING (it is stopped only while its threads
 * and maps are read) and polls until it exits (with its followed
 * children, see SP_RECORDER_INHERIT_CHILDREN), @opts->duration_ms passes
 * or @tick stops it. The process is never signalled.
 * @return 0; -EINVAL; SP_ETARGETGONE (no such process, or it exited
 *         while attaching); -EPERM/-EACCES; attach and poll errors;
 *         @tick's error.
 * Thread: single-owner (of @recorder). Allocates: yes. Blocks: yes.
 */
SP_API int sp_recorder_run_pid(struct sp_recorder *recorder, int32_t pid,
			       const struct sp_record_run_opts *opts,
			       struct sp_record_run_result *out);

#ifdef __cplusplus
}
#endif

#endif /* STACKPULSE_RECORD_RUN_H */
