/* SPDX-License-Identifier: MIT */
/* Exporters: pprof (profile.proto, gzip) through protobuf-c and zlib. */

/*
 * The aggregated model maps onto pprof almost one to one:
 *   - a Location is one raw spool frame as one process saw it: its
 *     address, its mapping, and one Line per symbolized frame of its inline
 *     chain, innermost first (pprof's convention). Two stacks that share a
 *     raw frame and resolve it identically share the Location;
 *   - a Function is a distinct (name, file); system_name is the mangled
 *     symbol of a demangled C++ or Rust name, else the name again. The
 *     truncation marker is
 *     the function "[stack truncated]": pprof's name simplification
 *     strips "<...>" as C++ template arguments, so "<stack truncated>"
 *     would show as an empty name;
 *   - a Mapping is a spool module generation. Mapping 1 is the main
 *     executable of the process with the most samples (pprof and the
 *     continuous profilers take mapping 1 as "the binary"), the others
 *     follow in order of first use. SPULSE3 module records carry no
 *     build-id (spec §5.1), so it is read from the file at export time
 *     when the file is still the recorded one (xbuildid.c), else "";
 *   - a Sample is one (thread, stack) count of the model, locations leaf
 *     first, with numeric "pid" and "tid" labels and a "process" label
 *     (the executable's name) when the modules name one; values are
 *     {samples, count} and, when the spool header gives the interval,
 *     {cpu, nanoseconds} = count x interval, which is then also the
 *     period (period_type cpu/nanoseconds) and the default type;
 *   - time_nanos is the first sample's wall-clock time, duration_nanos
 *     the span from the first to the last sample plus one period.
 *
 * Streaming: protobuf concatenation merges messages (repeated fields
 * append, set scalars override), so the file is a sequence of Profile
 * messages that each carry a bounded slice of one repeated field, packed by
 * protobuf-c straight into the gzip stream. Only the model-sized tables
 * (locations, functions, strings) are held; the protobuf-c structs exist for
 * one slice at a time. String indices are fixed while interning, and the
 * string table goes out last.
 */
#include <errno.h>
#include <string.h>

#include "export_internal.h"
#include "profile.pb-c.h"
#include "xgzip.h"

#define PP_SLICE 4096

struct pp_loc {
	uint32_t raw;	  /* spool frame id */
	uint32_t stack;	  /* stack holding the entries */
	size_t pos;	  /* first entry (outermost) in pool[] */
	uint32_t len;	  /* entries of the inline chain */
	uint32_t mapping; /* 1-based, 0 = none */
	uint64_t address;
};

struct pp_owned {
	char *str;
	size_t size;
};

struct pp_func {
	uint32_t name; /* string indices */
	uint32_t file;
	uint32_t system_name; /* the mangled symbol, else the name */
};

struct pprof {
	struct sp__profile *prof;
	const struct sp__xmem *mem;
	struct sp__xgzip gz;

	const char **strs;
	size_t nstrs, strs_cap;
	struct sp__xmap str_map;
	struct pp_owned *owned; /* repaired copies of invalid UTF-8 */
	size_t nowned, owned_cap;

	struct pp_func *funcs;
	size_t nfuncs, funcs_cap;
	struct sp__xmap func_map;
	uint32_t *func_of_frame; /* 1-based function id per model frame */

	uint32_t *mapping_of_module; /* 1-based, 0 = none yet */
	uint32_t nmodules;
	uint32_t *mappings; /* module id per mapping */
	size_t nmappings, mappings_cap;
	uint8_t *mapping_bits;	    /* has_functions/filenames/lines/inline */
	int64_t *mapping_build_ids; /* string index per mapping */
	int64_t *thread_names;	    /* "process" label per thread, or -1 */

	struct pp_loc *locs;
	size_t nlocs, locs_cap;
	struct sp__xmap loc_map;

	uint64_t *loc_ids; /* per stack, leaf first */
	size_t nloc_ids, loc_ids_cap;
	size_t *stack_loc_pos; /* nstacks + 1 offsets into loc_ids */

	int64_t s_samples, s_count, s_cpu, s_ns, s_pid, s_tid, s_title;
	int64_t s_process;
	int64_t period_ns;
};

#define PP_HAS_FUNCTIONS 0x1u
#define PP_HAS_FILENAMES 0x2u
#define PP_HAS_LINES 0x4u
#define PP_HAS_INLINE 0x8u

/* Allocates @n elements of @size, zeroed; never NULL for n == 0. */
static void *pp_calloc(const struct sp__xmem *mem, size_t n, size_t size)
{
	return sp__xmem_calloc(mem, n ? n : 1, size);
}

