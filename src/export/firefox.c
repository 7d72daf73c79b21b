/* SPDX-License-Identifier: MIT */
/* Exporters: Firefox Profiler processed format (version 58), gzip JSON. */

/*
 * The processed format is what profiler.firefox.com saves and loads
 * without a conversion step. We write preprocessedProfileVersion 58 (the
 * newest version whose every field we could check against the published
 * types and format changelog; the profiler upgrades older versions on
 * load): one flat list of threads, one per (pid, tid), each with its own
 * column-oriented stackTable / frameTable / funcTable / resourceTable, and
 * one string array and source table shared by all threads (v56, v58).
 *
 * Choices:
 *   - categories Python / Native (subcategory JIT) / Kernel / Other, Other
 *     grey (the profiler's default category must be the first grey one);
 *   - no frame is JS: isJS and relevantForJS are false everywhere, also for
 *     Python, so the JS-only views do not claim Python code;
 *   - frames are symbolized already (meta.symbolicated): nativeSymbol is
 *     null and address is the file-relative address when a module is
 *     known, else -1;
 *   - sample times are ms after the first exported sample, and
 *     meta.startTime is that sample's wall-clock time (header timeline);
 *     profilingEndTime is one interval after the last sample, which the
 *     profiler would otherwise leave out of the range it shows;
 *   - each sample stands for one sampling interval of CPU time, written
 *     as its threadCPUDelta (ns) so the CPU graph has heights; without
 *     an interval in the spool the column and its unit are left out;
 *   - a func is a function (sp__profile_functions()): a function whose
 *     frames carry several source files (code #included into its body)
 *     is one func with no source, not one per file;
 *   - processName is the executable's name (xprocess.c), a thread is
 *     "thread TID" (SPULSE3 records no thread names);
 *   - JSON streams through zlib into the sink. Per-thread tables are built
 *     from the model's (thread, stack) counts. Samples are gathered by
 *     replaying the spool for groups of threads whose sample counts fit a
 *     budget, so memory is bounded by the budget (or by the largest
 *     thread), not by the file;
 *   - about 20 bytes of JSON per sample go through deflate, which at
 *     zlib's default level took two thirds of a large export. From
 *     FF_FAST_GZIP_SAMPLES samples on we deflate at the fastest level
 *     (3x faster, output ~1/3 larger; the profiler reads any level). The
 *     level depends only on the sample count, so output stays
 *     deterministic, and small profiles keep the default level.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <stackpulse/unwind.h>

#include "export_internal.h"
#include "xgzip.h"

#define FF_PROCESSED_VERSION 58
#define FF_GECKO_VERSION 31
/* Samples buffered per replay pass (16 bytes each). */
#define FF_GROUP_SAMPLES (1u << 22)
#define FF_NONE UINT32_MAX
/* From this many samples on, deflate at zlib's fastest level. */
#define FF_FAST_GZIP_SAMPLES (1u << 16)

enum {
	FF_CAT_PYTHON,
	FF_CAT_NATIVE,
	FF_CAT_KERNEL,
	FF_CAT_OTHER
};

static const char ff_categories[] =
	"[{\"name\":\"Python\",\"color\":\"green\",\"subcategories\":[\"Other\"]},"
	"{\"name\":\"Native\",\"color\":\"blue\",\"subcategories\":[\"Other\",\"JIT\"]},"
	"{\"name\":\"Kernel\",\"color\":\"orange\",\"subcategories\":[\"Other\"]},"
	"{\"name\":\"Other\",\"color\":\"grey\",\"subcategories\":[\"Other\"]}]";

/* What every model frame turns into, computed once. */
struct ff_finfo {
	uint32_t name;	 /* string index */
	uint32_t source; /* shared source index or FF_NONE */
	uint32_t lib;	 /* libs[] index or FF_NONE */
	uint8_t category, subcategory;
};

struct ff_func {
	uint32_t name, source, resource;
};

struct ff_frame {
	uint32_t raw, model, func;
	int64_t address;
};

struct ff_stack {
	uint32_t prefix, frame;
};

struct ff_sample {
	uint64_t ts;
	uint32_t stack; /* model stack, later the thread's stack index */
	uint32_t seq;	/* file order, to keep the sort stable */
};

/* The tables of the thread being written; rebuilt for each thread. */
struct ff_tables {
	uint32_t *res_lib; /* resource -> lib */
	size_t nres, res_cap;
	struct ff_func *funcs;
	size_t nfuncs, funcs_cap;
	struct sp__xmap func_map;
	struct ff_frame *frames;
	size_t nframes, frames_cap;
	struct sp__xmap frame_map;
	struct ff_stack *stacks;
	size_t nstacks, stacks_cap;
	struct sp__xmap stack_map;
};

