/* SPDX-License-Identifier: MIT */
/* Kernel test: inline and threaded replays of one captured fixture agree. */

/*
 * Records a multi-threaded workload and a shared-library workload (both
 * built without frame pointers) once, capturing every raw perf record
 * into a fixture, then replays the fixture without perf through an
 * inline recorder and through threaded recorders with 1, 2 and 4
 * unwinder threads. The four spools must be byte-identical, hold as many
 * samples as the live recording, and the threaded replays must really
 * have run their reader and worker threads. The same holds with the
 * fixture spread over 2 and over 64 virtual rings (many CPUs' worth of
 * rings, each in time order, merged by the sequencer). A second round records with
 * kernel callchains (the kernel module record is then written lazily,
 * at the first kernel frame of the replay, in every mode at the same
 * place). Both rounds are also replayed flushing whenever a ring is full
 * (check_flushing).
 */
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse.h>

#include "check.h"
#include "eng_util.h"
#include "harness.h"
#include "workload_paths.h"

static char dir[64];

/* Threads of this process named @name (the recorder names its own). */
static int task_count(const char *name)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	char path[300], comm[32];
	int n = 0;
	FILE *f;

	CHECK(d != NULL);
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm",
			 e->d_name);
		f = fopen(path, "r");
		if (!f)
			continue; /* it just left */
		if (fgets(comm, sizeof(comm), f) &&
		    strncmp(comm, name, strlen(name)) == 0)
			n++;
		fclose(f);
	}
	closedir(d);
	return n;
}

/* Records both workloads for @polls polls of up to 20 ms; returns the
 * live sample count. */
static uint64_t capture(struct sp__vec *fix, uint32_t flags, int polls)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recording_summary sum = { .size = sizeof(sum) };
	struct sp__capture *cap = NULL;
	struct sp_recorder *rec;
	pid_t a = eng_spawn_workload(WL_THREADS_PATH, "30"),
	      b = eng_spawn_workload(WL_SHAREDLIB_PATH, "30");
	char path[128];
	int i, r;

	usleep(100000); /* past the dynamic loader: the maps are stable */
	o.flags = flags;
	o.sample_hz = 4000;
	o.stack_size = 16384;
	snprintf(path, sizeof(path), "%s/live.spool", dir);
	CHECK_OK(sp_recorder_open(path, &o, &rec));
	r = sp_recorder_attach(rec, a, SP_ATTACH_RUNNING);
	eng_skip_if_refused(r);
	CHECK_EQ_INT(r, SP_ATTACHED);
	CHECK_EQ_INT(sp_recorder_attach(rec, b, SP_ATTACH_RUNNING),
		     SP_ATTACHED);
	CHECK_OK(sp__capture_begin(rec, fix, &cap));
	for (i = 0; i < polls; i++)
		CHECK_OK(sp_recorder_poll(rec, 20, NULL));
	CHECK_OK(sp_recorder_disable(rec));
	CHECK_OK(sp_recorder_flush(rec));
	CHECK_OK(sp__capture_end(cap));
	sp_recorder_summary(rec, &sum);
	sp_recorder_close(rec);
	kill(a, SIGKILL);
	kill(b, SIGKILL);
	waitpid(a, NULL, 0);
	waitpid(b, NULL, 0);
	return sum.samples;
}

/*
 * Replays @fix with @threads over @rings rings (0: as captured) into the
 * spool named in @out_path, polling as it goes or, @flushing, flushing
 * whenever a ring is full (sp__replay_run_flushing); returns its sample
 * count, and the pipeline's figures in @st.
 */
static uint64_t replay(const struct sp__vec *fix, uint32_t threads,
		       uint32_t rings, uint32_t flags, bool flushing,
		       struct sp_pipeline_stats *st, char *out_path,
		       size_t out_len)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recording_summary sum = { .size = sizeof(sum) };
	struct sp_recorder *rec;
	struct sp__replay *rp;
	uint64_t fed = 0;

	o.threads = threads;
	o.flags = flags; /* the capture's */
	snprintf(out_path, out_len, "%s/replay-%u-R%u%s.spool", dir, threads,
		 rings, flushing ? "-flushing" : "");
	CHECK_OK(sp_recorder_open(out_path, &o, &rec));
	/* One reader thread and the workers, none in inline mode. */
	CHECK_EQ_INT(task_count("sp-reader"), threads ? 1 : 0);
	CHECK_EQ_INT(task_count("sp-unwind"), (int)threads);
	CHECK_OK(sp__replay_open(rec, fix->data, fix->len, rings, &rp));
	if (flushing)
		CHECK_OK(sp__replay_run_flushing(rp, &fed));
	else
		CHECK_OK(sp__replay_run(rp, 256, &fed));
	CHECK_OK(sp_recorder_finish(rec));
	st->size = sizeof(*st);
	CHECK_OK(sp_recorder_pipeline_stats(rec, st));
	sp_recorder_summary(rec, &sum);
	sp_recorder_close(rec);
	sp__replay_free(rp);
	CHECK_EQ_INT(task_count("sp-"), 0); /* joined by close */
	fprintf(stderr,
		"replay threads=%u rings=%u%s: fed %llu samples, wrote %llu "
		"(%llu by workers), copied %llu records\n",
		threads, rings, flushing ? " flushing" : "",
		(unsigned long long)fed, (unsigned long long)sum.samples,
		(unsigned long long)st->jobs_written_by_workers,
		(unsigned long long)st->records_copied);
	CHECK_EQ(sum.sample_events, fed);
	return sum.samples;
}

