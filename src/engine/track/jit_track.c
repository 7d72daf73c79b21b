/* SPDX-License-Identifier: MIT */
/* Record-time JIT state: tables, regions, snapshots, refreshes, regenerations. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "jit_track.h"
#include "jitdump_read.h"
#include "logging.h"
#include "opts.h"
#include "process.h"

/*
 * A snapshot is one allocation, never changed once built:
 *
 *   struct sp__jit_snap | regions[n] (sorted by start) | max_end[n] |
 *   tables[n] (one reference each, dropped with the snapshot)
 *
 * The process keeps its current snapshot (one reference) until its areas
 * change; each job takes another. Areas change on the sequencer's thread
 * only, so a rebuilt snapshot never races with an unwind of the old one.
 */
struct sp__jit_snap {
	size_t refs;
	size_t bytes;
	struct sp__jit_index ix;
	struct sp__jit_table **tabs;
};

/*
 * The live map: what code each address holds now, as sorted, disjoint
 * pieces that name an area. Adding code finds the pieces it covers by a
 * binary search (JITs mostly allocate upwards, so it is mostly an
 * append), ends their areas at @from and, when they held other code,
 * asks for a new generation of the modules there.
 */
struct live_piece {
	uint64_t start;
	uint64_t end;
	uint32_t area;
	uint32_t pad;
};

int sp__jit_new(const struct sp__mem *mem, const struct sp_logger *logger,
		struct sp__jit **out)
{
	struct sp__jit *jit = sp__mem_calloc(mem, 1, sizeof(*jit));
	long page = sysconf(_SC_PAGESIZE);

	if (!jit)
		return -ENOMEM;
	jit->mem = *mem;
	jit->logger = logger;
	jit->page_size = page > 0 ? (uint64_t)page : 4096;
	jit->scan_budget = SP__JIT_SCAN_BUDGET;
	jit->urgent_budget = SP__JIT_URGENT_BUDGET;
	jit->st.size = sizeof(jit->st);
	sp__vec_init(&jit->cache, sizeof(struct sp__jit_table *));
	sp__vec_init(&jit->cache_keys, 2 * sizeof(uint64_t));
	sp__jit_desc_cache_init(jit);
	*out = jit;
	return 0;
}

void sp__jit_free(struct sp__jit *jit)
{
	size_t i;

	if (!jit)
		return;
	for (i = 0; i < jit->cache.len; i++)
		sp__jit_table_put(
			&jit->mem,
			*(struct sp__jit_table **)sp__vec_at(&jit->cache, i));
	sp__vec_fini(&jit->cache, &jit->mem);
	sp__vec_fini(&jit->cache_keys, &jit->mem);
	sp__jit_desc_cache_free(jit);
	sp__mem_free(&jit->mem, jit, sizeof(*jit));
}

/* ---- tables -------------------------------------------------------------- */

struct sp__jit_table *sp__jit_table_new(struct sp__jit *jit,
					struct sp__cfi_table *t)
{
	struct sp__jit_table *tab = sp__mem_calloc(&jit->mem, 1, sizeof(*tab));

	if (!tab) {
		sp__cfi_table_free(t);
		return NULL;
	}
	tab->t = t;
	tab->refs = 1;
	sp__cfi_table_range(t, &tab->base, &tab->span);
	return tab;
}

void sp__jit_table_put(const struct sp__mem *mem, struct sp__jit_table *tab)
{
	if (!tab || --tab->refs)
		return;
	sp__cfi_table_free(tab->t);
	sp__mem_free(mem, tab, sizeof(*tab));
}

/* ---- processes ------------------------------------------------------------ */

struct sp__jit_proc *sp__jit_proc_of(struct sp__jit *jit, struct sp__process *p)
{
	struct sp__jit_proc *jp = p->jit;

	if (jp)
		return jp;
	jp = sp__mem_calloc(&jit->mem, 1, sizeof(*jp));
	if (!jp)
		return NULL;
	jp->jit = jit;
	jp->pid = p->pid;
	jp->side_fd = -1;
	sp__vec_init(&jp->objects, sizeof(struct sp__jit_object));
	sp__vec_init(&jp->entries, sizeof(struct sp__gdbjit_entry));
	sp__vec_init(&jp->areas, sizeof(struct sp__jit_area));
	sp__vec_init(&jp->live, sizeof(struct live_piece));
	sp__vec_init(&jp->regens, sizeof(struct sp__jit_regen));
	sp__vec_init(&jp->templates, sizeof(struct sp__jit_bytes));
	p->jit = jp;
	return jp;
}