struct firefox {
	struct sp__profile *prof;
	const struct sp__xmem *mem;
	struct sp__xgzip gz;
	struct sp__xout out;

	const char **strs; /* shared string array (borrowed strings) */
	size_t nstrs, strs_cap;
	struct sp__xmap str_map;
	uint32_t *sources; /* source -> string index of the file name */
	size_t nsources, sources_cap;
	struct sp__xmap source_map;
	const char **libs;   /* module paths */
	uint32_t *lib_names; /* basename string index per lib */
	size_t nlibs, libs_cap, lib_names_cap;
	struct sp__xmap lib_map;
	struct ff_finfo *finfo;
	uint32_t *res_of_lib; /* per lib, FF_NONE when unused by the thread */
	uint32_t *leaf;	      /* per model stack: the thread's stack index */

	struct ff_tables t;
	struct ff_sample *samples; /* one replay group */
	size_t samples_cap;
	size_t *slot; /* per model thread: first sample slot, or SIZE_MAX */
	size_t *fill;
};

/* ---- interning ---- */

static int64_t ff_str(struct firefox *ff, const char *s)
{
	uint64_t key = sp__xhash(s, strlen(s), 0x66786666ull);
	size_t pos = 0;
	uint32_t idx;

	while (sp__xmap_next(&ff->str_map, key, &pos, &idx))
		if (strcmp(ff->strs[idx], s) == 0)
			return idx;
	if (sp__xmem_reserve(ff->mem, (void **)&ff->strs, &ff->strs_cap,
			     ff->nstrs + 1, sizeof(*ff->strs)) < 0 ||
	    sp__xmap_put(&ff->str_map, ff->mem, key, (uint32_t)ff->nstrs) < 0)
		return -ENOMEM;
	ff->strs[ff->nstrs] = s;
	return (int64_t)ff->nstrs++;
}

/* Returns the shared source index of file @file, or -ENOMEM. */
static int64_t ff_source(struct firefox *ff, const char *file)
{
	int64_t s = ff_str(ff, file);
	uint32_t idx;

	if (s < 0)
		return s;
	idx = sp__xmap_get(&ff->source_map, (uint64_t)s);
	if (idx != UINT32_MAX)
		return idx;
	if (sp__xmem_reserve(ff->mem, (void **)&ff->sources, &ff->sources_cap,
			     ff->nsources + 1, sizeof(*ff->sources)) < 0 ||
	    sp__xmap_put(&ff->source_map, ff->mem, (uint64_t)s,
			 (uint32_t)ff->nsources) < 0)
		return -ENOMEM;
	ff->sources[ff->nsources] = (uint32_t)s;
	return (int64_t)ff->nsources++;
}

static const char *ff_basename(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash && slash[1] ? slash + 1 : path;
}

/* Returns the libs[] index of module path @path, or -ENOMEM. */
static int64_t ff_lib(struct firefox *ff, const char *path)
{
	int64_t s = ff_str(ff, path), name;
	uint32_t idx;

	if (s < 0)
		return s;
	idx = sp__xmap_get(&ff->lib_map, (uint64_t)s);
	if (idx != UINT32_MAX)
		return idx;
	name = ff_str(ff, ff_basename(path));
	if (name < 0 ||
	    sp__xmem_reserve(ff->mem, (void **)&ff->libs, &ff->libs_cap,
			     ff->nlibs + 1, sizeof(*ff->libs)) < 0 ||
	    sp__xmem_reserve(ff->mem, (void **)&ff->lib_names,
			     &ff->lib_names_cap, ff->nlibs + 1,
			     sizeof(*ff->lib_names)) < 0 ||
	    sp__xmap_put(&ff->lib_map, ff->mem, (uint64_t)s,
			 (uint32_t)ff->nlibs) < 0)
		return -ENOMEM;
	ff->libs[ff->nlibs] = path;
	ff->lib_names[ff->nlibs] = (uint32_t)name;
	return (int64_t)ff->nlibs++;
}

static void ff_category(uint32_t kind, struct ff_finfo *fi)
{
	fi->subcategory = 0;
	switch (kind) {
	case SP__XKIND_PYTHON:
		fi->category = FF_CAT_PYTHON;
		break;
	case SP__XKIND_NATIVE:
		fi->category = FF_CAT_NATIVE;
		break;
	case SP__XKIND_JIT:
		fi->category = FF_CAT_NATIVE;
		fi->subcategory = 1;
		break;
	case SP__XKIND_KERNEL:
		fi->category = FF_CAT_KERNEL;
		break;
	default:
		fi->category = FF_CAT_OTHER;
		break;
	}
}

