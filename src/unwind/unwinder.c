/* SPDX-License-Identifier: MIT */
/* The public unwinder: table cache, mapping resolution, the frame walk. */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <stackpulse/error.h>

#include "atomic.h"
#include "hash.h"
#include "logging.h"
#include "map.h"
#include "unwind_internal.h"
#include "vec.h"

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
 * A frame then costs: a check that the pc is still in the previous
 * frame's mapping (else a binary search of the caller's mapping array and
 * one slot probe, keyed by the mapping's start so that no hashing is
 * needed), a row lookup and the step. The slow path (first sight of
 * a mapping) takes the unwinder mutex to find or insert entries, opens the
 * image through the image cache and builds its table under the table
 * slot's own mutex, so one long build (40 ms for libc) does not block
 * unwinds through images that are already known. Entries are freed only
 * with the unwinder, so a pointer read from a slot stays valid.
 */

#define SLOT_COUNT 1024 /* front_slot() takes 10 bits */
#define PC_CACHE_BITS 12
#define CALL_CACHE 4

struct table_slot {
	struct sp__image *img;
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
	const struct sp_logger *logger;
	uint32_t max_depth;
	uint64_t page_size;
	pthread_mutex_t lock; /* guards everything below but slots */
	struct sp__image_cache *images;
	struct sp__image *vdso;
	struct sp__vec tables;	     /* struct table_slot * */
	struct sp__map table_map;    /* image pointer -> tables index */
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
	const unsigned char *bytes = (const unsigned char *)opts;
	size_t i;

	memset(o, 0, sizeof(*o));
	if (!opts)
		return 0;
	if (opts->size < sizeof(opts->size))
		return -EINVAL;
	for (i = sizeof(*o); i < opts->size; i++)
		if (bytes[i])
			return -EINVAL;
	memcpy(o, opts, opts->size < sizeof(*o) ? opts->size : sizeof(*o));
	if (o->max_depth > 1024 || o->flags)
		return -EINVAL;
	return 0;
}

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
	u->logger = o.logger;
	u->max_depth = o.max_depth ? o.max_depth : 1024;
	page = sysconf(_SC_PAGESIZE);
	u->page_size = page > 0 ? (uint64_t)page : 4096;
	sp__vec_init(&u->tables, sizeof(struct table_slot *));
	sp__vec_init(&u->resolved, sizeof(struct resolved *));
	sp__map_init(&u->table_map);
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
	sp__image_unref(ts->img);
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

struct walk {
	struct sp_unwinder *u;
	const struct sp_mapping *maps;
	size_t nmaps;
	struct sp__stack stack;
	struct sp_frame *frames;
	size_t n; /* frames stored */
	struct sp_unwind_stats st;
	/* Per-call cache: frames mostly stay within a few mappings, and
	 * consecutive frames mostly in the same one. */
	const struct sp_mapping *last_map, *last_rmap;
	const struct resolved *last_r;
	const struct sp_mapping *seen_map[CALL_CACHE];
	const struct resolved *seen[CALL_CACHE];
	unsigned next_seen;
};

