/* SPDX-License-Identifier: MIT */
/* cgroup v2 targets: opening the directory, listing its processes. */

/*
 * perf binds a cgroup event to an open directory of the cgroup
 * filesystem (PERF_FLAG_PID_CGROUP), and counts tasks of that cgroup and
 * of every cgroup below it. The member list read at open therefore walks
 * the subtree: each directory's cgroup.procs holds only its own
 * processes. Only cgroup2 is accepted, so a mistyped path to an ordinary
 * directory fails at open instead of recording nothing. The walk is
 * depth-limited: the tree is the caller's, not trusted to be shallow.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "system.h"

#define CGROUP_DEPTH_MAX 32

int sp__cgroup_open(const char *path)
{
	struct statfs sf;
	int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstatfs(fd, &sf) || sf.f_type != CGROUP2_SUPER_MAGIC) {
		close(fd);
		return -EINVAL;
	}
	return fd;
}

static int read_procs(const struct sp__mem *mem, int dirfd,
		      struct sp__vec *pids)
{
	int fd = openat(dirfd, "cgroup.procs", O_RDONLY | O_CLOEXEC), pid;
	FILE *f;
	int err = 0;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno; /* removed meanwhile */
	f = fdopen(fd, "r");
	if (!f) {
		err = -errno;
		close(fd);
		return err;
	}
	while (!err && fscanf(f, "%d", &pid) == 1)
		if (pid > 0)
			err = sp__vec_push(pids, mem, &pid);
	fclose(f);
	return err;
}

static int walk(const struct sp__mem *mem, int dirfd, struct sp__vec *pids,
		int depth)
{
	struct dirent *de;
	DIR *d;
	int err = read_procs(mem, dirfd, pids), fd;

	if (err || depth == CGROUP_DEPTH_MAX)
		return err;
	fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0); /* closedir closes it */
	d = fd < 0 ? NULL : fdopendir(fd);
	if (!d) {
		if (fd >= 0)
			close(fd);
		return -errno;
	}
	rewinddir(d);
	while (!err && (de = readdir(d)) != NULL) {
		int sub;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		sub = openat(dirfd, de->d_name,
			     O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (sub < 0)
			continue; /* removed meanwhile */
		err = walk(mem, sub, pids, depth + 1);
		close(sub);
	}
	closedir(d);
	return err;
}

int sp__cgroup_pids(const struct sp__mem *mem, int dirfd, struct sp__vec *pids)
{
	return walk(mem, dirfd, pids, 0);
}