/* Fills finfo[] for every model frame (interns all shared strings). */
static int ff_frame_infos(struct firefox *ff)
{
	struct sp__profile *prof = ff->prof;
	size_t i;
	int err = sp__profile_functions(prof);

	if (err)
		return err;
	ff->finfo =
		sp__xmem_calloc(ff->mem, prof->nframes + 1, sizeof(*ff->finfo));
	if (!ff->finfo)
		return -ENOMEM;
	for (i = 0; i < prof->nframes; i++) {
		const struct sp__xframe *f = &prof->frames[i];
		const struct sp__xfunc *fn =
			&prof->funcs[prof->func_of_frame[i]];
		struct ff_finfo *fi = &ff->finfo[i];
		int64_t name = ff_str(ff, fn->name);
		int64_t src = fn->file ? ff_source(ff, fn->file) : FF_NONE;
		int64_t lib = f->module ? ff_lib(ff, f->module) : FF_NONE;

		if (name < 0 || src < 0 || lib < 0)
			return -ENOMEM;
		fi->name = (uint32_t)name;
		fi->source = (uint32_t)src;
		fi->lib = (uint32_t)lib;
		ff_category(f->kind, fi);
	}
	return 0;
}

/* ---- per-thread tables ---- */

static void ff_tables_reset(struct firefox *ff)
{
	struct ff_tables *t = &ff->t;
	size_t i;

	for (i = 0; i < t->nres; i++)
		ff->res_of_lib[t->res_lib[i]] = FF_NONE;
	t->nres = t->nfuncs = t->nframes = t->nstacks = 0;
	sp__xmap_fini(&t->func_map, ff->mem);
	sp__xmap_fini(&t->frame_map, ff->mem);
	sp__xmap_fini(&t->stack_map, ff->mem);
}

static int64_t ff_resource(struct firefox *ff, uint32_t lib)
{
	struct ff_tables *t = &ff->t;

	if (lib == FF_NONE)
		return -1;
	if (ff->res_of_lib[lib] != FF_NONE)
		return ff->res_of_lib[lib];
	if (sp__xmem_reserve(ff->mem, (void **)&t->res_lib, &t->res_cap,
			     t->nres + 1, sizeof(*t->res_lib)) < 0)
		return -ENOMEM - 1; /* below -1: an error */
	t->res_lib[t->nres] = lib;
	ff->res_of_lib[lib] = (uint32_t)t->nres;
	return (int64_t)t->nres++;
}

static int64_t ff_func(struct firefox *ff, const struct ff_finfo *fi)
{
	struct ff_tables *t = &ff->t;
	int64_t res = ff_resource(ff, fi->lib);
	struct ff_func key;
	uint64_t h;
	size_t pos = 0;
	uint32_t idx;

	if (res < -1)
		return -ENOMEM;
	key = (struct ff_func){ fi->name, fi->source, (uint32_t)res };
	h = sp__xhash(&key, sizeof(key), 0x66756e63ull);
	while (sp__xmap_next(&t->func_map, h, &pos, &idx))
		if (memcmp(&t->funcs[idx], &key, sizeof(key)) == 0)
			return idx;
	if (sp__xmem_reserve(ff->mem, (void **)&t->funcs, &t->funcs_cap,
			     t->nfuncs + 1, sizeof(*t->funcs)) < 0 ||
	    sp__xmap_put(&t->func_map, ff->mem, h, (uint32_t)t->nfuncs) < 0)
		return -ENOMEM;
	t->funcs[t->nfuncs] = key;
	return (int64_t)t->nfuncs++;
}

/* The file-relative address of raw frame @raw in process @pid, or -1. */
static int64_t ff_address(const struct sp__profile *prof, uint32_t raw,
			  int32_t pid)
{
	struct sp_frame_context fc;

	if (sp_spool_resolve(prof->spool, raw, pid, &fc) < 0 ||
	    fc.module_id == SP_NO_MODULE || fc.frame.mode == SP_FRAME_TRUNCATED)
		return -1;
	return (int64_t)fc.file_relative_ip;
}

static int64_t ff_frame(struct firefox *ff, uint32_t raw, uint32_t model,
			int32_t pid)
{
	struct ff_tables *t = &ff->t;
	uint64_t h = sp__xhash_u64(((uint64_t)raw << 32) | model);
	size_t pos = 0;
	uint32_t idx;
	int64_t fn;

	while (sp__xmap_next(&t->frame_map, h, &pos, &idx))
		if (t->frames[idx].raw == raw && t->frames[idx].model == model)
			return idx;
	fn = ff_func(ff, &ff->finfo[model]);
	if (fn < 0 ||
	    sp__xmem_reserve(ff->mem, (void **)&t->frames, &t->frames_cap,
			     t->nframes + 1, sizeof(*t->frames)) < 0 ||
	    sp__xmap_put(&t->frame_map, ff->mem, h, (uint32_t)t->nframes) < 0)
		return -ENOMEM;
	t->frames[t->nframes] = (struct ff_frame){
		.raw = raw,
		.model = model,
		.func = (uint32_t)fn,
		.address = ff_address(ff->prof, raw, pid),
	};
	return (int64_t)t->nframes++;
}

