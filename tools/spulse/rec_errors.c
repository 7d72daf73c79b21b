/* SPDX-License-Identifier: MIT */
/* spulse: what `record` and live `top` say when the kernel refuses them. */

/*
 * perf_event_paranoid (Documentation/admin-guide/sysctl/kernel.rst):
 * -1 everything, 0 no raw tracepoints, 1 no CPU-wide events, 2 no kernel
 * profiling for unprivileged users; Debian adds 3, no perf_event_open at
 * all without CAP_PERFMON. Another user's process also needs ptrace
 * rights (the same check as /proc/PID/mem), whatever the sysctl says.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>

#include "rec_errors.h"
#include "spulse.h"

#define MAX_RATE_SYSCTL "/proc/sys/kernel/perf_event_max_sample_rate"
#define PARANOID_SYSCTL "/proc/sys/kernel/perf_event_paranoid"

long spulse_read_sysctl(const char *path)
{
	FILE *f = fopen(path, "re");
	long v = -1;

	if (!f)
		return -1;
	if (fscanf(f, "%ld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}

int spulse_check_rate(const char *cmd, uint32_t hz)
{
	long max = spulse_read_sysctl(MAX_RATE_SYSCTL);

	if (hz == SP_RATE_MAX || max <= 0 || hz <= (unsigned long)max)
		return -1;
	fprintf(stderr,
		"spulse %s: rate %" PRIu32
		" Hz is above the kernel's maximum %ld "
		"(kernel.perf_event_max_sample_rate); use -F max\n",
		cmd, hz, max);
	return SPULSE_EXIT_USAGE;
}

int spulse_check_pid(const char *cmd, int32_t pid)
{
	if (kill(pid, 0) == 0 || errno != ESRCH)
		return -1;
	fprintf(stderr, "spulse %s: no process %" PRId32 "\n", cmd, pid);
	return SPULSE_EXIT_DATA;
}

bool spulse_is_permission(int err)
{
	return err == -EPERM || err == -EACCES;
}

void spulse_permission_hint(const char *cmd, bool system)
{
	long paranoid = spulse_read_sysctl(PARANOID_SYSCTL);

	if (system)
		fprintf(stderr,
			"spulse %s: -a needs root or CAP_PERFMON, or "
			"kernel.perf_event_paranoid <= 0 (it is %ld here)\n",
			cmd, paranoid);
	else
		fprintf(stderr,
			"spulse %s: another user's process needs root or "
			"CAP_PERFMON (and ptrace rights); "
			"kernel.perf_event_paranoid is %ld here (above 2 even "
			"your own processes need CAP_PERFMON)\n",
			cmd, paranoid);
}
