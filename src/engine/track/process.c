/* SPDX-License-Identifier: MIT */
/* Per-process state: module generations, unwinder mappings, lifecycle. */

/*
 * Modules are kept in insertion order in a small vector per process (a
 * process has tens of executable mappings); the unwinder's sorted array is
 * rebuilt from it only when a change marks it dirty, which happens off
 * the per-sample path. A module's file is prepared for unwinding when it
 * appears, so the first sample through it does not parse ELF.
 */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include <stackpulse/error.h>

#include "jit_arena.h"
#include "jit_side.h"
#include "jit_track.h"
#include "logging.h"
#include "mver.h"
#include "proc_maps.h"
#include "process.h"
#include "python.h"
#include "unwind_jit.h"
#include "utf8.h"

void sp__procs_init(struct sp__procs *procs, const struct sp__mem *mem,
		    struct sp_writer *writer, struct sp_unwinder *unwinder)
{
	memset(procs, 0, sizeof(*procs));
	procs->mem = mem;
	procs->writer = writer;
	procs->unwinder = unwinder;
	sp__vec_init(&procs->list, sizeof(struct sp__process *));
	sp__pidtab_init(&procs->index);
}

static void module_fini(const struct sp__mem *mem, struct sp__module *m)
{
	if (m->unwind_path && m->unwind_path != m->path)
		sp__mem_free(mem, m->unwind_path, strlen(m->unwind_path) + 1);
	sp__mem_free(mem, m->path, m->path_len + 1);
}

static void process_free(const struct sp__mem *mem, struct sp__process *p)
{
	size_t i;

	for (i = 0; i < p->modules.len; i++)
		module_fini(mem, sp__vec_at(&p->modules, i));
	sp__process_close_events(p, -1);
	if (p->pidfd >= 0)
		close(p->pidfd);
	sp__vec_fini(&p->modules, mem);
	sp__vec_fini(&p->maps, mem);
	sp__vec_fini(&p->events, mem);
	sp__mver_put(mem, p->mver);
	sp__jit_proc_free(p->jit);
	sp__mem_free(mem, p, sizeof(*p));
}

void sp__procs_fini(struct sp__procs *procs)
{
	size_t i;

	for (i = 0; i < procs->list.len; i++)
		process_free(procs->mem, *(struct sp__process **)sp__vec_at(
						 &procs->list, i));
	sp__vec_fini(&procs->list, procs->mem);
	sp__pidtab_fini(&procs->index, procs->mem);
}

struct sp__process *sp__procs_find(const struct sp__procs *procs, int32_t pid)
{
	/* The newest generation: a reused pid's live process wins. */
	return sp__pidtab_get(&procs->index, pid);
}

