/* SPDX-License-Identifier: MIT */
/* Kernel frames pinned to the [kernel.kallsyms] module, and still named. */

/*
 * wl_syscalls recorded with SP_RECORDER_KERNEL: the spool must hold
 * exactly one kernel module, "[kernel.kallsyms]" (pid -1, start = the
 * host's _text, end = _etext, file offset = start), every kernel frame
 * inside it must be pinned to it with its absolute address unchanged, and
 * the Symbolizer must still name them from kallsyms (kind KERNEL, origin
 * KERNEL_SYMBOLS, pc = the frame's address). A user-only recording of the
 * same workload has no kernel module at all.
 */
#include <string.h>

#include "kernel_module.h"
#include "rec_util.h"
#include "workload_paths.h"

/* The one kernel module of @defs; its id in *@id. */
static struct sp_module kernel_module(const struct sp_spool *defs, uint32_t *id,
				      uint32_t *count)
{
	struct sp_module m, found;
	uint32_t i;

	memset(&found, 0, sizeof(found));
	*count = 0;
	for (i = 0; i < sp_spool_module_count(defs); i++) {
		CHECK_OK(sp_spool_module(defs, i, &m));
		if (!m.is_kernel)
			continue;
		(*count)++;
		found = m;
		*id = i;
	}
	return found;
}

static void check_module(const struct sp_module *m)
{
	struct sp__mem mem;
	uint64_t start = 0, end = 0;

	sp__mem_init(&mem, NULL);
	CHECK_OK(sp__kmod_read_range(&mem, "/proc/kallsyms", &start, &end));
	CHECK_EQ(m->start, start);
	CHECK_EQ(m->end, end);
	CHECK_EQ(m->file_offset, m->start);
	CHECK_EQ_INT(m->pid, -1);
	CHECK_EQ(m->path_len, strlen("[kernel.kallsyms]"));
	CHECK_MEM(m->path, m->path_len, "[kernel.kallsyms]", m->path_len);
}

/* Every kernel frame: pinned when inside @m, named by the Symbolizer. */
static void check_frames(struct rec_run *run, const struct sp_module *m,
			 uint32_t id)
{
	const struct sp_resolved_frame *r;
	struct sp_symbolizer *sym;
	struct sp_frame f;
	uint32_t i, kernel = 0, pinned = 0, named = 0;

	CHECK_OK(sp_symbolizer_new(run->defs, NULL, &sym));
	for (i = 0; i < sp_spool_frame_count(run->defs); i++) {
		CHECK_OK(sp_spool_frame(run->defs, i, &f));
		if (f.mode != SP_FRAME_KERNEL)
			continue;
		kernel++;
		if (f.abs_ip >= m->start && f.abs_ip < m->end) {
			CHECK_EQ(f.module_id, id);
			CHECK_EQ(f.file_relative_ip, f.abs_ip);
			pinned++;
		} else {
			CHECK_EQ(f.module_id, SP_NO_MODULE);
		}
		CHECK(sp_symbolizer_resolve_frame(sym, i, run->pid, &r) >= 1);
		CHECK_EQ(r->pc, f.abs_ip);
		CHECK_EQ(r->kind, SP_RESOLVED_KERNEL);
		named += r->origin == SP_ORIGIN_KERNEL_SYMBOLS &&
			 strncmp(r->name, "[kernel]+", 9) != 0;
	}
	sp_symbolizer_free(sym);
	fprintf(stderr, "%u kernel frames, %u pinned, %u named\n", kernel,
		pinned, named);
	CHECK(kernel > 0);
	CHECK(pinned * 10 >= kernel * 9); /* core text: nearly all */
	CHECK_EQ(named, kernel);
}

int main(void)
{
	const char *const argv[] = { WL_SYSCALLS_PATH, REC_SECONDS, NULL };
	struct sp_module m;
	struct rec_run run;
	uint32_t id = 0, count;

	rec_require_perf(true);
	rec_launch(argv, SP_RECORDER_KERNEL, &run);
	CHECK_EQ(run.summary.kernel_enabled, 1);
	m = kernel_module(run.defs, &id, &count);
	CHECK_EQ(count, 1);
	check_module(&m);
	check_frames(&run, &m, id);
	rec_run_close(&run);

	rec_launch(argv, 0, &run);
	kernel_module(run.defs, &id, &count);
	CHECK_EQ(count, 0);
	rec_run_close(&run);
	return T_EXIT_PASS;
}
