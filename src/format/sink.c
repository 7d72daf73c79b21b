/* SPDX-License-Identifier: MIT */
/* Byte sinks: generic handle, memory, fd, file and callback sinks. */

/*
 * A sink is { ops, ctx } (sink_internal.h). The writer hands it whole
 * chunks of complete records; a sink never sees a record split in two.
 *
 *   memory    growable buffer, read back with sp_sink_memory_data()
 *   fd        write(2) loop at the current file position; retries EINTR
 *             and short writes; remembers how far a failed write got so
 *             the writer's retry of the same chunk does not duplicate it
 *   file      an fd sink that owns a file out_file.c created (a fresh
 *             0600 inode, or a device written as it is); flush =
 *             fdatasync for regular files; the atomic variant renames
 *             its temporary file into place at finish
 *   callback  the caller's table, used as is
 *   zstd      sink_zstd.c
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "opts.h"
#include "out_file.h"
#include "sink_internal.h"

int sp__sink_opts_load(const struct sp_sink_opts *user, uint32_t flags,
		       struct sp_sink_opts *o)
{
	int err = sp__opts_load(user, user ? user->size : 0, o, sizeof(*o));

	if (err)
		return err;
	o->size = sizeof(*o);
	return o->flags & ~flags ? -EINVAL : 0;
}

int sp__sink_new(const struct sp_sink_ops *ops, void *ctx,
		 const struct sp__mem *mem, struct sp_sink **out)
{
	struct sp_sink *sink = sp__mem_calloc(mem, 1, sizeof(*sink));

	if (!sink)
		return -ENOMEM;
	sink->ops = ops;
	sink->ctx = ctx;
	sink->mem = *mem;
	*out = sink;
	return 0;
}

SP_API int sp_sink_write(struct sp_sink *sink, const void *buf, size_t len)
{
	int err;

	if (!sink || (!buf && len))
		return -EINVAL;
	if (sink->finished)
		return -EPIPE;
	if (len == 0)
		return 0;
	err = sink->ops->write(sink->ctx, buf, len);
	return err < 0 ? err : 0;
}

SP_API int sp_sink_flush(struct sp_sink *sink)
{
	int err;

	if (!sink)
		return -EINVAL;
	if (sink->finished || !sink->ops->flush)
		return 0;
	err = sink->ops->flush(sink->ctx);
	return err < 0 ? err : 0;
}

SP_API int sp_sink_finish(struct sp_sink *sink)
{
	int err = 0;

	if (!sink)
		return -EINVAL;
	if (sink->finished)
		return 0;
	if (sink->ops->finish)
		err = sink->ops->finish(sink->ctx);
	if (err < 0)
		return err;
	sink->finished = true;
	return 0;
}

SP_API void sp_sink_free(struct sp_sink *sink)
{
	struct sp__mem mem;

	if (!sink)
		return;
	if (sink->ops->free)
		sink->ops->free(sink->ctx);
	mem = sink->mem;
	sp__mem_free(&mem, sink, sizeof(*sink));
}

/* ---- callback sink ---- */

SP_API int sp_sink_new_callback(const struct sp_sink_ops *ops, void *ctx,
				const struct sp_sink_opts *opts,
				struct sp_sink **out)
{
	struct sp_sink_opts o;
	struct sp__mem mem;
	int err;

	if (!ops || !ops->write || !out)
		return -EINVAL;
	err = sp__sink_opts_load(opts, 0, &o);
	if (err)
		return err;
	sp__mem_init(&mem, o.allocator);
	return sp__sink_new(ops, ctx, &mem, out);
}

/* ---- memory sink ---- */

struct memory_sink {
	struct sp__mem mem;
	unsigned char *data;
	size_t len;
	size_t cap;
};

static int memory_grow(struct memory_sink *m, size_t want)
{
	size_t cap = m->cap ? m->cap : 4096;
	void *data;

	while (cap < want) {
		if (cap > SIZE_MAX / 2)
			return -ENOMEM;
		cap *= 2;
	}
	data = sp__mem_realloc(&m->mem, m->data, m->cap, cap);
	if (!data)
		return -ENOMEM;
	m->data = data;
	m->cap = cap;
	return 0;
}

static int memory_write(void *ctx, const void *buf, size_t len)
{
	struct memory_sink *m = ctx;
	int err;

	if (len > SIZE_MAX - m->len)
		return -ENOMEM;
	if (m->len + len > m->cap) {
		err = memory_grow(m, m->len + len);
		if (err)
			return err;
	}
	memcpy(m->data + m->len, buf, len);
	m->len += len;
	return 0;
}

static void memory_free(void *ctx)
{
	struct memory_sink *m = ctx;
	struct sp__mem mem = m->mem;

	sp__mem_free(&mem, m->data, m->cap);
	sp__mem_free(&mem, m, sizeof(*m));
}

static const struct sp_sink_ops memory_ops = {
	.write = memory_write,
	.free = memory_free,
};

SP_API int sp_sink_new_memory(const struct sp_sink_opts *opts,
			      struct sp_sink **out)
{
	struct memory_sink *m;
	struct sp_sink_opts o;
	struct sp__mem mem;
	int err;