static void *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	void *buf;

	CHECK(f != NULL);
	CHECK(fstat(fileno(f), &st) == 0);
	*len = (size_t)st.st_size;
	buf = malloc(*len + 1);
	CHECK(buf != NULL);
	CHECK(fread(buf, 1, *len, f) == *len);
	fclose(f);
	return buf;
}

/* Replays @fix in every mode over @rings rings: identical spools. */
static void check_modes(const struct sp__vec *fix, uint32_t flags,
			uint32_t rings, uint64_t live)
{
	static const uint32_t modes[] = { 0, 1, 2, 4 };
	struct sp_pipeline_stats st;
	char paths[4][128];
	void *bytes[4];
	size_t lens[4], i;
	uint64_t n;

	for (i = 0; i < 4; i++) {
		n = replay(fix, modes[i], rings, flags, false, &st, paths[i],
			   sizeof(paths[i]));
		CHECK_EQ(n, live);
		/* CPU mode: the workers write too, in the same order. */
		if (modes[i]) {
			CHECK(st.jobs_written_by_workers > 0);
			CHECK(st.jobs_written_by_workers <= st.jobs);
		}
		bytes[i] = slurp(paths[i], &lens[i]);
	}
	for (i = 1; i < 4; i++) {
		CHECK_MEM(bytes[i], lens[i], bytes[0], lens[0]);
	}
	for (i = 0; i < 4; i++) {
		free(bytes[i]);
		unlink(paths[i]);
	}
}

/*
 * A flush that finds the readers' rings full of held records writes
 * them where they are: the sequencer copies out only a starved reader's
 * records (reader.h; copying held ones, which are written right after,
 * made a flush under overload take 0.3-0.5 s). The threaded spool must
 * equal the inline one (the same flushes), nothing may be copied, and
 * every sample must have been unwound by a worker.
 */
static void check_flushing(const struct sp__vec *fix, uint32_t flags,
			   uint64_t live)
{
	struct sp_pipeline_stats st;
	char paths[2][128];
	void *bytes[2];
	size_t lens[2], i;

	for (i = 0; i < 2; i++)
		CHECK_EQ(replay(fix, i ? 2 : 0, 0, flags, true, &st, paths[i],
				sizeof(paths[i])),
			 live);
	CHECK_EQ(st.records_copied, 0);
	CHECK_EQ(st.jobs_inline, 0);
	CHECK(st.jobs > 0);
	for (i = 0; i < 2; i++)
		bytes[i] = slurp(paths[i], &lens[i]);
	CHECK_MEM(bytes[1], lens[1], bytes[0], lens[0]);
	for (i = 0; i < 2; i++) {
		free(bytes[i]);
		unlink(paths[i]);
	}
}

/*
 * One capture of @polls polls with @flags, replayed in every mode over
 * each ring count of @rings (@nrings of them).
 */
static void check_round(uint32_t flags, int polls, const uint32_t *rings,
			size_t nrings)
{
	struct sp__vec fix;
	struct sp__mem mem;
	char path[128];
	uint64_t live;
	size_t i;

	sp__mem_init(&mem, NULL);
	sp__vec_init(&fix, 1);
	live = capture(&fix, flags, polls);
	fprintf(stderr, "live (flags %#x): %llu samples, fixture %zu bytes\n",
		flags, (unsigned long long)live, fix.len);
	CHECK(live > 500);
	for (i = 0; i < nrings; i++)
		check_modes(&fix, flags, rings[i], live);
	check_flushing(&fix, flags, live);
	snprintf(path, sizeof(path), "%s/live.spool", dir);
	unlink(path);
	sp__vec_fini(&fix, &mem);
}

int main(void)
{
	static const uint32_t all[] = { 0, 2, 64 }, captured[] = { 0 };

	snprintf(dir, sizeof(dir), "/tmp/sp-replay-%d", (int)getpid());
	CHECK(mkdir(dir, 0700) == 0);
	check_round(0, 60, all, 3);
	/* Shorter, and as captured only: CI time. */
	check_round(SP_RECORDER_KERNEL, 30, captured, 1);
	rmdir(dir);
	return T_EXIT_PASS;
}
