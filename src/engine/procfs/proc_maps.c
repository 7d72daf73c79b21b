/* SPDX-License-Identifier: MIT */
/* Parsing /proc/PID/maps lines, reading small /proc files, walking tasks. */

/*
 * A maps line is "start-end perms offset major:minor inode   path". The
 * target controls the path (file names may hold spaces, and a name may
 * end in " (deleted)"), so the path is everything after the run of
 * spaces that follows the inode, taken verbatim. Numbers are parsed by
 * hand, with overflow checks, instead of sscanf. The kernel writes a
 * newline in a path as the four characters "\012" (seq_file_path()'s
 * only escape), which sp__maps_unescape_path() turns back into the byte
 * the file system and perf's MMAP2 records have.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stackpulse/error.h>

#include "proc_maps.h"

struct lcur {
	const char *p;
	const char *end;
};

static int hexval(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

static int num(struct lcur *c, unsigned base, uint64_t *v)
{
	const char *start = c->p;
	int d;

	*v = 0;
	while (c->p < c->end && (d = hexval(*c->p)) >= 0 &&
	       (unsigned)d < base) {
		if (*v > (UINT64_MAX - (uint64_t)d) / base)
			return SP_ECORRUPT;
		*v = *v * base + (uint64_t)d;
		c->p++;
	}
	return c->p == start ? SP_ECORRUPT : 0;
}

static int expect(struct lcur *c, char ch)
{
	if (c->p >= c->end || *c->p != ch)
		return SP_ECORRUPT;
	c->p++;
	return 0;
}

static int parse_perms(struct lcur *c, char perms[5])
{
	if (c->end - c->p < 4)
		return SP_ECORRUPT;
	memcpy(perms, c->p, 4);
	perms[4] = '\0';
	c->p += 4;
	return 0;
}

static int parse_dev(struct lcur *c, struct sp__maps_entry *e)
{
	uint64_t maj, min;

	if (num(c, 16, &maj) || expect(c, ':') || num(c, 16, &min))
		return SP_ECORRUPT;
	if (maj > UINT32_MAX || min > UINT32_MAX)
		return SP_ECORRUPT;
	e->dev_major = (uint32_t)maj;
	e->dev_minor = (uint32_t)min;
	return 0;
}

int sp__maps_parse_line(const char *line, size_t len,
			struct sp__maps_entry *out)
{
	struct lcur c = { line, line + len };
	struct sp__maps_entry e;

	memset(&e, 0, sizeof(e));
	if (num(&c, 16, &e.start) || expect(&c, '-') || num(&c, 16, &e.end) ||
	    expect(&c, ' ') || parse_perms(&c, e.perms) || expect(&c, ' ') ||
	    num(&c, 16, &e.offset) || expect(&c, ' ') || parse_dev(&c, &e) ||
	    expect(&c, ' ') || num(&c, 10, &e.inode))
		return SP_ECORRUPT;
	if (e.end <= e.start)
		return SP_ECORRUPT;
	if (c.p < c.end && *c.p != ' ')
		return SP_ECORRUPT;
	while (c.p < c.end && *c.p == ' ')
		c.p++;
	e.path = c.p;
	e.path_len = (size_t)(c.end - c.p);
	if (memchr(e.path, '\0', e.path_len))
		return SP_ECORRUPT;
	*out = e;
	return 0;
}

size_t sp__maps_unescape_path(char *path, size_t len)
{
	size_t i, n = 0;

	for (i = 0; i < len; i++) {
		if (len - i >= 4 && memcmp(path + i, "\\012", 4) == 0) {
			path[n++] = '\n';
			i += 3;
		} else {
			path[n++] = path[i];
		}
	}
	return n;
}

int sp__maps_is_tracked(const struct sp__maps_entry *e)
{
	if (e->perms[2] != 'x')
		return 0;
	/* Anonymous code (JIT): tracked as MMAP2 reports it, "//anon". */
	if (e->path_len == 0)
		return 1;
	/* Pseudo files: only [vdso] has unwind data we can read. */
	if (e->path[0] == '[')
		return e->path_len == 6 && memcmp(e->path, "[vdso]", 6) == 0;
	return 1;
}

ssize_t sp__proc_read(const char *path, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n;
	int fd;

	if (cap == 0)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (len + 1 < cap) {
		n = read(fd, buf + len, cap - 1 - len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			n = -errno;
			close(fd);
			return n;
		}
		if (n == 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return (ssize_t)len;
}

/* The comm field may hold ')' and spaces: fields start after the last ')'. */
int sp__proc_stat(int32_t pid, int32_t tid, uint64_t *starttime, char *state)
{
	char path[64], buf[1024];
	const char *p;
	ssize_t n;
	int field;

	if (tid > 0)
		snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", pid, tid);
	else
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	n = sp__proc_read(path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ' || !p[2])
		return SP_ECORRUPT;
	if (state)
		*state = p[2];
	for (field = 2; *p && field < 22; p++)
		field += *p == ' ';
	if (field != 22 || !starttime)
		return field == 22 ? 0 : SP_ECORRUPT;
	{
		struct lcur c = { p, buf + n };

		return num(&c, 10, starttime);
	}
}

int32_t sp__proc_tgid(int32_t pid)
{
	char path[64], buf[4096];
	const char *p;
	struct lcur c;
	uint64_t v;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	n = sp__proc_read(path, buf, sizeof(buf));
	if (n < 0)
		return (int32_t)n;
	p = strstr(buf, "\nTgid:");
	if (!p)
		return SP_ECORRUPT;
	p += 6;
	while (*p == ' ' || *p == '\t')
		p++;
	c.p = p;
	c.end = buf + n;
	if (num(&c, 10, &v) || v > INT32_MAX)
		return SP_ECORRUPT;
	return (int32_t)v;
}

int sp__proc_each_task(int32_t pid, int (*fn)(void *ctx, int32_t tid),
		       void *ctx)
{
	char path[64];
	struct dirent *de;
	DIR *d;
	int err = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return errno == ENOENT ? -ESRCH : -errno;
	while (!err && (de = readdir(d)) != NULL) {
		int tid = atoi(de->d_name);

		if (tid > 0) /* "." and ".." read as 0 */
			err = fn(ctx, tid);
	}
	closedir(d);
	return err;
}
