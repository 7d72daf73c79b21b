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
 *                                       one region per code section from
 *                                       @stamp, names to the sidecar
 *   known object missing from the list  its regions end at @stamp
 *
 * A walk that failed (a loop, too many entries, an unreadable entry)
 * removes nothing: what it missed may still be there.
 *
 * Stamps are sample times: samples are applied in time order, so the
 * samples applied after a check (time >= @stamp) see what it found.
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

static void object_end(struct sp__jit_proc *jp, struct sp__jit_object *o,
		       uint64_t until)
{
	sp__jit_end_regions(jp, o->text_lo, o->text_hi, until);
	jp->live_bytes -= o->e.size;
	o->live = false;
	jp->jit->st.gdb_removed++;
}

/* Regions and names of a parsed object; it becomes a live object. */
static int object_add(struct sp_recorder *rec, struct sp__jit_proc *jp,
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
	if (!err)
		err = sp__vec_push(&jp->objects, &jp->jit->mem, &o);
	if (err)
		return err;
	jp->live_bytes += e->size;
	jp->jit->st.gdb_objects++;
	return sp__jit_sidecar_object(rec, jp, elf, stamp);
}

/* Reads entry @e's object; 0 with *@changed when it must be (re)added. */
static int read_entry(struct sp_recorder *rec, struct sp__jit_proc *jp,
		      const struct sp__gdbjit_entry *e, bool full,
		      uint64_t stamp, struct sp__gdbjit_stats *g)
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
		object_end(jp, known, stamp);
	err = sp__jit_elf_parse(&jp->jit->mem, buf, (size_t)e->size, &elf);
	sp__mem_free(&jp->jit->mem, buf, (size_t)e->size);
	if (err) {
		g->bad_objects++;
		return err == -ENOMEM ? err : 0;
	}
	err = object_add(rec, jp, e, hash, &elf, stamp);
	sp__jit_elf_fini(&elf);
	return err;
}

/* Objects not in a complete walk are gone; dead ones are forgotten. */
static void sweep(struct sp__jit_proc *jp, bool complete, uint64_t stamp)
{
	struct sp__jit_object *o = jp->objects.data;
	size_t i, k = 0;

	for (i = 0; i < jp->objects.len; i++) {
		if (o[i].live && !o[i].seen && complete)
			object_end(jp, &o[i], stamp);
		if (o[i].live)
			o[k++] = o[i];
	}
	jp->objects.len = k;
}

static int apply_walk(struct sp_recorder *rec, struct sp__jit_proc *jp,
		      bool full, uint64_t stamp, int n)
{
	struct sp__gdbjit_stats g = { 0 };
	size_t i;
	int err = 0;

	for (i = 0; i < jp->objects.len; i++)
		((struct sp__jit_object *)sp__vec_at(&jp->objects, i))->seen =
			false;
	for (i = 0; i < jp->entries.len && !err; i++)
		err = read_entry(rec, jp, sp__vec_at(&jp->entries, i), full,
				 stamp, &g);
	jp->jit->st.gdb_bad_objects +=
		g.over_total + g.raced + g.bad_objects;
	sweep(jp, n >= 0 && !err, stamp);
	return err;
}

int sp__jit_gdb_check(struct sp_recorder *rec, struct sp__jit_proc *jp,
		      uint64_t now, uint64_t stamp, bool force)
{
	struct sp__gdbjit_ops ops = { sp__jit_vm_read, &jp->pid };
	struct sp__gdbjit_stats g = { 0 };
	struct sp__jit *jit = jp->jit;
	struct sp__gdbjit_desc d;
	bool full = force || now >= jp->next_full_ns;
	int err, n;

	jit->st.gdb_checks++;
	err = sp__gdbjit_read_desc(&ops, jp->desc_addr, &d);
	if (err)
		return 0; /* not set up yet (version 0), or the process went */
	if (jp->desc_read && same_desc(&d, &jp->desc) && !full)
		return 0;
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
	return apply_walk(rec, jp, full, stamp, n);
}

void sp__jit_gdb_end(struct sp__jit_proc *jp, uint64_t until)
{
	struct sp__jit_object *o = jp->objects.data;
	size_t i;

	for (i = 0; i < jp->objects.len; i++)
		if (o[i].live)
			object_end(jp, &o[i], until);
	jp->objects.len = 0;
	jp->live_bytes = 0;
}
