/* SPDX-License-Identifier: MIT */
/* One mmap'd perf ring per CPU: reading records out of it. */
#ifndef SP_ENGINE_RING_H
#define SP_ENGINE_RING_H

#include <stddef.h>
#include <stdint.h>

/** struct sp__ring is a perf data ring mapped read-write (no overwrite). */
struct sp__ring {
	void *base; /* metadata page, then data */
	size_t mmap_len;
	size_t data_size; /* power of two */
	int cpu;
	int owner_fd; /* the event the ring was mapped from (kept open) */
	uint64_t seq; /* records queued from it (merge tie-break keys) */
	/*
	 * sp__ring_scan()'s cursor: records before it were handed out, those
	 * from data_tail up to it may still be in use (not consumed).
	 */
	uint64_t read_pos;
	uint64_t hold; /* scratch: oldest position still queued */
};

/* Largest record a ring can hold: header.size is a u16. */
#define SP__RING_RECORD_MAX 65536u

/*
 * Maps @data_bytes of ring data (a power of two of pages) from @fd, plus
 * the metadata page. Returns 0 or -errno.
 */
int sp__ring_map(struct sp__ring *ring, int fd, int cpu, size_t data_bytes);
void sp__ring_unmap(struct sp__ring *ring);

/*
 * Reads without consuming: records from @ring->read_pos up to the head go
 * to @fn, in ring order, with their position, and read_pos moves past each
 * one @fn accepts (non-zero stops the scan at that record). @scratch holds
 * SP__RING_RECORD_MAX bytes. A header with an impossible size skips to the
 * head (the ring cannot be resynchronised) and returns SP_ECORRUPT. A
 * record in the ring stays valid (and in place) until sp__ring_consume()
 * passes it; one that wraps is handed in @scratch, valid only during the
 * call. Returns the number of records or a negative code.
 */
typedef int (*sp__ring_scan_fn)(void *ctx, const struct sp__ring *ring,
				const void *rec, size_t len, uint64_t pos);
long sp__ring_scan(struct sp__ring *ring, void *scratch, sp__ring_scan_fn fn,
		   void *ctx);

/* Gives the kernel back everything before @upto (<= read_pos). */
void sp__ring_consume(struct sp__ring *ring, uint64_t upto);

/* Whether records past read_pos are waiting. */
int sp__ring_has_unread(const struct sp__ring *ring);

#endif /* SP_ENGINE_RING_H */
