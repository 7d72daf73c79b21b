/* SPDX-License-Identifier: MIT */
/* Recorder: 4 threads, attached while running, each its own tid and name. */

/*
 * Each worker tid must show exactly one of the four worker functions in
 * all its stacks that show one, the four tids must differ from each other
 * and from the leader, and together they must cover all four functions.
 */
#include "rec_util.h"
#include "workload_paths.h"

#define NWORKERS 4
#define MAX_TIDS 16

static const char *const workers[NWORKERS] = { "wl_thread_alpha",
					       "wl_thread_beta",
					       "wl_thread_gamma",
					       "wl_thread_delta" };

struct tid_stats {
	int32_t tid;
	int worker; /* index in workers[], -1 none seen yet */
	size_t samples, named;
};

/* Which worker function the stack shows (-1 none); fails on two. */
static int worker_of(const struct sp_sample *s, const struct rec_frame *f,
		     size_t n)
{
	int w, found = -1;

	for (w = 0; w < NWORKERS; w++) {
		if (rec_find(f, n, workers[w]) < 0)
			continue;
		if (found >= 0) {
			rec_print_stack("two worker functions", s, f, n);
			CHECK(!"one worker function per stack");
		}
		found = w;
	}
	return found;
}

static struct tid_stats *tid_get(struct tid_stats *t, size_t *nt, int32_t tid)
{
	size_t i;

	for (i = 0; i < *nt; i++)
		if (t[i].tid == tid)
			return &t[i];
	CHECK(*nt < MAX_TIDS);
	t[*nt] = (struct tid_stats){ tid, -1, 0, 0 };
	return &t[(*nt)++];
}

static void account(struct tid_stats *st, int w, const struct sp_sample *s,
		    const struct rec_frame *frames, size_t n)
{
	st->samples++;
	if (w < 0)
		return;
	st->named++;
	if (st->worker >= 0 && st->worker != w) {
		rec_print_stack("tid changed its function", s, frames, n);
		CHECK(!"a tid runs one worker function");
	}
	st->worker = w;
}

int main(void)
{
	const char *const argv[] = { WL_THREADS_PATH, REC_SECONDS, NULL };
	struct rec_frame frames[REC_MAX_FRAMES];
	struct tid_stats tids[MAX_TIDS];
	size_t i, count, ntids = 0;
	unsigned seen = 0;
	struct rec_run run;
	struct sp_sample s;

	rec_require_perf(false);
	rec_spawned(argv, SP_ATTACH_RUNNING, 0, &run);
	count = sp_snapshot_sample_count(run.snap);
	CHECK(count >= REC_MIN_SAMPLES);
	for (i = 0; i < count; i++) {
		size_t n = rec_stack(&run, i, &s, frames);

		CHECK_EQ_INT(s.pid, run.pid);
		account(tid_get(tids, &ntids, s.tid), worker_of(&s, frames, n),
			&s, frames, n);
	}
	for (i = 0; i < ntids; i++) {
		struct tid_stats *t = &tids[i];

		fprintf(stderr, "tid %d: %zu samples, %zu named %s\n",
			(int)t->tid, t->samples, t->named,
			t->worker >= 0 ? workers[t->worker] : "-");
		if (t->worker < 0)
			continue;
		CHECK(t->tid != run.pid);
		CHECK(!(seen & (1u << t->worker))); /* distinct tids */
		seen |= 1u << t->worker;
		CHECK(t->named * 100 >= t->samples * 95);
	}
	CHECK_EQ(seen, (1u << NWORKERS) - 1);
	rec_run_close(&run);
	return T_EXIT_PASS;
}
