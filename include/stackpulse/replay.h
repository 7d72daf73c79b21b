/* SPDX-License-Identifier: MIT */
/* stackpulse: Replay, the sequential bounded-memory spool reader. */
#ifndef STACKPULSE_REPLAY_H
#define STACKPULSE_REPLAY_H

#include <stdbool.h>

#include <stackpulse/api.h>
#include <stackpulse/spool.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A Replay validates the whole spool at open (same rules and recovery as a
 * Snapshot) but keeps only the definitions, the Python-runtime records, a
 * sample count and a bounded index of where sample runs lie (at most
 * 524,288 ranges, 8 MiB). Samples are decoded again on every pass, reading
 * through a small window, so memory does not grow with the sample count.
 * The file must not change while the Replay is open; if it is cut short
 * anyway, iteration fails with SP_ESHRANK (it is read, never mapped, so
 * the process never dies of it). Single-owner.
 */
struct sp_replay;

/**
 * sp_replay_open opens and validates the spool at @path (a regular
 * file; a FIFO or device is -EINVAL, and never blocks the open).
 * @return 0, SP_ECORRUPT, SP_EZSTD, -EINVAL, -ENOMEM, -errno.
 * Caller owns the result; free it with sp_replay_close().
 * Thread: any. Allocates: yes. Blocks: yes (reads the whole file).
 */
SP_API int sp_replay_open(const char *path, const struct sp_reader_opts *opts,
			  struct sp_replay **out);

/**
 * sp_replay_close releases the replay. NULL is a no-op.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API void sp_replay_close(struct sp_replay *replay);

/**
 * sp_replay_spool returns the decoded definitions.
 * Borrowed: valid until sp_replay_close() is called on the same object.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API const struct sp_spool *sp_replay_spool(const struct sp_replay *replay);

/**
 * sp_replay_sample_count returns the number of samples found at open.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API uint64_t sp_replay_sample_count(const struct sp_replay *replay);

/**
 * sp_replay_is_recovered tells whether the file ended inside a record,
 * inside a zstd frame, or was found shorter than at open while read (the
 * complete records before the cut were kept).
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API bool sp_replay_is_recovered(const struct sp_replay *replay);

/**
 * sp_replay_python_record_count / sp_replay_python_record: the tag-6
 * records, in file order.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API size_t sp_replay_python_record_count(const struct sp_replay *replay);
SP_API int sp_replay_python_record(const struct sp_replay *replay, size_t index,
				   struct sp_python_record *out);

/**
 * sp_replay_rewind restarts iteration at the first sample.
 * @return 0 or a negative code (I/O or decompression failure).
 * Thread: single-owner. Allocates: no. Blocks: yes.
 */
SP_API int sp_replay_rewind(struct sp_replay *replay);

/**
 * sp_replay_next decodes the next sample in file order into @out.
 * @return 1 when a sample was stored, 0 at the end, or a negative code
 *         (-EIO, SP_ESHRANK if the file was cut since open, SP_ECORRUPT
 *         if it changed otherwise, SP_EZSTD).
 * Thread: single-owner. Allocates: no. Blocks: yes (reads the file).
 */
SP_API int sp_replay_next(struct sp_replay *replay, struct sp_sample *out);

#ifdef __cplusplus
}
#endif

#endif /* STACKPULSE_REPLAY_H */
