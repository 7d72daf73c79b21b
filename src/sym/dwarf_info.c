/* SPDX-License-Identifier: MIT */
/* DWARF line tables and inline ranges, built lazily per CU, read lock-free. */
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "atomic.h"
#include "logging.h"
#include "native_internal.h"
#include "vec.h"

/*
 * libdw answers line and inline questions correctly but slowly and not
 * thread-safely: dwarf_getscopes costs 0.1-2.6 ms per address
 * (research/feasibility.md §4). We use libdw only to *build* compact
 * tables, once per CU, and answer every lookup from them:
 *
 *   sp__dwarf_info
 *   +-- ranges[]   {lo, hi, cu}  every CU's DW_AT_ranges / low-high pc,
 *   |              sorted by lo; built once at the first lookup
 *   +-- cus[]      {die offset, table}  table published with a release
 *                  store when built (NULL until then)
 *
 *   cu_table
 *   +-- rows[]     {addr, file, line, column}  the CU's line program as
 *   |              libdw sorts it; rows at one address keep only the last
 *   |              (the one dwarf_getsrc_die and dwfl_module_getsrc pick);
 *   |              file NULL marks an end of sequence (no line)
 *   +-- inl[]      sp__inline: one per DW_TAG_inlined_subroutine, with its
 *   |              enclosing instance as parent (a tree per function)
 *   +-- segs[]     {lo, hi, inl}  disjoint address segments, each mapped
 *   |              to the innermost instance covering it
 *   +-- fsegs[]    {lo, hi, fn}  the same for DW_TAG_subprogram ranges,
 *   |              each mapped to the innermost function covering it
 *   +-- fdecl[]    per function: its DW_AT_decl_line (0 when unknown)
 *
 * A lookup binary-searches ranges[] for the CU, acquires its table (pairs
 * with the release store in get_table), and binary-searches rows[] and
 * segs[]; walking inl[].parent gives the chain, innermost first, and
 * fsegs[] gives the function's first line. Only
 * the first lookup of a CU takes the mutex, and inside it the owner
 * image's lock around every libdw call (the Elf may be shared with the
 * CFI builder).
 *
 * Hostile DWARF: libdw validates offsets; here the DIE walk is bounded in
 * depth, in DIE count, and by strictly increasing sibling offsets; the
 * segment sweep bounds its active set; a CU whose build fails publishes
 * the empty table, so it is never retried and never crashes a lookup.
 */

#define DIE_DEPTH_MAX 128
#define DIE_COUNT_MAX (64u << 20)
#define RANGES_PER_DIE_MAX 4096
#define CU_WALK_BACK 8
#define DEFAULT_MEM_CAP ((size_t)512 << 20)

enum {
	DW_STATE_NEW = 0,
	DW_STATE_READY = 1,
	DW_STATE_NONE = 2
};

struct line_row {
	uint64_t addr;
	const char *file;
	uint32_t line;
	uint32_t column;
};

struct cu_table {
	struct line_row *rows;
	size_t nrows;
	struct sp__inline *inl;
	size_t ninl;
	struct inl_seg *segs;
	size_t nsegs;
	struct inl_seg *fsegs; /* inl: index in fdecl[] */
	size_t nfsegs;
	uint32_t *fdecl;
	size_t nfdecl;
	size_t bytes;
};

struct cu_slot {
	Dwarf_Off die_off;
	uint64_t table; /* struct cu_table *, published with release */
};

struct cu_range {
	uint64_t lo;
	uint64_t hi;
	size_t cu;
};

struct sp__dwarf_info {
	struct sp__mem mem;
	struct sp__image *owner;
	const char *debug_dirs; /* borrowed: where a dwz file may be */
	struct sp__image *alt;	/* the dwz supplementary file, own reference */
	Dwarf *alt_dw;
	const struct sp_logger *logger;
	pthread_mutex_t lock;
	uint64_t state; /* DW_STATE_*, published with release */
	Dwarf *dw;
	struct sp__vec cus;	/* struct cu_slot */
	struct sp__vec ranges;	/* struct cu_range */
	struct sp__arena paths; /* joined file names, under lock */
	size_t bytes;		/* under lock */
	size_t mem_cap;
	bool warned_cap;
	struct cu_table empty;
};

