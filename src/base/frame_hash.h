/* SPDX-License-Identifier: MIT */
/* The hash of a frame chain, outermost frame first, one multiply per frame. */
#ifndef SP_BASE_FRAME_HASH_H
#define SP_BASE_FRAME_HASH_H

#include <stdint.h>

/*
 * A stack's hash starts at its outermost frame and mixes in one frame's
 * absolute address at a time, leaf last, so the state after frames
 * [i, n) depends on that suffix alone. Two layers share it: the writer
 * keys its whole-stack memo by it (format/for_engine/stack_hash.h), and
 * the unwinder's walk memo keeps the state at every frame of a thread's
 * last walk, so a walk that reuses that walk's outer frames hashes only
 * its new inner ones (unwind/walk_memo.c).
 */
#define SP__FRAME_HASH_SEED 0x9e3779b97f4a7c15ull

static inline uint64_t sp__frame_hash_mix(uint64_t h, uint64_t abs_ip)
{
	h = (h ^ abs_ip) * 0xc4ceb9fe1a85ec53ull;
	return h ^ (h >> 29);
}

/* A state made a key. */
static inline uint64_t sp__frame_hash_fin(uint64_t h)
{
	return h ^ (h >> 32);
}

#endif /* SP_BASE_FRAME_HASH_H */
