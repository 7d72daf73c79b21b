/* SPDX-License-Identifier: MIT */
/* Snapshot: validate a whole spool once, keep everything for random access. */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include <stackpulse/error.h>
#include <stackpulse/snapshot.h>

#include "format_internal.h"
#include "logging.h"
#include "source.h"

/*
 * Opening reads the file through a bounded window (source.h: pread, and
 * zstd decoded as it goes), walks every record once with the validating
 * decoder, and copies what it needs into the spool store and a sample
 * array, so the file is closed before sp_snapshot_open() returns. A file
 * is never mapped: one cut short while it is read (by its writer, by
 * another user) ends in a reported cut-off tail, never in SIGBUS. After
 * that the object is immutable and safe to share between threads.
 *
 *   blocks[]  -> [SAMPLE_BLOCK x {timestamp, thread, stack}] ...
 *
 * Samples are compact (pid/tid come from the thread table when a sample
 * is read) and stored in fixed blocks, so growing never copies them.
 */
#define SAMPLE_BLOCK_SHIFT 18
#define SAMPLE_BLOCK ((size_t)1 << SAMPLE_BLOCK_SHIFT)

struct sp_snapshot {
	struct sp_spool spool;
	struct sp__vec blocks; /* struct sp__sample_rec *, SAMPLE_BLOCK each */
	size_t nsamples;
	uint64_t byte_size;
	bool recovered;
};

/*
 * Sample blocks are 4 MiB and written once, front to back: transparent
 * huge pages (where the system allows them on request) turn 1024 page
 * faults per block into two. Advice only; failure changes nothing.
 */
static void advise_huge(void *p, size_t len)
{
	uintptr_t start = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
	uintptr_t end = ((uintptr_t)p + len) & ~(uintptr_t)4095;

	if (end > start)
		madvise((void *)start, end - start, MADV_HUGEPAGE);
}

/* Room for at least one more sample; returns the next free slot. */
static struct sp__sample_rec *sample_slot(struct sp_snapshot *s, size_t *room)
{
	size_t slot = s->nsamples & (SAMPLE_BLOCK - 1);
	struct sp__sample_rec *block;

	/* A block may exist already: calls that decoded nothing reuse it. */
	if (slot == 0 && s->blocks.len <= s->nsamples >> SAMPLE_BLOCK_SHIFT) {
		if (sp__vec_reserve(&s->blocks, &s->spool.mem, 1))
			return NULL;
		block = sp__mem_alloc(&s->spool.mem,
				      SAMPLE_BLOCK * sizeof(*block));
		if (!block)
			return NULL;
		advise_huge(block, SAMPLE_BLOCK * sizeof(*block));
		sp__vec_push(&s->blocks, &s->spool.mem, &block);
	}
	block = ((struct sp__sample_rec **)
			 s->blocks.data)[s->nsamples >> SAMPLE_BLOCK_SHIFT];
	*room = SAMPLE_BLOCK - slot;
	return block + slot;
}

/*
 * Decodes samples straight into the block storage: plain runs through the
 * batch decoder, and one record through the general decoder (@ev) when it
 * was a sample the batch decoder left alone.
 */
static int push_samples(struct sp_snapshot *s, struct sp__cursor *cur,
			const struct sp__event *ev)
{
	struct sp__sample_rec *slot;
	size_t room, n;

	do {
		slot = sample_slot(s, &room);
		if (!slot)
			return -ENOMEM;
		if (ev) {
			slot->timestamp_ns = ev->u.sample.timestamp_ns;
			slot->thread = ev->u.sample.thread;
			slot->stack = ev->u.sample.stack;
			n = 1;
			ev = NULL;
		} else {
			n = sp__spool_decode_samples(&s->spool, cur, slot,
						     room);
		}
		/* The run's first sample follows any frames defined before. */
		if (n)
			sp__spool_note_sample(&s->spool, slot->timestamp_ns);
		s->nsamples += n;
	} while (n == room);
	return 0;
}

static const struct sp__sample_rec *sample_at(const struct sp_snapshot *s,
					      size_t i)
{
	const struct sp__sample_rec *const *blocks = s->blocks.data;

	return &blocks[i >> SAMPLE_BLOCK_SHIFT][i & (SAMPLE_BLOCK - 1)];
}

