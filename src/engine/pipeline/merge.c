/* SPDX-License-Identifier: MIT */
/* Ordering records from all rings by timestamp before they touch state. */

/*
 * Records are copied into one byte vector (or referenced in place) and
 * described by small items, kept in one sorted run per source. A release
 * builds a loser tree over the runs that have a record old enough, hands
 * out the tree's winner and replays its leaf (log2 of the runs merged
 * comparisons per record), then moves what is left of each run, and the
 * bytes of what is left, to the front, so the memory is reused from poll
 * to poll instead of allocated per record.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/perf_event.h>

#include "merge.h"
#include "qsample.h"

/*
 * Runs beyond this share one (ring index modulo it, a power of two): out
 * of order then, which insertion and sorting absorb. A machine's rings
 * stay below it.
 */
#define RUNS_MAX 4096u
/* Out-of-order records moved at most this far back in their run. */
#define INSERT_MAX 32u

void sp__merge_init(struct sp__merge *m, const struct sp__mem *mem)
{
	memset(m, 0, sizeof(*m));
	m->mem = mem;
	sp__vec_init(&m->runs, sizeof(struct sp__merge_run));
	sp__vec_init(&m->bytes, 1);
	sp__vec_init(&m->spare, 1);
	sp__vec_init(&m->tree, sizeof(struct sp__merge_node));
	sp__vec_init(&m->leaves, sizeof(struct sp__merge_run *));
	sp__vec_init(&m->none.items, sizeof(struct sp__merge_item));
}

static struct sp__merge_run *run_at(const struct sp__merge *m, size_t i)
{
	return sp__vec_at(&m->runs, i);
}

static struct sp__merge_item *run_item(const struct sp__merge_run *run,
				       size_t i)
{
	return sp__vec_at(&run->items, i);
}

void sp__merge_fini(struct sp__merge *m)
{
	size_t i;

	for (i = 0; i < m->runs.len; i++)
		sp__vec_fini(&run_at(m, i)->items, m->mem);
	sp__vec_fini(&m->runs, m->mem);
	sp__vec_fini(&m->bytes, m->mem);
	sp__vec_fini(&m->spare, m->mem);
	sp__vec_fini(&m->tree, m->mem);
	sp__vec_fini(&m->leaves, m->mem);
	sp__vec_fini(&m->none.items, m->mem);
}

size_t sp__merge_count(const struct sp__merge *m)
{
	return m->count;
}

bool sp__merge_has_pid(const struct sp__merge *m, int32_t pid)
{
	size_t r, i;

	for (r = 0; r < m->runs.len; r++) {
		const struct sp__merge_run *run = run_at(m, r);

		for (i = 0; i < run->items.len; i++)
			if (run_item(run, i)->pid == pid)
				return true;
	}
	return false;
}

uint64_t sp__merge_min_pos(const struct sp__merge *m, size_t ring)
{
	size_t r = ring & (RUNS_MAX - 1), i;
	uint64_t min = SP__NO_HOLD;
	const struct sp__merge_run *run;

	if (r >= m->runs.len)
		return min;
	run = run_at(m, r);
	for (i = run->head; i < run->items.len; i++) {
		const struct sp__merge_item *it = run_item(run, i);

		if (it->pos < min && (size_t)(it->key >> 40) == ring)
			min = it->pos;
	}
	return min;
}

static bool item_less(const struct sp__merge_item *x,
		      const struct sp__merge_item *y)
{
	return x->time != y->time ? x->time < y->time : x->key < y->key;
}

static int item_cmp(const void *a, const void *b)
{
	const struct sp__merge_item *x = a, *y = b;

	return item_less(x, y) ? -1 : item_less(y, x);
}

/* Run @r, created (empty, with every run before it) when new. */
static struct sp__merge_run *run_of(struct sp__merge *m, size_t r)
{
	while (m->runs.len <= r) {
		struct sp__merge_run run = { .head = 0 };

		sp__vec_init(&run.items, sizeof(struct sp__merge_item));
		if (sp__vec_push(&m->runs, m->mem, &run))
			return NULL;
	}
	return run_at(m, r);
}

