/* SPDX-License-Identifier: MIT */
/* Workload: fork, the child execs wl_ladder (next to this binary). */

/*
 * The parent only waits, so the samples of a recording that follows
 * children belong to the child pid and show the ladder's stacks. The
 * child's pid goes to stdout as "child <pid>" for anyone who wants it.
 */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wl_common.h"

static int ladder_path(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	char *slash;

	if (n <= 0)
		return -1;
	buf[n] = '\0';
	slash = strrchr(buf, '/');
	if (!slash || (size_t)(slash - buf) + sizeof("/wl_ladder") > size)
		return -1;
	strcpy(slash, "/wl_ladder");
	return 0;
}

int main(int argc, char **argv)
{
	char path[PATH_MAX];
	const char *secs = argc > 1 ? argv[1] : "2";
	pid_t pid;
	int status;

	if (ladder_path(path, sizeof(path)) != 0) {
		fputs("wl_forkexec: cannot find wl_ladder\n", stderr);
		return 1;
	}
	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		execl(path, "wl_ladder", secs, (char *)NULL);
		_exit(127);
	}
	printf("child %d\n", (int)pid);
	fflush(stdout);
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return 1;
	if (!WIFEXITED(status))
		return 1;
	return wl_finish(WEXITSTATUS(status));
}