static int64_t ff_stack_node(struct firefox *ff, uint32_t prefix,
			     uint32_t frame)
{
	struct ff_tables *t = &ff->t;
	uint64_t h = sp__xhash_u64(((uint64_t)prefix << 32) | frame);
	size_t pos = 0;
	uint32_t idx;

	while (sp__xmap_next(&t->stack_map, h, &pos, &idx))
		if (t->stacks[idx].prefix == prefix &&
		    t->stacks[idx].frame == frame)
			return idx;
	if (sp__xmem_reserve(ff->mem, (void **)&t->stacks, &t->stacks_cap,
			     t->nstacks + 1, sizeof(*t->stacks)) < 0 ||
	    sp__xmap_put(&t->stack_map, ff->mem, h, (uint32_t)t->nstacks) < 0)
		return -ENOMEM;
	t->stacks[t->nstacks] = (struct ff_stack){ prefix, frame };
	return (int64_t)t->nstacks++;
}

/* Adds model stack @s to the thread's tables; sets leaf[s]. */
static int ff_add_stack(struct firefox *ff, uint32_t s, int32_t pid)
{
	const struct sp__profile *prof = ff->prof;
	const struct sp__xstack *st = &prof->stacks[s];
	uint32_t prefix = FF_NONE, i;

	for (i = 0; i < st->len; i++) {
		size_t e = st->pos + i;
		int64_t fr = ff_frame(ff, prof->raw[e], prof->pool[e], pid);
		int64_t node;

		if (fr < 0)
			return (int)fr;
		node = ff_stack_node(ff, prefix, (uint32_t)fr);
		if (node < 0)
			return (int)node;
		prefix = (uint32_t)node;
	}
	ff->leaf[s] = prefix; /* FF_NONE for an empty stack: a null sample */
	return 0;
}

/* Builds the tables of model thread @th from its (thread, stack) counts. */
static int ff_thread_tables(struct firefox *ff, uint32_t th, size_t *ci)
{
	const struct sp__profile *prof = ff->prof;
	int32_t pid = prof->threads[th].pid;
	int err;

	ff_tables_reset(ff);
	while (*ci < prof->ncounts && prof->counts[*ci].thread < th)
		(*ci)++;
	for (; *ci < prof->ncounts && prof->counts[*ci].thread == th; (*ci)++) {
		err = ff_add_stack(ff, prof->counts[*ci].stack, pid);
		if (err < 0)
			return err;
	}
	return 0;
}

/* ---- JSON output ---- */

static void ff_key(struct sp__xout *out, const char *key)
{
	sp__xout_char(out, '"');
	sp__xout_str(out, key);
	sp__xout_str(out, "\":");
}

/* Writes @ns nanoseconds as milliseconds with three decimals. */
static void ff_ms(struct sp__xout *out, uint64_t ns)
{
	uint64_t us = ns / 1000;
	char frac[4];

	sp__xout_u64(out, us / 1000);
	frac[0] = '.';
	frac[1] = (char)('0' + (us % 1000) / 100);
	frac[2] = (char)('0' + (us % 100) / 10);
	frac[3] = (char)('0' + us % 10);
	sp__xout_write(out, frac, sizeof(frac));
}

/* Writes @v, or null for FF_NONE. */
static void ff_u32_or_null(struct sp__xout *out, uint32_t v)
{
	if (v == FF_NONE)
		sp__xout_str(out, "null");
	else
		sp__xout_u64(out, v);
}

static void ff_meta(struct firefox *ff)
{
	const struct sp__profile *prof = ff->prof;
	struct sp__xout *out = &ff->out;
	uint64_t interval_us = sp_spool_sample_interval_us(prof->spool);
	uint64_t start_us =
		prof->total_samples ?
			sp_spool_timestamp_us(prof->spool, prof->first_ns) :
			sp_spool_start_timestamp_us(prof->spool);

	sp__xout_str(out, "\"meta\":{");
	ff_key(out, "interval");
	ff_ms(out, (interval_us ? interval_us : 1000) * 1000);
	sp__xout_str(out, ",\"startTime\":");
	ff_ms(out, start_us * 1000);
	sp__xout_str(out, ",\"profilingStartTime\":0,\"profilingEndTime\":");
	ff_ms(out, prof->total_samples ?
			   prof->last_ns - prof->first_ns +
				   (interval_us ? interval_us : 1000) * 1000 :
			   0);
	sp__xout_str(out, ",\"processType\":0,\"product\":");
	sp__xout_json_str(out, prof->title ? prof->title : "stackpulse");
	sp__xout_str(out, ",\"stackwalk\":1,\"debug\":false,\"version\":");
	sp__xout_u64(out, FF_GECKO_VERSION);
	sp__xout_str(out, ",\"preprocessedProfileVersion\":");
	sp__xout_u64(out, FF_PROCESSED_VERSION);
	sp__xout_str(out, ",\"symbolicated\":true,\"markerSchema\":[],"
			  "\"sampleUnits\":{\"time\":\"ms\",\"eventDelay\":"
			  "\"ms\"");
	if (interval_us)
		sp__xout_str(out, ",\"threadCPUDelta\":\"ns\"");
	sp__xout_str(out, "},\"categories\":");
	sp__xout_str(out, ff_categories);
	sp__xout_char(out, '}');
}

