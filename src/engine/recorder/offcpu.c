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
 *
 * Late records (offcpu.h): a switch-in applied before the switch-out
 * sample it ends is kept; when that sample comes, older than it, the span
 * ends there, as soon as its SWITCH_OUT record (or, failing that, the
 * thread's next record of any kind) is applied:
 *
 *   in order      sample(t1) OUT(t2) ...  IN(t3)    span [t2, t3)
 *   late          IN(t3) ... sample(t1) OUT(t2)     span [t2, t3)
 *   late, no OUT  IN(t3) ... sample(t1) ...         span [t1, t3)
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

	if (rec->offcpu.mode == SP_PROFILE_CPU)
		return;
	if (time < rec->offcpu.newest)
		rec->sum.late_records++;
	else
		rec->offcpu.newest = time;
	if (cpu >= SP__OFFCPU_CPUS)
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

/*
 * A switch-in of @s found no span: counted when the thread was seen
 * switching out before (in system mode every task's switch-ins are
 * read, most of processes not sampled), undone if a late one matches.
 */
static void unmatched(struct sp_recorder *rec, struct sp__offcpu_span *s)
{
	s->in_counted = s->ever_armed;
	rec->sum.switch_in_unmatched += s->ever_armed;
}

static void unmatched_undo(struct sp_recorder *rec, struct sp__offcpu_span *s)
{
	if (s->in_counted && rec->sum.switch_in_unmatched)
		rec->sum.switch_in_unmatched--;
	s->in_counted = false;
}

/*
 * Ends @s's armed span at its pending switch-in @in_ns, from the
 * SWITCH_OUT record's time @out (0: unknown): a late span (offcpu.c).
 */
static int close_late(struct sp_recorder *rec, struct sp__offcpu_span *s,
		      uint64_t out, bool preempt)
{
	s->close_pending = false;
	s->in_pending = false;
	s->out_fresh = false;
	s->armed = false;
	rec->offcpu.narmed--;
	unmatched_undo(rec, s); /* matched after all */
	if (out >= (1ull << 63))
		out = 0; /* cannot be carried: the sample's time then */
	return dispatch(rec, SP__JOB_SWITCH_IN, s->in_pid, s->tid, s->in_ns,
			out << 1 | (out && preempt));
}

/* A late span whose SWITCH_OUT record never came ends without it. */
static int settle(struct sp_recorder *rec, struct sp__offcpu_span *s)
{
	return s->close_pending ? close_late(rec, s, 0, false) : 0;
}

/* Whether @s's last SWITCH_OUT record belongs to a span ending at @end. */
static bool out_fits(const struct sp__offcpu_span *s, uint64_t end)
{
	return s->out_fresh && s->out_ns >= s->arm_ns && s->out_ns <= end;
}

int sp__offcpu_apply_switch(struct sp_recorder *rec, uint32_t type,
			    const void *data, size_t len)
{
	struct sp__perf_switch sw;
	struct sp__offcpu_span *s;
	uint64_t out;
	bool preempt;
	int err;

	if (rec->offcpu.mode == SP_PROFILE_CPU ||
	    sp__perf_parse_switch(data, len, type, rec->rings.sample_type,
				  &sw) ||
	    sw.id.tid <= 0)
		return 0;
	rec->sum.switch_events++;
	/*
	 * The record and the sample of one switch may come in either order
	 * (equal times): how it left is the SWITCH_OUT seen since the last
	 * switch-in, whichever came first. A switch-in is kept even with no
	 * span armed: a late switch-out sample may still match it.
	 */
	s = span_of(rec, sw.id.tid, true);
	if (!s)
		return sw.out ? -ENOMEM : 0;
	if (sw.out) {
		/* a later switch-out's: the late span's own never came */
		if (s->close_pending &&
		    (sw.id.time < s->arm_ns || sw.id.time > s->in_ns)) {
			err = settle(rec, s);
			if (err)
				return err;
		}
		s->preempt = sw.preempt;
		s->out_ns = sw.id.time;
		s->out_fresh = true;
		if (s->close_pending)
			return close_late(rec, s, s->out_ns, s->preempt);
		return 0;
	}
	err = settle(rec, s);
	if (err)
		return err;
	if (s->armed && sw.id.time < s->arm_ns) {
		/* older than the armed switch-out: the span it ended is gone */
		rec->sum.switch_in_unmatched++;
		return 0;
	}
	out = out_fits(s, sw.id.time) && s->out_ns < (1ull << 63) ? s->out_ns :
								    0;
	preempt = s->out_fresh && s->preempt;
	s->out_fresh = false;
	s->in_ns = sw.id.time;
	s->in_pid = sw.id.pid;
	if (!s->armed) {
		/* not switched out under our eyes, or its sample is late */
		unmatched(rec, s);
		s->in_pending = true;
		return 0;
	}
	s->armed = false;
	s->in_pending = false;
	rec->offcpu.narmed--;
	return dispatch(rec, SP__JOB_SWITCH_IN, sw.id.pid, sw.id.tid,
			sw.id.time, out << 1 | preempt);
}

int sp__offcpu_arm(struct sp_recorder *rec, int32_t tid, uint64_t time)
{
	struct sp__offcpu_span *s = span_of(rec, tid, true);
	int err;

	if (!s)
		return -ENOMEM;
	err = settle(rec, s); /* before the new span's job */
	if (err)
		return err;
	if (!s->armed)
		rec->offcpu.narmed++;
	s->armed = true;
	s->ever_armed = true;
	s->arm_ns = time;
	return 0;
}

int sp__offcpu_armed(struct sp_recorder *rec, int32_t tid)
{
	struct sp__offcpu_span *s = span_of(rec, tid, false);

	if (!s || !s->armed || !s->in_pending)
		return 0;
	if (s->in_ns < s->arm_ns) {
		s->in_pending = false; /* an older one: nothing to match */
		return 0;
	}
	/* Late: its switch-in was applied first. */
	if (out_fits(s, s->in_ns))
		return close_late(rec, s, s->out_ns, s->preempt);
	s->close_pending = true; /* until its SWITCH_OUT record comes */
	return 0;
}

/*
 * Disarms @tid's span (every span for tid 0); whether one was armed. A
 * late span whose switch-in was seen is ended there instead (@err).
 */
static bool disarm(struct sp_recorder *rec, int32_t tid, int *err)
{
	struct sp__offcpu *o = &rec->offcpu;
	struct sp__offcpu_span *s;
	size_t i;

	if (tid > 0) {
		s = span_of(rec, tid, false);
		if (!s || !s->armed)
			return false;
		if (s->close_pending) {
			*err = close_late(rec, s, 0, false);
			return false; /* its end is known: no cut */
		}
		s->armed = false;
		o->narmed--;
		return true;
	}
	for (i = 0; i < o->spans.len && o->narmed; i++) {
		s = sp__vec_at(&o->spans, i);
		if (s->close_pending) {
			int e = close_late(rec, s, 0, false);

			*err = *err ? *err : e;
		} else if (s->armed) {
			s->armed = false;
			o->narmed--;
		}
	}
	return true;
}

int sp__offcpu_apply_cut(struct sp_recorder *rec, uint32_t tag, int32_t pid,
			 int32_t tid, uint64_t time)
{
	int err = 0;

	if (rec->offcpu.mode == SP_PROFILE_CPU || rec->offcpu.narmed == 0 ||
	    !disarm(rec, tag == SP__JOB_EXIT ? tid : 0, &err))
		return err;
	return err ? err : dispatch(rec, tag, pid, tid, time, 0);
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
	s->on_after = 0;
	s->nrecent = 0;
}

/* One more cpu-clock sample stamped @time after @s's switch-out. */
static void after_add(struct sp__offcpu_span *s, uint64_t time)
{
	if (s->on_after == 0 || time < s->after_ns)
		s->after_ns = time;
	if (s->on_after < UINT32_MAX)
		s->on_after++;
}

/*
 * @s's span opens at @t_out: cpu-clock samples written before it but
 * stamped after it (its switch-out sample was late) are not its run's.
 */
static void after_sort(struct sp__offcpu_span *s)
{
	uint32_t i, n = s->nrecent < 4 ? s->nrecent : 4;

	for (i = 0; i < n; i++)
		if (s->recent[i] > s->t_out && s->on) {
			s->on--;
			after_add(s, s->recent[i]);
		}
	s->nrecent = 0;
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

/*
 * Keeps @s's two remainders within an interval of each other, counting
 * what goes (recorder.h): slack less carry is the runs' time less what
 * their cpu-clock samples stand for, so a carry trimmed is off-CPU time
 * the samples already took (clipped), slack trimmed from above run time
 * no sample showed (unsampled), from below samples beyond it.
 */
static void ledger_bound(struct sp_recording_summary *sum,
			 struct sp__offcpu_span *s, int64_t iv)
{
	int64_t c, sl;

	/* The ledger only evens out a sample's phase, never stores hours. */
	c = min64(s->carry, (s->slack > 0 ? s->slack : 0) + iv);
	sum->wall_clipped_ns += (uint64_t)(s->carry - c);
	s->carry = c;
	sl = min64(s->slack, (s->carry > 0 ? s->carry : 0) + iv);
	sum->wall_unsampled_ns += (uint64_t)(s->slack - sl);
	s->slack = sl;
	if (s->slack < -iv) {
		sum->wall_oversampled_ns += (uint64_t)(-iv - s->slack);
		s->slack = -iv;
	}
}

/*
 * The samples that @s's span from @start to @end weighs (offcpu.h): its
 * carry plus the span, and in wall mode no more than the ledger allows;
 * none for a dropped block (@counted false). Both keep what is left,
 * and the ledger goes on from @end.
 */
static uint64_t weigh(struct sp_recorder *rec, struct sp__offcpu_span *s,
		      uint64_t start, uint64_t end, bool counted)
{
	struct sp__offcpu *o = &rec->offcpu;
	const int64_t iv = (int64_t)o->interval_ns;
	bool wall = o->mode == SP_PROFILE_WALL;
	int64_t d = counted ? ns_cap(end - start) : 0, avail, n = 0;

	if (s->on_after && s->after_ns <= end) {
		s->on += s->on_after; /* cpu-clock beyond the switch-out */
		s->on_after = 0;
	}
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
		ledger_bound(&rec->sum, s, iv);
	}
	s->prev_end = end;
	/* samples stamped after the end (written early) are the next run's */
	s->on = s->on_after;
	s->on_after = 0;
	s->nrecent = 0;
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
		(void)weigh(rec, s, start, end, false);
		return 0;
	}
	rec->sum.off_cpu_spans++;
	n = weigh(rec, s, start, end, true);
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
		s->carry = 0; /* another thread now (0: its first span) */
		if (s->pid != 0)
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
	after_sort(s);
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
		rec->sum.spans_cut_at_exit += tid > 0 && time >= s->t_out;
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
		if (s->close_pending) {
			/* late, its switch-in seen: it ended there */
			s->close_pending = false;
			unmatched_undo(rec, s);
			e = span_end(rec, s, 0, s->in_ns, false);
		} else {
			rec->sum.spans_open_at_end++;
			e = span_end(rec, s, 0, now, s->preempt);
		}
		err = err ? err : e;
	}
	return err;
}

void sp__offcpu_on_cpu(struct sp_recorder *rec, int32_t tid, uint64_t time)
{
	struct sp__offcpu_span *s;

	if (rec->offcpu.mode != SP_PROFILE_WALL)
		return;
	s = span_of(rec, tid, false);
	if (!s)
		return;
	if (s->open && time > s->t_out) {
		after_add(s, time); /* the next run's, unless its span says */
	} else if (s->on < UINT32_MAX) {
		s->on++;
		s->recent[s->nrecent % 4] = time; /* the last four kept */
		if (s->nrecent < UINT32_MAX)
			s->nrecent++;
	}
}
