/* SPDX-License-Identifier: MIT */
/* Demangling C++ (Itanium ABI) and Rust (legacy and v0) symbol names. */

/*
 * The demanglers are libiberty's (Debian libiberty-dev, a static archive
 * linked into libstackpulse): the very code behind c++filt, and behind
 * libstdc++'s __cxa_demangle, which is built from the same cp-demangle.c.
 * Using it directly instead of __cxa_demangle keeps libstackpulse a C
 * library with no C++ runtime to load, gives Rust (legacy and v0) from
 * the same package, and its callback interface lets the output go into
 * memory of the symbolizer's own allocator. Names come out as c++filt
 * prints them: the same flags (parameters, qualifiers, verbose), Rust
 * tried first (legacy Rust names are valid Itanium names too), and a
 * "@suffix" (versioned and PLT symbols) kept after the demangled part,
 * as c++filt treats '@' as the end of a word.
 *
 * Names are hostile (symbol tables of any file, perf maps of any
 * process). libiberty bounds its recursion, but sizes its working arrays
 * on the stack by the length of the name (about 60 bytes per byte), so
 * longer names than SP__DEMANGLE_IN_MAX stay mangled; the output is
 * capped at OUT_MAX bytes, past which the name also stays mangled.
 */
#include <errno.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "sym_internal.h"

#define OUT_MAX (64u << 10)
#define FLAGS (DMGL_PARAMS | DMGL_ANSI | DMGL_VERBOSE)

struct out {
	const struct sp__mem *mem;
	char *buf;
	size_t len, cap;
	bool failed;
};

static void put(struct out *o, const char *s, size_t n)
{
	size_t cap = o->cap ? o->cap : 256;
	char *p;

	if (o->failed)
		return;
	if (n > OUT_MAX - o->len) {
		o->failed = true;
		return;
	}
	while (cap < o->len + n + 1)
		cap *= 2;
	if (cap != o->cap) {
		p = sp__mem_realloc(o->mem, o->buf, o->cap, cap);
		if (!p) {
			o->failed = true;
			return;
		}
		o->buf = p;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

static void sink(const char *s, size_t n, void *opaque)
{
	put(opaque, s, n);
}

bool sp__demangle_candidate(const char *name)
{
	return name && name[0] == '_' && (name[1] == 'Z' || name[1] == 'R');
}

/* Demangles @word (NUL-terminated) into @o; false when it is no name. */
static bool demangle_word(struct out *o, const char *word)
{
	if (rust_demangle_callback(word, FLAGS, sink, o) && !o->failed)
		return true;
	o->len = 0;
	o->failed = false;
	return cplus_demangle_v3_callback(word, FLAGS, sink, o) && !o->failed;
}

char *sp__demangle(const struct sp__mem *mem, const char *name, size_t *size)
{
	char word[SP__DEMANGLE_IN_MAX + 1];
	const char *at;
	struct out o = { .mem = mem };
	size_t n;

	if (!sp__demangle_candidate(name))
		return NULL;
	at = strchr(name, '@');
	n = at ? (size_t)(at - name) : strlen(name);
	if (n > SP__DEMANGLE_IN_MAX)
		return NULL;
	memcpy(word, name, n);
	word[n] = '\0';
	if (demangle_word(&o, word) && at)
		put(&o, at, strlen(at));
	if (o.failed || !o.len) {
		sp__mem_free(mem, o.buf, o.cap);
		return NULL;
	}
	*size = o.cap;
	return o.buf;
}
