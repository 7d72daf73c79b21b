/* SPDX-License-Identifier: MIT */
/* Checking a process's GDB JIT list at record time: objects in, objects out. */
#define _GNU_SOURCE /* process_vm_readv */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include <stackpulse/error.h>

#include "hash.h"
#include "jit_elf.h"
#include "jit_track.h"
#include "logging.h"
#include "process.h"

/*
 * A check reads the 24-byte descriptor. When it is what the last check
 * saw and no full check is due, nothing else is read: a JIT changes the
 * descriptor with every (un)registration, so this catches new and removed
 * objects except when an object was freed and another one registered at
 * the same addresses between two checks; the full check, every
 * SP__JIT_FULL_NS, reads every object again and compares contents for
 * that. Otherwise the list is walked (gdbjit.c bounds it) and:
 *
 *   entry already known, same content   kept as it is
 *   new (or changed) entry              object read, parsed (jit_elf.c),
 *                                       its .eh_frame built into a table,
 *                                       one region per code section, names
 *                                       to the sidecar
 *   known object missing from the list  its regions end
 *
 * A walk that failed (a loop, too many entries, an unreadable entry)
 * removes nothing: what it missed may still be there.
 *
 * The interface has no timestamps, so the checks bound them, on the
 * sample clock (CLOCK_MONOTONIC): an object first seen by the check at
 * time T was registered after the check before it (at T0), so its
 * regions and names are valid from T0; one missing at T was there at T0
 * and is gone at T, so its regions end at T. Samples between stay with
 * what they ran, whichever way processing lags behind.
 */

int sp__jit_vm_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const int32_t *pid = ctx;
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(*pid, &local, 1, &remote, 1, 0);

	if (n < 0)
		return errno == ESRCH ? -ESRCH : -errno;
	return (size_t)n == len ? 0 : -EFAULT;
}

static bool same_desc(const struct sp__gdbjit_desc *a,
		      const struct sp__gdbjit_desc *b)
{
	return a->version == b->version && a->action == b->action &&
	       a->relevant == b->relevant && a->first == b->first;
}

static void count_walk(struct sp__jit *jit, const struct sp__gdbjit_stats *g,
		       int n)
{
	jit->st.gdb_walks++;
	jit->st.gdb_list_errors += n < 0 && n != -ENOMEM;
	jit->st.gdb_bad_objects += g->bad_sizes;
}

static struct sp__jit_object *find_object(struct sp__jit_proc *jp,
					  const struct sp__gdbjit_entry *e)
{
	struct sp__jit_object *o = jp->objects.data;
	size_t i;

	for (i = 0; i < jp->objects.len; i++)
		if (o[i].live && o[i].e.addr == e->addr &&
		    o[i].e.symfile == e->symfile && o[i].e.size == e->size)
			return &o[i];
	return NULL;
}

/* ---- the object's module ------------------------------------------------- */

/*
 * While registered, an object's code span [text_lo, text_hi) is a module
 * of its own (path: the sidecar, or "[gdbjit]" when names are not kept),
 * mapped over the anonymous mapping the JIT allocated it in; the process
 * module code splits that mapping around it. So every frame in the code
 * is pinned to the object's module, and code that another object puts
 * at the same addresses later is another module's: its frames are other
 * frames, whatever the delay before the recorder sees the change. When
 * the object goes, its module is retired and the mapping it covered is
 * written again over the span.
 */
#define NO_NAMES_PATH "[gdbjit]"

static void remember_under(struct sp__jit_proc *jp, struct sp__process *p,
			   struct sp__jit_object *o)
{
	size_t i;

	for (i = 0; i < p->modules.len; i++) {
		const struct sp__module *m = sp__vec_at(&p->modules, i);

		if (o->text_lo < m->start || o->text_lo >= m->end)
			continue;
		o->under_path = sp__mem_alloc(&jp->jit->mem, m->path_len + 1);
		if (!o->under_path)
			return; /* nothing to put back: not an error */
		memcpy(o->under_path, m->path, m->path_len + 1);
		o->under_len = m->path_len;
		o->under_offset = m->offset + (o->text_lo - m->start);
		o->has_under = true;
		return;
	}
}

static int map_object(struct sp__procs *procs, struct sp__process *p,
		      struct sp__jit_proc *jp, struct sp__jit_object *o)
{
	const char *path = sp__jit_sidecar_path(jp);
	struct sp__map_desc d = { 0 };
	int err;

	o->module = SP_NO_MODULE;
	if (!p || o->text_hi <= o->text_lo)
		return 0;
	remember_under(jp, p, o);
	d.start = o->text_lo;
	d.end = o->text_hi;
	d.path = path ? path : NO_NAMES_PATH;
	d.path_len = strlen(d.path);
	err = sp__process_map(procs, p, &d);
	if (!err && p->modules.len)
		o->module = ((const struct sp__module *)sp__vec_at(
				     &p->modules, p->modules.len - 1))
				    ->id;
	return err;
}

static int unmap_object(struct sp__procs *procs, struct sp__process *p,
			struct sp__jit_object *o)
{
	struct sp__map_desc d = { 0 };
	size_t i;
	int err = 0;

