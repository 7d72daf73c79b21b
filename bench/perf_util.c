/* SPDX-License-Identifier: MIT */
/* Running `perf` as the baseline of a benchmark and reading its results. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "perf_util.h"

extern char **environ;

int bench_run_child(const char *const argv[], char *const envp[], int *status,
		    struct rusage *ru)
{
	pid_t pid = fork();

	if (pid < 0)
		return -errno;
	if (pid == 0) {
		/* exec's argv is char *const[] for historical reasons. */
		execvpe(argv[0], (char *const *)(uintptr_t)argv,
			envp ? envp : environ);
		_exit(127);
	}
	while (wait4(pid, status, 0, ru) < 0)
		if (errno != EINTR)
			return -errno;
	return 0;
}

int bench_perf_stats(const char *data, const char *home, uint64_t *samples,
		     uint64_t *lost)
{
	char cmd[1400], line[512];
	uint64_t lost_samples = 0;
	bool per_event = false;
	double pct = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd), "HOME='%s' perf report -i '%s' --stats 2>&1",
		 home, data);
	p = popen(cmd, "r");
	if (!p)
		return -errno;
	*samples = 0;
	while (fgets(line, sizeof(line), p)) {
		const char *s = strstr(line, "SAMPLE events:");
		const char *l = strstr(line, " lost ");

		const char *ls = strstr(line, "LOST_SAMPLES events:");

		if (s && !*samples)
			*samples = strtoull(s + 14, NULL, 10);
		if (l && strchr(l, '%'))
			pct = strtod(l + 6, NULL);
		/* "<event> stats:" then the event's own lost sample count. */
		if (strstr(line, " stats:") && !strstr(line, "Aggregated"))
			per_event = true;
		if (per_event && ls)
			lost_samples += strtoull(ls + 20, NULL, 10);
	}
	pclose(p);
	if (lost_samples) {
		*lost = lost_samples;
		return 0;
	}
	/* "Processed N samples and lost P%": P of all generated samples. */
	*lost = pct > 0 && pct < 100 ?
			(uint64_t)((double)*samples * pct / (100 - pct) + 0.5) :
			0;
	return 0;
}

int bench_have_perf(void)
{
	return system("perf --version >/dev/null 2>&1") == 0;
}

double bench_rusage_s(const struct rusage *ru)
{
	return (double)ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 +
	       (double)ru->ru_stime.tv_sec + ru->ru_stime.tv_usec / 1e6;
}

double bench_self_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return bench_rusage_s(&ru);
}

uint64_t bench_file_bytes(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

double bench_read_target_cpu(const char *path)
{
	double u = 0, s = 0;
	FILE *f = fopen(path, "r");
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "%lf %lf", &u, &s);
	fclose(f);
	unlink(path);
	return n == 2 ? u + s : -1;
}