/* A file name as libdw returns it and as we report it. */
struct file_name {
	const char *raw;
	const char *full;
};

/*
 * An abstract function DIE (by offset) and where something of it is:
 * for an inline instance without a linkage name, its index in inl[]; for
 * an out-of-line copy (a DW_TAG_subprogram with that abstract origin),
 * its entry pc. Matched by offset once the CU is walked.
 */
struct origin {
	Dwarf_Off die;
	uint64_t pc;  /* out-of-line copy: its entry; 0 for an instance */
	int32_t inl;  /* instance: index in inl[]; -1 for a copy */
	uint32_t seq; /* order of appearance: the first copy wins */
};

struct walk {
	const struct sp__mem *mem;
	Dwarf_Files *files;
	struct sp__vec names;	  /* struct file_name, sorted by raw pointer */
	struct sp__vec inl;	  /* struct sp__inline */
	struct sp__vec ranges;	  /* struct inl_range */
	struct sp__vec origins;	  /* struct origin */
	struct sp__vec fn_ranges; /* struct inl_range, inl: index in fn_decl */
	struct sp__vec fn_decl;	  /* uint32_t */
	size_t dies;
};

int sp__dwarf_info_new(const struct sp__mem *mem, struct sp__image *owner,
		       const char *debug_dirs, const struct sp_logger *logger,
		       size_t mem_cap, struct sp__dwarf_info **out)
{
	struct sp__dwarf_info *di;

	di = sp__mem_calloc(mem, 1, sizeof(*di));
	if (!di)
		return -ENOMEM;
	di->mem = *mem;
	di->debug_dirs = debug_dirs;
	di->logger = logger;
	di->mem_cap = mem_cap ? mem_cap : DEFAULT_MEM_CAP;
	if (pthread_mutex_init(&di->lock, NULL) != 0) {
		sp__mem_free(mem, di, sizeof(*di));
		return -ENOMEM;
	}
	sp__vec_init(&di->cus, sizeof(struct cu_slot));
	sp__vec_init(&di->ranges, sizeof(struct cu_range));
	sp__arena_init(&di->paths);
	sp__image_ref(owner);
	di->owner = owner;
	*out = di;
	return 0;
}

static void table_free(const struct sp__mem *mem, struct cu_table *t)
{
	sp__mem_free(mem, t->rows, t->nrows * sizeof(*t->rows));
	sp__mem_free(mem, t->inl, t->ninl * sizeof(*t->inl));
	sp__mem_free(mem, t->segs, t->nsegs * sizeof(*t->segs));
	sp__mem_free(mem, t->fsegs, t->nfsegs * sizeof(*t->fsegs));
	sp__mem_free(mem, t->fdecl, t->nfdecl * sizeof(*t->fdecl));
	sp__mem_free(mem, t, sizeof(*t));
}

void sp__dwarf_info_free(struct sp__dwarf_info *di)
{
	size_t i;

	if (!di)
		return;
	for (i = 0; i < di->cus.len; i++) {
		struct cu_slot *s = sp__vec_at(&di->cus, i);
		struct cu_table *t = (struct cu_table *)(uintptr_t)s->table;

		if (t && t != &di->empty)
			table_free(&di->mem, t);
	}
	if (di->dw) {
		sp__image_lock(di->owner);
		dwarf_end(di->dw);
		dwarf_end(di->alt_dw);
		sp__image_unlock(di->owner);
	}
	if (di->alt)
		sp__image_unref(di->alt);
	sp__vec_fini(&di->cus, &di->mem);
	sp__vec_fini(&di->ranges, &di->mem);
	sp__arena_fini(&di->paths, &di->mem);
	sp__image_unref(di->owner);
	pthread_mutex_destroy(&di->lock);
	sp__mem_free(&di->mem, di, sizeof(*di));
}

size_t sp__dwarf_info_bytes(const struct sp__dwarf_info *di)
{
	return di ? di->bytes : 0;
}

/* ---- CU index (built once) ---- */

static int cmp_cu_range(const void *pa, const void *pb)
{
	const struct cu_range *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	return a->cu < b->cu ? -1 : a->cu > b->cu;
}