/*
 * Puts @it into run @r, in order: a record older than the run's last
 * goes back into place, or, further back than INSERT_MAX, marks the run
 * for a sort at the next release (hostile timestamps stay n log n).
 */
static __attribute__((noinline)) int
run_insert(struct sp__merge *m, const struct sp__merge_item *it, size_t r)
{
	struct sp__merge_run *run = r < m->runs.len ? run_at(m, r) :
						      run_of(m, r);
	struct sp__merge_item *items;
	size_t at, n;

	if (!run || (run->items.len == run->items.cap &&
		     sp__vec_reserve(&run->items, m->mem, 1)))
		return -ENOMEM;
	items = run->items.data;
	n = run->items.len;
	at = n;
	if (n > run->head && item_less(it, &items[n - 1])) {
		/* Older than the last of its run: back into place. */
		if (!run->unsorted)
			while (at > run->head && n - at < INSERT_MAX &&
			       item_less(it, &items[at - 1]))
				at--;
		if (at > run->head && item_less(it, &items[at - 1]))
			run->unsorted = true, at = n; /* sorted later */
		memmove(&items[at + 1], &items[at], (n - at) * sizeof(*items));
	}
	items[at] = *it;
	run->items.len++;
	m->count++;
	return 0;
}

/* Appends @it to run @r: what almost every record takes, then the rest. */
static inline int run_add(struct sp__merge *m, const struct sp__merge_item *it,
			  size_t r)
{
	struct sp__merge_run *run;
	struct sp__merge_item *items;
	size_t n;

	if (r >= m->runs.len)
		return run_insert(m, it, r);
	run = run_at(m, r);
	items = run->items.data;
	n = run->items.len;
	if (n == run->items.cap ||
	    (n > run->head && item_less(it, &items[n - 1])))
		return run_insert(m, it, r);
	items[n] = *it;
	run->items.len = n + 1;
	m->count++;
	return 0;
}

int sp__merge_push(struct sp__merge *m, const struct sp__merge_item *item,
		   const struct sp__span *spans, size_t n)
{
	struct sp__merge_item it = *item;
	size_t i, total = 0, start = m->bytes.len;
	int err;

	it.off = m->bytes.len;
	it.ref = NULL;
	it.owner = NULL;
	for (i = 0; i < n; i++)
		total += spans[i].len;
	if (sp__vec_reserve(&m->bytes, m->mem, (total + 7) & ~(size_t)7))
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (spans[i].len)
			memcpy((char *)m->bytes.data + m->bytes.len,
			       spans[i].data, spans[i].len);
		m->bytes.len += spans[i].len;
	}
	it.len = total;
	m->bytes.len = (m->bytes.len + 7) & ~(size_t)7;
	err = run_add(m, &it, (size_t)(it.key >> 40) & (RUNS_MAX - 1));
	if (err)
		m->bytes.len = start;
	return err;
}

int sp__merge_push_ref(struct sp__merge *m, const struct sp__merge_item *it,
		       size_t run)
{
	return run_add(m, it, run & (RUNS_MAX - 1));
}

/*
 * Bytes a referenced record takes once copied: a sample left in the ring
 * brings its callchain and stack. Either may be there alone (a kernel
 * thread's sample has a callchain and no user stack), and neither may
 * be left behind: the ring is given back once the copy is made.
 */
static size_t copy_len(const struct sp__merge_item *it)
{
	const struct sp__qsample *q = it->ref;

	if (it->type != PERF_RECORD_SAMPLE || it->len != sizeof(*q) ||
	    (!q->ext_stack && !q->ext_ips))
		return it->len;
	return sizeof(*q) + q->nr_ips * 8 + q->stack_len;
}

/* Copies @it's bytes to @dst; a sample's ring parts come along. */
static void copy_out(const struct sp__merge_item *it, unsigned char *dst,
		     size_t len)
{
	struct sp__qsample q;

	if (len == it->len) {
		memcpy(dst, it->ref, len);
		return;
	}
	memcpy(&q, it->ref, sizeof(q));
	/* An empty part may have no pointer (NULL): memcpy must not see it. */
	if (q.nr_ips)
		memcpy(dst + sizeof(q), q.ext_ips, q.nr_ips * 8);
	if (q.stack_len)
		memcpy(dst + sizeof(q) + q.nr_ips * 8, q.ext_stack,
		       q.stack_len);
	q.ext_ips = NULL;
	q.ext_stack = NULL;
	memcpy(dst, &q, sizeof(q));
}

