/* SPDX-License-Identifier: MIT */
/* Kernel symbols from kallsyms text: perf's selection rules, sparse loading. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "file_open.h"
#include "hexnum.h"
#include "ksyms_internal.h"
#include "logging.h"

/*
 * Input lines are "ADDR TYPE NAME" or "ADDR TYPE NAME\t[MOD]". A line is
 * kept when it passes perf's filter (see kline_accepted()); anything that
 * does not parse is skipped, never fatal.
 *
 * The text is streamed through a 64 KiB read buffer (or walked in place
 * for in-memory input); a whole /proc/kallsyms (~122k lines, 5 MB) is
 * never copied. Two modes:
 *
 *   full    every accepted symbol goes into the table (names in the
 *           arena), then ksyms_finish() sorts, applies "equal address:
 *           later line wins", drops core symbols below _text/_stext and
 *           links each symbol to the next one.
 *
 *   sparse  with a sorted PC set, only the previous accepted symbol is
 *           remembered; when a symbol with a higher address arrives, the
 *           previous one is kept if some PC lies in [prev, next), together
 *           with next's start (its range end). This relies on the file
 *           being sorted and on the anchor being final: a step backwards,
 *           an anchor after a module symbol, or a module symbol below the
 *           anchor (either way the anchor could remove the core symbol
 *           that ended that module symbol's range) restarts the load as a
 *           full parse that is then compacted to the PCs. So sparse
 *           answers always equal full answers for requested PCs.
 */
#define LINES_BUF (64 * 1024)
#define SPARSE_SCRATCH (2 * SP_KSYM_LINE_MAX)

/* A line source: memory (fd < 0, buf = the input) or a file descriptor. */
struct lines {
	int fd;
	const char *data;
	char *buf;
	size_t pos;
	size_t end;
	bool eof;
	bool skipping; /* dropping the rest of an over-long line */
};

struct kline {
	uint64_t addr;
	const char *name;
	size_t name_len;
	const char *mod; /* "[mod]" with brackets; mod_len 0 for core */
	size_t mod_len;
	char type;
};

struct kload {
	struct sp__ksyms *ks;
	const uint64_t *pcs; /* sparse: sorted PCs */
	size_t npcs;
	size_t j; /* first PC not yet behind the previous symbol */
	bool sparse;
	bool bail;     /* sparse assumptions broken: redo as full */
	bool mod_seen; /* an accepted module symbol so far */
	bool have_prev;
	bool linked;	      /* syms[n - 1] ends where prev starts */
	struct kline prev;    /* sparse: previous accepted symbol (copied) */
	char *scratch;	      /* sparse: storage of prev's name and module */
	const char *last_mod; /* module string interned last */
	uint32_t seq;
};

static int lines_fill(struct lines *r)
{
	size_t rest = r->end - r->pos;
	ssize_t got;

	if (rest == LINES_BUF) {
		/* No newline in a full buffer: the line is malformed. */
		r->skipping = true;
		rest = 0;
	}
	if (rest)
		memmove(r->buf, r->buf + r->pos, rest);
	r->pos = 0;
	r->end = rest;
	do
		got = read(r->fd, r->buf + rest, LINES_BUF - rest);
	while (got < 0 && errno == EINTR);
	if (got < 0)
		return -errno;
	if (got == 0)
		r->eof = true;
	r->end += (size_t)got;
	return 0;
}

/* Returns 1 with the next line (no '\n'), 0 at the end, or -errno. */
static int lines_next(struct lines *r, const char **line, size_t *len)
{
	for (;;) {
		const char *p = r->data + r->pos;
		size_t avail = r->end - r->pos, n;
		const char *nl = memchr(p, '\n', avail);
		bool skip;
		int err;

		if (!nl && !r->eof) {
			err = lines_fill(r);
			if (err < 0)
				return err;
			continue;
		}
		if (!nl && avail == 0)
			return 0;
		n = nl ? (size_t)(nl - p) : avail;
		r->pos += nl ? n + 1 : n;
		skip = r->skipping || n > SP_KSYM_LINE_MAX;
		r->skipping = false;
		if (skip)
			continue;
		*line = p;
		*len = n;
		return 1;
	}
}

static int lines_init(struct lines *r, const struct sp__mem *mem, int fd,
		      const char *data, size_t len)
{
	memset(r, 0, sizeof(*r));
	r->fd = fd;
	if (fd < 0) {
		r->data = data;
		r->end = len;
		r->eof = true;
		return 0;
	}
	r->buf = sp__mem_alloc(mem, LINES_BUF);
	if (!r->buf)
		return -ENOMEM;
	r->data = r->buf;
	return 0;
}

