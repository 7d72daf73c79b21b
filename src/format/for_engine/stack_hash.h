/* SPDX-License-Identifier: MIT */
/* format's door for the engine: a sample's stack hash, computed off the writer's thread. */
#ifndef SP_FORMAT_STACK_HASH_H
#define SP_FORMAT_STACK_HASH_H

#include <stddef.h>
#include <stdint.h>

#include <stackpulse/spool.h>
#include <stackpulse/writer.h>

#include "frame_hash.h"

/*
 * The writer looks every sample's stack up in a whole-stack memo by a
 * hash of its frames (writer_sample.c), one multiply per frame. The
 * recorder's threaded pipeline computes that hash where the frames are
 * made, on the unwinder thread, and hands it to the writer with the
 * sample, so the one thread that writes does not walk the frames again:
 *
 *   worker:     sp__stack_hash(frames, n, hash)
 *   sequencer:  sp__writer_sample_hashed(w, ..., frames, n, hash)
 *
 * The output is byte for byte that of sp_writer_sample(): the memo
 * verifies every hit against the stored frames, so the hash only decides
 * where to look (a wrong one costs a miss, never a wrong record).
 */

/*
 * @hash[0]: the stack's hash, @hash[1]: its caller path's (frames[1..n),
 * the stack without its leaf, as that path's own stack would hash), by
 * base/frame_hash.h. Only the absolute address is mixed in: within one
 * process it names the frame (the module and file offset follow from
 * it), and where it does not (a remapped module, a marker's 0) the
 * stacks only share a memo slot, which the comparison then tells apart.
 *
 * sp__stack_hash_resume: the same from @h, the state after frames
 * [@n, ...) (a suffix hashed before, e.g. by the walk memo), mixing in
 * frames [0, @n) only. The leaf goes in after the loop, so the caller
 * path's hash costs no test per frame. @n >= 1. Thread: any.
 * Allocates: no.
 */
static inline void sp__stack_hash_resume(const struct sp_frame *f, size_t n,
					 uint64_t h, uint64_t hash[2])
{
	size_t i;

	for (i = n - 1; i > 0; i--)
		h = sp__frame_hash_mix(h, f[i].abs_ip);
	hash[1] = sp__frame_hash_fin(h);
	hash[0] = sp__frame_hash_fin(sp__frame_hash_mix(h, f[0].abs_ip));
}

static inline void sp__stack_hash(const struct sp_frame *f, size_t n,
				  uint64_t hash[2])
{
	sp__stack_hash_resume(f, n, SP__FRAME_HASH_SEED, hash);
}

/*
 * sp_writer_sample() with the stack's hash already computed
 * (sp__stack_hash of the same @frames and @nframes); same rules, same
 * bytes. Thread: single-owner (the writer's). Allocates: as
 * sp_writer_sample.
 */
int sp__writer_sample_hashed(struct sp_writer *w, uint64_t timestamp_ns,
			     int32_t pid, int32_t tid,
			     const struct sp_frame *frames, size_t nframes,
			     const uint64_t hash[2]);

#endif /* SP_FORMAT_STACK_HASH_H */