static void areas_clear(struct sp__jit_proc *jp)
{
	const struct sp__mem *mem = &jp->jit->mem;
	size_t i;

	for (i = 0; i < jp->areas.len; i++)
		sp__jit_table_put(
			mem,
			((struct sp__jit_area *)sp__vec_at(&jp->areas, i))->tab);
	jp->areas.len = 0;
	jp->live.len = 0;
	jp->dirty = true;
}

void sp__jit_proc_end(struct sp__jit_proc *jp, uint64_t time)
{
	if (!jp)
		return;
	sp__jit_dump_close(jp);
	sp__jit_gdb_end(jp, time);
	sp__jit_sidecar_close(jp, time);
	sp__jit_templates_clear(jp);
	areas_clear(jp);
	jp->side_failed = false;
	jp->regens.len = 0;
	jp->desc_addr = 0;
	jp->desc_read = false;
}

void sp__jit_proc_free(struct sp__jit_proc *jp)
{
	const struct sp__mem *mem;

	if (!jp)
		return;
	mem = &jp->jit->mem;
	sp__jit_proc_end(jp, sp__now_ns());
	sp__jit_snap_put(mem, jp->snap);
	sp__mem_free(mem, jp->pend_eh, jp->pend_cap);
	sp__vec_fini(&jp->objects, mem);
	sp__vec_fini(&jp->entries, mem);
	sp__vec_fini(&jp->areas, mem);
	sp__vec_fini(&jp->live, mem);
	sp__vec_fini(&jp->regens, mem);
	sp__vec_fini(&jp->templates, mem);
	sp__mem_free(mem, jp, sizeof(*jp));
}

/* ---- regions -------------------------------------------------------------- */

int sp__jit_want_regen(struct sp__jit_proc *jp, uint64_t time, uint64_t lo,
		       uint64_t hi)
{
	struct sp__jit_regen r = { time, lo, hi }, *last;

	/* Bounded: past 1024 pending, the newest one grows to cover it. */
	if (jp->regens.len >= 1024) {
		last = sp__vec_at(&jp->regens, jp->regens.len - 1);
		last->lo = lo < last->lo ? lo : last->lo;
		last->hi = hi > last->hi ? hi : last->hi;
		last->time = time < last->time ? time : last->time;
		return 0;
	}
	return sp__vec_push(&jp->regens, &jp->jit->mem, &r);
}