static int lines_rewind(struct lines *r)
{
	r->pos = 0;
	r->skipping = false;
	if (r->fd < 0)
		return 0;
	if (lseek(r->fd, 0, SEEK_SET) < 0)
		return -errno;
	r->end = 0;
	r->eof = false;
	return 0;
}

static bool is_sep(char c)
{
	return c == ' ' || c == '\t' || c == '\r';
}

static size_t skip_sep(const char *s, size_t i, size_t n)
{
	while (i < n && is_sep(s[i]))
		i++;
	return i;
}

/* After the name: nothing (core), or "[mod]" and nothing else. */
static bool parse_kmod(const char *s, size_t i, size_t n, struct kline *kl)
{
	const char *close;

	kl->mod = NULL;
	kl->mod_len = 0;
	if (i == n)
		return true;
	if (s[i] != '[')
		return false;
	close = memchr(s + i, ']', n - i);
	if (!close || close == s + i + 1)
		return false;
	kl->mod = s + i;
	kl->mod_len = (size_t)(close - kl->mod) + 1;
	return skip_sep(s, i + kl->mod_len, n) == n;
}

static bool parse_kline(const char *s, size_t n, struct kline *kl)
{
	size_t i, j;

	if (memchr(s, '\0', n))
		return false;
	i = sp__hex_prefix(s, n, &kl->addr);
	if (i == 0 || i >= n || !is_sep(s[i]))
		return false;
	i = skip_sep(s, i, n);
	if (i >= n)
		return false;
	kl->type = s[i++];
	if (i >= n || !is_sep(s[i]))
		return false;
	i = skip_sep(s, i, n);
	for (j = i; j < n && !is_sep(s[j]);)
		j++;
	if (j == i)
		return false;
	kl->name = s + i;
	kl->name_len = j - i;
	return parse_kmod(s, skip_sep(s, j, n), n, kl);
}

static bool name_is(const struct kline *kl, const char *lit)
{
	size_t n = strlen(lit);

	return kl->name_len == n && memcmp(kl->name, lit, n) == 0;
}

static bool name_starts(const struct kline *kl, const char *lit)
{
	size_t n = strlen(lit);

	return kl->name_len >= n && memcmp(kl->name, lit, n) == 0;
}

/* perf: types T/W/D/B in either case, no zero address, no mapping labels. */
static bool kline_accepted(const struct kline *kl)
{
	switch (kl->type) {
	case 'T':
	case 't':
	case 'W':
	case 'w':
	case 'D':
	case 'd':
	case 'B':
	case 'b':
		break;
	default:
		return false;
	}
	if (kl->addr == 0)
		return false;
	return !name_starts(kl, "$") && !name_starts(kl, ".L") &&
	       !name_starts(kl, "L0");
}

/* Counts addresses and records the anchors _text/_stext and _etext. */
static void kload_note(struct kload *ld, const struct kline *kl)
{
	struct sp__ksyms *ks = ld->ks;

	if (kl->addr == 0) {
		ks->zero_lines++;
		return;
	}
	ks->nonzero_lines++;
	if (kl->mod_len)
		return;
	if (name_is(kl, "_text") || name_is(kl, "_stext")) {
		if (ks->text == 0 || kl->addr < ks->text)
			ks->text = kl->addr;
		if (ld->sparse && ld->mod_seen)
			ld->bail = true;
	} else if (name_is(kl, "_etext") && kl->addr > ks->etext) {
		ks->etext = kl->addr;
	}
}

static int ksyms_reserve(struct sp__ksyms *ks)
{
	void *p = ks->syms;
	int err = sp__mem_grow(&ks->mem, &p, &ks->cap, ks->n, sizeof(*ks->syms),
			       1024);

	ks->syms = p;
	return err;
}

/* Module strings repeat line after line: reuse the last interned one. */
static const char *intern_mod(struct kload *ld, const char *mod, size_t len)
{
	if (!len)
		return NULL;
	if (!ld->last_mod || strlen(ld->last_mod) != len ||
	    memcmp(ld->last_mod, mod, len) != 0)
		ld->last_mod = sp__arena_strndup(&ld->ks->arena, &ld->ks->mem,
						 mod, len);
	return ld->last_mod;
}

/* Appends a symbol whose range is still to be decided. */
static struct sp__ksym *ksyms_append(struct kload *ld, const struct kline *kl)
{
	struct sp__ksyms *ks = ld->ks;
	struct sp__ksym *s;
	const char *name, *mod = NULL;

	if (ksyms_reserve(ks) < 0)
		return NULL;
	name = sp__arena_strndup(&ks->arena, &ks->mem, kl->name, kl->name_len);
	if (kl->mod_len)
		mod = intern_mod(ld, kl->mod, kl->mod_len);
	if (!name || (kl->mod_len && !mod))
		return NULL;
	s = &ks->syms[ks->n++];
	memset(s, 0, sizeof(*s));
	s->addr = kl->addr;
	s->name = name;
	s->module = mod;
	s->seq = ld->seq++;
	return s;
}

