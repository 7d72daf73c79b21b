/* SPDX-License-Identifier: MIT */
/* JIT symbols from /tmp/perf-<pid>.map: safe opening, parsing, lookups. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_open.h"
#include "hash.h"
#include "hexnum.h"
#include "perf_map_internal.h"
#include "sym_internal.h"

/*
 * A perf map is text written by a JIT (V8 --perf-basic-prof, CPython
 * -X perf, the JVM agent, ...): one "START LEN NAME" line per code blob,
 * appended as code is generated. The file sits in a world-writable
 * directory and names a pid, so opening it is defensive: no symlink
 * (O_NOFOLLOW), no FIFO or device (regular files only, and O_NONBLOCK so
 * a FIFO cannot block the open), at most 64 MiB, owned by root or by the
 * user owning /proc/<pid> (our own euid when that process is gone, for
 * offline analysis of copied maps).
 *
 * Line rules (research/stackpulse-features.md §1.10):
 *   - leading ASCII whitespace skipped; START and LEN separated by runs
 *     of ASCII whitespace (space, \t, \n, \f, \r; not \v, not NBSP);
 *   - exactly one separator after LEN, so the name keeps any further
 *     spaces or tabs; a trailing '\r' of a CRLF line is stripped first;
 *   - hex with an optional 0x; bad hex, LEN 0, START+LEN past 2^64, an
 *     empty name or a name with a NUL byte drop the line.
 *
 * Memory: the file is read once into a buffer that stays and holds the
 * names (NUL-terminated in place: the byte after a name is its line's
 * '\n', a '\r', or the one spare byte at the end; a Python name is split
 * in place the same way), so a symbol costs one 16-byte entry besides
 * its text, and a 64 MiB map of the shortest lines ("0 1 f\n", 6 bytes)
 * at most 64 MiB + 11.2 M * 16 bytes = 243 MiB, under 4x its size (it
 * was 12x: names copied into an arena, 48-byte entries). Entries are
 * allocated once: the lines are counted first. A symbolizer also bounds
 * the maps it holds in total (SP_PERF_MAP_TOTAL_MAX, perf_map_internal
 * callers pass what is left): a map that would not fit is not loaded
 * (-ENOBUFS), and its frames stay address-only.
 *
 * Table: symbols sorted by start (file order among equal starts, so a
 * later line for reused code wins) with a stable LSD radix sort, 16 bits
 * a pass over the bits that differ (linear; maps written in address
 * order are recognized and not sorted at all), and blk_end[b] = the
 * largest end among syms[0 .. 64 b + 63], which bounds the backward walk
 * of a lookup: the answer is the last symbol with start <= addr < end,
 * ranges exactly as declared. Python names are split once, at parse
 * time, so a lookup allocates nothing.
 */
#define PERF_MAP_MAX (64ull << 20)
#define BLOCK_SHIFT 6

/*
 * An entry is 16 bytes: start, length, and the name's offset in the text
 * with its kind in the top bits. A Python file follows its function's
 * terminator. The rare LEN of 4 GiB - 1 or more is stored as LONG_LEN, its
 * end in long_ends[] (sorted by name offset: file order).
 */
#define NAME_OFF_MASK 0x0fffffffu
#define KIND_SHIFT 28
#define KIND_NATIVE 0u
#define KIND_PYTHON 1u	     /* the file is the next string */
#define KIND_PYTHON_TILDE 2u /* no file known: "~" */
#define LONG_LEN UINT32_MAX

struct pmsym {
	uint64_t start;
	uint32_t len;
	uint32_t name; /* offset | kind << KIND_SHIFT */
};

struct long_end {
	uint32_t name;
	uint64_t end;
};

struct sp__perf_map {
	struct sp__mem mem;
	char *text; /* the file, names NUL-terminated in it */
	size_t text_size;
	struct pmsym *syms;
	size_t n;
	size_t cap;
	uint64_t *blk_end; /* [(n + 63) / 64] */
	struct long_end *long_ends;
	size_t nlong, long_cap;
	char *path;
	size_t path_size;
};

