/* SPDX-License-Identifier: MIT */
/* Reading a jitdump file that may still be growing, record by record. */
#ifndef SP_JIT_JITDUMP_READ_H
#define SP_JIT_JITDUMP_READ_H

#include <stdint.h>

#include "jitdump.h"
#include "mem.h"

/*
 * A reader follows one jitdump file: each poll reads what was appended
 * since the last one and hands every complete record to a callback, in
 * file order. A record the writer has not finished yet stays buffered
 * for the next poll, so a live file and a finished one read the same.
 * Memory is bounded by the largest record (SP__JITDUMP_RECORD_MAX) plus a
 * read chunk; the bytes read over the reader's life by @max_bytes.
 *
 * The file is named by spool data or by a pid in a world-writable
 * directory, so it is opened defensively: no symlink, regular files only
 * (O_NONBLOCK, so a FIFO cannot block the open), owned by root, by the
 * owner of /proc/<pid>, or (that process gone) by us.
 *
 * Errors stick: a corrupt record or a file that shrank (rewritten by a
 * new process with the same pid) ends the reader; the records before
 * stay delivered.
 */

struct sp__jitdump_stats {
	uint64_t bytes;	  /* bytes of complete records and the header */
	uint64_t records; /* complete records, every kind */
	uint64_t loads;
	uint64_t moves;
	uint64_t debug;
	uint64_t unwind;
	uint64_t closes;
	uint64_t unknown; /* records of ids this reader does not know */
	uint64_t partial; /* bytes of a record not complete at the last poll */
	int err;	  /* 0, or why the reader stopped (sticky) */
};

struct sp__jitdump_reader;

/* Called once per complete record; a negative return ends the poll. */
typedef int (*sp__jitdump_cb)(void *ctx, const struct sp__jitdump_header *h,
			      const struct sp__jitdump_record *rec);

/*
 * Opens @path for reading with the checks above (@pid: the process the
 * file describes, for the owner check; 0 skips it). @max_bytes bounds
 * what the reader reads over its life (0: SP__JITDUMP_FILE_MAX).
 * Returns 0, -errno of the open, -EPERM (not a regular file, a symlink,
 * a foreign owner) or -ENOMEM.
 */
int sp__jitdump_reader_open(const struct sp__mem *mem, const char *path,
			    int32_t pid, uint64_t max_bytes,
			    struct sp__jitdump_reader **out);
void sp__jitdump_reader_free(struct sp__jitdump_reader *r);

/*
 * Reads up to @budget new bytes (0: no limit but @max_bytes) and calls
 * @cb for each complete record. Returns the number of records delivered
 * (>= 0), the reader's sticky error (SP_ECORRUPT, SP_ESHRANK,
 * -EOPNOTSUPP: a header this parser does not know, -EFBIG: @max_bytes
 * reached), -errno of a read, or the callback's error.
 */
int sp__jitdump_reader_poll(struct sp__jitdump_reader *r, uint64_t budget,
			    sp__jitdump_cb cb, void *ctx);

/* The header, once a poll read it (NULL before). */
const struct sp__jitdump_header *
sp__jitdump_reader_header(const struct sp__jitdump_reader *r);
const struct sp__jitdump_stats *
sp__jitdump_reader_stats(const struct sp__jitdump_reader *r);

/* Default lifetime read bound: 4 GiB (node writes ~2 MB/s of code). */
#define SP__JITDUMP_FILE_MAX (4ull << 30)

/*
 * Parses a whole dump held in memory, calling @cb per record; for the
 * fuzz target and tests. Returns like sp__jitdump_reader_poll; a final
 * partial record is counted in @st->partial, not an error.
 */
int sp__jitdump_parse_buffer(const void *buf, size_t len, sp__jitdump_cb cb,
			     void *ctx, struct sp__jitdump_stats *st);

#endif /* SP_JIT_JITDUMP_READ_H */
