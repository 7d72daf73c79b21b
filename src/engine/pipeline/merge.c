/* SPDX-License-Identifier: MIT */
/* Ordering records from all rings by timestamp before they touch state. */

/*
 * Records are copied into one byte vector (or referenced in place) and
 * described by small items; a release sorts the items by (time, key),
 * hands out the old enough
 * ones, then compacts what is left into a second vector and swaps, so the
 * memory is reused from poll to poll instead of allocated per record.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <linux/perf_event.h>

#include "merge.h"
#include "qsample.h"

void sp__merge_init(struct sp__merge *m, const struct sp__mem *mem)
{
	memset(m, 0, sizeof(*m));
	m->mem = mem;
	sp__vec_init(&m->items, sizeof(struct sp__merge_item));
	sp__vec_init(&m->bytes, 1);
	sp__vec_init(&m->spare, 1);
}

void sp__merge_fini(struct sp__merge *m)
{
	sp__vec_fini(&m->items, m->mem);
	sp__vec_fini(&m->bytes, m->mem);
	sp__vec_fini(&m->spare, m->mem);
}

size_t sp__merge_count(const struct sp__merge *m)
{
	return m->items.len;
}

bool sp__merge_has_pid(const struct sp__merge *m, int32_t pid)
{
	size_t i;

	for (i = 0; i < m->items.len; i++)
		if (((struct sp__merge_item *)sp__vec_at(&m->items, i))->pid ==
		    pid)
			return true;
	return false;
}

int sp__merge_push(struct sp__merge *m, const struct sp__merge_item *item,
		   const struct sp__span *spans, size_t n)
{
	struct sp__merge_item it = *item;
	size_t i, total = 0;

	it.off = m->bytes.len;
	it.ref = NULL;
	it.owner = NULL;
	for (i = 0; i < n; i++)
		total += spans[i].len;
	if (sp__vec_reserve(&m->bytes, m->mem, (total + 7) & ~(size_t)7) ||
	    sp__vec_reserve(&m->items, m->mem, 1))
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		if (spans[i].len)
			memcpy((char *)m->bytes.data + m->bytes.len,
			       spans[i].data, spans[i].len);
		m->bytes.len += spans[i].len;
	}
	it.len = total;
	m->bytes.len = (m->bytes.len + 7) & ~(size_t)7;
	return sp__vec_push(&m->items, m->mem, &it);
}

static int item_cmp(const void *a, const void *b)
{
	const struct sp__merge_item *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

int sp__merge_push_ref(struct sp__merge *m, const struct sp__merge_item *it)
{
	return sp__vec_push(&m->items, m->mem, it);
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

long sp__merge_copy_refs(struct sp__merge *m,
			 void (*done)(void *owner, const void *ref))
{
	struct sp__merge_item *it;
	long n = 0;
	size_t i, len;

	for (i = 0; i < m->items.len; i++) {
		it = sp__vec_at(&m->items, i);
		if (!it->ref)
			continue;
		len = copy_len(it);
		if (sp__vec_reserve(&m->bytes, m->mem, (len + 7) & ~7ul))
			return -ENOMEM;
		copy_out(it, (unsigned char *)m->bytes.data + m->bytes.len,
			 len);
		it->off = m->bytes.len;
		it->len = len;
		m->bytes.len += (len + 7) & ~(size_t)7;
		done(it->owner, it->ref);
		it->ref = NULL;
		it->owner = NULL;
		n++;
	}
	return n;
}

/* Moves items [from, len) and their bytes to the front. */
static int compact(struct sp__merge *m, size_t from)
{
	size_t i, n = m->items.len - from, need = 0;
	struct sp__vec tmp;

	for (i = from; i < m->items.len; i++) {
		const struct sp__merge_item *it = sp__vec_at(&m->items, i);

		need += it->ref ? 0 : (it->len + 7) & ~(size_t)7;
	}
	m->spare.len = 0;
	if (sp__vec_reserve(&m->spare, m->mem, need))
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		struct sp__merge_item *it = sp__vec_at(&m->items, from + i);

		if (!it->ref) {
			memcpy((char *)m->spare.data + m->spare.len,
			       (char *)m->bytes.data + it->off, it->len);
			it->off = m->spare.len;
			m->spare.len += (it->len + 7) & ~(size_t)7;
		}
		memmove(sp__vec_at(&m->items, i), it, sizeof(*it));
	}
	m->items.len = n;
	tmp = m->bytes;
	m->bytes = m->spare;
	m->spare = tmp;
	return 0;
}

int sp__merge_release(struct sp__merge *m, uint64_t watermark, sp__merge_fn fn,
		      void *ctx)
{
	size_t i;
	int err = 0, cerr;

	if (m->items.len > 1)
		qsort(m->items.data, m->items.len,
		      sizeof(struct sp__merge_item), item_cmp);
	for (i = 0; i < m->items.len; i++) {
		const struct sp__merge_item *it = sp__vec_at(&m->items, i);

		if (it->time > watermark)
			break;
		err = fn(ctx, it,
			 it->ref ? it->ref : (char *)m->bytes.data + it->off);
		if (err)
			break;
	}
	cerr = compact(m, i);
	return err ? err : cerr;
}
