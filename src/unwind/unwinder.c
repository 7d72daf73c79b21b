/* SPDX-License-Identifier: MIT */
/* The public unwinder: table cache, mapping resolution, the frame walk. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <stackpulse/error.h>

#include "atomic.h"
#include "for_engine/unwind_jit.h"
#include "hash.h"
#include "jit_table.h"
#include "logging.h"
#include "map.h"
#include "opts.h"
#include "unwind_internal.h"
#include "unwind_stats.h"
#include "vec.h"
#include "walk_memo.h"

/*
 * Two caches make the per-frame path cheap and lock-free:
 *
 *   mapping (start, end, offset, dev, ino, flags[, path])
 *        |  slots[hash & mask]: lock-free front cache (acquire load)
 *        v
 *   struct resolved { table, bias }      one per mapping ever seen, immutable
 *        |
 *        v
 *   struct table_slot { image, table }   one per image, built once
 *
 * A frame then costs: a range check that the pc is still in the previous
 * frame's region (struct region: what the walk needs from a mapping,
 * worked out once per unwind; else one of the unwind's few other regions,
 * else a binary search of the caller's mapping array and one slot probe,
 * keyed by the mapping's start so that no hashing is needed), one probe
 * of the pc cache for the rule set, and the inline step of the
 * architecture (arch/<arch>_step.h), while the stack lines above are
 * prefetched; the saves of the other callee-saved registers (RBX and
 * R12-R15, X19-X28) are kept pending until a step needs them (struct
 * pending_save). The slow path (first sight of
 * a mapping) takes the unwinder mutex to find or insert entries, opens the
 * image through the image cache and builds its table under the table
 * slot's own mutex, so one long build (40 ms for libc) does not block
 * unwinds through images that are already known. Entries are freed only
 * with the unwinder, so a pointer read from a slot stays valid.
 */

#define SLOT_COUNT 1024 /* front_slot() takes 10 bits */
#define PC_CACHE_BITS 12
#define REGIONS 4	    /* struct region: per unwind, round robin */
#define PREFETCH_AHEAD 1024 /* bytes of stack copy, see prefetch_stack() */

struct table_slot {
	struct sp__image *img; /* NULL: a JIT table (jit_table.h) */
	void *code;	       /* a JIT table's code bytes, @code_len */
	size_t code_len;
	uint32_t id; /* 1 + index in tables: the pc cache's table key */
	pthread_mutex_t build_lock;
	uint64_t table; /* struct sp__cfi_table *, published with release */
	uint64_t done;	/* 1 once @table/@status are final (release) */
	int status;
};

struct resolved {
	uint64_t start, end, offset, inode;
	uint32_t dev_major, dev_minor, flags;
	char *path; /* kept only when inode == 0 (identity by name) */
	size_t path_size;
	const struct sp__cfi_table *table; /* NULL: no unwind data */
	uint32_t table_id;		   /* table_slot.id, 0: not cached */
	uint64_t bias;
	int status;
};

struct sp_unwinder {
	struct sp__mem mem;
	uint64_t gen; /* names this unwinder in walk memos (never reused) */
	const struct sp_logger *logger;
	uint32_t max_depth;
	uint64_t page_size;
	pthread_mutex_t lock; /* guards everything below but slots */
	struct sp__image_cache *images;
	struct sp__image *vdso;
	struct sp__vec tables;	     /* struct table_slot * */
	struct sp__map table_map;    /* image pointer -> tables index */
	struct sp__map jit_map;	     /* JIT code hash -> tables index */
	struct sp__vec resolved;     /* struct resolved * */
	struct sp__map resolved_map; /* mapping key -> resolved index */
	uint64_t slots[SLOT_COUNT];  /* struct resolved *, release/acquire */
	uint64_t pc_cache[1u << PC_CACHE_BITS]; /* see cached_rules() */
};

/* ---- lifecycle --------------------------------------------------------- */

/* Copies the fields of @opts that fit its size; rejects unknown bytes. */
static int read_opts(const struct sp_unwinder_opts *opts,
		     struct sp_unwinder_opts *o)
{
	int err = sp__opts_load(opts, opts ? opts->size : 0, o, sizeof(*o));

	if (err)
		return err;
	if (o->max_depth > SP_DEPTH_MAX || o->flags)
		return -EINVAL;
	return 0;
}

static uint64_t unwinder_gens;

int sp_unwinder_new(const struct sp_unwinder_opts *opts,
		    struct sp_unwinder **out)
{
	struct sp_unwinder_opts o;
	struct sp_unwinder *u;
	struct sp__mem mem;
	long page;
	int err;

	if (!out || read_opts(opts, &o))
		return -EINVAL;
	sp__mem_init(&mem, o.allocator);
	u = sp__mem_calloc(&mem, 1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->mem = mem;
	u->gen = sp__fetch_add_u64(&unwinder_gens, 1) + 1;
	u->logger = o.logger;
	u->max_depth = o.max_depth ? o.max_depth : SP_DEPTH_DEFAULT;
	page = sysconf(_SC_PAGESIZE);
	u->page_size = page > 0 ? (uint64_t)page : 4096;
	sp__vec_init(&u->tables, sizeof(struct table_slot *));
	sp__vec_init(&u->resolved, sizeof(struct resolved *));
	sp__map_init(&u->table_map);
	sp__map_init(&u->jit_map);
	sp__map_init(&u->resolved_map);
	err = sp__image_cache_new(&u->mem, &u->images);
	if (err) {
		sp__mem_free(&mem, u, sizeof(*u));
		return err;
	}
	pthread_mutex_init(&u->lock, NULL);
	*out = u;
	return 0;
}

static void table_slot_free(struct sp_unwinder *u, struct table_slot *ts)
{
	sp__cfi_table_free((struct sp__cfi_table *)(uintptr_t)ts->table);
	if (ts->img)
		sp__image_unref(ts->img);
	sp__mem_free(&u->mem, ts->code, ts->code_len);
	pthread_mutex_destroy(&ts->build_lock);
	sp__mem_free(&u->mem, ts, sizeof(*ts));
}

void sp_unwinder_free(struct sp_unwinder *u)
{
	struct sp__mem mem;
	size_t i;

	if (!u)
		return;
	mem = u->mem;
	for (i = 0; i < u->tables.len; i++)
		table_slot_free(u, *(struct table_slot **)sp__vec_at(&u->tables,
								     i));
	for (i = 0; i < u->resolved.len; i++) {
		struct resolved *r =
			*(struct resolved **)sp__vec_at(&u->resolved, i);

		sp__mem_free(&mem, r->path, r->path_size);
		sp__mem_free(&mem, r, sizeof(*r));
	}
	sp__vec_fini(&u->tables, &mem);
	sp__vec_fini(&u->resolved, &mem);
	sp__map_fini(&u->table_map, &mem);
	sp__map_fini(&u->jit_map, &mem);
	sp__map_fini(&u->resolved_map, &mem);
	if (u->vdso)
		sp__image_unref(u->vdso);
	sp__image_cache_free(u->images);
	pthread_mutex_destroy(&u->lock);
	sp__mem_free(&mem, u, sizeof(*u));
}

/* ---- tables per image -------------------------------------------------- */

/* Finds or adds the table slot of @img (takes a new reference on insert). */
static int table_slot_get(struct sp_unwinder *u, struct sp__image *img,
			  struct table_slot **out)
{
	uint64_t key[3] = { (uint64_t)(uintptr_t)img, 0, 0 };
	uint64_t h = sp__map_hash(key);
	struct table_slot *ts;
	uint32_t idx;
	int err = 0;

