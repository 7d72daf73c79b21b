/* SPDX-License-Identifier: MIT */
/* Python frames from perf-map names ("py::func:/path/file.py"). */
#include <string.h>

#include "perf_map_internal.h"

/*
 * CPython >= 3.12 run with -X perf (or PYTHONPERFSUPPORT=1) gives every
 * Python function a small trampoline and writes one perf-map line per
 * code object: "ADDR LEN py::<qualname>:<filename>". Other tools wrote
 * "py::func /path" or just "py::func", and some append ":<line>". Rules
 * (research/stackpulse-features.md §1.10):
 *
 *   body      = name after "py::", ASCII whitespace trimmed at both ends
 *   ':' before the first ' ' (or no ' ' at all)
 *             -> func = before the first ':', file = after it
 *   else ' '  -> func = before the first ' ', file = after it
 *   else      -> func = body, file = "~"
 *   file      loses a trailing ":<digits>"; an empty file becomes "~"
 *   func ""   -> not a Python frame (the caller keeps a native symbol)
 *
 * "First space" means the ASCII space character only, as in the format
 * CPython writes; the file is not trimmed further.
 */

static bool is_ascii_ws(char c)
{
	/* The set of Rust's u8::is_ascii_whitespace(): no vertical tab. */
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

/* Drops a trailing ":<digits>" (a line number some writers append). */
static size_t strip_line_suffix(const char *file, size_t len)
{
	size_t i = len;

	while (i > 0 && file[i - 1] >= '0' && file[i - 1] <= '9')
		i--;
	if (i < len && i > 0 && file[i - 1] == ':')
		return i - 1;
	return len;
}

bool sp__python_frame_split(const char *name, size_t len,
			    struct sp__py_name *out)
{
	const char *b, *e, *sp, *colon, *cut;

	if (len < 4 || memcmp(name, "py::", 4) != 0)
		return false;
	b = name + 4;
	e = name + len;
	while (b < e && is_ascii_ws(*b))
		b++;
	while (e > b && is_ascii_ws(e[-1]))
		e--;
	sp = memchr(b, ' ', (size_t)(e - b));
	colon = memchr(b, ':', (size_t)(e - b));
	cut = colon && (!sp || colon < sp) ? colon : sp;
	out->func = b;
	out->func_len = (size_t)((cut ? cut : e) - b);
	if (out->func_len == 0)
		return false;
	out->file = cut ? cut + 1 : e;
	out->file_len =
		cut ? strip_line_suffix(cut + 1, (size_t)(e - cut - 1)) : 0;
	if (out->file_len == 0) {
		out->file = "~";
		out->file_len = 1;
	}
	return true;
}

bool sp__python_jit_split(const char *name, size_t len, const char **func,
			  size_t *func_len, const char **file, size_t *file_len)
{
	struct sp__py_name py;

	if (!sp__python_frame_split(name, len, &py))
		return false;
	*func = py.func;
	*func_len = py.func_len;
	*file = py.file;
	*file_len = py.file_len;
	return true;
}
