/* SPDX-License-Identifier: MIT */
/* Private interface between perf_map.c and python_frame.c. */
#ifndef SP_SYM_PERF_MAP_INTERNAL_H
#define SP_SYM_PERF_MAP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

/*
 * A "py::" perf-map name split into a Python function and file. Both
 * point into the name, except @file which may be the literal "~" (no
 * file known). Neither is NUL-terminated.
 */
struct sp__py_name {
	const char *func;
	size_t func_len;
	const char *file;
	size_t file_len;
};

/*
 * Splits perf-map symbol @name (@len bytes) when it is a Python frame
 * written by CPython's perf trampoline ("py::func:/path/file.py").
 * Returns false for other names and for an empty function, which stay
 * native perf-map symbols.
 */
bool sp__python_frame_split(const char *name, size_t len,
			    struct sp__py_name *out);

/*
 * sp__python_frame_split in the shape of a jitdump name splitter
 * (sp__jit_split_fn of jit_names.h): the jitdump names CPython writes
 * (-X perf_jit) are the same "py::func:file" strings.
 */
bool sp__python_jit_split(const char *name, size_t len, const char **func,
			  size_t *func_len, const char **file,
			  size_t *file_len);

#endif /* SP_SYM_PERF_MAP_INTERNAL_H */
