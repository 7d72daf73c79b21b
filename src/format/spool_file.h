/* SPDX-License-Identifier: MIT */
/* A recording's output file, out of sight until the recording starts. */
#ifndef SP_FORMAT_SPOOL_FILE_H
#define SP_FORMAT_SPOOL_FILE_H

#include <stdbool.h>
#include <stdint.h>

#include <stackpulse/sink.h>

#include "mem.h"

/*
 * A recording that fails before it records (a bad option, a pid that is
 * gone, perf_event_open refused) must leave the file at its output path
 * as it was. So the spool is first written into a file nobody can see:
 *
 *   open      O_TMPFILE in the directory of PATH (an unnamed inode), or,
 *             where the file system has no O_TMPFILE, ".NAME.XXXXXX" made
 *             with O_EXCL in the same directory
 *   publish   with KEEP_OLD, what is at PATH (unless it is an empty
 *             regular file) is renamed to PATH.old first, as perf does
 *             for perf.data; then the new file is linked under a
 *             temporary name and renamed over PATH, which is atomic, never
 *             writes through a symlink at PATH and never truncates
 *             anything a reader still has open; the new file's mode is
 *             narrowed to that of a regular file it replaces (a 0600
 *             mkstemp file stays 0600)
 *   close     an unpublished file disappears (the unnamed inode with its
 *             last fd, the named temporary by unlink)
 *
 * PATH naming an existing device, FIFO or socket (also through a symlink
 * such as /dev/stdout or /dev/fd/N) is written in place ("direct"): there
 * is nothing to keep and nothing to rename, and renaming /dev/null away
 * would be a disaster. An existing directory is -EISDIR.
 *
 * Every step works relative to an O_PATH descriptor of PATH's directory,
 * taken at open: a chdir() of the caller or a rename of the directory
 * between open and publish cannot redirect the publish elsewhere.
 * Single-owner; the fd is owned by the sink made from it.
 */

/* Flag of sp__spool_file_open: at publish, keep PATH as PATH.old. */
#define SP__SPOOL_KEEP_OLD 0x1u

/* Mode of every spool file the library creates (before the umask). */
#define SP__SPOOL_MODE 0644

struct sp__spool_file {
	struct sp__mem mem;
	int fd;	    /* the file written; owned by the sink */
	int dirfd;  /* O_PATH of PATH's directory; -1 when direct */
	char *name; /* PATH's last component */
	char *tmp;  /* the named temporary, or NULL (O_TMPFILE or direct) */
	uint32_t flags;
	bool direct;	/* an existing non-regular file, written in place */
	bool published; /* PATH now names the file */
};

/*
 * sp__spool_file_open prepares the output for @path (see above) without
 * touching @path. Returns 0 or -errno (-EISDIR for a directory, -ENOMEM);
 * on failure nothing is left behind.
 */
int sp__spool_file_open(const char *path, uint32_t flags,
			const struct sp__mem *mem, struct sp__spool_file *f);

/*
 * sp__spool_file_publish makes PATH name the file (once; later calls
 * return 0). On failure PATH and PATH.old are as they were, and the call
 * may be retried.
 */
int sp__spool_file_publish(struct sp__spool_file *f);

/*
 * sp__spool_file_sink makes the sink that owns @f->fd from now on (also
 * on failure, when the fd is closed): a plain fd sink for a direct
 * output, else an io_uring sink (@uring, options @uo) or an fd sink whose
 * flush is fdatasync.
 */
int sp__spool_file_sink(struct sp__spool_file *f, bool uring,
			const struct sp_sink_uring_opts *uo,
			const struct sp_allocator *allocator,
			struct sp_sink **out);

/* Whether @f (NULL: no file) is written in place (a device or FIFO). */
static inline bool sp__spool_file_is_direct(const struct sp__spool_file *f)
{
	return f && f->direct;
}

/*
 * sp__spool_file_close removes an unpublished named temporary and frees
 * what @f holds (not @f->fd, which its sink closes). @f must have been
 * opened; closing twice is safe.
 */
void sp__spool_file_close(struct sp__spool_file *f);

#endif /* SP_FORMAT_SPOOL_FILE_H */
