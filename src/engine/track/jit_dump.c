/* SPDX-License-Identifier: MIT */
/* Following a process's jitdump at record time, for the unwinding info it carries. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <stackpulse/error.h>

#include "hash.h"
#include "jit_track.h"
#include "jitdump_read.h"
#include "logging.h"

/*
 * A JIT that writes a jitdump maps the file executable so that perf's
 * MMAP2 records name it; that mapping is a module of the process, which
 * is how the recorder finds the file (only jit-<its own pid>.dump: a
 * forked child inherits its parent's mapping but writes its own file).
 * Each routine check reads what was appended (at most
 * SP__JIT_READ_BUDGET bytes), so a JIT that writes a lot cannot stall a
 * poll, and a record cut by the writer waits for the next check.
 *
 * An UNWINDING_INFO record describes the CODE_LOAD after it. Its
 * .eh_frame is built into a table once per distinct content (CPython's
 * trampolines all carry the same bytes) with the section placed at
 * EH_VADDR; pointers are pc-relative, so the rows land at an offset from
 * EH_VADDR that is the same for every copy, and the code's region uses
 * bias = code_addr - (first row): the first FDE starts the code, as every
 * producer lays it out (perf's genelf places the copy right behind the
 * code). Loads without unwinding info still count, as code that replaces
 * what was at their addresses.
 */

#define EH_VADDR (1ull << 32)
#define EH_MAX (16u << 20)
#define TEMPLATES_MAX 16
#define TEMPLATE_MAX_LEN 4096

bool sp__jit_dump_name(const char *path, int32_t pid)
{
	const char *base = strrchr(path, '/');
	char want[32];

	base = base ? base + 1 : path;
	snprintf(want, sizeof(want), "jit-%d.dump", (int)pid);
	return strcmp(base, want) == 0;
}

int sp__jit_dump_open(struct sp__jit_proc *jp, const char *path,
		      uint32_t module_id)
{
	struct sp__jit *jit = jp->jit;
	int err =
		sp__jitdump_reader_open(&jit->mem, path, jp->pid, 0, &jp->dump);

	if (err) {
		jp->dump_failed = true;
		jit->st.jitdump_errors++;
		sp__log(jit->logger, SP_LOG_WARN, "jitdump %s of pid %d: %s",
			path, jp->pid, sp_strerror(err));
		return err;
	}
	jp->dump_module = module_id;
	jit->st.jitdump_files++;
	return 0;
}

void sp__jit_dump_close(struct sp__jit_proc *jp)
{
	sp__jitdump_reader_free(jp->dump);
	jp->dump = NULL;
	jp->pend_unwind = false;
}

/* The table of .eh_frame bytes @eh, shared when seen before (+1 ref). */
static struct sp__jit_table *table_for(struct sp__jit *jit, const uint8_t *eh,
				       size_t len)
{
	uint64_t key[2] = { sp__hash_bytes(eh, len), len };
	struct sp__cfi_table *t;
	struct sp__jit_table *tab;
	size_t i;

	for (i = 0; i < jit->cache_keys.len; i++) {
		const uint64_t *k = sp__vec_at(&jit->cache_keys, i);

		if (k[0] == key[0] && k[1] == key[1]) {
			tab = *(struct sp__jit_table **)sp__vec_at(&jit->cache,
								   i);
			tab->refs++;
			return tab;
		}
	}
	if (sp__cfi_table_from_eh_frame(&jit->mem, eh, len, EH_VADDR, &t))
		return NULL;
	tab = sp__jit_table_new(jit, t);
	if (!tab || jit->cache.len >= SP__JIT_TABLE_CACHE)
		return tab;
	if (sp__vec_push(&jit->cache_keys, &jit->mem, key) == 0) {
		if (sp__vec_push(&jit->cache, &jit->mem, &tab) == 0)
			tab->refs++; /* the cache's */
		else
			jit->cache_keys.len--;
	}
	return tab;
}

