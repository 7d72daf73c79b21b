/* SPDX-License-Identifier: MIT */
/* Off-CPU spans: switch-out stacks weighed by the time until switch-in. */

/*
 * What ends a span, and what it then weighs (offcpu.h has the model):
 *
 *   switch-in of the thread     the span, up to the record's time
 *   a loss (PERF_RECORD_LOST)   every open span, up to the loss: its
 *                               switch-in may be among the lost records,
 *                               and an end never seen must not become
 *                               hours of invented waiting (switch_lost)
 *   the thread's EXIT           its span, up to the exit (switch_lost:
 *                               the switch-in was not seen)
 *   a new switch-out, same tid  the span is dropped: the thread ran in
 *                               between, at a time not known (switch_lost,
 *                               or switch_anomalies when another process
 *                               now has the tid: pid reuse)
 *   the end of the recording    every open span, up to then
 *
 * An end before the start (clock trouble) is dropped and counted.
 *
 * A switch-in's job carries the time of the SWITCH_OUT record seen since
 * the thread's last switch-in (ip = out << 1 | preempted; 0: none): the
 * span starts there when it lies between the sample and the end.
 */
#include <errno.h>
#include <string.h>

#include <linux/perf_event.h>

#include <stackpulse/error.h>

#include "logging.h"
#include "offcpu.h"
#include "perf_record.h"
#include "pipeline.h"
#include "recorder_internal.h"

/*
 * What a tagged job points at: it has nothing to unwind (unwind false,
 * no kernel frames), but the pipeline reads the registers of its sample.
 */
static const struct sp__qsample marker;

static int mode_modules(struct sp_recorder *rec, struct sp__offcpu *o)
{
	struct sp_module m;
	const char *name = o->mode == SP_PROFILE_WALL ? SP_MODE_MODULE_WALL :
							SP_MODE_MODULE_OFF_CPU;
	int err;

	memset(&m, 0, sizeof(m));
	m.pid = -1;
	m.is_kernel = 1;
	m.path = name;
	m.path_len = strlen(name);
	err = sp_writer_module(rec->writer, &m, NULL);
	if (err)
		return err;
	m.end = 2; /* SP_OFF_CPU_BLOCKED and SP_OFF_CPU_PREEMPTED */
	m.path = SP_OFF_CPU_MODULE;
	m.path_len = strlen(SP_OFF_CPU_MODULE);
	return sp_writer_module(rec->writer, &m, &o->module);
}

int sp__offcpu_init(struct sp_recorder *rec, int mode, uint32_t min_us,
		    uint64_t us)
{
	struct sp__offcpu *o = &rec->offcpu;

	memset(o, 0, sizeof(*o));
	sp__map_init(&o->by_tid);
	sp__vec_init(&o->spans, sizeof(struct sp__offcpu_span));
	sp__vec_init(&o->cpu_last, sizeof(uint64_t));
	o->mode = mode;
	if (mode == SP_PROFILE_CPU)
		return 0;
	/* Readers weigh a sample by the header's interval: use exactly it. */
	o->interval_ns = (us ? us : 1000) * 1000;
	o->min_ns = (uint64_t)min_us * 1000;
	return mode_modules(rec, o);
}

void sp__offcpu_fini(struct sp_recorder *rec)
{
	sp__map_fini(&rec->offcpu.by_tid, &rec->mem);
	sp__vec_fini(&rec->offcpu.spans, &rec->mem);
	sp__vec_fini(&rec->offcpu.cpu_last, &rec->mem);
}

/* CPUs noted; beyond, a loss is taken to begin at each span's start. */
#define SP__OFFCPU_CPUS 8192u

void sp__offcpu_note(struct sp_recorder *rec, uint32_t cpu, uint64_t time)
{
	struct sp__vec *v = &rec->offcpu.cpu_last;
	uint64_t zero = 0;

	if (rec->offcpu.mode == SP_PROFILE_CPU || cpu >= SP__OFFCPU_CPUS)
		return;
	/* Grows once per CPU seen, never on later records. */
	while (v->len <= cpu)
		if (sp__vec_push(v, &rec->mem, &zero))
			return;
	*(uint64_t *)sp__vec_at(v, cpu) = time;
}

uint64_t sp__offcpu_loss_start(const struct sp_recorder *rec, uint32_t cpu)
{
	const struct sp__vec *v = &rec->offcpu.cpu_last;

	return cpu < v->len ? *(const uint64_t *)sp__vec_at(v, cpu) : 0;
}

