/* SPDX-License-Identifier: MIT */
/* Output files: a fresh 0600 inode renamed into place; devices written as they are. */

/*
 * Why not open(path, O_CREAT | O_TRUNC, 0644), as the sinks once did:
 *
 *   - O_TRUNC empties whatever inode the name leads to: the spool an
 *     export is reading (`-o` equal to its input, or a hard link to it),
 *     the previous recording of a record that then fails to start, or,
 *     through a planted symbolic or hard link, a file of another user
 *     when root records into a shared directory;
 *   - an existing file keeps its owner and mode, so a spool of every
 *     process (load addresses, command paths) became readable by all;
 *   - a writer that fails half-way can only leave a cut file behind or
 *     unlink the name, which deletes /dev/null when that was the output.
 *
 * So a name that is missing or a regular file gets a new inode, unnamed
 * (O_TMPFILE, mode 0600) in the same directory until it is published:
 *
 *   1. the file gets a temporary name ".NAME.XXXXXX" (linkat);
 *   2. KEEP_OLD: NAME is renamed to NAME.old (replacing an older one);
 *   3. the temporary name is renamed over NAME;
 *   if 3 fails, 2 is undone (NAME.old back to NAME).
 *
 * Other links to the old inode keep the old bytes, a reader of the old
 * file keeps reading it, and until the publish nothing at the name has
 * changed; a writer killed before it leaves nothing (the unnamed inode
 * dies with its last descriptor). Linking an O_TMPFILE inode by its fd
 * (AT_EMPTY_PATH) needs CAP_DAC_READ_SEARCH; everyone may link it through
 * /proc/self/fd/N with AT_SYMLINK_FOLLOW, the documented alternative.
 * Where the file system has no O_TMPFILE the file is created under the
 * temporary name (O_EXCL, which never follows a link) at once.
 *
 * A device, FIFO or socket is what the user asked to write to (/dev/null,
 * a pipe to another program): opened as it is, never renamed over, never
 * removed, and not fdatasync()ed (EINVAL there).
 *
 * A symbolic link is followed where fs.protected_symlinks would follow it,
 * whatever that sysctl says: /dev/stdout and links of one's own work, a
 * link another user planted in /tmp does not; each link of a chain is
 * judged. A link to a regular file has that file replaced as above,
 * under the name the link gives, never truncated; a file with no such
 * name (/dev/stdout of a memfd or a deleted file) is written in place.
 * Creating files through links is refused.
 */
#define _GNU_SOURCE /* O_TMPFILE, O_PATH, AT_EMPTY_PATH */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "out_file.h"

#define FILE_MODE 0600
#define OLD_SUFFIX ".old"
#define TMP_TRIES 64

static void str_free(const struct sp__mem *mem, char **s)
{
	if (*s)
		sp__mem_free(mem, *s, strlen(*s) + 1);
	*s = NULL;
}

/* Opens @path's directory (O_PATH) and copies its last component. */
static int split_path(struct sp__out_file *out, const struct sp__mem *mem,
		      const char *path)
{
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	char *dir;
	size_t dlen;

	if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EISDIR; /* "dir/", ".", "..": not a file name */
	if (strlen(name) > NAME_MAX)
		return -ENAMETOOLONG;
	dlen = !slash ? 1 : slash == path ? 1 : (size_t)(slash - path);
	dir = sp__mem_strndup(mem, !slash ? "." : path, dlen);
	if (!dir)
		return -ENOMEM;
	out->dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	str_free(mem, &dir);
	if (out->dirfd < 0)
		return -errno;
	out->name = sp__mem_strndup(mem, name, strlen(name));
	return out->name ? 0 : -ENOMEM;
}

/* "NAME.old" */
static char *old_name(const struct sp__out_file *out, const struct sp__mem *mem)
{
	size_t n = strlen(out->name);
	char *s = sp__mem_alloc(mem, n + sizeof(OLD_SUFFIX));

	if (s) {
		memcpy(s, out->name, n);
		memcpy(s + n, OLD_SUFFIX, sizeof(OLD_SUFFIX));
	}
	return s;
}