	pthread_mutex_lock(&u->lock);
	if (sp__map_get(&u->table_map, key, h, &idx)) {
		*out = *(struct table_slot **)sp__vec_at(&u->tables, idx);
		goto out_unlock;
	}
	ts = sp__mem_calloc(&u->mem, 1, sizeof(*ts));
	err = ts ? sp__vec_reserve(&u->tables, &u->mem, 1) : -ENOMEM;
	if (!err)
		err = sp__map_put(&u->table_map, &u->mem, key, h,
				  (uint32_t)u->tables.len);
	if (err) {
		sp__mem_free(&u->mem, ts, sizeof(*ts));
		goto out_unlock;
	}
	sp__image_ref(img);
	ts->img = img;
	ts->id = (uint32_t)u->tables.len + 1;
	pthread_mutex_init(&ts->build_lock, NULL);
	sp__vec_push(&u->tables, &u->mem, &ts); /* reserved above */
	*out = ts;
out_unlock:
	pthread_mutex_unlock(&u->lock);
	return err;
}

/* Builds the table of @ts once; later callers get the finished result. */
static int table_slot_build(struct sp_unwinder *u, struct table_slot *ts,
			    const struct sp__cfi_table **out)
{
	struct sp__cfi_table *t = NULL;
	int err;

	/* Pairs with the release store of done below. */
	if (!sp__load_acquire_u64(&ts->done)) {
		pthread_mutex_lock(&ts->build_lock);
		if (!ts->done) {
			sp__image_lock(ts->img);
			err = sp__cfi_table_build(&u->mem,
						  sp__image_elf(ts->img), &t);
			sp__image_unlock(ts->img);
			ts->status = err;
			ts->table = (uint64_t)(uintptr_t)t;
			if (err)
				sp__log(u->logger, SP_LOG_WARN,
					"no unwind table for %s: %s",
					sp__image_name(ts->img),
					sp_strerror(err));
			/* Publishes table and status to the acquire above. */
			sp__store_release_u64(&ts->done, 1);
		}
		pthread_mutex_unlock(&ts->build_lock);
	}
	*out = (const struct sp__cfi_table *)(uintptr_t)ts->table;
	return ts->status;
}

/* ---- JIT tables (jit_table.h) ------------------------------------------ */

#define JIT_TABLES_MAX 256 /* distinct JIT code contents per unwinder */

/* The slot of JIT code equal to @code, under the lock; NULL if none. */
static struct table_slot *jit_find(struct sp_unwinder *u, const uint64_t key[3],
				   uint64_t h, const void *code, size_t len)
{
	struct table_slot *ts;
	uint32_t idx;

	if (!sp__map_get(&u->jit_map, key, h, &idx))
		return NULL;
	ts = *(struct table_slot **)sp__vec_at(&u->tables, idx);
	return ts->code_len == len && memcmp(ts->code, code, len) == 0 ? ts :
									 NULL;
}

/* Adds a finished JIT table with a copy of its code; takes @t. */
static int jit_insert(struct sp_unwinder *u, const uint64_t key[3], uint64_t h,
		      const void *code, size_t len, struct sp__cfi_table *t,
		      uint64_t *id)
{
	struct table_slot *ts = sp__mem_calloc(&u->mem, 1, sizeof(*ts));
	void *copy = sp__mem_alloc(&u->mem, len);
	int err = ts && copy ? 0 : -ENOMEM;

	if (!err && u->jit_map.count >= JIT_TABLES_MAX)
		err = -E2BIG;
	if (!err)
		err = sp__vec_reserve(&u->tables, &u->mem, 1);
	if (!err)
		err = sp__map_put(&u->jit_map, &u->mem, key, h,
				  (uint32_t)u->tables.len);
	if (err) {
		sp__mem_free(&u->mem, ts, sizeof(*ts));
		sp__mem_free(&u->mem, copy, len);
		sp__cfi_table_free(t);
		return err;
	}
	memcpy(copy, code, len);
	ts->code = copy;
	ts->code_len = len;
	ts->id = (uint32_t)u->tables.len + 1;
	ts->table = (uint64_t)(uintptr_t)t;
	ts->done = 1;
	pthread_mutex_init(&ts->build_lock, NULL);
	sp__vec_push(&u->tables, &u->mem, &ts); /* reserved above */
	*id = ts->id;
	return 0;
}

int sp__unwinder_jit_tiled(struct sp_unwinder *u, const void *code, size_t len,
			   uint64_t *id)
{
	uint64_t key[3] = { sp__hash_bytes(code, len), len, 0x4a4954 };
	uint64_t h = sp__map_hash(key);
	struct sp__cfi_table *t;
	struct table_slot *ts;
	int err;

	if (!u || !code || !id)
		return -EINVAL;
	pthread_mutex_lock(&u->lock);
	ts = jit_find(u, key, h, code, len);
	pthread_mutex_unlock(&u->lock);
	if (ts) {
		*id = ts->id;
		return 0;
	}
	err = sp__jit_tiled_table(&u->mem, code, len, &t);
	if (err)
		return err;
	pthread_mutex_lock(&u->lock);
	ts = jit_find(u, key, h, code, len);
	if (ts) {
		*id = ts->id;
		sp__cfi_table_free(t);
	} else {
		err = jit_insert(u, key, h, code, len, t, id);
	}
	pthread_mutex_unlock(&u->lock);
	return err;
}

/* A JIT mapping's table: its id is in @inode (jit_table.h). */
static void jit_fill(struct sp_unwinder *u, const struct sp_mapping *m,
		     struct resolved *r)
{
	const struct table_slot *ts = NULL;

