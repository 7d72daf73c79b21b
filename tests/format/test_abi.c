/* SPDX-License-Identifier: MIT */
/* ABI of the public transparent structs: sizes and offsets never change silently. */
#include <stddef.h>

#include <stackpulse.h>

#include "check.h"

/* x86-64 / AArch64 LP64 layouts (R3, R19). */
_Static_assert(sizeof(struct sp_frame) == 24, "sp_frame");
_Static_assert(offsetof(struct sp_frame, module_id) == 16, "sp_frame");
_Static_assert(sizeof(struct sp_module) == 80, "sp_module");
_Static_assert(offsetof(struct sp_module, path) == 56, "sp_module");
_Static_assert(offsetof(struct sp_module, deactivated_at) == 76, "sp_module");
_Static_assert(sizeof(struct sp_thread) == 8, "sp_thread");
_Static_assert(sizeof(struct sp_stack_node) == 12, "sp_stack_node");
_Static_assert(sizeof(struct sp_sample) == 24, "sp_sample");
_Static_assert(offsetof(struct sp_sample, stack) == 20, "sp_sample");
_Static_assert(sizeof(struct sp_python_record) == 16, "sp_python_record");
_Static_assert(sizeof(struct sp_frame_context) == 40, "sp_frame_context");
_Static_assert(sizeof(struct sp_diag) == 168, "sp_diag");
_Static_assert(sizeof(struct sp_reader_opts) == 40, "sp_reader_opts");
_Static_assert(offsetof(struct sp_reader_opts, size) == 0, "opts size first");
_Static_assert(sizeof(struct sp_writer_opts) == 48, "sp_writer_opts");
_Static_assert(offsetof(struct sp_writer_opts, size) == 0, "opts size first");
_Static_assert(sizeof(struct sp_allocator) == 24, "sp_allocator");
/* The counters follow @size without padding (spulse record lists them). */
_Static_assert(sizeof(struct sp_jit_stats) == 144, "sp_jit_stats");
_Static_assert(offsetof(struct sp_jit_stats, jitdump_files) == 8,
	       "sp_jit_stats");
_Static_assert(offsetof(struct sp_jit_stats, names_lost) == 136,
	       "sp_jit_stats");
_Static_assert(sizeof(struct sp_logger) == 24, "sp_logger");
_Static_assert(sizeof(struct sp_sink_ops) == 32, "sp_sink_ops");
_Static_assert(sizeof(struct sp_sink_opts) == 48, "sp_sink_opts");
_Static_assert(offsetof(struct sp_sink_opts, flags) == 24, "sp_sink_opts");
_Static_assert(sizeof(struct sp_recorder_opts) == 96, "sp_recorder_opts");
_Static_assert(offsetof(struct sp_recorder_opts, mode) == 88,
	       "sp_recorder_opts");
_Static_assert(offsetof(struct sp_recorder_opts, max_depth) == 64,
	       "sp_recorder_opts");
_Static_assert(offsetof(struct sp_recorder_opts, jit_dir) == 72,
	       "sp_recorder_opts");
_Static_assert(offsetof(struct sp_recorder_opts, system) == 80,
	       "sp_recorder_opts");
_Static_assert(sizeof(struct sp_system_opts) == 56, "sp_system_opts");
_Static_assert(sizeof(struct sp_recording_summary) == 488,
	       "sp_recording_summary");
_Static_assert(offsetof(struct sp_recording_summary, size) == 0,
	       "sized output first");
_Static_assert(offsetof(struct sp_recording_summary, errors) == 120,
	       "sp_recording_summary");
_Static_assert(offsetof(struct sp_recording_summary, truncation_reasons) == 288,
	       "sp_recording_summary");
_Static_assert(offsetof(struct sp_recording_summary, jit_maps_failed) == 368,
	       "sp_recording_summary");
_Static_assert(offsetof(struct sp_recording_summary, switch_events) == 376,
	       "sp_recording_summary");
/* Appended by the off-CPU follow-up of issue 16: older callers keep theirs. */
_Static_assert(offsetof(struct sp_recording_summary, switch_in_unmatched) ==
		       424,
	       "sp_recording_summary");
_Static_assert(offsetof(struct sp_recording_summary, throttle_events) == 480,
	       "sp_recording_summary");
/* jobs_written_by_workers appended by the write-behind of issue 15. */
_Static_assert(sizeof(struct sp_pipeline_stats) == 56, "sp_pipeline_stats");
/* One register set for every architecture: the indices change meaning. */
_Static_assert(SP_REGS_MAX >= SP_X86_64_NREGS, "sp_regs x86-64");
_Static_assert(SP_REGS_MAX >= SP_AARCH64_NREGS, "sp_regs AArch64");
_Static_assert(sizeof(struct sp_regs) == 280, "sp_regs");
_Static_assert(offsetof(struct sp_regs, valid) == 264, "sp_regs");
_Static_assert(offsetof(struct sp_regs, arch) == 272, "sp_regs");
_Static_assert(offsetof(struct sp_regs, abi) == 276, "sp_regs");
_Static_assert(sizeof(((struct sp_regs *)0)->valid) * 8 >= SP_REGS_MAX,
	       "a valid bit per register");

int main(void)
{
	/* The error table: every code distinct from errno space and named. */
	CHECK(SP_ECORRUPT < -4000 + 1);
	CHECK_EQ_INT(SP_ECORRUPT, -4000);
	CHECK_EQ_INT(SP_ETRUNCATED, -4001);
	CHECK_EQ_INT(SP_ENOCFI, -4008);
	CHECK(strcmp(sp_version(), "0.1.0") == 0);
	/* The architecture tags and their names. */
	CHECK(sp_unwind_arch() == SP_ARCH_X86_64 ||
	      sp_unwind_arch() == SP_ARCH_AARCH64);
	CHECK(strcmp(sp_arch_name(SP_ARCH_X86_64), "x86_64") == 0);
	CHECK(strcmp(sp_arch_name(SP_ARCH_AARCH64), "aarch64") == 0);
	CHECK(strcmp(sp_arch_name(SP_ARCH_NATIVE),
		     sp_arch_name(sp_unwind_arch())) == 0);
	CHECK(sp_arch_name(3) == NULL);
	return T_EXIT_PASS;
}
