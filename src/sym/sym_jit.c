/* SPDX-License-Identifier: MIT */
/* Names of JIT code from jitdump files the spool names: the runtime's and the recorder's. */
#define _GNU_SOURCE /* memrchr */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <stackpulse/error.h>

#include "jit_names.h"
#include "jitdump_read.h"
#include "logging.h"
#include "perf_map_internal.h"
#include "symbolizer_internal.h"

/*
 * Where the files are: a JIT that writes jit-<pid>.dump maps it, so the
 * spool has a module of that process with the file's path; for GDB JIT
 * objects the recorder wrote gdbjit-<pid>-<n>.dump and mapped the code of
 * each object as a module with that path (src/engine/jit_gdb.c): frames
 * pinned to such a module read its file. Otherwise the file belongs to
 * one process generation of the pid, like the modules around it
 * (docs/how-to/jit.md):
 *
 *   a frame pinned to module a (the anonymous mapping of the code) reads
 *   the file module f of its pid with the smallest deactivated_at that is
 *   not below a's (f is retired with its process, a with it or before);
 *   an unpinned frame compares its own id instead of a's retirement.
 *
 * With @jit_dir set, <jit_dir>/<basename> is read instead of the recorded
 * path when it exists: files copied next to a spool, to symbolize later
 * or on another machine.
 *
 * Time: each spool frame has the time of the sample that made the writer
 * define it (sp_spool_frame_time()). JIT code is named at that time
 * (jit_names.h): a frame of code that was freed and its memory reused
 * later keeps its own name, and the recorder wrote the modules there
 * again after the reuse, so later samples are other frames. An answer
 * more than SKEW_NS after the frame's time is refused: that code did not
 * exist yet (another process that had the pid, say).
 *
 * Files are read whole on first use and kept. A miss in a file that grew
 * since (a live recording under a Tail) reads it again, at most once per
 * RELOAD_NS.
 */

#define SKEW_NS 100000000ull	/* 100 ms */
#define RELOAD_NS 1000000000ull /* 1 s */

struct jit_file {
	uint32_t module_id;
	int32_t pid;
	const char *path; /* the spool's */
	struct sp__jit_names *names;
	int err;
	bool tried;
	uint64_t size; /* of the file read */
	uint64_t loaded_ns;
};

struct sp__sym_jit {
	struct sp__vec files; /* struct jit_file */
	uint32_t scanned;     /* spool modules looked at */
	const char *dir;
};

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int sp__sym_jit_new(struct sp_symbolizer *sym, const char *dir)
{
	struct sp__sym_jit *j = sp__mem_calloc(&sym->mem, 1, sizeof(*j));

	if (!j)
		return -ENOMEM;
	sp__vec_init(&j->files, sizeof(struct jit_file));
	j->dir = dir;
	sym->jit = j;
	return 0;
}

void sp__sym_jit_free(struct sp_symbolizer *sym)
{
	struct sp__sym_jit *j = sym->jit;
	size_t i;

	if (!j)
		return;
	for (i = 0; i < j->files.len; i++)
		sp__jit_names_free(
			((struct jit_file *)sp__vec_at(&j->files, i))->names);
	sp__vec_fini(&j->files, &sym->mem);
	sp__mem_free(&sym->mem, j, sizeof(*j));
	sym->jit = NULL;
}

/* Is @path (@len bytes) a jitdump name of process @pid? */
static bool jit_file_name(const char *path, size_t len, int32_t pid)
{
	const char *base = memrchr(path, '/', len);
	char want[48];
	size_t blen, wlen;

	base = base ? base + 1 : path;
	blen = len - (size_t)(base - path);
	wlen = (size_t)snprintf(want, sizeof(want), "jit-%d.dump", (int)pid);
	if (blen == wlen && memcmp(base, want, wlen) == 0)
		return true;
	wlen = (size_t)snprintf(want, sizeof(want), "gdbjit-%d-", (int)pid);
	return blen > wlen + 5 && memcmp(base, want, wlen) == 0 &&
	       memcmp(base + blen - 5, ".dump", 5) == 0;
}

/* Notes the jitdump modules defined since the last look. */
static int scan(struct sp_symbolizer *sym, struct sp__sym_jit *j)
{
	uint32_t n = sp_spool_module_count(sym->spool);
	struct sp_module m;

	for (; j->scanned < n; j->scanned++) {
		struct jit_file f = { 0 };

		if (sp_spool_module(sym->spool, j->scanned, &m) ||
		    m.is_kernel || !m.path_len ||
		    !jit_file_name(m.path, m.path_len, m.pid))
			continue;
		f.module_id = m.id;
		f.pid = m.pid;
		f.path = m.path;
		if (sp__vec_push(&j->files, &sym->mem, &f))
			return -ENOMEM;
	}
	return 0;
}

bool sp__sym_jit_module(const struct sp_module *m)
{
	return m->path_len && jit_file_name(m->path, m->path_len, m->pid);
}

/* The file of module @id, when it is one (a GDB JIT object's module). */
static struct jit_file *file_of(struct sp__sym_jit *j, uint32_t id)
{
	size_t i;

	for (i = 0; i < j->files.len; i++) {
		struct jit_file *f = sp__vec_at(&j->files, i);

		if (f->module_id == id)
			return f;
	}
	return NULL;
}