/* Records the address ranges of one CU DIE. */
static int index_cu(struct sp__dwarf_info *di, Dwarf_Die *cudie)
{
	struct cu_slot slot = { .die_off = dwarf_dieoffset(cudie) };
	Dwarf_Addr base, start, end;
	ptrdiff_t off = 0;
	size_t n = 0;

	while (n < RANGES_PER_DIE_MAX &&
	       (off = dwarf_ranges(cudie, off, &base, &start, &end)) > 0) {
		struct cu_range r = { start, end, di->cus.len };

		if (start >= end)
			continue;
		if (sp__vec_push(&di->ranges, &di->mem, &r) < 0)
			return -ENOMEM;
		n++;
	}
	if (n == 0)
		return 0;
	return sp__vec_push(&di->cus, &di->mem, &slot);
}

static int index_cus(struct sp__dwarf_info *di)
{
	Dwarf_CU *cu = NULL, *next;
	Dwarf_Half version;
	uint8_t type;
	Dwarf_Die cudie;
	int err;

	while (dwarf_get_units(di->dw, cu, &next, &version, &type, &cudie,
			       NULL) == 0) {
		cu = next;
		if (type != DW_UT_compile && type != DW_UT_skeleton)
			continue;
		if (dwarf_tag(&cudie) != DW_TAG_compile_unit &&
		    dwarf_tag(&cudie) != DW_TAG_skeleton_unit)
			continue;
		err = index_cu(di, &cudie);
		if (err < 0)
			return err;
	}
	if (di->ranges.len)
		qsort(di->ranges.data, di->ranges.len, sizeof(struct cu_range),
		      cmp_cu_range);
	return 0;
}

/*
 * A dwz-compressed debug file reads part of its strings and DIEs from the
 * supplementary file its .gnu_debugaltlink names. libdw would open that
 * name itself on first use, with a blocking open(2) of whatever the file
 * says; so it is found and opened here (sp__debug_find_alt) and handed to
 * libdw, and without it the image has no DWARF (names come from the
 * symbol table). Returns 0, -ENOENT (no usable DWARF), -ENOMEM.
 */
static int attach_alt(struct sp__dwarf_info *di)
{
	const char *name = NULL;
	const void *bid = NULL;
	ssize_t n = dwelf_dwarf_gnu_debugaltlink(di->dw, &name, &bid);
	int err;

	if (n == 0)
		return 0;
	err = n < 0 ? -ENOENT :
		      sp__debug_find_alt(&di->mem, di->owner, name, bid,
					 (size_t)n, di->debug_dirs, di->logger,
					 &di->alt);
	if (err == 0) {
		di->alt_dw = dwarf_begin_elf(sp__image_elf(di->alt),
					     DWARF_C_READ, NULL);
		err = di->alt_dw ? 0 : -ENOENT;
	}
	if (err == 0) {
		dwarf_setalt(di->dw, di->alt_dw);
		return 0;
	}
	if (err == -ENOENT)
		sp__log(di->logger, SP_LOG_DEBUG,
			"%s: dwz file %s not found, DWARF not used",
			sp__image_name(di->owner), name ? name : "?");
	return err;
}

/* Opens the Dwarf and indexes its CUs, once. Returns 0 or -ENOMEM. */
static int open_dwarf(struct sp__dwarf_info *di)
{
	uint64_t state = DW_STATE_NONE;
	int err = 0;

	pthread_mutex_lock(&di->lock);
	if (sp__load_relaxed_u64(&di->state) != DW_STATE_NEW)
		goto out;
	sp__image_lock(di->owner);
	di->dw = dwarf_begin_elf(sp__image_elf(di->owner), DWARF_C_READ, NULL);
	if (di->dw) {
		err = attach_alt(di);
		/* No dwz file: no DWARF, as if there were none. */
		if (err == -ENOENT) {
			dwarf_end(di->dw);
			di->dw = NULL;
			err = 0;
		}
	}
	if (di->dw) {
		err = index_cus(di);
		if (err == 0 && di->cus.len)
			state = DW_STATE_READY;
	}
	if (err < 0) {
		di->cus.len = 0;
		di->ranges.len = 0;
		dwarf_end(di->dw);
		di->dw = NULL;
	}
	if (!di->dw) {
		dwarf_end(di->alt_dw);
		di->alt_dw = NULL;
		if (di->alt)
			sp__image_unref(di->alt);
		di->alt = NULL;
	}
	sp__image_unlock(di->owner);
	/* -ENOMEM leaves the state NEW so a later lookup retries. */
	if (err == 0)
		sp__store_release_u64(&di->state,
				      state); /* pairs with lookup */
	if (state != DW_STATE_READY)
		sp__log(di->logger, SP_LOG_DEBUG, "%s: no usable DWARF",
			sp__image_name(di->owner));
out:
	pthread_mutex_unlock(&di->lock);
	return err;
}

