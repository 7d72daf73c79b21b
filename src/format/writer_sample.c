/* SPDX-License-Identifier: MIT */
/* Sample records: frame, stack-node and thread interning (SPULSE3 §7). */

/*
 * A sample with frames [f0 (leaf) ... fn (root)] is written as
 *
 *   F S F S ... (root to leaf, each only if new)  [T if new]  sample
 *
 *   tag 2   U frame_id U kind U address   kind 2m pinned to module m
 *                                         (address = file-relative ip),
 *                                         1 user / 3 kernel unpinned
 *                                         (address = absolute ip),
 *                                         5 marker (address 0)
 *   tag 3   U node_id U parent (0xFFFFFFFF for a root) U frame_id
 *   tag 4   U thread_index S pid U tid
 *   tag 5   S delta_ns U thread_index U leaf_node_id
 *
 * Hot path: profilers see the same stacks over and over, and once every
 * frame, node and the thread of a stack are known, writing it emits only
 * the 5-byte-ish sample record. A direct-mapped whole-stack memo (hash of
 * the raw frame array -> leaf node id, verified by comparing the stored
 * frames) skips the per-frame walk in that case, so the hot path is one
 * hash, one memcmp and no allocation. The memo also holds the caller
 * path of each stack walked in full (the frames without the leaf), so a
 * new leaf under known callers costs one frame and one node lookup. The output is unchanged because a
 * fully known stack defines nothing. Entries containing unpinned frames
 * carry the unpinned-cache generation and die with it; entries of pinned
 * frames and markers stay valid forever (their caches are never cleared).
 *
 * Slow path, all or nothing: validate every frame, check the id limits
 * (exactly, with a dry run only when the limit is near), reserve table and
 * chunk space for the worst case, then walk and encode, which can no
 * longer fail.
 */
#include <errno.h>
#include <string.h>

#include <stackpulse/error.h>

#include "for_engine/stack_hash.h"
#include "writer_internal.h"

#define MEMO_SLOTS 1024	   /* power of two */
#define MEMO_MAX_DEPTH 512 /* deeper stacks are not memoized */

struct sp__memo_entry {
	uint64_t hash;
	uint64_t gen; /* unpinned generation, 0 = only pinned frames/markers */
	struct sp_frame *frames;
	uint32_t nframes; /* 0 = empty slot */
	uint32_t cap;
	uint32_t leaf;
};

/*
 * The last stack of a thread slot (by tid) that was interned frame by
 * frame, with the node of each of its frames: a stack whose caller path
 * the memo does not know shares most outer frames with it, and their
 * nodes need no lookup. Node ids are global (the trie does not depend on
 * the thread), so any equal frames are as good; @gen as in the memo.
 */
struct sp__memo_last {
	uint64_t gen;
	struct sp_frame *frames;
	uint32_t *nodes; /* nodes[i]: the node of frames[i] */
	uint32_t n;	 /* 0 = none */
	uint32_t cap;
};

struct sp__memo {
	struct sp__memo_entry slot[MEMO_SLOTS];
	struct sp__memo_last last[SP__WRITER_TIDS];
};

/* ---- frames ---- */

static bool frame_is_unpinned(const struct sp_frame *f)
{
	return f->mode != SP_FRAME_TRUNCATED && f->module_id == SP_NO_MODULE;
}

/* Builds the §7 rule 3 intern key of a validated frame. */
static void frame_key(const struct sp_frame *f, uint64_t key[3])
{
	if (frame_is_unpinned(f)) {
		key[0] = f->mode;
		key[1] = f->abs_ip;
		key[2] = 0;
		return;
	}
	key[0] = f->module_id | (uint64_t)f->mode << 32;
	key[1] = f->file_relative_ip;
	key[2] = f->abs_ip;
}

static struct sp__map *frame_map(struct sp_writer *w, const struct sp_frame *f)
{
	return frame_is_unpinned(f) ? &w->unpinned : &w->pinned;
}

