/* SPDX-License-Identifier: MIT */
/* Unit test: scanning a perf ring without consuming it, then consuming. */

/*
 * Inline mode reads records in place and gives ring space back only up
 * to the oldest record still queued, so scanning must not move
 * data_tail, consuming must never pass what was scanned, and a record
 * that wraps must come out whole (through the scratch buffer).
 */
#include <string.h>
#include <sys/mman.h>

#include <linux/perf_event.h>

#include "check.h"
#include "ring.h"

#define PAGE 4096u
#define DATA 4096u

static uint64_t seen_pos[16];
static size_t nseen;

static int collect(void *ctx, const struct sp__ring *ring, const void *rec,
		   size_t len, uint64_t pos)
{
	const struct perf_event_header *h = rec;
	const unsigned char *body = (const unsigned char *)rec + sizeof(*h);
	size_t i;

	(void)ctx;
	(void)ring;
	if (nseen == 4)
		return 1; /* refuse the fifth: it stays unread */
	CHECK_EQ(h->size, len);
	for (i = 0; i + sizeof(*h) < len; i++) /* the body is its index */
		CHECK_EQ(body[i], (unsigned char)nseen);
	seen_pos[nseen++] = pos;
	return 0;
}

static void put(struct sp__ring *r, size_t size, unsigned char fill)
{
	struct perf_event_mmap_page *m = r->base;
	unsigned char *data = (unsigned char *)r->base + PAGE, rec[1024];
	struct perf_event_header h = { .type = 99, .size = (uint16_t)size };
	uint64_t head = m->data_head;
	size_t i, off;

	memcpy(rec, &h, sizeof(h));
	memset(rec + sizeof(h), fill, size - sizeof(h));
	for (i = 0; i < size; i++) {
		off = (size_t)(head + i) & (DATA - 1);
		data[off] = rec[i];
	}
	__atomic_store_n(&m->data_head, head + size, __ATOMIC_RELEASE);
}

int main(void)
{
	struct sp__ring r = { 0 };
	struct perf_event_mmap_page *m;
	unsigned char scratch[1024];

	r.mmap_len = PAGE + DATA;
	r.data_size = DATA;
	r.owner_fd = -1;
	r.base = mmap(NULL, r.mmap_len, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	CHECK(r.base != MAP_FAILED);
	m = r.base;
	/* Start near the end so the third record wraps. */
	m->data_head = m->data_tail = r.read_pos = DATA - 1000;
	put(&r, 800, 0);
	put(&r, 104, 1);
	put(&r, 400, 2); /* crosses the end of the data area */
	put(&r, 96, 3);
	put(&r, 64, 4);
	CHECK_EQ(sp__ring_scan(&r, scratch, collect, NULL), 4);
	CHECK_EQ(nseen, 4);
	CHECK_EQ(seen_pos[1], DATA - 1000 + 800);
	CHECK_EQ(m->data_tail, DATA - 1000); /* scanning consumes nothing */
	CHECK(sp__ring_has_unread(&r));	     /* the refused fifth */
	sp__ring_consume(&r, seen_pos[2]);   /* records 2 and 3 still queued */
	CHECK_EQ(m->data_tail, seen_pos[2]);
	sp__ring_consume(&r, UINT64_MAX); /* never past what was read */
	CHECK_EQ(m->data_tail, r.read_pos);
	CHECK_EQ(r.read_pos, seen_pos[3] + 96);
	sp__ring_consume(&r, seen_pos[0]); /* never backwards */
	CHECK_EQ(m->data_tail, r.read_pos);
	munmap(r.base, r.mmap_len);
	return T_EXIT_PASS;
}
