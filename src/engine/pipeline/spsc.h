/* SPDX-License-Identifier: MIT */
/* The single-producer single-consumer queue between a reader and the sequencer. */
#ifndef SP_ENGINE_SPSC_H
#define SP_ENGINE_SPSC_H

#include <stdbool.h>
#include <stdint.h>

#include "merge.h"

/*
 * Items are merge items copied by value. Normal builds use Concurrency
 * Kit's typed ck_ring. ThreadSanitizer cannot see through ck_pr's inline
 * assembly (feasibility §6: false reports even with CK_USE_CC_BUILTINS),
 * so TSan builds use the same ring written with C11 atomics instead: the
 * algorithm is identical (one producer index, one consumer index, the
 * capacity is the power-of-two size minus one).
 */
#if defined(__SANITIZE_THREAD__)
#define SP__SPSC_C11 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define SP__SPSC_C11 1
#endif
#endif

#ifdef SP__SPSC_C11
#include <stdatomic.h>

struct sp__spsc {
	_Atomic uint32_t head; /* next to read (consumer) */
	_Atomic uint32_t tail; /* next to write (producer) */
	uint32_t mask;
	struct sp__merge_item *buf;
};

static inline void sp__spsc_init(struct sp__spsc *q, struct sp__merge_item *buf,
				 uint32_t size)
{
	atomic_init(&q->head, 0);
	atomic_init(&q->tail, 0);
	q->mask = size - 1;
	q->buf = buf;
}

static inline bool sp__spsc_push(struct sp__spsc *q,
				 const struct sp__merge_item *it)
{
	uint32_t t = atomic_load_explicit(&q->tail, memory_order_relaxed);
	uint32_t h = atomic_load_explicit(&q->head, memory_order_acquire);

	if (((t + 1) & q->mask) == h)
		return false;
	q->buf[t] = *it;
	atomic_store_explicit(&q->tail, (t + 1) & q->mask,
			      memory_order_release);
	return true;
}

static inline bool sp__spsc_empty(struct sp__spsc *q)
{
	return atomic_load(&q->head) == atomic_load(&q->tail);
}

static inline bool sp__spsc_pop(struct sp__spsc *q, struct sp__merge_item *it)
{
	uint32_t h = atomic_load_explicit(&q->head, memory_order_relaxed);
	uint32_t t = atomic_load_explicit(&q->tail, memory_order_acquire);

	if (h == t)
		return false;
	*it = q->buf[h];
	atomic_store_explicit(&q->head, (h + 1) & q->mask,
			      memory_order_release);
	return true;
}
#else
#include <ck_ring.h>

CK_RING_PROTOTYPE(sp__mitem, sp__merge_item)

struct sp__spsc {
	struct ck_ring ring;
	struct sp__merge_item *buf;
};

static inline void sp__spsc_init(struct sp__spsc *q, struct sp__merge_item *buf,
				 uint32_t size)
{
	ck_ring_init(&q->ring, size);
	q->buf = buf;
}

static inline bool sp__spsc_push(struct sp__spsc *q,
				 const struct sp__merge_item *it)
{
	/* ck takes a non-const item but only copies from it. */
	struct sp__merge_item copy = *it;

	return ck_ring_enqueue_spsc_sp__mitem(&q->ring, q->buf, &copy);
}

static inline bool sp__spsc_empty(struct sp__spsc *q)
{
	return ck_ring_size(&q->ring) == 0;
}

static inline bool sp__spsc_pop(struct sp__spsc *q, struct sp__merge_item *it)
{
	return ck_ring_dequeue_spsc_sp__mitem(&q->ring, q->buf, it);
}
#endif

#endif /* SP_ENGINE_SPSC_H */
