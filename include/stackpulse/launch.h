/* SPDX-License-Identifier: MIT */
/* stackpulse: launching a command suspended before execve. */
#ifndef STACKPULSE_LAUNCH_H
#define STACKPULSE_LAUNCH_H

#include <stdint.h>

#include <stackpulse/api.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A launch is a child process forked to run a command, blocked before
 * its execve, so a Recorder can attach to it with SP_ATTACH_ON_EXEC
 * (recorder.h) before the command's first instruction runs; then
 * sp_launch_resume() lets it exec. The parent reaps it with
 * sp_launch_wait() or, between polls, sp_launch_try_wait(). A launch is a
 * single-owner object.
 */
struct sp_launch;

/**
 * sp_launch_suspended forks a child that blocks before execvp(@file,
 * @argv) (PATH honoured), with @envp (NULL = the current environment).
 * The child runs only async-signal-safe code until its exec.
 * @return 0, -EINVAL (NULL @file, @argv, @argv[0] or @out), -ENOMEM,
 *         -errno (pipe2, fork).
 * Caller owns the result; free it with sp_launch_free().
 * Thread: any. Allocates: yes. Blocks: no.
 */
SP_API int sp_launch_suspended(const char *file, char *const argv[],
			       char *const envp[], struct sp_launch **out);

/**
 * sp_launch_pid returns the child's pid.
 * @return the pid (> 0), or -EINVAL for a NULL @launch.
 * Thread: any. Allocates: no. Blocks: no.
 */
SP_API int32_t sp_launch_pid(const struct sp_launch *launch);

/**
 * sp_launch_resume lets the child exec and waits until it did (or failed
 * to), which takes one round trip through a close-on-exec pipe.
 * @return 0 (the command runs), the exec's -errno (-ENOENT, -EACCES, ...;
 *         the child then exits with status 127), -EINVAL (resumed
 *         already), -EPIPE (the child is gone).
 * Thread: single-owner. Allocates: no. Blocks: yes (until the exec).
 */
SP_API int sp_launch_resume(struct sp_launch *launch);

/**
 * sp_launch_wait waits until the child has exited and reaps it (once:
 * later calls return the same status).
 * @param status the raw wait status (WIFEXITED() and friends; may be
 *        NULL).
 * @return 1 (reaped), -EINVAL, -errno from waitpid(2).
 * Thread: single-owner. Allocates: no. Blocks: yes (until the exit).
 */
SP_API int sp_launch_wait(struct sp_launch *launch, int *status);

/**
 * sp_launch_try_wait reaps the child if it has exited, without waiting.
 * @param status the raw wait status, set when reaped (may be NULL).
 * @return 1 (reaped), 0 (still running), -EINVAL, -errno from
 *         waitpid(2).
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API int sp_launch_try_wait(struct sp_launch *launch, int *status);

/**
 * sp_launch_free releases @launch. A child that was never resumed is
 * killed (SIGKILL) and reaped. A resumed child is neither signalled nor
 * waited for: it keeps running, and once it exits stays a zombie until
 * the process reaps it (waitpid on sp_launch_pid()). To end it, signal
 * it and reap it with sp_launch_wait() before this call, or let
 * sp_recorder_run_command() (record_run.h) do all of it. NULL is a no-op.
 * Thread: single-owner. Allocates: no. Blocks: only to reap a killed
 * child.
 */
SP_API void sp_launch_free(struct sp_launch *launch);

#ifdef __cplusplus
}
#endif

#endif /* STACKPULSE_LAUNCH_H */
