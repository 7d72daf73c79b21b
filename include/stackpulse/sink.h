/* SPDX-License-Identifier: MIT */
/* stackpulse: byte sinks the spool writer appends whole chunks to. */
#ifndef STACKPULSE_SINK_H
#define STACKPULSE_SINK_H

#include <stackpulse/alloc.h>
#include <stackpulse/api.h>
#include <stackpulse/log.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A sink receives the writer's output in chunks. Each chunk holds whole
 * SPULSE3 records only, so a reader that tails the destination never sees
 * a record split across two sink writes. Sinks are single-owner objects:
 * one thread at a time.
 */
struct sp_sink;

/**
 * struct sp_sink_ops is the callback table of a caller-defined sink.
 *
 * @write must consume all @len bytes or fail with a negative code; on
 * failure the writer keeps the chunk and offers it again on the next flush,
 * so nothing already accepted is lost. @flush (optional) makes written bytes
 * durable or visible. @finish (optional) ends the stream (called once, by
 * sp_sink_finish()). @free (optional) releases @ctx when the sink is freed.
 */
struct sp_sink_ops {
	int (*write)(void *ctx, const void *buf, size_t len);
	int (*flush)(void *ctx);
	int (*finish)(void *ctx);
	void (*free)(void *ctx);
};

/* Flags of struct sp_sink_opts; a sink refuses (-EINVAL) those it does not use. */
/** fd sinks: close the descriptor in sp_sink_free() (only on success). */
#define SP_SINK_CLOSE_FD 0x1u
/** Uring sinks: sp_sink_flush() also fdatasync()s a regular file. */
#define SP_SINK_URING_DATASYNC 0x2u
/**
 * Uring sinks: never use io_uring, write with pwrite(2) in the calling
 * thread as when io_uring is unavailable. Meant for tests and comparisons.
 */
#define SP_SINK_URING_PWRITE 0x4u

/**
 * struct sp_sink_opts configures every sink constructor. Set @size to
 * sizeof(struct sp_sink_opts); zero fields mean defaults, and a sink
 * ignores the fields meant for another kind. Pass NULL for all defaults.
 *
 * @allocator: the sink's memory (NULL: the library default).
 * @logger: uring sinks: receives one warning when io_uring is unavailable
 *   and the sink falls back to pwrite (NULL: silent). Must outlive the
 *   sink.
 * @flags: SP_SINK_* (each constructor says which it takes).
 * @zstd_level: sp_sink_new_zstd(): the compression level (default 3).
 * @uring_queue_depth: uring sinks: submission queue entries (default 8,
 *   at most 4096).
 * @uring_buf_count: uring sinks: chunk buffers, i.e. writes in flight
 *   (default @uring_queue_depth, at most 4096), all allocated when the
 *   sink is created.
 * @uring_buf_size: uring sinks: bytes per buffer (default 128 KiB). A
 *   chunk larger than this is written synchronously after the queue has
 *   drained. Design: docs/how-to/uring-sink.md.
 */
struct sp_sink_opts {
	size_t size;
	const struct sp_allocator *allocator;
	const struct sp_logger *logger;
	uint32_t flags;
	int zstd_level;
	uint32_t uring_queue_depth;
	uint32_t uring_buf_count;
	size_t uring_buf_size;
};

/**
 * sp_sink_new_callback wraps a caller's callback table.
 * @param ops must outlive the sink. @param ctx passed to every callback.
 * @param opts NULL for defaults; no flags.
 * @return 0, -EINVAL (NULL @ops or @ops->write, bad options), -ENOMEM.
 * Caller owns the result; free it with sp_sink_free().
 * Thread: any. Allocates: yes. Blocks: no.
 */
SP_API int sp_sink_new_callback(const struct sp_sink_ops *ops, void *ctx,
				const struct sp_sink_opts *opts,
				struct sp_sink **out);