/* §5.2 reader checks, so the writer never produces a file it rejects. */
static int frame_check(const struct sp_writer *w, const struct sp_frame *f)
{
	const struct sp__wmodule *m;
	uint64_t rel = f->file_relative_ip;

	if (f->mode == SP_FRAME_TRUNCATED) {
		if (f->abs_ip || rel || f->module_id != SP_NO_MODULE)
			return -EINVAL;
		return 0;
	}
	if (f->mode != SP_FRAME_USER && f->mode != SP_FRAME_KERNEL)
		return -EINVAL;
	if (f->module_id == SP_NO_MODULE)
		return 0;
	if (f->module_id >= w->modules.len)
		return -EINVAL;
	m = sp__vec_at(&w->modules, f->module_id);
	if (rel < m->file_offset || m->end < m->start ||
	    rel - m->file_offset >= m->end - m->start)
		return -EINVAL;
	/*
	 * Readers derive the absolute address from the module (§5.2), so an
	 * inconsistent one would be silently replaced on read-back.
	 */
	if (f->abs_ip != m->start + (rel - m->file_offset))
		return -EINVAL;
	return 0;
}

static int frames_check(const struct sp_writer *w,
			const struct sp_frame *frames, size_t n,
			size_t *nunpinned)
{
	size_t i;
	int err;

	*nunpinned = 0;
	for (i = 0; i < n; i++) {
		err = frame_check(w, &frames[i]);
		if (err)
			return err;
		*nunpinned += frame_is_unpinned(&frames[i]);
	}
	return 0;
}

static bool frame_lookup(struct sp_writer *w, const struct sp_frame *f,
			 uint32_t *id)
{
	uint64_t key[3];

	frame_key(f, key);
	return sp__map_get(frame_map(w, f), key, sp__map_hash(key), id);
}

static void frame_encode(struct sp_writer *w, const struct sp_frame *f,
			 uint32_t id)
{
	sp__writer_byte(w, 2);
	sp__writer_u(w, id);
	if (f->mode == SP_FRAME_TRUNCATED) {
		sp__writer_u(w, 5); /* §7 rule 8: kind 5, address 0 */
		sp__writer_u(w, 0);
	} else if (f->module_id != SP_NO_MODULE) {
		sp__writer_u(w, (uint64_t)f->module_id * 2);
		sp__writer_u(w, f->file_relative_ip);
	} else {
		sp__writer_u(w, f->mode == SP_FRAME_KERNEL ? 3 : 1);
		sp__writer_u(w, f->abs_ip);
	}
}

/* Interns @f, emitting its record if new. Table space is reserved. */
static uint32_t frame_intern(struct sp_writer *w, const struct sp_frame *f)
{
	struct sp__map *map = frame_map(w, f);
	uint64_t key[3], hash;
	uint32_t id;

	frame_key(f, key);
	hash = sp__map_hash(key);
	if (sp__map_get(map, key, hash, &id))
		return id;
	id = w->frame_count++;
	frame_encode(w, f, id);
	(void)sp__map_put(map, &w->mem, key, hash, id);
	return id;
}

/* ---- stack nodes and threads ---- */

static bool node_lookup(const struct sp_writer *w, uint32_t parent,
			uint32_t frame, uint32_t *id)
{
	uint64_t key[3] = { parent, frame, 0 };

	return sp__map_get(&w->nodes, key, sp__map_hash(key), id);
}

static uint32_t node_intern(struct sp_writer *w, uint32_t parent,
			    uint32_t frame)
{
	uint64_t key[3] = { parent, frame, 0 };
	uint64_t hash = sp__map_hash(key);
	uint32_t id;

	if (sp__map_get(&w->nodes, key, hash, &id))
		return id;
	id = w->node_count++;
	sp__writer_byte(w, 3);
	sp__writer_u(w, id);
	sp__writer_u(w, parent);
	sp__writer_u(w, frame);
	(void)sp__map_put(&w->nodes, &w->mem, key, hash, id);
	return id;
}

/*
 * Walks root (last) to leaf (first) below node @parent (SP_NO_PARENT: a
 * whole stack); returns the leaf node id, and in *@caller the node of
 * frames[1] (@parent when n == 1); @nodes (or NULL) gets every frame's.
 */
static uint32_t stack_intern(struct sp_writer *w, uint32_t parent,
			     const struct sp_frame *frames, size_t n,
			     uint32_t *caller, uint32_t *nodes)
{
	*caller = parent;
	while (n-- > 0) {
		if (n == 0)
			*caller = parent;
		parent = node_intern(w, parent, frame_intern(w, &frames[n]));
		if (nodes)
			nodes[n] = parent;
	}
	return parent;
}