/* Whether NAME holds something that KEEP_OLD moves to NAME.old. */
static bool has_previous(const struct sp__out_file *out)
{
	struct stat st;

	if (fstatat(out->dirfd, out->name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return false;
	/* An empty file is no recording: it must not push out NAME.old. */
	return !S_ISREG(st.st_mode) || st.st_size > 0;
}

/*
 * Whether renaming onto or away from @name would break the sticky-bit
 * rule (a file in /tmp owned by another user): -EPERM now, rather than
 * after the writer started. Root passes; a non-root holder of CAP_FOWNER
 * is refused here although the rename would work.
 */
static int check_sticky(const struct sp__out_file *out, const char *name,
			const struct stat *dir)
{
	struct stat st;
	uid_t me = geteuid();

	if (!(dir->st_mode & S_ISVTX) || me == 0 || dir->st_uid == me)
		return 0;
	if (fstatat(out->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return 0;
	return st.st_uid == me ? 0 : -EPERM;
}

/* A publish that is bound to fail is refused up front. */
static int check_publish(const struct sp__out_file *out,
			 const struct sp__mem *mem, const struct stat *dir)
{
	struct stat st;
	char *old;
	int err = check_sticky(out, out->name, dir);

	if (err || !(out->flags & SP__OUT_KEEP_OLD) || !has_previous(out))
		return err;
	old = old_name(out, mem);
	if (!old)
		return -ENOMEM;
	if (fstatat(out->dirfd, old, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode))
		err = -EISDIR;
	else
		err = check_sticky(out, old, dir);
	str_free(mem, &old);
	return err;
}

/* ".NAME.XXXXXX" (".out.XXXXXX" when NAME is too long for that). */
static void tmp_name(const struct sp__out_file *out, char *buf, size_t size,
		     unsigned attempt)
{
	static const char digits[] = "0123456789abcdefghijklmnopqrstuvwxyz";
	unsigned char rnd[6];
	char sfx[7];
	size_t i;

	if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(rnd)) {
		uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 20) ^
			     (uint64_t)attempt * 0x9e3779b97f4a7c15ull;

		for (i = 0; i < sizeof(rnd); i++, x >>= 8)
			rnd[i] = (unsigned char)x;
	}
	for (i = 0; i < sizeof(rnd); i++)
		sfx[i] = digits[rnd[i] % (sizeof(digits) - 1)];
	sfx[6] = '\0';
	if (strlen(out->name) + 9 <= NAME_MAX)
		snprintf(buf, size, ".%s.%s", out->name, sfx);
	else
		snprintf(buf, size, ".out.%s", sfx);
}

/*
 * Gives the file a fresh temporary name in the directory: a new file
 * (@link false: O_CREAT|O_EXCL) or a link to the unnamed @out->fd.
 */
static int make_tmp(struct sp__out_file *out, const struct sp__mem *mem,
		    bool link)
{
	char name[NAME_MAX + 1], proc[40];
	unsigned i;
	int r = -1;

	for (i = 0; i < TMP_TRIES; i++) {
		tmp_name(out, name, sizeof(name), i);
		if (!link) {
			r = openat(out->dirfd, name,
				   O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
				   FILE_MODE);
			if (r >= 0)
				out->fd = r;
		} else {
			r = linkat(out->fd, "", out->dirfd, name,
				   AT_EMPTY_PATH);
			if (r < 0 && errno != EEXIST) {
				snprintf(proc, sizeof(proc), "/proc/self/fd/%d",
					 out->fd);
				r = linkat(AT_FDCWD, proc, out->dirfd, name,
					   AT_SYMLINK_FOLLOW);
			}
		}
		if (r >= 0 || errno != EEXIST)
			break;
	}
	if (r < 0)
		return -errno;
	out->tmp = sp__mem_strndup(mem, name, strlen(name));
	if (out->tmp)
		return 0;
	unlinkat(out->dirfd, name, 0);
	return -ENOMEM;
}

/* The unnamed file; a named temporary where O_TMPFILE is unsupported. */
static int create_fresh(struct sp__out_file *out, const struct sp__mem *mem)
{
	out->regular = true;
	out->fd = openat(out->dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC,
			 FILE_MODE);
	if (out->fd >= 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return -errno;
	return make_tmp(out, mem, false);
}

/*
 * An existing device, FIFO or socket, or (@follow) what a trusted link
 * leads to; with @nameless also a regular file that has no name to
 * replace (a memfd, a deleted file), emptied first.
 */
static int open_in_place(struct sp__out_file *out, bool follow, bool nameless)
{
	struct stat st;
	int flags = O_WRONLY | O_CLOEXEC | O_NOCTTY | (follow ? 0 : O_NOFOLLOW);

	out->fd = openat(out->dirfd, out->name, flags);
	if (out->fd < 0)
		return errno == ELOOP ? -EAGAIN : -errno; /* now a link */
	if (fstat(out->fd, &st) < 0 || (S_ISREG(st.st_mode) && !nameless) ||
	    (nameless && ftruncate(out->fd, 0) < 0)) {
		/* Not what stat saw a moment ago: let the caller start over. */
		close(out->fd);
		out->fd = -1;
		return -EAGAIN;
	}
	close(out->dirfd);
	out->dirfd = -1;
	out->published = true;
	return 0;
}

/* The kernel's may_follow_link() rule (fs.protected_symlinks = 1). */
static int link_trusted(const struct stat *lst, const struct stat *dir)
{
	if (lst->st_uid == geteuid() || !(dir->st_mode & S_ISVTX) ||
	    !(dir->st_mode & S_IWOTH) || dir->st_uid == lst->st_uid)
		return 0;
	return -ELOOP;
}

/* Links followed before -ELOOP, as the kernel's MAXSYMLINKS. */
#define LINKS_MAX 40

static int open_once(struct sp__out_file *out, const struct sp__mem *mem,
		     const char *path, unsigned links);

/*
 * A trusted link at @path (@out holds its directory and name): a device
 * or FIFO behind it is written in place; a regular file is looked for
 * under the name the link gives, one link at a time (each judged again),
 * and replaced there. What exists but not under that name (/proc/self/fd
 * of a memfd or a deleted file) is written in place.
 */
static int open_link(struct sp__out_file *out, const struct sp__mem *mem,
		     const char *path, unsigned links)
{
	char next[PATH_MAX], target[PATH_MAX];
	const char *slash = strrchr(path, '/');
	size_t dlen = slash ? (size_t)(slash - path) + 1 : 0;
	struct stat st, at;
	ssize_t n;

	if (fstatat(out->dirfd, out->name, &st, 0) < 0)
		return -errno; /* ENOENT: no file is created through links */
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (!S_ISREG(st.st_mode))
		return open_in_place(out, true, false);
	if (links >= LINKS_MAX)
		return -ELOOP;
	n = readlinkat(out->dirfd, out->name, target, sizeof(target));
	if (n < 0)
		return -errno;
	if ((size_t)n >= sizeof(target) ||
	    (target[0] != '/' && dlen + (size_t)n >= sizeof(next)))
		return -ENAMETOOLONG;
	target[n] = '\0';
	if (target[0] == '/')
		dlen = 0; /* absolute: the link's directory does not count */
	memcpy(next, path, dlen);
	memcpy(next + dlen, target, (size_t)n + 1);
	if (lstat(next, &at) < 0 ||
	    (!S_ISLNK(at.st_mode) &&
	     (at.st_dev != st.st_dev || at.st_ino != st.st_ino)))
		return open_in_place(out, true, true);
	close(out->dirfd);
	out->dirfd = -1;
	str_free(mem, &out->name);
	return open_once(out, mem, next, links + 1);
}

/* One look at @path and the matching way to open it (-EAGAIN: raced). */
static int open_once(struct sp__out_file *out, const struct sp__mem *mem,
		     const char *path, unsigned links)
{
	struct stat lst, dir;
	int err = split_path(out, mem, path);

	if (err)
		return err;
	if (fstat(out->dirfd, &dir) < 0)
		return -errno;
	if (fstatat(out->dirfd, out->name, &lst, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISDIR(lst.st_mode))
			return -EISDIR;
		if (S_ISLNK(lst.st_mode)) {
			err = link_trusted(&lst, &dir);
			return err ? err : open_link(out, mem, path, links);
		}
		if (!S_ISREG(lst.st_mode))
			return open_in_place(out, false, false);
	} else if (errno != ENOENT) {
		return -errno; /* EACCES, ...: better say so now */
	}
	err = check_publish(out, mem, &dir);
	return err ? err : create_fresh(out, mem);
}

int sp__out_open(struct sp__out_file *out, const struct sp__mem *mem,
		 const char *path, uint32_t flags)
{
	int err = -EAGAIN, tries;

	memset(out, 0, sizeof(*out));
	out->fd = -1;
	out->dirfd = -1;
	out->flags = flags;
	if (!path || !*path)
		return -ENOENT;
	/* A name that changes kind between lstat and open is looked at again. */
	for (tries = 0; tries < 4 && err == -EAGAIN; tries++) {
		err = open_once(out, mem, path, 0);
		if (err)
			sp__out_close(out, mem);
		out->flags = flags;
	}
	if (!err && !(flags & SP__OUT_AT_COMMIT) &&
	    (err = sp__out_publish(out, mem)) != 0)
		sp__out_close(out, mem);
	return err;
}

/* Steps 2 and 3 of the publish (see the top of the file). */
static int rename_into_place(struct sp__out_file *out,
			     const struct sp__mem *mem)
{
	char *old = NULL;
	int err = 0;

	if ((out->flags & SP__OUT_KEEP_OLD) && has_previous(out)) {
		old = old_name(out, mem);
		if (!old)
			return -ENOMEM;
		if (renameat(out->dirfd, out->name, out->dirfd, old) != 0 &&
		    errno != ENOENT) {
			err = -errno;
			str_free(mem, &old);
			return err;
		}
	}
	if (renameat(out->dirfd, out->tmp, out->dirfd, out->name) != 0) {
		err = -errno;
		if (old)
			renameat(out->dirfd, old, out->dirfd, out->name);
	}
	str_free(mem, &old);
	return err;
}

int sp__out_publish(struct sp__out_file *out, const struct sp__mem *mem)
{
	int err;

	if (out->published)
		return 0;
	if (!out->tmp && (err = make_tmp(out, mem, true)) != 0)
		return err;
	err = rename_into_place(out, mem);
	if (err)
		return err;
	str_free(mem, &out->tmp);
	out->published = true;
	return 0;
}

int sp__out_commit(struct sp__out_file *out, const struct sp__mem *mem)
{
	if (out->published)
		return 0;
	/* Durable before visible: the name never leads to a torn file. */
	if (fdatasync(out->fd) < 0)
		return -errno;
	return sp__out_publish(out, mem);
}

int sp__out_take_fd(struct sp__out_file *out)
{
	int fd = out->fd;

	out->fd = -1;
	return fd;
}

void sp__out_close(struct sp__out_file *out, const struct sp__mem *mem)
{
	if (out->fd >= 0)
		close(out->fd);
	out->fd = -1;
	if (out->tmp && !out->published)
		unlinkat(out->dirfd, out->tmp, 0); /* ours: make_tmp() */
	str_free(mem, &out->tmp);
	str_free(mem, &out->name);
	if (out->dirfd >= 0)
		close(out->dirfd);
	out->dirfd = -1;
	out->published = false;
	out->regular = false;
}
