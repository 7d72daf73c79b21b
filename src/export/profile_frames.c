/* SPDX-License-Identifier: MIT */
/* Exporters: symbolizing a distinct stack once and interning its frames. */

/*
 * A stack node of the spool is resolved the first time a sample of a given
 * pid uses it (the same node may name different code in two processes).
 * The symbolizer returns pointers into its cache, leaf first with inline
 * frames innermost first; reversed, that is exactly root first with each
 * real function followed by what was inlined into it.
 *
 * Frames are interned twice over: by the resolved frame's address (stable
 * in the symbolizer's cache, so a hit costs one probe) and, on a miss, by
 * content (name, file, module, line, kind, inline depth), so the same
 * function reached from two processes or two raw addresses is one frame.
 * The address differs per call site, the content does not: a flame graph
 * merges by name anyway. Viewers that list functions (speedscope's
 * frames, Firefox's funcTable) group these frames once more by function
 * (sp__profile_functions(), below), so a function is one row whatever
 * line or included file its samples hit.
 */
#include <errno.h>
#include <string.h>

#include "export_internal.h"

static const char *const kind_names[] = {
	"native", "kernel", "python", "jit", "truncated", "unknown",
};

const char *sp__xkind_name(uint32_t kind)
{
	if (kind >= sizeof(kind_names) / sizeof(kind_names[0]))
		return "unknown";
	return kind_names[kind];
}

const char *sp__xmode_name(const struct sp_spool *spool)
{
	switch (sp_spool_mode(spool)) {
	case SP_PROFILE_OFF_CPU:
		return "off-cpu";
	case SP_PROFILE_WALL:
		return "wall";
	default:
		return "cpu";
	}
}

static uint32_t frame_kind(const struct sp__profile *prof,
			   const struct sp_resolved_frame *rf)
{
	struct sp_frame raw;

	if ((rf->flags & SP_RESOLVED_TRUNCATED_STACK) ||
	    (sp_spool_frame(prof->spool, rf->frame_id, &raw) == 0 &&
	     raw.mode == SP_FRAME_TRUNCATED))
		return SP__XKIND_TRUNCATED;
	if (rf->kind == SP_RESOLVED_PYTHON)
		return SP__XKIND_PYTHON;
	if (rf->kind == SP_RESOLVED_KERNEL)
		return SP__XKIND_KERNEL;
	if ((rf->flags & SP_RESOLVED_JIT) || rf->origin == SP_ORIGIN_PERF_MAP)
		return SP__XKIND_JIT;
	if (rf->kind == SP_RESOLVED_UNKNOWN)
		return SP__XKIND_UNKNOWN;
	return SP__XKIND_NATIVE;
}

