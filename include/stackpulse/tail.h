/* SPDX-License-Identifier: MIT */
/* stackpulse: Tail, the incremental reader of a spool that is still growing. */
#ifndef STACKPULSE_TAIL_H
#define STACKPULSE_TAIL_H

#include <stdbool.h>

#include <stackpulse/api.h>
#include <stackpulse/spool.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A Tail reads a spool while a writer appends to it (SPULSE3 §10). Each
 * sp_tail_poll() produces one batch of at most SP_TAIL_BATCH_SAMPLES
 * samples; a batch also ends right after a deactivation record (tag 7/8),
 * so retirements arrive with the samples that preceded them. A record cut
 * off at the current end of file is not consumed: it is decoded again on
 * a later poll once the writer has appended the rest. Definitions are kept
 * for the Tail's lifetime; samples and per-batch lists only until the next
 * poll. zstd spools (one frame per flushed chunk) are decompressed
 * incrementally. Single-owner.
 */
struct sp_tail;

/** Maximum number of samples in one batch. */
#define SP_TAIL_BATCH_SAMPLES 16384

/**
 * sp_tail_open opens @path (whose header must already be written) and
 * decodes the first batch of complete records.
 * @param opts flags SP_READER_OWNS_FILE allows sp_tail_discard_consumed().
 * @return 0, SP_ECORRUPT (bad or incomplete header, corrupt record),
 *         SP_EZSTD, -ENOMEM, -errno.
 * Caller owns the result; free it with sp_tail_close().
 * Thread: any. Allocates: yes. Blocks: yes (file I/O).
 */
SP_API int sp_tail_open(const char *path, const struct sp_reader_opts *opts,
			struct sp_tail **out);

/**
 * sp_tail_close releases the tail. NULL is a no-op.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API void sp_tail_close(struct sp_tail *tail);

/**
 * sp_tail_spool returns the definitions decoded so far.
 * Borrowed: valid until sp_tail_close() is called on the same object.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API const struct sp_spool *sp_tail_spool(const struct sp_tail *tail);

/**
 * sp_tail_poll makes the next batch current. The first call returns the
 * batch decoded by sp_tail_open(); later calls drop the previous batch,
 * look at the file's new size and decode the next batch.
 * @return the number of samples in the new batch (0 when nothing new),
 *         SP_ECORRUPT, SP_ESHRANK (the file became shorter), SP_EZSTD,
 *         -ENOMEM, -errno. After an error the tail stays positioned before
 *         the offending record.
 * Thread: single-owner. Allocates: only while growing (none once warm).
 * Blocks: yes (file I/O).
 */
SP_API int sp_tail_poll(struct sp_tail *tail);

/**
 * sp_tail_sample_count returns the number of samples in the current batch.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API size_t sp_tail_sample_count(const struct sp_tail *tail);

/**
 * sp_tail_sample copies sample @index of the current batch into @out.
 * @return 0, or -EINVAL if @index is out of range.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API int sp_tail_sample(const struct sp_tail *tail, size_t index,
			  struct sp_sample *out);

/**
 * sp_tail_pids returns the pids observed in the current batch (samples,
 * module, Python-runtime and retirement records), first-seen order, no
 * duplicates.
 * Borrowed: valid until sp_tail_poll() is called on the same object.
 * @return the number of pids stored at *@pids.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API size_t sp_tail_pids(const struct sp_tail *tail, const int32_t **pids);

/**
 * sp_tail_retired_pids returns the pids named by tag-7 records of the
 * current batch, in record order.
 * Borrowed: valid until sp_tail_poll() is called on the same object.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API size_t sp_tail_retired_pids(const struct sp_tail *tail,
				   const int32_t **pids);

/**
 * sp_tail_retired_modules returns the module ids retired in the current
 * batch (by tag 8, or by tag 7 for each module it deactivated).
 * Borrowed: valid until sp_tail_poll() is called on the same object.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API size_t sp_tail_retired_modules(const struct sp_tail *tail,
				      const uint32_t **modules);

/**
 * sp_tail_python_records returns the tag-6 records of the current batch.
 * Borrowed: valid until sp_tail_poll() is called on the same object.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API size_t sp_tail_python_records(const struct sp_tail *tail,
				     const struct sp_python_record **records);

/**
 * sp_tail_has_more tells whether bytes beyond the current batch were
 * already visible when it was decoded (another poll will make progress
 * without waiting). It says nothing about whether the writer is alive.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API bool sp_tail_has_more(const struct sp_tail *tail);

/**
 * sp_tail_consumed returns how many bytes of the file the tail has
 * consumed (complete records up to the end of the current batch; for a
 * zstd spool, compressed bytes fed to the decoder).
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API uint64_t sp_tail_consumed(const struct sp_tail *tail);

/**
 * sp_tail_discard_consumed releases the disk blocks of everything already
 * consumed (fallocate PUNCH_HOLE | KEEP_SIZE from the previous discard up
 * to the consumed position rounded down to a page). The file keeps its
 * size, the punched range reads back as zeros, and the file can no longer
 * be opened by a Snapshot or Replay; this tail keeps working.
 * @return 0, -EPERM (the tail was opened without SP_READER_OWNS_FILE),
 *         -EOPNOTSUPP (the filesystem cannot punch holes), -errno.
 * Thread: single-owner. Allocates: no. Blocks: yes.
 */
SP_API int sp_tail_discard_consumed(struct sp_tail *tail);

#ifdef __cplusplus
}
#endif

#endif /* STACKPULSE_TAIL_H */
