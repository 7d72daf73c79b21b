/* SPDX-License-Identifier: MIT */
/* Internal state of the SPULSE3 writer (writer.c, writer_sample.c). */
#ifndef SP_FORMAT_WRITER_INTERNAL_H
#define SP_FORMAT_WRITER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include <stackpulse/writer.h>

#include "map.h"
#include "mem.h"
#include "varint.h"
#include "vec.h"

/*
 * writer.c owns the lifecycle, the chunk buffer and the non-sample
 * records; writer_sample.c owns sample interning (SPULSE3 §7 rules 3-7).
 *
 * Chunk buffer: records are encoded straight into buf[0..len). Before a
 * call encodes anything it reserves an upper bound of the bytes all of its
 * records can take (sp__writer_reserve); if that would push the chunk past
 * chunk_size, the chunk goes to the sink first. So a chunk always ends on
 * a record boundary, and a call that fails has encoded nothing. A sink
 * failure leaves the chunk in place and sets @stalled: the next call
 * re-offers exactly that chunk before appending (the sink retry contract
 * in sink_internal.h).
 *
 * Intern tables (all sp__map, key = three u64 words):
 *
 *   pinned    {module | mode << 32, file_relative_ip, abs_ip} -> frame id
 *             (markers too: {SP_NO_MODULE | 2 << 32, 0, 0}); never cleared
 *   unpinned  {mode, abs_ip, 0} -> frame id; cleared by tags 1, 7 and 8
 *   nodes     {parent or 0xFFFFFFFF, frame id, 0} -> stack-node id
 *   threads   {pid, tid, 0} -> thread index
 *
 * Every clear of the unpinned table bumps @unpinned_gen, which also
 * invalidates the whole-stack memo entries that contain unpinned frames
 * (writer_sample.c).
 */

/* Largest encodings of the fixed-shape records (tag byte included). */
#define SP_REC_FRAME_MAX (1 + 5 + 10 + 10)
#define SP_REC_NODE_MAX (1 + 5 + 5 + 5)
#define SP_REC_THREAD_MAX (1 + 5 + 5 + 5)
#define SP_REC_SAMPLE_MAX (1 + 10 + 5 + 5)

/* What the writer keeps of a module: enough for the §5.2 pinned checks. */
struct sp__wmodule {
	uint64_t start;
	uint64_t end;
	uint64_t file_offset;
};

struct sp__memo;

/* One thread cache entry: (@pid, @tid) has @index (UINT32_MAX: none). */
struct sp__wthread {
	int32_t pid;
	int32_t tid;
	uint32_t index;
};

#define SP__WRITER_TIDS 16 /* a power of two */

struct sp_writer {
	/* Hot: every sample touches these. */
	unsigned char *buf;
	size_t len;
	size_t chunk_size;
	bool stalled; /* the sink refused buf; re-offer it first */
	bool finished;
	uint64_t last_ns; /* §5.5 baseline */
	uint64_t unpinned_gen;
	struct sp__memo *memo; /* whole-stack memo, allocated on first use */
	/*
	 * Thread cache, direct-mapped by tid: a sample of any of the last
	 * few threads seen finds its index without the thread map.
	 */
	struct sp__wthread tids[SP__WRITER_TIDS];

	/* Id counters (dense, SPULSE3 §4) and their limit. */
	uint32_t id_limit;
	uint32_t frame_count;
	uint32_t node_count;
	uint32_t thread_count;

	struct sp__map pinned;
	struct sp__map unpinned;
	struct sp__map nodes;
	struct sp__map threads;
	struct sp__vec modules; /* struct sp__wmodule, index = module id */

	size_t cap;	  /* allocated size of buf (>= chunk_size) */
	uint64_t drained; /* bytes accepted by the sink */
	struct sp_sink *sink;
	struct sp__mem mem;
};

/* Out-of-line part of sp__writer_reserve: drain and/or grow the buffer. */
int sp__writer_make_room(struct sp_writer *w, size_t need);

/*
 * Makes room for @need more bytes in the chunk buffer, handing the
 * current chunk to the sink first if it would overflow. Returns 0, -ENOMEM
 * or the sink's error (nothing is encoded in either failure case).
 */
static inline int sp__writer_reserve(struct sp_writer *w, size_t need)
{
	if (!w->stalled && need <= w->chunk_size &&
	    w->len <= w->chunk_size - need)
		return 0;
	return sp__writer_make_room(w, need);
}

/* Appends a U varint / an S (zigzag) varint / a raw byte to reserved space. */
static inline void sp__writer_u(struct sp_writer *w, uint64_t v)
{
	w->len += sp__varint_put(w->buf + w->len, v);
}

static inline void sp__writer_s(struct sp_writer *w, int64_t v)
{
	w->len += sp__varint_put(w->buf + w->len, sp__zigzag(v));
}

static inline void sp__writer_byte(struct sp_writer *w, uint8_t b)
{
	w->buf[w->len++] = b;
}

/* Releases the memo (writer_sample.c). */
void sp__writer_memo_free(struct sp_writer *w);

#endif /* SP_FORMAT_WRITER_INTERNAL_H */
