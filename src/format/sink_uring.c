/* SPDX-License-Identifier: MIT */
/* The io_uring sink: asynchronous appends at explicit offsets from a fixed buffer pool. */

/*
 * Why io_uring here: buffered writes to a file are no faster through
 * io_uring than through write(2) (the kernel punts them to an iou-wrk
 * thread, research/feasibility.md §5), but the caller no longer waits for
 * the copy into the page cache or for a slow disk. sp_sink_write() costs a
 * memcpy into a free buffer and one io_uring_enter(). SQPOLL is not used:
 * on small machines the poller thread competes with the workload.
 *
 * Buffers are used as a ring in file-offset order. Buffer i of the ring
 * holds one whole chunk written at an explicit offset that this sink
 * tracks (never the file position, never O_APPEND, whose ordering with
 * several writes in flight is not guaranteed):
 *
 *          head                          head + count
 *           v                                 v
 *   bufs: [ held ][ held ][ held ] ... [ held ][ free ][ free ]
 *           off0    off1 = off0+len0 ...  ... ends at u->end
 *
 * Invariants:
 *   - held chunks are consecutive in the file and the last ends at end;
 *   - every byte before the oldest held chunk (or before end when none is
 *     held) is in the file: a buffer is retired only when its write and
 *     the writes of all older buffers have completed;
 *   - in_flight counts buffers with a write queued and not yet completed.
 *
 * A short write is queued again for its remainder. A failed write sets a
 * pending error and stops all requeueing; once nothing is in flight the
 * file is cut back to the oldest held chunk (a later chunk may already
 * have landed behind a gap), the error is returned by that call, and the
 * held chunks are written again by the next call. The writer's retry
 * contract (sink_internal.h) then re-offers the chunk it could not hand
 * over, so nothing accepted is lost and the file never has a hole or half
 * a chunk at its end.
 *
 * A chunk bigger than a buffer is written with pwrite(2) in the calling
 * thread after the queue has drained. When io_uring is unavailable
 * (kernel.io_uring_disabled, seccomp, a kernel without IORING_OP_WRITE)
 * every chunk takes that path; SP_SINK_URING_PWRITE forces it for tests.
 *
 * flush waits for every write and then calls fdatasync() when asked to: a
 * linked IORING_OP_FSYNC would save one syscall but not the wait, which
 * flush needs anyway. The sink is single-owner; the only other party is
 * the kernel, which reads a buffer from submission to completion.
 */
#include <errno.h>
#include <fcntl.h>
#include <liburing.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stackpulse/error.h>

#include "logging.h"
#include "opts.h"
#include "sink_internal.h"

#define URING_DEFAULT_DEPTH 8
#define URING_DEFAULT_BUF_SIZE (128 * 1024)
#define URING_MAX_DEPTH 4096
#define URING_MAX_BUF_SIZE ((size_t)1 << 30)
#define URING_FLAGS (SP_SINK_URING_DATASYNC | SP_SINK_URING_PWRITE)
#define URING_PROBE_OPS 64

struct uring_buf {
	unsigned char *data;
	size_t len;   /* chunk bytes */
	size_t done;  /* bytes the kernel reported written */
	uint64_t off; /* file offset of data[0] */
	bool in_flight;
};

struct uring_sink {
	struct sp__mem mem;
	const struct sp_logger *logger;
	struct io_uring ring;
	bool has_ring; /* false: every chunk goes through pwrite */
	bool close_fd;
	bool datasync;
	bool resubmit; /* held chunks wait to be written again */
	int fd;
	int err; /* first failure not yet reported */
	struct uring_buf *bufs;
	unsigned char *pool;
	uint32_t nbuf;
	uint32_t head, count, in_flight;
	size_t buf_size;
	uint64_t end; /* file offset after the last accepted byte */
};

static struct uring_buf *held(struct uring_sink *u, uint32_t i)
{
	return &u->bufs[(u->head + i) % u->nbuf];
}