static void pp_free(const struct sp__xmem *mem, void *p, size_t n, size_t size)
{
	sp__xmem_free(mem, p, (n ? n : 1) * size);
}

/* Escaped pieces: counted (@at NULL), or copied to @at. */
struct pp_text_sink {
	char *at;
	size_t len;
};

static int pp_text_piece(void *ctx, const char *buf, size_t len)
{
	struct pp_text_sink *t = ctx;

	if (t->at) {
		memcpy(t->at, buf, len);
		t->at += len;
	}
	t->len += len;
	return 0;
}

/*
 * Returns @s, or when sp_text_escape() changes it an owned escaped copy
 * (proto3 strings must be valid UTF-8, and pprof's text views print names
 * to terminals: controls and bad bytes become \xNN, as in every other
 * format); NULL on -ENOMEM. Escaping only lengthens, so an unchanged
 * length means an unchanged string.
 */
static const char *pp_text(struct pprof *pp, const char *s)
{
	struct pp_text_sink t = { 0 };
	size_t n = strlen(s);
	char *copy;

	sp_text_escape(s, n, 0, pp_text_piece, &t);
	if (t.len == n)
		return s;
	if (sp__xmem_reserve(pp->mem, (void **)&pp->owned, &pp->owned_cap,
			     pp->nowned + 1, sizeof(*pp->owned)) < 0)
		return NULL;
	copy = sp__xmem_alloc(pp->mem, t.len + 1);
	if (!copy)
		return NULL;
	pp->owned[pp->nowned++] = (struct pp_owned){ copy, t.len + 1 };
	t = (struct pp_text_sink){ .at = copy };
	sp_text_escape(s, n, 0, pp_text_piece, &t);
	copy[t.len] = 0;
	return copy;
}

/* Returns the string-table index of @s ("" for NULL), or -ENOMEM. */
static int64_t pp_str(struct pprof *pp, const char *s)
{
	uint64_t key;
	size_t pos = 0;
	uint32_t idx;

	if (!s)
		s = "";
	s = pp_text(pp, s);
	if (!s)
		return -ENOMEM;
	key = sp__xhash(s, strlen(s), 0x5070726f66ull);
	while (sp__xmap_next(&pp->str_map, key, &pos, &idx))
		if (strcmp(pp->strs[idx], s) == 0)
			return idx;
	if (sp__xmem_reserve(pp->mem, (void **)&pp->strs, &pp->strs_cap,
			     pp->nstrs + 1, sizeof(*pp->strs)) < 0 ||
	    sp__xmap_put(&pp->str_map, pp->mem, key, (uint32_t)pp->nstrs) < 0)
		return -ENOMEM;
	pp->strs[pp->nstrs] = s;
	return (int64_t)pp->nstrs++;
}

/* pp_str() of a copy of @s, for strings that do not outlive the call. */
static int64_t pp_str_copy(struct pprof *pp, const char *s)
{
	size_t size = strlen(s) + 1;
	char *copy;

	if (sp__xmem_reserve(pp->mem, (void **)&pp->owned, &pp->owned_cap,
			     pp->nowned + 1, sizeof(*pp->owned)) < 0)
		return -ENOMEM;
	copy = sp__xmem_alloc(pp->mem, size);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, s, size);
	pp->owned[pp->nowned++] = (struct pp_owned){ copy, size };
	return pp_str(pp, copy);
}

/* Interns the fixed strings; "" must be index 0. */
static int pp_fixed_strings(struct pprof *pp)
{
	const struct sp__profile *prof = pp->prof;

	if (pp_str(pp, "") != 0)
		return -ENOMEM;
	pp->s_samples = pp_str(pp, "samples");
	pp->s_count = pp_str(pp, "count");
	/* The mode the spool names (spool.h): off-cpu or wall time too. */
	pp->s_cpu = pp_str(pp, sp__xmode_name(prof->spool));
	pp->s_ns = pp_str(pp, "nanoseconds");
	pp->s_pid = pp_str(pp, "pid");
	pp->s_tid = pp_str(pp, "tid");
	pp->s_title = pp_str(pp, prof->title ? prof->title : "stackpulse");
	pp->s_process = pp_str(pp, "process");
	if (pp->s_samples < 0 || pp->s_count < 0 || pp->s_cpu < 0 ||
	    pp->s_ns < 0 || pp->s_pid < 0 || pp->s_tid < 0 || pp->s_title < 0 ||
	    pp->s_process < 0)
		return -ENOMEM;
	return 0;
}