static bool thread_known(struct sp_writer *w, int32_t pid, int32_t tid,
			 uint32_t *index)
{
	struct sp__wthread *c = &w->tids[(uint32_t)tid & (SP__WRITER_TIDS - 1)];
	uint64_t key[3] = { (uint32_t)pid, (uint32_t)tid, 0 };

	if (c->index != UINT32_MAX && c->pid == pid && c->tid == tid) {
		*index = c->index;
		return true;
	}
	if (!sp__map_get(&w->threads, key, sp__map_hash(key), index))
		return false;
	c->pid = pid;
	c->tid = tid;
	c->index = *index;
	return true;
}

static uint32_t thread_intern(struct sp_writer *w, int32_t pid, int32_t tid)
{
	uint64_t key[3] = { (uint32_t)pid, (uint32_t)tid, 0 };
	uint32_t index;

	if (thread_known(w, pid, tid, &index))
		return index;
	index = w->thread_count++;
	sp__writer_byte(w, 4);
	sp__writer_u(w, index);
	sp__writer_s(w, pid);
	sp__writer_u(w, (uint32_t)tid);
	(void)sp__map_put(&w->threads, &w->mem, key, sp__map_hash(key), index);
	w->tids[(uint32_t)tid & (SP__WRITER_TIDS - 1)] =
		(struct sp__wthread){ pid, tid, index };
	return index;
}

/* ---- id limits (§7 rule 7) ---- */

/*
 * Dry run of stack_intern(): counts the stack nodes the sample would
 * define. Once one node is new, every node below it is new too. Frames
 * need no count of their own: each new frame id is followed by a new node
 * (no node can name it yet), so frame_count <= node_count always holds and
 * a sample's new frames never outnumber its new nodes; the node limit is
 * reached first.
 */
static uint64_t count_new_nodes(struct sp_writer *w, uint32_t parent,
				const struct sp_frame *frames, size_t n)
{
	uint32_t frame;
	size_t i = n;

	while (i-- > 0) {
		if (!frame_lookup(w, &frames[i], &frame) ||
		    !node_lookup(w, parent, frame, &parent))
			return i + 1;
	}
	return 0;
}

/* §7 rule 7: exact check, with a dry run only when the limit is near. */
static int ids_check(struct sp_writer *w, uint32_t parent,
		     const struct sp_frame *frames, size_t n, int32_t pid,
		     int32_t tid)
{
	uint64_t limit = w->id_limit, new_nodes = n, new_threads = 1;
	uint32_t index;

	if (w->node_count + new_nodes <= limit &&
	    w->thread_count + new_threads <= limit)
		return 0;
	new_nodes = count_new_nodes(w, parent, frames, n);
	new_threads = !thread_known(w, pid, tid, &index);
	if (w->node_count + new_nodes > limit ||
	    w->thread_count + new_threads > limit)
		return SP_EIDSPACE;
	return 0;
}

/* ---- whole-stack memo ---- */

/*
 * The memo's key is sp__stack_hash() (for_engine/stack_hash.h): a hash
 * of the frame array, root to leaf, and of its caller path frames[1..n)
 * (the stack without its leaf): both are looked up, so a new leaf under
 * a known path interns one frame and one node instead of the whole depth
 * (deep stacks, e.g. Python's, repeat their callers with ever new leaf
 * pcs). Lengths are compared by memo_find. The recorder's threaded
 * pipeline computes it on an unwinder thread (sp__writer_sample_hashed).
 */
static bool memo_find(const struct sp_writer *w, const struct sp_frame *frames,
		      size_t n, uint64_t hash, uint32_t *leaf)
{
	const struct sp__memo_entry *e;

	if (!w->memo)
		return false;
	e = &w->memo->slot[hash & (MEMO_SLOTS - 1)];
	if (e->hash != hash || e->nframes != n ||
	    (e->gen != 0 && e->gen != w->unpinned_gen) ||
	    memcmp(e->frames, frames, n * sizeof(*frames)) != 0)
		return false;
	*leaf = e->leaf;
	return true;
}

