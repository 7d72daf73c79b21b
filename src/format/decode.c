/* SPDX-License-Identifier: MIT */
/* SPULSE3 record decoder: one record per call, validated field by field (§5, §9). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <stackpulse/error.h>

#include "format_internal.h"
#include "utf8.h"
#include "varint.h"

/*
 * Grammar (SPULSE3 §1, §4, §5):
 *
 *   file   := magic[8] start_us:U interval_us:U record*
 *   record := tag:B body
 *     1 module  id:U pid:S start:U end:U off:U ino:U maj:U min:U gen:U
 *               kernel:B path:BYTES
 *     2 frame   id:U kind:U addr:U
 *     3 stack   id:U parent:U frame:U
 *     4 thread  id:U pid:S tid:U
 *     5 sample  delta:S thread:U stack:U
 *     6 python  ts:U pid:S flag:B
 *     7 retire-process  pid:S
 *     8 retire-module   id:U
 *
 * Checks run in field order and the first failure decides the outcome
 * (§9.2): a field that needs bytes past the end of the input makes the
 * record "cut off" (SP_ETRUNCATED, nothing consumed), every other failure
 * is corruption. Definitions are applied to the spool only after the whole
 * record decoded, and storage is reserved before anything is changed, so a
 * failed call leaves the spool exactly as it was.
 */

const uint8_t sp__spool_magic[SP_SPOOL_MAGIC_SIZE] = { 'S', 'P', 'U', 'L',
						       'S', 'E', '3', 0 };

bool sp__is_zstd(const void *data, size_t len)
{
	static const uint8_t zmagic[4] = { 0x28, 0xb5, 0x2f, 0xfd };

	return len >= 4 && memcmp(data, zmagic, 4) == 0;
}

/* Reading state of one record. */
struct rd {
	const uint8_t *buf;
	size_t len;
	size_t pos;
	size_t start;	 /* first byte of the record (its tag) */
	uint64_t offset; /* stream offset of buf[0] */
	uint64_t more;	 /* stream bytes known to follow buf[len) */
	struct sp_diag *diag;
};