/* The span of @tid, created when @create (NULL: none, or no memory). */
static struct sp__offcpu_span *span_of(struct sp_recorder *rec, int32_t tid,
				       bool create)
{
	struct sp__offcpu *o = &rec->offcpu;
	uint64_t key[3] = { (uint32_t)tid, 0, 0 };
	uint64_t hash = sp__map_hash(key);
	struct sp__offcpu_span s, *sp;
	uint32_t i;

	if (sp__map_get(&o->by_tid, key, hash, &i))
		return sp__vec_at(&o->spans, i);
	if (!create || o->spans.len >= UINT32_MAX ||
	    sp__map_reserve(&o->by_tid, &rec->mem, 1))
		return NULL;
	memset(&s, 0, sizeof(s));
	s.tid = tid;
	if (sp__vec_push(&o->spans, &rec->mem, &s))
		return NULL;
	i = (uint32_t)(o->spans.len - 1);
	(void)sp__map_put(&o->by_tid, &rec->mem, key, hash, i);
	sp = sp__vec_at(&o->spans, i);
	return sp;
}

/* Dispatches a tagged job in record order (see offcpu.h). */
static int dispatch(struct sp_recorder *rec, uint32_t tag, int32_t pid,
		    int32_t tid, uint64_t time, uint64_t arg)
{
	struct sp__job *job;
	int err = sp__pipeline_job(rec->pipe, &job);

	if (err)
		return err;
	job->s = &marker;
	job->detached = true; /* never ties up the record being applied */
	job->tag = tag;
	job->time = time;
	job->ip = arg;
	job->pid = pid;
	job->tid = tid;
	job->kernel_mode = false;
	job->unwind = false;
	job->nk = 0;
	job->maps = NULL;
	job->nmaps = 0;
	job->maps_gen = 0;
	job->ver = NULL;
	job->jit = NULL;
	job->jit_index = NULL;
	return sp__pipeline_submit(rec->pipe, job);
}

int sp__offcpu_apply_switch(struct sp_recorder *rec, uint32_t type,
			    const void *data, size_t len)
{
	struct sp__perf_switch sw;
	struct sp__offcpu_span *s;
	uint64_t out;
	bool preempt;

	if (rec->offcpu.mode == SP_PROFILE_CPU ||
	    sp__perf_parse_switch(data, len, type, rec->rings.sample_type,
				  &sw) ||
	    sw.id.tid <= 0)
		return 0;
	rec->sum.switch_events++;
	/*
	 * The record and the sample of one switch may come in either order
	 * (equal times): how it left is the SWITCH_OUT seen since the last
	 * switch-in, whichever came first.
	 */
	s = span_of(rec, sw.id.tid, sw.out);
	if (!s)
		return sw.out ? -ENOMEM : 0;
	if (sw.out) {
		s->preempt = sw.preempt;
		s->out_ns = sw.id.time;
		return 0;
	}
	/* (a time beyond 2^63 ns cannot be carried: the sample's then) */
	out = s->out_ns >= s->in_ns && s->out_ns < (1ull << 63) ? s->out_ns : 0;
	preempt = s->preempt && s->out_ns >= s->in_ns;
	s->in_ns = sw.id.time;
	if (!s->armed)
		return 0; /* not switched out under our eyes */
	s->armed = false;
	rec->offcpu.narmed--;
	return dispatch(rec, SP__JOB_SWITCH_IN, sw.id.pid, sw.id.tid,
			sw.id.time, out << 1 | preempt);
}

int sp__offcpu_arm(struct sp_recorder *rec, int32_t tid)
{
	struct sp__offcpu_span *s = span_of(rec, tid, true);

	if (!s)
		return -ENOMEM;
	if (!s->armed)
		rec->offcpu.narmed++;
	s->armed = true;
	return 0;
}

/* Disarms @tid's span (every span for tid 0); whether one was armed. */
static bool disarm(struct sp_recorder *rec, int32_t tid)
{
	struct sp__offcpu *o = &rec->offcpu;
	struct sp__offcpu_span *s;
	size_t i;

	if (tid > 0) {
		s = span_of(rec, tid, false);
		if (!s || !s->armed)
			return false;
		s->armed = false;
		o->narmed--;
		return true;
	}
	for (i = 0; i < o->spans.len && o->narmed; i++) {
		s = sp__vec_at(&o->spans, i);
		if (s->armed) {
			s->armed = false;
			o->narmed--;
		}
	}
	return true;
}

