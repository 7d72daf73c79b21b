/* SPDX-License-Identifier: MIT */
/* JIT recording tests: launch, record, symbolize, match stacks by name. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "jit_rec.h"
#include "perf_skip.h"

static unsigned spool_seq;
static const char *dump_dir = "/tmp";
static int first_poll_ms;

void jit_dump_dir(const char *dir)
{
	dump_dir = dir;
}

void jit_first_poll_after(int ms)
{
	first_poll_ms = ms;
}

void jit_require(const char *path)
{
	if (access(path, X_OK) != 0) {
		fprintf(stderr, "skip: %s is not installed\n", path);
		exit(T_EXIT_SKIP);
	}
}

static uint32_t threads(void)
{
	const char *v = getenv("SP_TEST_THREADS");

	return v && *v ? (uint32_t)strtoul(v, NULL, 10) : 0;
}

static void run_paths(struct jit_run *run)
{
	memset(run, 0, sizeof(*run));
	snprintf(run->spool, sizeof(run->spool), "/tmp/sp-jit-%d-%u.spool",
		 (int)getpid(), spool_seq++);
	snprintf(run->jit_dir, sizeof(run->jit_dir), "%s.jit", run->spool);
}

static void report(const char *what, const struct jit_run *run)
{
	fprintf(stderr,
		"%s: %llu samples; jitdump files %llu records %llu unwind "
		"%llu errors %llu; gdb objects %llu removed %llu names %llu "
		"lost %llu; retries %llu (deeper %llu); regenerations %llu\n",
		what, (unsigned long long)run->sum.samples,
		(unsigned long long)run->js.jitdump_files,
		(unsigned long long)run->js.jitdump_records,
		(unsigned long long)run->js.jitdump_unwind,
		(unsigned long long)run->js.jitdump_errors,
		(unsigned long long)run->js.gdb_objects,
		(unsigned long long)run->js.gdb_removed,
		(unsigned long long)run->js.names,
		(unsigned long long)run->js.names_lost,
		(unsigned long long)run->js.retries,
		(unsigned long long)run->js.retries_better,
		(unsigned long long)run->js.regenerations);
}

/* Finishes @rec, keeps its counters in @run, closes it. */
static void finish(struct sp_recorder *rec, struct jit_run *run)
{
	CHECK_OK(sp_recorder_finish(rec));
	run->sum.size = sizeof(run->sum);
	CHECK_OK(sp_recorder_summary(rec, &run->sum));
	run->js.size = sizeof(run->js);
	CHECK_OK(sp_recorder_jit_stats(rec, &run->js));
	sp_recorder_close(rec);
}

static void open_results(struct jit_run *run)
{
	struct sp_symbolizer_opts so = { .size = sizeof(so) };

	CHECK_OK(sp_snapshot_open(run->spool, NULL, &run->snap));
	so.jit_dir = run->jit_dir;
	so.flags = SP_SYMBOLIZER_NO_KERNEL;
	CHECK_OK(sp_symbolizer_new(sp_snapshot_spool(run->snap), &so,
				   &run->sym));
}

void jit_record(const char *const argv[], uint32_t flags, struct jit_run *run)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recorder *rec;
	struct sp_launch *l;
	char *args[16];
	int status = 0, r;
	size_t i;

	run_paths(run);
	o.threads = threads();
	o.sample_hz = 999;
	o.flags = flags;
	o.jit_dir = run->jit_dir;
	CHECK_OK(sp_recorder_open(run->spool, &o, &rec));
	for (i = 0; argv[i] && i + 1 < 16; i++)
		CHECK_PTR(args[i] = strdup(argv[i]));
	args[i] = NULL;
	CHECK_OK(sp_launch_suspended(args[0], args, NULL, &l));
	run->pid = sp_launch_pid(l);
	r = sp_recorder_attach(rec, run->pid, SP_ATTACH_ON_EXEC);
	skip_if_refused(r);
	CHECK_EQ_INT(r, SP_ATTACHED);
	CHECK_OK(sp_launch_resume(l));
	if (first_poll_ms > 0)
		usleep((useconds_t)first_poll_ms * 1000);
	while (sp_launch_try_wait(l, &status) == 0)
		CHECK_OK(sp_recorder_poll(rec, 20, NULL));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "%s exited with status %#x\n", argv[0], status);
		exit(T_EXIT_FAIL);
	}
	while (sp_recorder_active_process_count(rec) > 0)
		CHECK_OK(sp_recorder_poll(rec, 20, NULL));
	finish(rec, run);
	sp_launch_free(l);
	for (i = 0; args[i]; i++)
		free(args[i]);
	open_results(run);
	report(argv[0], run);
}

void jit_record_attached(const char *const argv[], int warm_ms, int ms,
			 struct jit_run *run)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recorder *rec;
	struct timespec t0, t;
	pid_t pid;
	int r;

	run_paths(run);
	o.threads = threads();
	o.sample_hz = 999;
	o.jit_dir = run->jit_dir;
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execv(argv[0], (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	CHECK(pid > 0);
	run->pid = pid;
	usleep((useconds_t)warm_ms * 1000);
	CHECK_OK(sp_recorder_open(run->spool, &o, &rec));
	r = sp_recorder_attach(rec, pid, SP_ATTACH_STOP_WHILE_ATTACHING);
	skip_if_refused(r);
	CHECK_EQ_INT(r, SP_ATTACHED);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		CHECK_OK(sp_recorder_poll(rec, 20, NULL));
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 +
			 (t.tv_nsec - t0.tv_nsec) / 1000000 <
		 ms);
	finish(rec, run);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	open_results(run);
	report(argv[0], run);
}

/* Removes the sidecar directory and its files (gdbjit-*.dump only). */
static void remove_jit_dir(const char *dir)
{
	char path[512];
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, "gdbjit-", 7) != 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(dir);
}

void jit_run_close(struct jit_run *run)
{
	char dump[256];

	sp_symbolizer_free(run->sym);
	sp_snapshot_close(run->snap);
	unlink(run->spool);
	remove_jit_dir(run->jit_dir);
	snprintf(dump, sizeof(dump), "%s/jit-%d.dump", dump_dir, (int)run->pid);
	unlink(dump);
}

size_t jit_sample_count(const struct jit_run *run)
{
	return sp_snapshot_sample_count(run->snap);
}

size_t jit_stack(struct jit_run *run, size_t i, const char **names,
		 const struct sp_resolved_frame **frames, uint64_t *ns)
{
	struct sp_sample s;
	int n;
	size_t k;

	CHECK_OK(sp_snapshot_sample(run->snap, i, &s));
	n = sp_symbolizer_resolve_stack(run->sym, s.stack, s.pid, frames,
					JIT_MAX_FRAMES);
	CHECK_OK(n);
	if ((size_t)n > JIT_MAX_FRAMES)
		n = JIT_MAX_FRAMES;
	for (k = 0; k < (size_t)n; k++)
		names[k] = frames[k]->name;
	*ns = s.timestamp_ns;
	return (size_t)n;
}

bool jit_has_order(const char *const *names, size_t n, const char *const *want,
		   size_t k)
{
	size_t i, j = 0;

	for (i = 0; i < n && j < k; i++)
		if (strcmp(names[i], want[j]) == 0)
			j++;
	return j == k;
}

int jit_find(const char *const *names, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(names[i], name) == 0)
			return (int)i;
	return -1;
}

void jit_print(const char *why, const char *const *names, size_t n)
{
	size_t i;

	fprintf(stderr, "%s:", why);
	for (i = 0; i < n; i++)
		fprintf(stderr, " %s", names[i]);
	fprintf(stderr, "\n");
}
