/* SPDX-License-Identifier: MIT */
/* Recorder integration tests: record a workload, name every recorded frame. */
#ifndef SP_TESTS_REC_UTIL_H
#define SP_TESTS_REC_UTIL_H

/*
 * These tests record real processes (tests/workloads, built -O2 without
 * frame pointers) through the public Recorder API, read the spool back
 * with a Snapshot and check every stack by function NAME. Names come from
 * the test's own tiny ELF symbol reader (libelf, .symtab then .dynsym of
 * the module's file), not from the library's Symbolizer, so a Symbolizer
 * bug cannot hide a Recorder bug: a pinned frame's file-relative ip is
 * turned into a symbol value through the PT_LOAD table.
 *
 * rec_require_perf() exits 77 (skip) when the kernel refuses
 * perf_event_open for this process, saying why; any later failure is a
 * test failure.
 */
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <stackpulse.h>

#include "check.h"

/* Recording time of each workload, in seconds (argv[1] of the workload). */
#define REC_SECONDS "1"
#define REC_MAX_FRAMES 256
/* ~1 s of CPU at 999 Hz gives ~1000; a loaded machine gives fewer. */
#define REC_MIN_SAMPLES 100

struct rec_run {
	char spool[256];
	int32_t pid;
	int status; /* raw wait status of the workload */
	struct sp_recording_summary summary;
	struct sp_snapshot *snap;
	const struct sp_spool *defs;
};

/* One named frame, leaf first; strings borrowed from struct rec_names. */
struct rec_frame {
	const char *name;   /* function (".constprop" etc. kept) or NULL */
	const char *module; /* module path or NULL (unpinned, unknown) */
	const char *base;   /* basename of @module or NULL */
	uint32_t mode;	    /* enum sp_frame_mode */
	uint64_t abs_ip;
};

void rec_require_perf(bool kernel);

/* The profile mode recorders of rec_launch/rec_spawned use (default cpu). */
extern uint32_t rec_mode;

/*
 * rec_launch records @argv from its first instruction (suspended launch,
 * SP_ATTACH_ON_EXEC) at 999 Hz until it exits; rec_spawned spawns it,
 * lets it run a moment, then attaches with @mode. Both check the exit
 * status, finish the recording and open the spool in @run.
 */
void rec_launch(const char *const argv[], uint32_t flags, struct rec_run *run);
void rec_spawned(const char *const argv[], enum sp_attach_mode mode,
		 uint32_t flags, struct rec_run *run);
void rec_run_close(struct rec_run *run);

/*
 * rec_stack names the frames of sample @index, leaf first, into @out.
 * @return the number of frames (at most REC_MAX_FRAMES).
 */
size_t rec_stack(struct rec_run *run, size_t index, struct sp_sample *sample,
		 struct rec_frame *out);

/* rec_is: @f is function @name (ignoring a ".suffix" of a GCC clone). */
bool rec_is(const struct rec_frame *f, const char *name);
/* rec_find: index of the first frame named @name, or -1. */
int rec_find(const struct rec_frame *frames, size_t n, const char *name);
/* rec_has_run: frames[at..] are exactly @names in order (leaf first). */
bool rec_has_run(const struct rec_frame *frames, size_t n, size_t at,
		 const char *const *names, size_t count);
/* rec_reaches_main: some frame is `main` of @exe_path (by basename). */
bool rec_reaches_main(const struct rec_frame *frames, size_t n,
		      const char *exe_path);
/* rec_print_stack writes one stack to stderr (for failure messages). */
void rec_print_stack(const char *why, const struct sp_sample *s,
		     const struct rec_frame *frames, size_t n);

/*
 * rec_in_loader_start: every frame is a user frame of the dynamic loader
 * and none is a truncation marker: the process before main existed (ld.so
 * relocating, loading libraries), a complete stack that cannot reach main.
 * A busy machine makes that phase long enough to be sampled.
 */
bool rec_in_loader_start(const struct rec_frame *frames, size_t n);

/*
 * rec_check_main checks that at least @min_percent of the samples of
 * process @pid reach main of @exe_path and that there are at least
 * @min_samples of them; prints the first stacks that do not. Samples of
 * the loader's start (rec_in_loader_start) count in neither.
 * @return the number of samples of @pid, loader samples included.
 */
size_t rec_check_main_n(struct rec_run *run, int32_t pid, const char *exe_path,
			unsigned min_percent, size_t min_samples);

/* rec_check_main is rec_check_main_n with REC_MIN_SAMPLES. */
size_t rec_check_main(struct rec_run *run, int32_t pid, const char *exe_path,
		      unsigned min_percent);

#endif /* SP_TESTS_REC_UTIL_H */