/*
 * The room is reserved once for all: grown record by record, the byte
 * vector would move what it holds at every doubling, onto pages touched
 * for the first time (a page fault each: on this VM the faults of the
 * copy itself are most of what a copy-out costs).
 */
long sp__merge_copy_refs(struct sp__merge *m,
			 void (*done)(void *owner, const void *ref))
{
	struct sp__merge_item *it;
	long n = 0;
	size_t r, i, len, need = 0;

	for (r = 0; r < m->runs.len; r++) {
		const struct sp__merge_run *run = run_at(m, r);

		for (i = run->head; i < run->items.len; i++) {
			it = run_item(run, i);
			if (it->ref)
				need += (copy_len(it) + 7) & ~(size_t)7;
		}
	}
	if (!need)
		return 0;
	if (sp__vec_reserve(&m->bytes, m->mem, need))
		return -ENOMEM;
	for (r = 0; r < m->runs.len; r++) {
		struct sp__merge_run *run = run_at(m, r);

		for (i = run->head; i < run->items.len; i++) {
			it = run_item(run, i);
			if (!it->ref)
				continue;
			len = copy_len(it);
			copy_out(it,
				 (unsigned char *)m->bytes.data + m->bytes.len,
				 len);
			it->off = m->bytes.len;
			it->len = len;
			m->bytes.len += (len + 7) & ~(size_t)7;
			done(it->owner, it->ref);
			it->ref = NULL;
			it->owner = NULL;
			n++;
		}
	}
	return n;
}

/*
 * Moves what is left of each run to its front, then the bytes of what is
 * left to the front of the byte vector (when the spare vector cannot
 * grow, the bytes stay where they are, still valid: -ENOMEM).
 */
static int compact(struct sp__merge *m)
{
	size_t r, i, need = 0;
	struct sp__vec tmp;

	for (r = 0; r < m->runs.len; r++) {
		struct sp__merge_run *run = run_at(m, r);
		size_t left = run->items.len - run->head;

		if (!run->head)
			continue;
		memmove(run->items.data, run_item(run, run->head),
			left * sizeof(struct sp__merge_item));
		run->items.len = left;
		m->count -= run->head;
		run->head = 0;
	}
	if (!m->bytes.len)
		return 0;
	for (r = 0; r < m->runs.len; r++) {
		const struct sp__merge_run *run = run_at(m, r);

		for (i = 0; i < run->items.len; i++) {
			const struct sp__merge_item *it = run_item(run, i);

			need += it->ref ? 0 : (it->len + 7) & ~(size_t)7;
		}
	}
	m->spare.len = 0;
	if (sp__vec_reserve(&m->spare, m->mem, need))
		return -ENOMEM;
	for (r = 0; r < m->runs.len; r++) {
		const struct sp__merge_run *run = run_at(m, r);

		for (i = 0; i < run->items.len; i++) {
			struct sp__merge_item *it = run_item(run, i);

			if (it->ref)
				continue;
			memcpy((char *)m->spare.data + m->spare.len,
			       (char *)m->bytes.data + it->off, it->len);
			it->off = m->spare.len;
			m->spare.len += (it->len + 7) & ~(size_t)7;
		}
	}
	tmp = m->bytes;
	m->bytes = m->spare;
	m->spare = tmp;
	return 0;
}

/* ---- the loser tree ---- */

/*
 * Keys name their ring and its read order, so no two records share
 * (time, key); an exhausted leaf is (UINT64_MAX, UINT64_MAX), which no
 * record's key reaches, and loses to every record.
 */
static inline bool node_less(const struct sp__merge_node *x,
			     const struct sp__merge_node *y)
{
	return x->time != y->time ? x->time < y->time : x->key < y->key;
}

