/* SPDX-License-Identifier: MIT */
/* Python runtime detection and its tag-6 marker records (§1.7). */
#ifndef SP_ENGINE_PYTHON_H
#define SP_ENGINE_PYTHON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "process.h"

/*
 * Whether the file name @base (no directory) is a CPython runtime:
 * python, python3, python3.12, python3.13t (ABI letters d/t), or
 * libpython<version>.so[.N...] / libpython<version>.dylib; the
 * "python"/"libpython" prefix is case-insensitive. pypy3,
 * python3.12-config, libpythonx.so and libnotpython.so are not.
 */
bool sp__python_is_runtime_basename(const char *base, size_t len);

/*
 * Whether the process runs with perf support: PYTHONPERFSUPPORT=1 in its
 * environment, or -Xperf / -X perf / -X perf,... on its command line.
 * @environ and @cmdline are NUL-separated /proc contents.
 */
bool sp__python_perf_enabled(const char *environ, size_t environ_len,
			     const char *cmdline, size_t cmdline_len);

/*
 * After module @m of @proc was registered: writes tag 6 true when @m is a
 * Python runtime and the process (probed once per exec) has perf support.
 */
int sp__python_note_module(struct sp__procs *procs, struct sp__process *proc,
			   const struct sp__module *m);

/* Writes tag 6 false if @proc is marked (exec, death, module change). */
int sp__python_unmark(struct sp__procs *procs, struct sp__process *proc);

/* After a module change seen by a reconcile: unmark, then mark again. */
int sp__python_recheck(struct sp__procs *procs, struct sp__process *proc);

#endif /* SP_ENGINE_PYTHON_H */
