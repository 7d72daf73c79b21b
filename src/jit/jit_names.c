/* SPDX-License-Identifier: MIT */
/* The JIT name table: code loads, moves and line info, looked up by time. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "jit_names.h"
#include "map.h"
#include "vec.h"

/*
 * Build state beside the entries: the debug record waiting for its code
 * load, and (pid, code_index) -> the latest entry of that code, for
 * moves. The map cannot update a value in place, so it maps a key to a
 * slot of @latest, which can.
 */
struct sp__jit_names {
	struct sp__mem mem;
	struct sp__arena arena;
	sp__jit_split_fn split;
	struct sp__vec codes; /* struct sp__jit_code */
	struct sp__vec lines; /* struct sp__jit_line */
	struct sp__map by_index;
	struct sp__vec latest; /* uint32_t: index into codes */
	uint64_t *max_end;
	uint64_t seq;
	bool pending;
	uint64_t pending_addr;
	uint32_t pending_first;
	uint32_t pending_n;
	const char *last_file; /* the last line's file, for reuse */
	size_t last_file_len;
	bool finished;
	struct sp__jit_names_stats st;
};

int sp__jit_names_new(const struct sp__mem *mem, sp__jit_split_fn split,
		      struct sp__jit_names **out)
{
	struct sp__jit_names *n = sp__mem_calloc(mem, 1, sizeof(*n));

	if (!n)
		return -ENOMEM;
	n->mem = *mem;
	n->split = split;
	sp__arena_init(&n->arena);
	sp__vec_init(&n->codes, sizeof(struct sp__jit_code));
	sp__vec_init(&n->lines, sizeof(struct sp__jit_line));
	sp__vec_init(&n->latest, sizeof(uint32_t));
	sp__map_init(&n->by_index);
	*out = n;
	return 0;
}

void sp__jit_names_free(struct sp__jit_names *n)
{
	struct sp__mem mem;

	if (!n)
		return;
	mem = n->mem;
	sp__mem_free(&mem, n->max_end, n->max_end ? n->codes.len * 8 : 0);
	sp__vec_fini(&n->codes, &mem);
	sp__vec_fini(&n->lines, &mem);
	sp__vec_fini(&n->latest, &mem);
	sp__map_fini(&n->by_index, &mem);
	sp__arena_fini(&n->arena, &mem);
	sp__mem_free(&mem, n, sizeof(*n));
}

/* A string copy within the string bound; NULL when over it or no memory. */
static const char *keep_str(struct sp__jit_names *n, const char *s, size_t len,
			    int *err)
{
	const char *copy;

	if (len > SP__JIT_NAME_MAX) {
		len = SP__JIT_NAME_MAX;
		/* Cut before a UTF-8 continuation byte, not inside a char. */
		while (len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80)
			len--;
	}
	if (n->arena.total + len + 1 > SP__JIT_NAMES_MAX_STR) {
		n->st.dropped++;
		return NULL;
	}
	copy = sp__arena_strndup(&n->arena, &n->mem, s, len);
	if (!copy)
		*err = -ENOMEM;
	return copy;
}

/* ---- records ------------------------------------------------------------- */

static int add_debug(struct sp__jit_names *n,
		     const struct sp__jitdump_header *h,
		     const struct sp__jitdump_debug *dbg)
{
	struct sp__jitdump_debug d = *dbg;
	struct sp__jitdump_line l;
	struct sp__jit_line out;
	int err = 0;

	if (n->pending)
		n->st.debug_unmatched++;
	n->pending = true;
	n->pending_addr = d.code_addr;
	n->pending_first = (uint32_t)n->lines.len;
	n->pending_n = 0;
	while (sp__jitdump_next_line(h, &d, &l)) {
		if (n->lines.len >= SP__JIT_NAMES_MAX_LINES) {
			n->st.dropped++;
			break;
		}
		if (!n->last_file || n->last_file_len != l.file_len ||
		    memcmp(n->last_file, l.file, l.file_len) != 0) {
			n->last_file = keep_str(n, l.file, l.file_len, &err);
			n->last_file_len = n->last_file ? l.file_len : 0;
			if (!n->last_file)
				break;
		}
		out.addr = l.addr;
		out.file = n->last_file;
		out.line = l.line > 0 ? (uint32_t)l.line : 0;
		out.pad = 0;
		if (sp__vec_push(&n->lines, &n->mem, &out))
			return -ENOMEM;
		n->pending_n++;
	}
	return err;
}

