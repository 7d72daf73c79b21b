/* SPDX-License-Identifier: MIT */
/* Names and lines of JIT code from jitdump records, by address and time. */
#ifndef SP_JIT_JIT_NAMES_H
#define SP_JIT_JIT_NAMES_H

#include <stdbool.h>
#include <stdint.h>

#include "jitdump.h"
#include "mem.h"

/*
 * A name table is built from the records of one or more jitdump files
 * (a producer's own dump, or the one the recorder writes for GDB JIT
 * objects), then frozen and only read.
 *
 * JIT code comes and goes: a code load makes [addr, addr + size) mean a
 * name from its timestamp on, a code move makes the same code appear at
 * a new address from the move's timestamp on, and a later load over the
 * same addresses (code freed and the memory reused) takes over from its
 * own timestamp on. So a lookup names an address *at a time*:
 *
 *   the covering entry with the greatest (time, file order) at or before
 *   the time asked; when every covering entry is later (clocks that
 *   disagree by a little), the earliest one.
 *
 * Dumps with architecture timestamps (not comparable with perf's clock)
 * get time 0 for every entry, so the newest entry in file order wins.
 *
 * Layout: entries sorted by start (file order among equal starts) with
 * max_end[i] = the largest end among entries[0..i], which bounds the
 * backward walk of a lookup (the perf-map table's scheme, plus time).
 * A walk visits at most SP__JIT_NAMES_WALK_MAX covering entries, so a
 * dump stacking a million loads on one address cannot make lookups slow;
 * past that the best entry seen so far is the answer.
 *
 * Bounds (hostile dumps): at most SP__JIT_NAMES_MAX_CODES entries,
 * SP__JIT_NAMES_MAX_LINES line entries and SP__JIT_NAMES_MAX_STR bytes of
 * strings; names are cut at SP__JIT_NAME_MAX bytes (at a UTF-8 boundary).
 * What does not fit is counted in @dropped and left out.
 */

#define SP__JIT_NAMES_MAX_CODES (1u << 22)
#define SP__JIT_NAMES_MAX_LINES (1u << 24)
#define SP__JIT_NAMES_MAX_STR (256u << 20)
#define SP__JIT_NAME_MAX 4096
#define SP__JIT_NAMES_WALK_MAX 4096

/*
 * Optional splitter of a name into a function and a file (Python's
 * "py::func:file.py"): returns true and fills the two spans (copied
 * before the next call), or false to keep the name whole.
 */
typedef bool (*sp__jit_split_fn)(const char *name, size_t len,
				 const char **func, size_t *func_len,
				 const char **file, size_t *file_len);

struct sp__jit_code {
	uint64_t start;
	uint64_t end;
	uint64_t time; /* ns, CLOCK_MONOTONIC; 0 when unknown */
	uint64_t seq;  /* order of the record across everything fed */
	const char *name;
	const char *file;   /* the splitter's file part, else NULL */
	int64_t line_delta; /* moved code: add to the lines' addresses */
	uint32_t first_line;
	uint32_t nlines;
	uint32_t pid; /* of the code-load record */
};

struct sp__jit_line {
	uint64_t addr;
	const char *file;
	uint32_t line;
	uint32_t pad;
};

struct sp__jit_names_stats {
	uint64_t codes;
	uint64_t lines;
	uint64_t moves_unmatched; /* a move of code never loaded */
	uint64_t debug_unmatched; /* debug info not followed by its load, or
				     with lines outside that code */
	uint64_t dropped;	  /* entries, lines or strings over a bound */
};

struct sp__jit_names;

int sp__jit_names_new(const struct sp__mem *mem, sp__jit_split_fn split,
		      struct sp__jit_names **out);
void sp__jit_names_free(struct sp__jit_names *n);

/*
 * Adds one record (a sp__jitdump_cb: @ctx is the table). Only loads,
 * moves and debug info matter; the rest is ignored. Returns 0 or
 * -ENOMEM; records over a bound are dropped and counted, not errors.
 */
int sp__jit_names_add(void *ctx, const struct sp__jitdump_header *h,
		      const struct sp__jitdump_record *rec);

/* Sorts and indexes what was added; no more adds after it. 0 or -ENOMEM. */
int sp__jit_names_finish(struct sp__jit_names *n);

/*
 * The entry naming @addr at time @time_ns (rules above), or NULL. Only
 * after sp__jit_names_finish(). Borrowed: valid until the table is freed.
 */
const struct sp__jit_code *sp__jit_names_find(const struct sp__jit_names *n,
					      uint64_t addr, uint64_t time_ns);

/*
 * The source line of @addr inside @code: the last line entry at or below
 * it. Returns false when the code has none there.
 */
bool sp__jit_names_line(const struct sp__jit_names *n,
			const struct sp__jit_code *code, uint64_t addr,
			const char **file, uint32_t *line);

const struct sp__jit_names_stats *
sp__jit_names_stats(const struct sp__jit_names *n);

#endif /* SP_JIT_JIT_NAMES_H */
