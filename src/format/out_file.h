/* SPDX-License-Identifier: MIT */
/* Creating output files (spools, exports) without destroying or exposing anything. */
#ifndef SP_FORMAT_OUT_FILE_H
#define SP_FORMAT_OUT_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "mem.h"

/*
 * What the name @path is when an output is opened decides how it is
 * written (out_file.c has the reasons):
 *
 *   missing, regular file   a fresh inode, mode 0600, created O_EXCL under
 *                           a temporary name in the same directory and
 *                           renamed over @path: at once, or at commit
 *                           (SP__OUT_AT_COMMIT) so a failed writer leaves
 *                           the old file as it was
 *   device, FIFO, socket    opened for writing as it is: never created,
 *                           truncated, synced or removed
 *   symbolic link           followed only where the kernel's
 *                           protected_symlinks rule would allow it (link
 *                           owned by us, by the directory's owner, or not
 *                           in a sticky world-writable directory), to an
 *                           existing file, written in place; else -ELOOP
 *   directory               -EISDIR
 */
enum sp__out_when {
	SP__OUT_NOW = 0,       /* the new file takes the name when opened */
	SP__OUT_AT_COMMIT = 1, /* ... only when sp__out_commit() succeeds */
};

struct sp__out_file {
	int fd;
	bool regular; /* a regular file: fdatasync applies */
	char *tmp;    /* temporary name until committed, else NULL */
	char *path;   /* the final name, kept while @tmp is set */
	size_t tmp_size;
	size_t path_size;
};

/*
 * Opens @path for writing as described above. Returns 0 or -errno
 * (-ELOOP: an untrusted symbolic link; -EISDIR; -ENOMEM).
 */
int sp__out_open(struct sp__out_file *out, const struct sp__mem *mem,
		 const char *path, enum sp__out_when when);

/*
 * Makes the written file visible under its name (fdatasync, then rename);
 * a no-op for files opened in place or committed already. 0 or -errno.
 */
int sp__out_commit(struct sp__out_file *out, const struct sp__mem *mem);

/* Closes the descriptor; an uncommitted temporary file is removed. */
void sp__out_close(struct sp__out_file *out, const struct sp__mem *mem);

#endif /* SP_FORMAT_OUT_FILE_H */