int sp__procs_add(struct sp__procs *procs, int32_t pid,
		  struct sp__process **out)
{
	struct sp__process *p = sp__mem_calloc(procs->mem, 1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->pid = pid;
	p->pidfd = -1;
	sp__vec_init(&p->modules, sizeof(struct sp__module));
	sp__vec_init(&p->maps, sizeof(struct sp_mapping));
	sp__vec_init(&p->events, sizeof(struct sp__event));
	if (sp__vec_reserve(&procs->list, procs->mem, 1) ||
	    sp__pidtab_set(&procs->index, procs->mem, pid, p)) {
		process_free(procs->mem, p);
		return -ENOMEM;
	}
	sp__vec_push(&procs->list, procs->mem, &p); /* reserved: cannot fail */
	*out = p;
	return 0;
}

void sp__procs_remove(struct sp__procs *procs, struct sp__process *proc)
{
	size_t i;

	for (i = 0; i < procs->list.len; i++) {
		struct sp__process **slot = sp__vec_at(&procs->list, i);

		if (*slot != proc)
			continue;
		memmove(slot, slot + 1,
			(procs->list.len - i - 1) * sizeof(*slot));
		procs->list.len--;
		break;
	}
	for (i = 0; i < procs->list.len; i++) {
		struct sp__process *p =
			*(struct sp__process **)sp__vec_at(&procs->list, i);

		if (p->parent == proc)
			p->parent = NULL; /* no dangling ancestry */
	}
	/* Rebuilt in list order, so each pid ends at its newest process;
	 * no growth is needed (fewer entries than before). */
	sp__pidtab_clear(&procs->index);
	for (i = 0; i < procs->list.len; i++) {
		struct sp__process *p =
			*(struct sp__process **)sp__vec_at(&procs->list, i);

		sp__pidtab_set(&procs->index, procs->mem, p->pid, p);
	}
	process_free(procs->mem, proc);
}

static bool prunable(const struct sp__process *p)
{
	return p->state == SP__PROC_EXITED && !p->events_held &&
	       p->events.len == 0 && p->pidfd < 0;
}

void sp__procs_prune(struct sp__procs *procs)
{
	struct sp__process **list = procs->list.data;
	size_t i, kept = 0;

	for (i = 0; i < procs->list.len; i++)
		if (list[i]->parent && prunable(list[i]->parent))
			list[i]->parent = NULL;
	for (i = 0; i < procs->list.len; i++) {
		if (prunable(list[i]))
			process_free(procs->mem, list[i]);
		else
			list[kept++] = list[i];
	}
	if (kept == procs->list.len)
		return;
	procs->list.len = kept;
	sp__pidtab_clear(&procs->index);
	for (i = 0; i < kept; i++) /* in order: each pid ends at its newest */
		sp__pidtab_set(&procs->index, procs->mem, list[i]->pid,
			       list[i]);
}

void sp__process_close_events(struct sp__process *proc, int epfd)
{
	size_t i;

	for (i = 0; i < proc->events.len; i++) {
		int fd = ((struct sp__event *)sp__vec_at(&proc->events, i))->fd;

		/*
		 * A ring may hold a duplicate of the fd: disable, so the
		 * event stops sampling even though close does not free it.
		 * mmaps hold the file, so a plain close would leave it polled.
		 */
		ioctl(fd, PERF_EVENT_IOC_DISABLE, 0);
		if (epfd >= 0)
			epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
		close(fd);
	}
	proc->events.len = 0;
}

int sp__process_alive(const struct sp__process *proc)
{
	struct pollfd pfd;
	int n;

	if (proc->state == SP__PROC_EXITED)
		return 0;
	if (proc->pidfd < 0) {
		char st = 0;
		uint64_t start = 0;
		int err = sp__proc_stat(proc->pid, 0, &start, &st);

		if (err)
			return err == -ENOENT || err == -ESRCH ? 0 : err;
		return start == proc->starttime && st != 'Z' && st != 'X';
	}
	pfd.fd = proc->pidfd;
	pfd.events = POLLIN;
	pfd.revents = 0;
	n = poll(&pfd, 1, 0);
	if (n < 0)
		return -errno;
	return n == 0;
}

static bool desc_is_deleted(const struct sp__map_desc *d)
{
	static const char sfx[] = " (deleted)";
	size_t n = sizeof(sfx) - 1;

	return d->path_len > n &&
	       memcmp(d->path + d->path_len - n, sfx, n) == 0;
}

static int module_fill(const struct sp__procs *procs, int32_t pid,
		       const struct sp__map_desc *d, struct sp__module *m)
{
	char buf[96];

	memset(m, 0, sizeof(*m));
	m->start = d->start;
	m->end = d->end;
	m->offset = d->offset;
	m->inode = d->inode;
	m->inode_generation = d->inode_generation;
	m->dev_major = d->dev_major;
	m->dev_minor = d->dev_minor;
	m->path_len = d->path_len;
	m->path = sp__mem_strndup(procs->mem, d->path, d->path_len);
	if (!m->path)
		return -ENOMEM;
	m->unwind_path = m->path;
	if (d->path_len == 6 && memcmp(d->path, "[vdso]", 6) == 0)
		m->flags |= SP_MAPPING_VDSO;
	if (!desc_is_deleted(d))
		return 0;
	/* The name is gone; the mapped file stays readable through map_files. */
	snprintf(buf, sizeof(buf), "/proc/%d/map_files/%llx-%llx", pid,
		 (unsigned long long)d->start, (unsigned long long)d->end);
	m->unwind_path = sp__mem_strndup(procs->mem, buf, strlen(buf));
	if (!m->unwind_path) {
		m->unwind_path = NULL;
		module_fini(procs->mem, m);
		return -ENOMEM;
	}
	return 0;
}

static void module_to_mapping(const struct sp__module *m, struct sp_mapping *o)
{
	memset(o, 0, sizeof(*o));
	o->start = m->start;
	o->end = m->end;
	o->file_offset = m->offset;
	o->inode = m->inode;
	o->dev_major = m->dev_major;
	o->dev_minor = m->dev_minor;
	o->path = m->unwind_path;
	o->module_id = m->id;
	o->flags = m->flags;
	if (m->jit_id) { /* code the unwinder has a table for */
		o->flags |= SP__MAPPING_JIT;
		o->inode = m->jit_id;
	}
}

/*
 * Writes the module record of @rec, whose path is the mapped file's name
 * as the kernel gave it: any bytes. SPULSE3 wants UTF-8, so a name that
 * is not gets the documented escape (utf8.h) in the spool, while @m keeps
 * the raw bytes for opening the file (unwinding, matching /proc maps):
 * one odd file name must not end the recording.
 */
static int module_write(struct sp__procs *procs, struct sp_module *rec,
			uint32_t *id)
{
	const uint8_t *raw = (const uint8_t *)rec->path;
	size_t len, cap;
	char *esc;
	int err;

	if (sp__utf8_valid(raw, rec->path_len))
		return sp_writer_module(procs->writer, rec, id);
	cap = sp__utf8_escape(raw, rec->path_len, NULL, 0);
	esc = sp__mem_alloc(procs->mem, cap);
	if (!esc)
		return -ENOMEM;
	len = sp__utf8_escape(raw, rec->path_len, esc, cap);
	rec->path = esc;
	rec->path_len = len;
	err = sp_writer_module(procs->writer, rec, id);
	sp__mem_free(procs->mem, esc, cap);
	return err;
}

/* Writes @m's module record, then prepares its unwind table. */
static int module_emit(struct sp__procs *procs, struct sp__process *proc,
		       struct sp__module *m)
{
	struct sp_module rec;
	struct sp_mapping map;
	int err;

