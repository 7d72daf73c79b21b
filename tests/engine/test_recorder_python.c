/* SPDX-License-Identifier: MIT */
/* Kernel test: tag-6 Python runtime markers for python3.12 -X perf. */

/*
 * A CPython 3.12+ run with -X perf must be marked a Python runtime (tag 6
 * true) once its interpreter module is seen, and unmarked (false) when it
 * exits; the same interpreter without perf support gets no marker. Skips
 * when no 3.12+ interpreter is installed.
 */
#include <glob.h>
#include <string.h>

#include <stackpulse/launch.h>
#include <stackpulse/snapshot.h>

#include "eng_util.h"
#include "threads_env.h"

static char spool_path[64];

static void find_python(char *out, size_t cap)
{
	glob_t g;

	if (glob("/root/.pyenv/versions/3.1[2-9]*/bin/python3.1[2-9]", 0, NULL,
		 &g) != 0 ||
	    g.gl_pathc == 0) {
		fprintf(stderr, "skip: no Python 3.12+ interpreter\n");
		exit(T_EXIT_SKIP);
	}
	snprintf(out, cap, "%s", g.gl_pathv[0]);
	globfree(&g);
}

/* Records @argv from exec to exit; returns the pid. */
static int32_t record(char *const argv[])
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recorder *rec;
	struct sp_launch *l;
	int status = 0, r;
	char map[64];
	int32_t pid;

	o.threads = test_threads();
	o.sample_hz = 999;
	CHECK_OK(sp_recorder_open(spool_path, &o, &rec));
	CHECK_OK(sp_launch_suspended(argv[0], argv, NULL, &l));
	pid = sp_launch_pid(l);
	r = sp_recorder_attach(rec, pid, SP_ATTACH_ON_EXEC);
	eng_skip_if_refused(r);
	CHECK_EQ_INT(r, SP_ATTACHED);
	CHECK_OK(sp_launch_resume(l));
	while (sp_launch_try_wait(l, &status) == 0)
		CHECK_OK(sp_recorder_poll(rec, 20, NULL));
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	while (sp_recorder_active_process_count(rec) > 0)
		CHECK_OK(sp_recorder_poll(rec, 20, NULL));
	CHECK_OK(sp_recorder_finish(rec));
	sp_recorder_close(rec);
	sp_launch_free(l);
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", (int)pid);
	unlink(map); /* written by -X perf */
	return pid;
}

/* Checks the markers: @perf → exactly true then false; else none. */
static void check_markers(int32_t pid, bool perf)
{
	struct sp_python_record pr[2];
	struct sp_snapshot *snap;
	size_t n;

	CHECK_OK(sp_snapshot_open(spool_path, NULL, &snap));
	n = sp_snapshot_python_record_count(snap);
	fprintf(stderr, "perf %d: samples %zu python records %zu\n", perf,
		sp_snapshot_sample_count(snap), n);
	CHECK(sp_snapshot_sample_count(snap) > 0);
	CHECK_EQ(n, perf ? 2 : 0);
	if (perf) {
		CHECK_OK(sp_snapshot_python_record(snap, 0, &pr[0]));
		CHECK_OK(sp_snapshot_python_record(snap, 1, &pr[1]));
		CHECK_EQ_INT(pr[0].pid, pid);
		CHECK_EQ_INT(pr[1].pid, pid);
		CHECK(pr[0].is_python_runtime);
		CHECK(!pr[1].is_python_runtime);
		CHECK(pr[0].timestamp_ns > 0);
		CHECK(pr[1].timestamp_ns >= pr[0].timestamp_ns);
	}
	sp_snapshot_close(snap);
	unlink(spool_path);
}

int main(void)
{
	static char x[] = "-X", perf[] = "perf", c[] = "-c",
		    code[] = "import time\n"
			     "def f(n):\n"
			     "    return sum(i * i for i in range(n))\n"
			     "t = time.time()\n"
			     "while time.time() - t < 0.4:\n"
			     "    f(10000)\n";
	char py[256];
	char *with[] = { py, x, perf, c, code, NULL };
	char *without[] = { py, c, code, NULL };

	find_python(py, sizeof(py));
	snprintf(spool_path, sizeof(spool_path), "/tmp/sp_py_%d.spool",
		 (int)getpid());
	check_markers(record(with), true);
	check_markers(record(without), false);
	return T_EXIT_PASS;
}