static int corrupt(const struct rd *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int corrupt(const struct rd *r, const char *fmt, ...)
{
	va_list ap;

	if (r->diag) {
		r->diag->offset = r->offset + r->start;
		va_start(ap, fmt);
		vsnprintf(r->diag->message, sizeof(r->diag->message), fmt, ap);
		va_end(ap);
	}
	return SP_ECORRUPT;
}

/*
 * Unchecked varint: the caller guarantees 10 readable bytes. Returns the length, or 0 for an invalid 10th byte (the
 * general path then reports it).
 */
static inline size_t fast_u(const uint8_t *p, uint64_t *v)
{
	uint64_t x = p[0];
	unsigned i;

	/* Unrolled for the 1-3 byte values that ids and deltas use. */
	if (p[0] < 0x80) {
		*v = x;
		return 1;
	}
	x = (x & 0x7f) | (uint64_t)(p[1] & 0x7f) << 7;
	if (p[1] < 0x80) {
		*v = x;
		return 2;
	}
	x |= (uint64_t)(p[2] & 0x7f) << 14;
	if (p[2] < 0x80) {
		*v = x;
		return 3;
	}
	for (i = 3; i < SP_VARINT_MAX - 1; i++) {
		x |= (uint64_t)(p[i] & 0x7f) << (7 * i);
		if (p[i] < 0x80) {
			*v = x;
			return i + 1;
		}
	}
	if (p[9] > 1)
		return 0;
	*v = x | (uint64_t)p[9] << 63;
	return SP_VARINT_MAX;
}

static int get_u_slow(struct rd *r, uint64_t *v)
{
	size_t n;

	/* With 10 bytes available only an invalid 10th byte gets here. */
	if (r->len - r->pos >= SP_VARINT_MAX)
		return corrupt(r, "invalid varint at offset %llu",
			       (unsigned long long)(r->offset + r->pos));
	switch (sp__varint_get(r->buf + r->pos, r->len - r->pos, v, &n)) {
	case SP_VARINT_OK:
		r->pos += n;
		return 0;
	case SP_VARINT_SHORT:
		/* Fewer than 10 bytes were left before the end: cut off. */
		return SP_ETRUNCATED;
	default:
		return corrupt(r, "invalid varint at offset %llu",
			       (unsigned long long)(r->offset + r->pos));
	}
}

/*
 * Away from the end of the input every field decodes without bounds
 * checks, inline in the record loops; only the last few bytes of a file
 * take the careful path.
 */
static inline int get_u(struct rd *r, uint64_t *v)
{
	size_t n;

	*v = 0; /* every path defines it, which gcc -O3 cannot prove */
	if (r->len - r->pos >= SP_VARINT_MAX) {
		n = fast_u(r->buf + r->pos, v);
		if (n) {
			r->pos += n;
			return 0;
		}
	}
	return get_u_slow(r, v);
}

static int get_s(struct rd *r, int64_t *v)
{
	uint64_t u;
	int err = get_u(r, &u);

	if (err)
		return err;
	*v = sp__unzigzag(u);
	return 0;
}

static int get_byte(struct rd *r, uint8_t *b)
{
	if (r->pos >= r->len)
		return SP_ETRUNCATED;
	*b = r->buf[r->pos++];
	return 0;
}

/*
 * BYTES (only the module path): length, then that many raw bytes. §9.2
 * first: a length that overflows is corrupt, one that runs past the end
 * of the stream is cut off. Then the bound: a path longer than
 * SP_SPOOL_PATH_MAX whose bytes are there is corrupt, decided from what
 * the stream holds (r->more) without the bytes in the buffer.
 */
static int get_bytes(struct rd *r, const uint8_t **p, size_t *n)
{
	uint64_t len, at, avail;
	int err = get_u(r, &len);

	if (err)
		return err;
	at = r->offset + r->pos;
	if (len > UINT64_MAX - at)
		return corrupt(r, "byte string length %llu overflows",
			       (unsigned long long)len);
	avail = r->len - r->pos;
	if (len > avail && (len <= SP_SPOOL_PATH_MAX || len - avail > r->more))
		return SP_ETRUNCATED;
	if (len > SP_SPOOL_PATH_MAX)
		return corrupt(r, "module path of %llu bytes exceeds %d",
			       (unsigned long long)len, SP_SPOOL_PATH_MAX);
	*p = r->buf + r->pos;
	*n = (size_t)len;
	r->pos += (size_t)len;
	return 0;
}

/* A pid field: S that must fit i32, and be >= @min when @min > INT32_MIN. */
static int get_pid(struct rd *r, int64_t min, int32_t *pid)
{
	int64_t v;
	int err = get_s(r, &v);

	if (err)
		return err;
	if (v < INT32_MIN || v > INT32_MAX)
		return corrupt(r, "process id %lld out of range", (long long)v);
	if (v < min)
		return corrupt(r, "invalid process id %lld", (long long)v);
	*pid = (int32_t)v;
	return 0;
}

/* A dense explicit id (§4): must equal the number already decoded. */
static int get_dense_id(struct rd *r, const char *kind, size_t count,
			uint32_t *id)
{
	uint64_t v;
	int err = get_u(r, &v);

	if (err)
		return err;
	if (v != count)
		return corrupt(r, "%s id %llu did not match expected %zu", kind,
			       (unsigned long long)v, count);
	if (v >= UINT32_MAX)
		return corrupt(r, "%s id space exhausted", kind);
	*id = (uint32_t)v;
	return 0;
}

static struct sp_module *module_at(const struct sp_spool *s, size_t i)
{
	return sp__vec_at(&s->modules, i);
}

static struct sp_stack_node *node_at(const struct sp_spool *s, size_t i)
{
	return sp__vec_at(&s->stacks, i);
}

static struct sp_thread *thread_at(const struct sp_spool *s, size_t i)
{
	return sp__vec_at(&s->threads, i);
}

/* Tag 1 fields after the id, shared by validation and skipping. */
struct module_fields {
	int32_t pid;
	uint64_t v[7]; /* start end off ino maj min gen */
	uint8_t kernel;
	const uint8_t *path;
	size_t path_len;
};

static int read_module_fields(struct rd *r, struct module_fields *m)
{
	int64_t pid;
	int err, i;

	err = get_s(r, &pid);
	if (err)
		return err;
	if (pid < INT32_MIN || pid > INT32_MAX)
		return corrupt(r, "process id %lld out of range",
			       (long long)pid);
	m->pid = (int32_t)pid;
	for (i = 0; i < 7; i++) {
		err = get_u(r, &m->v[i]);
		if (err)
			return err;
		if ((i == 4 || i == 5) && m->v[i] > UINT32_MAX)
			return corrupt(r, "device number %llu out of range",
				       (unsigned long long)m->v[i]);
	}
	err = get_byte(r, &m->kernel);
	if (err)
		return err;
	if (!m->kernel && m->pid < 1)
		return corrupt(r, "invalid process id %d", m->pid);
	err = get_bytes(r, &m->path, &m->path_len);
	if (err)
		return err;
	if (!sp__utf8_valid(m->path, m->path_len))
		return corrupt(r, "module path is not valid UTF-8");
	return 0;
}

static int apply_module(struct sp_spool *s, const struct module_fields *f,
			uint32_t id)
{
	struct sp_module m;
	char *path;

	if (sp__vec_reserve(&s->modules, &s->mem, 1))
		return -ENOMEM;
	path = sp__arena_strndup(&s->arena, &s->mem, f->path, f->path_len);
	if (!path)
		return -ENOMEM;
	memset(&m, 0, sizeof(m));
	m.start = f->v[0];
	m.end = f->v[1];
	m.file_offset = f->v[2];
	m.inode = f->v[3];
	m.dev_major = (uint32_t)f->v[4];
	m.dev_minor = (uint32_t)f->v[5];
	m.inode_generation = f->v[6];
	m.is_kernel = f->kernel ? 1 : 0;
	m.pid = f->kernel ? -1 : f->pid;
	m.path = path;
	m.path_len = f->path_len;
	m.id = id;
	m.deactivated_at = SP_NEVER;
	return sp__vec_push(&s->modules, &s->mem, &m);
}

static int decode_module(struct sp_spool *s, struct rd *r, struct sp__event *ev)
{
	struct module_fields f;
	uint32_t id = 0;
	int err;

	err = get_dense_id(r, "module", s->modules.len, &id);
	if (!err)
		err = read_module_fields(r, &f);
	if (!err)
		err = apply_module(s, &f, id);
	if (err)
		return err;
	ev->id = id;
	ev->u.pid = f.kernel ? -1 : f.pid;
	return 0;
}

/* §5.2: interpret a frame kind and address against the modules so far. */
static int frame_from_kind(const struct sp_spool *s, struct rd *r,
			   uint64_t kind, uint64_t addr, struct sp__frame *f)
{
	const struct sp_module *m;

	f->module = SP_NO_MODULE;
	f->abs_ip = f->rel_ip = addr;
	if (kind == 5) {
		if (addr != 0)
			return corrupt(r, "truncated stack marker has nonzero "
					  "payload");
		f->mode = SP_FRAME_TRUNCATED;
		return 0;
	}
	if (kind & 1) {
		f->mode = (kind & 2) ? SP_FRAME_KERNEL : SP_FRAME_USER;
		return 0;
	}
	if ((kind >> 1) >= s->modules.len)
		return corrupt(r, "frame module references missing id %llu",
			       (unsigned long long)(kind >> 1));
	m = module_at(s, (size_t)(kind >> 1));
	if (addr < m->file_offset || m->end < m->start ||
	    addr - m->file_offset >= m->end - m->start)
		return corrupt(r,
			       "frame address %#llx outside referenced "
			       "module %llu",
			       (unsigned long long)addr,
			       (unsigned long long)(kind >> 1));
	f->module = (uint32_t)(kind >> 1);
	f->abs_ip = m->start + (addr - m->file_offset);
	f->mode = m->is_kernel ? SP_FRAME_KERNEL : SP_FRAME_USER;
	return 0;
}

static int decode_frame(struct sp_spool *s, struct rd *r, struct sp__event *ev)
{
	struct sp__frame f;
	uint64_t kind, addr;
	uint32_t id = 0;
	int err;

	err = get_dense_id(r, "frame", s->frames.len, &id);
	if (!err)
		err = get_u(r, &kind);
	if (!err)
		err = get_u(r, &addr);
	if (!err)
		err = frame_from_kind(s, r, kind, addr, &f);
	if (err)
		return err;
	f.module_limit = (uint32_t)s->modules.len;
	f.pad = 0;
	if (sp__vec_push(&s->frames, &s->mem, &f))
		return -ENOMEM;
	ev->id = id;
	return 0;
}

static int decode_stack(struct sp_spool *s, struct rd *r, struct sp__event *ev)
{
	struct sp_stack_node n;
	uint64_t parent, frame;
	uint32_t id = 0;
	int err;

	err = get_dense_id(r, "stack", s->stacks.len, &id);
	if (!err)
		err = get_u(r, &parent);
	if (err)
		return err;
	if (parent != SP_NO_PARENT && parent >= id)
		return corrupt(r, "stack prefix references missing id %llu",
			       (unsigned long long)parent);
	err = get_u(r, &frame);
	if (err)
		return err;
	if (frame >= s->frames.len)
		return corrupt(r, "stack frame references missing id %llu",
			       (unsigned long long)frame);
	n.parent = (uint32_t)parent;
	n.frame = (uint32_t)frame;
	n.depth = parent == SP_NO_PARENT ? 1 : node_at(s, n.parent)->depth + 1;
	if (sp__vec_push(&s->stacks, &s->mem, &n))
		return -ENOMEM;
	ev->id = id;
	return 0;
}

static int decode_thread(struct sp_spool *s, struct rd *r, struct sp__event *ev)
{
	struct sp_thread t;
	uint64_t tid;
	uint32_t id = 0;
	int err;

	err = get_dense_id(r, "thread", s->threads.len, &id);
	if (!err)
		err = get_pid(r, 1, &t.pid);
	if (!err)
		err = get_u(r, &tid);
	if (err)
		return err;
	if (tid < 1 || tid > INT32_MAX)
		return corrupt(r, "thread id %llu out of range",
			       (unsigned long long)tid);
	t.tid = (int32_t)tid;
	if (sp__vec_push(&s->threads, &s->mem, &t))
		return -ENOMEM;
	ev->id = id;
	return 0;
}

/* §5.5: timestamp = baseline + delta, without wrapping. */
static int apply_delta(struct rd *r, uint64_t last, int64_t delta, uint64_t *ts)
{
	uint64_t mag = delta < 0 ? (uint64_t)0 - (uint64_t)delta :
				   (uint64_t)delta;

	if (delta < 0 ? mag > last : mag > UINT64_MAX - last)
		return corrupt(r, "sample timestamp delta %lld out of range",
			       (long long)delta);
	*ts = delta < 0 ? last - mag : last + mag;
	return 0;
}

static int decode_sample(const struct sp_spool *s, struct sp__cursor *cur,
			 struct rd *r, struct sp__event *ev)
{
	const struct sp_thread *t;
	uint64_t thread, stack, ts = 0;
	int64_t delta;
	int err;

	err = get_s(r, &delta);
	if (!err)
		err = get_u(r, &thread);
	if (err)
		return err;
	if (thread >= s->threads.len)
		return corrupt(r, "sample references missing thread %llu",
			       (unsigned long long)thread);
	err = get_u(r, &stack);
	if (err)
		return err;
	if (stack >= s->stacks.len)
		return corrupt(r, "sample references missing stack %llu",
			       (unsigned long long)stack);
	err = apply_delta(r, cur->last_ns, delta, &ts);
	if (err)
		return err;
	t = thread_at(s, (size_t)thread);
	ev->u.sample.timestamp_ns = ts;
	ev->u.sample.pid = t->pid;
	ev->u.sample.tid = t->tid;
	ev->u.sample.thread = (uint32_t)thread;
	ev->u.sample.stack = (uint32_t)stack;
	cur->last_ns = ts;
	return 0;
}

static int decode_python(struct sp_spool *s, struct rd *r, bool apply,
			 struct sp__event *ev)
{
	struct sp_python_record *p = &ev->u.python;
	uint8_t flag;
	uint32_t at;
	int err;

	err = get_u(r, &p->timestamp_ns);
	if (!err)
		err = get_pid(r, 1, &p->pid);
	if (!err)
		err = get_byte(r, &flag);
	if (err)
		return err;
	p->is_python_runtime = flag ? 1 : 0;
	if (!apply || !s->keep_python)
		return 0;
	/* Where in the frame stream it came: which process generation. */
	at = (uint32_t)s->frames.len;
	if (sp__vec_reserve(&s->python_at, &s->mem, 1) ||
	    sp__vec_push(&s->python, &s->mem, p))
		return -ENOMEM;
	sp__vec_push(&s->python_at, &s->mem, &at); /* reserved */
	return 0;
}

/* Marks module @i retired at the current frame count (first one wins). */
static void retire(struct sp_spool *s, size_t i)
{
	struct sp_module *m = module_at(s, i);

	if (m->deactivated_at != SP_NEVER)
		return;
	m->deactivated_at = (uint32_t)s->frames.len;
	s->retirements++;
	/* Room was reserved by the caller. */
	(void)sp__vec_push(&s->retired, &s->mem, &m->id);
}

static int decode_retire_process(struct sp_spool *s, struct rd *r, bool apply,
				 struct sp__event *ev)
{
	size_t i;
	int err = get_pid(r, 1, &ev->u.pid);

	if (err || !apply)
		return err;
	s->retired.len = 0;
	if (sp__vec_reserve(&s->retired, &s->mem, s->modules.len))
		return -ENOMEM;
	for (i = 0; i < s->modules.len; i++) {
		const struct sp_module *m = module_at(s, i);

		if (!m->is_kernel && m->pid == ev->u.pid)
			retire(s, i);
	}
	return 0;
}

static int decode_retire_module(struct sp_spool *s, struct rd *r, bool apply,
				struct sp__event *ev)
{
	uint64_t id;
	int err = get_u(r, &id);

	if (err)
		return err;
	if (apply && id >= s->modules.len)
		return corrupt(r, "retired module references missing id %llu",
			       (unsigned long long)id);
	ev->u.module_id = (uint32_t)id;
	if (!apply)
		return 0;
	s->retired.len = 0;
	if (sp__vec_reserve(&s->retired, &s->mem, 1))
		return -ENOMEM;
	retire(s, (size_t)id);
	return 0;
}

/* SAMPLES_ONLY mode: step over an already validated definition record. */
static int skip_fields(struct rd *r, const char *layout)
{
	const uint8_t *p;
	uint64_t u;
	uint8_t b;
	size_t n;
	int err = 0;

	for (; *layout && !err; layout++) {
		if (*layout == 'U')
			err = get_u(r, &u);
		else if (*layout == 'B')
			err = get_byte(r, &b);
		else
			err = get_bytes(r, &p, &n);
	}
	return err;
}

static int decode_body(struct sp_spool *s, struct sp__cursor *cur, struct rd *r,
		       bool apply, struct sp__event *ev)
{
	switch (ev->tag) {
	case SP_TAG_MODULE:
		return apply ? decode_module(s, r, ev) :
			       skip_fields(r, "UUUUUUUUUBY");
	case SP_TAG_FRAME:
		return apply ? decode_frame(s, r, ev) : skip_fields(r, "UUU");
	case SP_TAG_STACK:
		return apply ? decode_stack(s, r, ev) : skip_fields(r, "UUU");
	case SP_TAG_THREAD:
		return apply ? decode_thread(s, r, ev) : skip_fields(r, "UUU");
	case SP_TAG_SAMPLE:
		return decode_sample(s, cur, r, ev);
	case SP_TAG_PYTHON:
		return decode_python(s, r, apply, ev);
	case SP_TAG_DEACTIVATE_PROCESS:
		return decode_retire_process(s, r, apply, ev);
	case SP_TAG_DEACTIVATE_MODULE:
		return decode_retire_module(s, r, apply, ev);
	default:
		return corrupt(r, "unknown spool record tag %u", ev->tag);
	}
}

/*
 * Samples are most of a spool, so they get a path without the general
 * machinery: three varints decoded without bounds checks (31 bytes are
 * known to be readable), the reference checks, and the baseline. Anything
 * unusual returns false and the general path decodes the record again,
 * producing the exact error of §9.
 */
static bool fast_sample(const struct sp_spool *s, struct sp__cursor *cur,
			struct sp__sample_rec *out)
{
	const uint8_t *p = cur->buf + cur->pos + 1;
	uint64_t zz, thread, stack, ts;
	size_t a, b, c;
	int64_t delta;

	a = fast_u(p, &zz);
	b = a ? fast_u(p + a, &thread) : 0;
	c = b ? fast_u(p + a + b, &stack) : 0;
	if (!c || thread >= s->threads.len || stack >= s->stacks.len)
		return false;
	delta = sp__unzigzag(zz);
	ts = cur->last_ns + (uint64_t)delta;
	if (delta < 0 ? ts > cur->last_ns : ts < cur->last_ns)
		return false;
	out->timestamp_ns = ts;
	out->thread = (uint32_t)thread;
	out->stack = (uint32_t)stack;
	cur->last_ns = ts;
	cur->pos += 1 + a + b + c;
	return true;
}

size_t sp__spool_decode_samples(const struct sp_spool *spool,
				struct sp__cursor *cur,
				struct sp__sample_rec *out, size_t cap)
{
	size_t n = 0;

	while (n < cap && cur->len - cur->pos > 3 * SP_VARINT_MAX &&
	       cur->buf[cur->pos] == SP_TAG_SAMPLE &&
	       fast_sample(spool, cur, &out[n]))
		n++;
	return n;
}

int sp__spool_decode(struct sp_spool *spool, struct sp__cursor *cur,
		     enum sp__decode_mode mode, struct sp__event *ev,
		     struct sp_diag *diag)
{
	struct sp__sample_rec rec;
	struct rd r;
	int err;

	if (cur->pos >= cur->len)
		return SP_ETRUNCATED;
	if (sp__spool_decode_samples(spool, cur, &rec, 1) == 1) {
		const struct sp_thread *t =
			sp__vec_at(&spool->threads, rec.thread);

		ev->tag = SP_TAG_SAMPLE;
		ev->id = 0;
		ev->u.sample.timestamp_ns = rec.timestamp_ns;
		ev->u.sample.pid = t->pid;
		ev->u.sample.tid = t->tid;
		ev->u.sample.thread = rec.thread;
		ev->u.sample.stack = rec.stack;
		return 0;
	}
	r.buf = cur->buf;
	r.len = cur->len;
	r.pos = cur->pos;
	r.start = cur->pos;
	r.offset = cur->offset;
	r.more = cur->more;
	r.diag = diag;
	ev->tag = r.buf[r.pos++];
	ev->id = 0;
	err = decode_body(spool, cur, &r, mode == SP_DECODE_APPLY, ev);
	if (err)
		return err;
	cur->pos = r.pos;
	return 0;
}

int sp__spool_header(const uint8_t *buf, size_t len, uint64_t *start_us,
		     uint64_t *interval_us, struct sp_diag *diag)
{
	struct rd r = { .buf = buf, .len = len, .pos = 0, .diag = diag };
	int err;

	if (len < SP_SPOOL_MAGIC_SIZE)
		return SP_ETRUNCATED;
	if (memcmp(buf, sp__spool_magic, SP_SPOOL_MAGIC_SIZE) != 0)
		return corrupt(&r, "invalid magic (not a SPULSE3 spool)");
	r.pos = SP_SPOOL_MAGIC_SIZE;
	err = get_u(&r, start_us);
	if (!err)
		err = get_u(&r, interval_us);
	if (err)
		return err;
	return (int)r.pos;
}
