/* SPDX-License-Identifier: MIT */
/* Internal layout of struct sp_sink, shared by sink.c and sink_zstd.c. */
#ifndef SP_FORMAT_SINK_INTERNAL_H
#define SP_FORMAT_SINK_INTERNAL_H

#include <stdbool.h>

#include <stackpulse/sink.h>

#include "mem.h"

/*
 * Every sink, built-in or caller-defined, is a callback table plus its
 * context: the memory, fd and zstd sinks are just private tables in
 * sink.c and sink_zstd.c. The generic layer adds what all of them share:
 * the "finished" state (writes after sp_sink_finish() fail with -EPIPE)
 * and the allocator the handle itself came from.
 *
 * Retry contract (relied on by the writer): when a write fails, the next
 * write offers the same bytes again, possibly followed by more. Sinks
 * that can fail half-way (fd, zstd) use this to resume where they stopped
 * instead of duplicating output.
 */
struct sp_sink {
	const struct sp_sink_ops *ops;
	void *ctx;
	struct sp__mem mem;
	bool finished;
};

/*
 * Wraps @ops/@ctx in a new handle allocated from @mem. On failure returns
 * -ENOMEM and does not touch @ctx (the caller still owns it).
 */
int sp__sink_new(const struct sp_sink_ops *ops, void *ctx,
		 const struct sp__mem *mem, struct sp_sink **out);

/*
 * Loads a constructor's options (NULL: defaults) into @o and refuses any
 * flag outside @flags, the ones that sink takes. Returns 0 or -EINVAL.
 */
int sp__sink_opts_load(const struct sp_sink_opts *user, uint32_t flags,
		       struct sp_sink_opts *o);

/*
 * Creates the spool file @path the way every file sink does (out_file.h:
 * a fresh 0600 inode renamed into place at once, or a device opened as
 * it is). Returns the fd (write-only, close-on-exec) or -errno.
 */
int sp__sink_create_file(const struct sp__mem *mem, const char *path);

/*
 * sp__sink_new_fd_owned is the fd sink of sp_sink_open_file() for an fd
 * the caller opened: it closes @fd when freed (not when this fails), and
 * with @sync its flush is fdatasync().
 */
int sp__sink_new_fd_owned(int fd, bool sync,
			  const struct sp_allocator *allocator,
			  struct sp_sink **out);

#endif /* SP_FORMAT_SINK_INTERNAL_H */