static int keep_unwind(struct sp__jit_proc *jp,
		       const struct sp__jitdump_unwind *u)
{
	const struct sp__mem *mem = &jp->jit->mem;

	jp->pend_unwind = false;
	if (u->eh_frame_len == 0 || u->eh_frame_len > EH_MAX)
		return 0; /* V8 writes empty ones */
	if (u->eh_frame_len > jp->pend_cap) {
		uint8_t *b = sp__mem_alloc(mem, u->eh_frame_len);

		if (!b)
			return -ENOMEM;
		sp__mem_free(mem, jp->pend_eh, jp->pend_cap);
		jp->pend_eh = b;
		jp->pend_cap = u->eh_frame_len;
	}
	memcpy(jp->pend_eh, u->eh_frame, u->eh_frame_len);
	jp->pend_len = u->eh_frame_len;
	jp->pend_unwind = true;
	return 0;
}

/*
 * Templates: the distinct code of loads with unwinding info, up to
 * TEMPLATES_MAX of at most TEMPLATE_MAX_LEN bytes (CPython has one: every
 * trampoline is a copy of the same 11 bytes). CPython 3.13 writes its
 * dump through stdio, so the records of the newest trampolines stay in
 * its 4 KiB buffer until it fills or the process exits, while the code
 * already runs; an unwind that stops at such code finds it by its bytes.
 * Same bytes, same instructions: the template's rows describe the copy
 * exactly, at the copy's address.
 */
static void keep_template(struct sp__jit_proc *jp, const uint8_t *code,
			  size_t len, struct sp__jit_table *tab)
{
	const struct sp__mem *mem = &jp->jit->mem;
	struct sp__jit_bytes t = { sp__hash_bytes(code, len), NULL, len, tab };
	size_t i;

	if (len == 0 || len > TEMPLATE_MAX_LEN ||
	    jp->templates.len >= TEMPLATES_MAX)
		return;
	for (i = 0; i < jp->templates.len; i++) {
		const struct sp__jit_bytes *o = sp__vec_at(&jp->templates, i);

		if (o->hash == t.hash && o->len == len && o->tab == tab &&
		    memcmp(o->code, code, len) == 0)
			return;
	}
	t.code = sp__mem_alloc(mem, len);
	if (!t.code)
		return; /* only an aid: no template, no error */
	memcpy(t.code, code, len);
	if (sp__vec_push(&jp->templates, mem, &t)) {
		sp__mem_free(mem, t.code, len);
		return;
	}
	tab->refs++;
}

void sp__jit_templates_clear(struct sp__jit_proc *jp)
{
	const struct sp__mem *mem = &jp->jit->mem;
	size_t i;

	for (i = 0; i < jp->templates.len; i++) {
		struct sp__jit_bytes *t = sp__vec_at(&jp->templates, i);

		sp__mem_free(mem, t->code, t->len);
		sp__jit_table_put(mem, t->tab);
	}
	jp->templates.len = 0;
}

/* Whether the template @t starts at @start, given the bytes @buf at @at. */
static bool template_at(const struct sp__jit_bytes *t, const uint8_t *buf,
			uint64_t at, size_t buf_len, uint64_t start)
{
	uint64_t off = start - at;

	return start >= at && off <= buf_len && t->len <= buf_len - off &&
	       memcmp(buf + off, t->code, t->len) == 0;
}