static void ff_libs(struct firefox *ff)
{
	struct sp__xout *out = &ff->out;
	size_t i;

	sp__xout_str(out, ",\"libs\":[");
	for (i = 0; i < ff->nlibs; i++) {
		const char *name = ff->strs[ff->lib_names[i]];

		/* Spools name no architecture: the one this build unwinds. */
		sp__xout_str(out, i ? ",{\"arch\":" : "{\"arch\":");
		sp__xout_json_str(out, sp_arch_name(SP_ARCH_NATIVE));
		sp__xout_str(out, ",\"name\":");
		sp__xout_json_str(out, name);
		sp__xout_str(out, ",\"path\":");
		sp__xout_json_str(out, ff->libs[i]);
		sp__xout_str(out, ",\"debugName\":");
		sp__xout_json_str(out, name);
		sp__xout_str(out, ",\"debugPath\":");
		sp__xout_json_str(out, ff->libs[i]);
		sp__xout_str(out, ",\"breakpadId\":\"\",\"codeId\":null}");
	}
	sp__xout_char(out, ']');
}

static void ff_shared(struct firefox *ff)
{
	struct sp__xout *out = &ff->out;
	size_t i;

	sp__xout_str(out, ",\"shared\":{\"stringArray\":[");
	for (i = 0; i < ff->nstrs; i++) {
		if (i)
			sp__xout_char(out, ',');
		sp__xout_json_str(out, ff->strs[i]);
	}
	sp__xout_str(out, "],\"sources\":{\"length\":");
	sp__xout_u64(out, ff->nsources);
	sp__xout_str(out, ",\"uuid\":[");
	for (i = 0; i < ff->nsources; i++)
		sp__xout_str(out, i ? ",null" : "null");
	sp__xout_str(out, "],\"filename\":[");
	for (i = 0; i < ff->nsources; i++) {
		if (i)
			sp__xout_char(out, ',');
		sp__xout_u64(out, ff->sources[i]);
	}
	sp__xout_str(out, "]}}");
}

static void ff_stack_table(struct firefox *ff)
{
	const struct ff_tables *t = &ff->t;
	struct sp__xout *out = &ff->out;
	size_t i;

	sp__xout_str(out, ",\"stackTable\":{\"frame\":[");
	for (i = 0; i < t->nstacks; i++) {
		if (i)
			sp__xout_char(out, ',');
		sp__xout_u64(out, t->stacks[i].frame);
	}
	sp__xout_str(out, "],\"prefix\":[");
	for (i = 0; i < t->nstacks; i++) {
		if (i)
			sp__xout_char(out, ',');
		ff_u32_or_null(out, t->stacks[i].prefix);
	}
	sp__xout_str(out, "],\"length\":");
	sp__xout_u64(out, t->nstacks);
	sp__xout_char(out, '}');
}

/* One frameTable column; @col picks the value. */
static void ff_frame_column(struct firefox *ff, const char *name, int col)
{
	const struct ff_tables *t = &ff->t;
	struct sp__xout *out = &ff->out;
	size_t i;

	sp__xout_str(out, ",\"");
	sp__xout_str(out, name);
	sp__xout_str(out, "\":[");
	for (i = 0; i < t->nframes; i++) {
		const struct ff_frame *fr = &t->frames[i];
		const struct sp__xframe *xf = &ff->prof->frames[fr->model];
		const struct ff_finfo *fi = &ff->finfo[fr->model];

		if (i)
			sp__xout_char(out, ',');
		if (col == 0)
			sp__xout_i64(out, fr->address);
		else if (col == 1)
			sp__xout_u64(out, xf->inline_depth);
		else if (col == 2)
			sp__xout_u64(out, fi->category);
		else if (col == 3)
			sp__xout_u64(out, fi->subcategory);
		else if (col == 4)
			sp__xout_u64(out, fr->func);
		else if (col == 5)
			ff_u32_or_null(out, xf->line ? xf->line : FF_NONE);
	}
	sp__xout_char(out, ']');
}