	for (i = 0; p && i < p->modules.len && o->module != SP_NO_MODULE; i++)
		if (((const struct sp__module *)sp__vec_at(&p->modules, i))
			    ->id == o->module) {
			err = sp__process_retire_module(procs, p, i);
			break;
		}
	if (!err && p && o->has_under) {
		d.start = o->text_lo;
		d.end = o->text_hi;
		d.offset = o->under_offset;
		d.path = o->under_path;
		d.path_len = o->under_len;
		err = sp__process_map(procs, p, &d);
	}
	o->module = SP_NO_MODULE;
	return err;
}

static void object_free(struct sp__jit_proc *jp, struct sp__jit_object *o)
{
	if (o->under_path)
		sp__mem_free(&jp->jit->mem, o->under_path, o->under_len + 1);
	o->under_path = NULL;
	o->has_under = false;
}

/*
 * The object is gone at @until: regions end, its module goes later, and
 * whatever module covers its span from @until on is a new generation.
 * The object's module may be gone already (a mapping record older than
 * the object's discovery, applied after it, covers the span), and then
 * frames of this code are pinned to the mapping: code registered at the
 * same addresses later must not inherit them.
 */
static void object_end(struct sp__jit_proc *jp, struct sp__jit_object *o,
		       uint64_t until)
{
	if (o->text_hi > o->text_lo)
		(void)sp__jit_want_regen(jp, until, o->text_lo, o->text_hi);
	sp__jit_end_regions(jp, o->text_lo, o->text_hi, until);
	jp->live_bytes -= o->e.size;
	o->live = false;
	jp->modules_pending = true;
	jp->jit->st.gdb_removed++;
}

int sp__jit_gdb_apply(struct sp__procs *procs, struct sp__process *p,
		      struct sp__jit_proc *jp)
{
	struct sp__jit_object *o;
	size_t i, k = 0;
	int err;

	if (!jp->modules_pending)
		return 0;
	/*
	 * Threaded mode: the jobs dispatched before are written first (as
	 * the first module record would have them); their retries may read
	 * the list again, which must not happen while it is walked here.
	 */
	err = sp__procs_sync(procs);
	if (err)
		return err;
	o = jp->objects.data;
	for (i = 0; i < jp->objects.len; i++) {
		if (!err && o[i].live && o[i].map_pending) {
			err = map_object(procs, p, jp, &o[i]);
			o[i].map_pending = false;
		}
		if (!err && !o[i].live && o[i].module != SP_NO_MODULE)
			err = unmap_object(procs, p, &o[i]);
		if (o[i].live || o[i].module != SP_NO_MODULE)
			o[k++] = o[i];
		else
			object_free(jp, &o[i]);
	}
	jp->objects.len = k;
	jp->modules_pending = err != 0;
	return err;
}

/* Regions, module and names of a parsed object; it becomes live. */
static int object_add(struct sp__procs *procs, struct sp__jit_proc *jp,
		      const struct sp__gdbjit_entry *e, uint64_t hash,
		      const struct sp__jit_elf *elf, uint64_t stamp)
{
	const struct sp__jit_elf_text *t = elf->text.data;
	struct sp__jit_table *tab = NULL;
	struct sp__jit_object o = { 0 };
	struct sp__cfi_table *cfi;
	size_t i;
	int err = 0;

	o.e = *e;
	o.hash = hash;
	o.from = stamp;
	o.seq = ++jp->object_seq;
	o.live = o.seen = true;
	o.text_lo = elf->text.len ? t[0].start : 0;
	o.text_hi = elf->text.len ? t[elf->text.len - 1].end : 0;
	if (elf->eh_frame &&
	    sp__cfi_table_from_eh_frame(&jp->jit->mem, elf->eh_frame,
					elf->eh_len, elf->eh_addr, &cfi) == 0)
		tab = sp__jit_table_new(jp->jit, cfi);
	/* ET_REL .eh_frame was relocated to the loaded code: bias 0. */
	for (i = 0; i < elf->text.len && !err; i++)
		err = sp__jit_add_region(jp, t[i].start, t[i].end, stamp, 0,
					 tab, o.seq | 1ull << 63);
	sp__jit_table_put(&jp->jit->mem, tab);
	if (err == -E2BIG)
		err = 0;
	/* Names first: the module's path is the sidecar's. */
	if (!err)
		err = sp__jit_sidecar_object(procs, jp, elf, stamp);
	o.module = SP_NO_MODULE;
	o.map_pending = true; /* at the next point where modules may change */
	if (!err)
		err = sp__vec_push(&jp->objects, &jp->jit->mem, &o);
	if (err)
		return err;
	jp->modules_pending = true;
	jp->live_bytes += e->size;
	jp->jit->st.gdb_objects++;
	return 0;
}