	memset(&rec, 0, sizeof(rec));
	rec.start = m->start;
	rec.end = m->end;
	rec.file_offset = m->offset;
	rec.inode = m->inode;
	rec.inode_generation = m->inode_generation;
	rec.dev_major = m->dev_major;
	rec.dev_minor = m->dev_minor;
	rec.pid = proc->pid;
	rec.path = m->path;
	rec.path_len = m->path_len;
	err = sp__procs_sync(procs);
	if (!err)
		err = module_write(procs, &rec, &m->id);
	if (err)
		return err;
	err = sp__vec_push(&proc->modules, procs->mem, m);
	if (err)
		return err;
	proc->maps_dirty = true;
	err = sp__python_note_module(procs, proc, m);
	if (err || !procs->unwinder || procs->lazy_tables)
		return err;
	module_to_mapping(m, &map);
	err = sp_unwinder_prepare(procs->unwinder, &map);
	if (err)
		sp__log(procs->logger, SP_LOG_DEBUG,
			"unwind table of %s (pid %d): %s", m->path, proc->pid,
			sp_strerror(err));
	return 0;
}

static int module_add(struct sp__procs *procs, struct sp__process *proc,
		      const struct sp__map_desc *d)
{
	struct sp__module m;
	int err = module_fill(procs, proc->pid, d, &m);

	if (err)
		return err;
	if (sp__jit_arena_candidate(&m)) {
		m.jit_tries = SP__JIT_ARENA_TRIES;
		proc->jit_pending++;
	}
	err = module_emit(procs, proc, &m);
	if (err)
		module_fini(procs->mem, &m);
	return err;
}

void sp__module_desc(const struct sp__module *m, struct sp__map_desc *d)
{
	memset(d, 0, sizeof(*d));
	d->start = m->start;
	d->end = m->end;
	d->offset = m->offset;
	d->inode = m->inode;
	d->inode_generation = m->inode_generation;
	d->dev_major = m->dev_major;
	d->dev_minor = m->dev_minor;
	d->path = m->path;
	d->path_len = m->path_len;
}

bool sp__module_matches(const struct sp__module *m,
			const struct sp__map_desc *d)
{
	return m->start == d->start && m->end == d->end &&
	       m->offset == d->offset && m->inode == d->inode &&
	       m->dev_major == d->dev_major && m->dev_minor == d->dev_minor &&
	       m->path_len == d->path_len &&
	       memcmp(m->path, d->path, d->path_len) == 0;
}

/* A surviving piece [start, end) of module @m, as a new mapping. */
static int fragment_add(struct sp__procs *procs, struct sp__process *proc,
			const struct sp__module *m, uint64_t start,
			uint64_t end)
{
	struct sp__map_desc d;

	sp__module_desc(m, &d);
	d.start = start;
	d.end = end;
	d.offset = m->offset + (start - m->start);
	return module_add(procs, proc, &d);
}

/* Retires module @i of @proc and re-adds what lies outside [start, end). */
static int module_split(struct sp__procs *procs, struct sp__process *proc,
			size_t i, uint64_t start, uint64_t end)
{
	struct sp__module old =
		*(struct sp__module *)sp__vec_at(&proc->modules, i);
	int err = sp__procs_sync(procs);

	if (!err)
		err = sp_writer_deactivate_module(procs->writer, old.id);
	if (err)
		return err;
	memmove(sp__vec_at(&proc->modules, i),
		sp__vec_at(&proc->modules, i + 1),
		(proc->modules.len - i - 1) * sizeof(old));
	proc->modules.len--;
	proc->maps_dirty = true;
	if (old.start < start)
		err = fragment_add(procs, proc, &old, old.start, start);
	if (!err && end < old.end)
		err = fragment_add(procs, proc, &old, end, old.end);
	module_fini(procs->mem, &old);
	return err;
}

int sp__process_map(struct sp__procs *procs, struct sp__process *proc,
		    const struct sp__map_desc *d)
{
	size_t i;
	int err;

	if (d->end <= d->start)
		return -EINVAL;
	for (i = 0; i < proc->modules.len; i++) {
		const struct sp__module *m = sp__vec_at(&proc->modules, i);

		if (sp__module_matches(m, d))
			return 0;
	}
	/* Splitting appends fragments at the end, past this scan's range. */
	for (i = proc->modules.len; i-- > 0;) {
		const struct sp__module *m = sp__vec_at(&proc->modules, i);

		if (m->start >= d->end || d->start >= m->end)
			continue;
		err = module_split(procs, proc, i, d->start, d->end);
		if (err)
			return err;
	}
	return module_add(procs, proc, d);
}

int sp__process_retire_module(struct sp__procs *procs, struct sp__process *proc,
			      size_t index)
{
	const struct sp__module *m = sp__vec_at(&proc->modules, index);

	return module_split(procs, proc, index, m->start, m->end);
}

bool sp__process_covers(const struct sp__process *proc, uint64_t addr)
{
	size_t i;

	for (i = 0; i < proc->modules.len; i++) {
		const struct sp__module *m = sp__vec_at(&proc->modules, i);

		if (addr >= m->start && addr < m->end)
			return true;
	}
	return false;
}

int sp__process_retire_all(struct sp__procs *procs, struct sp__process *proc)
{
	size_t i;
	int err;

	/* Exit or exec: the JIT code it had is gone (jit_track.h). */
	sp__jit_proc_end(proc->jit, procs->time_ns);
	err = sp__python_unmark(procs, proc);
	if (!err)
		err = sp__procs_sync(procs);
	/* The generation ends at this frame count (jit_side_names.h). */
	if (!err && procs->jit_side && proc->modules.len)
		sp__jit_side_save(procs->jit_side, proc->pid,
				  sp_writer_frame_count(procs->writer));
	if (!err)
		err = sp_writer_deactivate_process(procs->writer, proc->pid);
	if (err)
		return err;
	for (i = 0; i < proc->modules.len; i++)
		module_fini(procs->mem, sp__vec_at(&proc->modules, i));
	proc->modules.len = 0;
	proc->maps_dirty = true;
	return 0;
}

int sp__process_clone_modules(struct sp__procs *procs,
			      const struct sp__process *parent,
			      struct sp__process *child)
{
	size_t i;
	int err;