/* Remembers a written stack. Best effort: failing to allocate only skips it. */
static void memo_store(struct sp_writer *w, const struct sp_frame *frames,
		       size_t n, uint64_t hash, uint32_t leaf, bool unpinned)
{
	struct sp__memo_entry *e;
	struct sp_frame *copy;
	size_t cap = (n + 15) & ~(size_t)15;

	if (n > MEMO_MAX_DEPTH)
		return;
	if (!w->memo)
		w->memo = sp__mem_calloc(&w->mem, 1, sizeof(*w->memo));
	if (!w->memo)
		return;
	e = &w->memo->slot[hash & (MEMO_SLOTS - 1)];
	if (e->cap < n) {
		copy = sp__mem_alloc(&w->mem, cap * sizeof(*copy));
		e->nframes = 0;
		if (!copy)
			return;
		sp__mem_free(&w->mem, e->frames, e->cap * sizeof(*copy));
		e->frames = copy;
		e->cap = (uint32_t)cap;
	}
	memcpy(e->frames, frames, n * sizeof(*frames));
	e->hash = hash;
	e->gen = unpinned ? w->unpinned_gen : 0;
	e->nframes = (uint32_t)n;
	e->leaf = leaf;
}

static void last_free(struct sp_writer *w, struct sp__memo_last *l)
{
	sp__mem_free(&w->mem, l->frames, l->cap * sizeof(*l->frames));
	sp__mem_free(&w->mem, l->nodes, l->cap * sizeof(*l->nodes));
	memset(l, 0, sizeof(*l));
}

/*
 * How many outer frames of @frames (at most @n - 1: the leaf is always
 * interned) equal those of thread slot @tid's last stack; then *@base is
 * the node of the innermost of them.
 */
static size_t last_shared(const struct sp_writer *w, int32_t tid,
			  const struct sp_frame *frames, size_t n,
			  uint32_t *base)
{
	const struct sp__memo_last *l;
	size_t c = 0, max;

	if (!w->memo)
		return 0;
	l = &w->memo->last[(uint32_t)tid & (SP__WRITER_TIDS - 1)];
	if (!l->n || (l->gen != 0 && l->gen != w->unpinned_gen))
		return 0;
	max = l->n < n - 1 ? l->n : n - 1;
	/* Compared as memo_find does: the whole frame, byte for byte. */
	while (c < max && memcmp(&frames[n - 1 - c], &l->frames[l->n - 1 - c],
				 sizeof(*frames)) == 0)
		c++;
	if (c)
		*base = l->nodes[l->n - c];
	return c;
}

/*
 * The slot's new last stack: @frames, whose nodes [0, @todo) are in
 * @fresh and the rest are the old last stack's outer ones. Best effort:
 * failing to allocate forgets the slot.
 */
static void last_store(struct sp_writer *w, int32_t tid,
		       const struct sp_frame *frames, size_t n, size_t todo,
		       const uint32_t *fresh, bool unpinned)
{
	struct sp__memo_last *l;
	size_t shared = n - todo, cap = (n + 15) & ~(size_t)15;

	if (!w->memo || n > MEMO_MAX_DEPTH)
		return;
	l = &w->memo->last[(uint32_t)tid & (SP__WRITER_TIDS - 1)];
	if (l->cap < n) {
		struct sp_frame *f = sp__mem_alloc(&w->mem, cap * sizeof(*f));
		uint32_t *nodes = sp__mem_alloc(&w->mem, cap * sizeof(*nodes));

		if (!f || !nodes) {
			sp__mem_free(&w->mem, f, cap * sizeof(*f));
			sp__mem_free(&w->mem, nodes, cap * sizeof(*nodes));
			last_free(w, l);
			return;
		}
		if (shared)
			memcpy(nodes + todo, l->nodes + (l->n - shared),
			       shared * sizeof(*nodes));
		last_free(w, l);
		l->frames = f;
		l->nodes = nodes;
		l->cap = (uint32_t)cap;
	} else {
		memmove(l->nodes + todo, l->nodes + (l->n - shared),
			shared * sizeof(*l->nodes));
	}
	memcpy(l->nodes, fresh, todo * sizeof(*fresh));
	memcpy(l->frames, frames, n * sizeof(*frames));
	l->n = (uint32_t)n;
	l->gen = unpinned ? w->unpinned_gen : 0;
}

