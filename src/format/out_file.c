/* SPDX-License-Identifier: MIT */
/* Output files: a fresh 0600 inode renamed into place; devices written as they are. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "out_file.h"

/* Symbolic links followed at most from the output name (as MAXSYMLINKS). */
#define OUT_HOPS 40

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
 * whatever that sysctl says, each link of a chain judged on its own:
 * /dev/stdout and links of one's own work, a link another user planted
 * in /tmp does not (-ELOOP). What it leads to is then treated as if it
 * had been named: a regular file is replaced by a fresh one in its own
 * directory (the link stays, and a followed link never truncates
 * anything either), a device is written as it is. /proc's links to what
 * has no name (/dev/stdout to a pipe, /dev/fd/N to a memfd or a deleted
 * file) are opened as they are, a regular one emptied first as a shell's
 * `>` would.
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

/*
 * Writes an existing device, FIFO or socket (@magic false: @path itself
 * is one, O_NOFOLLOW), or what a /proc link leads to (@magic: a pipe, a
 * terminal, or a regular file without a name, emptied first).
 */
static int open_in_place(struct sp__out_file *out, const char *path, bool magic)
{
	struct stat st;
	int flags = O_WRONLY | O_CLOEXEC | O_NOCTTY | (magic ? 0 : O_NOFOLLOW);

	out->fd = open(path, flags);
	if (out->fd < 0)
		return errno == ELOOP && !magic ? -EAGAIN : -errno;
	if (fstat(out->fd, &st) < 0 || S_ISDIR(st.st_mode) ||
	    (S_ISREG(st.st_mode) && !magic)) {
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

/*
 * The name a symbolic link at @path leads to, as a path usable from here:
 * a relative target is taken from the link's directory.
 */
static int link_target(const struct sp__mem *mem, const char *path, char **next,
		       size_t *next_size)
{
	const char *slash = strrchr(path, '/');
	char buf[PATH_MAX];
	size_t dlen;
	ssize_t n;

	n = readlink(path, buf, sizeof(buf));
	if (n < 0)
		return -errno;
	if ((size_t)n >= sizeof(buf))
		return -ENAMETOOLONG;
	dlen = buf[0] != '/' && slash ? (size_t)(slash - path) + 1 : 0;
	*next_size = dlen + (size_t)n + 1;
	*next = sp__mem_alloc(mem, *next_size);
	if (!*next)
		return -ENOMEM;
	memcpy(*next, path, dlen);
	memcpy(*next + dlen, buf, (size_t)n);
	(*next)[dlen + (size_t)n] = '\0';
	return 0;
}

/* What resolve() found; OUT_MAGIC: a /proc link to what has no name. */
enum out_kind {
	OUT_FRESH,
	OUT_IN_PLACE,
	OUT_MAGIC
};

/*
 * Where the output goes: follows trusted symbolic links one at a time
 * (each is judged, as the kernel judges each link of a path) to the name
 * where a fresh file is made (missing or regular: OUT_FRESH) or that is
 * opened as it is (OUT_IN_PLACE, OUT_MAGIC). *@name is that name (NULL: @path
 * itself), to be freed by the caller whatever this returns.
 */
static int resolve(const struct sp__mem *mem, const char *path, char **name,
		   size_t *size)
{
	struct stat lst, st;
	const char *cur;
	char *next;
	size_t next_size;
	int hop, err;

	*name = NULL;
	*size = 0;
	for (hop = 0; hop < OUT_HOPS; hop++) {
		cur = *name ? *name : path;
		if (lstat(cur, &lst) < 0)
			return errno == ENOENT ? OUT_FRESH : -errno;
		if (S_ISDIR(lst.st_mode))
			return -EISDIR;
		if (S_ISREG(lst.st_mode))
			return OUT_FRESH;
		if (!S_ISLNK(lst.st_mode))
			return OUT_IN_PLACE;
		err = link_trusted(mem, cur, &lst);
		if (!err)
			err = link_target(mem, cur, &next, &next_size);
		if (err)
			return err;
		/*
		 * /proc's links (/dev/stdout -> /proc/self/fd/1) may lead to
		 * what has no name: a pipe ("pipe:[N]"), a deleted file or
		 * a memfd. It exists but not under the name read: open it
		 * as it is.
		 */
		if (lstat(next, &st) < 0 && errno == ENOENT &&
		    stat(cur, &st) == 0) {
			sp__mem_free(mem, next, next_size);
			return S_ISDIR(st.st_mode) ? -EISDIR : OUT_MAGIC;
		}
		sp__mem_free(mem, *name, *size);
		*name = next;
		*size = next_size;
	}
	return -ELOOP;
}

/* One look at @path and the matching way to open it (-EAGAIN: raced). */
static int open_once(struct sp__out_file *out, const struct sp__mem *mem,
		     const char *path, enum sp__out_when when)
{
	char *name;
	size_t size;
	int err = resolve(mem, path, &name, &size);

	if (err == OUT_IN_PLACE || err == OUT_MAGIC)
		err = open_in_place(out, name ? name : path, err == OUT_MAGIC);
	else if (err == OUT_FRESH)
		err = open_fresh(out, mem, name ? name : path);
	sp__mem_free(mem, name, size);
	if (err || !out->tmp || when == SP__OUT_AT_COMMIT)
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