	pthread_mutex_lock(&u->lock);
	if (m->inode && m->inode <= u->tables.len)
		ts = *(struct table_slot **)sp__vec_at(&u->tables,
						       (size_t)m->inode - 1);
	pthread_mutex_unlock(&u->lock);
	r->status = ts && !ts->img ? 0 : -ENOENT;
	if (r->status)
		return;
	r->table = (const struct sp__cfi_table *)(uintptr_t)ts->table;
	r->bias = m->start;
	if (ts->id <= UINT16_MAX)
		r->table_id = ts->id;
}

/* ---- mappings ---------------------------------------------------------- */

static uint64_t mapping_hash(const struct sp_mapping *m)
{
	uint64_t w[5] = { m->start, m->end, m->file_offset, m->inode,
			  ((uint64_t)m->dev_major << 32 | m->dev_minor) ^
				  ((uint64_t)m->flags << 20) };
	uint64_t h = sp__hash_words(w, 5);

	if (m->inode == 0 && m->path)
		h ^= sp__hash_bytes(m->path, strlen(m->path));
	return h;
}

static bool resolved_matches(const struct resolved *r,
			     const struct sp_mapping *m)
{
	if (r->start != m->start || r->end != m->end ||
	    r->offset != m->file_offset || r->inode != m->inode ||
	    r->dev_major != m->dev_major || r->dev_minor != m->dev_minor ||
	    r->flags != m->flags)
		return false;
	if (m->inode != 0 || (m->flags & SP_MAPPING_VDSO))
		return true;
	if (!r->path || !m->path)
		return r->path == NULL && m->path == NULL;
	return strcmp(r->path, m->path) == 0;
}

static int open_image(struct sp_unwinder *u, const struct sp_mapping *m,
		      struct sp__image **img)
{
	uint64_t dev = 0;
	int err = 0;

	if (m->flags & SP_MAPPING_VDSO) {
		pthread_mutex_lock(&u->lock);
		if (!u->vdso)
			err = sp__image_open_vdso(&u->mem, &u->vdso);
		if (!err) {
			sp__image_ref(u->vdso);
			*img = u->vdso;
		}
		pthread_mutex_unlock(&u->lock);
		return err;
	}
	if (!m->path)
		return -ENOENT;
	if (m->inode)
		dev = makedev(m->dev_major, m->dev_minor);
	return sp__image_cache_get(u->images, m->path, dev, m->inode, img);
}

/* Opens the image, computes the bias and builds the table (no locks held). */
static void resolve_fill(struct sp_unwinder *u, const struct sp_mapping *m,
			 struct resolved *r)
{
	struct sp__image *img = NULL;
	struct table_slot *ts;
	int err;

	if (m->flags & SP__MAPPING_JIT) {
		jit_fill(u, m, r);
		return;
	}
	err = open_image(u, m, &img);
	if (!err)
		err = sp__image_bias(img, m->start, m->end, m->file_offset,
				     u->page_size, &r->bias);
	if (!err)
		err = table_slot_get(u, img, &ts);
	if (!err)
		err = table_slot_build(u, ts, &r->table);
	if (!err && ts->id <= UINT16_MAX)
		r->table_id = ts->id;
	if (img)
		sp__image_unref(img);
	r->status = err;
	if (err)
		r->table = NULL;
}

static struct resolved *resolved_new(struct sp_unwinder *u,
				     const struct sp_mapping *m)
{
	struct resolved *r = sp__mem_calloc(&u->mem, 1, sizeof(*r));

	if (!r)
		return NULL;
	r->start = m->start;
	r->end = m->end;
	r->offset = m->file_offset;
	r->inode = m->inode;
	r->dev_major = m->dev_major;
	r->dev_minor = m->dev_minor;
	r->flags = m->flags;
	if (m->inode == 0 && m->path && !(m->flags & SP_MAPPING_VDSO)) {
		r->path_size = strlen(m->path) + 1;
		r->path = sp__mem_alloc(&u->mem, r->path_size);
		if (!r->path) {
			sp__mem_free(&u->mem, r, sizeof(*r));
			return NULL;
		}
		memcpy(r->path, m->path, r->path_size);
	}
	resolve_fill(u, m, r);
	return r;
}

/* Looks up a resolved entry under the lock; NULL when unknown. */
static struct resolved *resolved_find(struct sp_unwinder *u,
				      const struct sp_mapping *m,
				      const uint64_t key[3], uint64_t h)
{
	struct resolved *r;
	uint32_t idx;

	if (!sp__map_get(&u->resolved_map, key, h, &idx))
		return NULL;
	r = *(struct resolved **)sp__vec_at(&u->resolved, idx);
	return resolved_matches(r, m) ? r : NULL;
}

/* Adds @r (or returns the entry another thread added first). */
static struct resolved *resolved_insert(struct sp_unwinder *u,
					const struct sp_mapping *m,
					struct resolved *r)
{
	uint64_t key[3] = { mapping_hash(m), m->start, m->end };
	uint64_t h = sp__map_hash(key);
	struct resolved *found;
	uint32_t idx;

