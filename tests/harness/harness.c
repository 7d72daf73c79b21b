/* SPDX-License-Identifier: MIT */
/* The pipeline replay harness: capture a fixture, replay it without perf. */

/*
 * The in-memory rings follow the perf ABI the ring reader relies on: a
 * metadata page whose data_head the producer advances (release) and whose
 * data_tail the reader advances, then a power-of-two data area; records
 * wrap at its end. The feeder never overwrites unread bytes: each batch
 * is fed only after the previous one was released, and a ring holds far
 * more than a batch.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include <stackpulse/error.h>

#include "harness.h"
#include "perf_record.h"
#include "recorder_hooks.h"

#define RING_BYTES (32u << 20)
#define RING_BYTES_MIN (1u << 20)
#define RINGS_BYTES (64u << 20) /* all the rings of a replay, about */
#define RING_PAGE 4096u

/* --- capture ---------------------------------------------------------- */

struct sp__capture {
	struct sp_recorder *rec;
	struct sp__recorder_parts parts;
	struct sp__vec *out;
	int err; /* the first failed append */
};

static void capture_tap(void *ctx, size_t ring, const void *r, size_t len)
{
	struct sp__capture *c = ctx;

	if (!c->err)
		c->err = sp__fixture_put_record(c->out, c->parts.mem,
						(uint32_t)ring, r, len);
}

static int capture_proc(struct sp__capture *c, const struct sp__process *p)
{
	struct sp__map_desc d;
	size_t i;
	int err = sp__fixture_put_proc(c->out, c->parts.mem, p->pid,
				       p->starttime);

	for (i = 0; !err && i < p->modules.len; i++) {
		const struct sp__module *m = sp__vec_at(&p->modules, i);

		sp__module_desc(m, &d);
		err = sp__fixture_put_module(c->out, c->parts.mem, p->pid, &d);
	}
	return err;
}

static int capture_start(struct sp__capture *c)
{
	struct sp__recorder_hooks hooks = { .tap = capture_tap, .tap_ctx = c };
	const struct sp__procs *procs = c->parts.procs;
	struct sp__fixture_hdr h = { 0 };
	size_t i;
	int err;

	if (sp__pipeline_is_threaded(c->parts.pipe))
		return -EINVAL;
	h.sample_type = c->parts.rings->sample_type;
	h.stack_size = c->parts.cfg->stack_size;
	h.nrings = 1; /* filled in by sp__capture_end() */
	err = sp__fixture_put_header(c->out, c->parts.mem, &h);
	for (i = 0; !err && i < procs->list.len; i++)
		err = capture_proc(
			c, *(struct sp__process **)sp__vec_at(&procs->list, i));
	return err ? err : sp__recorder_set_hooks(c->rec, &hooks);
}

int sp__capture_begin(struct sp_recorder *rec, struct sp__vec *out,
		      struct sp__capture **capture)
{
	struct sp__recorder_parts parts;
	struct sp__capture *c;
	int err;

