/* SPDX-License-Identifier: MIT */
/* Output files: a fresh 0600 inode renamed into place; devices written as they are. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "out_file.h"

/*
 * Why not open(path, O_CREAT | O_TRUNC, 0644), as the sinks once did:
 *
 *   - O_TRUNC empties whatever inode the name leads to: the spool an
 *     export is reading (`-o` equal to its input, or a hard link to it),
 *     or, through a planted symbolic or hard link, a file of another user
 *     when root records into a shared directory;
 *   - an existing file keeps its owner and mode, so a spool of every
 *     process (load addresses, command paths) became readable by all;
 *   - a writer that fails half-way can only leave a cut file behind or
 *     unlink the name, which deletes /dev/null when that was the output.
 *
 * So a name that is missing or a regular file gets a new inode: mkostemp
 * creates it exclusively (O_EXCL never follows a link) with mode 0600 next
 * to @path, and rename() puts it in place. Other links to the old inode
 * keep the old bytes, a reader of the old file keeps reading it, and until
 * the rename nothing at @path has changed. A spool takes its name at once
 * (a Tail must find it while it is recorded); an export only when it is
 * complete, so a failed export changes nothing.
 *
 * A device, FIFO or socket is what the user asked to write to (/dev/null,
 * a pipe to another program): opened as it is, never renamed over, never
 * removed, and not fdatasync()ed (EINVAL there).
 *
 * A symbolic link is followed where fs.protected_symlinks would follow it,
 * whatever that sysctl says: /dev/stdout and links of one's own work, a
 * link another user planted in /tmp does not. It leads to an existing
 * file, written in place (emptied first if regular); creating files
 * through links is refused.
 */

/* Splits @path into its directory ("." when none) and its last component. */
static int split(const struct sp__mem *mem, const char *path, char **dir,
		 size_t *dir_size, const char **base)
{
	const char *slash = strrchr(path, '/');
	size_t n = slash ? (size_t)(slash - path) : 1;

	*base = slash ? slash + 1 : path;
	if (slash && n == 0)
		n = 1; /* "/name": the root directory */
	*dir_size = n + 1;
	*dir = sp__mem_alloc(mem, *dir_size);
	if (!*dir)
		return -ENOMEM;
	memcpy(*dir, slash ? path : ".", n);
	(*dir)[n] = '\0';
	return 0;
}

/* The kernel's may_follow_link() rule (fs.protected_symlinks = 1). */
static int link_trusted(const struct sp__mem *mem, const char *path,
			const struct stat *lst)
{
	const char *base;
	struct stat dst;
	size_t size;
	char *dir;
	int err;

	if (lst->st_uid == geteuid())
		return 0;
	err = split(mem, path, &dir, &size, &base);
	if (err)
		return err;
	err = stat(dir, &dst) < 0 ? -errno : 0;
	sp__mem_free(mem, dir, size);
	if (err)
		return err;
	if (!(dst.st_mode & S_ISVTX) || !(dst.st_mode & S_IWOTH) ||
	    dst.st_uid == lst->st_uid)
		return 0;
	return -ELOOP;
}

/* Writes an existing non-regular file, or a file behind a trusted link. */
static int open_in_place(struct sp__out_file *out, const char *path,
			 bool follow)
{
	struct stat st;
	int flags = O_WRONLY | O_CLOEXEC | O_NOCTTY | (follow ? 0 : O_NOFOLLOW);

	out->fd = open(path, flags);
	if (out->fd < 0)
		return -errno;
	if (fstat(out->fd, &st) < 0 || (S_ISREG(st.st_mode) && !follow)) {
		/* Not what lstat saw a moment ago: let the caller start over. */
		close(out->fd);
		out->fd = -1;
		return -EAGAIN;
	}
	out->regular = S_ISREG(st.st_mode);
	if (out->regular && ftruncate(out->fd, 0) < 0) {
		close(out->fd);
		out->fd = -1;
		return -errno;
	}
	return 0;
}