/* Returns the 1-based function id of (@name, @file), or -ENOMEM. */
static int64_t pp_func(struct pprof *pp, uint32_t name, uint32_t file,
		       uint32_t system_name)
{
	uint64_t key = sp__xhash_u64(((uint64_t)name << 32) | file);
	size_t pos = 0;
	uint32_t idx;

	while (sp__xmap_next(&pp->func_map, key, &pos, &idx))
		if (pp->funcs[idx].name == name && pp->funcs[idx].file == file)
			return (int64_t)idx + 1;
	if (sp__xmem_reserve(pp->mem, (void **)&pp->funcs, &pp->funcs_cap,
			     pp->nfuncs + 1, sizeof(*pp->funcs)) < 0 ||
	    sp__xmap_put(&pp->func_map, pp->mem, key, (uint32_t)pp->nfuncs) < 0)
		return -ENOMEM;
	pp->funcs[pp->nfuncs].name = name;
	pp->funcs[pp->nfuncs].file = file;
	pp->funcs[pp->nfuncs].system_name = system_name;
	return (int64_t)++pp->nfuncs;
}

/* Gives every model frame its function. */
static int pp_functions(struct pprof *pp)
{
	const struct sp__profile *prof = pp->prof;
	size_t i;

	pp->func_of_frame = pp_calloc(pp->mem, prof->nframes, sizeof(uint32_t));
	if (!pp->func_of_frame)
		return -ENOMEM;
	for (i = 0; i < prof->nframes; i++) {
		bool cut = prof->frames[i].kind == SP__XKIND_TRUNCATED;
		int64_t name = pp_str(pp, cut ? "[stack truncated]" :
						prof->frames[i].name);
		int64_t file = pp_str(pp, prof->frames[i].file);
		int64_t sys = prof->frames[i].system_name ?
				      pp_str(pp, prof->frames[i].system_name) :
				      name;
		int64_t fn;

		if (name < 0 || file < 0 || sys < 0)
			return -ENOMEM;
		fn = pp_func(pp, (uint32_t)name, (uint32_t)file, (uint32_t)sys);
		if (fn < 0)
			return -ENOMEM;
		pp->func_of_frame[i] = (uint32_t)fn;
	}
	return 0;
}

/* Returns the 1-based mapping id of spool module @module_id (0 = none). */
static int64_t pp_mapping(struct pprof *pp, uint32_t module_id)
{
	if (module_id == SP_NO_MODULE || module_id >= pp->nmodules)
		return 0;
	if (pp->mapping_of_module[module_id])
		return pp->mapping_of_module[module_id];
	if (sp__xmem_reserve(pp->mem, (void **)&pp->mappings, &pp->mappings_cap,
			     pp->nmappings + 1, sizeof(*pp->mappings)) < 0)
		return -ENOMEM;
	pp->mappings[pp->nmappings++] = module_id;
	pp->mapping_of_module[module_id] = (uint32_t)pp->nmappings;
	return (int64_t)pp->nmappings;
}

static bool pp_loc_eq(const struct pprof *pp, const struct pp_loc *l,
		      uint32_t raw, const uint32_t *entries, uint32_t len)
{
	const uint32_t *have = pp->prof->pool + l->pos;

	return l->raw == raw && l->len == len &&
	       memcmp(have, entries, len * sizeof(*entries)) == 0;
}

/* Records what a mapping's frames tell about symbolization. */
static void pp_mapping_bits(struct pprof *pp, const struct pp_loc *l)
{
	const struct sp__profile *prof = pp->prof;
	uint8_t bits = l->len > 1 ? PP_HAS_INLINE : 0;
	uint32_t i;

	if (!l->mapping)
		return;
	for (i = 0; i < l->len; i++) {
		const struct sp__xframe *f =
			&prof->frames[prof->pool[l->pos + i]];

		if (f->kind != SP__XKIND_UNKNOWN &&
		    f->kind != SP__XKIND_TRUNCATED)
			bits |= PP_HAS_FUNCTIONS;
		if (f->file)
			bits |= PP_HAS_FILENAMES;
		if (f->line)
			bits |= PP_HAS_LINES;
	}
	pp->mapping_bits[l->mapping - 1] |= bits;
}

