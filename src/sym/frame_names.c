/* SPDX-License-Identifier: MIT */
/* Frame names and flags: Python runtime and eval-frame rules, address-only names, entries. */

/*
 * The display rules of research/stackpulse-features.md §1.10 and the
 * Python-runtime basename matcher of §1.7 live here, together with the
 * constructor of cache entries, which copies a resolved chain and its
 * strings into one allocation so the entry owns everything it points to
 * except the module path it shares with the spool.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "symbolizer_internal.h"

#define DELETED_SUFFIX " (deleted)"

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static char lower(char c)
{
	return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c;
}

static bool has_prefix_ci(const char *s, size_t len, const char *prefix)
{
	size_t i, n = strlen(prefix);

	if (len < n)
		return false;
	for (i = 0; i < n; i++)
		if (lower(s[i]) != prefix[i])
			return false;
	return true;
}

/* Skips "3", "3.12", "3.12.1": digits separated by single dots. */
static size_t skip_version(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len && is_digit(s[i])) {
		while (i < len && is_digit(s[i]))
			i++;
		if (i + 1 < len && s[i] == '.' && is_digit(s[i + 1]))
			i++;
	}
	return i;
}

/* ABI suffix letters after the version: "d", "t", "td". */
static size_t skip_abi(const char *s, size_t len)
{
	size_t i = 0;

	while (i < len && i < 2 && (s[i] == 'd' || s[i] == 't'))
		i++;
	return i;
}

/* "python", "python3", "python3.12", "python3.13t". */
static bool is_python_binary(const char *b, size_t len)
{
	size_t i = 6;

	if (!has_prefix_ci(b, len, "python"))
		return false;
	if (i == len)
		return true;
	i += skip_version(b + i, len - i);
	if (i == 6)
		return false;
	i += skip_abi(b + i, len - i);
	return i == len;
}

/* "libpython3.12.so", "libpython3.12.so.1.0", "libpython3.13t.so", ".dylib". */
static bool is_libpython(const char *b, size_t len)
{
	size_t i = 9, v;

	if (!has_prefix_ci(b, len, "libpython"))
		return false;
	v = skip_version(b + i, len - i);
	if (!v)
		return false;
	i += v;
	i += skip_abi(b + i, len - i);
	if (len - i == 6 && memcmp(b + i, ".dylib", 6) == 0)
		return true;
	if (len - i < 3 || memcmp(b + i, ".so", 3) != 0)
		return false;
	for (i += 3; i < len; i++)
		if (!is_digit(b[i]) && b[i] != '.')
			return false;
	return true;
}

bool sp__is_python_runtime_path(const char *path)
{
	const char *b;
	size_t len, n = strlen(DELETED_SUFFIX);

	if (!path)
		return false;
	b = sp__sym_basename(path);
	len = strlen(b);
	if (len > n && memcmp(b + len - n, DELETED_SUFFIX, n) == 0)
		len -= n;
	return is_python_binary(b, len) || is_libpython(b, len);
}

bool sp__is_eval_frame_name(const char *name)
{
	if (!name)
		return false;
	if (strstr(name, "PyEval_EvalFrameDefault") ||
	    strstr(name, "PyEval_EvalFrameEx"))
		return true;
	if (strncmp(name, "_TAIL_CALL_", 11) != 0 &&
	    strncmp(name, "TAIL_CALL_", 10) != 0)
		return false;
	return strstr(name, ".llvm.") != NULL;
}

const char *sp__sym_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

bool sp__sym_is_pseudo_path(const char *path)
{
	return path[0] == '[' && strcmp(path, "[vdso]") != 0;
}

void sp__sym_address_name(char *buf, size_t len, const char *prefix,
			  uint64_t ip)
{
	snprintf(buf, len, "%s+0x%" PRIx64, prefix, ip);
}

void sp__sym_unknown_name(char *buf, size_t len, uint64_t ip)
{
	snprintf(buf, len, "<0x%" PRIx64 ">", ip);
}

static size_t str_bytes(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

/* Copies @s to *@cursor and advances it; NULL stays NULL. */
static const char *copy_str(char **cursor, const char *s)
{
	size_t n;
	char *dst = *cursor;

	if (!s)
		return NULL;
	n = strlen(s) + 1;
	memcpy(dst, s, n);
	*cursor += n;
	return dst;
}

/*
 * Demangled names of @frames (NULL where none), in blocks of @mem whose
 * sizes go to @sizes; the entry copies them, and entry_names_free drops
 * the blocks.
 */
static void entry_names(const struct sp__mem *mem,
			const struct sp_resolved_frame *frames, size_t n,
			char **names, size_t *sizes)
{
	size_t i;

	for (i = 0; i < n; i++) {
		names[i] = NULL;
		if (!frames[i].mangled_name &&
		    frames[i].kind != SP_RESOLVED_PYTHON)
			names[i] = sp__demangle(mem, frames[i].name, &sizes[i]);
	}
}

static void entry_names_free(const struct sp__mem *mem, char **names,
			     const size_t *sizes, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (names[i])
			sp__mem_free(mem, names[i], sizes[i]);
}

struct sp__sym_entry *sp__sym_entry_new(const struct sp__mem *mem, uint64_t key,
					const struct sp_resolved_frame *frames,
					size_t n, const char *borrowed_module,
					bool demangle)
{
	size_t i, bytes = sizeof(struct sp__sym_entry) + n * sizeof(*frames);
	char *names[SP_SYM_MAX_CHAIN] = { NULL };
	size_t sizes[SP_SYM_MAX_CHAIN];
	struct sp__sym_entry *e;
	char *cursor;

	if (n > SP_SYM_MAX_CHAIN)
		return NULL;
	if (demangle)
		entry_names(mem, frames, n, names, sizes);
	for (i = 0; i < n; i++) {
		bytes += str_bytes(frames[i].file);
		bytes += str_bytes(frames[i].mangled_name);
		bytes += str_bytes(frames[i].name);
		bytes += names[i] ? strlen(names[i]) + 1 : 0;
		if (frames[i].module != borrowed_module)
			bytes += str_bytes(frames[i].module);
	}
	e = sp__mem_alloc(mem, bytes);
	if (!e) {
		entry_names_free(mem, names, sizes, n);
		return NULL;
	}
	e->hdr.key = key;
	e->hdr.bytes = bytes;
	e->hdr.kind = SP_SYM_KIND_FRAME;
	e->hdr.reserved = 0;
	e->count = (uint32_t)n;
	e->reserved = 0;
	cursor = (char *)&e->frames[n];
	for (i = 0; i < n; i++) {
		e->frames[i] = frames[i];
		e->frames[i].name = copy_str(&cursor, frames[i].name);
		e->frames[i].mangled_name =
			copy_str(&cursor, frames[i].mangled_name);
		e->frames[i].file = copy_str(&cursor, frames[i].file);
		if (frames[i].module != borrowed_module)
			e->frames[i].module =
				copy_str(&cursor, frames[i].module);
		/* Demangled: the name a reader sees, the symbol beside it. */
		if (names[i]) {
			e->frames[i].mangled_name = e->frames[i].name;
			e->frames[i].name = copy_str(&cursor, names[i]);
		}
	}
	entry_names_free(mem, names, sizes, n);
	return e;
}

void sp__sym_entry_free(const struct sp__mem *mem, struct sp__sym_entry *entry)
{
	sp__mem_free(mem, entry, entry->hdr.bytes);
}