static void log_recovered(const struct sp_reader_opts *o, bool cut_frame,
			  uint64_t at)
{
	if (cut_frame)
		sp__log(o->logger, SP_LOG_WARN,
			"compressed spool ends inside a zstd frame; kept the "
			"complete records decoded before the cut");
	else
		sp__log(o->logger, SP_LOG_WARN,
			"spool ends inside a record at offset %llu; kept the "
			"complete prefix",
			(unsigned long long)at);
}

/* One record the batch decoder left, through the validating decoder. */
static int decode_record(struct sp_snapshot *s, struct sp__cursor *cur,
			 const struct sp_reader_opts *o)
{
	struct sp__event ev;
	int err =
		sp__spool_decode(&s->spool, cur, SP_DECODE_APPLY, &ev, o->diag);

	if (err)
		return err;
	return ev.tag == SP_TAG_SAMPLE ? push_samples(s, cur, &ev) : 0;
}

/*
 * Decodes all records of buf[0..len), which is the whole stream: a plain
 * spool handed over in memory, decoded in place.
 */
static int parse(struct sp_snapshot *s, const uint8_t *buf, size_t len,
		 const struct sp_reader_opts *o)
{
	struct sp__cursor cur = { .buf = buf, .len = len };
	int n, err;

	s->byte_size = len;
	n = sp__spool_header(buf, len, &s->spool.start_us,
			     &s->spool.interval_us, o->diag);
	if (n == SP_ETRUNCATED) {
		if (o->diag) {
			o->diag->offset = 0;
			strcpy(o->diag->message, "incomplete spool header");
		}
		return SP_ECORRUPT;
	}
	if (n < 0)
		return n;
	cur.pos = (size_t)n;
	while (cur.pos < len) {
		err = push_samples(s, &cur, NULL);
		if (!err && cur.pos < len)
			err = decode_record(s, &cur, o);
		if (err == SP_ETRUNCATED) {
			s->recovered = true;
			log_recovered(o, false, cur.pos);
			return 0;
		}
		if (err)
			return err;
	}
	return 0;
}

/*
 * The same through a bounded window (source.h): a file read with pread,
 * never mapped, so a file cut short while it is read ends in a reported
 * cut instead of SIGBUS; and zstd input decoded as it goes, so memory is
 * the window plus what the records define, never the decoded size.
 */
static int parse_source(struct sp_snapshot *s, struct sp__source *src,
			const struct sp_reader_opts *o)
{
	struct sp__cursor cur;
	uint64_t pos, last_ns = 0;
	int err;

	err = sp__source_header(src, &s->spool, o->diag);
	if (err < 0)
		return err;
	pos = (uint64_t)err;
	for (;;) {
		sp__source_cursor(src, pos, last_ns, &cur);
		err = push_samples(s, &cur, NULL);
		if (!err)
			err = decode_record(s, &cur, o);
		pos = cur.offset + cur.pos;
		last_ns = cur.last_ns;
		if (err != SP_ETRUNCATED && err)
			return err;
		if (!err)
			continue;
		err = sp__source_extend(src, pos);
		if (err < 0)
			return err;
		if (err == 0)
			break;
	}
	/* At the true end: clean if no byte is left and no frame was cut. */
	s->byte_size = src->win_off + src->win.len + src->probed;
	s->recovered = src->win.len > 0 || sp__source_cut(src);
	if (s->recovered)
		log_recovered(o, src->win.len == 0, pos);
	return 0;
}

static int snapshot_new(const struct sp_reader_opts *o,
			struct sp_snapshot **out)
{
	struct sp__mem mem;
	struct sp_snapshot *s;

	sp__mem_init(&mem, o->allocator);
	s = sp__mem_alloc(&mem, sizeof(*s));
	if (!s)
		return -ENOMEM;
	memset(s, 0, sizeof(*s));
	sp__spool_init(&s->spool, &mem, true);
	sp__vec_init(&s->blocks, sizeof(struct sp__sample_rec *));
	*out = s;
	return 0;
}