/* A column of @n copies of @value. */
static void ff_repeat(struct sp__xout *out, const char *name, const char *value,
		      size_t n)
{
	size_t i;

	sp__xout_str(out, ",\"");
	sp__xout_str(out, name);
	sp__xout_str(out, "\":[");
	for (i = 0; i < n; i++) {
		if (i)
			sp__xout_char(out, ',');
		sp__xout_str(out, value);
	}
	sp__xout_char(out, ']');
}

static void ff_frame_table(struct firefox *ff)
{
	struct sp__xout *out = &ff->out;
	size_t n = ff->t.nframes;

	sp__xout_str(out, ",\"frameTable\":{\"length\":");
	sp__xout_u64(out, n);
	ff_frame_column(ff, "address", 0);
	ff_frame_column(ff, "inlineDepth", 1);
	ff_frame_column(ff, "category", 2);
	ff_frame_column(ff, "subcategory", 3);
	ff_frame_column(ff, "func", 4);
	ff_repeat(out, "nativeSymbol", "null", n);
	ff_repeat(out, "innerWindowID", "0", n);
	ff_frame_column(ff, "line", 5);
	ff_repeat(out, "column", "null", n);
	sp__xout_char(out, '}');
}

static void ff_func_table(struct firefox *ff)
{
	const struct ff_tables *t = &ff->t;
	struct sp__xout *out = &ff->out;
	size_t i, n = t->nfuncs;

	sp__xout_str(out, ",\"funcTable\":{\"length\":");
	sp__xout_u64(out, n);
	sp__xout_str(out, ",\"name\":[");
	for (i = 0; i < n; i++) {
		if (i)
			sp__xout_char(out, ',');
		sp__xout_u64(out, t->funcs[i].name);
	}
	sp__xout_char(out, ']');
	/* Nothing here is JavaScript, Python included. */
	ff_repeat(out, "isJS", "false", n);
	ff_repeat(out, "relevantForJS", "false", n);
	sp__xout_str(out, ",\"resource\":[");
	for (i = 0; i < n; i++) {
		if (i)
			sp__xout_char(out, ',');
		if (t->funcs[i].resource == FF_NONE)
			sp__xout_str(out, "-1");
		else
			sp__xout_u64(out, t->funcs[i].resource);
	}
	sp__xout_str(out, "],\"source\":[");
	for (i = 0; i < n; i++) {
		if (i)
			sp__xout_char(out, ',');
		ff_u32_or_null(out, t->funcs[i].source);
	}
	sp__xout_char(out, ']');
	ff_repeat(out, "lineNumber", "null", n);
	ff_repeat(out, "columnNumber", "null", n);
	sp__xout_char(out, '}');
}

static void ff_resource_table(struct firefox *ff)
{
	const struct ff_tables *t = &ff->t;
	struct sp__xout *out = &ff->out;
	size_t i;

	sp__xout_str(out, ",\"resourceTable\":{\"length\":");
	sp__xout_u64(out, t->nres);
	sp__xout_str(out, ",\"lib\":[");
	for (i = 0; i < t->nres; i++) {
		if (i)
			sp__xout_char(out, ',');
		sp__xout_u64(out, t->res_lib[i]);
	}
	sp__xout_str(out, "],\"name\":[");
	for (i = 0; i < t->nres; i++) {
		if (i)
			sp__xout_char(out, ',');
		sp__xout_u64(out, ff->lib_names[t->res_lib[i]]);
	}
	sp__xout_char(out, ']');
	ff_repeat(out, "host", "null", t->nres);
	ff_repeat(out, "type", "1", t->nres); /* resourceTypes.library */
	sp__xout_char(out, '}');
}

static void ff_thread_head(struct firefox *ff, const struct sp__xthread *th)
{
	struct sp__xout *out = &ff->out;
	const char *pname = sp__profile_process_name(ff->prof, th->pid);
	uint64_t start = th->samples ? th->first_ns - ff->prof->first_ns : 0;

	sp__xout_str(out,
		     "{\"processType\":\"default\",\"processStartupTime\":");
	ff_ms(out, start);
	sp__xout_str(out, ",\"processShutdownTime\":null,\"registerTime\":");
	ff_ms(out, start);
	sp__xout_str(out, ",\"unregisterTime\":null,\"pausedRanges\":[],"
			  "\"name\":\"thread ");
	sp__xout_i64(out, th->tid);
	sp__xout_str(out, "\",\"isMainThread\":");
	sp__xout_str(out, th->tid == th->pid ? "true" : "false");
	sp__xout_str(out, ",\"processName\":");
	if (pname) {
		sp__xout_json_str(out, pname);
	} else {
		sp__xout_str(out, "\"pid ");
		sp__xout_i64(out, th->pid);
		sp__xout_char(out, '"');
	}
	sp__xout_str(out, ",\"pid\":\"");
	sp__xout_i64(out, th->pid);
	sp__xout_str(out, "\",\"tid\":");
	sp__xout_i64(out, th->tid);
	sp__xout_str(out, ",\"markers\":{\"data\":[],\"name\":[],"
			  "\"startTime\":[],\"endTime\":[],\"phase\":[],"
			  "\"category\":[],\"length\":0},"
			  "\"nativeSymbols\":{\"libIndex\":[],\"address\":[],"
			  "\"name\":[],\"functionSize\":[],\"length\":0}");
}

