/* SPDX-License-Identifier: MIT */
/* Kernel symbol table: ordering, ranges, lookup, compaction, KASLR shift. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ksyms_internal.h"

/*
 * The loaders (kallsyms.c, system_map.c) append symbols in input order;
 * everything that depends on the whole input happens here, once, in
 * sp__ksyms_finish(). Lookups are a binary search over the start
 * addresses: after finishing, addresses are unique and every range ends at
 * or before the next start, so the floor symbol is the only candidate.
 */

static int cmp_sym(const void *a, const void *b)
{
	const struct sp__ksym *x = a, *y = b;

	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Input order is (addr, seq) order when addresses never go down. */
static void sort_syms(struct sp__ksyms *ks)
{
	size_t i;

	for (i = 1; i < ks->n; i++)
		if (ks->syms[i].addr < ks->syms[i - 1].addr)
			break;
	if (i < ks->n)
		qsort(ks->syms, ks->n, sizeof(*ks->syms), cmp_sym);
}

/* perf: of several symbols at one address, the later line wins. */
static void keep_later(struct sp__ksyms *ks)
{
	size_t i, w = 0;

	for (i = 0; i < ks->n; i++) {
		if (w && ks->syms[w - 1].addr == ks->syms[i].addr)
			ks->syms[w - 1] = ks->syms[i];
		else
			ks->syms[w++] = ks->syms[i];
	}
	ks->n = w;
}

/* Core symbols count only at/after _text/_stext (percpu offsets etc.). */
static void drop_below_anchor(struct sp__ksyms *ks)
{
	size_t i, w = 0;

	if (!ks->text)
		return;
	for (i = 0; i < ks->n; i++)
		if (ks->syms[i].module || ks->syms[i].addr >= ks->text)
			ks->syms[w++] = ks->syms[i];
	ks->n = w;
}

static bool same_module(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return a == b || strcmp(a, b) == 0;
}

static void link_next(struct sp__ksyms *ks)
{
	size_t i;

	for (i = 0; i + 1 < ks->n; i++) {
		ks->syms[i].has_next = 1;
		ks->syms[i].end = ks->syms[i + 1].addr;
		ks->syms[i].next_same =
			same_module(ks->syms[i].module, ks->syms[i + 1].module);
	}
	if (ks->n) {
		ks->syms[ks->n - 1].has_next = 0;
		ks->syms[ks->n - 1].end = 0;
	}
}

/* Where a symbol without a next symbol of its own module stops. */
static uint64_t sym_bound(const struct sp__ksyms *ks, const struct sp__ksym *s)
{
	if (!s->module && ks->etext > s->addr)
		return ks->etext;
	if (s->addr > UINT64_MAX - SP_KSYM_SPAN)
		return UINT64_MAX;
	return s->addr + SP_KSYM_SPAN;
}

static void set_ends(struct sp__ksyms *ks)
{
	struct sp__ksym *s;
	uint64_t next, bound;
	size_t i;

	for (i = 0; i < ks->n; i++) {
		s = &ks->syms[i];
		next = s->has_next ? s->end : UINT64_MAX;
		bound = sym_bound(ks, s);
		if (s->has_next && s->next_same)
			s->end = next;
		else
			s->end = next < bound ? next : bound;
	}
}

void sp__ksyms_finish(struct sp__ksyms *ks, bool linked)
{
	if (!linked) {
		sort_syms(ks);
		keep_later(ks);
	}
	drop_below_anchor(ks);
	if (!linked)
		link_next(ks);
	set_ends(ks);
}

bool sp__ksyms_is_usable(const struct sp__ksyms *ks)
{
	return ks && ks->nonzero_lines > 0;
}

const struct sp__ksym *sp__ksyms_floor(const struct sp__ksyms *ks,
				       uint64_t addr)
{
	size_t lo = 0, hi = ks->n, mid;

	/* Invariant: syms[< lo] start <= addr, syms[>= hi] start > addr. */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (ks->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? &ks->syms[lo - 1] : NULL;
}

static const struct sp__ksym *covering(const struct sp__ksyms *ks,
				       uint64_t addr)
{
	const struct sp__ksym *s = sp__ksyms_floor(ks, addr);

	return s && addr < s->end ? s : NULL;
}

int sp__ksyms_lookup(const struct sp__ksyms *ks, uint64_t addr,
		     struct sp_resolved_frame *out)
{
	const struct sp__ksym *s = ks ? covering(ks, addr) : NULL;

	if (!s)
		return 0;
	out->name = s->name;
	out->file = NULL;
	out->module = s->module ? s->module : "[kernel]";
	out->pc = addr;
	out->offset = addr - s->addr;
	out->line = 0;
	out->column = 0;
	out->kind = SP_RESOLVED_KERNEL;
	out->origin = SP_ORIGIN_KERNEL_SYMBOLS;
	out->flags = 0;
	out->inline_depth = 0;
	out->decl_line = 0;
	return 1;
}

static size_t count_covering(const struct sp__ksyms *ks, const uint64_t *pcs,
			     size_t npcs)
{
	const struct sp__ksym *s, *last = NULL;
	size_t i, n = 0;

	for (i = 0; i < npcs; i++) {
		s = covering(ks, pcs[i]);
		if (s && s != last)
			n++;
		if (s)
			last = s;
	}
	return n;
}

/* Copies the covering symbols of @pcs into @syms and @arena. */
static int copy_covering(const struct sp__ksyms *ks, const uint64_t *pcs,
			 size_t npcs, struct sp__ksym *syms,
			 struct sp__arena *arena)
{
	const struct sp__ksym *s, *last = NULL;
	const char *src_mod = NULL, *new_mod = NULL;
	struct sp__ksym *d = syms;
	size_t i;

	for (i = 0; i < npcs; i++) {
		s = covering(ks, pcs[i]);
		if (!s || s == last)
			continue;
		last = s;
		*d = *s;
		d->name = sp__arena_strndup(arena, &ks->mem, s->name,
					    strlen(s->name));
		if (s->module && s->module != src_mod) {
			src_mod = s->module;
			new_mod = sp__arena_strndup(arena, &ks->mem, src_mod,
						    strlen(src_mod));
		}
		d->module = s->module ? new_mod : NULL;
		if (!d->name || (s->module && !new_mod))
			return -ENOMEM;
		d++;
	}
	return 0;
}

int sp__ksyms_compact(struct sp__ksyms *ks, const uint64_t *pcs, size_t npcs)
{
	size_t n = count_covering(ks, pcs, npcs);
	struct sp__ksym *syms = NULL;
	struct sp__arena arena;

	sp__arena_init(&arena);
	if (n && !(syms = sp__mem_calloc(&ks->mem, n, sizeof(*syms))))
		return -ENOMEM;
	if (copy_covering(ks, pcs, npcs, syms, &arena) < 0) {
		sp__arena_fini(&arena, &ks->mem);
		sp__mem_free(&ks->mem, syms, n * sizeof(*syms));
		return -ENOMEM;
	}
	sp__arena_fini(&ks->arena, &ks->mem);
	sp__mem_free(&ks->mem, ks->syms, ks->cap * sizeof(*ks->syms));
	ks->arena = arena;
	ks->syms = syms;
	ks->n = n;
	ks->cap = n;
	ks->sparse = true;
	return 0;
}

/* @v + @slide in two's complement; false when it leaves [0, 2^64). */
static bool add_slide(uint64_t v, uint64_t slide, uint64_t *out)
{
	*out = v + slide;
	if (slide >> 63)
		return *out < v;
	return *out >= v;
}

void sp__ksyms_shift(struct sp__ksyms *ks, uint64_t slide)
{
	struct sp__ksym s;
	size_t i, w = 0;

	if (!slide)
		return;
	for (i = 0; i < ks->n; i++) {
		s = ks->syms[i];
		if (!add_slide(s.addr, slide, &s.addr))
			continue;
		if (!add_slide(s.end, slide, &s.end))
			s.end = UINT64_MAX; /* only a positive slide can wrap it */
		ks->syms[w++] = s;
	}
	ks->n = w;
	if (ks->text && !add_slide(ks->text, slide, &ks->text))
		ks->text = 0;
	if (ks->etext && !add_slide(ks->etext, slide, &ks->etext))
		ks->etext = 0;
}

uint64_t *sp__ksyms_sorted_pcs(const struct sp__mem *mem, const uint64_t *pcs,
			       size_t npcs)
{
	uint64_t *copy;
	size_t i;

	if (!npcs || npcs > SIZE_MAX / sizeof(*copy))
		return NULL;
	copy = sp__mem_alloc(mem, npcs * sizeof(*copy));
	if (!copy)
		return NULL;
	memcpy(copy, pcs, npcs * sizeof(*copy));
	for (i = 1; i < npcs; i++)
		if (copy[i] < copy[i - 1])
			break;
	if (i < npcs)
		qsort(copy, npcs, sizeof(*copy), cmp_u64);
	return copy;
}