/* Returns the 1-based location id of entries [pos, pos + len) of @stack. */
static int64_t pp_location(struct pprof *pp, uint32_t stack, size_t pos,
			   uint32_t len)
{
	const struct sp__profile *prof = pp->prof;
	const uint32_t *entries = prof->pool + pos;
	uint32_t raw = prof->raw[pos], idx;
	uint64_t key =
		sp__xhash(entries, len * sizeof(*entries), sp__xhash_u64(raw));
	struct sp_frame frame = { 0 };
	struct pp_loc *l;
	size_t it = 0;
	int64_t map;

	while (sp__xmap_next(&pp->loc_map, key, &it, &idx))
		if (pp_loc_eq(pp, &pp->locs[idx], raw, entries, len))
			return (int64_t)idx + 1;
	map = pp_mapping(pp, prof->frames[entries[0]].module_id);
	if (map < 0 ||
	    sp__xmem_reserve(pp->mem, (void **)&pp->locs, &pp->locs_cap,
			     pp->nlocs + 1, sizeof(*pp->locs)) < 0 ||
	    sp__xmap_put(&pp->loc_map, pp->mem, key, (uint32_t)pp->nlocs) < 0)
		return -ENOMEM;
	sp_spool_frame(prof->spool, raw, &frame);
	l = &pp->locs[pp->nlocs];
	*l = (struct pp_loc){ .raw = raw,
			      .stack = stack,
			      .pos = pos,
			      .len = len,
			      .mapping = (uint32_t)map,
			      .address = frame.abs_ip };
	return (int64_t)++pp->nlocs;
}

/* Appends the location ids of stack @s, leaf first. */
static int pp_stack_locations(struct pprof *pp, uint32_t s)
{
	const struct sp__profile *prof = pp->prof;
	const struct sp__xstack *st = &prof->stacks[s];
	size_t end = st->pos + st->len, start;
	int64_t id;

	/*
	 * Entries are root first, each real function followed by what was
	 * inlined into it: walking back from the leaf, a chain ends at its
	 * depth-0 entry (or where the raw frame changes).
	 */
	while (end > st->pos) {
		start = end - 1;
		while (start > st->pos &&
		       prof->frames[prof->pool[start]].inline_depth != 0 &&
		       prof->raw[start - 1] == prof->raw[start])
			start--;
		id = pp_location(pp, s, start, (uint32_t)(end - start));
		if (id < 0 ||
		    sp__xmem_reserve(pp->mem, (void **)&pp->loc_ids,
				     &pp->loc_ids_cap, pp->nloc_ids + 1,
				     sizeof(*pp->loc_ids)) < 0)
			return -ENOMEM;
		pp->loc_ids[pp->nloc_ids++] = (uint64_t)id;
		end = start;
	}
	return 0;
}

/*
 * The main executable of the process with the most samples (its threads
 * added up; the first such process on a tie), or SP_NO_MODULE.
 */
static int pp_main_module(struct pprof *pp, uint32_t *module)
{
	struct sp__profile *prof = pp->prof;
	uint64_t *sum = pp_calloc(pp->mem, prof->nthreads, sizeof(*sum));
	struct sp__xmap slots = { 0 };
	size_t i, best = SIZE_MAX;
	uint32_t k;
	int err = sum ? 0 : -ENOMEM;

	for (i = 0; !err && i < prof->nthreads; i++) {
		uint64_t key = (uint32_t)prof->threads[i].pid;

		k = sp__xmap_get(&slots, key);
		if (k == UINT32_MAX) {
			k = (uint32_t)i;
			err = sp__xmap_put(&slots, pp->mem, key, k);
		}
		if (err)
			break;
		sum[k] += prof->threads[i].samples;
		if (best == SIZE_MAX || sum[k] > sum[best] ||
		    (sum[k] == sum[best] && k < best))
			best = k;
	}
	sp__xmap_fini(&slots, pp->mem);
	pp_free(pp->mem, sum, prof->nthreads, sizeof(*sum));
	*module =
		err || best == SIZE_MAX ?
			SP_NO_MODULE :
			sp__profile_main_module(prof, prof->threads[best].pid);
	return err;
}

static int pp_locations(struct pprof *pp)
{
	const struct sp__profile *prof = pp->prof;
	uint32_t main;
	size_t s;
	int err;

	pp->nmodules = sp_spool_module_count(prof->spool);
	pp->mapping_of_module =
		pp_calloc(pp->mem, pp->nmodules, sizeof(uint32_t));
	pp->stack_loc_pos =
		pp_calloc(pp->mem, prof->nstacks + 1, sizeof(size_t));
	if (!pp->mapping_of_module || !pp->stack_loc_pos)
		return -ENOMEM;
	err = pp_main_module(pp, &main);
	if (!err && pp_mapping(pp, main) < 0)
		err = -ENOMEM;
	if (err)
		return err;
	for (s = 0; s < prof->nstacks; s++) {
		pp->stack_loc_pos[s] = pp->nloc_ids;
		err = pp_stack_locations(pp, (uint32_t)s);
		if (err < 0)
			return err;
	}
	pp->stack_loc_pos[prof->nstacks] = pp->nloc_ids;
	pp->mapping_bits = pp_calloc(pp->mem, pp->nmappings, 1);
	if (!pp->mapping_bits)
		return -ENOMEM;
	for (s = 0; s < pp->nlocs; s++)
		pp_mapping_bits(pp, &pp->locs[s]);
	return 0;
}

