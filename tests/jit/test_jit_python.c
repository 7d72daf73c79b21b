/* SPDX-License-Identifier: MIT */
/* Kernel test: Python 3.13 -X perf_jit, unwound through its trampolines. */

/*
 * CPython 3.13 -X perf_jit runs each Python function through a trampoline
 * without a frame pointer (sub $8,%rsp; call *%rcx; ...) and describes it
 * in /tmp/jit-PID.dump only: a code load with the name ("py::leaf:file")
 * and unwinding info. So a stack reaches the caller of a Python function
 * only with the dump's CFI, and Python names come only from the dump.
 * Checks, over the samples taken in leaf(): at least 95% have the whole
 * Python chain leaf <- middle <- top <- <module> (Python frames named
 * from the dump, file = the script) and reach _start; the recorder read
 * the dump's unwinding info. The same when the recorder's first poll
 * comes 300 ms late: the dump's mmap record and the first samples then
 * arrive as one backlog, unwound within milliseconds, and the dump must
 * be opened at the first sample that stops in its code, not after the
 * retry's rate limit (its wall-clock time) expires. Without JIT support (SP_RECORDER_NO_JIT_CODE
 * and a symbolizer that reads no jitdump) the chain check fails.
 * Skips when no Python 3.13 is installed.
 */
#include <glob.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jit_paths.h"
#include "jit_rec.h"

static void find_python(char *out, size_t cap)
{
	const char *env = getenv("STACKPULSE_TEST_PYTHON313");
	glob_t g;

	if (env && *env) {
		snprintf(out, cap, "%s", env);
		return;
	}
	if (glob("/root/.pyenv/versions/3.13*/bin/python3.13", 0, NULL, &g) ||
	    g.gl_pathc == 0) {
		fprintf(stderr,
			"skip: no Python 3.13 (-X perf_jit needs it)\n");
		exit(T_EXIT_SKIP);
	}
	snprintf(out, cap, "%s", g.gl_pathv[0]);
	globfree(&g);
}

struct tally {
	size_t leaf;
	size_t chain;
	size_t named_file;
};

static void count(struct jit_run *run, struct tally *t)
{
	const struct sp_resolved_frame *frames[JIT_MAX_FRAMES];
	const char *names[JIT_MAX_FRAMES];
	const char *want[] = { "leaf", "middle", "top", "<module>", "_start" };
	size_t i, n, printed = 0;
	uint64_t ns;
	int at;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < jit_sample_count(run); i++) {
		n = jit_stack(run, i, names, frames, &ns);
		at = jit_find(names, n, "leaf");
		if (at < 0 || frames[at]->kind != SP_RESOLVED_PYTHON)
			continue;
		t->leaf++;
		t->named_file += frames[at]->file &&
				 strstr(frames[at]->file, "jit_nested.py");
		if (jit_has_order(names, n, want, 5))
			t->chain++;
		else if (printed++ < 3)
			jit_print("no whole chain", names, n);
	}
	fprintf(stderr, "samples in leaf %zu, whole chain %zu, file %zu\n",
		t->leaf, t->chain, t->named_file);
}

int main(void)
{
	char python[PATH_MAX];
	const char *argv[] = { python,	      "-X", "perf_jit",
			       JIT_NESTED_PY, "2",  NULL };
	struct jit_run run;
	struct tally t;

	find_python(python, sizeof(python));
	jit_require(python);
	jit_record(argv, 0, &run);
	count(&run, &t);
	CHECK(t.leaf >= 100);
	CHECK(t.chain * 100 >= t.leaf * 95);
	CHECK_EQ(t.named_file, t.leaf);
	CHECK(run.js.jitdump_files >= 1 && run.js.jitdump_unwind >= 3);
	CHECK_EQ(run.js.jitdump_errors, 0);
	jit_run_close(&run);

	/* The start of the run as one backlog (a stalled recorder). */
	jit_first_poll_after(300);
	jit_record(argv, 0, &run);
	count(&run, &t);
	CHECK(t.leaf >= 100);
	CHECK(t.chain * 100 >= t.leaf * 95);
	CHECK(run.js.jitdump_files >= 1 && run.js.jitdump_unwind >= 3);
	jit_run_close(&run);
	jit_first_poll_after(0);

	/* Without JIT unwinding info the chain breaks at the trampolines. */
	jit_record(argv, SP_RECORDER_NO_JIT_CODE, &run);
	count(&run, &t);
	CHECK(t.chain * 100 < t.leaf * 95 || t.leaf < 100);
	jit_run_close(&run);
	return T_EXIT_PASS;
}