/* Opens a snapshot over @src (consumed: closed before returning). */
static int open_source(struct sp__source *src, const struct sp_reader_opts *o,
		       struct sp_snapshot **out)
{
	struct sp_snapshot *s = NULL;
	int err = snapshot_new(o, &s);

	if (!err)
		err = parse_source(s, src, o);
	sp__source_close(src);
	if (err) {
		sp_snapshot_close(s);
		return err;
	}
	*out = s;
	return 0;
}

SP_API int sp_snapshot_open_buffer(const void *data, size_t len,
				   const struct sp_reader_opts *opts,
				   struct sp_snapshot **out)
{
	struct sp_reader_opts o;
	struct sp_snapshot *s;
	struct sp__source src;
	struct sp__mem mem;
	int err = sp__reader_opts_load(opts, &o);

	if (err)
		return err;
	if (!data && len)
		return -EINVAL;
	if (sp__is_zstd(data, len)) {
		sp__mem_init(&mem, o.allocator);
		err = sp__source_open_memory(&src, &mem, data, len);
		return err ? err : open_source(&src, &o, out);
	}
	err = snapshot_new(&o, &s);
	if (err)
		return err;
	err = parse(s, data, len, &o);
	if (err) {
		sp_snapshot_close(s);
		return err;
	}
	*out = s;
	return 0;
}

SP_API int sp_snapshot_open(const char *path, const struct sp_reader_opts *opts,
			    struct sp_snapshot **out)
{
	struct sp_reader_opts o;
	struct sp__source src;
	struct sp__mem mem;
	int err;

	if (!path || !out)
		return -EINVAL;
	err = sp__reader_opts_load(opts, &o);
	if (err)
		return err;
	sp__mem_init(&mem, o.allocator);
	err = sp__source_open(&src, &mem, path, false);
	return err ? err : open_source(&src, &o, out);
}

SP_API void sp_snapshot_close(struct sp_snapshot *snapshot)
{
	struct sp__mem mem;
	size_t i;

	if (!snapshot)
		return;
	mem = snapshot->spool.mem;
	for (i = 0; i < snapshot->blocks.len; i++)
		sp__mem_free(
			&mem,
			((struct sp__sample_rec **)snapshot->blocks.data)[i],
			SAMPLE_BLOCK * sizeof(struct sp__sample_rec));
	sp__vec_fini(&snapshot->blocks, &mem);
	sp__spool_fini(&snapshot->spool);
	sp__mem_free(&mem, snapshot, sizeof(*snapshot));
}

SP_API const struct sp_spool *
sp_snapshot_spool(const struct sp_snapshot *snapshot)
{
	return &snapshot->spool;
}

SP_API size_t sp_snapshot_sample_count(const struct sp_snapshot *snapshot)
{
	return snapshot->nsamples;
}

SP_API int sp_snapshot_sample(const struct sp_snapshot *snapshot, size_t index,
			      struct sp_sample *out)
{
	const struct sp__sample_rec *c;
	const struct sp_thread *t;

	if (index >= snapshot->nsamples)
		return -EINVAL;
	c = sample_at(snapshot, index);
	t = sp__vec_at(&snapshot->spool.threads, c->thread);
	out->timestamp_ns = c->timestamp_ns;
	out->pid = t->pid;
	out->tid = t->tid;
	out->thread = c->thread;
	out->stack = c->stack;
	return 0;
}

SP_API size_t sp_snapshot_python_record_count(const struct sp_snapshot *snapshot)
{
	return snapshot->spool.python.len;
}

SP_API int sp_snapshot_python_record(const struct sp_snapshot *snapshot,
				     size_t index, struct sp_python_record *out)
{
	if (index >= snapshot->spool.python.len)
		return -EINVAL;
	*out = *(const struct sp_python_record *)sp__vec_at(
		&snapshot->spool.python, index);
	return 0;
}

SP_API bool sp_snapshot_is_recovered(const struct sp_snapshot *snapshot)
{
	return snapshot->recovered;
}

SP_API uint64_t sp_snapshot_byte_size(const struct sp_snapshot *snapshot)
{
	return snapshot->byte_size;
}