/**
 * sp_sink_new_memory creates a sink that appends to a growing buffer;
 * read it with sp_sink_memory_data().
 * @param opts NULL for defaults; no flags.
 * @return 0, -EINVAL (bad options) or -ENOMEM.
 * Caller owns the result; free it with sp_sink_free().
 * Thread: any. Allocates: yes. Blocks: no.
 */
SP_API int sp_sink_new_memory(const struct sp_sink_opts *opts,
			      struct sp_sink **out);

/**
 * sp_sink_memory_data returns the bytes a memory sink holds.
 * Borrowed: valid until the next write to or free of @sink.
 * @return 0, or -EINVAL if @sink is not a memory sink.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API int sp_sink_memory_data(const struct sp_sink *sink, const void **data,
			       size_t *len);

/**
 * sp_sink_new_fd creates a sink that write()s to @fd at its current file
 * position, retrying short writes and EINTR.
 * @param opts NULL for defaults; flags: SP_SINK_CLOSE_FD.
 * @return 0, -EINVAL (negative fd, bad options), -ENOMEM.
 * Caller owns the result; free it with sp_sink_free().
 * Thread: any. Allocates: yes. Blocks: no.
 */
SP_API int sp_sink_new_fd(int fd, const struct sp_sink_opts *opts,
			  struct sp_sink **out);

/**
 * sp_sink_open_file opens @path for output and returns an fd sink that
 * owns the descriptor. A missing or regular file is replaced by a new
 * file of mode 0600 (created unnamed in the same directory and renamed
 * over @path before this returns), so the old inode, its other hard
 * links and readers of it keep their bytes. A device, FIFO or socket is
 * written as it is (never created, truncated or removed). A symbolic link
 * is followed only where the kernel's protected_symlinks rule allows
 * (owned by the caller's euid or the directory's owner, or not in a
 * sticky world-writable directory; each link of a chain), to an existing
 * file: a device or FIFO written in place, a regular file replaced as
 * above under the name the link gives (one with no name, such as a
 * memfd behind /dev/stdout, emptied and written in place). A rename the
 * sticky bit forbids (another user's file in /tmp) is refused up front.
 * Flush calls fdatasync() for regular files.
 * @param opts NULL for defaults; no flags.
 * @return 0, -EINVAL (bad options: the file is not touched), -errno from
 *         lstat(2)/open(2)/rename(2), -ELOOP (a symbolic link that is not
 *         followed), -EISDIR, -EPERM (sticky bit), -ENOMEM.
 * Caller owns the result; free it with sp_sink_free().
 * Thread: any. Allocates: yes. Blocks: yes (open; a FIFO until a reader
 * opens it).
 */
SP_API int sp_sink_open_file(const char *path, const struct sp_sink_opts *opts,
			     struct sp_sink **out);

/**
 * sp_sink_open_file_atomic is sp_sink_open_file() for outputs that must
 * appear whole or not at all (exports): the new file stays under its
 * unnamed until sp_sink_finish() makes it durable (fdatasync) and
 * renames it over @path. Freed before that, the file disappears and
 * @path is exactly as it was. Devices and FIFOs are written in place as
 * by sp_sink_open_file().
 * @param opts NULL for defaults; no flags.
 * @return as sp_sink_open_file(); sp_sink_finish() returns -errno of
 *         fdatasync(2) or rename(2).
 * Caller owns the result; free it with sp_sink_free().
 * Thread: any. Allocates: yes. Blocks: yes (open; a FIFO until a reader
 * opens it).
 */
SP_API int sp_sink_open_file_atomic(const char *path,
				    const struct sp_sink_opts *opts,
				    struct sp_sink **out);

/**
 * sp_sink_new_zstd compresses into @inner: every sp_sink_write() becomes one
 * complete zstd frame, so a tailing reader can decode everything written so
 * far even if the process dies. Readers detect zstd spools by the frame
 * magic and decompress them transparently.
 * @param inner Takes ownership of `inner` (freed with the zstd sink, also
 *        when this call fails).
 * @param opts NULL for defaults; @opts->zstd_level; no flags.
 * @return 0, -EINVAL (bad options or level), -ENOMEM, SP_EZSTD.
 * Caller owns the result; free it with sp_sink_free().
 * Thread: any. Allocates: yes. Blocks: no.
 */