/* ---- output ---- */

struct pp_buffer {
	ProtobufCBuffer base;
	struct pprof *pp;
};

static void pp_append(ProtobufCBuffer *buf, size_t len, const uint8_t *data)
{
	struct pp_buffer *b = (struct pp_buffer *)buf;

	sp__xgzip_write(&b->pp->gz, data, len);
}

/* Packs @msg into the gzip stream. */
static int pp_emit(struct pprof *pp, const Perftools__Profiles__Profile *msg)
{
	struct pp_buffer b = { .base = { .append = pp_append }, .pp = pp };

	perftools__profiles__profile__pack_to_buffer(msg, &b.base);
	return pp->gz.err;
}

/* The header: sample types, period, times and the title comment. */
static int pp_emit_header(struct pprof *pp)
{
	const struct sp__profile *prof = pp->prof;
	Perftools__Profiles__Profile msg = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__ValueType vt[3] = {
		PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
		PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
		PERFTOOLS__PROFILES__VALUE_TYPE__INIT,
	};
	Perftools__Profiles__ValueType *types[2] = { &vt[0], &vt[1] };
	uint64_t start_us;

	vt[0].type = pp->s_samples;
	vt[0].unit = pp->s_count;
	vt[1].type = vt[2].type = pp->s_cpu;
	vt[1].unit = vt[2].unit = pp->s_ns;
	msg.n_sample_type = pp->period_ns ? 2 : 1;
	msg.sample_type = types;
	msg.default_sample_type = pp->period_ns ? pp->s_cpu : pp->s_samples;
	if (pp->period_ns) {
		msg.period_type = &vt[2];
		msg.period = pp->period_ns;
	}
	start_us = prof->total_samples ?
			   sp_spool_timestamp_us(prof->spool, prof->first_ns) :
			   sp_spool_start_timestamp_us(prof->spool);
	msg.time_nanos = (int64_t)(start_us * 1000);
	if (prof->total_samples)
		msg.duration_nanos = (int64_t)(prof->last_ns - prof->first_ns) +
				     pp->period_ns;
	msg.n_comment = 1;
	msg.comment = &pp->s_title;
	return pp_emit(pp, &msg);
}

/* Per-slice buffers for samples. */
struct pp_sample_slice {
	Perftools__Profiles__Sample samples[PP_SLICE];
	Perftools__Profiles__Sample *sample_ptrs[PP_SLICE];
	Perftools__Profiles__Label labels[3 * PP_SLICE];
	Perftools__Profiles__Label *label_ptrs[3 * PP_SLICE];
	int64_t values[2 * PP_SLICE];
};

static void pp_fill_sample(struct pprof *pp, struct pp_sample_slice *sl,
			   size_t k, const struct sp__xcount *c)
{
	const struct sp__xthread *t = &pp->prof->threads[c->thread];
	Perftools__Profiles__Sample *s = &sl->samples[k];
	Perftools__Profiles__Label *lab = &sl->labels[3 * k];
	int64_t name = pp->thread_names[c->thread];

	perftools__profiles__sample__init(s);
	perftools__profiles__label__init(&lab[0]);
	perftools__profiles__label__init(&lab[1]);
	perftools__profiles__label__init(&lab[2]);
	lab[0].key = pp->s_pid;
	lab[0].num = t->pid;
	lab[1].key = pp->s_tid;
	lab[1].num = t->tid;
	lab[2].key = pp->s_process;
	lab[2].str = name;
	sl->label_ptrs[3 * k] = &lab[0];
	sl->label_ptrs[3 * k + 1] = &lab[1];
	sl->label_ptrs[3 * k + 2] = &lab[2];
	s->n_label = name >= 0 ? 3 : 2;
	s->label = &sl->label_ptrs[3 * k];
	s->location_id = pp->loc_ids + pp->stack_loc_pos[c->stack];
	s->n_location_id =
		pp->stack_loc_pos[c->stack + 1] - pp->stack_loc_pos[c->stack];
	sl->values[2 * k] = (int64_t)c->count;
	sl->values[2 * k + 1] = (int64_t)c->count * pp->period_ns;
	s->value = &sl->values[2 * k];
	s->n_value = pp->period_ns ? 2 : 1;
	sl->sample_ptrs[k] = s;
}