/* The file for a frame of @pid with retirement key @key (see above). */
static struct jit_file *pick(struct sp_symbolizer *sym, struct sp__sym_jit *j,
			     int32_t pid, uint32_t key)
{
	struct jit_file *best = NULL;
	uint32_t best_deact = 0;
	struct sp_module m;
	size_t i;

	for (i = 0; i < j->files.len; i++) {
		struct jit_file *f = sp__vec_at(&j->files, i);

		if (f->pid != pid ||
		    sp_spool_module(sym->spool, f->module_id, &m))
			continue;
		if (m.deactivated_at < key)
			continue; /* an older process generation's */
		if (!best || m.deactivated_at < best_deact ||
		    (m.deactivated_at == best_deact &&
		     f->module_id > best->module_id)) {
			best = f;
			best_deact = m.deactivated_at;
		}
	}
	return best;
}

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

/* @f's file: the copy in the JIT directory when there is one. */
static const char *file_path(const struct sp__sym_jit *j,
			     const struct jit_file *f, char *buf, size_t len)
{
	const char *base = strrchr(f->path, '/');
	struct stat st;
	int n;

	if (!j->dir)
		return f->path;
	base = base ? base + 1 : f->path;
	n = snprintf(buf, len, "%s/%s", j->dir, base);
	if (n > 0 && (size_t)n < len && stat(buf, &st) == 0)
		return buf;
	return f->path;
}

static int load(struct sp_symbolizer *sym, struct sp__sym_jit *j,
		struct jit_file *f)
{
	struct sp__jitdump_reader *r = NULL;
	struct sp__jit_names *names = NULL;
	char buf[PATH_MAX];
	const char *path = file_path(j, f, buf, sizeof(buf));
	int err;

	f->tried = true;
	f->loaded_ns = mono_ns();
	err = sp__jit_names_new(&sym->mem, split, &names);
	if (!err)
		err = sp__jitdump_reader_open(&sym->mem, path, f->pid, 0, &r);
	if (!err)
		err = sp__jitdump_reader_poll(r, 0, sp__jit_names_add, names);
	/* A cut-off or corrupt tail: the records before it still name. */
	if (err == SP_ECORRUPT || err == SP_ESHRANK || err == -EFBIG)
		err = 0;
	if (err >= 0)
		err = sp__jit_names_finish(names);
	if (r)
		f->size = sp__jitdump_reader_stats(r)->bytes +
			  sp__jitdump_reader_stats(r)->partial;
	sp__jitdump_reader_free(r);
	if (err < 0) {
		if (!f->err)
			sp__log(sym->logger, SP_LOG_WARN,
				"jitdump %s: %s (JIT frames of pid %d "
				"stay unnamed)",
				path, sp_strerror(err), f->pid);
		sp__jit_names_free(names);
		f->err = err;
		return err == -ENOMEM ? err : 0;
	}
	sp__jit_names_free(f->names);
	f->names = names;
	f->err = 0;
	return 0;
}

/* A miss: read the file again if it grew (rate-limited). */
static int reload(struct sp_symbolizer *sym, struct sp__sym_jit *j,
		  struct jit_file *f)
{
	char buf[PATH_MAX];
	struct stat st;

	if (mono_ns() - f->loaded_ns < RELOAD_NS)
		return 0;
	if (stat(file_path(j, f, buf, sizeof(buf)), &st) != 0 ||
	    (uint64_t)st.st_size == f->size) {
		f->loaded_ns = mono_ns();
		return 0;
	}
	return load(sym, j, f);
}

static const struct sp__jit_code *find(const struct jit_file *f, uint64_t pc,
				       uint64_t t)
{
	const struct sp__jit_code *c;

	if (!f->names)
		return NULL;
	c = sp__jit_names_find(f->names, pc, t ? t : UINT64_MAX);
	if (c && t && c->time > t && c->time - t > SKEW_NS)
		return NULL;
	return c;
}

static void fill(struct sp_resolved_frame *out, const struct jit_file *f,
		 const struct sp__jit_code *c, uint64_t pc)
{
	const char *file;
	uint32_t line;

	memset(out, 0, sizeof(*out));
	out->name = c->name;
	out->module = f->path;
	out->pc = pc;
	out->origin = SP_ORIGIN_JITDUMP;
	out->flags = SP_RESOLVED_JIT;
	if (c->file) { /* a Python function: its .py file, no line */
		out->kind = SP_RESOLVED_PYTHON;
		out->file = c->file;
		return;
	}
	out->kind = SP_RESOLVED_NATIVE;
	out->offset = pc - c->start;
	if (sp__jit_names_line(f->names, c, pc, &file, &line)) {
		out->file = file;
		out->line = line;
	}
}

int sp__sym_jit_chain(struct sp_symbolizer *sym, int32_t pid, uint32_t frame_id,
		      uint64_t pc, const struct sp_module *mod)
{
	struct sp__sym_jit *j = sym->jit;
	const struct sp__jit_code *c;
	struct jit_file *f;
	uint64_t t;
	int err;

	if (!j || (sym->flags & SP_SYMBOLIZER_NO_JIT))
		return 0;
	err = scan(sym, j);
	if (err)
		return err;
	/* A frame in a GDB JIT object's module: that module's file. */
	f = mod && sp__sym_jit_module(mod) ?
		    file_of(j, mod->id) :
		    pick(sym, j, pid, mod ? mod->deactivated_at : frame_id);
	if (!f)
		return 0;
	if (!f->tried && (err = load(sym, j, f)) < 0)
		return err;
	t = sp_spool_frame_time(sym->spool, frame_id);
	c = find(f, pc, t);
	if (!c && f->tried && (err = reload(sym, j, f)) < 0)
		return err;
	if (!c)
		c = find(f, pc, t);
	if (!c)
		return 0;
	fill(&sym->chain[0], f, c, pc);
	return 1;
}