/* Queues the unwritten rest of @b; it reaches the kernel on the next enter. */
static int queue_buf(struct uring_sink *u, struct uring_buf *b)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&u->ring);

	/* Only when more buffers than queue entries are requeued at once. */
	if (!sqe) {
		io_uring_submit(&u->ring);
		sqe = io_uring_get_sqe(&u->ring);
		if (!sqe)
			return -EAGAIN;
	}
	io_uring_prep_write(sqe, u->fd, b->data + b->done,
			    (unsigned int)(b->len - b->done), b->off + b->done);
	io_uring_sqe_set_data64(sqe, (uint64_t)(b - u->bufs));
	b->in_flight = true;
	u->in_flight++;
	return 0;
}

static void retire(struct uring_sink *u)
{
	struct uring_buf *b;

	while (u->count > 0) {
		b = held(u, 0);
		if (b->in_flight || b->done < b->len)
			return;
		u->head = (u->head + 1) % u->nbuf;
		u->count--;
	}
}

static void complete(struct uring_sink *u, const struct io_uring_cqe *cqe)
{
	struct uring_buf *b = &u->bufs[cqe->user_data];
	int res = cqe->res;

	b->in_flight = false;
	u->in_flight--;
	if (res > 0)
		b->done += (size_t)res;
	else if (res != -EINTR && res != -EAGAIN && !u->err)
		u->err = res < 0 ? res : -EIO; /* 0 bytes: no progress */
	if (b->done < b->len && !u->err) {
		res = queue_buf(u, b);
		if (res)
			u->err = res;
	}
	retire(u);
}

/*
 * Handles completions, waiting while a buffer is needed (@all: while
 * anything is in flight) and, after a failure, until nothing is in flight.
 */
static int reap(struct uring_sink *u, bool all)
{
	struct io_uring_cqe *cqe;
	int ret;

	for (;;) {
		while (io_uring_peek_cqe(&u->ring, &cqe) == 0) {
			complete(u, cqe);
			io_uring_cqe_seen(&u->ring, cqe);
		}
		if (!u->in_flight || !(all || u->err || u->count == u->nbuf))
			break;
		/* Submitting too: a requeued remainder may still be queued. */
		ret = io_uring_submit_and_wait(&u->ring, 1);
		if (ret < 0 && ret != -EINTR && ret != -EAGAIN && ret != -EBUSY)
			return ret;
	}
	if (io_uring_sq_ready(&u->ring))
		io_uring_submit(&u->ring);
	return 0;
}

/* Cuts the file back to @good bytes so it ends on a chunk boundary. */
static void cut_file(struct uring_sink *u, uint64_t good)
{
	/* If this fails, the retry still overwrites the same bytes. */
	if (ftruncate(u->fd, (off_t)good) < 0)
		sp__log(u->logger, SP_LOG_WARN,
			"uring sink: cannot cut file back to %llu bytes: %s",
			(unsigned long long)good, sp_strerror(-errno));
}

/* Nothing is in flight and a write failed: report it, keep the chunks. */
static int recover(struct uring_sink *u)
{
	int err = u->err;
	uint32_t i;

	u->err = 0;
	cut_file(u, u->count ? held(u, 0)->off : u->end);
	for (i = 0; i < u->count; i++)
		held(u, i)->done = 0;
	u->resubmit = u->count > 0;
	return err;
}

/* Requeues the held chunks after a reported failure, oldest first. */
static int resubmit(struct uring_sink *u)
{
	struct uring_buf *b;
	uint32_t i;
	int err;

	u->resubmit = false;
	for (i = 0; i < u->count; i++) {
		b = held(u, i);
		if (b->in_flight)
			continue;
		err = queue_buf(u, b);
		if (err) {
			u->resubmit = true;
			return err;
		}
	}
	io_uring_submit(&u->ring);
	return 0;
}

/* Brings the queue to a state where the call can proceed (see reap()). */
static int settle(struct uring_sink *u, bool all)
{
	int err = u->resubmit ? resubmit(u) : 0;

	if (!err)
		err = reap(u, all);
	if (!err && u->err)
		err = recover(u);
	return err;
}

