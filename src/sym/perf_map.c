/* SPDX-License-Identifier: MIT */
/* JIT symbols from /tmp/perf-<pid>.map: safe opening, parsing, lookups. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arena.h"
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
 * Table: symbols sorted by start (file order among equal starts, so a
 * later line for reused code wins), names in an arena, and max_end[i] =
 * the largest end among syms[0..i], which bounds the backward walk of a
 * lookup: the answer is the last symbol with start <= addr < end, ranges
 * exactly as declared. Python names are split once, at parse time, so a
 * lookup allocates nothing.
 */
#define PERF_MAP_MAX (64ull << 20)

struct pmsym {
	uint64_t start;
	uint64_t end;
	const char *name;    /* symbol, or the Python function */
	const char *py_file; /* non-NULL: a Python frame */
	size_t seq;
};

struct sp__perf_map {
	struct sp__mem mem;
	struct sp__arena arena;
	struct pmsym *syms;
	uint64_t *max_end;
	size_t n;
	size_t cap;
	const char *path;
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

static int map_reserve(struct sp__perf_map *map)
{
	void *p = map->syms;
	int err = sp__mem_grow(&map->mem, &p, &map->cap, map->n,
			       sizeof(*map->syms), 256);

	map->syms = p;
	return err;
}

static int map_add(struct sp__perf_map *map, const struct pmline *pl)
{
	struct sp__py_name py;
	struct pmsym *s;

	if (map_reserve(map) < 0)
		return -ENOMEM;
	s = &map->syms[map->n];
	s->start = pl->start;
	s->end = pl->end;
	s->seq = map->n;
	s->py_file = NULL;
	if (sp__python_frame_split(pl->name, pl->name_len, &py)) {
		s->name = sp__arena_strndup(&map->arena, &map->mem, py.func,
					    py.func_len);
		s->py_file = sp__arena_strndup(&map->arena, &map->mem, py.file,
					       py.file_len);
		if (!s->py_file)
			return -ENOMEM;
	} else {
		s->name = sp__arena_strndup(&map->arena, &map->mem, pl->name,
					    pl->name_len);
	}
	if (!s->name)
		return -ENOMEM;
	map->n++;
	return 0;
}

static int cmp_pmsym(const void *a, const void *b)
{
	const struct pmsym *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Sorts (stable by line) and builds the running maximum of the ends. */
static int map_index(struct sp__perf_map *map)
{
	uint64_t m = 0;
	size_t i;

	if (!map->n)
		return 0;
	qsort(map->syms, map->n, sizeof(*map->syms), cmp_pmsym);
	map->max_end = sp__mem_calloc(&map->mem, map->n, sizeof(uint64_t));
	if (!map->max_end)
		return -ENOMEM;
	for (i = 0; i < map->n; i++) {
		if (map->syms[i].end > m)
			m = map->syms[i].end;
		map->max_end[i] = m;
	}
	return 0;
}

static int map_fill(struct sp__perf_map *map, const char *data, size_t len)
{
	const char *p = data, *e = data + len, *nl;
	struct pmline pl;
	int err;

	while (p < e) {
		nl = memchr(p, '\n', (size_t)(e - p));
		if (!nl)
			nl = e;
		if (parse_line(p, (size_t)(nl - p), &pl)) {
			err = map_add(map, &pl);
			if (err < 0)
				return err;
		}
		p = nl + (nl < e);
	}
	return map_index(map);
}

int sp__perf_map_parse(const struct sp__mem *mem, const char *data, size_t len,
		       const char *path, struct sp__perf_map **out)
{
	struct sp__perf_map *map = sp__mem_calloc(mem, 1, sizeof(*map));
	int err = -ENOMEM;

	if (!map)
		return -ENOMEM;
	map->mem = *mem;
	sp__arena_init(&map->arena);
	if (path && !(map->path = sp__arena_strndup(&map->arena, mem, path,
						    strlen(path))))
		goto err_free;
	err = map_fill(map, data ? data : "", data ? len : 0);
	if (err < 0)
		goto err_free;
	*out = map;
	return 0;

err_free:
	sp__perf_map_free(map);
	return err;
}

void sp__perf_map_free(struct sp__perf_map *map)
{
	struct sp__mem mem;

	if (!map)
		return;
	mem = map->mem;
	sp__arena_fini(&map->arena, &mem);
	sp__mem_free(&mem, map->syms, map->cap * sizeof(*map->syms));
	sp__mem_free(&mem, map->max_end,
		     map->max_end ? map->n * sizeof(uint64_t) : 0);
	sp__mem_free(&mem, map, sizeof(*map));
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
	/* syms[< lo] start at or below addr: walk back to the last cover. */
	while (lo-- > 0) {
		if (map->max_end[lo] <= addr)
			return NULL;
		if (addr < map->syms[lo].end)
			return &map->syms[lo];
	}
	return NULL;
}

int sp__perf_map_lookup(const struct sp__perf_map *map, uint64_t addr,
			struct sp_resolved_frame *out)
{
	const struct pmsym *s = map ? map_find(map, addr) : NULL;

	if (!s)
		return 0;
	out->name = s->name;
	out->file = s->py_file;
	out->module = map->path;
	out->pc = addr;
	out->offset = s->py_file ? 0 : addr - s->start;
	out->line = 0;
	out->column = 0;
	out->kind = s->py_file ? SP_RESOLVED_PYTHON : SP_RESOLVED_NATIVE;
	out->origin = SP_ORIGIN_PERF_MAP;
	out->flags = SP_RESOLVED_JIT;
	out->inline_depth = 0;
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

static int check_file(int fd, int32_t pid, struct stat *st)
{
	if (fstat(fd, st) < 0)
		return -errno;
	if (!S_ISREG(st->st_mode))
		return -EPERM;
	if ((uint64_t)st->st_size > PERF_MAP_MAX)
		return -EFBIG;
	return check_owner(st, pid);
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
		   const char *path, struct sp__perf_map **out)
{
	char *buf = NULL;
	ssize_t got = 0;
	int err;

	if (size && !(buf = sp__mem_alloc(mem, size)))
		return -ENOMEM;
	if (size)
		got = read_upto(fd, buf, size);
	err = got < 0 ? (int)got :
			sp__perf_map_parse(mem, buf, (size_t)got, path, out);
	sp__mem_free(mem, buf, size);
	return err;
}

int sp__perf_map_load(const struct sp__mem *mem, const char *dir, int32_t pid,
		      struct sp__perf_map **out, uint64_t *identity)
{
	char path[4096];
	int err;

	err = snprintf(path, sizeof(path), "%s/perf-%d.map",
		       dir && *dir ? dir : "/tmp", (int)pid);
	if (err < 0 || (size_t)err >= sizeof(path))
		return -ENAMETOOLONG;
	return sp__perf_map_load_file(mem, path, pid, out, identity);
}

int sp__perf_map_load_file(const struct sp__mem *mem, const char *path,
			   int32_t pid, struct sp__perf_map **out,
			   uint64_t *identity)
{
	struct stat st;
	int fd, err;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -EPERM : -errno;
	err = check_file(fd, pid, &st);
	if (err == 0)
		err = load_fd(mem, fd, (size_t)st.st_size, path, out);
	if (err == 0 && identity)
		*identity = file_identity(&st);
	close(fd);
	return err;
}
