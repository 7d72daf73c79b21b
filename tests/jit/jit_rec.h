/* SPDX-License-Identifier: MIT */
/* JIT recording tests: record a real JIT, name its samples with the Symbolizer. */
#ifndef SP_TESTS_JIT_REC_H
#define SP_TESTS_JIT_REC_H

/*
 * The tests record real JIT runtimes (Python 3.13 -X perf_jit, node
 * --perf-prof, lli-14 MCJIT, tests/jit/wl_gdbjit) from their first
 * instruction, then name every sample with the library's Symbolizer
 * (jit_dir = the spool's ".jit" directory, as spulse report does) and
 * check stacks by name, leaf first. The chain checks count samples
 * whose leaf-side frames are given and whose frames further up include,
 * in order, the others: "the whole chain" through JIT code.
 *
 * A runtime that is not installed skips the test (77, saying which);
 * perf_event_open refused skips too; anything else that fails fails.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stackpulse.h>

#include "check.h"

#define JIT_MAX_FRAMES 256

struct jit_run {
	char spool[128];
	char jit_dir[160];
	int32_t pid;
	struct sp_recording_summary sum;
	struct sp_jit_stats js;
	struct sp_snapshot *snap;
	struct sp_symbolizer *sym;
};

/* Exits 77 unless @path is an executable file. */
void jit_require(const char *path);

/*
 * Records @argv (from exec to exit, 999 Hz; threads from SP_TEST_THREADS)
 * with @flags into a fresh spool, then opens it and a symbolizer.
 */
void jit_record(const char *const argv[], uint32_t flags, struct jit_run *run);
/*
 * Starts @argv, lets it run @warm_ms, attaches (stopping it while
 * attaching), records @ms, finishes, then kills it: a JIT whose code is
 * registered by then, recorded as `spulse record -p` does.
 */
void jit_record_attached(const char *const argv[], int warm_ms, int ms,
			 struct jit_run *run);
/*
 * jit_record() polls first @ms after the target starts (0: at once), so
 * the target's start (its jitdump's mmap record, its first samples)
 * reaches the recorder as one backlog, unwound in far less time than it
 * took to record: a stalled or slow recorder, made reproducible.
 */
void jit_first_poll_after(int ms);
/* Removes the spool, the sidecar directory and @dir/jit-<pid>.dump. */
void jit_run_close(struct jit_run *run);
/* The directory where the runtime writes its jitdump (default /tmp). */
void jit_dump_dir(const char *dir);

size_t jit_sample_count(const struct jit_run *run);

/*
 * Names sample @i, leaf first (inline frames expanded) into @names
 * (borrowed from the symbolizer); stores its time in @ns. Returns the
 * frame count.
 */
size_t jit_stack(struct jit_run *run, size_t i, const char **names,
		 const struct sp_resolved_frame **frames, uint64_t *ns);

/* Whether @names[0..n) holds @want[0..k) in this order (a subsequence). */
bool jit_has_order(const char *const *names, size_t n, const char *const *want,
		   size_t k);

/* Index of the first frame named @name, or -1. */
int jit_find(const char *const *names, size_t n, const char *name);

/* Prints a stack to stderr (failure messages). */
void jit_print(const char *why, const char *const *names, size_t n);

#endif /* SP_TESTS_JIT_REC_H */
