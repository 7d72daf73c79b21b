/* SPDX-License-Identifier: MIT */
/* The kernel text module: kernel callchain frames pinned to one module. */
#ifndef SP_ENGINE_KERNEL_MODULE_H
#define SP_ENGINE_KERNEL_MODULE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stackpulse/spool.h>

#include "mem.h"

struct sp__procs;

/* Name of the module, as perf names the kernel's text mapping. */
#define SP__KMOD_PATH "[kernel.kallsyms]"
#define SP__KALLSYMS "/proc/kallsyms"

/** struct sp__kmod is the kernel text module of one recorder. */
struct sp__kmod {
	uint64_t start; /* runtime _text (KASLR applied) */
	uint64_t end;	/* _etext, exclusive */
	uint32_t id;	/* spool module id, valid when @ok */
	bool tried;	/* registration was attempted (once per recorder) */
	bool ok;	/* the module record is in the spool */
};

/*
 * Finds the kernel text range in kallsyms file @path: the lowest of
 * _text/_stext and _etext, core kernel symbols only. Reads @path in
 * chunks and stops once both are known.
 * Returns 0, -ENOENT (no usable range: missing symbols, or addresses
 * hidden as zeros by kptr_restrict), -ENOMEM or -errno from open/read.
 */
int sp__kmod_read_range(const struct sp__mem *mem, const char *path,
			uint64_t *start, uint64_t *end);

/*
 * Registers the kernel text module @k in @procs's spool when @kernel
 * (kernel capture is on), at most once. An unreadable kallsyms is no
 * error: kernel frames then stay unpinned. Returns 0 or a writer error.
 */
int sp__kmod_open(struct sp__kmod *k, struct sp__procs *procs, bool kernel);

/*
 * Fills @f as the kernel frame at @ip: pinned to the kernel text module
 * when it covers @ip, unpinned otherwise (module code, BPF, no module).
 * Registers the module first (sp__kmod_open) if nobody did yet.
 */
void sp__kmod_frame(struct sp__kmod *k, struct sp__procs *procs, bool kernel,
		    uint64_t ip, struct sp_frame *f);

#endif /* SP_ENGINE_KERNEL_MODULE_H */
