/* SPDX-License-Identifier: MIT */
/* A recording's output file: unnamed until published, PATH.old kept. */

/*
 * See spool_file.h for the life of the file. Publishing is ordered so that
 * a failure at any step leaves PATH as it was:
 *
 *   1. the unnamed file gets a temporary name ".NAME.XXXXXX" (linkat);
 *   2. KEEP_OLD: PATH is renamed to PATH.old (replacing an older one);
 *   3. the temporary name is renamed over PATH;
 *   if 3 fails, 2 is undone (PATH.old back to PATH).
 *
 * Linking an O_TMPFILE inode by its fd (AT_EMPTY_PATH) needs
 * CAP_DAC_READ_SEARCH on some kernels; everyone may link it through
 * /proc/self/fd/N with AT_SYMLINK_FOLLOW, the documented alternative.
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

#include "sink_internal.h"
#include "spool_file.h"

#define OLD_SUFFIX ".old"
#define TMP_TRIES 64

static void str_free(const struct sp__mem *mem, char *s)
{
	if (s)
		sp__mem_free(mem, s, strlen(s) + 1);
}

/* Opens PATH's directory (O_PATH) and copies its last component. */
static int split_path(struct sp__spool_file *f, const char *path)
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
	dir = sp__mem_strndup(&f->mem, !slash ? "." : path, dlen);
	if (!dir)
		return -ENOMEM;
	f->dirfd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	str_free(&f->mem, dir);
	if (f->dirfd < 0)
		return -errno;
	f->name = sp__mem_strndup(&f->mem, name, strlen(name));
	return f->name ? 0 : -ENOMEM;
}

/* "NAME.old" */
static char *old_name(const struct sp__spool_file *f)
{
	size_t n = strlen(f->name);
	char *s = sp__mem_alloc(&f->mem, n + sizeof(OLD_SUFFIX));

	if (s) {
		memcpy(s, f->name, n);
		memcpy(s + n, OLD_SUFFIX, sizeof(OLD_SUFFIX));
	}
	return s;
}