static const struct sp_mapping *find_mapping(struct walk *w, uint64_t pc)
{
	const struct sp_mapping *m = w->last_map;
	size_t lo = 0, hi = w->nmaps;

	/* Unsigned: one comparison checks both ends. */
	if (m && pc - m->start < m->end - m->start)
		return m;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (w->maps[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || pc >= w->maps[lo - 1].end)
		return NULL;
	w->last_map = &w->maps[lo - 1];
	return w->last_map;
}

static const struct resolved *lookup_resolved(struct walk *w,
					      const struct sp_mapping *m)
{
	const struct resolved *r;
	unsigned i;

	if (m == w->last_rmap)
		return w->last_r;
	for (i = 0; i < CALL_CACHE; i++)
		if (w->seen_map[i] == m)
			break;
	if (i < CALL_CACHE) {
		r = w->seen[i];
	} else {
		r = resolve(w->u, m);
		i = w->next_seen++ % CALL_CACHE;
		w->seen_map[i] = m;
		w->seen[i] = r;
	}
	w->last_rmap = m;
	w->last_r = r;
	return r;
}

/*
 * The rule set of @svma in @r's table through the unwinder's pc cache.
 * Profiles revisit the same call sites in sample after sample, and a hit
 * replaces the page index, the row scan and their dependent loads (and
 * mispredicted scan exits) by one load. Each entry is one 64-bit word,
 *
 *   | table id: 16 | table offset: 32 | rule set index: 16 |
 *
 * read and written with relaxed atomics by any number of threads: a word
 * is either a complete old entry or a complete new one, and it is used
 * only when its key matches, so races cost a miss, never a wrong rule.
 * Table ids start at 1, so the zeroed cache matches nothing, and tables
 * live as long as the unwinder. Rule sets past index 65535 go uncached.
 */
static const struct sp__cfi_rules *
cached_rules(struct sp_unwinder *u, const struct resolved *r, uint64_t svma)
{
	const struct sp__cfi_table *t = r->table;
	uint64_t off = svma - t->base, key, e, *slot;
	uint32_t idx;

	if (svma < t->base || off >= t->span)
		return NULL;
	key = (uint64_t)r->table_id << 32 | off; /* span < 2^32 */
	slot = &u->pc_cache[(key * 0x9e3779b97f4a7c15ull) >>
			    (64 - PC_CACHE_BITS)];
	e = sp__load_relaxed_u64(slot);
	if (e >> 16 == key && r->table_id) {
		idx = (uint32_t)(e & 0xffff);
	} else {
		idx = sp__cfi_table_rules_at(t, off);
		if (r->table_id && idx <= UINT16_MAX)
			sp__store_relaxed_u64(slot, key << 16 | idx);
	}
	return idx == SP__RULES_NONE ? NULL : &t->rules[idx];
}

static void put_frame(struct walk *w, const struct sp_mapping *m, uint64_t pc)
{
	struct sp_frame *f = &w->frames[w->n++];

	f->abs_ip = pc;
	f->file_relative_ip = pc;
	f->module_id = SP_NO_MODULE;
	f->mode = SP_FRAME_USER;
	/* Checked: pc - start + file_offset must not wrap. */
	if (m && pc - m->start <= UINT64_MAX - m->file_offset) {
		f->file_relative_ip = pc - m->start + m->file_offset;
		f->module_id = m->module_id;
	}
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
 * One step from @cur. @key is the pc to look up (the leaf pc, an
 * interrupted pc after a signal frame, else return address - 1).
 */
/* step() updated @cur in place: @next is unused. */
#define STEP_IN_PLACE 2

/*
 * One step from @cur at @key, the frame's pc (the leaf pc, an interrupted
 * pc after a signal frame, else return address - 1), in mapping @m.
 * Returns 0 (caller in @next), STEP_IN_PLACE (caller in @cur: the simple
 * rule set that nearly every frame has), SP__STEP_END or -1.
 */
static int step(struct walk *w, const struct sp_mapping *m, uint64_t key,
		struct sp_regs *cur, struct sp_regs *next, bool *signal)
{
	const struct sp__cfi_rules *row = NULL;
	const struct resolved *r = NULL;
	struct sp__step_fail fail, fp_fail;
	enum sp_unwind_fallback reason = SP_FALLBACK_NO_MODULE;
	int ret;

	*signal = false;
	if (m) {
		r = lookup_resolved(w, m);
		reason = SP_FALLBACK_NO_MODULE_UNWIND_DATA;
	}
	if (r && r->table && r->table->nrows) {
		reason = SP_FALLBACK_DWARF_CFI_INDEX_LOOKUP;
		if (key >= r->bias)
			row = cached_rules(w->u, r, key - r->bias);
	}
	if (row) {
		if (sp__arch_step_simple(row, &w->stack, cur) == 0)
			return STEP_IN_PLACE;
		ret = sp__arch_step_cfi(r->table, row, &w->stack, cur, next,
					&fail);
		if (ret >= 0) {
			*signal = (row->flags & SP__ROW_SIGNAL) != 0;
			return ret;
		}
		/* The copy ends before the saved slots: frame pointers would
		 * only find older bytes and invent a caller. */
		if (fail.error == SP_SAMPLE_ERR_STACK_TRUNCATED) {
			w->st.errors[fail.error]++;
			return -1;
		}
		reason = fail.fallback;
	}
	ret = sp__arch_step_fp(&w->stack, cur, next, &fp_fail);
	if (ret >= 0) {
		/* Counted when it found a caller, not at the chain's end. */
		w->st.fallbacks[reason] += ret == 0;
		return ret;
	}
	/* Report why CFI failed when it was tried, else why FP failed. */
	w->st.errors[row ? fail.error : fp_fail.error]++;
	return -1;
}

/*
 * Stack bytes are read upwards, one frame at a time, and each read needs
 * the one before it (the CFA comes from the previous frame's registers).
 * When the copy is not in cache every frame would wait for memory in
 * turn; asking for the lines a frame or two above @sp (frames average a
 * few hundred bytes) overlaps those waits. Prefetches never fault, so
 * addresses past the copy are harmless.
 */
static void prefetch_stack(const struct sp__stack *s, uint64_t sp)
{
	uintptr_t p = (uintptr_t)s->data + (uintptr_t)(sp - s->addr);

	__builtin_prefetch((const void *)(p + 256));
	__builtin_prefetch((const void *)(p + 448));
}

static void walk_stack(struct walk *w, const struct sp_regs *regs, size_t limit,
		       size_t cap)
{
	struct sp_regs buf[2], *cur = &buf[0], *next = &buf[1], *t;
	const struct sp_mapping *m;
	enum sp_sample_error error;
	uint64_t pc = sp__arch_pc(regs);
	bool signal;
	int ret;

	if (sp__arch_check_regs(regs, &error)) {
		w->st.errors[error]++;
		put_marker(w, cap);
		return;
	}
	*cur = *regs;
	prefetch_stack(&w->stack, sp__arch_sp(cur) - 256);
	prefetch_stack(&w->stack, sp__arch_sp(cur));
	/* The reported pc is also the lookup key: exact for the leaf and
	 * for a pc interrupted by a signal, the call site for the rest. */
	for (;;) {
		m = find_mapping(w, pc);
		put_frame(w, m, pc);
		if (w->stack.len == 0) {
			w->st.errors[SP_SAMPLE_ERR_STACK_READ]++;
			break;
		}
		ret = step(w, m, pc, cur, next, &signal);
		if (ret == SP__STEP_END)
			return;
		if (ret < 0 || w->n >= limit)
			break;
		if (ret != STEP_IN_PLACE) {
			t = cur;
			cur = next;
			next = t;
		}
		prefetch_stack(&w->stack, sp__arch_sp(cur));
		pc = sp__arch_pc(cur) - (signal ? 0 : 1);
	}
	put_marker(w, cap);
}

static void add_stats(struct sp_unwind_stats *to,
		      const struct sp_unwind_stats *from)
{
	size_t i;

	to->samples += from->samples;
	to->frames += from->frames;
	to->truncated += from->truncated;
	for (i = 0; i < SP_SAMPLE_ERR_COUNT; i++)
		to->errors[i] += from->errors[i];
	for (i = 0; i < SP_FALLBACK_COUNT; i++)
		to->fallbacks[i] += from->fallbacks[i];
}

int sp_unwinder_unwind(struct sp_unwinder *unwinder, const struct sp_regs *regs,
		       const void *stack, size_t stack_len, uint64_t stack_addr,
		       const struct sp_mapping *maps, size_t nmaps,
		       struct sp_frame *frames, size_t cap,
		       struct sp_unwind_stats *stats)
{
	struct walk w;
	size_t limit;

	if (!unwinder || !regs || (!stack && stack_len) || (!maps && nmaps) ||
	    !frames || cap == 0 || stack_len > UINT64_MAX - stack_addr)
		return -EINVAL;
	memset(&w, 0, sizeof(w));
	w.u = unwinder;
	w.maps = maps;
	w.nmaps = nmaps;
	w.stack.data = stack;
	w.stack.len = stack_len;
	w.stack.addr = stack_addr;
	w.frames = frames;
	limit = unwinder->max_depth < cap ? unwinder->max_depth : cap;
	walk_stack(&w, regs, limit, cap);
	w.st.samples = 1;
	w.st.frames = w.n - (w.st.truncated ? 1 : 0);
	if (stats)
		add_stats(stats, &w.st);
	return (int)w.n;
}
