/* SPDX-License-Identifier: MIT */
/* Pipeline fixtures: raw perf records of a real run, replayable without perf. */
#ifndef SP_ENGINE_FIXTURE_H
#define SP_ENGINE_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "mem.h"
#include "process.h"
#include "vec.h"

/*
 * A fixture file lets the pipeline be measured and compared without the
 * kernel: it holds the recorder's configuration, the processes and modules
 * it tracked when capture began (what attach read from /proc), and every
 * record read from every ring afterwards, in ring order. It is our own
 * little format, little-endian, every entry 8-byte aligned:
 *
 *   header  "SPFIX1\0\n", u32 version (1), u32 nrings, u64 sample_type,
 *           u32 stack_size, u32 reserved (0)
 *   entry   u32 kind, u32 payload bytes, payload, zero padding to 8
 *     PROC   (1): i32 pid, u32 0, u64 starttime
 *     MODULE (2): i32 pid, u32 path bytes, u64 start, end, offset, inode,
 *                 inode_generation, u32 dev_major, u32 dev_minor, path
 *     RECORD (3): u32 ring, u32 late, the perf record (header.size bytes)
 *
 * A record's @late (0 in captures) is how many ns after its own timestamp
 * it became visible in its ring (a sample whose stack copy outlasted a
 * drain): replay feeds it that much later, so it can reach the recorder
 * after newer records of other rings were released.
 *
 * Files are input like any other: the parser checks every length and
 * rejects what does not add up with SP_ECORRUPT.
 */
#define SP__FIX_PROC 1u
#define SP__FIX_MODULE 2u
#define SP__FIX_RECORD 3u
#define SP__FIX_HEADER 32u

struct sp__fixture_hdr {
	uint32_t nrings;
	uint64_t sample_type;
	uint32_t stack_size;
};

/** struct sp__fix_entry is one parsed entry (pointers into the file). */
struct sp__fix_entry {
	uint32_t kind;
	int32_t pid;		 /* PROC, MODULE */
	uint64_t starttime;	 /* PROC */
	struct sp__map_desc map; /* MODULE (path not NUL-terminated) */
	uint32_t ring;		 /* RECORD */
	uint32_t late;		 /* RECORD: ns after its timestamp */
	const void *record;	 /* RECORD */
	size_t record_len;	 /* RECORD */
};

/* Writing: appends to @out (a byte vector). Return 0 or -ENOMEM. */
int sp__fixture_put_header(struct sp__vec *out, const struct sp__mem *mem,
			   const struct sp__fixture_hdr *h);
int sp__fixture_put_proc(struct sp__vec *out, const struct sp__mem *mem,
			 int32_t pid, uint64_t starttime);
int sp__fixture_put_module(struct sp__vec *out, const struct sp__mem *mem,
			   int32_t pid, const struct sp__map_desc *m);
int sp__fixture_put_record(struct sp__vec *out, const struct sp__mem *mem,
			   uint32_t ring, const void *rec, size_t len);
/* A record that became visible @late ns after its timestamp. */
int sp__fixture_put_record_late(struct sp__vec *out, const struct sp__mem *mem,
				uint32_t ring, uint32_t late, const void *rec,
				size_t len);

/* Reading: checks the header; *@off is set to the first entry. */
int sp__fixture_header(const void *data, size_t size, struct sp__fixture_hdr *h,
		       size_t *off);
/*
 * Parses the entry at *@off and advances it. Returns 1 for an entry, 0 at
 * the end, SP_ECORRUPT for a malformed one (unknown kind, lengths that do
 * not fit, a record whose perf header disagrees with its entry, a ring
 * index >= @nrings).
 */
int sp__fixture_next(const void *data, size_t size, uint32_t nrings,
		     size_t *off, struct sp__fix_entry *e);

#endif /* SP_ENGINE_FIXTURE_H */
