/* SPDX-License-Identifier: MIT */
/* stackpulse: the per-object allocator hook. */
#ifndef STACKPULSE_ALLOC_H
#define STACKPULSE_ALLOC_H

#include <stackpulse/api.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * struct sp_allocator routes every allocation of one stackpulse object.
 *
 * Options structs take a `const struct sp_allocator *`; NULL means the
 * library default (mimalloc's private heap in libstackpulse.so when built
 * with it, otherwise the C library). There is no process-wide allocator.
 *
 * @alloc returns `size` bytes aligned to `align` (a power of two, at most
 * 64), or NULL when memory is exhausted; the library then fails the call
 * with -ENOMEM and leaves previously written data intact.
 * @free releases a block; `size` is the size that was requested from
 * @alloc, so arenas and accounting allocators need no headers. It is never
 * called with NULL.
 * @ctx is passed back unchanged to both callbacks.
 *
 * The allocator must outlive every object created with it. The callbacks
 * may be called from any thread that calls into that object.
 */
struct sp_allocator {
	void *(*alloc)(void *ctx, size_t size, size_t align);
	void (*free)(void *ctx, void *ptr, size_t size);
	void *ctx;
};

#ifdef __cplusplus
}
#endif

#endif /* STACKPULSE_ALLOC_H */
