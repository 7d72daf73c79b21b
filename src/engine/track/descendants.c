/* SPDX-License-Identifier: MIT */
/* Listing the descendants of a process from /proc (recovery). */

/*
 * In children mode a FORK record is how a new process becomes tracked. A
 * loss batch may have taken one with it, so the recovery sweep walks the
 * process tree below every tracked process (children::
 * discover_all_descendants of stackpulse, features §1.12) and adopts what
 * it does not know (recorder/discover.c). The walk follows
 * /proc/ROOT/task/TID/children down, or, without CONFIG_PROC_CHILDREN,
 * the parent pid of every /proc/PID/stat; it lists parents before their
 * children and at most SP__DESCENDANTS_MAX per root.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "descendants.h"
#include "proc_maps.h"

#define BUF_BYTES (64u << 10)

static bool listed(const struct sp__vec *out, int32_t pid)
{
	size_t i;

	for (i = 0; i < out->len; i++)
		if (((const struct sp__desc *)sp__vec_at(out, i))->pid == pid)
			return true;
	return false;
}

static int push(const struct sp__mem *mem, struct sp__vec *out, int32_t pid,
		int32_t ppid, int32_t root)
{
	struct sp__desc d = { pid, ppid };

	if (pid <= 0 || pid == root || listed(out, pid) ||
	    out->len >= SP__DESCENDANTS_MAX)
		return 0;
	return sp__vec_push(out, mem, &d);
}

/* Adds the pids of one children file ("1 2 3 ") as children of @ppid. */
static int add_children(const struct sp__mem *mem, const char *text,
			int32_t ppid, int32_t root, struct sp__vec *out)
{
	const char *p = text;
	char *end;
	long v;
	int err = 0;

	while (!err && *p) {
		v = strtol(p, &end, 10);
		if (end == p)
			break;
		p = end;
		err = push(mem, out, (int32_t)v, ppid, root);
	}
	return err;
}

struct children_walk {
	const struct sp__mem *mem;
	int32_t pid;
	int32_t root;
	char *buf; /* BUF_BYTES */
	struct sp__vec *out;
};

static int thread_children(void *ctx, int32_t tid)
{
	const struct children_walk *w = ctx;
	char path[96];

	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", w->pid, tid);
	/* A thread that exited meanwhile has nothing to add. */
	if (sp__proc_read(path, w->buf, BUF_BYTES) < 0)
		return 0;
	return add_children(w->mem, w->buf, w->pid, w->root, w->out);
}

/* The children of every thread of @pid; -ESRCH when @pid is gone. */
static int children_of(const struct sp__mem *mem, int32_t pid, int32_t root,
		       char *buf, struct sp__vec *out)
{
	struct children_walk w = { mem, pid, root, buf, out };

	return sp__proc_each_task(pid, thread_children, &w);
}

/* Breadth-first through children files; parents before children. */
static int list_by_children(const struct sp__mem *mem, int32_t root, char *buf,
			    struct sp__vec *out)
{
	size_t first = out->len, i;
	int err = children_of(mem, root, root, buf, out);

	for (i = first; !err && i < out->len; i++) {
		int32_t pid = ((struct sp__desc *)sp__vec_at(out, i))->pid;

		err = children_of(mem, pid, root, buf, out);
		if (err == -ESRCH)
			err = 0; /* exited meanwhile; its children moved on */
	}
	return err;
}

/* The parent pid (field 4) of /proc/PID/stat, or -errno. */
static int32_t stat_ppid(int32_t pid, char *buf)
{
	char path[64];
	const char *p;
	ssize_t n;
	long v;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	n = sp__proc_read(path, buf, 1024);
	if (n < 0)
		return (int32_t)n;
	p = strrchr(buf, ')'); /* comm may hold spaces and parentheses */
	if (!p || strlen(p) < 5)
		return -EINVAL;
	v = strtol(p + 4, NULL, 10);
	return v > 0 ? (int32_t)v : -EINVAL;
}

/* Every process of /proc with its parent, into @all (struct sp__desc). */
static int scan_all(const struct sp__mem *mem, char *buf, struct sp__vec *all)
{
	struct sp__desc d;
	struct dirent *de;
	DIR *dir = opendir("/proc");
	int err = 0;

	if (!dir)
		return -errno;
	while (!err && (de = readdir(dir)) != NULL) {
		d.pid = atoi(de->d_name);
		if (d.pid <= 0)
			continue;
		d.ppid = stat_ppid(d.pid, buf);
		if (d.ppid > 0)
			err = sp__vec_push(all, mem, &d);
	}
	closedir(dir);
	return err;
}

/* Appends the processes of @all whose parent is @parent. */
static int children_in(const struct sp__mem *mem, const struct sp__vec *all,
		       int32_t parent, int32_t root, struct sp__vec *out)
{
	size_t j;
	int err = 0;

	for (j = 0; !err && j < all->len; j++) {
		const struct sp__desc *d = sp__vec_at(all, j);

		if (d->ppid == parent)
			err = push(mem, out, d->pid, parent, root);
	}
	return err;
}

/* Breadth-first through the parent pids of every /proc/PID/stat. */
static int list_by_stat(const struct sp__mem *mem, int32_t root, char *buf,
			struct sp__vec *out)
{
	struct sp__vec all;
	size_t i = out->len;
	int err;

	sp__vec_init(&all, sizeof(struct sp__desc));
	err = scan_all(mem, buf, &all);
	if (!err)
		err = children_in(mem, &all, root, root, out);
	for (; !err && i < out->len; i++)
		err = children_in(mem, &all,
				  ((struct sp__desc *)sp__vec_at(out, i))->pid,
				  root, out);
	sp__vec_fini(&all, mem);
	return err;
}

int sp__descendants_list(const struct sp__mem *mem, int32_t root,
			 bool scan_stat, struct sp__vec *out)
{
	char *buf, path[64];
	int err;

	snprintf(path, sizeof(path), "/proc/%d", root);
	if (access(path, F_OK))
		return -ESRCH;
	buf = sp__mem_alloc(mem, BUF_BYTES);
	if (!buf)
		return -ENOMEM;
	/* Children files need CONFIG_PROC_CHILDREN. */
	if (!scan_stat && access("/proc/thread-self/children", F_OK) == 0)
		err = list_by_children(mem, root, buf, out);
	else
		err = list_by_stat(mem, root, buf, out);
	sp__mem_free(mem, buf, BUF_BYTES);
	return err;
}