static struct cu_slot *find_cu(struct sp__dwarf_info *di, uint64_t addr)
{
	const struct cu_range *r = di->ranges.data;
	size_t lo = 0, hi = di->ranges.len, i, k;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (k = 0, i = lo; k < CU_WALK_BACK && i > 0; k++, i--) {
		if (addr < r[i - 1].hi)
			return sp__vec_at(&di->cus, r[i - 1].cu);
	}
	return NULL;
}

/* ---- per-CU tables ---- */

static int cmp_file_name(const void *pa, const void *pb)
{
	uintptr_t a = (uintptr_t)((const struct file_name *)pa)->raw;
	uintptr_t b = (uintptr_t)((const struct file_name *)pb)->raw;

	return a < b ? -1 : a > b;
}

/* "comp_dir/raw" in the arena (the name eu-addr2line prints). */
static const char *join(struct sp__dwarf_info *di, const char *dir,
			const char *raw)
{
	size_t dlen = strlen(dir), rlen = strlen(raw);
	char *p = sp__arena_alloc(&di->paths, &di->mem, dlen + rlen + 2);

	if (!p)
		return NULL;
	memcpy(p, dir, dlen);
	p[dlen] = '/';
	memcpy(p + dlen + 1, raw, rlen + 1);
	di->bytes += dlen + rlen + 2;
	return p;
}

/*
 * libdw joins a file with its line-table directory, but leaves the result
 * relative when that directory is (GCC's "../src" for out-of-tree
 * builds). Report such names under the CU's DW_AT_comp_dir, as
 * eu-addr2line does; lines and call sites share the same libdw strings,
 * so one sorted map per CU translates both.
 */
static int map_files(struct sp__dwarf_info *di, Dwarf_Die *cudie,
		     struct walk *w, size_t nfiles)
{
	Dwarf_Attribute attr;
	const char *dir;
	size_t i;

	dir = dwarf_formstring(dwarf_attr(cudie, DW_AT_comp_dir, &attr));
	for (i = 0; w->files && i < nfiles; i++) {
		struct file_name f;

		f.raw = dwarf_filesrc(w->files, i, NULL, NULL);
		if (!f.raw)
			continue;
		f.full = f.raw[0] == '/' || !dir ? f.raw : join(di, dir, f.raw);
		if (!f.full || sp__vec_push(&w->names, w->mem, &f) < 0)
			return -ENOMEM;
	}
	if (w->names.len)
		qsort(w->names.data, w->names.len, sizeof(struct file_name),
		      cmp_file_name);
	return 0;
}

static const char *full_name(const struct walk *w, const char *raw)
{
	const struct file_name *f = w->names.data;
	size_t lo = 0, hi = w->names.len;

	while (raw && lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f[mid].raw == raw)
			return f[mid].full;
		if ((uintptr_t)f[mid].raw < (uintptr_t)raw)
			lo = mid + 1;
		else
			hi = mid;
	}
	return raw;
}

/* Copies the CU's sorted line rows, keeping the last row per address. */
static int read_lines(const struct walk *w, Dwarf_Die *cudie,
		      struct sp__vec *rows)
{
	Dwarf_Lines *lines;
	size_t n, i;

