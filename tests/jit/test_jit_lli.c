/* SPDX-License-Identifier: MIT */
/* Kernel test: LLVM 14 MCJIT (lli), unwound with its GDB JIT object's CFI. */

/*
 * lli-14 -jit-kind=mcjit compiles tests/jit/jit_hot.ll (main -> middle ->
 * leaf, a hot loop) and registers the object with GDB's JIT interface
 * (its descriptor is in libLLVM-14.so.1). The JIT code has no frame
 * pointers, so only the object's .eh_frame unwinds it. The test attaches
 * to the running lli (as spulse record -p does), so the object is read
 * whatever the recorder's start-up costs (building libLLVM's unwind
 * table takes seconds on a loaded machine; test_jit_gdb covers objects
 * registered after a launch). Checks: at least 99% of the samples in
 * leaf have leaf <- middle <- main (JIT code, named) and reach lli's own
 * main (module lli) and _start; the recorder read the object and kept
 * its three function names in its sidecar file, which names them by
 * itself (read here with the library's jitdump reader). The first
 * samples count too: they stop in JIT code not read yet, and must not be
 * written before the image with the GDB JIT descriptor (libLLVM, lli's
 * tenth) was found, however far the routine scans got (8 images a poll:
 * before, 1-13% of a second's samples were cut at leaf). Skips when
 * lli-14 is not installed.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jit_names.h"
#include "jit_paths.h"
#include "jit_rec.h"
#include "jitdump_read.h"

#define LLI "/usr/bin/lli-14"

static bool is_lli_main(const struct sp_resolved_frame *f)
{
	const char *base = f->module ? strrchr(f->module, '/') : NULL;

	return strcmp(f->name, "main") == 0 && base &&
	       strncmp(base, "/lli", 4) == 0;
}

/* The sidecar's names: leaf, middle and main, each covering @pc[i]. */
static void check_sidecar(const char *dir, const uint64_t *pcs,
			  const char *const *want, size_t n)
{
	struct sp__jit_names *names;
	struct sp__jitdump_reader *r;
	struct sp__mem mem;
	char path[512] = "";
	struct dirent *de;
	DIR *d = opendir(dir);
	size_t i;

	CHECK_PTR(d);
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, "gdbjit-", 7) == 0)
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
	closedir(d);
	CHECK(path[0]);
	sp__mem_init(&mem, NULL);
	CHECK_OK(sp__jit_names_new(&mem, NULL, &names));
	CHECK_OK(sp__jitdump_reader_open(&mem, path, 0, 0, &r));
	CHECK(sp__jitdump_reader_poll(r, 0, sp__jit_names_add, names) >= 3);
	CHECK_OK(sp__jit_names_finish(names));
	for (i = 0; i < n; i++) {
		const struct sp__jit_code *c =
			sp__jit_names_find(names, pcs[i], UINT64_MAX);

		CHECK(c && strcmp(c->name, want[i]) == 0);
	}
	sp__jitdump_reader_free(r);
	sp__jit_names_free(names);
}

int main(void)
{
	const char *argv[] = { LLI, "-jit-kind=mcjit", JIT_HOT_LL, NULL };
	const char *want[] = { "leaf", "middle", "main" };
	const struct sp_resolved_frame *frames[JIT_MAX_FRAMES];
	const char *names[JIT_MAX_FRAMES];
	size_t i, k, n, leaf = 0, chain = 0, printed = 0;
	uint64_t ns, pcs[3] = { 0 };
	struct jit_run run;

	jit_require(LLI);
	jit_record_attached(argv, 1500, 2000, &run);
	for (i = 0; i < jit_sample_count(&run); i++) {
		bool lli_main = false;

		n = jit_stack(&run, i, names, frames, &ns);
		if (!n || strcmp(names[0], "leaf") != 0)
			continue;
		leaf++;
		for (k = 0; k < n; k++)
			lli_main |= is_lli_main(frames[k]);
		if (n >= 3 && jit_has_order(names, n, want, 3) && lli_main &&
		    strcmp(names[n - 1], "_start") == 0) {
			chain++;
			pcs[0] = frames[0]->pc;
			pcs[1] = frames[1]->pc;
			pcs[2] = frames[2]->pc;
		} else if (printed++ < 3) {
			jit_print("no whole chain", names, n);
		}
	}
	fprintf(stderr, "samples in leaf %zu, chain to lli's main %zu\n", leaf,
		chain);
	CHECK(leaf >= 100);
	CHECK(chain * 100 >= leaf * 99);
	CHECK(run.js.gdb_processes == 1 && run.js.gdb_objects >= 1);
	CHECK(run.js.names >= 3 && run.js.names_lost == 0);
	CHECK_EQ(run.js.regenerations, 0);
	check_sidecar(run.jit_dir, pcs, want, 3);
	jit_run_close(&run);
	return T_EXIT_PASS;
}