	pthread_mutex_lock(&u->lock);
	found = resolved_find(u, m, key, h);
	if (!found && sp__vec_reserve(&u->resolved, &u->mem, 1) == 0) {
		idx = (uint32_t)u->resolved.len;
		sp__vec_push(&u->resolved, &u->mem, &r); /* reserved */
		/* On a hash collision the entry stays reachable by its slot. */
		if (!sp__map_get(&u->resolved_map, key, h, &(uint32_t){ 0 }))
			sp__map_put(&u->resolved_map, &u->mem, key, h, idx);
		found = r;
	}
	pthread_mutex_unlock(&u->lock);
	if (found != r) {
		sp__mem_free(&u->mem, r->path, r->path_size);
		sp__mem_free(&u->mem, r, sizeof(*r));
	}
	return found;
}

/* Front slot of @m: its start address, multiplicatively hashed. */
static uint64_t *front_slot(struct sp_unwinder *u, const struct sp_mapping *m)
{
	uint64_t h = (m->start >> 12) * 0x9e3779b97f4a7c15ull;

	return &u->slots[h >> 54]; /* the top 10 bits: SLOT_COUNT slots */
}

/* The resolution of @m: front slot, then the map, then a new resolution. */
static const struct resolved *resolve(struct sp_unwinder *u,
				      const struct sp_mapping *m)
{
	uint64_t *slot = front_slot(u, m);
	uint64_t h, key[3];
	struct resolved *r;

	/* Pairs with the release store below: the entry is fully built. */
	r = (struct resolved *)(uintptr_t)sp__load_acquire_u64(slot);
	if (r && resolved_matches(r, m))
		return r;
	h = mapping_hash(m);
	key[0] = h;
	key[1] = m->start;
	key[2] = m->end;
	pthread_mutex_lock(&u->lock);
	r = resolved_find(u, m, key, sp__map_hash(key));
	pthread_mutex_unlock(&u->lock);
	if (!r) {
		r = resolved_new(u, m);
		if (r)
			r = resolved_insert(u, m, r);
	}
	if (r)
		sp__store_release_u64(slot, (uint64_t)(uintptr_t)r);
	return r;
}

int sp_unwinder_prepare(struct sp_unwinder *u, const struct sp_mapping *m)
{
	const struct resolved *r;

	if (!u || !m || m->end <= m->start)
		return -EINVAL;
	r = resolve(u, m);
	if (!r)
		return -ENOMEM;
	/* A file without CFI is not an error (frame pointers are used). */
	return r->status == SP_ENOCFI ? 0 : r->status;
}

/* ---- the walk ---------------------------------------------------------- */

/*
 * A region is what a frame needs from its mapping (pinning, the table and
 * where it lies in memory), worked out once per unwind when the walk
 * enters the mapping. A frame in the region of the frame before then
 * costs one range check, and a frame in another region of this stack a
 * few: stacks mostly stay in a handful of mappings (the program, libc,
 * a library or two) and cross between them a few times. The empty region
 * (len 0, so never matched) stands for "no mapping": its frames come out
 * unpinned, and its pcs are looked up again every time.
 */
struct region {
	uint64_t start, len; /* the mapping: pc - start < len */
	uint64_t pin_max;    /* pinned when pc - start <= pin_max */
	uint64_t rel;	     /* file_relative_ip = pc + rel (mod 2^64) */
	uint64_t tlo, span;  /* table rows cover pc - tlo < span */
	uint64_t tkey;	     /* table id << 32 for the pc cache; 0: none */
	const struct sp__cfi_table *table;
	uint32_t module_id;
	uint32_t reason; /* enum sp_unwind_fallback when no row covers pc */
};

static const struct region no_region = {
	.pin_max = UINT64_MAX,
	.module_id = SP_NO_MODULE,
	.reason = SP_FALLBACK_NO_MODULE,
};

struct walk {
	struct sp_unwinder *u;
	const struct sp_mapping *maps;
	size_t nmaps;
	struct sp__stack stack;
	struct sp_frame *frames;
	size_t n;	   /* frames stored */
	size_t limit, cap; /* the depth cap (<= cap) and the array's size */
	struct sp_unwind_stats st;
	const struct sp__jit_index *jit; /* JIT code of the process, or NULL */
	uint64_t time;			 /* the sample's, for @jit */
	bool fell_back;			 /* a fallback was counted in @st */
	bool unstable; /* a resolution failed: the walk is not recorded */
	/* The walk memo (walk_memo.h): @prev, the thread's last walk, reused
	 * from its frame @hit_j on at this walk's frame @hit_k when @hit. */
	struct sp__walk_memo *memo;
	struct sp__memo_rec *prev;
	bool hit;
	int last_err; /* the error the walk counted at its end */
	size_t hit_j, hit_k;
	unsigned nregions, next_region;
	struct region regions[REGIONS];
};

static const struct sp_mapping *find_mapping(const struct walk *w, uint64_t pc)
{
	size_t lo = 0, hi = w->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->maps[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || pc >= w->maps[lo - 1].end)
		return NULL;
	return &w->maps[lo - 1];
}

/* @g for mapping @m, which contains some pc (so start < end). */
static void region_fill(struct walk *w, struct region *g,
			const struct sp_mapping *m)
{
	const struct resolved *r = resolve(w->u, m);
	const struct sp__cfi_table *t = r ? r->table : NULL;

	w->unstable |= !r; /* -ENOMEM: a later walk may resolve it */
	memset(g, 0, sizeof(*g));
	g->start = m->start;
	g->len = m->end - m->start;
	/* Checked: pc - start + file_offset must not wrap. */
	g->pin_max = UINT64_MAX - m->file_offset;
	g->rel = m->file_offset - m->start;
	g->module_id = m->module_id;
	g->reason = SP_FALLBACK_NO_MODULE_UNWIND_DATA;
	if (!t || !t->nrows)
		return;
	g->reason = SP_FALLBACK_DWARF_CFI_INDEX_LOOKUP;
	/* Past the top of the address space no pc is covered (span 0). */
	if (r->bias > UINT64_MAX - t->base)
		return;
	g->table = t;
	g->tlo = r->bias + t->base;
	g->span = t->span;
	g->tkey = (uint64_t)r->table_id << 32;
}

/*
 * Shrinks @g to [lo, hi), inside it, keeping its pinning exact: a pc
 * stays pinned only when pc - mapping start + file offset does not wrap.
 */
static void region_clip(struct region *g, uint64_t lo, uint64_t hi)
{
	uint64_t d = lo - g->start;

	if (d > g->pin_max) {
		g->module_id = SP_NO_MODULE;
		g->rel = 0;
		g->pin_max = UINT64_MAX;
	} else {
		g->pin_max -= d;
	}
	g->start = lo;
	g->len = hi - lo;
}

/*
 * JIT code (unwind_jit.h): the region becomes the code's own range with
 * its table, pinned like the mapping around it; outside code, the
 * region is narrowed to the gap between code ranges so that a later
 * frame in JIT code of the same mapping is looked up again.
 */
static void region_jit(struct walk *w, struct region *g, uint64_t pc,
		       const struct sp__jit_region *jr)
{
	uint64_t lo = g->start, hi = g->start + g->len;

	if (!jr) {
		sp__jit_index_gap(w->jit, pc, &lo, &hi);
		region_clip(g, lo, hi);
		return;
	}
	if (g->len == 0) { /* no mapping: unpinned, the code's range */
		lo = jr->start;
		hi = jr->end;
		g->start = lo;
	}
	region_clip(g, jr->start > lo ? jr->start : lo,
		    jr->end < hi ? jr->end : hi);
	g->table = jr->table;
	g->reason = SP_FALLBACK_DWARF_CFI_INDEX_LOOKUP;
	g->tlo = jr->bias + jr->table->base;
	g->span = jr->table->nrows ? jr->table->span : 0;
	g->tkey = 0; /* not in the pc cache: JIT tables have no slot id */
}

/* The region of @pc, when it is not the previous frame's. */
static const struct region *region_enter(struct walk *w, uint64_t pc)
{
	const struct sp__jit_region *jr = NULL;
	const struct sp_mapping *m;
	struct region *g;
	unsigned i;

	for (i = 0; i < w->nregions; i++)
		if (pc - w->regions[i].start < w->regions[i].len)
			return &w->regions[i];
	m = find_mapping(w, pc);
	if (w->jit)
		jr = sp__jit_index_find(w->jit, pc, w->time);
	if (!m && !jr)
		return &no_region;
	if (w->nregions < REGIONS)
		g = &w->regions[w->nregions++];
	else
		g = &w->regions[w->next_region++ % REGIONS];
	if (m)
		region_fill(w, g, m);
	else
		*g = no_region;
	if (w->jit)
		region_jit(w, g, pc, jr);
	return g;
}

/*
 * The rule set of @pc in region @g, NULL when no row covers it, through
 * the unwinder's pc cache. Profiles revisit the same call sites in sample
 * after sample, and a hit replaces the page index, the row scan and their
 * dependent loads (and mispredicted scan exits) by one load. Each entry
 * is one 64-bit word,
 *
 *   | table id: 16 | table offset: 32 | rule set index: 16 |
 *
 * read and written with relaxed atomics by any number of threads: a word
 * is either a complete old entry or a complete new one, and it is used
 * only when its key matches, so races cost a miss, never a wrong rule.
 * Table ids start at 1, so the zeroed cache matches nothing, and tables
 * live as long as the unwinder. Rule sets past index 65535 go uncached.
 */
static inline const struct sp__cfi_rules *
region_rules(struct sp_unwinder *u, const struct region *g, uint64_t pc)
{
	const struct sp__cfi_table *t = g->table;
	uint64_t off = pc - g->tlo, key = g->tkey | off, e, *slot;
	uint32_t idx;

	if (off >= g->span)
		return NULL;
	slot = &u->pc_cache[(key * 0x9e3779b97f4a7c15ull) >>
			    (64 - PC_CACHE_BITS)];
	e = sp__load_relaxed_u64(slot);
	if (__builtin_expect(e >> 16 == key && g->tkey, 1)) {
		idx = (uint32_t)(e & 0xffff);
	} else {
		idx = sp__cfi_table_rules_at(t, off);
		if (g->tkey && idx <= UINT16_MAX)
			sp__store_relaxed_u64(slot, key << 16 | idx);
	}
	return idx == SP__RULES_NONE ? NULL : &t->rules[idx];
}

static inline void put_frame(struct sp_frame *f, const struct region *g,
			     uint64_t pc)
{
	bool pinned = pc - g->start <= g->pin_max;

	f->abs_ip = pc;
	f->file_relative_ip = pinned ? pc + g->rel : pc;
	f->module_id = pinned ? g->module_id : SP_NO_MODULE;
	f->mode = SP_FRAME_USER;
}

/* Appends the marker, replacing the last frame when the array is full. */
static void put_marker(struct walk *w, size_t cap)
{
	struct sp_frame *f;

	if (w->n == cap)
		w->n--;
	f = &w->frames[w->n++];
	f->abs_ip = 0;
	f->file_relative_ip = 0;
	f->module_id = SP_NO_MODULE;
	f->mode = SP_FRAME_TRUNCATED;
	w->st.truncated++;
}

/*
 * struct sp_regs has room for the largest register file (AArch64's 33
 * registers); a walk copies only the native architecture's (x86-64: 17,
 * half the struct), as nothing reads past them (every use of a register
 * number checks it against SP__ARCH_NREGS). Once or twice per sample:
 * the whole-struct copy (rep movsq of 35 words) was most of the 33
 * instructions per sample the architecture seam added on x86-64
 * (callgrind, bench/compare_builds.py: 2,130 -> 2,163; 2,133 with this).
 */
static inline void regs_copy(struct sp_regs *to, const struct sp_regs *from)
{
	memcpy(to->r, from->r, sizeof(from->r[0]) * SP__ARCH_NREGS);
	to->valid = from->valid;
	to->arch = from->arch;
	to->abi = from->abi;
}

/*
 * Every step the fast path declines: the full CFI step with rule set @row
 * of @table (unusual rules, signal frames, errors), else frame pointers,
 * counting @reason when they find a caller. Updates
 * @cur in place; returns 0, SP__STEP_END or -1, with the error to count
 * in *@err (when -1) and the fallback to count + 1 in *@fb (0: none).
 */
static int step_slow_core(const struct sp__stack *stack,
			  const struct sp__cfi_table *table,
			  enum sp_unwind_fallback reason,
			  const struct sp__cfi_rules *row, struct sp_regs *cur,
			  bool *signal, int *err, int *fb)
{
	struct sp__step_fail fail = { 0 }, fp_fail;
	struct sp_regs next;
	int ret = -1;

	*signal = false;
	*fb = 0;
	if (row) {
		ret = sp__arch_step_cfi(table, row, stack, cur, &next, &fail);
		*signal = ret >= 0 && (row->flags & SP__ROW_SIGNAL);
		/* The copy ends before the saved slots: frame pointers would
		 * only find older bytes and invent a caller. */
		if (ret < 0 && fail.error == SP_SAMPLE_ERR_STACK_TRUNCATED) {
			*err = (int)fail.error;
			return -1;
		}
		reason = fail.fallback;
	}
	if (ret < 0) {
		ret = sp__arch_step_fp(stack, cur, &next, &fp_fail);
		if (ret < 0) {
			/* Why CFI failed when it was tried, else why FP did. */
			*err = (int)(row ? fail.error : fp_fail.error);
			return -1;
		}
		/* Counted when it found a caller, not at the chain's end. */
		*fb = ret == 0 ? (int)reason + 1 : 0;
	}
	if (ret == 0)
		regs_copy(cur, &next);
	return ret;
}

/* step_slow_core, counting into @w; the fallback + 1 in *@fb. */
static int step_slow(struct walk *w, const struct sp__cfi_table *table,
		     enum sp_unwind_fallback reason,
		     const struct sp__cfi_rules *row, struct sp_regs *cur,
		     bool *signal, int *fb)
{
	int err = 0, ret;

	ret = step_slow_core(&w->stack, table, reason, row, cur, signal, &err,
			     fb);
	if (ret < 0) {
		w->st.errors[err]++;
		w->last_err = err;
	}
	if (*fb) {
		w->st.fallbacks[*fb - 1]++;
		w->fell_back = true;
	}
	return ret;
}

/* The memo's re-run of a slow step (walk_memo.h) on a new copy. */
static void memo_slow(const struct sp__stack *stack,
		      const struct sp__memo_step *s,
		      struct sp__memo_slow_out *out)
{
	struct sp_regs r;
	bool signal;