bool sp__jit_dump_infer(struct sp__jit_proc *jp, uint64_t pc, uint64_t time)
{
	uint8_t buf[2 * TEMPLATE_MAX_LEN];
	size_t i, k, longest = 0, len;
	uint64_t at;

	for (i = 0; i < jp->templates.len; i++) {
		const struct sp__jit_bytes *t = sp__vec_at(&jp->templates, i);

		longest = t->len > longest ? t->len : longest;
	}
	if (!longest || pc < longest - 1)
		return false;
	at = pc - (longest - 1);
	len = 2 * longest - 1;
	if (sp__jit_vm_read(&jp->pid, at, buf, len))
		return false;
	for (i = 0; i < jp->templates.len; i++) {
		const struct sp__jit_bytes *t = sp__vec_at(&jp->templates, i);

		for (k = 0; k < t->len; k++) {
			uint64_t start = pc - k;

			if (!template_at(t, buf, at, len, start))
				continue;
			return sp__jit_add_inferred(jp, start, start + t->len,
						    time, start - t->tab->base,
						    t->tab) == 0;
		}
	}
	return false;
}

static int on_load(struct sp__jit_proc *jp, const struct sp__jitdump_load *l,
		   uint64_t time)
{
	struct sp__jit_table *tab = NULL;
	uint64_t bias = 0;
	int err;

	if (jp->pend_unwind) {
		tab = table_for(jp->jit, jp->pend_eh, jp->pend_len);
		if (tab && tab->span)
			bias = l->code_addr - tab->base;
		else if (tab) {
			sp__jit_table_put(&jp->jit->mem, tab);
			tab = NULL;
		}
		jp->jit->st.jitdump_unwind += tab != NULL;
		if (tab)
			keep_template(jp, l->code, (size_t)l->code_size, tab);
	}
	jp->pend_unwind = false;
	err = sp__jit_add_region(jp, l->code_addr, l->code_addr + l->code_size,
				 time, bias, tab, l->code_index);
	sp__jit_table_put(&jp->jit->mem, tab);
	return err == -E2BIG ? 0 : err;
}

/* The code moves: its region (and table) from @time on at the new address. */
static int on_move(struct sp__jit_proc *jp, const struct sp__jitdump_move *m,
		   uint64_t time)
{
	const struct sp__jit_area *a = jp->areas.data, *found = NULL;
	size_t i;
	int err;

	for (i = jp->areas.len; i-- > 0;)
		if (a[i].code_index == m->code_index &&
		    a[i].r.start == m->old_addr) {
			found = &a[i];
			break;
		}
	if (!found)
		return 0;
	sp__jit_end_regions(jp, m->old_addr, m->old_addr + m->code_size, time);
	err = sp__jit_add_region(jp, m->new_addr, m->new_addr + m->code_size,
				 time,
				 found->r.bias + (m->new_addr - m->old_addr),
				 found->tab, m->code_index);
	return err == -E2BIG ? 0 : err;
}

static int on_record(void *ctx, const struct sp__jitdump_header *h,
		     const struct sp__jitdump_record *rec)
{
	struct sp__jit_proc *jp = ctx;
	uint64_t time = sp__jitdump_monotonic(h) ? rec->timestamp : 0;

	jp->jit->st.jitdump_records++;
	switch (rec->id) {
	case SP__JITDUMP_UNWINDING_INFO:
		return keep_unwind(jp, &rec->u.unwind);
	case SP__JITDUMP_CODE_LOAD:
		return on_load(jp, &rec->u.load, time);
	case SP__JITDUMP_CODE_MOVE:
		return on_move(jp, &rec->u.move, time);
	default:
		return 0;
	}
}

int sp__jit_dump_refresh(struct sp__jit_proc *jp)
{
	int r;

	if (!jp->dump)
		return 0;
	r = sp__jitdump_reader_poll(jp->dump, SP__JIT_READ_BUDGET, on_record,
				    jp);
	if (r >= 0 || r == -ENOMEM)
		return r < 0 ? r : 0;
	/* The file cannot be followed further: what was read stays. */
	jp->jit->st.jitdump_errors++;
	sp__log(jp->jit->logger, SP_LOG_WARN, "jitdump of pid %d: %s", jp->pid,
		sp_strerror(r));
	sp__jit_dump_close(jp);
	jp->dump_failed = true;
	return 0;
}