SP_API int sp_sink_new_zstd(struct sp_sink *inner,
			    const struct sp_sink_opts *opts,
			    struct sp_sink **out);

/**
 * sp_sink_new_uring_fd creates a sink that appends chunks to the regular
 * file @fd through io_uring, starting at its current file position:
 * sp_sink_write() copies the chunk into a free buffer, submits the write at
 * an explicit offset and returns without waiting for it. With every buffer
 * in flight it waits for one to complete (bounded memory, back-pressure).
 * A write that fails in the kernel is reported by the next
 * sp_sink_write(), sp_sink_flush() or sp_sink_finish(); the file is then
 * cut back to the end of the last chunk before the failure (never a hole,
 * never half a chunk) and the chunks after it are kept and written again
 * by the call after that, so a caller that frees space loses nothing.
 * sp_sink_flush() waits for all writes; sp_sink_finish() also leaves the
 * file position at the end of the data. Without io_uring (kernel
 * disabled or too old) the same sink writes with pwrite(2) instead.
 * @param fd a seekable descriptor without O_APPEND; data after its
 *        position may be truncated away when a write fails.
 * @param opts NULL for defaults; flags: SP_SINK_CLOSE_FD (on failure the
 *        caller keeps @fd), SP_SINK_URING_DATASYNC, SP_SINK_URING_PWRITE.
 * @return 0, -EINVAL (bad fd or options; O_APPEND), -ESPIPE (not
 *         seekable), -ENOMEM.
 * Caller owns the result; free it with sp_sink_free() (which waits for the
 * writes in flight, but does not flush).
 * Thread: any. Allocates: yes (never after this call).
 * Blocks: yes (sp_sink_write() only when all buffers are in flight).
 */
SP_API int sp_sink_new_uring_fd(int fd, const struct sp_sink_opts *opts,
				struct sp_sink **out);

/**
 * sp_sink_open_uring opens @path as sp_sink_open_file() does (a new file
 * of mode 0600, a device as it is) and returns a uring sink (see
 * sp_sink_new_uring_fd()) that owns it.
 * @param opts NULL for defaults; flags: SP_SINK_URING_DATASYNC,
 *        SP_SINK_URING_PWRITE.
 * @return 0, -EINVAL (bad options: the file is not touched), -errno from
 *         open(2), -ENOMEM.
 * Caller owns the result; free it with sp_sink_free().
 * Thread: any. Allocates: yes. Blocks: yes (open).
 */
SP_API int sp_sink_open_uring(const char *path, const struct sp_sink_opts *opts,
			      struct sp_sink **out);

/**
 * sp_sink_write appends @len bytes from @buf.
 * @return 0 or a negative code from the sink.
 * Thread: single-owner. Allocates: sink-dependent. Blocks: sink-dependent.
 */
SP_API int sp_sink_write(struct sp_sink *sink, const void *buf, size_t len);

/**
 * sp_sink_flush makes everything written so far visible/durable.
 * @return 0 or a negative code from the sink.
 * Thread: single-owner. Allocates: no. Blocks: sink-dependent.
 */
SP_API int sp_sink_flush(struct sp_sink *sink);

/**
 * sp_sink_finish ends the stream; later writes fail with -EPIPE. Calling
 * it again returns 0.
 * @return 0 or a negative code from the sink.
 * Thread: single-owner. Allocates: no. Blocks: sink-dependent.
 */
SP_API int sp_sink_finish(struct sp_sink *sink);

/**
 * sp_sink_free releases @sink (and what it owns). NULL is a no-op. It does
 * not flush or finish.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API void sp_sink_free(struct sp_sink *sink);

#ifdef __cplusplus
}
#endif

#endif /* STACKPULSE_SINK_H */