/* Reads entry @e's object and adds it when it is new or changed. */
static int read_entry(struct sp__procs *procs, struct sp__jit_proc *jp,
		      const struct sp__gdbjit_entry *e, bool full,
		      uint64_t from, uint64_t until, struct sp__gdbjit_stats *g)
{
	struct sp__gdbjit_ops ops = { sp__jit_vm_read, &jp->pid };
	struct sp__jit_object *known = find_object(jp, e);
	uint64_t budget = SP__GDBJIT_MAX_TOTAL - jp->live_bytes, hash;
	struct sp__jit_elf elf;
	uint8_t *buf;
	int err;

	if (known && !full) {
		known->seen = true;
		return 0;
	}
	if (known)
		budget += e->size; /* its bytes are counted already */
	err = sp__gdbjit_read_object(&ops, e, &jp->jit->mem, &budget, &buf, g);
	if (err)
		return err == -ENOMEM ? err : 0;
	jp->jit->st.gdb_bytes += e->size;
	hash = sp__hash_bytes(buf, (size_t)e->size);
	if (known && known->hash == hash) {
		known->seen = true;
		sp__mem_free(&jp->jit->mem, buf, (size_t)e->size);
		return 0;
	}
	if (known)
		object_end(jp, known, until);
	err = sp__jit_elf_parse(&jp->jit->mem, buf, (size_t)e->size, &elf);
	sp__mem_free(&jp->jit->mem, buf, (size_t)e->size);
	if (err) {
		g->bad_objects++;
		return err == -ENOMEM ? err : 0;
	}
	err = object_add(procs, jp, e, hash, &elf, from);
	sp__jit_elf_fini(&elf);
	return err;
}

/* Objects not in a complete walk are gone (modules: sp__jit_gdb_apply). */
static void sweep(struct sp__jit_proc *jp, bool complete, uint64_t until)
{
	struct sp__jit_object *o = jp->objects.data;
	size_t i;

	for (i = 0; i < jp->objects.len; i++)
		if (o[i].live && !o[i].seen && complete)
			object_end(jp, &o[i], until);
}

static int apply_walk(struct sp__procs *procs, struct sp__jit_proc *jp,
		      bool full, uint64_t from, uint64_t until, int n)
{
	struct sp__gdbjit_stats g = { 0 };
	size_t i;
	int err = 0;

	for (i = 0; i < jp->objects.len; i++)
		((struct sp__jit_object *)sp__vec_at(&jp->objects, i))->seen =
			false;
	for (i = 0; i < jp->entries.len && !err; i++)
		err = read_entry(procs, jp, sp__vec_at(&jp->entries, i), full,
				 from, until, &g);
	jp->jit->st.gdb_bad_objects += g.over_total + g.raced + g.bad_objects;
	if (!err)
		sweep(jp, n >= 0, until);
	return err;
}

int sp__jit_gdb_check(struct sp__procs *procs, struct sp__jit_proc *jp,
		      uint64_t now, bool force)
{
	struct sp__gdbjit_ops ops = { sp__jit_vm_read, &jp->pid };
	struct sp__gdbjit_stats g = { 0 };
	struct sp__jit *jit = jp->jit;
	struct sp__gdbjit_desc d;
	bool full = force || now >= jp->next_full_ns;
	int err, n;

	jit->st.gdb_checks++;
	err = sp__gdbjit_read_desc(&ops, jp->desc_addr, &d);
	/* Version 0: not set up yet; -ESRCH: gone. Else counted. */
	jit->st.gdb_list_errors += err && err != SP_ECORRUPT && err != -ESRCH;
	if (err) {
		if (err != SP_ECORRUPT)
			sp__log(jit->logger, SP_LOG_DEBUG,
				"GDB JIT descriptor of pid %d at %#llx: %s",
				jp->pid, (unsigned long long)jp->desc_addr,
				sp_strerror(err));
		return 0;
	}
	if (jp->desc_read && same_desc(&d, &jp->desc) && !full) {
		jp->gdb_seen_ns = now; /* nothing came or went up to now */
		return 0;
	}
	jp->desc = d;
	jp->desc_read = true;
	if (full)
		jp->next_full_ns = now + SP__JIT_FULL_NS;
	n = sp__gdbjit_walk(&ops, &d, &jit->mem, &jp->entries, &g);
	count_walk(jit, &g, n);
	if (n < 0 && n != -ENOMEM)
		sp__log(jit->logger, SP_LOG_DEBUG,
			"GDB JIT list of pid %d: %s after %zu entries", jp->pid,
			sp_strerror(n), jp->entries.len);
	if (n == -ENOMEM)
		return n;
	err = apply_walk(procs, jp, full, jp->gdb_seen_ns, now, n);
	if (!err)
		jp->gdb_seen_ns = now;
	return err;
}

void sp__jit_gdb_end(struct sp__jit_proc *jp, uint64_t until)
{
	struct sp__jit_object *o = jp->objects.data;
	size_t i;

	/* The process's modules are retired as a whole (tag 7). */
	for (i = 0; i < jp->objects.len; i++) {
		if (o[i].live)
			object_end(jp, &o[i], until);
		object_free(jp, &o[i]);
	}
	jp->objects.len = 0;
	jp->live_bytes = 0;
	jp->modules_pending = false;
}