	if (dwarf_getsrclines(cudie, &lines, &n) != 0)
		return 0;
	for (i = 0; i < n; i++) {
		Dwarf_Line *l = dwarf_onesrcline(lines, i);
		struct line_row row = { 0 }, *last;
		Dwarf_Addr addr;
		bool endseq = false;
		int line = 0, col = 0;

		if (!l || dwarf_lineaddr(l, &addr) != 0)
			continue;
		row.addr = addr;
		dwarf_lineendsequence(l, &endseq);
		if (!endseq) {
			row.file = full_name(w, dwarf_linesrc(l, NULL, NULL));
			dwarf_lineno(l, &line);
			dwarf_linecol(l, &col);
			row.line = line > 0 ? (uint32_t)line : 0;
			row.column = col > 0 ? (uint32_t)col : 0;
		}
		last = rows->len ? sp__vec_at(rows, rows->len - 1) : NULL;
		if (last && last->addr == row.addr) {
			*last = row;
			continue;
		}
		if (sp__vec_push(rows, w->mem, &row) < 0)
			return -ENOMEM;
	}
	return 0;
}

/*
 * The name eu-addr2line prints for an inline instance: linkage first
 * (*@linkage tells which), through DW_AT_abstract_origin and
 * DW_AT_specification (dwarf_attr_integrate).
 */
static const char *inline_name(Dwarf_Die *die, bool *linkage)
{
	Dwarf_Attribute attr;
	const char *name;

	name = dwarf_formstring(
		dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!name)
		name = dwarf_formstring(dwarf_attr_integrate(
			die, DW_AT_MIPS_linkage_name, &attr));
	*linkage = name != NULL;
	if (!name)
		name = dwarf_diename(die);
	return name ? name : "??";
}

/* The offset of @die's abstract origin, or 0 when it has none. */
static Dwarf_Off origin_of(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	Dwarf_Die origin;

	if (!dwarf_formref_die(dwarf_attr(die, DW_AT_abstract_origin, &attr),
			       &origin))
		return 0;
	return dwarf_dieoffset(&origin);
}

/* Notes where @o's abstract function is (struct origin). */
static int add_origin(struct walk *w, Dwarf_Off die, uint64_t pc, int32_t inl)
{
	struct origin o = { .die = die,
			    .pc = pc,
			    .inl = inl,
			    .seq = (uint32_t)w->origins.len };

	if (!die)
		return 0;
	return sp__vec_push(&w->origins, w->mem, &o) < 0 ? -ENOMEM : 0;
}

/* A DW_TAG_subprogram with an abstract origin is an out-of-line copy. */
static int add_copy(struct walk *w, Dwarf_Die *die)
{
	Dwarf_Addr pc, base, end;

	if (dwarf_lowpc(die, &pc) != 0 &&
	    dwarf_ranges(die, 0, &base, &pc, &end) <= 0)
		return 0;
	return pc ? add_origin(w, origin_of(die), pc, -1) : 0;
}

static int cmp_origin(const void *pa, const void *pb)
{
	const struct origin *a = pa, *b = pb;

	if (a->die != b->die)
		return a->die < b->die ? -1 : 1;
	/* Copies (inl -1) first, so each instance follows its copy. */
	if ((a->inl < 0) != (b->inl < 0))
		return a->inl < 0 ? -1 : 1;
	return (a->seq > b->seq) - (a->seq < b->seq);
}

/*
 * Gives each instance without a linkage name the entry pc of its
 * function's first out-of-line copy (GCC clones such as .constprop.0
 * are copies too; native.c takes only a plain C++ symbol there).
 */
static void match_origins(struct walk *w)
{
	struct origin *o = w->origins.data;
	struct sp__inline *inl = w->inl.data;
	uint64_t pc = 0;
	size_t i;

	if (!w->origins.len)
		return;
	qsort(o, w->origins.len, sizeof(*o), cmp_origin);
	for (i = 0; i < w->origins.len; i++) {
		if (i == 0 || o[i].die != o[i - 1].die)
			pc = o[i].inl < 0 ? o[i].pc : 0;
		if (o[i].inl >= 0)
			inl[o[i].inl].origin_pc = pc;
	}
}