static int cmp_line(const void *a, const void *b)
{
	const struct sp__jit_line *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/*
 * Whether every pending line entry lies in the code [start, end] it is
 * for. Line info that points elsewhere is not trusted at all: node 20
 * writes a garbled file name (bytes of a pointer, then the name's tail)
 * whose early NUL shifts every later entry of the record.
 */
static bool lines_inside(const struct sp__jit_names *n, uint64_t start,
			 uint64_t end)
{
	const struct sp__jit_line *l = sp__vec_at(&n->lines, n->pending_first);
	uint32_t i;

	for (i = 0; i < n->pending_n; i++)
		if (l[i].addr < start || l[i].addr > end)
			return false;
	return true;
}

/* Remembers entry @idx as the latest of (pid, code_index). */
static int set_latest(struct sp__jit_names *n, uint32_t pid, uint64_t index,
		      uint32_t idx)
{
	uint64_t key[3] = { pid, index, 0 };
	uint64_t hash = sp__map_hash(key);
	uint32_t slot;

	if (sp__map_get(&n->by_index, key, hash, &slot)) {
		*(uint32_t *)sp__vec_at(&n->latest, slot) = idx;
		return 0;
	}
	slot = (uint32_t)n->latest.len;
	if (sp__vec_push(&n->latest, &n->mem, &idx) ||
	    sp__map_put(&n->by_index, &n->mem, key, hash, slot))
		return -ENOMEM;
	return 0;
}

static int push_code(struct sp__jit_names *n, struct sp__jit_code *c,
		     uint64_t index)
{
	if (n->codes.len >= SP__JIT_NAMES_MAX_CODES) {
		n->st.dropped++;
		return 0;
	}
	c->seq = n->seq++;
	if (sp__vec_push(&n->codes, &n->mem, c))
		return -ENOMEM;
	n->st.codes++;
	return set_latest(n, c->pid, index, (uint32_t)(n->codes.len - 1));
}

static int add_load(struct sp__jit_names *n, const struct sp__jitdump_load *l,
		    uint64_t time)
{
	const char *func = l->name, *file = NULL;
	size_t func_len = l->name_len, file_len = 0;
	struct sp__jit_code c = { 0 };
	int err = 0;

	if (l->code_size == 0)
		return 0;
	c.start = l->code_addr;
	c.end = l->code_addr + l->code_size; /* the parser checked the sum */
	c.time = time;
	c.pid = l->pid;
	if (n->pending && n->pending_addr == l->code_addr &&
	    lines_inside(n, c.start, c.end)) {
		c.first_line = n->pending_first;
		c.nlines = n->pending_n;
		if (c.nlines > 1)
			qsort(sp__vec_at(&n->lines, c.first_line), c.nlines,
			      sizeof(struct sp__jit_line), cmp_line);
		n->st.lines += c.nlines;
	} else if (n->pending) {
		n->st.debug_unmatched++;
	}
	n->pending = false;
	if (n->split && !n->split(l->name, l->name_len, &func, &func_len, &file,
				  &file_len)) {
		func = l->name;
		func_len = l->name_len;
		file = NULL;
	}
	c.name = keep_str(n, func, func_len, &err);
	if (file && c.name)
		c.file = keep_str(n, file, file_len, &err);
	if (!c.name || (file && !c.file))
		return err;
	return push_code(n, &c, l->code_index);
}

static int add_move(struct sp__jit_names *n, const struct sp__jitdump_move *m,
		    uint64_t time)
{
	uint64_t key[3] = { m->pid, m->code_index, 0 };
	const struct sp__jit_code *old;
	struct sp__jit_code c;
	uint32_t slot;

	if (!sp__map_get(&n->by_index, key, sp__map_hash(key), &slot)) {
		n->st.moves_unmatched++;
		return 0;
	}
	old = sp__vec_at(&n->codes,
			 *(const uint32_t *)sp__vec_at(&n->latest, slot));
	c = *old;
	c.start = m->new_addr;
	c.end = m->new_addr +
		(m->code_size ? m->code_size : old->end - old->start);
	if (c.end < c.start || c.end == c.start)
		return 0;
	c.time = time;
	c.line_delta = old->line_delta + (int64_t)(m->new_addr - old->start);
	return push_code(n, &c, m->code_index);
}

int sp__jit_names_add(void *ctx, const struct sp__jitdump_header *h,
		      const struct sp__jitdump_record *rec)
{
	struct sp__jit_names *n = ctx;
	uint64_t time = sp__jitdump_monotonic(h) ? rec->timestamp : 0;

	if (n->finished)
		return -EINVAL;
	switch (rec->id) {
	case SP__JITDUMP_CODE_LOAD:
		return add_load(n, &rec->u.load, time);
	case SP__JITDUMP_CODE_MOVE:
		return add_move(n, &rec->u.move, time);
	case SP__JITDUMP_DEBUG_INFO:
		return add_debug(n, h, &rec->u.debug);
	default:
		return 0;
	}
}

/* ---- index and lookups ---------------------------------------------------- */

static int cmp_code(const void *a, const void *b)
{
	const struct sp__jit_code *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int sp__jit_names_finish(struct sp__jit_names *n)
{
	const struct sp__jit_code *c;
	uint64_t m = 0;
	size_t i;

	if (n->finished)
		return 0;
	n->finished = true;
	if (n->pending)
		n->st.debug_unmatched++;
	sp__map_fini(&n->by_index, &n->mem);
	sp__vec_fini(&n->latest, &n->mem);
	if (!n->codes.len)
		return 0;
	qsort(n->codes.data, n->codes.len, sizeof(struct sp__jit_code),
	      cmp_code);
	n->max_end = sp__mem_calloc(&n->mem, n->codes.len, sizeof(uint64_t));
	if (!n->max_end)
		return -ENOMEM;
	c = n->codes.data;
	for (i = 0; i < n->codes.len; i++) {
		if (c[i].end > m)
			m = c[i].end;
		n->max_end[i] = m;
	}
	return 0;
}

/* Is @c a better answer than @best for time @t (see jit_names.h)? */
static bool better(const struct sp__jit_code *c,
		   const struct sp__jit_code *best, uint64_t t)
{
	bool c_ok = c->time <= t, b_ok;

	if (!best)
		return true;
	b_ok = best->time <= t;
	if (c_ok != b_ok)
		return c_ok;
	if (c_ok) /* both at or before t: the latest */
		return c->time != best->time ? c->time > best->time :
					       c->seq > best->seq;
	return c->time != best->time ? c->time < best->time :
				       c->seq < best->seq;
}

const struct sp__jit_code *sp__jit_names_find(const struct sp__jit_names *n,
					      uint64_t addr, uint64_t time_ns)
{
	const struct sp__jit_code *codes = n->codes.data, *best = NULL;
	size_t lo = 0, hi = n->codes.len, mid, seen = 0;

	if (!n->max_end)
		return NULL;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (codes[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* codes[< lo] start at or below addr; walk back while any may cover. */
	while (lo-- > 0 && n->max_end[lo] > addr) {
		if (addr >= codes[lo].end)
			continue;
		if (better(&codes[lo], best, time_ns))
			best = &codes[lo];
		if (++seen >= SP__JIT_NAMES_WALK_MAX)
			break;
	}
	return best;
}

bool sp__jit_names_line(const struct sp__jit_names *n,
			const struct sp__jit_code *code, uint64_t addr,
			const char **file, uint32_t *line)
{
	const struct sp__jit_line *l;
	uint64_t want = addr - (uint64_t)code->line_delta;
	size_t lo = 0, hi = code->nlines, mid;

	if (!code->nlines)
		return false;
	l = sp__vec_at(&n->lines, code->first_line);
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (l[mid].addr <= want)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	*file = l[lo - 1].file;
	*line = l[lo - 1].line;
	return true;
}

const struct sp__jit_names_stats *
sp__jit_names_stats(const struct sp__jit_names *n)
{
	return &n->st;
}
