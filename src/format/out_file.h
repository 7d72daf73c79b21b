/* SPDX-License-Identifier: MIT */
/* Creating output files (spools, exports) without destroying or exposing anything. */
#ifndef SP_FORMAT_OUT_FILE_H
#define SP_FORMAT_OUT_FILE_H

#include <stdbool.h>
#include <stdint.h>

#include "mem.h"

/*
 * The one way the library creates an output file (recorder spools, file
 * sinks, `spulse export -o`, top's spool). What the name @path is when it
 * is opened decides how it is written (out_file.c has the reasons):
 *
 *   missing, regular file   a fresh inode of mode 0600 (never the mode of
 *                           the file it replaces), unnamed (O_TMPFILE) in
 *                           @path's directory, that takes the name by a
 *                           rename: at open, or at publish/commit
 *                           (SP__OUT_AT_COMMIT), so a writer that fails
 *                           before leaves the old file as it was; with
 *                           SP__OUT_KEEP_OLD the old file (unless empty)
 *                           becomes @path.old then, as perf does
 *   device, FIFO, socket    opened for writing as it is: never created,
 *                           truncated, synced, renamed or removed
 *   symbolic link           followed only where the kernel's
 *                           protected_symlinks rule would allow it (link
 *                           owned by us, by the directory's owner, or not
 *                           in a sticky world-writable directory), else
 *                           -ELOOP (each link of a chain); to a device
 *                           or FIFO (/dev/stdout): written in place; to
 *                           a regular file: that file is replaced as
 *                           above, under the name the link gives (one
 *                           with no name, a memfd: emptied, in place);
 *                           to nothing: -ENOENT
 *   directory               -EISDIR (also @path.old with KEEP_OLD)
 *
 * A rename the sticky bit would refuse (another user's file in /tmp) is
 * refused at open (-EPERM), not when the writer is half done. Every step
 * is relative to an O_PATH descriptor of the directory taken at open, so
 * a chdir() or a renamed directory cannot redirect the publish.
 */

/* Flags of sp__out_open(). */
#define SP__OUT_NOW 0x0u       /* the new file takes the name at open */
#define SP__OUT_AT_COMMIT 0x1u /* ... only at sp__out_publish/commit() */
#define SP__OUT_KEEP_OLD 0x2u  /* the publish keeps the old file as .old */

struct sp__out_file {
	int fd;		/* the file written */
	int dirfd;	/* O_PATH of the directory; -1 when in place */
	bool regular;	/* a fresh file of ours: fdatasync applies */
	bool published; /* the name leads to @fd (at once when in place) */
	uint32_t flags;
	char *name; /* last component of the name published to */
	char *tmp;  /* a named temporary (no O_TMPFILE there), else NULL */
};

/*
 * Opens @path for writing as described above. Returns 0 or -errno
 * (-ELOOP: an untrusted symbolic link; -EISDIR; -EPERM: the sticky bit;
 * -ENOMEM); on failure nothing is left behind.
 */
int sp__out_open(struct sp__out_file *out, const struct sp__mem *mem,
		 const char *path, uint32_t flags);

/*
 * Makes the name lead to the file (keeping the old one as .old with
 * KEEP_OLD); a no-op once published. On failure the name and .old are as
 * they were and the call may be retried. 0 or -errno.
 */
int sp__out_publish(struct sp__out_file *out, const struct sp__mem *mem);

/*
 * sp__out_publish after fdatasync: the name never leads to a torn file.
 * 0 or -errno.
 */
int sp__out_commit(struct sp__out_file *out, const struct sp__mem *mem);

/* Whether the output is written in place (a device, FIFO or socket). */
static inline bool sp__out_in_place(const struct sp__out_file *out)
{
	return out->dirfd < 0;
}

/*
 * Hands the descriptor to the caller (who closes it): sp__out_close()
 * then keeps it open. Only for a published output.
 */
int sp__out_take_fd(struct sp__out_file *out);

/* Closes the descriptor; an unpublished file disappears. Safe twice. */
void sp__out_close(struct sp__out_file *out, const struct sp__mem *mem);

#endif /* SP_FORMAT_OUT_FILE_H */
