/* SPDX-License-Identifier: MIT */
/* The cache line size the pipeline pads shared words to. */
#ifndef SP_ENGINE_CACHELINE_H
#define SP_ENGINE_CACHELINE_H

/*
 * Words written by different threads sit at least this far apart, so a
 * write by one never invalidates the line another thread keeps reading
 * (64 bytes on x86-64 and on the aarch64 cores we run on). Padding is by
 * arrays, not _Alignas: the allocator aligns structs to 16 bytes only,
 * and distance is what keeps lines apart.
 */
#define SP__CACHE_LINE 64

#endif /* SP_ENGINE_CACHELINE_H */