static int pp_emit_samples(struct pprof *pp)
{
	const struct sp__profile *prof = pp->prof;
	Perftools__Profiles__Profile msg = PERFTOOLS__PROFILES__PROFILE__INIT;
	struct pp_sample_slice *sl = pp_calloc(pp->mem, 1, sizeof(*sl));
	size_t i = 0, k;
	int err = 0;

	if (!sl)
		return -ENOMEM;
	while (!err && i < prof->ncounts) {
		for (k = 0; k < PP_SLICE && i < prof->ncounts; k++, i++)
			pp_fill_sample(pp, sl, k, &prof->counts[i]);
		msg.n_sample = k;
		msg.sample = sl->sample_ptrs;
		err = pp_emit(pp, &msg);
	}
	pp_free(pp->mem, sl, 1, sizeof(*sl));
	return err;
}

static void pp_fill_mapping(struct pprof *pp, size_t i,
			    Perftools__Profiles__Mapping *m)
{
	struct sp_module mod = { 0 };
	uint8_t bits = pp->mapping_bits[i];

	perftools__profiles__mapping__init(m);
	sp_spool_module(pp->prof->spool, pp->mappings[i], &mod);
	m->id = i + 1;
	m->memory_start = mod.start;
	m->memory_limit = mod.end;
	m->file_offset = mod.file_offset;
	/* Interned before the table is written: see pp_mapping_names(). */
	m->filename = pp_str(pp, mod.path);
	m->build_id = pp->mapping_build_ids[i];
	m->has_functions = !!(bits & PP_HAS_FUNCTIONS);
	m->has_filenames = !!(bits & PP_HAS_FILENAMES);
	m->has_line_numbers = !!(bits & PP_HAS_LINES);
	m->has_inline_frames = !!(bits & PP_HAS_INLINE);
}

/* @len bytes as lowercase hex into @out (2 * len + 1 bytes). */
static void pp_hex(const unsigned char *b, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = digits[b[i] >> 4];
		out[2 * i + 1] = digits[b[i] & 15];
	}
	out[2 * len] = 0;
}

/*
 * Interns every mapping's file name (the paths are borrowed from the
 * spool) and build-id (an owned copy: pp_str keeps pointers).
 */
static int pp_mapping_names(struct pprof *pp)
{
	unsigned char id[64];
	char hex[2 * sizeof(id) + 1];
	struct sp_module mod;
	size_t i, n;

	pp->mapping_build_ids =
		pp_calloc(pp->mem, pp->nmappings, sizeof(int64_t));
	if (!pp->mapping_build_ids)
		return -ENOMEM;
	for (i = 0; i < pp->nmappings; i++) {
		if (sp_spool_module(pp->prof->spool, pp->mappings[i], &mod) < 0)
			return -EINVAL;
		if (pp_str(pp, mod.path) < 0)
			return -ENOMEM;
		n = sp__xbuildid(&mod, id, sizeof(id));
		pp_hex(id, n, hex);
		pp->mapping_build_ids[i] = n ? pp_str_copy(pp, hex) : 0;
		if (pp->mapping_build_ids[i] < 0)
			return -ENOMEM;
	}
	return 0;
}

/* The "process" label of each thread: its executable's name, or -1. */
static int pp_thread_names(struct pprof *pp)
{
	struct sp__profile *prof = pp->prof;
	size_t i;

	pp->thread_names = pp_calloc(pp->mem, prof->nthreads, sizeof(int64_t));
	if (!pp->thread_names)
		return -ENOMEM;
	for (i = 0; i < prof->nthreads; i++) {
		const char *name =
			sp__profile_process_name(prof, prof->threads[i].pid);

		pp->thread_names[i] = name ? pp_str(pp, name) : -1;
		if (name && pp->thread_names[i] < 0)
			return -ENOMEM;
	}
	return 0;
}

static int pp_emit_mappings(struct pprof *pp)
{
	Perftools__Profiles__Profile msg = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__Mapping *m, **ptrs;
	size_t i = 0, k;
	int err = 0;

	m = pp_calloc(pp->mem, PP_SLICE, sizeof(*m));
	ptrs = pp_calloc(pp->mem, PP_SLICE, sizeof(*ptrs));
	if (!m || !ptrs)
		err = -ENOMEM;
	while (!err && i < pp->nmappings) {
		for (k = 0; k < PP_SLICE && i < pp->nmappings; k++, i++) {
			pp_fill_mapping(pp, i, &m[k]);
			ptrs[k] = &m[k];
		}
		msg.n_mapping = k;
		msg.mapping = ptrs;
		err = pp_emit(pp, &msg);
	}
	pp_free(pp->mem, m, PP_SLICE, sizeof(*m));
	pp_free(pp->mem, ptrs, PP_SLICE, sizeof(*ptrs));
	return err;
}