/* Is @mod (an interned "[mod]" or NULL for core) the module of @kl? */
static bool mod_is(const char *mod, const struct kline *kl)
{
	if (!mod)
		return kl->mod_len == 0;
	return strlen(mod) == kl->mod_len &&
	       memcmp(mod, kl->mod, kl->mod_len) == 0;
}

/* Keeps prev when some PC lies in [prev, next); next NULL = end of input. */
static int sparse_emit(struct kload *ld, const struct kline *next)
{
	const struct kline *p = &ld->prev;
	struct sp__ksym *s;

	ld->linked = false;
	while (ld->j < ld->npcs && ld->pcs[ld->j] < p->addr)
		ld->j++;
	if (ld->j == ld->npcs || (next && ld->pcs[ld->j] >= next->addr))
		return 0;
	while (next && ld->j < ld->npcs && ld->pcs[ld->j] < next->addr)
		ld->j++;
	s = ksyms_append(ld, p);
	if (!s)
		return -ENOMEM;
	if (next) {
		s->has_next = 1;
		s->end = next->addr;
		s->next_same = mod_is(s->module, next);
		ld->linked = true;
	}
	return 0;
}

static void sparse_remember(struct kload *ld, const struct kline *kl)
{
	char *name = ld->scratch, *mod = ld->scratch + SP_KSYM_LINE_MAX;

	memcpy(name, kl->name, kl->name_len);
	if (kl->mod_len)
		memcpy(mod, kl->mod, kl->mod_len);
	ld->prev = *kl;
	ld->prev.name = name;
	ld->prev.mod = mod;
	ld->have_prev = true;
}

static int sparse_add(struct kload *ld, const struct kline *kl)
{
	int err;

	/*
	 * A module symbol below a known anchor, or one that an anchor
	 * appearing later could put below it: its next symbol may be a
	 * core symbol the anchor drops, which a stream cannot undo.
	 */
	if (kl->mod_len) {
		ld->mod_seen = true;
		if (ld->ks->text && kl->addr < ld->ks->text)
			ld->bail = true;
	}
	if (ld->bail || (ld->have_prev && kl->addr < ld->prev.addr)) {
		ld->bail = true;
		return 0;
	}
	if (ld->have_prev && kl->addr > ld->prev.addr) {
		err = sparse_emit(ld, kl);
		if (err < 0)
			return err;
	}
	/*
	 * Equal addresses: the later line replaces prev, also as the next
	 * symbol of the one kept last (whose bound depends on its module).
	 */
	if (ld->have_prev && kl->addr == ld->prev.addr && ld->linked) {
		struct sp__ksym *last = &ld->ks->syms[ld->ks->n - 1];

		last->next_same = mod_is(last->module, kl);
	}
	sparse_remember(ld, kl);
	return 0;
}

static int kload_run(struct kload *ld, struct lines *r)
{
	const char *line;
	struct kline kl;
	size_t len;
	int err;

	while ((err = lines_next(r, &line, &len)) > 0) {
		if (!parse_kline(line, len, &kl))
			continue;
		kload_note(ld, &kl);
		if (ld->bail)
			return 0;
		if (!kline_accepted(&kl))
			continue;
		if (ld->sparse)
			err = sparse_add(ld, &kl);
		else
			err = ksyms_append(ld, &kl) ? 0 : -ENOMEM;
		if (err < 0 || ld->bail)
			return err;
	}
	if (err < 0 || !ld->sparse || !ld->have_prev)
		return err;
	return sparse_emit(ld, NULL);
}

static struct sp__ksyms *ksyms_new(const struct sp__mem *mem)
{
	struct sp__ksyms *ks = sp__mem_calloc(mem, 1, sizeof(*ks));

	if (!ks)
		return NULL;
	ks->mem = *mem;
	sp__arena_init(&ks->arena);
	return ks;
}

/* Forgets everything read so far (before a full re-read). */
static void ksyms_reset(struct sp__ksyms *ks)
{
	sp__arena_fini(&ks->arena, &ks->mem);
	ks->n = 0;
	ks->text = 0;
	ks->etext = 0;
	ks->zero_lines = 0;
	ks->nonzero_lines = 0;
}

