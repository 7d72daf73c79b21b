/* SPDX-License-Identifier: MIT */
/* Copies of JIT runtimes' perf maps into the spool's side directory, per generation. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stackpulse/error.h>

#include "jit_side.h"
#include "jit_side_names.h"
#include "logging.h"

#define SP__JIT_SIDE_BUF (64u << 10)
#define FILE_MAX (64ull << 20)	 /* as the symbolizer reads (perf_map.c) */
#define TOTAL_MAX (256ull << 20) /* per recording */
#define SOURCE_DIR "/tmp"	 /* where runtimes write perf-<pid>.map */

/*
 * Names this recorder writes: perf-<pid>[@<end>].map and their
 * temporaries, and the GDB JIT names gdbjit-<pid>-<n>.dump (jit_sidecar.c).
 */
static bool ours(const char *name)
{
	size_t n = strlen(name);

	if (strncmp(name, "gdbjit-", 7) == 0)
		return n > 5 && strcmp(name + n - 5, ".dump") == 0;
	if (name[0] == '.')
		name++, n--;
	return strncmp(name, "perf-", 5) == 0 &&
	       ((n > 4 && strcmp(name + n - 4, ".map") == 0) ||
		(n > 4 && strcmp(name + n - 4, ".tmp") == 0));
}

/*
 * A directory this recorder made holds MARKER; only such a directory is
 * emptied of a previous recording's files (a directory of the user's,
 * /tmp itself above all, is never cleaned: its perf-<pid>.map files may
 * be anybody's).
 */
#define MARKER ".stackpulse-jit"

/* Whether the directory at @fd has the marker. */
static bool marked(int fd)
{
	struct stat st;

	return fstatat(fd, MARKER, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	       S_ISREG(st.st_mode);
}

/* Whether @fd is the directory the runtimes write to. */
static bool is_source_dir(int fd)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && stat(SOURCE_DIR, &b) == 0 &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/*
 * Removes a previous recording's files from a marked directory (an
 * emptied one goes too). A directory of the user's with names like ours
 * is refused (-EEXIST), /tmp always (-EINVAL).
 */
static int clean_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	bool others = false, found = false, mine;
	struct dirent *e;
	DIR *d;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (is_source_dir(fd)) {
		close(fd);
		return -EINVAL;
	}
	mine = marked(fd);
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -errno;
	}
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 ||
		    strcmp(e->d_name, "..") == 0 ||
		    strcmp(e->d_name, MARKER) == 0)
			continue;
		found |= ours(e->d_name);
		if (!mine || !ours(e->d_name) ||
		    unlinkat(dirfd(d), e->d_name, 0))
			others = true;
	}
	if (mine && !others)
		unlinkat(dirfd(d), MARKER, 0);
	closedir(d);
	if (!mine)
		return found ? -EEXIST : 0;
	if (!others)
		rmdir(dir);
	return 0;
}

int sp__jit_side_init(struct sp__jit_side *side, const struct sp__mem *mem,
		      const struct sp_logger *logger, const char *dir)
{
	size_t len;
	int err;

	memset(side, 0, sizeof(*side));
	side->mem = mem;
	side->logger = logger;
	side->dirfd = -1;
	sp__vec_init(&side->copied, sizeof(struct sp__jit_side_copy));
	if (!dir)
		return 0;
	len = strlen(dir);
	if (!len)
		return -EINVAL;
	err = clean_dir(dir);
	if (err)
		return err;
	side->dir = sp__mem_alloc(mem, len + 1);
	side->buf = sp__mem_alloc(mem, SP__JIT_SIDE_BUF);
	if (!side->dir || !side->buf) {
		sp__jit_side_fini(side);
		return -ENOMEM;
	}
	memcpy(side->dir, dir, len + 1);
	return 0;
}

void sp__jit_side_fini(struct sp__jit_side *side)
{
	if (side->dirfd >= 0)
		close(side->dirfd);
	if (side->dir)
		sp__mem_free(side->mem, side->dir, strlen(side->dir) + 1);
	sp__mem_free(side->mem, side->buf, side->buf ? SP__JIT_SIDE_BUF : 0);
	sp__vec_fini(&side->copied, side->mem);
	side->dir = NULL;
	side->buf = NULL;
	side->dirfd = -1;
}

/* The record of @pid's last copy (NULL: none, or no memory for a new one). */
static struct sp__jit_side_copy *copy_of(struct sp__jit_side *side, int32_t pid)
{
	struct sp__jit_side_copy c = { .pid = pid };
	size_t i;

	for (i = 0; i < side->copied.len; i++) {
		struct sp__jit_side_copy *e = sp__vec_at(&side->copied, i);

		if (e->pid == pid)
			return e;
	}
	if (sp__vec_push(&side->copied, side->mem, &c))
		return NULL;
	return sp__vec_at(&side->copied, side->copied.len - 1);
}