/* Line buffers of one slice of locations. */
struct pp_line_buf {
	Perftools__Profiles__Line *lines;
	Perftools__Profiles__Line **ptrs;
	size_t len, cap, ptrs_cap;
	size_t off[PP_SLICE]; /* first line of each location of the slice */
};

static int pp_fill_location(struct pprof *pp, const struct pp_loc *l,
			    uint64_t id, Perftools__Profiles__Location *out,
			    struct pp_line_buf *lb, size_t k)
{
	const struct sp__profile *prof = pp->prof;
	uint32_t i;

	perftools__profiles__location__init(out);
	out->id = id;
	out->mapping_id = l->mapping;
	out->address = l->address;
	out->n_line = l->len;
	/* out->line is set once the slice's lines stop moving. */
	lb->off[k] = lb->len;
	if (sp__xmem_reserve(pp->mem, (void **)&lb->lines, &lb->cap,
			     lb->len + l->len, sizeof(*lb->lines)) < 0)
		return -ENOMEM;
	/* Innermost first: the chain is stored outermost first. */
	for (i = 0; i < l->len; i++) {
		uint32_t f = prof->pool[l->pos + l->len - 1 - i];
		Perftools__Profiles__Line *ln = &lb->lines[lb->len++];

		perftools__profiles__line__init(ln);
		ln->function_id = pp->func_of_frame[f];
		ln->line = prof->frames[f].line;
	}
	return 0;
}

/* Points each location of a slice at its lines. */
static int pp_link_lines(struct pprof *pp, Perftools__Profiles__Location *locs,
			 size_t n, struct pp_line_buf *lb)
{
	size_t i, j;

	if (sp__xmem_reserve(pp->mem, (void **)&lb->ptrs, &lb->ptrs_cap,
			     lb->len + 1, sizeof(*lb->ptrs)) < 0)
		return -ENOMEM;
	for (j = 0; j < lb->len; j++)
		lb->ptrs[j] = &lb->lines[j];
	for (i = 0; i < n; i++)
		locs[i].line = lb->ptrs + lb->off[i];
	return 0;
}

static int pp_emit_location_slice(struct pprof *pp, size_t *next,
				  Perftools__Profiles__Location *locs,
				  Perftools__Profiles__Location **ptrs,
				  struct pp_line_buf *lb)
{
	Perftools__Profiles__Profile msg = PERFTOOLS__PROFILES__PROFILE__INIT;
	size_t k, i = *next;
	int err = 0;

	lb->len = 0;
	for (k = 0; !err && k < PP_SLICE && i < pp->nlocs; k++, i++) {
		err = pp_fill_location(pp, &pp->locs[i], i + 1, &locs[k], lb,
				       k);
		ptrs[k] = &locs[k];
	}
	if (!err)
		err = pp_link_lines(pp, locs, k, lb);
	if (err)
		return err;
	*next = i;
	msg.n_location = k;
	msg.location = ptrs;
	return pp_emit(pp, &msg);
}

static int pp_emit_locations(struct pprof *pp)
{
	Perftools__Profiles__Location *locs, **ptrs;
	struct pp_line_buf *lb;
	size_t i = 0;
	int err = 0;

	locs = pp_calloc(pp->mem, PP_SLICE, sizeof(*locs));
	ptrs = pp_calloc(pp->mem, PP_SLICE, sizeof(*ptrs));
	lb = pp_calloc(pp->mem, 1, sizeof(*lb));
	if (!locs || !ptrs || !lb)
		err = -ENOMEM;
	while (!err && i < pp->nlocs)
		err = pp_emit_location_slice(pp, &i, locs, ptrs, lb);
	if (lb) {
		sp__xmem_free(pp->mem, lb->lines, lb->cap * sizeof(*lb->lines));
		sp__xmem_free(pp->mem, lb->ptrs,
			      lb->ptrs_cap * sizeof(*lb->ptrs));
		pp_free(pp->mem, lb, 1, sizeof(*lb));
	}
	pp_free(pp->mem, locs, PP_SLICE, sizeof(*locs));
	pp_free(pp->mem, ptrs, PP_SLICE, sizeof(*ptrs));
	return err;
}

