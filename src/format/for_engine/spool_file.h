/* SPDX-License-Identifier: MIT */
/* format's door for the engine: the Recorder's spool file, named when it is published. */
#ifndef SP_FORMAT_SPOOL_FILE_H
#define SP_FORMAT_SPOOL_FILE_H

#include <stdbool.h>

#include <stackpulse/alloc.h>
#include <stackpulse/log.h>
#include <stackpulse/sink.h>

/*
 * src/format/for_engine/ holds what format offers the engine beyond the
 * public API, and nothing else: the engine's include path names this
 * folder, never src/format itself, so the engine cannot reach format's
 * internals (out_file.h, sink_internal.h, the writer's state).
 *
 * A Recorder opened on a path writes a spool file created by format's
 * output-file rules (out_file.h: a fresh 0600 inode, devices written in
 * place), which takes its name only when the Recorder publishes it (at
 * its first poll or flush), so a recording that fails to start leaves
 * the old file as it was:
 *
 *   sp__spool_file_open(path)  -> file (unnamed) + the sink the writer uses
 *   sp__spool_file_publish()   -> the path names the file (KEEP_OLD: the old
 *                                 one becomes path.old)
 *   sp__spool_file_close()     -> an unpublished file disappears
 */
struct sp__spool_file;

/*
 * How the file is written. @keep_old: the publish keeps the old file as
 * @path.old (SP_RECORDER_KEEP_OLD). @uring: write through an io_uring
 * sink (flushes fdatasync a regular file) instead of the plain fd sink;
 * a device, FIFO or socket always gets the plain sink. @allocator and
 * @logger: the file's and the sink's (NULL: defaults, silent).
 */
struct sp__spool_file_opts {
	const struct sp_allocator *allocator;
	const struct sp_logger *logger;
	bool keep_old;
	bool uring;
};

/*
 * Opens @path for a spool as described above, not yet named. On success
 * *@file and *@sink are the caller's (the sink closes its own descriptor
 * when freed; the file is freed with sp__spool_file_close()). Returns 0
 * or -errno (as sp__out_open: -ELOOP, -EISDIR, -EPERM, -ENOMEM); on
 * failure nothing is left behind. Thread: any. Allocates: yes.
 */
int sp__spool_file_open(const char *path,
			const struct sp__spool_file_opts *opts,
			struct sp__spool_file **file, struct sp_sink **sink);

/*
 * Makes the path name the file; a no-op once published. On failure the
 * name (and .old) are as they were and it may be retried. 0 or -errno.
 */
int sp__spool_file_publish(struct sp__spool_file *file);

/* Whether the path names the file already (at once for a device). */
bool sp__spool_file_published(const struct sp__spool_file *file);

/* Whether the file is a device, FIFO or socket written in place. */
bool sp__spool_file_in_place(const struct sp__spool_file *file);

/* Closes and frees @file (NULL: nothing); an unpublished file disappears. */
void sp__spool_file_close(struct sp__spool_file *file);

#endif /* SP_FORMAT_SPOOL_FILE_H */
