/* SPDX-License-Identifier: MIT */
/* Fuzz target: perf-map parsing, lookups and Python frame splitting. */
#define _GNU_SOURCE
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "perf_map_internal.h"
#include "sym_internal.h"

/*
 * The input is perf-map text. After parsing, addresses derived from the
 * input (every hex number that starts a line, +/- 1, and hashed values)
 * are looked up. Invariants:
 *   - a hit is a native JIT frame whose name occurs in the input, or a
 *     Python frame with a non-empty function and file;
 *   - for a native hit, addr - offset is a start written in the input,
 *     i.e. the answer lies in a declared range, never past it;
 *   - the Python splitter never reads outside the name it is given;
 *   - every allocation is returned; an injected failure is -ENOMEM only.
 */
#define MAX_ADDRS 512

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)(c | 0x20);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The leading hex number of each line (model of the START field). */
static size_t line_starts(const char *t, size_t size, uint64_t *out)
{
	size_t i = 0, n = 0, j;
	uint64_t v;

	while (i < size && n + 3 <= MAX_ADDRS) {
		while (i < size && (t[i] == ' ' || t[i] == '\t'))
			i++;
		if (i + 1 < size && t[i] == '0' && (t[i + 1] | 0x20) == 'x')
			i += 2;
		for (v = 0, j = i; j < size && j - i < 16 && hexval(t[j]) >= 0;
		     j++)
			v = v << 4 | (uint64_t)hexval(t[j]);
		out[n++] = v;
		out[n++] = v + 1;
		out[n++] = v - 1;
		while (i < size && t[i] != '\n')
			i++;
		i++;
	}
	return n;
}

static void check_hit(const uint8_t *data, size_t size, uint64_t addr,
		      const struct sp_resolved_frame *f)
{
	FUZZ_CHECK(f->name != NULL);
	FUZZ_CHECK(f->origin == SP_ORIGIN_PERF_MAP);
	FUZZ_CHECK(f->flags == SP_RESOLVED_JIT);
	FUZZ_CHECK(f->pc == addr);
	FUZZ_CHECK(f->module && strcmp(f->module, "fuzz") == 0);
	if (f->kind == SP_RESOLVED_PYTHON) {
		FUZZ_CHECK(f->name[0] && f->file && f->file[0]);
		FUZZ_CHECK(f->offset == 0);
		return;
	}
	FUZZ_CHECK(f->kind == SP_RESOLVED_NATIVE);
	FUZZ_CHECK(f->name[0] && f->offset <= addr);
	FUZZ_CHECK(memmem(data, size, f->name, strlen(f->name)) != NULL);
}

static void split_name(const uint8_t *data, size_t size)
{
	struct sp__py_name py;
	uint8_t *copy = fuzz_dup(data, size);

	if (sp__python_frame_split((const char *)copy, size, &py)) {
		FUZZ_CHECK(py.func_len > 0 && py.file_len > 0);
		FUZZ_CHECK(py.func >= (const char *)copy + 4);
		FUZZ_CHECK(py.func + py.func_len <= (const char *)copy + size);
	}
	free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t h = fuzz_hash(data, size), addrs[MAX_ADDRS + 8];
	struct sp__perf_map *map = NULL;
	struct sp_resolved_frame f;
	struct fuzz_alloc fa;
	struct sp__mem mem;
	size_t n, i;
	int err;

	fuzz_alloc_init(&fa, (h & 7) == 0 ? 1 + (h >> 3) % 6 : 0);
	sp__mem_init(&mem, &fa.hook);
	split_name(data, size);
	err = sp__perf_map_parse(&mem, (const char *)data, size, "fuzz", &map);
	FUZZ_CHECK(err == 0 || (err == -ENOMEM && fa.failed));
	if (err == 0) {
		n = line_starts((const char *)data, size, addrs);
		for (i = 0; i < 8; i++)
			addrs[n++] = h = h * 6364136223846793005ull + 1;
		for (i = 0; i < n; i++)
			if (sp__perf_map_lookup(map, addrs[i], &f) == 1)
				check_hit(data, size, addrs[i], &f);
		sp__perf_map_free(map);
	}
	FUZZ_CHECK(fa.outstanding == 0);
	return 0;
}