/* Whether @st is the file the pid's last copy came from, unchanged. */
static bool copied_before(struct sp__jit_side *side, int32_t pid,
			  const struct stat *st)
{
	struct sp__jit_side_copy *c = copy_of(side, pid);
	uint64_t mtime = (uint64_t)st->st_mtim.tv_sec * 1000000000u +
			 (uint64_t)st->st_mtim.tv_nsec;
	bool same;

	if (!c)
		return false;
	same = c->dev == (uint64_t)st->st_dev &&
	       c->ino == (uint64_t)st->st_ino &&
	       c->size == (uint64_t)st->st_size && c->mtime_ns == mtime;
	c->dev = (uint64_t)st->st_dev;
	c->ino = (uint64_t)st->st_ino;
	c->size = (uint64_t)st->st_size;
	c->mtime_ns = mtime;
	return same;
}

int sp__jit_side_open(struct sp__jit_side *side)
{
	int fd;

	if (!side->dir)
		return -ENOENT;
	if (side->dirfd >= 0)
		return 0;
	if (mkdir(side->dir, 0700) && errno != EEXIST)
		return -errno;
	side->dirfd = open(side->dir,
			   O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (side->dirfd < 0)
		return -errno;
	fd = openat(side->dirfd, MARKER,
		    O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd >= 0)
		close(fd);
	return 0;
}

/* Root, ourselves, or the process (while /proc shows it) may own it. */
static bool trusted_owner(const struct stat *st, int32_t pid)
{
	char proc[32];
	struct stat ps;

	if (st->st_uid == 0 || st->st_uid == geteuid())
		return true;
	snprintf(proc, sizeof(proc), "/proc/%d", (int)pid);
	return stat(proc, &ps) == 0 && ps.st_uid == st->st_uid;
}

/* The runtime's file, or -ENOENT when it wrote none. */
static int open_source(int32_t pid, struct stat *st)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), SOURCE_DIR "/perf-%d.map", (int)pid);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return errno == ELOOP ? -EPERM : -errno;
	if (fstat(fd, st) || !S_ISREG(st->st_mode) || !trusted_owner(st, pid)) {
		close(fd);
		return -EPERM;
	}
	if ((uint64_t)st->st_size > FILE_MAX) {
		close(fd);
		return -EFBIG;
	}
	return fd;
}

/* Copies at most @limit bytes (a live runtime may still append). */
static int copy_fd(struct sp__jit_side *side, int in, int out, uint64_t limit)
{
	uint64_t done = 0;
	ssize_t r, w, off;

	while (done < limit) {
		size_t want = limit - done < SP__JIT_SIDE_BUF ?
				      (size_t)(limit - done) :
				      SP__JIT_SIDE_BUF;

		r = read(in, side->buf, want);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return r < 0 ? -errno : 0;
		for (off = 0; off < r; off += w) {
			w = write(out, side->buf + off, (size_t)(r - off));
			if (w < 0 && errno == EINTR)
				w = 0;
			else if (w < 0)
				return -errno;
		}
		done += (uint64_t)r;
		side->bytes += (uint64_t)r;
	}
	return 0;
}

static int save_map(struct sp__jit_side *side, int32_t pid, uint32_t end)
{
	char name[64], tmp[72];
	struct stat st;
	int in, out, err;

	in = open_source(pid, &st);
	if (in < 0)
		return in;
	if (copied_before(side, pid, &st)) {
		close(in);
		return -ENOENT; /* nothing this generation wrote */
	}
	err = side->bytes + (uint64_t)st.st_size > TOTAL_MAX ?
		      -EFBIG :
		      sp__jit_side_open(side);
	if (err) {
		close(in);
		return err;
	}
	sp__jit_side_name(name, sizeof(name), "perf", ".map", pid, end);
	snprintf(tmp, sizeof(tmp), ".%s.tmp", name);
	out = openat(side->dirfd, tmp,
		     O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		     0600);
	err = out < 0 ? -errno : 0;
	if (!err)
		err = copy_fd(side, in, out,
			      FILE_MAX < TOTAL_MAX - side->bytes ?
				      FILE_MAX :
				      TOTAL_MAX - side->bytes);
	if (out >= 0 && close(out) && !err)
		err = -errno;
	if (!err && renameat(side->dirfd, tmp, side->dirfd, name))
		err = -errno;
	if (err && out >= 0)
		unlinkat(side->dirfd, tmp, 0);
	close(in);
	return err;
}

void sp__jit_side_save(struct sp__jit_side *side, int32_t pid, uint32_t end)
{
	int err;

	if (!side->dir)
		return;
	err = save_map(side, pid, end);
	if (err == -ENOENT)
		return;
	if (err) {
		side->failed++;
		sp__log(side->logger, SP_LOG_WARN,
			"perf map of pid %d not kept in %s: %s", (int)pid,
			side->dir, sp_strerror(err));
		return;
	}
	side->saved++;
}