	for (i = 0; i < parent->modules.len; i++) {
		struct sp__map_desc d;

		sp__module_desc(sp__vec_at(&parent->modules, i), &d);
		err = sp__process_map(procs, child, &d);
		if (err)
			return err;
	}
	return 0;
}

static int map_cmp(const void *a, const void *b)
{
	const struct sp_mapping *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

uint64_t sp__maps_gen_next(void)
{
	static _Atomic uint64_t gen;

	return atomic_fetch_add(&gen, 1) + 1;
}

int sp__process_mappings(struct sp__procs *procs, struct sp__process *proc,
			 const struct sp_mapping **maps, size_t *nmaps)
{
	size_t i;

	if (proc->maps_dirty) {
		proc->maps.len = 0;
		if (sp__vec_reserve(&proc->maps, procs->mem, proc->modules.len))
			return -ENOMEM;
		for (i = 0; i < proc->modules.len; i++)
			module_to_mapping(sp__vec_at(&proc->modules, i),
					  sp__vec_at(&proc->maps, i));
		proc->maps.len = proc->modules.len;
		if (proc->maps.len > 1) /* none: no array at all (NULL) */
			qsort(proc->maps.data, proc->maps.len,
			      sizeof(struct sp_mapping), map_cmp);
		proc->maps_dirty = false;
		proc->maps_gen = sp__maps_gen_next();
	}
	*maps = proc->maps.data;
	*nmaps = proc->maps.len;
	return 0;
}