static int pp_emit_functions(struct pprof *pp)
{
	Perftools__Profiles__Profile msg = PERFTOOLS__PROFILES__PROFILE__INIT;
	Perftools__Profiles__Function *f, **ptrs;
	size_t i = 0, k;
	int err = 0;

	f = pp_calloc(pp->mem, PP_SLICE, sizeof(*f));
	ptrs = pp_calloc(pp->mem, PP_SLICE, sizeof(*ptrs));
	if (!f || !ptrs)
		err = -ENOMEM;
	while (!err && i < pp->nfuncs) {
		for (k = 0; k < PP_SLICE && i < pp->nfuncs; k++, i++) {
			perftools__profiles__function__init(&f[k]);
			f[k].id = i + 1;
			f[k].name = pp->funcs[i].name;
			f[k].system_name = pp->funcs[i].system_name;
			f[k].filename = pp->funcs[i].file;
			ptrs[k] = &f[k];
		}
		msg.n_function = k;
		msg.function = ptrs;
		err = pp_emit(pp, &msg);
	}
	pp_free(pp->mem, f, PP_SLICE, sizeof(*f));
	pp_free(pp->mem, ptrs, PP_SLICE, sizeof(*ptrs));
	return err;
}

static int pp_emit_strings(struct pprof *pp)
{
	Perftools__Profiles__Profile msg = PERFTOOLS__PROFILES__PROFILE__INIT;
	size_t i = 0, n;
	int err = 0;

	/* protobuf-c declares the table char **; it only reads it. */
	while (!err && i < pp->nstrs) {
		n = pp->nstrs - i < PP_SLICE ? pp->nstrs - i : PP_SLICE;
		msg.n_string_table = n;
		msg.string_table = (char **)(uintptr_t)(pp->strs + i);
		err = pp_emit(pp, &msg);
		i += n;
	}
	return err;
}

static void pp_fini(struct pprof *pp)
{
	const struct sp__xmem *mem = pp->mem;
	size_t nstacks = pp->prof->nstacks;

	sp__xgzip_fini(&pp->gz);
	sp__xmap_fini(&pp->str_map, mem);
	sp__xmap_fini(&pp->func_map, mem);
	sp__xmap_fini(&pp->loc_map, mem);
	sp__xmem_free(mem, pp->strs, pp->strs_cap * sizeof(*pp->strs));
	while (pp->nowned--)
		sp__xmem_free(mem, pp->owned[pp->nowned].str,
			      pp->owned[pp->nowned].size);
	sp__xmem_free(mem, pp->owned, pp->owned_cap * sizeof(*pp->owned));
	sp__xmem_free(mem, pp->funcs, pp->funcs_cap * sizeof(*pp->funcs));
	sp__xmem_free(mem, pp->mappings,
		      pp->mappings_cap * sizeof(*pp->mappings));
	sp__xmem_free(mem, pp->locs, pp->locs_cap * sizeof(*pp->locs));
	sp__xmem_free(mem, pp->loc_ids, pp->loc_ids_cap * sizeof(uint64_t));
	if (pp->func_of_frame)
		pp_free(mem, pp->func_of_frame, pp->prof->nframes,
			sizeof(uint32_t));
	if (pp->mapping_of_module)
		pp_free(mem, pp->mapping_of_module, pp->nmodules,
			sizeof(uint32_t));
	if (pp->stack_loc_pos)
		pp_free(mem, pp->stack_loc_pos, nstacks + 1, sizeof(size_t));
	if (pp->mapping_bits)
		pp_free(mem, pp->mapping_bits, pp->nmappings, 1);
	if (pp->mapping_build_ids)
		pp_free(mem, pp->mapping_build_ids, pp->nmappings,
			sizeof(int64_t));
	if (pp->thread_names)
		pp_free(mem, pp->thread_names, pp->prof->nthreads,
			sizeof(int64_t));
}

static int pp_build(struct pprof *pp)
{
	int err = pp_fixed_strings(pp);

	if (!err)
		err = pp_functions(pp);
	if (!err)
		err = pp_locations(pp);
	if (!err)
		err = pp_mapping_names(pp);
	if (!err)
		err = pp_thread_names(pp);
	return err;
}

static int pp_write(struct pprof *pp)
{
	int err = pp_emit_header(pp);

	if (!err)
		err = pp_emit_samples(pp);
	if (!err)
		err = pp_emit_mappings(pp);
	if (!err)
		err = pp_emit_locations(pp);
	if (!err)
		err = pp_emit_functions(pp);
	if (!err)
		err = pp_emit_strings(pp);
	if (!err)
		err = sp__xgzip_finish(&pp->gz);
	return err;
}

int sp__export_pprof(struct sp__profile *prof, struct sp_sink *sink)
{
	struct pprof pp = { .prof = prof, .mem = &prof->mem };
	uint64_t interval_us = sp_spool_sample_interval_us(prof->spool);
	int err;

	pp.period_ns = (int64_t)(interval_us * 1000);
	err = pp_build(&pp);
	if (!err)
		err = sp__xgzip_init(&pp.gz, pp.mem, sink, SP__XGZIP_DEFAULT);
	if (!err)
		err = pp_write(&pp);
	pp_fini(&pp);
	return err;
}