/* Writes a chunk at end in the calling thread; a failure leaves no part. */
static int pwrite_chunk(struct uring_sink *u, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t done = 0;
	ssize_t n;
	int err;

	while (done < len) {
		n = pwrite(u->fd, p + done, len - done, (off_t)(u->end + done));
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		err = n < 0 ? -errno : -EIO;
		if (done)
			cut_file(u, u->end);
		return err;
	}
	u->end += len;
	return 0;
}

static int uring_write(void *ctx, const void *buf, size_t len)
{
	struct uring_sink *u = ctx;
	struct uring_buf *b;
	int err;

	if (!u->has_ring)
		return pwrite_chunk(u, buf, len);
	err = settle(u, len > u->buf_size);
	if (err)
		return err;
	if (len > u->buf_size)
		return pwrite_chunk(u, buf, len);
	if (u->count == u->nbuf) /* cannot happen: reap() freed one */
		return -EAGAIN;
	b = held(u, u->count);
	memcpy(b->data, buf, len);
	b->len = len;
	b->done = 0;
	b->off = u->end;
	err = queue_buf(u, b);
	if (err)
		return err;
	u->count++;
	u->end += len;
	/* A failed enter leaves the entry queued; reap() submits it. */
	io_uring_submit(&u->ring);
	return 0;
}

static int uring_flush(void *ctx)
{
	struct uring_sink *u = ctx;
	int err = u->has_ring ? settle(u, true) : 0;

	if (!err && u->datasync && fdatasync(u->fd) < 0)
		err = -errno;
	return err;
}

/* A descriptor the caller keeps is left positioned after the data. */
static int uring_finish(void *ctx)
{
	struct uring_sink *u = ctx;
	int err = uring_flush(u);

	if (!err && !u->close_fd && lseek(u->fd, (off_t)u->end, SEEK_SET) < 0)
		err = -errno;
	return err;
}

static void uring_free(void *ctx)
{
	struct uring_sink *u = ctx;
	struct sp__mem mem = u->mem;
	bool idle = true;

	if (u->has_ring) {
		/* Free does not flush: no requeueing, just let writes end. */
		if (!u->err)
			u->err = -ECANCELED;
		idle = reap(u, true) == 0;
		io_uring_queue_exit(&u->ring);
	}
	if (u->close_fd)
		close(u->fd);
	/* The kernel may still read buffers it could not be waited for. */
	if (idle)
		sp__mem_free(&mem, u->pool, (size_t)u->nbuf * u->buf_size);
	sp__mem_free(&mem, u->bufs, u->nbuf * sizeof(*u->bufs));
	sp__mem_free(&mem, u, sizeof(*u));
}

static const struct sp_sink_ops uring_ops = {
	.write = uring_write,
	.flush = uring_flush,
	.finish = uring_finish,
	.free = uring_free,
};

/* The kernel must know IORING_OP_WRITE (5.6+); the probe itself is 5.6+. */
static int ring_probe(struct io_uring *ring)
{
	union {
		struct io_uring_probe probe;
		unsigned char
			raw[sizeof(struct io_uring_probe) +
			    URING_PROBE_OPS * sizeof(struct io_uring_probe_op)];
	} p;
	int ret;

	memset(&p, 0, sizeof(p));
	ret = io_uring_register_probe(ring, &p.probe, URING_PROBE_OPS);
	if (ret < 0)
		return ret;
	return io_uring_opcode_supported(&p.probe, IORING_OP_WRITE) ?
		       0 :
		       -EOPNOTSUPP;
}

/* Sets up the ring, or leaves has_ring false (pwrite) and says why. */
static void ring_open(struct uring_sink *u, const struct sp_sink_opts *o)
{
	int ret;

	if (o->flags & SP_SINK_URING_PWRITE)
		return;
	ret = io_uring_queue_init(o->uring_queue_depth, &u->ring, 0);
	if (ret == 0) {
		ret = ring_probe(&u->ring);
		if (ret < 0)
			io_uring_queue_exit(&u->ring);
	}
	if (ret < 0) {
		sp__log(u->logger, SP_LOG_WARN,
			"uring sink: io_uring unavailable (%s), writing with pwrite in the calling thread",
			sp_strerror(ret));
		return;
	}
	u->has_ring = true;
}

