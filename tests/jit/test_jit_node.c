/* SPDX-License-Identifier: MIT */
/* Kernel test: node --perf-prof, JS functions named from its jitdump. */

/*
 * node --perf-prof writes ./jit-PID.dump (code loads named
 * "JS:*leaf /path/jit_nested.js:4:14" and the like, some with line
 * info) and maps it so perf sees it; it writes no perf map. So JS names
 * come only from the dump. V8 keeps frame pointers in its code, and
 * TurboFan inlines small functions into their callers, so what the test
 * asks is the names: at least 90% of the samples with a frame in JIT
 * memory name it from the dump (origin jitdump, a "JS:" or "Builtin:"
 * name), and the hottest JS code is the script's (a JS frame naming
 * jit_nested.js is in at least half of all samples). Skips when node is
 * not installed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jit_paths.h"
#include "jit_rec.h"

#define NODE "/usr/bin/node"

int main(void)
{
	const char *argv[] = { NODE, "--perf-prof", JIT_NESTED_JS, "2", NULL };
	const struct sp_resolved_frame *frames[JIT_MAX_FRAMES];
	const char *names[JIT_MAX_FRAMES];
	size_t i, k, n, jit = 0, named = 0, script = 0, total;
	struct jit_run run;
	uint64_t ns;

	jit_require(NODE);
	/* node writes its dump into the working directory. */
	CHECK_OK(chdir("/tmp"));
	jit_dump_dir("/tmp");
	jit_record(argv, 0, &run);
	total = jit_sample_count(&run);
	for (i = 0; i < total; i++) {
		bool in_jit = false, is_named = false, is_script = false;

		n = jit_stack(&run, i, names, frames, &ns);
		for (k = 0; k < n; k++) {
			const struct sp_resolved_frame *f = frames[k];

			/* Named JIT code, or an unnamed anonymous frame. */
			if (!(f->flags & SP_RESOLVED_JIT) &&
			    strncmp(f->name, "anon+", 5) != 0 &&
			    strncmp(f->name, "<0x", 3) != 0)
				continue;
			in_jit = true;
			if (f->origin != SP_ORIGIN_JITDUMP)
				continue;
			is_named = true;
			is_script |= strncmp(f->name, "JS:", 3) == 0 &&
				     strstr(f->name, "jit_nested.js");
		}
		jit += in_jit;
		named += in_jit && is_named;
		script += is_script;
	}
	fprintf(stderr, "samples %zu, in JIT code %zu, named %zu, script %zu\n",
		total, jit, named, script);
	CHECK(total >= 100 && jit >= 50);
	CHECK(named * 100 >= jit * 90);
	CHECK(script * 2 >= total);
	jit_run_close(&run);
	return T_EXIT_PASS;
}