	if (!rec || !out || !capture)
		return -EINVAL;
	sp__recorder_parts(rec, &parts);
	c = sp__mem_calloc(parts.mem, 1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->rec = rec;
	c->parts = parts;
	c->out = out;
	err = capture_start(c);
	if (err) {
		sp__mem_free(parts.mem, c, sizeof(*c));
		return err;
	}
	*capture = c;
	return 0;
}

int sp__capture_end(struct sp__capture *c)
{
	uint32_t n;
	int err;

	if (!c)
		return -EINVAL;
	n = (uint32_t)sp__rings_count(c->parts.rings);
	err = c->err;
	if (n == 0)
		err = err ? err : -ENODATA;
	else
		memcpy((char *)c->out->data + 12, &n, 4);
	sp__recorder_set_hooks(c->rec, NULL);
	sp__mem_free(c->parts.mem, c, sizeof(*c));
	return err;
}

/* --- replay ----------------------------------------------------------- */

struct feed_item {
	uint64_t time;
	uint32_t ring;
	uint32_t pos; /* index in the fixture's order */
	size_t off;   /* of the perf record in the fixture */
	uint32_t len;
	bool sample;
};

/* A clock that stands still between batches (the newest record fed). */
struct vclock {
	struct sp__clock clock; /* first: the recorder holds &clock */
	_Atomic uint64_t now;
};

struct sp__replay {
	struct sp_recorder *rec;
	struct sp__recorder_parts parts;
	struct sp__policy policy; /* the recorder's, without /proc */
	struct sp__mem mem; /* a copy: the replay may outlive the recorder */
	const unsigned char *data;
	struct sp__fixture_hdr hdr;
	struct feed_item *items;
	size_t nitems;
	size_t cap;
	size_t next;
	size_t first_ring;    /* index of the fixture's ring 0 in the rings */
	uint32_t nrings;      /* rings replayed into (the fixture's, or R) */
	size_t ring_bytes;    /* data bytes of each */
	uint64_t feed_cpu_ns; /* spent copying records into the rings */
	uint64_t feed_wall_ns;
	struct vclock vclock;
};

static uint64_t vclock_now(const struct sp__clock *clock)
{
	const struct vclock *v = (const struct vclock *)(const void *)clock;

	return atomic_load(&v->now);
}

/*
 * Replay never looks at /proc: the captured processes may be gone or
 * their pids reused, so exits, liveness, maps reconciles and recovery
 * sweeps are left out. Everything else is the recorder's own policy.
 */
static void no_watch(struct sp_recorder *rec, struct sp__process *child)
{
	(void)rec;
	child->pidfd = -1;
}

static bool never_gone(struct sp_recorder *rec, struct sp__process *p)
{
	(void)rec;
	(void)p;
	return false;
}

static int no_reconcile(struct sp_recorder *rec, struct sp__process *p,
			uint64_t pc)
{
	(void)rec;
	(void)p;
	(void)pc;
	return 0;
}

/* The captured processes' memory is not there to read. */
static void no_jit_code(struct sp_recorder *rec, struct sp__process *p,
			uint64_t now_ns)
{
	(void)rec;
	(void)p;
	(void)now_ns;
}

/* Nor their jitdump files or GDB JIT lists as they were then. */
static int no_jit_refresh(struct sp_recorder *rec, struct sp__process *p,
			  uint64_t now_ns, unsigned flags)
{
	(void)rec;
	(void)p;
	(void)now_ns;
	(void)flags;
	return 0;
}

static int no_sweep(struct sp_recorder *rec, bool force)
{
	(void)rec;
	(void)force;
	return 0;
}

static int item_cmp(const void *a, const void *b)
{
	const struct feed_item *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	if (x->ring != y->ring)
		return x->ring < y->ring ? -1 : 1;
	return x->pos < y->pos ? -1 : x->pos > y->pos;
}

static uint64_t record_time(const struct sp__replay *rp, const void *r,
			    size_t len, bool *sample)
{
	const struct perf_event_header *h = r;
	struct sp__perf_sample ps;
	struct sp__perf_id id;

	*sample = h->type == PERF_RECORD_SAMPLE;
	if (*sample)
		return sp__perf_parse_sample(r, len, rp->hdr.sample_type,
					     SP__PERF_REGS_MASK, &ps) ?
			       0 :
			       ps.time;
	return sp__perf_parse_id(r, len, rp->hdr.sample_type, &id) ? 0 :
								     id.time;
}

/*
 * Spreads the records, in time order, over @rp->nrings rings in turn:
 * every ring stays in time order, as a perf ring is, and ties keep the
 * fixture's order.
 */
static void spread(struct sp__replay *rp)
{
	size_t i;

	if (rp->nrings == rp->hdr.nrings)
		return;
	for (i = 0; i < rp->nitems; i++)
		rp->items[i].ring = (uint32_t)(i % rp->nrings);
}

static int load_entries(struct sp__replay *rp, size_t size, size_t off)
{
	struct sp__procs *procs = rp->parts.procs;
	struct sp__process *p = NULL;
	struct sp__fix_entry e;
	int r;

	while ((r = sp__fixture_next(rp->data, size, rp->hdr.nrings, &off,
				     &e)) > 0) {
		if (e.kind == SP__FIX_PROC) {
			r = sp__procs_add(procs, e.pid, &p);
			if (r)
				return r;
			p->starttime = e.starttime;
		} else if (e.kind == SP__FIX_MODULE) {
			if (!p || p->pid != e.pid)
				return SP_ECORRUPT;
			r = sp__process_map(procs, p, &e.map);
			if (r)
				return r;
		} else {
			struct feed_item *it;

			if (rp->nitems == rp->cap) {
				size_t cap = rp->cap ? rp->cap * 2 : 4096;

				it = sp__mem_realloc(&rp->mem, rp->items,
						     rp->cap * sizeof(*it),
						     cap * sizeof(*it));
				if (!it)
					return -ENOMEM;
				rp->items = it;
				rp->cap = cap;
			}
			it = &rp->items[rp->nitems];
			it->ring = e.ring;
			it->pos = (uint32_t)rp->nitems;
			it->off = (size_t)((const unsigned char *)e.record -
					   rp->data);
			it->len = (uint32_t)e.record_len;
			/* fed when it became visible (fixture.h) */
			it->time = record_time(rp, e.record, e.record_len,
					       &it->sample) +
				   e.late;
			rp->nitems++;
		}
	}
	return r;
}

/*
 * Seeds processes and modules; indexes the records. The seeded modules'
 * unwind tables are built here, in setup, in every mode: threaded mode
 * would otherwise build them lazily in the workers, inside the timed
 * run, and inline mode eagerly, outside it, and the two would not
 * compare (modules mapped during the run stay lazy, as in a recording).
 */
static int load(struct sp__replay *rp, size_t size, size_t off)
{
	struct sp__procs *procs = rp->parts.procs;
	bool lazy = procs->lazy_tables;
	int r;

	procs->lazy_tables = false;
	r = load_entries(rp, size, off);
	procs->lazy_tables = lazy;
	return r;
}

/* One in-memory ring per captured ring, appended to the recorder's. */
static int rings_new(struct sp__replay *rp)
{
	struct sp__rings *rings = rp->parts.rings;
	struct sp__ring ring;
	uint32_t i;
	int err;

	rp->first_ring = sp__rings_count(rings);
	rp->ring_bytes = RING_BYTES;
	while (rp->ring_bytes > RING_BYTES_MIN &&
	       rp->ring_bytes * rp->nrings > RINGS_BYTES)
		rp->ring_bytes /= 2;
	for (i = 0; i < rp->nrings; i++) {
		memset(&ring, 0, sizeof(ring));
		ring.mmap_len = RING_PAGE + rp->ring_bytes;
		ring.data_size = rp->ring_bytes;
		ring.cpu = (int)i;
		ring.owner_fd = -1;
		/* Populated: page faults are the harness's cost, not ours. */
		ring.base = mmap(NULL, ring.mmap_len, PROT_READ | PROT_WRITE,
				 MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1,
				 0);
		if (ring.base == MAP_FAILED)
			return -errno;
		err = sp__rings_add(rings, &ring);
		if (err) {
			munmap(ring.base, ring.mmap_len);
			return err;
		}
	}
	return 0;
}

/* Whether @len more bytes fit without overwriting unconsumed ones. */
static bool ring_room(const struct sp__ring *ring, size_t len)
{
	const struct perf_event_mmap_page *m = ring->base;
	uint64_t tail = __atomic_load_n(&m->data_tail, __ATOMIC_ACQUIRE);

	return m->data_head - tail + len <= ring->data_size;
}

/* Appends one record to its ring, as the kernel would. */
static void ring_put(struct sp__ring *ring, const void *r, size_t len)
{
	struct perf_event_mmap_page *m = ring->base;
	unsigned char *data = (unsigned char *)ring->base + RING_PAGE;
	uint64_t head = m->data_head;
	size_t off = (size_t)head & (ring->data_size - 1);
	size_t first = ring->data_size - off < len ? ring->data_size - off :
						     len;

	memcpy(data + off, r, first);
	memcpy(data, (const unsigned char *)r + first, len - first);
	__atomic_store_n(&m->data_head, head + len, __ATOMIC_RELEASE);
}

/* Hands the recorder the replay's clock and policy. */
static int replay_attach(struct sp__replay *rp)
{
	struct sp__recorder_hooks hooks = { .clock = &rp->vclock.clock,
					    .policy = &rp->policy };
	struct sp__rings *rings = rp->parts.rings;

	rp->vclock.clock.now = vclock_now;
	rp->policy = *rp->parts.policy;
	rp->policy.watch = no_watch;
	rp->policy.group_gone = never_gone;
	rp->policy.sample_pc = no_reconcile;
	rp->policy.jit_code = no_jit_code;
	rp->policy.jit_refresh = no_jit_refresh;
	rp->policy.sweep = no_sweep;
	rings->sample_type = rp->hdr.sample_type;
	rings->sample_type_fixed = true;
	rp->parts.procs->time_ns = 0;
	return sp__recorder_set_hooks(rp->rec, &hooks);
}

int sp__replay_open(struct sp_recorder *rec, const void *data, size_t size,
		    uint32_t rings, struct sp__replay **out)
{
	struct sp__recorder_parts parts;
	struct sp__replay *rp;
	size_t off;
	int err;

	if (!rec || !data || !out || rings > SP__REPLAY_RINGS_MAX)
		return -EINVAL;
	sp__recorder_parts(rec, &parts);
	if (parts.procs->list.len)
		return -EINVAL; /* a replay starts from the fixture's state */
	rp = sp__mem_calloc(parts.mem, 1, sizeof(*rp));
	if (!rp)
		return -ENOMEM;
	rp->rec = rec;
	rp->parts = parts;
	rp->mem = *parts.mem;
	rp->data = data;
	err = sp__fixture_header(data, size, &rp->hdr, &off);
	rp->nrings = rings ? rings : rp->hdr.nrings;
	if (!err)
		err = replay_attach(rp);
	if (!err)
		err = load(rp, size, off);
	if (!err) {
		qsort(rp->items, rp->nitems, sizeof(*rp->items), item_cmp);
		spread(rp);
		err = rings_new(rp);
	}
	if (err) {
		/* The clock and policy are the replay's: hand them back. */
		sp__recorder_set_hooks(rec, NULL);
		sp__replay_free(rp);
		return err;
	}
	*out = rp;
	return 0;
}

/* Feeds up to @batch records; returns how many samples were among them. */
static uint64_t feed(struct sp__replay *rp, size_t batch, uint64_t *t)
{
	uint64_t samples = 0;
	size_t end = rp->next + batch < rp->nitems ? rp->next + batch :
						     rp->nitems;

	for (; rp->next < end; rp->next++) {
		const struct feed_item *it = &rp->items[rp->next];
		struct sp__ring *ring = sp__rings_at(rp->parts.rings,
						     rp->first_ring + it->ring);

		if (!ring_room(ring, it->len))
			break; /* the rest after this batch is released */
		ring_put(ring, rp->data + it->off, it->len);
		samples += it->sample;
		if (it->time > *t)
			*t = it->time;
	}
	return samples;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int sp__replay_run(struct sp__replay *rp, size_t batch, uint64_t *samples)
{
	struct sp_recorder *rec = rp->rec;
	uint64_t t = 0, n = 0, c0, w0;
	int err = 0;

	while (!err && rp->next < rp->nitems) {
		c0 = clock_ns(CLOCK_THREAD_CPUTIME_ID);
		w0 = clock_ns(CLOCK_MONOTONIC);
		n += feed(rp, batch ? batch : 1, &t);
		rp->feed_cpu_ns += clock_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
		rp->feed_wall_ns += clock_ns(CLOCK_MONOTONIC) - w0;
		atomic_store(&rp->vclock.now, t);
		sp__pipeline_kick(rp->parts.pipe);
		do
			err = sp_recorder_poll(rec, 10, NULL);
		while (!err && !sp__pipeline_caught_up(rp->parts.pipe, t));
	}
	if (!err)
		err = sp_recorder_flush(rec);
	if (samples)
		*samples = n;
	return err;
}

int sp__replay_run_flushing(struct sp__replay *rp, uint64_t *samples)
{
	uint64_t t = 0, n = 0;
	size_t before;
	int err = 0;

	while (!err && rp->next < rp->nitems) {
		before = rp->next;
		n += feed(rp, rp->nitems, &t); /* until a ring is full */
		if (rp->next == before)
			return -E2BIG; /* a record larger than its ring */
		atomic_store(&rp->vclock.now, t);
		err = sp_recorder_flush(rp->rec);
	}
	if (samples)
		*samples = n;
	return err;
}

uint64_t sp__replay_feed_cpu_ns(const struct sp__replay *rp)
{
	return rp->feed_cpu_ns;
}

uint64_t sp__replay_feed_wall_ns(const struct sp__replay *rp)
{
	return rp->feed_wall_ns;
}

void sp__replay_syscalls(const struct sp__replay *rp,
			 struct sp__pipeline_syscalls *out)
{
	sp__pipeline_syscalls(rp->parts.pipe, out);
}

void sp__replay_free(struct sp__replay *rp)
{
	if (!rp)
		return;
	struct sp__mem mem = rp->mem;

	if (rp->items)
		sp__mem_free(&mem, rp->items, rp->cap * sizeof(*rp->items));
	sp__mem_free(&mem, rp, sizeof(*rp));
}