	memset(&r, 0, sizeof(r));
	r.arch = SP__ARCH;
	r.abi = SP_REGS_ABI_64;
	r.valid = s->valid;
	r.r[SP__ARCH_PC] = s->pc + s->back;
	r.r[SP__ARCH_SP] = s->sp;
	r.r[SP__ARCH_FP] = s->fp;
	out->err = 0;
	out->ret = step_slow_core(stack, s->table,
				  (enum sp_unwind_fallback)s->reason, s->row,
				  &r, &signal, &out->err, &out->fb);
	out->next[0] = sp__arch_pc(&r);
	out->next[1] = sp__arch_sp(&r);
	out->next[2] = r.r[SP__ARCH_FP];
	out->valid = r.valid & ~(uint64_t)SP__SAVES_MASK;
	if (signal)
		out->ret = -2; /* never replayed: signal rows are not usable */
}

/*
 * The saves of the callee-saved registers besides the frame pointer (RBX
 * and R12-R15, X19-X28) by the frames stepped since the registers were
 * last complete (arch/<arch>_step.h): the rule set's packed slots and
 * the CFA they hang from. Applied, in order, only when the full step
 * needs those registers or the array fills up; a stack that ends first
 * never reads them: 8-10% off the time of a frame in bench_unwind, whose
 * frames nearly all save some. The fast path declines rows whose CFA is
 * computed from one of them, so nothing reads a stale value. 256 of them
 * (4 KiB of the caller's stack) cover nearly every stack; a deeper one
 * applies them in batches.
 */
#define PENDING_SAVES 256

struct pending_save {
	uint64_t cfa;
	uint64_t saves; /* the rule set's saves field */
};

/*
 * Where one walk's frame loop stands: the hot state, apart from struct
 * walk, whose fields (with -fno-strict-aliasing) would be reloaded after
 * every store to a frame.
 */
struct cursor {
	struct sp__stack stack;
	struct sp_frame *frames;
	size_t n, limit;
	struct region g;
	struct sp_regs cur; /* saved registers: before the pending saves */
	uint64_t pc;
	uint64_t back; /* pc = return address - back: 1, or 0 when exact */
	uintptr_t prefetched; /* the copy's lines below it are requested */
	uint64_t prefetch_sp; /* no request is due while sp <= prefetch_sp */
	int ret;	      /* when stopped: 0 (limit), SP__STEP_END or -1 */
	unsigned npending;    /* entries of the walk's pending_save array */
	/* The walk memo: this walk's record (NULL: none) and the thread's
	 * last walk, @pn frames, matched from frame @pj on by stack pointer. */
	struct sp__memo_step *rec;
	const struct sp__memo_step *prev;
	size_t pj, pn;
};

/*
 * Stack bytes are read upwards, one frame at a time, and each read needs
 * the one before it (the CFA comes from the previous frame's registers).
 * When the copy is not in cache every frame would wait for memory in
 * turn. So the walk keeps every line of the copy up to PREFETCH_AHEAD
 * bytes above the current frame requested: the waits overlap, and each
 * line is asked for once. Prefetches never fault; the requests stay
 * within the copy and stop at its end. Most frames are shorter than the
 * distance ahead, so the walk keeps the stack pointer up to which the
 * lines are requested already (struct cursor's prefetch_sp) and a frame
 * below it costs one comparison; above it, the requests run PREFETCH_STEP
 * bytes further than needed, so that the next frames pass again.
 */
#define PREFETCH_STEP 256

static inline void prefetch_stack(struct cursor *c, uint64_t sp)
{
	const struct sp__stack *s = &c->stack;
	uintptr_t want, done = c->prefetched;

	if (__builtin_expect(sp <= c->prefetch_sp, 1))
		return;
	want = (uintptr_t)s->data + (uintptr_t)(sp - s->addr) + PREFETCH_AHEAD +
	       PREFETCH_STEP;
	if (want - (uintptr_t)s->data >= s->len || sp < s->addr) {
		want = (uintptr_t)s->data + s->len;
		c->prefetch_sp = UINT64_MAX; /* all requested */
	} else {
		c->prefetch_sp = sp + PREFETCH_STEP;
	}
	for (; done < want; done += 64)
		__builtin_prefetch((const void *)done);
	c->prefetched = done;
}

/* Applies the @c->npending saves of @p to @c->cur, oldest first. */
static void cursor_flush(struct cursor *c, const struct pending_save *p)
{
	unsigned i;

	for (i = 0; i < c->npending; i++)
		sp__arch_apply_saves(p[i].saves, &c->stack, p[i].cfa, &c->cur);
	c->npending = 0;
}

static inline void cursor_start(struct walk *w, struct cursor *c,
				const struct sp_regs *regs)
{
	c->stack = w->stack;
	c->frames = w->frames;
	c->n = w->n;
	c->limit = w->limit;
	c->g = no_region;
	regs_copy(&c->cur, regs);
	c->pc = sp__arch_pc(regs);
	c->back = 0;
	c->ret = 0;
	c->npending = 0;
	c->prefetched = (uintptr_t)c->stack.data & ~(uintptr_t)63;
	c->prefetch_sp = 0;
	c->rec = NULL;
	c->prev = NULL;
	c->pj = c->pn = 0;
	if (w->memo && w->stack.len >= 8) {
		c->rec = sp__memo_at(w->memo, 0);
		if (w->prev) {
			c->prev = w->prev->st + w->prev->base;
			c->pn = w->prev->n;
		}
	}
	prefetch_stack(c, sp__arch_sp(regs));
}

/*
 * A return address that is a signal trampoline's (__restore_rt, a vDSO
 * sigreturn) was pushed by the kernel, not by a call: the trampoline
 * starts right there. Its CFI begins one byte early (glibc and the kernel
 * put a nop before the symbol for this), so the lookup at return address
 * - 1 finds its signal rule set, and the frame is then reported at the
 * return address itself, inside the trampoline's symbol.
 */
static void frame_at_trampoline(struct cursor *c)
{
	uint64_t pc = c->pc + c->back;

	if (pc - c->g.start < c->g.len)
		put_frame(&c->frames[c->n - 1], &c->g, pc);
}

/*
 * The walk memo's part of a frame (walk_memo.h). memo_note records the
 * cursor's state at the frame about to be stepped (NULL when the record
 * is full: the walk is then not kept); memo_candidate moves the match in
 * the previous walk up to this stack pointer and tells whether that
 * frame had this state, when the walk from there on can be reused.
 */
static inline struct sp__memo_step *memo_note(struct cursor *c)
{
	struct sp__memo_step *r;

	if (__builtin_expect(c->n >= SP__MEMO_CAP, 0)) {
		c->rec = NULL;
		return NULL;
	}
	r = &c->rec[c->n];
	r->pc = c->pc;
	r->sp = sp__arch_sp(&c->cur);
	r->fp = c->cur.r[SP__ARCH_FP];
	r->valid = c->cur.valid & ~(uint64_t)SP__SAVES_MASK;
	r->back = (uint8_t)c->back;
	return r;
}

static inline bool memo_candidate(struct cursor *c,
				  const struct sp__memo_step *r)
{
	const struct sp__memo_step *p;

	while (c->pj < c->pn && c->prev[c->pj].sp < r->sp)
		c->pj++;
	if (c->pj >= c->pn)
		return false;
	p = &c->prev[c->pj];
	return p->sp == r->sp && p->pc == r->pc && p->usable &&
	       p->fp == r->fp && p->valid == r->valid && p->back == r->back &&
	       !(r->valid & ~(uint64_t)(SP__PC_SP | SP__REG_BIT(SP__ARCH_FP)));
}

/*
 * Replays the previous walk from the matched frame on the new copy; when
 * it holds, its frames and counters are this walk's and the walk ends.
 */
static __attribute__((noinline)) bool memo_hit(struct walk *w, struct cursor *c,
					       const struct sp__memo_step *r)
{
	const struct sp__memo_rec *prev = w->prev;
	const struct sp__memo_step *p;
	size_t used, i;
	int ret, err;

	(void)r;
	if (!sp__memo_replay(prev, c->pj, c->n, c->limit, &c->stack, memo_slow,
			     &used, &ret, &err))
		return false;
	p = &c->prev[c->pj];
	memcpy(&c->frames[c->n], &prev->out[prev->base + c->pj],
	       used * sizeof(*c->frames));
	if (p->fb_after)
		for (i = 0; i < used; i++)
			if (p[i].fb) {
				w->st.fallbacks[p[i].fb - 1]++;
				w->fell_back = true;
			}
	if (ret < 0) {
		w->st.errors[err]++;
		w->last_err = err;
	}
	w->hit = true;
	w->hit_j = c->pj;
	w->hit_k = c->n;
	c->n += used;
	c->ret = ret;
	w->memo->hits++;
	w->memo->frames_reused += used;
	return true;
}

/* A slow step's record: replayable unless it needed the pending saves. */
static void memo_note_slow(struct cursor *c, struct sp__memo_step *r,
			   const struct sp__cfi_rules *row, int fb)
{
	/* The outermost frame's simple row ends the walk by its state alone. */
	r->kind = row && c->ret == SP__STEP_END &&
				  (row->flags &
				   (SP__ROW_RA_UNDEF | SP__ROW_EXTRA |
				    SP__ROW_SIGNAL)) == SP__ROW_RA_UNDEF &&
				  row->cfa_reg < SP__ARCH_NREGS ?
			  SP__MEMO_PURE :
			  SP__MEMO_SLOW;
	r->row = row;
	r->table = c->g.table;
	r->reason = (uint8_t)c->g.reason;
	r->fb = (uint8_t)fb;
	r->usable = !sp__arch_step_needs_saves(row) &&
		    !(row && (row->flags & SP__ROW_SIGNAL));
}

/*
 * One frame: stores the frame of the cursor's pc and steps to its caller.
 * Returns true to go on, false when the stack ended (c->ret ==
 * SP__STEP_END), failed (-1) or reached the limit (0). The pc is the
 * lookup key: exact for the leaf and for a pc interrupted by a signal,
 * the call site (return address - 1) for the rest; it is also the
 * reported pc but for a signal trampoline (frame_at_trampoline). Nearly
 * every frame takes the inline simple step.
 */
static inline __attribute__((always_inline)) bool
frame_step(struct walk *w, struct cursor *c, struct pending_save *pending)
{
	const struct sp__cfi_rules *row;
	struct sp__memo_step *r = NULL;
	bool signal = false;
	int fb = 0;

	if (c->rec) {
		r = memo_note(c);
		if (r && c->prev && memo_candidate(c, r) && memo_hit(w, c, r))
			return false;
	}
	/* Unsigned: one comparison checks both ends. */
	if (__builtin_expect(c->pc - c->g.start >= c->g.len, 0))
		c->g = *region_enter(w, c->pc);
	put_frame(&c->frames[c->n++], &c->g, c->pc);
	row = region_rules(w->u, &c->g, c->pc);
	if (row && sp__arch_step_simple(row, &c->stack, &c->cur) == 0) {
		if (r) {
			r->row = row;
			r->kind = SP__MEMO_SIMPLE;
			r->fb = 0;
			r->usable = 1;
		}
		/* Stored always, kept when it saves something: no branch. */
		pending[c->npending].cfa = sp__arch_sp(&c->cur);
		pending[c->npending].saves = row->saves;
		c->npending += row->saves != 0;
		if (__builtin_expect(c->npending == PENDING_SAVES, 0))
			cursor_flush(c, pending);
	} else {
		if (row && (row->flags & SP__ROW_SIGNAL) && c->back)
			frame_at_trampoline(c);
		if (sp__arch_step_needs_saves(row))
			cursor_flush(c, pending);
		c->ret = step_slow(w, c->g.table, c->g.reason, row, &c->cur,
				   &signal, &fb);
		if (r)
			memo_note_slow(c, r, row, fb);
		if (c->ret != 0)
			return false;
	}
	if (c->n >= c->limit)
		return false;
	prefetch_stack(c, sp__arch_sp(&c->cur));
	c->back = signal ? 0 : 1;
	c->pc = sp__arch_pc(&c->cur) - c->back;
	return true;
}

/*
 * Walks from @regs until the stack ends (SP__STEP_END), fails (-1, the
 * error counted) or reaches the depth limit (0).
 */
static int walk_frames(struct walk *w, const struct sp_regs *regs)
{
	struct pending_save pending[PENDING_SAVES];
	struct cursor c;

	cursor_start(w, &c, regs);
	while (frame_step(w, &c, pending))
		;
	w->n = c.n;
	if (!c.rec)
		w->unstable |= w->memo != NULL;
	else if (!w->hit && c.ret == 0 && c.n < SP__MEMO_CAP)
		memo_note(&c); /* the limit: the state after the last step */
	else if (!w->hit && c.ret == 0)
		w->unstable = true;
	return c.ret;
}

/* After the frame loop: the walk becomes the thread's record. */
static void memo_end(struct walk *w, int32_t tid, uint64_t gen, int ret)
{
	if (!w->hit)
		w->memo->misses++;
	if (w->unstable)
		return;
	sp__memo_keep(w->memo, tid, gen, w->u->gen, w->frames, w->n, ret,
		      ret < 0 ? w->last_err : 0, w->hit ? w->prev : NULL,
		      w->hit_j, w->hit_k);
}

/*
 * Before the frame loop: false when the sample cannot be walked at all
 * (registers rejected, no stack bytes), which has been counted then.
 */
static bool walk_can_step(struct walk *w, const struct sp_regs *regs)
{
	enum sp_sample_error error;

	if (sp__arch_check_regs(regs, &error)) {
		w->st.errors[error]++;
		return false;
	}
	if (w->stack.len == 0) {
		put_frame(&w->frames[w->n++],
			  region_enter(w, sp__arch_pc(regs)),
			  sp__arch_pc(regs));
		w->st.errors[SP_SAMPLE_ERR_STACK_READ]++;
		return false;
	}
	return true;
}

/* Sets up @w for one unwind; -EINVAL for arguments that cannot be. */
static int walk_init(struct walk *w, struct sp_unwinder *u, const void *stack,
		     size_t stack_len, uint64_t stack_addr,
		     const struct sp_mapping *maps, size_t nmaps,
		     struct sp_frame *frames, size_t cap)
{
	if ((!stack && stack_len) || (!maps && nmaps) || !frames || cap == 0 ||
	    stack_len > UINT64_MAX - stack_addr)
		return -EINVAL;
	/* Not the whole struct: the regions are written before use. */
	memset(w, 0, offsetof(struct walk, regions));
	w->u = u;
	w->maps = maps;
	w->nmaps = nmaps;
	w->stack.data = stack;
	w->stack.len = stack_len;
	w->stack.addr = stack_addr;
	w->frames = frames;
	w->cap = cap;
	w->limit = u->max_depth < cap ? u->max_depth : cap;
	return 0;
}

/*
 * After the walk's end @ret (walk_frames; -1 when it could not start): the
 * marker unless the stack ended, the counters, the result. Every marker
 * has its one reason counted: the error, or the depth limit here.
 */
static int walk_end(struct walk *w, int ret, struct sp_unwind_stats *stats)
{
	if (ret == 0)
		w->st.errors[SP_SAMPLE_ERR_DEPTH_LIMIT]++;
	if (ret != SP__STEP_END)
		put_marker(w, w->cap);
	w->st.samples = 1;
	w->st.frames = w->n - (w->st.truncated ? 1 : 0);
	/* Every error ends the stack with a marker: a walk that was neither
	 * truncated nor fell back counted one sample and its frames. */
	if (stats && (w->st.truncated || w->fell_back)) {
		sp__unwind_stats_add(stats, &w->st);
	} else if (stats) {
		stats->samples++;
		stats->frames += w->st.frames;
	}
	return (int)w->n;
}

int sp_unwinder_unwind(struct sp_unwinder *unwinder, const struct sp_regs *regs,
		       const void *stack, size_t stack_len, uint64_t stack_addr,
		       const struct sp_mapping *maps, size_t nmaps,
		       struct sp_frame *frames, size_t cap,
		       struct sp_unwind_stats *stats)
{
	return sp__unwinder_unwind_jit(unwinder, regs, stack, stack_len,
				       stack_addr, maps, nmaps, NULL, 0, NULL,
				       0, 0, frames, cap, stats);
}

int sp__unwinder_unwind_jit(struct sp_unwinder *unwinder,
			    const struct sp_regs *regs, const void *stack,
			    size_t stack_len, uint64_t stack_addr,
			    const struct sp_mapping *maps, size_t nmaps,
			    const struct sp__jit_index *jit, uint64_t time,
			    struct sp__walk_memo *memo, int32_t tid,
			    uint64_t gen, struct sp_frame *frames, size_t cap,
			    struct sp_unwind_stats *stats)
{
	struct walk w;
	int ret = -1;

	if (!unwinder || !regs ||
	    (regs->arch != SP_ARCH_NATIVE && regs->arch != SP__ARCH) ||
	    walk_init(&w, unwinder, stack, stack_len, stack_addr, maps, nmaps,
		      frames, cap))
		return -EINVAL;
	w.jit = jit && jit->n ? jit : NULL;
	w.time = time;
	if (memo)
		memo->tail_ok = false; /* until this walk is kept */
	/* JIT code is looked up by time as well: not memoized. */
	if (memo && gen && !w.jit) {
		w.memo = memo;
		w.prev = sp__memo_find(memo, tid, gen, unwinder->gen);
	}
	if (walk_can_step(&w, regs)) {
		ret = walk_frames(&w, regs);
		if (w.memo)
			memo_end(&w, tid, gen, ret);
	}
	return walk_end(&w, ret, stats);
}