/* Sparse load, redone as a full load + compaction if it had to bail. */
static int ksyms_stream(struct sp__ksyms *ks, struct lines *r,
			const uint64_t *pcs, size_t npcs, bool sparse)
{
	struct kload ld = {
		.ks = ks, .pcs = pcs, .npcs = npcs, .sparse = sparse
	};
	int err = 0;

	if (sparse) {
		ld.scratch = sp__mem_alloc(&ks->mem, SPARSE_SCRATCH);
		if (!ld.scratch)
			return -ENOMEM;
		err = kload_run(&ld, r);
		sp__mem_free(&ks->mem, ld.scratch, SPARSE_SCRATCH);
		if (err < 0 || !ld.bail) {
			ks->sparse = true;
			sp__ksyms_finish(ks, true);
			return err;
		}
		ksyms_reset(ks);
		err = lines_rewind(r);
		if (err < 0)
			return err;
	}
	memset(&ld, 0, sizeof(ld));
	ld.ks = ks;
	err = kload_run(&ld, r);
	if (err < 0)
		return err;
	sp__ksyms_finish(ks, false);
	return sparse ? sp__ksyms_compact(ks, pcs, npcs) : 0;
}

int sp__ksyms_read(const struct sp__mem *mem, int fd, const char *data,
		   size_t len, const uint64_t *pcs, size_t npcs,
		   struct sp__ksyms **out)
{
	struct sp__ksyms *ks = ksyms_new(mem);
	uint64_t *sorted = NULL;
	struct lines r;
	int err = -ENOMEM;

	if (!ks)
		return -ENOMEM;
	if (pcs && npcs && !(sorted = sp__ksyms_sorted_pcs(mem, pcs, npcs)))
		goto err_free;
	err = lines_init(&r, mem, fd, data, len);
	if (err < 0)
		goto err_free_pcs;
	err = ksyms_stream(ks, &r, sorted, pcs ? npcs : 0, pcs != NULL);
	sp__mem_free(mem, r.buf, r.buf ? LINES_BUF : 0);
	if (err < 0)
		goto err_free_pcs;
	sp__mem_free(mem, sorted, npcs * sizeof(*sorted));
	*out = ks;
	return 0;

err_free_pcs:
	sp__mem_free(mem, sorted, npcs * sizeof(*sorted));
err_free:
	sp__ksyms_free(ks);
	return err;
}

int sp__ksyms_parse(const struct sp__mem *mem, const char *data, size_t len,
		    const uint64_t *pcs, size_t npcs, struct sp__ksyms **out)
{
	return sp__ksyms_read(mem, -1, data ? data : "", data ? len : 0, pcs,
			      npcs, out);
}

void sp__ksyms_free(struct sp__ksyms *ks)
{
	struct sp__mem mem;

	if (!ks)
		return;
	mem = ks->mem;
	sp__arena_fini(&ks->arena, &mem);
	sp__mem_free(&mem, ks->syms, ks->cap * sizeof(*ks->syms));
	sp__mem_free(&mem, ks, sizeof(*ks));
}

/*
 * A regular file (procfs files count), opened without blocking on FIFOs;
 * read line by line, so no size bound (/proc/kallsyms reports size 0).
 */
static int open_regular(const char *path)
{
	struct stat st;

	return sp__file_open_data(path, 0, 0, &st);
}

int sp__ksyms_open_file(const char *path)
{
	return open_regular(path);
}

/* The host fallback: System.map, else an empty table. */
static int load_fallback(const struct sp__mem *mem, const uint64_t *pcs,
			 size_t npcs, const struct sp_logger *logger,
			 struct sp__ksyms **out)
{
	int err;

	sp__log(logger, SP_LOG_WARN,
		"kernel symbols: /proc/kallsyms unusable (restricted "
		"addresses?), trying System.map");
	err = sp__system_map_load(mem, NULL, pcs, npcs, logger, out);
	if (err != -ENOENT)
		return err;
	sp__log(logger, SP_LOG_WARN,
		"kernel symbols: no System.map either; kernel frames stay "
		"address-only");
	*out = ksyms_new(mem);
	return *out ? 0 : -ENOMEM;
}

int sp__ksyms_load(const struct sp__mem *mem, const char *path,
		   const uint64_t *pcs, size_t npcs,
		   const struct sp_logger *logger, struct sp__ksyms **out)
{
	struct sp__ksyms *ks = NULL;
	int fd, err;

	fd = open_regular(path ? path : "/proc/kallsyms");
	if (fd < 0 && path)
		return fd;
	if (fd >= 0) {
		err = sp__ksyms_read(mem, fd, NULL, 0, pcs, npcs, &ks);
		close(fd);
		if (err < 0 && (path || err == -ENOMEM))
			return err;
		if (err == 0 && (path || sp__ksyms_is_usable(ks))) {
			*out = ks;
			return 0;
		}
		sp__ksyms_free(ks);
	}
	return load_fallback(mem, pcs, npcs, logger, out);
}