/* First piece ending above @addr. */
static size_t live_first(const struct sp__vec *live, uint64_t addr)
{
	const struct live_piece *p = live->data;
	size_t lo = 0, hi = live->len, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (p[mid].end <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Ends (and, for other code, regenerates) what [start, end) replaces. */
static int live_replace(struct sp__jit_proc *jp, uint64_t start, uint64_t end,
			uint64_t from, uint64_t code_index)
{
	struct sp__vec *live = &jp->live;
	struct sp__jit_area *a = jp->areas.data;
	size_t i = live_first(live, start), k;
	struct live_piece *p = live->data;
	int err = 0;

	for (k = i; k < live->len && p[k].start < end && !err; k++) {
		struct sp__jit_region *r = &a[p[k].area].r;

		if (r->until > from)
			r->until = r->from < from ? from : r->from;
		jp->dirty = true;
		if (a[p[k].area].code_index != code_index)
			err = sp__jit_want_regen(
				jp, from,
				p[k].start > start ? p[k].start : start,
				p[k].end < end ? p[k].end : end);
	}
	return err;
}

/* Puts [start, end) -> @area into @live, trimming what it covers. */
static int live_insert(struct sp__jit_proc *jp, struct sp__vec *live,
		       uint64_t start, uint64_t end, uint32_t area)
{
	const struct sp__mem *mem = &jp->jit->mem;
	struct live_piece piece = { start, end, area, 0 }, head, tail;
	size_t i = live_first(live, start), k;
	struct live_piece *p;
	bool has_head = false, has_tail = false;

	if (sp__vec_reserve(live, mem, 3))
		return -ENOMEM;
	p = live->data;
	for (k = i; k < live->len && p[k].start < end; k++)
		;
	if (k > i && p[i].start < start) {
		head = p[i];
		head.end = start;
		has_head = true;
	}
	if (k > i && p[k - 1].end > end) {
		tail = p[k - 1];
		tail.start = end;
		has_tail = true;
	}
	/* Replace p[i, k) by head?, piece, tail?. */
	memmove(&p[i + has_head + 1 + has_tail], &p[k],
		(live->len - k) * sizeof(*p));
	live->len = live->len - (k - i) + has_head + 1 + has_tail;
	if (has_head)
		p[i++] = head;
	p[i++] = piece;
	if (has_tail)
		p[i] = tail;
	return 0;
}

/*
 * Appends the area of [start, end) from @from with @tab (its reference is
 * not taken yet: the caller does that once nothing can fail any more).
 */
static int area_push(struct sp__jit_proc *jp, uint64_t start, uint64_t end,
		     uint64_t from, uint64_t bias, struct sp__jit_table *tab,
		     uint64_t code_index)
{
	struct sp__jit_area a = { 0 };

	if (jp->areas.len >= SP__JIT_REGIONS_MAX)
		return -E2BIG;
	a.r.start = start;
	a.r.end = end;
	a.r.from = from;
	a.r.until = UINT64_MAX;
	a.r.bias = bias;
	a.r.table = tab ? tab->t : NULL;
	a.tab = tab;
	a.code_index = code_index;
	return sp__vec_push(&jp->areas, &jp->jit->mem, &a);
}

int sp__jit_add_region(struct sp__jit_proc *jp, uint64_t start, uint64_t end,
		       uint64_t from, uint64_t bias, struct sp__jit_table *tab,
		       uint64_t code_index)
{
	bool gdb = code_index >> 63;
	int err;

	if (end <= start)
		return 0;
	/* GDB JIT objects (bit 63) have modules of their own: no reuse. */
	err = gdb ? 0 : live_replace(jp, start, end, from, code_index);
	if (!err)
		err = area_push(jp, start, end, from, bias, tab, code_index);
	if (err)
		return err;
	err = gdb ? 0 :
		    live_insert(jp, &jp->live, start, end,
				(uint32_t)(jp->areas.len - 1));
	if (err) {
		jp->areas.len--; /* its table reference was not taken yet */
		return err;
	}
	if (tab)
		tab->refs++;
	jp->dirty = true;
	return 0;
}

int sp__jit_add_inferred(struct sp__jit_proc *jp, uint64_t start, uint64_t end,
			 uint64_t from, uint64_t bias,
			 struct sp__jit_table *tab)
{
	int err = area_push(jp, start, end, from, bias, tab, UINT64_MAX);

	if (err)
		return err;
	tab->refs++;
	jp->dirty = true;
	return 0;
}

void sp__jit_end_regions(struct sp__jit_proc *jp, uint64_t start, uint64_t end,
			 uint64_t until)
{
	struct sp__jit_area *a = jp->areas.data;
	size_t i;

	for (i = 0; i < jp->areas.len; i++) {
		struct sp__jit_region *r = &a[i].r;

		if (r->start < start || r->end > end || r->until <= until)
			continue;
		r->until = until > r->from ? until : r->from;
		jp->dirty = true;
	}
}

/* ---- snapshots ------------------------------------------------------------ */

static int cmp_area(const void *x, const void *y)
{
	const struct sp__jit_region *a = &((const struct sp__jit_area *)x)->r;
	const struct sp__jit_region *b = &((const struct sp__jit_area *)y)->r;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->from < b->from ? -1 : a->from > b->from;
}

void sp__jit_snap_drop(const struct sp__mem *mem, struct sp__jit_snap *s)
{
	size_t i;

	if (--s->refs)
		return;
	for (i = 0; i < s->ix.n; i++)
		sp__jit_table_put(mem, s->tabs[i]);
	sp__mem_free(mem, s, s->bytes);
}

const struct sp__jit_index *sp__jit_snap_ix(const struct sp__jit_snap *s)
{
	return &s->ix;
}

/*
 * Regions that ended are kept (a sample queued from before the end may
 * still need them), but only those with a table go into the index; the
 * rest mark replaced code for end_overlapped().
 */
static struct sp__jit_snap *snap_build(struct sp__jit_proc *jp)
{
	const struct sp__mem *mem = &jp->jit->mem;
	const struct sp__jit_area *a = jp->areas.data;
	struct sp__jit_area *sorted;
	struct sp__jit_region *regions;
	struct sp__jit_snap *s;
	uint64_t *max_end, m = 0;
	size_t i, n = 0, bytes;

	for (i = 0; i < jp->areas.len; i++)
		n += a[i].tab != NULL;
	bytes = sizeof(*s) + n * (sizeof(*regions) + sizeof(uint64_t) +
				  sizeof(struct sp__jit_table *));
	s = sp__mem_calloc(mem, 1, bytes);
	sorted = n ? sp__mem_alloc(mem, n * sizeof(*sorted)) : NULL;
	if (!s || (n && !sorted)) {
		sp__mem_free(mem, s, bytes);
		return NULL;
	}
	for (i = 0, n = 0; i < jp->areas.len; i++)
		if (a[i].tab)
			sorted[n++] = a[i];
	if (n > 1) /* qsort's array may not be NULL, even for 0 */
		qsort(sorted, n, sizeof(*sorted), cmp_area);
	s->refs = 1;
	s->bytes = bytes;
	regions = (struct sp__jit_region *)(s + 1);
	max_end = (uint64_t *)(regions + n);
	s->tabs = (struct sp__jit_table **)(max_end + n);
	for (i = 0; i < n; i++) {
		regions[i] = sorted[i].r;
		s->tabs[i] = sorted[i].tab;
		s->tabs[i]->refs++;
		if (regions[i].end > m)
			m = regions[i].end;
		max_end[i] = m;
	}
	sp__mem_free(mem, sorted, n * sizeof(*sorted));
	s->ix.regions = regions;
	s->ix.max_end = max_end;
	s->ix.n = n;
	return s;
}

struct sp__jit_snap *sp__jit_snap_get(struct sp__procs *procs,
				      struct sp__process *p)
{
	struct sp__jit_proc *jp = p ? p->jit : NULL;
	struct sp__jit_snap *s;

	if (!procs->jit || !jp)
		return NULL;
	if (jp->dirty || !jp->snap) {
		s = snap_build(jp);
		if (!s)
			return NULL; /* unwound without JIT data this once */
		sp__jit_snap_put(procs->mem, jp->snap);
		jp->snap = s;
		jp->snap_empty = !s->ix.n;
		jp->dirty = false;
	}
	if (!jp->snap->ix.n)
		return NULL;
	jp->snap->refs++;
	return jp->snap;
}

/* ---- regenerations ----------------------------------------------------- */

/*
 * Writes module @id of @p again as a new generation: tag 8, then the same
 * mapping as a new module record. The path is copied first: retiring the
 * module frees it.
 */
static int regen_module(struct sp__procs *procs, struct sp__process *p,
			uint32_t id)
{
	struct sp__map_desc d;
	char *path = NULL;
	size_t i;
	int err;

	for (i = 0; i < p->modules.len; i++)
		if (((struct sp__module *)sp__vec_at(&p->modules, i))->id == id)
			break;
	if (i == p->modules.len)
		return 0;
	sp__module_desc(sp__vec_at(&p->modules, i), &d);
	path = sp__mem_alloc(procs->mem, d.path_len + 1);
	if (!path)
		return -ENOMEM;
	memcpy(path, d.path, d.path_len + 1);
	d.path = path;
	err = sp__process_retire_module(procs, p, i);
	if (!err)
		err = sp__process_map(procs, p, &d);
	sp__mem_free(procs->mem, path, d.path_len + 1);
	return err;
}

/* Module ids of @p overlapping a due regeneration, into @ids (cap @cap). */
static size_t due_modules(const struct sp__process *p,
			  const struct sp__jit_proc *jp, uint64_t time,
			  uint32_t *ids, size_t cap)
{
	const struct sp__jit_regen *r = jp->regens.data;
	size_t i, k, n = 0;

	for (i = 0; i < p->modules.len && n < cap; i++) {
		const struct sp__module *m = sp__vec_at(&p->modules, i);

		for (k = 0; k < jp->regens.len; k++) {
			if (r[k].time > time || r[k].lo >= m->end ||
			    m->start >= r[k].hi)
				continue;
			ids[n++] = m->id;
			break;
		}
	}
	return n;
}

int sp__jit_refresh(struct sp__procs *procs, struct sp__process *p,
		    struct sp__jit_proc *jp, uint64_t now, unsigned flags)
{
	int err = 0;

	if (flags & SP__JIT_SCAN)
		err = sp__jit_scan_modules(procs, p, jp,
					   (flags & SP__JIT_URGENT) != 0);
	if (err)
		return err;
	jp->last_refresh_ns = now;
	if (jp->dump)
		err = sp__jit_dump_refresh(jp);
	if (!err && jp->desc_addr)
		err = sp__jit_gdb_check(procs, jp, now, false);
	if (!err && !(flags & SP__JIT_WRITING))
		err = sp__jit_gdb_apply(procs, p, jp);
	return err;
}

bool sp__jit_check_due(struct sp__process *p, struct sp__jit_proc *jp,
		       uint64_t *now)
{
	/* The clock is read only for a process with a source to check. */
	if ((!jp->dump && !jp->desc_addr) || p->state != SP__PROC_ALIVE)
		return false;
	*now = sp__now_ns();
	if (*now < jp->next_check_ns)
		return false;
	jp->next_check_ns = *now + SP__JIT_CHECK_NS;
	return true;
}

int sp__jit_apply_due(struct sp__procs *procs, struct sp__process *p,
		      uint64_t time)
{
	struct sp__jit_proc *jp = p ? p->jit : NULL;
	struct sp__jit_regen *r;
	uint32_t ids[64];
	size_t i, k, n;
	int err;

	if (!jp || p->state == SP__PROC_EXITED || !sp__jit_due_pending(jp))
		return 0;
	/*
	 * Threaded mode: the jobs dispatched before are written first, as
	 * any module change would; their retries may refresh @jp (new
	 * requests), which must not happen while the requests are walked.
	 */
	err = sp__procs_sync(procs);
	if (!err)
		err = sp__jit_gdb_apply(procs, p, jp);
	if (err || !jp->regens.len)
		return err;
	n = due_modules(p, jp, time, ids, 64);
	for (i = 0; i < n && !err; i++)
		err = regen_module(procs, p, ids[i]);
	jp->jit->st.regenerations += i;
	/* Drop the due requests, keep the later ones in order. */
	r = jp->regens.data;
	for (i = 0, k = 0; i < jp->regens.len; i++)
		if (r[i].time > time)
			r[k++] = r[i];
	jp->regens.len = k;
	return err;
}

/* ---- unwinds that stop in JIT code ------------------------------------- */

/* Anonymous memory and the pseudo mappings a JIT allocates code in. */
static bool jit_memory_path(const char *path, size_t len)
{
	static const char *const prefix[] = { "//anon", "[anon",
					      "/memfd:", "[heap]",
					      "/dev/zero" };
	size_t i;

	if (len == 0)
		return true;
	for (i = 0; i < sizeof(prefix) / sizeof(prefix[0]); i++)
		if (len >= strlen(prefix[i]) &&
		    memcmp(path, prefix[i], strlen(prefix[i])) == 0)
			return true;
	return false;
}

bool sp__jit_suspect(const struct sp__process *p, const struct sp__jit_proc *jp,
		     uint64_t pc)
{
	const struct sp__jit_area *a = jp->areas.data;
	size_t i;

	for (i = 0; i < jp->areas.len; i++)
		if (pc >= a[i].r.start && pc < a[i].r.end)
			return true;
	for (i = 0; i < p->modules.len; i++) {
		const struct sp__module *m = sp__vec_at(&p->modules, i);

		if (pc >= m->start && pc < m->end)
			return jit_memory_path(m->path, m->path_len);
	}
	return true; /* in no module at all */
}
