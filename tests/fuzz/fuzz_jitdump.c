/* SPDX-License-Identifier: MIT */
/* Fuzz target: jitdump parsing, the name table and unwinding-info tables. */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "jit_names.h"
#include "jitdump_read.h"
#include "perf_map_internal.h"
#include "unwind_jit.h"

/*
 * The input is a jitdump file. It is parsed whole (as a finished file),
 * then again cut at a point chosen from its hash (as a live file caught
 * mid-record). Every record feeds a name table; the first few unwinding
 * records are built into CFI tables. Invariants:
 *   - parsing returns records delivered, or SP_ECORRUPT, SP_ETRUNCATED
 *     (not even a header), -EOPNOTSUPP, or -ENOMEM under an injected
 *     failure; parsed bytes plus the partial tail never exceed the input;
 *   - a cut input never delivers more records than the whole one, and
 *     delivers the same ones up to the cut;
 *   - a lookup hit covers the address asked for and has a name; a line
 *     lookup never reads outside the table;
 *   - table building returns 0, SP_ECORRUPT, -E2BIG or -ENOMEM;
 *   - every allocation is returned.
 */
#define MAX_CODES 64
#define MAX_TABLES 4

struct ctx {
	struct sp__jit_names *names;
	const struct sp__mem *mem;
	struct fuzz_alloc *fa;
	uint64_t addr[MAX_CODES];
	uint64_t time[MAX_CODES];
	size_t ncodes;
	size_t tables;
	uint64_t ids; /* hash of the record ids, in order */
};

static bool split(const char *name, size_t len, const char **func,
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

static void build_table(struct ctx *c, const struct sp__jitdump_unwind *u)
{
	struct sp__cfi_table *t = NULL;
	int err;

	if (c->tables++ >= MAX_TABLES)
		return;
	err = sp__cfi_table_from_eh_frame(c->mem, u->eh_frame, u->eh_frame_len,
					  0x100000000ull, &t);
	FUZZ_CHECK(err == 0 || err == SP_ECORRUPT || err == -E2BIG ||
		   (err == -ENOMEM && c->fa->failed));
	if (err == 0) {
		uint64_t base, span;

		sp__cfi_table_range(t, &base, &span);
		FUZZ_CHECK(span == 0 || base + span > base || base + span == 0);
		sp__cfi_table_free(t);
	}
}

static int on_record(void *ctx, const struct sp__jitdump_header *h,
		     const struct sp__jitdump_record *rec)
{
	struct ctx *c = ctx;

	c->ids = c->ids * 31 + rec->id + 1;
	if (rec->id == SP__JITDUMP_CODE_LOAD && c->ncodes < MAX_CODES) {
		FUZZ_CHECK(rec->u.load.code_addr + rec->u.load.code_size >=
			   rec->u.load.code_addr);
		c->addr[c->ncodes] = rec->u.load.code_addr;
		c->time[c->ncodes++] = rec->timestamp;
	}
	if (rec->id == SP__JITDUMP_UNWINDING_INFO)
		build_table(c, &rec->u.unwind);
	return c->names ? sp__jit_names_add(c->names, h, rec) : 0;
}

static void lookups(const struct ctx *c, uint64_t h)
{
	const struct sp__jit_code *code;
	const char *file;
	uint32_t line;
	size_t i;

	for (i = 0; i < c->ncodes + 4; i++) {
		uint64_t a = i < c->ncodes ? c->addr[i] + (h >> (i % 8)) % 8 :
					     h * (i + 1);
		uint64_t t = i < c->ncodes ? c->time[i] : h >> 3;

		code = sp__jit_names_find(c->names, a, t);
		if (!code)
			continue;
		FUZZ_CHECK(code->start <= a && a < code->end);
		FUZZ_CHECK(code->name != NULL);
		if (sp__jit_names_line(c->names, code, a, &file, &line))
			FUZZ_CHECK(file != NULL);
	}
}

static int parse(const uint8_t *data, size_t size, struct ctx *c,
		 struct sp__jitdump_stats *st)
{
	uint8_t *copy = fuzz_dup(data, size);
	int r = sp__jitdump_parse_buffer(copy, size, on_record, c, st);

	FUZZ_CHECK(r >= 0 || r == SP_ECORRUPT || r == SP_ETRUNCATED ||
		   r == -EOPNOTSUPP || (r == -ENOMEM && c->fa->failed));
	FUZZ_CHECK(st->partial <= size && st->bytes <= size - st->partial);
	free(copy);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t h = fuzz_hash(data, size);
	struct sp__jitdump_stats whole, cut;
	struct ctx c = { 0 }, c2 = { 0 };
	struct fuzz_alloc fa;
	struct sp__mem mem;
	size_t at = size ? (size_t)(h % size) : 0;
	int err;

	fuzz_alloc_init(&fa, (h & 7) == 0 ? 1 + (h >> 3) % 12 : 0);
	sp__mem_init(&mem, &fa.hook);
	c.mem = c2.mem = &mem;
	c.fa = c2.fa = &fa;
	err = sp__jit_names_new(&mem, split, &c.names);
	FUZZ_CHECK(err == 0 || (err == -ENOMEM && fa.failed));
	if (err)
		return 0;
	parse(data, size, &c, &whole);
	err = sp__jit_names_finish(c.names);
	FUZZ_CHECK(err == 0 || (err == -ENOMEM && fa.failed));
	if (err == 0)
		lookups(&c, h);
	sp__jit_names_free(c.names);

	/* The same bytes cut short: a prefix of the same records. */
	c2.tables = MAX_TABLES;
	parse(data, at, &c2, &cut);
	FUZZ_CHECK(cut.records <= whole.records || fa.failed);
	if (!whole.err && !fa.failed && cut.records == whole.records)
		FUZZ_CHECK(c2.ids == c.ids);
	FUZZ_CHECK(fa.outstanding == 0);
	return 0;
}