/* Creates "<dir>/.<base>.XXXXXX" (0600, O_EXCL) and keeps both names. */
static int open_fresh(struct sp__out_file *out, const struct sp__mem *mem,
		      const char *path)
{
	const char *base;
	size_t dir_size, blen;
	char *dir;
	int err;

	err = split(mem, path, &dir, &dir_size, &base);
	if (err)
		return err;
	blen = strlen(base);
	if (blen == 0) {
		sp__mem_free(mem, dir, dir_size);
		return -EISDIR;
	}
	/* NAME_MAX is 255: ".", the base, "." and six X must fit. */
	if (blen > 200)
		blen = 200;
	out->tmp_size = dir_size + 2 + blen + 8;
	out->tmp = sp__mem_alloc(mem, out->tmp_size);
	out->path_size = strlen(path) + 1;
	out->path = sp__mem_alloc(mem, out->path_size);
	if (out->tmp && out->path) {
		memcpy(out->path, path, out->path_size);
		strcpy(out->tmp, dir);
		strcat(out->tmp, "/.");
		strncat(out->tmp, base, blen);
		strcat(out->tmp, ".XXXXXX");
		out->fd = mkostemp(out->tmp, O_CLOEXEC);
		err = out->fd < 0 ? -errno : 0;
	} else {
		err = -ENOMEM;
	}
	sp__mem_free(mem, dir, dir_size);
	if (err) {
		sp__mem_free(mem, out->tmp, out->tmp_size);
		sp__mem_free(mem, out->path, out->path_size);
		out->tmp = out->path = NULL;
		return err;
	}
	out->regular = true;
	return 0;
}

/* One look at @path and the matching way to open it (-EAGAIN: raced). */
static int open_once(struct sp__out_file *out, const struct sp__mem *mem,
		     const char *path, enum sp__out_when when)
{
	struct stat lst;
	int err;

	if (lstat(path, &lst) == 0) {
		if (S_ISDIR(lst.st_mode))
			return -EISDIR;
		if (S_ISLNK(lst.st_mode)) {
			err = link_trusted(mem, path, &lst);
			return err ? err : open_in_place(out, path, true);
		}
		if (!S_ISREG(lst.st_mode))
			return open_in_place(out, path, false);
	} else if (errno != ENOENT) {
		return -errno;
	}
	err = open_fresh(out, mem, path);
	if (err || when == SP__OUT_AT_COMMIT)
		return err;
	/* A spool is read under its name while it is written: rename now. */
	if (rename(out->tmp, out->path) < 0) {
		err = -errno;
		sp__out_close(out, mem);
		return err;
	}
	sp__mem_free(mem, out->tmp, out->tmp_size);
	sp__mem_free(mem, out->path, out->path_size);
	out->tmp = out->path = NULL;
	return 0;
}

int sp__out_open(struct sp__out_file *out, const struct sp__mem *mem,
		 const char *path, enum sp__out_when when)
{
	int err, tries;

	memset(out, 0, sizeof(*out));
	out->fd = -1;
	if (!path || !*path)
		return -ENOENT;
	/* A name that changes kind between lstat and open is looked at again. */
	for (tries = 0; tries < 4; tries++) {
		err = open_once(out, mem, path, when);
		if (err != -EAGAIN)
			return err;
	}
	return -EAGAIN;
}

int sp__out_commit(struct sp__out_file *out, const struct sp__mem *mem)
{
	if (!out->tmp)
		return 0;
	/* Durable before visible: the name never leads to a torn file. */
	if (fdatasync(out->fd) < 0 || rename(out->tmp, out->path) < 0)
		return -errno;
	sp__mem_free(mem, out->tmp, out->tmp_size);
	sp__mem_free(mem, out->path, out->path_size);
	out->tmp = out->path = NULL;
	return 0;
}

void sp__out_close(struct sp__out_file *out, const struct sp__mem *mem)
{
	if (out->fd >= 0)
		close(out->fd);
	out->fd = -1;
	if (out->tmp)
		unlink(out->tmp); /* ours: created by open_fresh() */
	sp__mem_free(mem, out->tmp, out->tmp_size);
	sp__mem_free(mem, out->path, out->path_size);
	out->tmp = out->path = NULL;
}