	if (!out)
		return -EINVAL;
	err = sp__sink_opts_load(opts, 0, &o);
	if (err)
		return err;
	sp__mem_init(&mem, o.allocator);
	m = sp__mem_calloc(&mem, 1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->mem = mem;
	err = sp__sink_new(&memory_ops, m, &mem, out);
	if (err)
		sp__mem_free(&mem, m, sizeof(*m));
	return err;
}

SP_API int sp_sink_memory_data(const struct sp_sink *sink, const void **data,
			       size_t *len)
{
	const struct memory_sink *m;

	if (!sink || sink->ops != &memory_ops || !data || !len)
		return -EINVAL;
	m = sink->ctx;
	*data = m->data;
	*len = m->len;
	return 0;
}

/* ---- fd and file sinks ---- */

struct fd_sink {
	struct sp__mem mem;
	int fd;
	uint32_t flags;
	bool sync;     /* flush = fdatasync: a regular file of ours */
	bool is_file;  /* @out is ours (sp_sink_open_file*) */
	size_t resume; /* bytes of the last failed write already written */
	struct sp__out_file out;
};

static int fd_write(void *ctx, const void *buf, size_t len)
{
	struct fd_sink *s = ctx;
	const unsigned char *p = buf;
	size_t done = s->resume < len ? s->resume : 0;
	ssize_t n;

	/*
	 * A failed write is always offered again from its first byte (see
	 * sink_internal.h), so skip what already reached the fd instead of
	 * writing it twice.
	 */
	s->resume = 0;
	while (done < len) {
		n = write(s->fd, p + done, len - done);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		s->resume = done;
		return n < 0 ? -errno : -EIO;
	}
	return 0;
}

static int fd_flush(void *ctx)
{
	struct fd_sink *s = ctx;

	if (s->sync && fdatasync(s->fd) < 0)
		return -errno;
	return 0;
}

/* An atomic file takes its name here (a no-op for the others). */
static int file_finish(void *ctx)
{
	struct fd_sink *s = ctx;

	return sp__out_commit(&s->out, &s->mem);
}

static void fd_free(void *ctx)
{
	struct fd_sink *s = ctx;
	struct sp__mem mem = s->mem;

	if (s->is_file)
		sp__out_close(&s->out, &mem);
	else if (s->flags & SP_SINK_CLOSE_FD)
		close(s->fd);
	sp__mem_free(&mem, s, sizeof(*s));
}

static const struct sp_sink_ops fd_ops = {
	.write = fd_write,
	.flush = fd_flush,
	.free = fd_free,
};

static const struct sp_sink_ops file_ops = {
	.write = fd_write,
	.flush = fd_flush,
	.finish = file_finish,
	.free = fd_free,
};

static struct fd_sink *fd_sink_alloc(const struct sp_allocator *allocator)
{
	struct fd_sink *s;
	struct sp__mem mem;

	sp__mem_init(&mem, allocator);
	s = sp__mem_calloc(&mem, 1, sizeof(*s));
	if (!s)
		return NULL;
	s->mem = mem;
	s->fd = -1;
	s->out.fd = -1;
	return s;
}

/* An fd sink on @fd (closed when freed with SP_SINK_CLOSE_FD). */
static int fd_sink_new(int fd, uint32_t flags, bool sync,
		       const struct sp_allocator *allocator,
		       struct sp_sink **out)
{
	struct fd_sink *s = fd_sink_alloc(allocator);
	int err;

	if (!s)
		return -ENOMEM;
	s->fd = fd;
	s->flags = flags;
	s->sync = sync;
	err = sp__sink_new(&fd_ops, s, &s->mem, out);
	if (err)
		sp__mem_free(&s->mem, s, sizeof(*s));
	return err;
}

SP_API int sp_sink_new_fd(int fd, const struct sp_sink_opts *opts,
			  struct sp_sink **out)
{
	struct sp_sink_opts o;
	int err;

	if (fd < 0 || !out)
		return -EINVAL;
	err = sp__sink_opts_load(opts, SP_SINK_CLOSE_FD, &o);
	if (err)
		return err;
	return fd_sink_new(fd, o.flags, false, o.allocator, out);
}

int sp__sink_create_file(const struct sp__mem *mem, const char *path)
{
	struct sp__out_file f;
	int err = sp__out_open(&f, mem, path, SP__OUT_NOW);
	int fd = err ? err : sp__out_take_fd(&f);

	if (!err)
		sp__out_close(&f, mem);
	return fd;
}

static int file_sink_open(const char *path, uint32_t when,
			  const struct sp_sink_opts *opts, struct sp_sink **out)
{
	struct sp_sink_opts o;
	struct fd_sink *s;
	int err;

	if (!path || !out)
		return -EINVAL;
	/* Refused options never create (or replace) @path. */
	err = sp__sink_opts_load(opts, 0, &o);
	if (err)
		return err;
	s = fd_sink_alloc(o.allocator);
	if (!s)
		return -ENOMEM;
	err = sp__out_open(&s->out, &s->mem, path, when);
	if (err) {
		sp__mem_free(&s->mem, s, sizeof(*s));
		return err;
	}
	s->fd = s->out.fd;
	s->is_file = true;
	/* fdatasync fails with EINVAL on devices and FIFOs: files only. */
	s->sync = s->out.regular;
	err = sp__sink_new(&file_ops, s, &s->mem, out);
	if (err)
		fd_free(s);
	return err;
}

int sp__sink_new_fd_owned(int fd, bool sync,
			  const struct sp_allocator *allocator,
			  struct sp_sink **out)
{
	return fd_sink_new(fd, SP_SINK_CLOSE_FD, sync, allocator, out);
}

SP_API int sp_sink_open_file(const char *path, const struct sp_sink_opts *opts,
			     struct sp_sink **out)
{
	return file_sink_open(path, SP__OUT_NOW, opts, out);
}

SP_API int sp_sink_open_file_atomic(const char *path,
				    const struct sp_sink_opts *opts,
				    struct sp_sink **out)
{
	return file_sink_open(path, SP__OUT_AT_COMMIT, opts, out);
}