static bool is_ws(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

/* The whole token must be hex (optional 0x) and fit in 64 bits. */
static bool parse_hex(const char *s, size_t n, uint64_t *out)
{
	size_t i = 0;

	if (n >= 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		i = 2;
	return i < n && sp__hex_prefix(s + i, n - i, out) == n - i;
}

/* Parses one hex field at s[*i]; leaves *i on the byte after it. */
static bool parse_field(const char *s, size_t n, size_t *i, uint64_t *out)
{
	size_t b;

	while (*i < n && is_ws(s[*i]))
		(*i)++;
	for (b = *i; *i < n && !is_ws(s[*i]);)
		(*i)++;
	return parse_hex(s + b, *i - b, out);
}

struct pmline {
	uint64_t start;
	uint64_t end;
	const char *name;
	size_t name_len;
};

static bool parse_line(const char *s, size_t n, struct pmline *pl)
{
	uint64_t len;
	size_t i = 0;

	if (n && s[n - 1] == '\r')
		n--;
	if (!parse_field(s, n, &i, &pl->start) || !parse_field(s, n, &i, &len))
		return false;
	/* i is on the one separator after LEN (or at the end). */
	if (i + 1 >= n || len == 0 ||
	    __builtin_add_overflow(pl->start, len, &pl->end))
		return false;
	pl->name = s + i + 1;
	pl->name_len = n - i - 1;
	return memchr(pl->name, '\0', pl->name_len) == NULL;
}

/* NUL-terminates @name[0..len) in place; its terminator is ours. */
static uint32_t cut(struct sp__perf_map *map, const char *p, size_t len)
{
	map->text[(size_t)(p - map->text) + len] = '\0';
	return (uint32_t)(p - map->text);
}

static uint64_t sym_end(const struct sp__perf_map *map, const struct pmsym *s)
{
	uint32_t name = s->name & NAME_OFF_MASK;
	size_t lo = 0, hi = map->nlong;

	if (s->len != LONG_LEN)
		return s->start + s->len;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (map->long_ends[mid].name < name)
			lo = mid + 1;
		else
			hi = mid;
	}
	return map->long_ends[lo].end; /* present: added with the entry */
}

static int map_add(struct sp__perf_map *map, const struct pmline *pl)
{
	struct pmsym *s = &map->syms[map->n];
	struct sp__py_name py;
	uint32_t kind = KIND_NATIVE, off;
	void *p = map->long_ends;

	if (!sp__python_frame_split(pl->name, pl->name_len, &py)) {
		off = cut(map, pl->name, pl->name_len);
	} else if (py.file < pl->name || py.file >= pl->name + pl->name_len) {
		kind = KIND_PYTHON_TILDE; /* the splitter's literal "~" */
		off = cut(map, py.func, py.func_len);
	} else {
		/*
		 * The function ends at its separator, the file at the name's
		 * end or at its ":<line>" suffix: both bytes become
		 * terminators, and the file starts right after the first.
		 */
		kind = KIND_PYTHON;
		cut(map, py.file, py.file_len);
		off = cut(map, py.func, py.func_len);
	}
	if (pl->end - pl->start >= LONG_LEN) {
		if (sp__mem_grow(&map->mem, &p, &map->long_cap, map->nlong,
				 sizeof(*map->long_ends), 4) < 0)
			return -ENOMEM;
		map->long_ends = p;
		map->long_ends[map->nlong++] =
			(struct long_end){ .name = off, .end = pl->end };
	}
	s->start = pl->start;
	s->len = pl->end - pl->start >= LONG_LEN ?
			 LONG_LEN :
			 (uint32_t)(pl->end - pl->start);
	s->name = off | kind << KIND_SHIFT;
	map->n++;
	return 0;
}

/*
 * Stable LSD radix sort of @a by start, 16 bits per pass, skipping the
 * digits in which all starts agree; @tmp holds @n entries, @count 65536.
 */
static void radix_sort(struct pmsym *a, struct pmsym *tmp, uint32_t *count,
		       size_t n)
{
	struct pmsym *from = a, *to = tmp, *t;
	uint64_t diff = 0;
	uint32_t sum, k;
	unsigned shift;
	size_t i;

	for (i = 1; i < n; i++)
		diff |= a[i].start ^ a[0].start;
	for (shift = 0; shift < 64; shift += 16) {
		if (!((diff >> shift) & 0xffff))
			continue;
		memset(count, 0, 65536 * sizeof(*count));
		for (i = 0; i < n; i++)
			count[(from[i].start >> shift) & 0xffff]++;
		for (i = 0, sum = 0; i < 65536; i++) {
			k = count[i];
			count[i] = sum;
			sum += k;
		}
		for (i = 0; i < n; i++)
			to[count[(from[i].start >> shift) & 0xffff]++] =
				from[i];
		t = from;
		from = to;
		to = t;
	}
	if (from != a)
		memcpy(a, from, n * sizeof(*a));
}

static bool is_sorted(const struct pmsym *a, size_t n)
{
	size_t i;

	for (i = 1; i < n; i++)
		if (a[i].start < a[i - 1].start)
			return false;
	return true;
}

/* Sorts (stable, by start) and builds the per-block running maximum. */
static int map_index(struct sp__perf_map *map)
{
	size_t nblk = (map->n + 63) >> BLOCK_SHIFT, i;
	struct pmsym *tmp;
	uint32_t *count;
	uint64_t m = 0;

	if (!map->n)
		return 0;
	if (!is_sorted(map->syms, map->n)) {
		tmp = sp__mem_alloc(&map->mem, map->n * sizeof(*tmp));
		count = sp__mem_alloc(&map->mem, 65536 * sizeof(*count));
		if (tmp && count)
			radix_sort(map->syms, tmp, count, map->n);
		sp__mem_free(&map->mem, tmp, map->n * sizeof(*tmp));
		sp__mem_free(&map->mem, count, 65536 * sizeof(*count));
		if (!tmp || !count)
			return -ENOMEM;
	}
	map->blk_end = sp__mem_alloc(&map->mem, nblk * sizeof(uint64_t));
	if (!map->blk_end)
		return -ENOMEM;
	for (i = 0; i < map->n; i++) {
		uint64_t end = sym_end(map, &map->syms[i]);

		if (end > m)
			m = end;
		map->blk_end[i >> BLOCK_SHIFT] = m;
	}
	return 0;
}

/* Upper bound of the lines in text[0..len): '\n' count + 1. */
static size_t count_lines(const char *text, size_t len)
{
	const char *p = text, *e = text + len;
	size_t n = 1;

	while ((p = memchr(p, '\n', (size_t)(e - p))) != NULL) {
		n++;
		p++;
	}
	return n;
}

/* Bytes a map of @len text bytes and @lines lines needs at its peak. */
static uint64_t peak_bytes(size_t len, size_t lines)
{
	return (uint64_t)len + 1 + 2 * (uint64_t)lines * sizeof(struct pmsym) +
	       (lines / 64 + 1) * sizeof(uint64_t);
}

/*
 * Parses map->text[0..len) (len + 1 bytes allocated) if its peak memory
 * fits @budget. Lines are counted first, so the entries are one
 * allocation (a 32-bit offset reaches every byte of a 64 MiB map).
 */
static int map_fill(struct sp__perf_map *map, size_t len, uint64_t budget)
{
	const char *p = map->text, *e = map->text + len, *nl;
	size_t lines = count_lines(map->text, len);
	struct pmline pl;

	map->text[len] = '\0';
	if (peak_bytes(len, lines) > budget)
		return -ENOBUFS;
	map->syms = sp__mem_alloc(&map->mem, lines * sizeof(*map->syms));
	if (!map->syms)
		return -ENOMEM;
	map->cap = lines;
	while (p < e) {
		nl = memchr(p, '\n', (size_t)(e - p));
		if (!nl)
			nl = e;
		if (parse_line(p, (size_t)(nl - p), &pl) && map_add(map, &pl))
			return -ENOMEM;
		p = nl + (nl < e);
	}
	return map_index(map);
}

/* A map whose text buffer (@size + 1 bytes, filled by @fill) it owns. */
static int map_new(const struct sp__mem *mem, size_t size, const char *path,
		   struct sp__perf_map **out)
{
	struct sp__perf_map *map = sp__mem_calloc(mem, 1, sizeof(*map));

	if (!map)
		return -ENOMEM;
	map->mem = *mem;
	map->text_size = size + 1;
	map->text = sp__mem_alloc(mem, map->text_size);
	if (path) {
		map->path_size = strlen(path) + 1;
		map->path = sp__mem_alloc(mem, map->path_size);
	}
	if (!map->text || (path && !map->path)) {
		sp__perf_map_free(map);
		return -ENOMEM;
	}
	if (path)
		memcpy(map->path, path, map->path_size);
	*out = map;
	return 0;
}

int sp__perf_map_parse(const struct sp__mem *mem, const char *data, size_t len,
		       const char *path, struct sp__perf_map **out)
{
	struct sp__perf_map *map;
	int err = map_new(mem, data ? len : 0, path, &map);

	if (err)
		return err;
	if (data && len)
		memcpy(map->text, data, len);
	err = map_fill(map, data ? len : 0, UINT64_MAX);
	if (err) {
		sp__perf_map_free(map);
		return err;
	}
	*out = map;
	return 0;
}

void sp__perf_map_free(struct sp__perf_map *map)
{
	struct sp__mem mem;

	if (!map)
		return;
	mem = map->mem;
	sp__mem_free(&mem, map->text, map->text_size);
	sp__mem_free(&mem, map->syms, map->cap * sizeof(*map->syms));
	sp__mem_free(&mem, map->blk_end,
		     map->blk_end ?
			     ((map->n + 63) >> BLOCK_SHIFT) * sizeof(uint64_t) :
			     0);
	sp__mem_free(&mem, map->long_ends,
		     map->long_cap * sizeof(*map->long_ends));
	sp__mem_free(&mem, map->path, map->path_size);
	sp__mem_free(&mem, map, sizeof(*map));
}

size_t sp__perf_map_bytes(const struct sp__perf_map *map)
{
	if (!map)
		return 0;
	return sizeof(*map) + map->path_size + map->text_size +
	       map->cap * sizeof(*map->syms) +
	       ((map->n + 63) >> BLOCK_SHIFT) * sizeof(uint64_t) +
	       map->long_cap * sizeof(*map->long_ends);
}

static const struct pmsym *map_find(const struct sp__perf_map *map,
				    uint64_t addr)
{
	size_t lo = 0, hi = map->n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (map->syms[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/*
	 * syms[< lo] start at or below addr: walk back to the last cover,
	 * stopping once no earlier symbol reaches past addr.
	 */
	while (lo-- > 0) {
		if (map->blk_end[lo >> BLOCK_SHIFT] <= addr)
			return NULL;
		if (addr < sym_end(map, &map->syms[lo]))
			return &map->syms[lo];
	}
	return NULL;
}

int sp__perf_map_lookup(const struct sp__perf_map *map, uint64_t addr,
			struct sp_resolved_frame *out)
{
	const struct pmsym *s = map ? map_find(map, addr) : NULL;
	uint32_t kind;

	if (!s)
		return 0;
	kind = s->name >> KIND_SHIFT;
	out->name = map->text + (s->name & NAME_OFF_MASK);
	out->file = kind == KIND_NATIVE ? NULL :
		    kind == KIND_PYTHON ? out->name + strlen(out->name) + 1 :
					  "~";
	out->module = map->path;
	out->pc = addr;
	out->offset = out->file ? 0 : addr - s->start;
	out->line = 0;
	out->column = 0;
	out->kind = out->file ? SP_RESOLVED_PYTHON : SP_RESOLVED_NATIVE;
	out->origin = SP_ORIGIN_PERF_MAP;
	out->flags = SP_RESOLVED_JIT;
	out->inline_depth = 0;
	out->decl_line = 0;
	return 1;
}

static bool has_prefix(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool sp__perf_map_eligible(const char *path)
{
	if (!path || !*path)
		return true;
	return strcmp(path, "//anon") == 0 || strcmp(path, "[anon]") == 0 ||
	       strcmp(path, "[heap]") == 0 || has_prefix(path, "[anon:") ||
	       has_prefix(path, "[stack") || has_prefix(path, "/dev/zero") ||
	       has_prefix(path, "/anon_hugepage") || has_prefix(path, "/SYSV");
}

/* Root, the target's owner, or (target gone) ourselves may own the map. */
static int check_owner(const struct stat *st, int32_t pid)
{
	char proc[32];
	struct stat ps;

	if (st->st_uid == 0)
		return 0;
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	if (stat(proc, &ps) == 0)
		return st->st_uid == ps.st_uid ? 0 : -EPERM;
	return st->st_uid == geteuid() ? 0 : -EPERM;
}

static uint64_t file_identity(const struct stat *st)
{
	uint64_t w[4] = {
		(uint64_t)st->st_dev,
		(uint64_t)st->st_ino,
		(uint64_t)st->st_size,
		(uint64_t)st->st_mtim.tv_sec * 1000000000ull +
			(uint64_t)st->st_mtim.tv_nsec,
	};

	return sp__hash_words(w, 4);
}

/* Reads at most @size bytes (what fstat saw; later appends wait). */
static ssize_t read_upto(int fd, char *buf, size_t size)
{
	size_t got = 0;
	ssize_t r;

	while (got < size) {
		r = read(fd, buf + got, size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			break;
		got += (size_t)r;
	}
	return (ssize_t)got;
}

static int load_fd(const struct sp__mem *mem, int fd, size_t size,
		   const char *path, uint64_t budget, struct sp__perf_map **out)
{
	struct sp__perf_map *map;
	ssize_t got;
	int err;

	/* The text alone must fit before anything is read. */
	if ((uint64_t)size + 1 > budget)
		return -ENOBUFS;
	err = map_new(mem, size, path, &map);
	if (err)
		return err;
	got = read_upto(fd, map->text, size);
	err = got < 0 ? (int)got : map_fill(map, (size_t)got, budget);
	if (err) {
		sp__perf_map_free(map);
		return err;
	}
	*out = map;
	return 0;
}

int sp__perf_map_load_within(const struct sp__mem *mem, const char *dir,
			     int32_t pid, uint64_t budget,
			     struct sp__perf_map **out, uint64_t *identity)
{
	char path[4096];
	int err;

	err = snprintf(path, sizeof(path), "%s/perf-%d.map",
		       dir && *dir ? dir : "/tmp", (int)pid);
	if (err < 0 || (size_t)err >= sizeof(path))
		return -ENAMETOOLONG;
	return sp__perf_map_load_file(mem, path, pid, budget, out, identity);
}

int sp__perf_map_load_file(const struct sp__mem *mem, const char *path,
			   int32_t pid, uint64_t budget,
			   struct sp__perf_map **out, uint64_t *identity)
{
	struct stat st;
	int fd, err;

	fd = sp__file_open_data(path, SP__FILE_NOFOLLOW, PERF_MAP_MAX, &st);
	if (fd < 0)
		return fd == -ELOOP || fd == -EINVAL ? -EPERM : fd;
	err = check_owner(&st, pid);
	if (err == 0)
		err = load_fd(mem, fd, (size_t)st.st_size, path, budget, out);
	if (err == 0 && identity)
		*identity = file_identity(&st);
	close(fd);
	return err;
}

int sp__perf_map_load(const struct sp__mem *mem, const char *dir, int32_t pid,
		      struct sp__perf_map **out, uint64_t *identity)
{
	return sp__perf_map_load_within(mem, dir, pid, UINT64_MAX, out,
					identity);
}