void sp__writer_memo_free(struct sp_writer *w)
{
	size_t i;

	if (!w->memo)
		return;
	for (i = 0; i < MEMO_SLOTS; i++)
		sp__mem_free(&w->mem, w->memo->slot[i].frames,
			     w->memo->slot[i].cap * sizeof(struct sp_frame));
	for (i = 0; i < SP__WRITER_TIDS; i++)
		last_free(w, &w->memo->last[i]);
	sp__mem_free(&w->mem, w->memo, sizeof(*w->memo));
	w->memo = NULL;
}

/* ---- samples ---- */

/* §5.5/§7 rule 6: the exact delta must fit int64. */
static bool delta_of(uint64_t last, uint64_t ts, int64_t *delta)
{
	uint64_t d;

	if (ts >= last) {
		d = ts - last;
		*delta = (int64_t)d;
		return d <= INT64_MAX;
	}
	d = last - ts;
	if (d > (uint64_t)INT64_MAX + 1)
		return false;
	*delta = -(int64_t)(d - 1) - 1;
	return true;
}

static void sample_encode(struct sp_writer *w, int64_t delta, uint32_t thread,
			  uint32_t leaf)
{
	sp__writer_byte(w, 5);
	sp__writer_s(w, delta);
	sp__writer_u(w, thread);
	sp__writer_u(w, leaf);
}

/* Reserves everything a sample with @n new frames and nodes could need. */
static int sample_reserve(struct sp_writer *w, size_t n, size_t nunpinned)
{
	const size_t per_frame = SP_REC_FRAME_MAX + SP_REC_NODE_MAX;
	int err = 0;

	if (n > (SIZE_MAX - SP_REC_THREAD_MAX - SP_REC_SAMPLE_MAX) / per_frame)
		return -ENOMEM;
	if (n > nunpinned)
		err = sp__map_reserve(&w->pinned, &w->mem, n - nunpinned);
	if (!err && nunpinned)
		err = sp__map_reserve(&w->unpinned, &w->mem, nunpinned);
	if (!err)
		err = sp__map_reserve(&w->nodes, &w->mem, n);
	if (!err)
		err = sp__map_reserve(&w->threads, &w->mem, 1);
	if (err)
		return err;
	return sp__writer_reserve(w, n * per_frame + SP_REC_THREAD_MAX +
					     SP_REC_SAMPLE_MAX);
}

static size_t count_unpinned(const struct sp_frame *frames, size_t n)
{
	size_t i, k = 0;

	for (i = 0; i < n; i++)
		k += frame_is_unpinned(&frames[i]);
	return k;
}

/*
 * Writes what the memo did not know: below the caller path's node when
 * the memo knows that path (only the leaf is new, and only the leaf needs
 * checking: the path was checked when it was written), else the whole
 * stack, remembering its caller path as well.
 */
static int sample_slow(struct sp_writer *w, uint64_t ts, int64_t delta,
		       int32_t pid, int32_t tid, const struct sp_frame *frames,
		       size_t n, const uint64_t hash[2])
{
	uint32_t leaf, thread, base = SP_NO_PARENT, caller;
	uint32_t fresh[MEMO_MAX_DEPTH];
	size_t nunpinned, todo = n, shared = 0;
	bool path;
	int err;

	path = n > 1 && memo_find(w, frames + 1, n - 1, hash[1], &base);
	if (path)
		todo = 1;
	else if (n > 1)
		shared = last_shared(w, tid, frames, n, &base);
	todo -= shared;
	/* Shared frames were checked when the last stack was written. */
	err = frames_check(w, frames, todo, &nunpinned);
	if (!err)
		err = ids_check(w, base, frames, todo, pid, tid);
	if (!err)
		err = sample_reserve(w, todo, nunpinned);
	if (err)
		return err;
	leaf = stack_intern(w, base, frames, todo, &caller,
			    !path && n <= MEMO_MAX_DEPTH ? fresh : NULL);
	thread = thread_intern(w, pid, tid);
	sample_encode(w, delta, thread, leaf);
	w->last_ns = ts;
	nunpinned = count_unpinned(frames, n);
	if (!path && n > 1)
		memo_store(w, frames + 1, n - 1, hash[1], caller,
			   nunpinned > (size_t)frame_is_unpinned(&frames[0]));
	memo_store(w, frames, n, hash[0], leaf, nunpinned > 0);
	if (!path)
		last_store(w, tid, frames, n, todo, fresh, nunpinned > 0);
	return 0;
}