int sp__offcpu_apply_cut(struct sp_recorder *rec, uint32_t tag, int32_t pid,
			 int32_t tid, uint64_t time)
{
	if (rec->offcpu.mode == SP_PROFILE_CPU || rec->offcpu.narmed == 0 ||
	    !disarm(rec, tag == SP__JOB_EXIT ? tid : 0))
		return 0;
	return dispatch(rec, tag, pid, tid, time, 0);
}

/* The pseudo-frame ending an off-CPU stack. */
static void pseudo_frame(const struct sp__offcpu *o, bool preempt,
			 struct sp_frame *f)
{
	f->abs_ip = f->file_relative_ip = preempt ? SP_OFF_CPU_PREEMPTED :
						    SP_OFF_CPU_BLOCKED;
	f->module_id = o->module;
	f->mode = SP_FRAME_KERNEL;
}

/* Wall mode's ledger forgets: samples in between may be missing. */
static void ledger_reset(struct sp__offcpu_span *s)
{
	s->slack = 0;
	s->prev_end = 0;
	s->on = 0;
}

/* At most 2^60 ns (36 years): the ledger's sums cannot overflow. */
static int64_t ns_cap(uint64_t ns)
{
	return ns < (1ull << 60) ? (int64_t)ns : (int64_t)(1ull << 60);
}

static int64_t min64(int64_t a, int64_t b)
{
	return a < b ? a : b;
}

/* Keeps @s's two remainders within an interval of each other. */
static void ledger_bound(struct sp__offcpu_span *s, int64_t iv)
{
	/* The ledger only evens out a sample's phase, never stores hours. */
	s->carry = min64(s->carry, (s->slack > 0 ? s->slack : 0) + iv);
	s->slack = min64(s->slack, (s->carry > 0 ? s->carry : 0) + iv);
	if (s->slack < -iv)
		s->slack = -iv;
}

/*
 * The samples that @s's span from @start to @end weighs (offcpu.h): its
 * carry plus the span, and in wall mode no more than the ledger allows;
 * none for a dropped block (@counted false). Both keep what is left,
 * and the ledger goes on from @end.
 */
static uint64_t weigh(struct sp__offcpu *o, struct sp__offcpu_span *s,
		      uint64_t start, uint64_t end, bool counted)
{
	const int64_t iv = (int64_t)o->interval_ns;
	bool wall = o->mode == SP_PROFILE_WALL;
	int64_t d = counted ? ns_cap(end - start) : 0, avail, n = 0;

	if (wall && s->prev_end != 0 && start >= s->prev_end) {
		/* The run before the span, less what its samples weigh. */
		s->slack += ns_cap(start - s->prev_end) -
			    min64((int64_t)s->on * iv, (int64_t)1 << 60);
	}
	s->carry += d;
	s->slack += wall ? d : 0;
	if (counted) {
		avail = wall ? min64(s->carry, s->slack) : s->carry;
		n = avail > 0 ? avail / iv : 0;
		s->carry -= n * iv;
	}
	if (wall) {
		s->slack -= n * iv;
		ledger_bound(s, iv);
	}
	s->prev_end = end;
	s->on = 0;
	return (uint64_t)n;
}

/*
 * Ends @s at @end: its weight in samples across [start, end), from the
 * SWITCH_OUT record's time @out when known (else the sample's). The span
 * is closed first, so a writer error cannot repeat it.
 */
static int span_end(struct sp_recorder *rec, struct sp__offcpu_span *s,
		    uint64_t out, uint64_t end, bool preempt)
{
	struct sp__offcpu *o = &rec->offcpu;
	uint64_t start = s->t_out, n, k;
	struct sp_frame pf;
	uint32_t leaf;
	int err;

	s->open = false;
	o->nopen--;
	if (end < s->t_out) {
		rec->sum.switch_anomalies++;
		ledger_reset(s);
		return 0;
	}
	if (out > start && out <= end)
		start = out;
	if (end - start < o->min_ns) {
		rec->sum.blocks_below_threshold++;
		(void)weigh(o, s, start, end, false);
		return 0;
	}
	rec->sum.off_cpu_spans++;
	n = weigh(o, s, start, end, true);
	if (n == 0)
		return 0;
	pseudo_frame(o, preempt, &pf);
	err = sp_writer_stack(rec->writer, s->leaf, &pf, 1, &leaf);
	for (k = 0; !err && k < n; k++) {
		/* evenly, from the start */
		uint64_t t = start + (end - start) / n * k;

		err = sp_writer_sample_node(rec->writer, t, s->pid, s->tid,
					    leaf);
		if (!err) {
			rec->sum.samples++;
			rec->sum.samples_synthesized++;
			rec->poll.samples++;
		}
	}
	if (err == -EINVAL || err == SP_EDELTA) {
		sp__log(rec->logger, SP_LOG_WARN,
			"off-CPU span of tid %d rejected by the writer",
			s->tid);
		return 0;
	}
	return err;
}