/* The uring fields of @user with their defaults; @flags: those taken. */
static int uring_opts_load(const struct sp_sink_opts *user, uint32_t flags,
			   struct sp_sink_opts *o)
{
	int err = sp__sink_opts_load(user, flags, o);

	if (err)
		return err;
	if (!o->uring_queue_depth)
		o->uring_queue_depth = URING_DEFAULT_DEPTH;
	if (!o->uring_buf_count)
		o->uring_buf_count = o->uring_queue_depth;
	if (!o->uring_buf_size)
		o->uring_buf_size = URING_DEFAULT_BUF_SIZE;
	if (o->uring_queue_depth > URING_MAX_DEPTH ||
	    o->uring_buf_count > URING_MAX_DEPTH ||
	    o->uring_buf_size > URING_MAX_BUF_SIZE ||
	    o->uring_buf_size > SIZE_MAX / o->uring_buf_count)
		return -EINVAL;
	return 0;
}

/* Returns @fd's position; explicit offsets need a seekable, non-append fd. */
static int fd_start(int fd, uint64_t *pos)
{
	int fl = fcntl(fd, F_GETFL);
	off_t off;

	if (fl < 0)
		return -errno;
	if (fl & O_APPEND)
		return -EINVAL;
	off = lseek(fd, 0, SEEK_CUR);
	if (off < 0)
		return -errno;
	*pos = (uint64_t)off;
	return 0;
}

static bool fd_is_regular(int fd)
{
	struct stat st;

	return fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
}

static int uring_pool_new(struct uring_sink *u)
{
	uint32_t i;

	u->bufs = sp__mem_calloc(&u->mem, u->nbuf, sizeof(*u->bufs));
	if (!u->bufs)
		return -ENOMEM;
	u->pool = sp__mem_alloc(&u->mem, (size_t)u->nbuf * u->buf_size);
	if (!u->pool)
		return -ENOMEM;
	for (i = 0; i < u->nbuf; i++)
		u->bufs[i].data = u->pool + (size_t)i * u->buf_size;
	return 0;
}

SP_API int sp_sink_new_uring_fd(int fd, const struct sp_sink_opts *opts,
				struct sp_sink **out)
{
	struct sp_sink_opts o;
	struct uring_sink *u;
	struct sp__mem mem;
	uint64_t start = 0;
	int err;

	if (fd < 0 || !out)
		return -EINVAL;
	err = uring_opts_load(opts, URING_FLAGS | SP_SINK_CLOSE_FD, &o);
	if (!err)
		err = fd_start(fd, &start);
	if (err)
		return err;
	sp__mem_init(&mem, o.allocator);
	u = sp__mem_calloc(&mem, 1, sizeof(*u));
	if (!u)
		return -ENOMEM;
	u->mem = mem;
	u->logger = o.logger;
	u->fd = fd;
	/* fdatasync fails with EINVAL on a device (/dev/null): files only. */
	u->datasync = (o.flags & SP_SINK_URING_DATASYNC) && fd_is_regular(fd);
	u->nbuf = o.uring_buf_count;
	u->buf_size = o.uring_buf_size;
	u->end = start;
	err = uring_pool_new(u);
	if (!err) {
		ring_open(u, &o);
		err = sp__sink_new(&uring_ops, u, &mem, out);
	}
	if (err) {
		uring_free(
			u); /* close_fd is still false: the caller keeps fd */
		return err;
	}
	u->close_fd = o.flags & SP_SINK_CLOSE_FD;
	return 0;
}

SP_API int sp_sink_open_uring(const char *path, const struct sp_sink_opts *opts,
			      struct sp_sink **out)
{
	struct sp_sink_opts o;
	struct sp__mem mem;
	int fd, err;

	if (!path || !out)
		return -EINVAL;
	/* Refused options never create (or replace) @path. */
	err = uring_opts_load(opts, URING_FLAGS, &o);
	if (err)
		return err;
	sp__mem_init(&mem, o.allocator);
	fd = sp__sink_create_file(&mem, path);
	if (fd < 0)
		return fd;
	o.flags |= SP_SINK_CLOSE_FD;
	err = sp_sink_new_uring_fd(fd, &o, out);
	if (err)
		close(fd);
	return err;
}