int sp__writer_sample_hashed(struct sp_writer *w, uint64_t timestamp_ns,
			     int32_t pid, int32_t tid,
			     const struct sp_frame *frames, size_t nframes,
			     const uint64_t hash[2])
{
	uint32_t leaf, thread;
	int64_t delta;
	int err;

	if (!w || pid < 1 || tid < 1 || (!frames && nframes))
		return -EINVAL;
	if (w->finished)
		return -EPIPE;
	if (nframes == 0)
		return 0;
	if (!delta_of(w->last_ns, timestamp_ns, &delta))
		return SP_EDELTA;
	if (!memo_find(w, frames, nframes, hash[0], &leaf) ||
	    !thread_known(w, pid, tid, &thread))
		return sample_slow(w, timestamp_ns, delta, pid, tid, frames,
				   nframes, hash);
	err = sp__writer_reserve(w, SP_REC_SAMPLE_MAX);
	if (err)
		return err;
	sample_encode(w, delta, thread, leaf);
	w->last_ns = timestamp_ns;
	return 0;
}

SP_API int sp_writer_sample(struct sp_writer *w, uint64_t timestamp_ns,
			    int32_t pid, int32_t tid,
			    const struct sp_frame *frames, size_t nframes)
{
	uint64_t hash[2] = { 0, 0 };

	if (frames && nframes)
		sp__stack_hash(frames, nframes, hash);
	return sp__writer_sample_hashed(w, timestamp_ns, pid, tid, frames,
					nframes, hash);
}

/* ---- stacks defined ahead of their samples (off-CPU synthesis) ---- */

SP_API int sp_writer_stack(struct sp_writer *w, uint32_t parent,
			   const struct sp_frame *frames, size_t nframes,
			   uint32_t *leaf)
{
	uint32_t caller;
	size_t nunpinned;
	int err;

	if (!w || !leaf || (!frames && nframes) ||
	    (parent != SP_NO_PARENT && parent >= w->node_count) ||
	    (parent == SP_NO_PARENT && nframes == 0))
		return -EINVAL;
	if (w->finished)
		return -EPIPE;
	err = frames_check(w, frames, nframes, &nunpinned);
	if (!err && w->node_count + (uint64_t)nframes > w->id_limit &&
	    w->node_count + count_new_nodes(w, parent, frames, nframes) >
		    w->id_limit)
		err = SP_EIDSPACE;
	if (!err)
		err = sample_reserve(w, nframes, nunpinned);
	if (err)
		return err;
	*leaf = stack_intern(w, parent, frames, nframes, &caller, NULL);
	return 0;
}

SP_API int sp_writer_sample_node(struct sp_writer *w, uint64_t timestamp_ns,
				 int32_t pid, int32_t tid, uint32_t leaf)
{
	uint32_t thread;
	int64_t delta;
	int err;

	if (!w || pid < 1 || tid < 1 || leaf >= w->node_count)
		return -EINVAL;
	if (w->finished)
		return -EPIPE;
	if (!delta_of(w->last_ns, timestamp_ns, &delta))
		return SP_EDELTA;
	if (!thread_known(w, pid, tid, &thread)) {
		if (w->thread_count + 1ull > w->id_limit)
			return SP_EIDSPACE;
		err = sp__map_reserve(&w->threads, &w->mem, 1);
		if (!err)
			err = sp__writer_reserve(w, SP_REC_THREAD_MAX +
							    SP_REC_SAMPLE_MAX);
		if (err)
			return err;
		thread = thread_intern(w, pid, tid);
	} else {
		err = sp__writer_reserve(w, SP_REC_SAMPLE_MAX);
		if (err)
			return err;
	}
	sample_encode(w, delta, thread, leaf);
	w->last_ns = timestamp_ns;
	return 0;
}
