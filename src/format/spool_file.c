/* SPDX-License-Identifier: MIT */
/* The Recorder's spool file: an output file and its sink, named at publish. */

/*
 * Inline recording keeps the plain fd sink; threaded recording writes
 * through io_uring, so the thread that orders and encodes never waits in
 * write(2). Explicit flushes are durable (fdatasync) in both. The sink
 * gets its own descriptor: the file keeps one to publish the name by.
 */
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include "for_engine/spool_file.h"
#include "mem.h"
#include "out_file.h"
#include "sink_internal.h"

struct sp__spool_file {
	struct sp__mem mem;
	struct sp__out_file out;
};

static int sink_for(const struct sp__spool_file *f, int fd,
		    const struct sp__spool_file_opts *o, struct sp_sink **sink)
{
	struct sp_sink_opts so = { .size = sizeof(so) };

	if (!o->uring || sp__out_in_place(&f->out))
		return sp__sink_new_fd_owned(fd, f->out.regular, o->allocator,
					     sink);
	so.allocator = o->allocator;
	so.logger = o->logger;
	so.flags = SP_SINK_CLOSE_FD | SP_SINK_URING_DATASYNC;
	return sp_sink_new_uring_fd(fd, &so, sink);
}

int sp__spool_file_open(const char *path,
			const struct sp__spool_file_opts *opts,
			struct sp__spool_file **file, struct sp_sink **sink)
{
	uint32_t flags = SP__OUT_AT_COMMIT;
	struct sp__spool_file *f;
	struct sp__mem mem;
	int err, fd;

	if (!path || !opts || !file || !sink)
		return -EINVAL;
	sp__mem_init(&mem, opts->allocator);
	f = sp__mem_calloc(&mem, 1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	f->mem = mem;
	if (opts->keep_old)
		flags |= SP__OUT_KEEP_OLD;
	err = sp__out_open(&f->out, &f->mem, path, flags);
	if (err) {
		sp__mem_free(&mem, f, sizeof(*f));
		return err;
	}
	fd = fcntl(f->out.fd, F_DUPFD_CLOEXEC, 0);
	err = fd < 0 ? -errno : sink_for(f, fd, opts, sink);
	if (err) {
		if (fd >= 0)
			close(fd);
		sp__spool_file_close(f);
		return err;
	}
	*file = f;
	return 0;
}

int sp__spool_file_publish(struct sp__spool_file *file)
{
	return sp__out_publish(&file->out, &file->mem);
}

bool sp__spool_file_published(const struct sp__spool_file *file)
{
	return file->out.published;
}

bool sp__spool_file_in_place(const struct sp__spool_file *file)
{
	return sp__out_in_place(&file->out);
}

void sp__spool_file_close(struct sp__spool_file *file)
{
	struct sp__mem mem;

	if (!file)
		return;
	mem = file->mem;
	sp__out_close(&file->out, &mem);
	sp__mem_free(&mem, file, sizeof(*file));
}
