/* SPDX-License-Identifier: MIT */
/* The few named atomic helpers all lock-free code goes through (R17). */
#ifndef SP_BASE_ATOMIC_H
#define SP_BASE_ATOMIC_H

#include <stdatomic.h>
#include <stdint.h>

/*
 * Every use names the access it pairs with, for example
 *   sp__load_acquire_u64(&page->data_head)  pairs with the kernel's store
 * Plain C11 atomics only: no volatile, no __sync builtins. The _u64
 * variants take plain uint64_t storage shared with the kernel (perf ring
 * pages) and cast it to an atomic view, which GCC and Clang define for
 * naturally aligned 8-byte objects.
 */
static inline uint64_t sp__load_acquire_u64(const uint64_t *p)
{
	return atomic_load_explicit((const _Atomic uint64_t *)p,
				    memory_order_acquire);
}

static inline void sp__store_release_u64(uint64_t *p, uint64_t v)
{
	atomic_store_explicit((_Atomic uint64_t *)p, v, memory_order_release);
}

static inline uint64_t sp__load_relaxed_u64(const uint64_t *p)
{
	return atomic_load_explicit((const _Atomic uint64_t *)p,
				    memory_order_relaxed);
}

static inline void sp__store_relaxed_u64(uint64_t *p, uint64_t v)
{
	atomic_store_explicit((_Atomic uint64_t *)p, v, memory_order_relaxed);
}

static inline uint64_t sp__fetch_add_u64(uint64_t *p, uint64_t v)
{
	return atomic_fetch_add_explicit((_Atomic uint64_t *)p, v,
					 memory_order_acq_rel);
}

static inline void sp__fence_seq_cst(void)
{
	atomic_thread_fence(memory_order_seq_cst);
}

#endif /* SP_BASE_ATOMIC_H */
