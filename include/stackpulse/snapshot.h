/* SPDX-License-Identifier: MIT */
/* stackpulse: Snapshot, the whole-file random-access spool reader. */
#ifndef STACKPULSE_SNAPSHOT_H
#define STACKPULSE_SNAPSHOT_H

#include <stdbool.h>

#include <stackpulse/api.h>
#include <stackpulse/spool.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A Snapshot reads a whole spool (plain or zstd-compressed), validates every
 * record (SPULSE3 §9) and keeps all definitions, samples and Python-runtime
 * records for random access. A file that ends inside its last record opens
 * with the complete prefix and sp_snapshot_is_recovered() returns true.
 * A Snapshot is immutable once open: any number of threads may read it.
 */
struct sp_snapshot;

/**
 * sp_snapshot_open opens and validates the spool at @path (a regular
 * file, read with pread(2) and never mapped: a file cut short while it is
 * read is a recovered cut-off tail, never SIGBUS; a FIFO or device is
 * -EINVAL and never blocks the open).
 * @param opts NULL for defaults.
 * @return 0, SP_ECORRUPT (bad magic, header, or any failed check; details
 *         in opts->diag), SP_EZSTD, -EINVAL, -ENOMEM, -errno from open.
 * Caller owns the result; free it with sp_snapshot_close().
 * Thread: any. Allocates: yes. Blocks: yes (file I/O).
 */
SP_API int sp_snapshot_open(const char *path, const struct sp_reader_opts *opts,
			    struct sp_snapshot **out);

/**
 * sp_snapshot_open_buffer is sp_snapshot_open() on bytes in memory.
 * @param data Must outlive `snapshot` (it is not copied unless compressed).
 * Caller owns the result; free it with sp_snapshot_close().
 * Thread: any. Allocates: yes. Blocks: no.
 */
SP_API int sp_snapshot_open_buffer(const void *data, size_t len,
				   const struct sp_reader_opts *opts,
				   struct sp_snapshot **out);

/**
 * sp_snapshot_close releases the snapshot and its mapping. NULL is a no-op.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API void sp_snapshot_close(struct sp_snapshot *snapshot);

/**
 * sp_snapshot_spool returns the decoded definitions.
 * Borrowed: valid until sp_snapshot_close() is called on the same object.
 * Thread: any. Allocates: no. Blocks: no.
 */
SP_API const struct sp_spool *
sp_snapshot_spool(const struct sp_snapshot *snapshot);

/**
 * sp_snapshot_sample_count returns the number of samples.
 * Thread: any. Allocates: no. Blocks: no.
 */
SP_API size_t sp_snapshot_sample_count(const struct sp_snapshot *snapshot);

/**
 * sp_snapshot_sample copies sample @index (file order) into @out.
 * @return 0, or -EINVAL if @index is out of range.
 * Thread: any. Allocates: no. Blocks: no.
 */
SP_API int sp_snapshot_sample(const struct sp_snapshot *snapshot, size_t index,
			      struct sp_sample *out);

/**
 * sp_snapshot_python_record_count returns the number of tag-6 records.
 * Thread: any. Allocates: no. Blocks: no.
 */
SP_API size_t
sp_snapshot_python_record_count(const struct sp_snapshot *snapshot);

/**
 * sp_snapshot_python_record copies Python-runtime record @index into @out.
 * @return 0, or -EINVAL if @index is out of range.
 * Thread: any. Allocates: no. Blocks: no.
 */
SP_API int sp_snapshot_python_record(const struct sp_snapshot *snapshot,
				     size_t index,
				     struct sp_python_record *out);

/**
 * sp_snapshot_is_recovered tells whether the file ended inside a record,
 * inside a zstd frame, or was found shorter while read than at open, and
 * only the complete records before the cut were kept
 * (recovered_from_truncated_tail).
 * Thread: any. Allocates: no. Blocks: no.
 */
SP_API bool sp_snapshot_is_recovered(const struct sp_snapshot *snapshot);

/**
 * sp_snapshot_byte_size returns the size of the decoded (uncompressed)
 * spool stream in bytes, including any cut-off tail.
 * Thread: any. Allocates: no. Blocks: no.
 */
SP_API uint64_t sp_snapshot_byte_size(const struct sp_snapshot *snapshot);

#ifdef __cplusplus
}
#endif

#endif /* STACKPULSE_SNAPSHOT_H */
