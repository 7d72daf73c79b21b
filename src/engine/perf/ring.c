/* SPDX-License-Identifier: MIT */
/* One mmap'd perf ring per CPU: reading records out of it. */

/*
 * The kernel publishes data_head with a release store; we read it with
 * acquire, so record bytes below it are visible, and publish data_tail
 * with release once we are done with the bytes, which lets the kernel
 * reuse them. Records are 8-byte aligned so a header never straddles the
 * end of the ring, but a body may: such a record is copied out in two
 * pieces. Everything else is parsed in place.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include <stackpulse/error.h>

#include "ring.h"

int sp__ring_map(struct sp__ring *ring, int fd, int cpu, size_t data_bytes)
{
	long page = sysconf(_SC_PAGESIZE);
	size_t len = (size_t)page + data_bytes;
	void *p;

	if (data_bytes == 0 || (data_bytes & (data_bytes - 1)) ||
	    data_bytes % (size_t)page)
		return -EINVAL;
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		return -errno;
	ring->base = p;
	ring->mmap_len = len;
	ring->data_size = data_bytes;
	ring->cpu = cpu;
	ring->owner_fd = fd;
	return 0;
}

void sp__ring_unmap(struct sp__ring *ring)
{
	if (ring->base)
		munmap(ring->base, ring->mmap_len);
	ring->base = NULL;
}

static struct perf_event_mmap_page *meta(const struct sp__ring *ring)
{
	return ring->base;
}

static const unsigned char *data(const struct sp__ring *ring)
{
	return (const unsigned char *)ring->base +
	       (ring->mmap_len - ring->data_size);
}

/* The record at @tail, in place or copied to @scratch when it wraps. */
static const void *record_at(const struct sp__ring *ring, uint64_t tail,
			     size_t size, void *scratch)
{
	size_t mask = ring->data_size - 1;
	size_t off = (size_t)tail & mask;
	size_t first;

	if (off + size <= ring->data_size)
		return data(ring) + off;
	first = ring->data_size - off;
	memcpy(scratch, data(ring) + off, first);
	memcpy((unsigned char *)scratch + first, data(ring), size - first);
	return scratch;
}

long sp__ring_scan(struct sp__ring *ring, void *scratch, sp__ring_scan_fn fn,
		   void *ctx)
{
	struct perf_event_mmap_page *m = meta(ring);
	uint64_t head = __atomic_load_n(&m->data_head, __ATOMIC_ACQUIRE);
	uint64_t pos = ring->read_pos;
	long n = 0;

	while (pos < head) {
		struct perf_event_header h;
		size_t off = (size_t)pos & (ring->data_size - 1);

		memcpy(&h, data(ring) + off, sizeof(h));
		if (h.size < sizeof(h) || h.size > head - pos ||
		    h.size > ring->data_size || (h.size & 7)) {
			ring->read_pos = head; /* cannot resynchronise */
			return SP_ECORRUPT;
		}
		if (fn(ctx, ring, record_at(ring, pos, h.size, scratch), h.size,
		       pos))
			break;
		pos += h.size;
		n++;
	}
	ring->read_pos = pos;
	return n;
}

void sp__ring_consume(struct sp__ring *ring, uint64_t upto)
{
	struct perf_event_mmap_page *m = meta(ring);

	if (upto > ring->read_pos)
		upto = ring->read_pos;
	if (upto > m->data_tail)
		__atomic_store_n(&m->data_tail, upto, __ATOMIC_RELEASE);
}

int sp__ring_has_unread(const struct sp__ring *ring)
{
	return __atomic_load_n(&meta(ring)->data_head, __ATOMIC_ACQUIRE) !=
	       ring->read_pos;
}