/* Whether PATH holds something that KEEP_OLD moves to PATH.old. */
static bool has_previous(const struct sp__spool_file *f)
{
	struct stat st;

	if (fstatat(f->dirfd, f->name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return false;
	/* An empty file is no recording: it must not push out PATH.old. */
	return !S_ISREG(st.st_mode) || st.st_size > 0;
}

/*
 * Whether renaming onto or away from @name would break the sticky-bit
 * rule (a file in /tmp owned by another user): -EPERM now, rather than
 * at the first poll after the target already runs. Root passes; a non-root
 * holder of CAP_FOWNER is refused here although the rename would work.
 */
static int check_sticky(const struct sp__spool_file *f, const char *name,
			const struct stat *dir)
{
	struct stat st;
	uid_t me = geteuid();

	if (!(dir->st_mode & S_ISVTX) || me == 0 || dir->st_uid == me)
		return 0;
	if (fstatat(f->dirfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
		return 0;
	return st.st_uid == me ? 0 : -EPERM;
}

/* A publish that is bound to fail is refused up front. */
static int check_publish(const struct sp__spool_file *f)
{
	struct stat st, dir;
	char *old;
	int err;

	if (fstat(f->dirfd, &dir) != 0)
		return -errno;
	err = check_sticky(f, f->name, &dir);
	if (err || !(f->flags & SP__SPOOL_KEEP_OLD) || !has_previous(f))
		return err;
	old = old_name(f);
	if (!old)
		return -ENOMEM;
	if (fstatat(f->dirfd, old, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode))
		err = -EISDIR;
	else
		err = check_sticky(f, old, &dir);
	str_free(&f->mem, old);
	return err;
}

/* ".NAME.XXXXXX" (".spool.XXXXXX" when NAME is too long for that). */
static void tmp_name(const struct sp__spool_file *f, char *buf, size_t size,
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
	if (strlen(f->name) + 9 <= NAME_MAX)
		snprintf(buf, size, ".%s.%s", f->name, sfx);
	else
		snprintf(buf, size, ".spool.%s", sfx);
}

/*
 * Gives the file a fresh temporary name in the directory: a new file
 * (@link false: O_CREAT|O_EXCL) or a link to the unnamed @f->fd.
 */
static int make_tmp(struct sp__spool_file *f, bool link)
{
	char name[NAME_MAX + 1], proc[40];
	unsigned i;
	int r = -1;

	for (i = 0; i < TMP_TRIES; i++) {
		tmp_name(f, name, sizeof(name), i);
		if (!link) {
			r = openat(f->dirfd, name,
				   O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC,
				   SP__SPOOL_MODE);
			if (r >= 0)
				f->fd = r;
		} else {
			r = linkat(f->fd, "", f->dirfd, name, AT_EMPTY_PATH);
			if (r < 0 && errno != EEXIST) {
				snprintf(proc, sizeof(proc), "/proc/self/fd/%d",
					 f->fd);
				r = linkat(AT_FDCWD, proc, f->dirfd, name,
					   AT_SYMLINK_FOLLOW);
			}
		}
		if (r >= 0 || errno != EEXIST)
			break;
	}
	if (r < 0)
		return -errno;
	f->tmp = sp__mem_strndup(&f->mem, name, strlen(name));
	if (f->tmp)
		return 0;
	unlinkat(f->dirfd, name, 0);
	return -ENOMEM;
}

/* The unnamed file; a named temporary where O_TMPFILE is unsupported. */
static int create_staged(struct sp__spool_file *f)
{
	f->fd = openat(f->dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC,
		       SP__SPOOL_MODE);
	if (f->fd >= 0)
		return 0;
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		return -errno;
	return make_tmp(f, false);
}

/* An existing non-regular PATH: written in place, or -EISDIR. */
static int open_direct(struct sp__spool_file *f, const struct stat *st)
{
	if (S_ISDIR(st->st_mode))
		return -EISDIR;
	f->fd = openat(f->dirfd, f->name, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (f->fd < 0)
		return -errno;
	f->direct = true;
	f->published = true;
	return 0;
}

/* What PATH is now: direct output, the staged file, or an error. */
static int open_output(struct sp__spool_file *f)
{
	struct stat st;
	int err;

	if (fstatat(f->dirfd, f->name, &st, 0) == 0) {
		if (!S_ISREG(st.st_mode))
			return open_direct(f, &st);
	} else if (errno != ENOENT) {
		return -errno; /* EACCES, ELOOP, ...: better say so now */
	}
	err = check_publish(f);
	return err ? err : create_staged(f);
}

int sp__spool_file_open(const char *path, uint32_t flags,
			const struct sp__mem *mem, struct sp__spool_file *f)
{
	int err;

	memset(f, 0, sizeof(*f));
	f->mem = *mem;
	f->fd = -1;
	f->dirfd = -1;
	f->flags = flags;
	err = path && *path ? split_path(f, path) : -EINVAL;
	if (!err)
		err = open_output(f);
	if (err) {
		if (f->fd >= 0)
			close(f->fd);
		sp__spool_file_close(f);
	}
	return err;
}

/* Steps 2 and 3 of the publish (see the top of the file). */
static int rename_into_place(struct sp__spool_file *f)
{
	char *old = NULL;
	int err = 0;

	if ((f->flags & SP__SPOOL_KEEP_OLD) && has_previous(f)) {
		old = old_name(f);
		if (!old)
			return -ENOMEM;
		if (renameat(f->dirfd, f->name, f->dirfd, old) != 0 &&
		    errno != ENOENT) {
			err = -errno;
			str_free(&f->mem, old);
			return err;
		}
	}
	if (renameat(f->dirfd, f->tmp, f->dirfd, f->name) != 0) {
		err = -errno;
		if (old)
			renameat(f->dirfd, old, f->dirfd, f->name);
	}
	str_free(&f->mem, old);
	return err;
}

/*
 * The new file is never more open than the one it replaces: a private
 * 0600 file (mkstemp's) stays private. Best effort, before the rename.
 */
static void narrow_mode(const struct sp__spool_file *f)
{
	struct stat old, cur;

	if (fstatat(f->dirfd, f->name, &old, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(old.st_mode) && fstat(f->fd, &cur) == 0 &&
	    (cur.st_mode & ~old.st_mode & 07777))
		fchmod(f->fd, cur.st_mode & old.st_mode & 07777);
}

int sp__spool_file_publish(struct sp__spool_file *f)
{
	int err;

	if (f->published)
		return 0;
	narrow_mode(f);
	if (!f->tmp && (err = make_tmp(f, true)) != 0)
		return err;
	err = rename_into_place(f);
	if (err)
		return err;
	str_free(&f->mem, f->tmp);
	f->tmp = NULL;
	f->published = true;
	return 0;
}

int sp__spool_file_sink(struct sp__spool_file *f, bool uring,
			const struct sp_sink_uring_opts *uo,
			const struct sp_allocator *allocator,
			struct sp_sink **out)
{
	int err;

	if (f->direct || !uring)
		err = sp__sink_new_fd_owned(f->fd, !f->direct, allocator, out);
	else
		err = sp_sink_new_uring_fd(f->fd, SP_SINK_CLOSE_FD, uo,
					   allocator, out);
	if (err) {
		close(f->fd);
		f->fd = -1;
	}
	/* Else the sink owns the fd (it stays open until the publish). */
	return err;
}

void sp__spool_file_close(struct sp__spool_file *f)
{
	if (f->tmp && !f->published)
		unlinkat(f->dirfd, f->tmp, 0);
	str_free(&f->mem, f->tmp);
	str_free(&f->mem, f->name);
	if (f->dirfd >= 0)
		close(f->dirfd);
	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->dirfd = -1;
}
