/* SPDX-License-Identifier: MIT */
/* Launching a command suspended before execve (for SP_ATTACH_ON_EXEC). */

/*
 * The child blocks reading a gate pipe, so the recorder can open its
 * events (enable_on_exec) before the command's first instruction. A second
 * pipe is close-on-exec: end-of-file on it means execvp succeeded, four
 * bytes mean it failed with that errno. The child only calls
 * async-signal-safe functions between fork and exec (execvp itself
 * searches PATH; execvpe is used when an environment is given).
 */
#define _GNU_SOURCE /* execvpe, pipe2 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stackpulse/launch.h>

#include "mem.h"

struct sp_launch {
	struct sp__mem mem;
	pid_t pid;
	int gate_fd; /* write end; closing it releases the child */
	int err_fd;  /* read end of the CLOEXEC error pipe */
	bool resumed;
	bool reaped;
	int status;
};

static void child_run(int gate, int errp, const char *file, char *const argv[],
		      char *const envp[])
{
	char c;
	ssize_t n;
	int e;

	do
		n = read(gate, &c, 1);
	while (n < 0 && errno == EINTR);
	if (n != 1)
		_exit(127); /* the launcher went away without resuming */
	if (envp)
		execvpe(file, argv, envp);
	else
		execvp(file, argv);
	e = errno;
	n = write(errp, &e, sizeof(e));
	(void)n;
	_exit(127);
}

static void close_pair(int p[2])
{
	close(p[0]);
	close(p[1]);
}

int sp_launch_suspended(const char *file, char *const argv[],
			char *const envp[], struct sp_launch **out)
{
	struct sp__mem mem;
	struct sp_launch *l;
	int gate[2], errp[2];
	pid_t pid;

	if (!file || !argv || !argv[0] || !out)
		return -EINVAL;
	sp__mem_init(&mem, NULL);
	l = sp__mem_calloc(&mem, 1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	if (pipe2(gate, O_CLOEXEC))
		goto fail_gate;
	if (pipe2(errp, O_CLOEXEC))
		goto fail_errp;
	pid = fork();
	if (pid < 0)
		goto fail_fork;
	if (pid == 0) {
		close(gate[1]);
		close(errp[0]);
		child_run(gate[0], errp[1], file, argv, envp);
	}
	close(gate[0]);
	close(errp[1]);
	l->mem = mem;
	l->pid = pid;
	l->gate_fd = gate[1];
	l->err_fd = errp[0];
	*out = l;
	return 0;
fail_fork:
	close_pair(errp);
fail_errp:
	close_pair(gate);
fail_gate : {
	int e = -errno;

	sp__mem_free(&mem, l, sizeof(*l));
	return e;
}
}

int32_t sp_launch_pid(const struct sp_launch *l)
{
	return l ? (int32_t)l->pid : -EINVAL;
}

int sp_launch_resume(struct sp_launch *l)
{
	char go = 1;
	int e = 0;
	ssize_t n;

	if (!l || l->resumed)
		return -EINVAL;
	l->resumed = true;
	n = write(l->gate_fd, &go, 1);
	close(l->gate_fd);
	l->gate_fd = -1;
	if (n != 1)
		return -EPIPE;
	do
		n = read(l->err_fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	close(l->err_fd);
	l->err_fd = -1;
	if (n == (ssize_t)sizeof(e))
		return e > 0 ? -e : -ENOEXEC;
	return n < 0 ? -errno : 0;
}

/* Reaps the child (@flags: 0 or WNOHANG). 1 reaped, 0 running, -errno. */
static int reap(struct sp_launch *l, int flags, int *status)
{
	pid_t r;

	if (!l)
		return -EINVAL;
	if (!l->reaped) {
		do
			r = waitpid(l->pid, &l->status, flags);
		while (r < 0 && errno == EINTR);
		if (r < 0)
			return -errno;
		if (r == 0)
			return 0;
		l->reaped = true;
	}
	if (status)
		*status = l->status;
	return 1;
}

int sp_launch_wait(struct sp_launch *l, int *status)
{
	return reap(l, 0, status);
}

int sp_launch_try_wait(struct sp_launch *l, int *status)
{
	return reap(l, WNOHANG, status);
}

void sp_launch_free(struct sp_launch *l)
{
	struct sp__mem mem;

	if (!l)
		return;
	if (!l->resumed) {
		kill(l->pid, SIGKILL);
		reap(l, 0, NULL);
	}
	if (l->gate_fd >= 0)
		close(l->gate_fd);
	if (l->err_fd >= 0)
		close(l->err_fd);
	mem = l->mem;
	sp__mem_free(&mem, l, sizeof(*l));
}