/* A switch-out sample: its stack opens the thread's span. */
static int span_open(struct sp_recorder *rec, const struct sp__job *job,
		     const struct sp_frame *f, size_t n)
{
	struct sp__offcpu_span *s = span_of(rec, job->tid, true);
	uint32_t leaf;
	int err;

	if (!s)
		return -ENOMEM;
	if (s->open) {
		/* It ran in between, at a time unknown: drop, never guess. */
		if (s->pid == job->pid)
			rec->sum.switch_lost++;
		else
			rec->sum.switch_anomalies++; /* the tid was reused */
		s->open = false;
		rec->offcpu.nopen--;
		ledger_reset(s);
	}
	if (s->pid != job->pid) {
		s->carry = 0; /* another thread now */
		ledger_reset(s);
	}
	if (n == 0) {
		rec->sum.empty_stack_samples++;
		return 0;
	}
	err = sp_writer_stack(rec->writer, SP_NO_PARENT, f, n, &leaf);
	if (err == -EINVAL) {
		sp__log(rec->logger, SP_LOG_WARN,
			"switch-out stack of tid %d rejected by the writer",
			job->tid);
		return 0;
	}
	if (err)
		return err;
	s->pid = job->pid;
	s->t_out = job->time;
	s->leaf = leaf;
	s->open = true;
	rec->offcpu.nopen++;
	return 0;
}

/*
 * Every open span (or @tid's only, when > 0) cut at @time: end unseen.
 * At a loss, @time is where it began (0: unknown), and a span that did
 * not begin before weighs nothing: its end may be among the lost.
 */
static int cut(struct sp_recorder *rec, int32_t tid, uint64_t time)
{
	struct sp__offcpu *o = &rec->offcpu;
	size_t i;
	int err = 0, e;

	for (i = 0; i < o->spans.len && o->nopen; i++) {
		struct sp__offcpu_span *s = sp__vec_at(&o->spans, i);

		if (!s->open || (tid > 0 && s->tid != tid))
			continue;
		if (tid <= 0 && time <= s->t_out) {
			rec->sum.switch_lost++;
			s->open = false;
			o->nopen--;
			ledger_reset(s);
			continue;
		}
		/* (an exit before the start counts as an anomaly instead) */
		rec->sum.switch_lost += time >= s->t_out;
		e = span_end(rec, s, 0, time, s->preempt);
		ledger_reset(s);
		err = err ? err : e;
	}
	return err;
}

int sp__offcpu_write(struct sp_recorder *rec, struct sp__job *job,
		     const struct sp_frame *f, size_t n)
{
	struct sp__offcpu_span *s;

	switch (job->tag) {
	case SP__JOB_SWITCH_OUT:
		return span_open(rec, job, f, n);
	case SP__JOB_SWITCH_IN:
		s = span_of(rec, job->tid, false);
		if (!s || !s->open)
			return 0;
		if (s->pid != job->pid) {
			rec->sum.switch_anomalies++;
			s->open = false;
			rec->offcpu.nopen--;
			ledger_reset(s);
			return 0;
		}
		return span_end(rec, s, job->ip >> 1, job->time,
				(job->ip & 1) != 0);
	case SP__JOB_LOSS:
		return cut(rec, 0, job->time);
	case SP__JOB_EXIT:
		return cut(rec, job->tid, job->time);
	default:
		return 0;
	}
}

int sp__offcpu_finish(struct sp_recorder *rec, uint64_t now)
{
	struct sp__offcpu *o = &rec->offcpu;
	size_t i;
	int err = 0, e;

	for (i = 0; i < o->spans.len && o->nopen; i++) {
		struct sp__offcpu_span *s = sp__vec_at(&o->spans, i);

		if (!s->open)
			continue;
		e = span_end(rec, s, 0, now, s->preempt);
		err = err ? err : e;
	}
	return err;
}

void sp__offcpu_on_cpu(struct sp_recorder *rec, int32_t tid)
{
	struct sp__offcpu_span *s;

	if (rec->offcpu.mode != SP_PROFILE_WALL)
		return;
	s = span_of(rec, tid, false);
	if (s && s->on < UINT32_MAX)
		s->on++;
}