static void ff_samples(struct firefox *ff, const struct ff_sample *s, size_t n)
{
	struct sp__xout *out = &ff->out;
	uint64_t interval_ns =
		sp_spool_sample_interval_us(ff->prof->spool) * 1000;
	size_t i;

	sp__xout_str(out, ",\"samples\":{\"stack\":[");
	for (i = 0; i < n; i++) {
		if (i)
			sp__xout_char(out, ',');
		ff_u32_or_null(out, ff->leaf[s[i].stack]);
	}
	sp__xout_str(out, "],\"time\":[");
	for (i = 0; i < n; i++) {
		if (i)
			sp__xout_char(out, ',');
		ff_ms(out, s[i].ts - ff->prof->first_ns);
	}
	if (interval_ns) {
		sp__xout_str(out, "],\"threadCPUDelta\":[");
		for (i = 0; i < n; i++) {
			if (i)
				sp__xout_char(out, ',');
			sp__xout_u64(out, interval_ns);
		}
	}
	sp__xout_str(out, "],\"weight\":null,\"weightType\":\"samples\","
			  "\"length\":");
	sp__xout_u64(out, n);
	sp__xout_char(out, '}');
}

/* ---- sample groups ---- */

static int ff_sample_cmp(const void *a, const void *b)
{
	const struct ff_sample *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int ff_collect(void *ctx, uint64_t ts, uint32_t thread, uint32_t stack)
{
	struct firefox *ff = ctx;
	size_t at = ff->slot[thread] + ff->fill[thread];

	ff->samples[at] =
		(struct ff_sample){ ts, stack, (uint32_t)ff->fill[thread] };
	ff->fill[thread]++;
	return 0;
}

/* Threads [first, *end) whose samples fit the group budget (at least one). */
static size_t ff_group(struct firefox *ff, size_t first)
{
	const struct sp__profile *prof = ff->prof;
	size_t end = first, used = 0;

	while (end < prof->nthreads &&
	       (end == first ||
		used + prof->threads[end].samples <= FF_GROUP_SAMPLES))
		used += prof->threads[end++].samples;
	return end;
}

/* Replays the file once and gathers the samples of threads [first, end). */
static int ff_gather(struct firefox *ff, size_t first, size_t end)
{
	const struct sp__profile *prof = ff->prof;
	size_t i, used = 0;
	int err;

	for (i = 0; i < prof->nthreads; i++) {
		ff->slot[i] = i >= first && i < end ? used : SIZE_MAX;
		ff->fill[i] = 0;
		if (i >= first && i < end)
			used += prof->threads[i].samples;
	}
	if (sp__xmem_reserve(ff->mem, (void **)&ff->samples, &ff->samples_cap,
			     used + 1, sizeof(*ff->samples)) < 0)
		return -ENOMEM;
	err = sp__profile_each_sample(ff->prof, (uint32_t)first, (uint32_t)end,
				      ff_collect, ff);
	return err < 0 ? err : 0;
}

static bool ff_sorted(const struct ff_sample *s, size_t n)
{
	size_t i;

	for (i = 1; i < n; i++)
		if (s[i].ts < s[i - 1].ts)
			return false;
	return true;
}

static int ff_thread(struct firefox *ff, uint32_t th, size_t *ci)
{
	const struct sp__xthread *xt = &ff->prof->threads[th];
	struct ff_sample *s = ff->samples + ff->slot[th];
	size_t n = ff->fill[th];
	int err = ff_thread_tables(ff, th, ci);

	if (err < 0)
		return err;
	if (!ff_sorted(s, n))
		qsort(s, n, sizeof(*s), ff_sample_cmp);
	if (th)
		sp__xout_char(&ff->out, ',');
	ff_thread_head(ff, xt);
	ff_samples(ff, s, n);
	ff_stack_table(ff);
	ff_frame_table(ff);
	ff_func_table(ff);
	ff_resource_table(ff);
	sp__xout_char(&ff->out, '}');
	return ff->out.err;
}

static int ff_threads(struct firefox *ff)
{
	const struct sp__profile *prof = ff->prof;
	size_t first = 0, end, ci = 0, i;
	int err = 0;

	sp__xout_str(&ff->out, ",\"threads\":[");
	while (!err && first < prof->nthreads) {
		end = ff_group(ff, first);
		err = ff_gather(ff, first, end);
		for (i = first; !err && i < end; i++)
			err = ff_thread(ff, (uint32_t)i, &ci);
		first = end;
	}
	sp__xout_char(&ff->out, ']');
	return err;
}

/* ---- setup ---- */

static int ff_alloc(struct firefox *ff)
{
	const struct sp__profile *prof = ff->prof;
	size_t i;

	ff->res_of_lib =
		sp__xmem_calloc(ff->mem, ff->nlibs + 1, sizeof(uint32_t));
	ff->leaf =
		sp__xmem_calloc(ff->mem, prof->nstacks + 1, sizeof(uint32_t));
	ff->slot = sp__xmem_calloc(ff->mem, prof->nthreads + 1, sizeof(size_t));
	ff->fill = sp__xmem_calloc(ff->mem, prof->nthreads + 1, sizeof(size_t));
	if (!ff->res_of_lib || !ff->leaf || !ff->slot || !ff->fill)
		return -ENOMEM;
	for (i = 0; i < ff->nlibs; i++)
		ff->res_of_lib[i] = FF_NONE;
	return 0;
}

static void ff_fini(struct firefox *ff)
{
	const struct sp__xmem *mem = ff->mem;
	const struct sp__profile *prof = ff->prof;
	struct ff_tables *t = &ff->t;

	sp__xgzip_fini(&ff->gz);
	sp__xmap_fini(&ff->str_map, mem);
	sp__xmap_fini(&ff->source_map, mem);
	sp__xmap_fini(&ff->lib_map, mem);
	sp__xmap_fini(&t->func_map, mem);
	sp__xmap_fini(&t->frame_map, mem);
	sp__xmap_fini(&t->stack_map, mem);
	sp__xmem_free(mem, ff->strs, ff->strs_cap * sizeof(*ff->strs));
	sp__xmem_free(mem, ff->sources, ff->sources_cap * sizeof(uint32_t));
	sp__xmem_free(mem, ff->libs, ff->libs_cap * sizeof(*ff->libs));
	sp__xmem_free(mem, ff->lib_names, ff->lib_names_cap * sizeof(uint32_t));
	sp__xmem_free(mem, ff->finfo, (prof->nframes + 1) * sizeof(*ff->finfo));
	sp__xmem_free(mem, ff->res_of_lib, (ff->nlibs + 1) * sizeof(uint32_t));
	sp__xmem_free(mem, ff->leaf, (prof->nstacks + 1) * sizeof(uint32_t));
	sp__xmem_free(mem, ff->slot, (prof->nthreads + 1) * sizeof(size_t));
	sp__xmem_free(mem, ff->fill, (prof->nthreads + 1) * sizeof(size_t));
	sp__xmem_free(mem, ff->samples, ff->samples_cap * sizeof(*ff->samples));
	sp__xmem_free(mem, t->res_lib, t->res_cap * sizeof(*t->res_lib));
	sp__xmem_free(mem, t->funcs, t->funcs_cap * sizeof(*t->funcs));
	sp__xmem_free(mem, t->frames, t->frames_cap * sizeof(*t->frames));
	sp__xmem_free(mem, t->stacks, t->stacks_cap * sizeof(*t->stacks));
}

/* Writes the document; the caller finishes the buffered output. */
static int ff_write(struct firefox *ff)
{
	int err;

	sp__xout_char(&ff->out, '{');
	ff_meta(ff);
	ff_libs(ff);
	err = ff_threads(ff);
	if (err)
		return err;
	ff_shared(ff);
	sp__xout_str(&ff->out, ",\"pages\":[],\"counters\":[]}\n");
	return ff->out.err;
}

int sp__export_firefox(struct sp__profile *prof, struct sp_sink *sink)
{
	struct firefox ff = { .prof = prof, .mem = &prof->mem };
	int err, ferr;

	err = ff_frame_infos(&ff);
	if (!err)
		err = ff_alloc(&ff);
	if (!err)
		err = sp__xgzip_init(&ff.gz, ff.mem, sink,
				     prof->total_samples >=
						     FF_FAST_GZIP_SAMPLES ?
					     SP__XGZIP_FAST :
					     SP__XGZIP_DEFAULT);
	if (!err)
		err = sp__xout_init_fn(&ff.out, ff.mem, sp__xgzip_write,
				       &ff.gz);
	if (!err) {
		err = ff_write(&ff);
		/* Always release the buffer; keep the first error. */
		ferr = sp__xout_finish(&ff.out);
		if (!err)
			err = ferr;
	}
	if (!err)
		err = sp__xgzip_finish(&ff.gz);
	ff_fini(&ff);
	return err;
}