static uint32_t attr_u32(Dwarf_Die *die, unsigned name)
{
	Dwarf_Attribute attr;
	Dwarf_Word v;

	if (dwarf_formudata(dwarf_attr(die, name, &attr), &v) != 0)
		return 0;
	return v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* DW_AT_decl_line, through abstract origin and specification; 0 if none. */
static uint32_t decl_line_of(Dwarf_Die *die)
{
	int line;

	if (dwarf_decl_line(die, &line) != 0 || line <= 0)
		return 0;
	return (uint32_t)line;
}

/*
 * Notes the ranges of a function (a DW_TAG_subprogram with code) and its
 * first line. @level orders nested functions: the deepest one covering
 * an address is the function there.
 */
static int add_function(struct walk *w, Dwarf_Die *die, unsigned level)
{
	uint32_t decl = decl_line_of(die);
	Dwarf_Addr base, start, end;
	ptrdiff_t off = 0;
	size_t n = 0;
	bool noted = false;

	if (w->fn_decl.len >= INT32_MAX)
		return 0;
	while (n++ < RANGES_PER_DIE_MAX &&
	       (off = dwarf_ranges(die, off, &base, &start, &end)) > 0) {
		struct inl_range r = { start, end, (int32_t)w->fn_decl.len,
				       level };

		if (start >= end)
			continue;
		if (sp__vec_push(&w->fn_ranges, w->mem, &r) < 0)
			return -ENOMEM;
		noted = true;
	}
	if (noted && sp__vec_push(&w->fn_decl, w->mem, &decl) < 0)
		return -ENOMEM;
	return 0;
}

static int add_inline(struct walk *w, Dwarf_Die *die, int32_t parent,
		      uint32_t depth, int32_t *idx)
{
	struct sp__inline e = { .parent = parent };
	Dwarf_Attribute attr;
	Dwarf_Addr base, start, end;
	Dwarf_Word file;
	ptrdiff_t off = 0;
	size_t n = 0;
	bool linkage;
	int err;

	e.name = inline_name(die, &linkage);
	if (w->files && dwarf_formudata(dwarf_attr(die, DW_AT_call_file, &attr),
					&file) == 0)
		e.call.file =
			full_name(w, dwarf_filesrc(w->files, file, NULL, NULL));
	e.call.line = attr_u32(die, DW_AT_call_line);
	e.call.column = attr_u32(die, DW_AT_call_column);
	e.decl_line = decl_line_of(die);
	*idx = (int32_t)w->inl.len;
	if (sp__vec_push(&w->inl, w->mem, &e) < 0)
		return -ENOMEM;
	err = linkage ? 0 : add_origin(w, origin_of(die), 0, *idx);
	if (err < 0)
		return err;
	while (n++ < RANGES_PER_DIE_MAX &&
	       (off = dwarf_ranges(die, off, &base, &start, &end)) > 0) {
		struct inl_range r = { start, end, *idx, depth };

		if (start < end && sp__vec_push(&w->ranges, w->mem, &r) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* Tags whose children may hold inlined subroutines. */
static bool may_hold_inlines(int tag)
{
	switch (tag) {
	case DW_TAG_subprogram:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_lexical_block:
	case DW_TAG_try_block:
	case DW_TAG_catch_block:
	case DW_TAG_namespace:
	case DW_TAG_module:
	case DW_TAG_class_type:
	case DW_TAG_structure_type:
	case DW_TAG_union_type:
		return true;
	default:
		return false;
	}
}

/*
 * Visits the children of @parent. @inl_parent/@depth describe the
 * innermost enclosing inline instance; a DW_TAG_subprogram starts a new
 * function (nested functions are separate frames). Instances deeper than
 * SP_DWARF_INLINE_MAX are folded into their ancestor.
 */
static int walk_dies(struct walk *w, Dwarf_Die *parent, int32_t inl_parent,
		     uint32_t depth, unsigned level)
{
	Dwarf_Die child;
	Dwarf_Off prev = 0;
	int err;

	if (level >= DIE_DEPTH_MAX || dwarf_child(parent, &child) != 0)
		return 0;
	do {
		int tag = dwarf_tag(&child);
		int32_t p = inl_parent;
		uint32_t d = depth;

		/* Siblings must move forward: a hostile DW_AT_sibling may not. */
		if (dwarf_dieoffset(&child) <= prev ||
		    ++w->dies > DIE_COUNT_MAX)
			return 0;
		prev = dwarf_dieoffset(&child);
		if (!may_hold_inlines(tag))
			continue;
		if (tag == DW_TAG_subprogram) {
			p = -1;
			d = 0;
			err = add_copy(w, &child);
			if (err == 0)
				err = add_function(w, &child, level);
			if (err < 0)
				return err;
		} else if (tag == DW_TAG_inlined_subroutine &&
			   d < SP_DWARF_INLINE_MAX) {
			err = add_inline(w, &child, inl_parent, d, &p);
			if (err < 0)
				return err;
			d++;
		}
		err = walk_dies(w, &child, p, d, level + 1);
		if (err < 0)
			return err;
	} while (dwarf_siblingof(&child, &child) == 0);
	return 0;
}

/* Moves a vec's storage into an exact-size array owned by the table. */
static void *take(const struct sp__mem *mem, struct sp__vec *v, size_t *n)
{
	void *data;

	*n = v->len;
	if (!v->len)
		return NULL;
	if (v->len == v->cap) {
		data = v->data;
		sp__vec_init(v, v->elem);
		return data;
	}
	data = sp__mem_realloc(mem, v->data, v->cap * v->elem,
			       v->len * v->elem);
	if (!data)
		return NULL;
	sp__vec_init(v, v->elem);
	return data;
}

static int fill_table(struct sp__dwarf_info *di, Dwarf_Die *cudie,
		      struct cu_table *t)
{
	const struct sp__mem *mem = &di->mem;
	struct walk w = { .mem = mem };
	struct sp__vec rows, segs, fsegs;
	size_t nfiles;
	int err;

	sp__vec_init(&rows, sizeof(struct line_row));
	sp__vec_init(&segs, sizeof(struct inl_seg));
	sp__vec_init(&fsegs, sizeof(struct inl_seg));
	sp__vec_init(&w.inl, sizeof(struct sp__inline));
	sp__vec_init(&w.ranges, sizeof(struct inl_range));
	sp__vec_init(&w.names, sizeof(struct file_name));
	sp__vec_init(&w.origins, sizeof(struct origin));
	sp__vec_init(&w.fn_ranges, sizeof(struct inl_range));
	sp__vec_init(&w.fn_decl, sizeof(uint32_t));
	if (dwarf_getsrcfiles(cudie, &w.files, &nfiles) != 0)
		w.files = NULL;
	err = map_files(di, cudie, &w, nfiles);
	if (err == 0)
		err = read_lines(&w, cudie, &rows);
	if (err == 0)
		err = walk_dies(&w, cudie, -1, 0, 0);
	if (err == 0) {
		match_origins(&w);
		err = sp__inline_segments(mem, &w.ranges, &segs);
	}
	if (err == 0)
		err = sp__inline_segments(mem, &w.fn_ranges, &fsegs);
	if (err == 0) {
		t->rows = take(mem, &rows, &t->nrows);
		t->inl = take(mem, &w.inl, &t->ninl);
		t->segs = take(mem, &segs, &t->nsegs);
		t->fsegs = take(mem, &fsegs, &t->nfsegs);
		t->fdecl = take(mem, &w.fn_decl, &t->nfdecl);
		if ((t->nrows && !t->rows) || (t->ninl && !t->inl) ||
		    (t->nsegs && !t->segs) || (t->nfsegs && !t->fsegs) ||
		    (t->nfdecl && !t->fdecl))
			err = -ENOMEM;
	}
	t->bytes = sizeof(*t) + t->nrows * sizeof(*t->rows) +
		   t->ninl * sizeof(*t->inl) + t->nsegs * sizeof(*t->segs) +
		   t->nfsegs * sizeof(*t->fsegs) +
		   t->nfdecl * sizeof(*t->fdecl);
	sp__vec_fini(&rows, mem);
	sp__vec_fini(&segs, mem);
	sp__vec_fini(&fsegs, mem);
	sp__vec_fini(&w.inl, mem);
	sp__vec_fini(&w.ranges, mem);
	sp__vec_fini(&w.names, mem);
	sp__vec_fini(&w.origins, mem);
	sp__vec_fini(&w.fn_ranges, mem);
	sp__vec_fini(&w.fn_decl, mem);
	return err;
}

/* Builds the CU's table under the owner's lock; the empty one on failure. */
static int build_table(struct sp__dwarf_info *di, const struct cu_slot *s,
		       struct cu_table **out)
{
	struct cu_table *t;
	Dwarf_Die cudie;
	int err = 0;

	*out = &di->empty;
	if (di->bytes >= di->mem_cap) {
		if (!di->warned_cap)
			sp__log(di->logger, SP_LOG_WARN,
				"%s: DWARF table cap reached, no more lines",
				sp__image_name(di->owner));
		di->warned_cap = true;
		return 0;
	}
	t = sp__mem_calloc(&di->mem, 1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	sp__image_lock(di->owner);
	if (dwarf_offdie(di->dw, s->die_off, &cudie))
		err = fill_table(di, &cudie, t);
	sp__image_unlock(di->owner);
	if (err < 0) {
		table_free(&di->mem, t);
		return err;
	}
	di->bytes += t->bytes;
	*out = t;
	return 0;
}

static const struct cu_table *get_table(struct sp__dwarf_info *di,
					struct cu_slot *s, int *err)
{
	struct cu_table *t;

	/* Pairs with the release store below (another thread's build). */
	t = (struct cu_table *)(uintptr_t)sp__load_acquire_u64(&s->table);
	if (t)
		return t;
	pthread_mutex_lock(&di->lock);
	t = (struct cu_table *)(uintptr_t)sp__load_relaxed_u64(&s->table);
	if (!t) {
		*err = build_table(di, s, &t);
		/* -ENOMEM publishes nothing: a later lookup retries. */
		if (*err == 0)
			sp__store_release_u64(&s->table, (uintptr_t)t);
	}
	pthread_mutex_unlock(&di->lock);
	return *err < 0 ? NULL : t;
}

/* The last row at or below @addr, as dwfl_module_getsrc picks it. */
static void find_line(const struct cu_table *t, uint64_t addr,
		      struct sp__src_loc *loc)
{
	size_t lo = 0, hi = t->nrows;
	const struct line_row *row;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->rows[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return;
	row = &t->rows[lo - 1];
	loc->file = row->file;
	loc->line = row->file ? row->line : 0;
	loc->column = row->file ? row->column : 0;
}

/* The segment of @segs[0..n) containing @addr, or NULL. */
static const struct inl_seg *find_seg(const struct inl_seg *segs, size_t n,
				      uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (segs[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr >= segs[lo - 1].hi)
		return NULL;
	return &segs[lo - 1];
}

static int find_chain(const struct cu_table *t, uint64_t addr,
		      const struct sp__inline **chain, size_t cap)
{
	const struct inl_seg *seg = find_seg(t->segs, t->nsegs, addr);
	size_t n = 0;
	int32_t i;

	if (!seg)
		return 0;
	/* Parents precede children in inl[], so the walk terminates. */
	for (i = seg->inl; i >= 0 && n < cap; i = t->inl[i].parent)
		chain[n++] = &t->inl[i];
	return (int)n;
}

static uint32_t find_decl_line(const struct cu_table *t, uint64_t addr)
{
	const struct inl_seg *seg = find_seg(t->fsegs, t->nfsegs, addr);

	return seg ? t->fdecl[seg->inl] : 0;
}

int sp__dwarf_info_lookup(struct sp__dwarf_info *di, uint64_t addr,
			  bool want_inline, struct sp__src_loc *loc,
			  uint32_t *decl_line, const struct sp__inline **chain,
			  size_t cap)
{
	const struct cu_table *t;
	struct cu_slot *s;
	uint64_t state;
	int err = 0;

	memset(loc, 0, sizeof(*loc));
	*decl_line = 0;
	/* Pairs with the release store in open_dwarf. */
	state = sp__load_acquire_u64(&di->state);
	if (state == DW_STATE_NEW) {
		err = open_dwarf(di);
		if (err < 0)
			return err;
		state = sp__load_acquire_u64(&di->state);
	}
	if (state != DW_STATE_READY)
		return 0;
	s = find_cu(di, addr);
	if (!s)
		return 0;
	t = get_table(di, s, &err);
	if (!t)
		return err;
	find_line(t, addr, loc);
	*decl_line = find_decl_line(t, addr);
	return want_inline ? find_chain(t, addr, chain, cap) : 0;
}