/* @run's head as a node for leaf @leaf; exhausted past @watermark. */
static inline struct sp__merge_node leaf_node(const struct sp__merge_run *run,
					      uint32_t leaf, uint64_t watermark)
{
	struct sp__merge_node nd = { UINT64_MAX, UINT64_MAX, SP__MERGE_NONE };
	const struct sp__merge_item *it;

	if (run->head == run->items.len)
		return nd;
	it = run_item(run, run->head);
	if (it->time > watermark)
		return nd;
	nd.time = it->time;
	nd.key = it->key;
	nd.leaf = leaf;
	return nd;
}

/* The run of leaf @leaf (a padding leaf: the empty run m->none). */
static inline struct sp__merge_run *leaf_run(const struct sp__merge *m,
					     uint32_t leaf)
{
	return ((struct sp__merge_run *const *)m->leaves.data)[leaf];
}

/*
 * Builds the tree over @k leaves (a power of two): node 0 is the winner,
 * node j in [1, k) the loser of match j, whose players are the winners
 * of matches 2j and 2j + 1 (leaf i is match k + i). The winners of the
 * build live in nodes [k, 3k) for the time of it.
 */
static void tree_build(struct sp__merge *m, size_t k, uint64_t watermark)
{
	struct sp__merge_node *lose = m->tree.data, *win = lose + k;
	size_t j;

	for (j = 0; j < k; j++)
		win[k + j] = leaf_node(leaf_run(m, (uint32_t)j), (uint32_t)j,
				       watermark);
	for (j = k - 1; j >= 1; j--) {
		bool left = node_less(&win[2 * j], &win[2 * j + 1]);

		win[j] = win[2 * j + !left];
		lose[j] = win[2 * j + left];
	}
	lose[0] = win[1];
}

/*
 * Lists the runs with a record old enough as leaves (sorting a run
 * appended out of order first), padded with the empty run to a power of
 * two leaves, which it returns (0: nothing to release), the tree sized
 * for it.
 */
static size_t tree_leaves(struct sp__merge *m, uint64_t watermark, int *err)
{
	struct sp__merge_run *none = &m->none;
	size_t r, k = 1;

	m->leaves.len = 0;
	*err = 0;
	for (r = 0; r < m->runs.len; r++) {
		struct sp__merge_run *run = run_at(m, r);

		if (run->head == run->items.len)
			continue;
		if (run->unsorted) {
			qsort(run_item(run, run->head),
			      run->items.len - run->head,
			      sizeof(struct sp__merge_item), item_cmp);
			run->unsorted = false;
		}
		if (run_item(run, run->head)->time > watermark)
			continue;
		if (sp__vec_push(&m->leaves, m->mem, &run))
			goto nomem;
	}
	if (!m->leaves.len)
		return 0;
	while (k < m->leaves.len)
		k *= 2;
	while (m->leaves.len < k)
		if (sp__vec_push(&m->leaves, m->mem, &none))
			goto nomem;
	m->tree.len = 0;
	if (sp__vec_reserve(&m->tree, m->mem, 3 * k))
		goto nomem;
	return k;
nomem:
	*err = -ENOMEM;
	return 0;
}

int sp__merge_release(struct sp__merge *m, uint64_t watermark, sp__merge_fn fn,
		      void *ctx)
{
	struct sp__merge_node *lose = m->tree.data, v, tmp;
	int err = 0, cerr;
	size_t k = tree_leaves(m, watermark, &err), j;

	if (k) {
		tree_build(m, k, watermark);
		lose = m->tree.data;
	}
	while (k && lose[0].leaf != SP__MERGE_NONE) {
		uint32_t leaf = lose[0].leaf;
		struct sp__merge_run *run = leaf_run(m, leaf);
		const struct sp__merge_item *it = run_item(run, run->head);

		err = fn(ctx, it,
			 it->ref ? it->ref : (char *)m->bytes.data + it->off);
		if (err)
			break; /* the failed record stays queued */
		/* The run's next record plays its way up from the leaf. */
		run->head++;
		v = leaf_node(run, leaf, watermark);
		for (j = (k + leaf) / 2; j >= 1; j /= 2)
			if (node_less(&lose[j], &v)) {
				tmp = lose[j];
				lose[j] = v;
				v = tmp;
			}
		lose[0] = v;
	}
	cerr = compact(m);
	return err ? err : cerr;
}
