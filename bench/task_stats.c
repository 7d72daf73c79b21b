/* SPDX-License-Identifier: MIT */
/* Per-thread CPU time and context switches of this process, by role. */

/*
 * Threads are listed from /proc/self/task: comm names the role, status
 * has the two switch counters. CPU time is each thread's CPU-time clock
 * (the kernel's per-thread CPUCLOCK_SCHED clock id, made from its tid):
 * unlike schedstat it includes the slice the thread is running right
 * now, which under load is milliseconds. A thread that exits between the
 * listing and the reads is skipped; the benchmark reads while the
 * recorder's threads are alive. Minor page faults are field 10 of
 * stat (after the parenthesised comm, which may hold spaces).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "task_stats.h"

static enum task_role role_of(const char *tid, const char *comm)
{
	char self[32];

	snprintf(self, sizeof(self), "%ld", (long)syscall(SYS_gettid));
	if (strcmp(tid, self) == 0)
		return TASK_MAIN;
	if (strncmp(comm, "sp-reader", 9) == 0)
		return TASK_READER;
	if (strncmp(comm, "sp-unwind", 9) == 0)
		return TASK_WORKER;
	return TASK_OTHER;
}

/* The kernel's clock id of thread @tid's CPU time (CPUCLOCK_SCHED). */
static uint64_t thread_cpu_ns(long tid)
{
	clockid_t id = (clockid_t)((~(unsigned)tid << 3) | 4 | 2);
	struct timespec ts;

	if (clock_gettime(id, &ts))
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int read_line(const char *tid, const char *file, char *buf, size_t n)
{
	char path[300];
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "/proc/self/task/%s/%s", tid, file);
	f = fopen(path, "r");
	if (!f)
		return 0;
	ok = fgets(buf, (int)n, f) != NULL;
	fclose(f);
	return ok;
}

static void read_switches(const char *tid, uint64_t *v, uint64_t *iv)
{
	char path[300], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/self/task/%s/status", tid);
	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, "voluntary_ctxt_switches:", 24) == 0)
			*v += strtoull(line + 24, NULL, 10);
		else if (strncmp(line, "nonvoluntary_ctxt_switches:", 27) == 0)
			*iv += strtoull(line + 27, NULL, 10);
	}
	fclose(f);
}

static uint64_t read_minflt(const char *tid)
{
	char line[1024];
	const char *p;
	int field;

	if (!read_line(tid, "stat", line, sizeof(line)))
		return 0;
	p = strrchr(line, ')');
	if (!p)
		return 0;
	/* past the 8 spaces of ") S ppid pgrp session tty tpgid flags " */
	for (field = 2; field < 10 && *p; p++)
		if (*p == ' ')
			field++;
	return strtoull(p, NULL, 10);
}

void task_stats_read(struct task_stats *st)
{
	DIR *d = opendir("/proc/self/task");
	char comm[64];
	struct dirent *e;

	memset(st, 0, sizeof(*st));
	if (!d)
		return;
	while ((e = readdir(d))) {
		enum task_role r;

		if (e->d_name[0] == '.')
			continue;
		if (!read_line(e->d_name, "comm", comm, sizeof(comm)))
			continue; /* it just left */
		r = role_of(e->d_name, comm);
		st->cpu_ns[r] += thread_cpu_ns(strtol(e->d_name, NULL, 10));
		read_switches(e->d_name, &st->vcsw[r], &st->ivcsw[r]);
		st->minflt[r] += read_minflt(e->d_name);
	}
	closedir(d);
}

/*
 * A thread that ended between the two reads takes its counts with it,
 * and a role's sum can then shrink: 0 then, not a wrapped difference
 * (seen once: 2.9e15 switches per sample).
 */
static uint64_t sub(uint64_t after, uint64_t before)
{
	return after > before ? after - before : 0;
}

void task_stats_diff(const struct task_stats *after,
		     const struct task_stats *before, struct task_stats *d)
{
	int i;

	for (i = 0; i < TASK_ROLES; i++) {
		d->cpu_ns[i] = sub(after->cpu_ns[i], before->cpu_ns[i]);
		d->vcsw[i] = sub(after->vcsw[i], before->vcsw[i]);
		d->ivcsw[i] = sub(after->ivcsw[i], before->ivcsw[i]);
		d->minflt[i] = sub(after->minflt[i], before->minflt[i]);
	}
}

double task_load1(void)
{
	char buf[128];
	FILE *f = fopen("/proc/loadavg", "r");
	double l = -1;

	if (!f)
		return -1;
	if (fgets(buf, sizeof(buf), f))
		l = strtod(buf, NULL);
	fclose(f);
	return l;
}