static bool str_eq(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static uint64_t str_hash(const char *s, uint64_t seed)
{
	return s ? sp__xhash(s, strlen(s), seed) : sp__xhash_u64(seed + 1);
}

static bool frame_eq(const struct sp__xframe *a, const struct sp__xframe *b)
{
	return a->line == b->line && a->kind == b->kind &&
	       a->inline_depth == b->inline_depth &&
	       a->decl_line == b->decl_line && str_eq(a->name, b->name) &&
	       str_eq(a->file, b->file) && str_eq(a->module, b->module);
}

static uint64_t frame_hash(const struct sp__xframe *f)
{
	uint64_t h = str_hash(f->name, 1);

	h = str_hash(f->file, h);
	h = str_hash(f->module, h);
	return sp__xhash_u64(h ^ ((uint64_t)f->line << 16) ^
			     ((uint64_t)f->kind << 8) ^
			     ((uint64_t)f->inline_depth << 48));
}

/* Returns the index of the frame equal to @f, appending it if new. */
static int intern_content(struct sp__profile *prof, const struct sp__xframe *f,
			  uint32_t *idx)
{
	uint64_t key = frame_hash(f);
	size_t pos = 0;
	uint32_t cand;
	int err;

	while (sp__xmap_next(&prof->frame_map, key, &pos, &cand)) {
		if (frame_eq(&prof->frames[cand], f)) {
			*idx = cand;
			return 0;
		}
	}
	err = sp__xmem_reserve(&prof->mem, (void **)&prof->frames,
			       &prof->frames_cap, prof->nframes + 1,
			       sizeof(*prof->frames));
	if (!err)
		err = sp__xmap_put(&prof->frame_map, &prof->mem, key,
				   (uint32_t)prof->nframes);
	if (err)
		return err;
	prof->frames[prof->nframes] = *f;
	*idx = (uint32_t)prof->nframes++;
	return 0;
}

static int intern_frame(struct sp__profile *prof,
			const struct sp_resolved_frame *rf, uint32_t *idx)
{
	uint64_t key = (uint64_t)(uintptr_t)rf;
	struct sp__xframe f;
	uint32_t hit = sp__xmap_get(&prof->frame_ptr_map, key);
	int err;

	if (hit != UINT32_MAX) {
		*idx = hit;
		return 0;
	}
	f = (struct sp__xframe){
		.name = rf->name ? rf->name : "??",
		.system_name = rf->mangled_name,
		.file = rf->file,
		/* A Python function's module is its .py file, not the map. */
		.module = rf->kind == SP_RESOLVED_PYTHON && rf->file ?
				  rf->file :
				  rf->module,
		.line = rf->line,
		.kind = frame_kind(prof, rf),
		.flags = rf->flags,
		.inline_depth = rf->inline_depth,
		.module_id = rf->module_id,
		.decl_line = rf->decl_line,
	};
	err = intern_content(prof, &f, idx);
	if (!err)
		err = sp__xmap_put(&prof->frame_ptr_map, &prof->mem, key, *idx);
	return err;
}

/* Resolves @spool_stack for @pid into prof->scratch; returns the count. */
static int resolve(struct sp__profile *prof, uint32_t spool_stack, int32_t pid)
{
	int n;

	for (;;) {
		n = sp_symbolizer_resolve_stack(prof->symbolizer, spool_stack,
						pid, prof->scratch,
						prof->scratch_cap);
		if (n < 0 || (size_t)n <= prof->scratch_cap)
			return n;
		if (sp__xmem_reserve(&prof->mem, (void **)&prof->scratch,
				     &prof->scratch_cap, (size_t)n,
				     sizeof(*prof->scratch)))
			return -ENOMEM;
	}
}

/* Appends the frames of a new stack to pool[] / raw[], root first. */
static int append_frames(struct sp__profile *prof, size_t n)
{
	size_t need = prof->pool_len + n, i;
	uint32_t idx = 0;
	int err;

	err = sp__xmem_reserve(&prof->mem, (void **)&prof->pool,
			       &prof->pool_cap, need, sizeof(*prof->pool));
	if (!err)
		err = sp__xmem_reserve(&prof->mem, (void **)&prof->raw,
				       &prof->raw_cap, need,
				       sizeof(*prof->raw));
	for (i = 0; !err && i < n; i++) {
		const struct sp_resolved_frame *rf = prof->scratch[n - 1 - i];

		err = intern_frame(prof, rf, &idx);
		prof->pool[prof->pool_len + i] = idx;
		prof->raw[prof->pool_len + i] = rf->frame_id;
	}
	return err;
}

int sp__profile_add_stack(struct sp__profile *prof, int32_t pid,
			  uint32_t spool_stack, uint32_t *idx)
{
	struct sp__xstack *st;
	int n, err;

	n = resolve(prof, spool_stack, pid);
	if (n < 0)
		return n;
	err = sp__xmem_reserve(&prof->mem, (void **)&prof->stacks,
			       &prof->stacks_cap, prof->nstacks + 1,
			       sizeof(*prof->stacks));
	if (!err)
		err = append_frames(prof, (size_t)n);
	if (err)
		return err;
	st = &prof->stacks[prof->nstacks];
	*st = (struct sp__xstack){ .pid = pid,
				   .spool_stack = spool_stack,
				   .pos = prof->pool_len,
				   .len = (uint32_t)n };
	prof->pool_len += (size_t)n;
	if ((uint32_t)n > prof->max_depth)
		prof->max_depth = (uint32_t)n;
	*idx = (uint32_t)prof->nstacks++;
	return 0;
}

/* ---- functions ---- */

static bool func_eq(const struct sp__xfunc *fn, const struct sp__xframe *f)
{
	return fn->kind == f->kind && str_eq(fn->name, f->name) &&
	       str_eq(fn->module, f->module) &&
	       (f->kind != SP__XKIND_PYTHON || str_eq(fn->file, f->file));
}

static uint64_t func_hash(const struct sp__xframe *f)
{
	uint64_t h = str_hash(f->name, 2);

	h = str_hash(f->module, h);
	if (f->kind == SP__XKIND_PYTHON)
		h = str_hash(f->file, h);
	return sp__xhash_u64(h ^ f->kind);
}

/* The function of frame @i: found, or appended. */
static int func_of(struct sp__profile *prof, uint32_t i, uint32_t *out)
{
	const struct sp__xframe *f = &prof->frames[i];
	uint64_t key = func_hash(f);
	struct sp__xfunc *fn;
	size_t pos = 0;
	uint32_t cand;
	int err;

	while (sp__xmap_next(&prof->func_map, key, &pos, &cand)) {
		fn = &prof->funcs[cand];
		if (!func_eq(fn, f))
			continue;
		if (!fn->mixed && !str_eq(fn->file, f->file)) {
			fn->mixed = true;
			fn->file = NULL;
		}
		if (!fn->mixed_decl && fn->decl_line != f->decl_line) {
			fn->mixed_decl = true;
			fn->decl_line = 0;
		}
		*out = cand;
		return 0;
	}
	err = sp__xmem_reserve(&prof->mem, (void **)&prof->funcs,
			       &prof->funcs_cap, prof->nfuncs + 1,
			       sizeof(*prof->funcs));
	if (!err)
		err = sp__xmap_put(&prof->func_map, &prof->mem, key,
				   (uint32_t)prof->nfuncs);
	if (err)
		return err;
	prof->funcs[prof->nfuncs] = (struct sp__xfunc){
		.name = f->name,
		.file = f->file,
		.module = f->module,
		.kind = f->kind,
		.frame = i,
		.decl_line = f->decl_line,
	};
	*out = (uint32_t)prof->nfuncs++;
	return 0;
}

int sp__profile_functions(struct sp__profile *prof)
{
	size_t i;
	int err = 0;

	if (prof->func_of_frame)
		return 0;
	prof->func_of_frame = sp__xmem_calloc(&prof->mem, prof->nframes + 1,
					      sizeof(*prof->func_of_frame));
	if (!prof->func_of_frame)
		return -ENOMEM;
	for (i = 0; !err && i < prof->nframes; i++)
		err = func_of(prof, (uint32_t)i, &prof->func_of_frame[i]);
	return err;
}
