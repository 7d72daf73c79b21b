/* SPDX-License-Identifier: MIT */
/* Kernel test: a program registering and removing its own GDB JIT objects. */

/*
 * tests/jit/wl_gdbjit registers an in-memory ELF object (.symtab and
 * .eh_frame) for code it generated, runs it, removes it, then generates
 * the same code at the same address and registers a second object with
 * another name (wl_gdbjit.c). The JIT code has no frame pointer, so a
 * stack reaches main only through the object's CFI:
 *
 *   wl_spin <- jit_phase_a <- wl_run_jit <- phase <- main   (phase A)
 *   wl_spin <- jit_phase_b <- wl_run_jit <- phase <- main   (phase B)
 *
 * Checks: at least 95% of the samples in wl_spin have that whole chain;
 * every JIT frame is named for its phase by the sample's time (the name
 * of code that was removed, then its address reused, survives both and
 * the process's exit: it comes from the recorder's sidecar file); the
 * recorder saw two objects, both removed, and kept both names. With
 * SP_RECORDER_NO_JIT_CODE the same run must not pass the chain check (so
 * the check can fail).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jit_paths.h"
#include "jit_rec.h"

struct tally {
	size_t spin;
	size_t chain;
	size_t a, b;   /* named for the right phase */
	size_t wrong;  /* named for the other phase */
	size_t before; /* samples in phase A (by time) */
	size_t after;  /* in phase B */
};

static void read_times(const char *path, uint64_t *a_end, uint64_t *b_start)
{
	unsigned long long a, b;
	FILE *f = fopen(path, "r");

	CHECK_PTR(f);
	CHECK_EQ(fscanf(f, "%llu %llu", &a, &b), 2);
	fclose(f);
	*a_end = a;
	*b_start = b;
}

static void count(struct jit_run *run, uint64_t a_end, uint64_t b_start,
		  struct tally *t)
{
	const struct sp_resolved_frame *frames[JIT_MAX_FRAMES];
	const char *names[JIT_MAX_FRAMES];
	const char *want_a[] = { "wl_spin", "jit_phase_a", "wl_run_jit",
				 "phase", "main" };
	const char *want_b[] = { "wl_spin", "jit_phase_b", "wl_run_jit",
				 "phase", "main" };
	size_t i, n, printed = 0;
	uint64_t ns;

	memset(t, 0, sizeof(*t));
	for (i = 0; i < jit_sample_count(run); i++) {
		bool in_a, in_b;

		n = jit_stack(run, i, names, frames, &ns);
		if (!n || strcmp(names[0], "wl_spin") != 0)
			continue;
		t->spin++;
		in_a = ns < a_end;
		in_b = ns > b_start;
		t->before += in_a;
		t->after += in_b;
		if (jit_has_order(names, n, in_a ? want_a : want_b, 5))
			t->chain++;
		else if (printed++ < 3)
			jit_print("no whole chain", names, n);
		t->a += in_a && jit_find(names, n, "jit_phase_a") == 1;
		t->b += in_b && jit_find(names, n, "jit_phase_b") == 1;
		t->wrong += (in_a && jit_find(names, n, "jit_phase_b") >= 0) ||
			    (in_b && jit_find(names, n, "jit_phase_a") >= 0);
	}
	fprintf(stderr,
		"in wl_spin %zu (phase A %zu, B %zu): whole chain %zu, named "
		"A %zu, B %zu, wrong phase %zu\n",
		t->spin, t->before, t->after, t->chain, t->a, t->b, t->wrong);
}

int main(void)
{
	char times[64];
	const char *argv[] = { WL_GDBJIT_PATH, "1", times, NULL };
	uint64_t a_end, b_start;
	struct jit_run run;
	struct tally t;

	snprintf(times, sizeof(times), "/tmp/sp-gdbjit-%d.times",
		 (int)getpid());
	jit_record(argv, 0, &run);
	read_times(times, &a_end, &b_start);
	count(&run, a_end, b_start, &t);
	CHECK(t.before >= 100 && t.after >= 100);
	CHECK(t.chain * 100 >= t.spin * 95);
	CHECK(t.a * 100 >= t.before * 95 && t.b * 100 >= t.after * 95);
	CHECK_EQ(t.wrong, 0);
	CHECK_EQ(run.js.gdb_processes, 1);
	CHECK(run.js.gdb_objects >= 2);
	CHECK(run.js.gdb_removed >= 2);
	CHECK(run.js.names >= 2 && run.js.names_lost == 0);
	CHECK_EQ(run.js.gdb_list_errors + run.js.gdb_bad_objects, 0);
	jit_run_close(&run);

	/* The same program without JIT support: the chain check fails. */
	jit_record(argv, SP_RECORDER_NO_JIT_CODE, &run);
	read_times(times, &a_end, &b_start);
	count(&run, a_end, b_start, &t);
	CHECK(t.chain * 100 < t.spin * 95);
	CHECK_EQ(run.js.gdb_objects, 0);
	jit_run_close(&run);
	unlink(times);
	return T_EXIT_PASS;
}
