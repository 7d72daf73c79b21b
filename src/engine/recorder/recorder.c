/* SPDX-License-Identifier: MIT */
/* The Recorder API: options, lifetime, enable/disable, flush, liveness. */

/*
 * Options are validated up front (rate against the kernel maximum, stack
 * size), then the writer, unwinder, epoll, rings (the CPU list) and the
 * pipeline are set up; in threaded mode that starts the reader and
 * unwinder threads. Targets come later through sp_recorder_attach() (or,
 * in system mode, from system.c). The recorder starts enabled: attached
 * processes sample at once.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <stackpulse/error.h>

#include "jit_side_names.h"
#include "jit_track.h"
#include "logging.h"
#include "opts.h"
#include "perf_event.h"
#include "pipeline.h"
#include "recorder_internal.h"
#include "spool_file.h"
#include "system.h"

static int opts_check(const struct sp_recorder_opts *o)
{
	if (o->flags & ~(SP_RECORDER_KERNEL | SP_RECORDER_INHERIT_CHILDREN |
			 SP_RECORDER_ZSTD | SP_RECORDER_NO_JIT_CODE |
			 SP_RECORDER_KEEP_OLD))
		return -EINVAL;
	if (o->stack_size > SP_RECORDER_STACK_MAX ||
	    o->max_depth > SP_DEPTH_MAX || o->reserved ||
	    o->mode > SP_PROFILE_WALL)
		return -EINVAL;
	return 0;
}

static int rate_resolve(uint32_t want, uint32_t *hz)
{
	long max = sp__perf_max_rate();

	if (want == 0)
		want = 999;
	if (want == SP_RATE_MAX) {
		if (max < 0)
			return (int)max;
		*hz = (uint32_t)max;
		return 0;
	}
	if (max > 0 && want > (uint64_t)max)
		return SP_EFREQ;
	*hz = want;
	return 0;
}

static int cfg_init(struct sp_recorder *rec, const struct sp_recorder_opts *o)
{
	uint32_t stack = o->stack_size ? o->stack_size : 32768;
	int err = rate_resolve(o->sample_hz, &rec->cfg.hz);

	if (err)
		return err;
	/* Off-CPU: context switches; wall: both, cpu-clock's side-band. */
	rec->cfg.source = o->mode == SP_PROFILE_OFF_CPU ?
				  &sp__source_context_switches :
				  &sp__source_cpu_clock;
	rec->cfg.all_modes = o->mode == SP_PROFILE_WALL;
	rec->cfg.extra = o->mode == SP_PROFILE_WALL ?
				 &sp__source_context_switches :
				 NULL;
	rec->cfg.stack_size = (stack + 7) & ~7u;
	rec->cfg.kernel = !!(o->flags & SP_RECORDER_KERNEL);
	rec->cfg.children = !!(o->flags & SP_RECORDER_INHERIT_CHILDREN);
	rec->cfg.inherit_thread = true;
	rec->cfg.read_lost = true;
	rec->rings.ring_samples = o->ring_samples; /* 0: sized from the rate */
	rec->rings.sample_type = sp__perf_sample_type(&rec->cfg);
	rec->sum.kernel_enabled = rec->cfg.kernel;
	return 0;
}

/* User frames per stack: the max_depth option or its default. */
static uint32_t depth_of(const struct sp_recorder_opts *o)
{
	return o->max_depth ? o->max_depth : SP_DEPTH_DEFAULT;
}

static int parts_new(struct sp_recorder *rec, const struct sp_recorder_opts *o)
{
	struct sp_unwinder_opts uo = { .size = sizeof(uo) };
	int err;

	uo.allocator = o->allocator;
	uo.logger = o->logger;
	uo.max_depth = depth_of(o);
	err = sp_unwinder_new(&uo, &rec->unwinder);
	if (err)
		return err;
	rec->epfd = epoll_create1(EPOLL_CLOEXEC);
	return rec->epfd < 0 ? -errno : 0;
}

/*
 * Unwinder threads for the threads option. SP_THREADS_AUTO: inline mode
 * up to two CPUs, whatever the rate: there inline mode wrote as many
 * samples for less CPU up to 50 kHz, and above, where the kernel's own
 * sampling takes both CPUs, neither mode clearly won (bench_system and
 * spulse record -a, docs/explanation/pipeline.md; bench_pipeline on 2
 * CPUs: about 2x inline's CPU per sample, no spare core to win it back),
 * then one thread fewer than the CPUs: there the threaded serial stage
 * (0.5-0.7 us per sample) limits the rate instead of inline mode's
 * whole cost on one thread (0.8-0.9 us); idle workers sleep and cost
 * nothing (docs/explanation/pipeline.md).
 */
static unsigned worker_count(uint32_t threads)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	uint32_t n = threads;

	if (threads == SP_THREADS_AUTO)
		n = cpus > 2 ? (uint32_t)cpus - 1 : 0;
	return n > SP__WORKERS_MAX ? SP__WORKERS_MAX : n;
}

static int writer_new(struct sp_recorder *rec, struct sp_sink *sink,
		      const struct sp_recorder_opts *o)
{
	struct sp_writer_opts wo = { .size = sizeof(wo) };
	int err;

	if (o->flags & SP_RECORDER_ZSTD) {
		struct sp_sink_opts so = { .size = sizeof(so) };

		so.allocator = o->allocator;
		err = sp_sink_new_zstd(sink, &so, &sink);
		if (err)
			return err;
	}
	wo.allocator = o->allocator;
	wo.start_timestamp_us = o->start_timestamp_us;
	wo.sample_interval_us = o->sample_interval_us;
	/* The nominal interval of the rate, rounded to the nearest us. */
	if (!wo.sample_interval_us && rec->cfg.hz)
		wo.sample_interval_us =
			(1000000u + rec->cfg.hz / 2) / rec->cfg.hz;
	err = sp_writer_new(sink, &wo, &rec->writer);
	if (err)
		return err;
	/* The mode's module records come first (spool.h). */
	return sp__offcpu_init(rec, (int)o->mode, o->off_cpu_min_us,
			       wo.sample_interval_us);
}

static const struct sp__pipeline_ops pipeline_ops = {
	.apply = sp__recorder_apply,
	.write = sp__recorder_sample_write,
	.discard = sp__recorder_sample_discard,
};

/* CPU mode: workers write too (off-CPU jobs need the sequencer's ledger). */
static const struct sp__pipeline_ops pipeline_ops_cpu = {
	.apply = sp__recorder_apply,
	.write = sp__recorder_sample_write,
	.write_off = sp__recorder_sample_write_off,
	.discard = sp__recorder_sample_discard,
};

/*
 * The pipeline of either mode. Threaded mode also has the process table
 * write dispatched jobs before a module change (so the spool order is
 * inline mode's), and leaves unwind tables to the workers.
 */
static int pipeline_new(struct sp_recorder *rec, unsigned workers,
			uint32_t depth)
{
	struct sp__pipeline_cfg pc = { .mem = &rec->mem,
				       .logger = rec->logger,
				       .unwinder = rec->unwinder,
				       .rings = &rec->rings,
				       .workers = workers,
				       .job_frames = sp__job_frames(depth),
				       .ops = rec->offcpu.mode ==
							      SP_PROFILE_CPU ?
						      &pipeline_ops_cpu :
						      &pipeline_ops,
				       .ctx = rec };
	int err = sp__pipeline_new(&pc, &rec->pipe);

	if (err || !workers)
		return err;
	rec->procs.sync = sp__pipeline_sync;
	rec->procs.sync_ctx = rec->pipe;
	/* Workers build unwind tables on first use, off the sequencer. */
	rec->procs.lazy_tables = true;
	return sp__recorder_ep_add(rec, sp__pipeline_wake_fd(rec->pipe),
				   SP__EP_WAKE);
}

/* A recorder for checked options @o writing into @sink (owned). */
static int recorder_new(struct sp_sink *sink, const struct sp_recorder_opts *o,
			struct sp_recorder **out)
{
	struct sp__mem mem;
	struct sp_recorder *rec;
	int err;

	sp__mem_init(&mem, o->allocator);
	rec = sp__mem_calloc(&mem, 1, sizeof(*rec));
	if (!rec) {
		sp_sink_free(sink);
		return -ENOMEM;
	}
	rec->mem = mem;
	rec->logger = o->logger;
	rec->epfd = -1;
	sp__guardian_init(&rec->guardian);
	rec->enabled = true;
	rec->policy = rec->own_policy = o->system ? &sp__policy_system :
						    &sp__policy_process;
	err = sp__rings_init(&rec->rings, &rec->mem, rec->logger);
	if (!err)
		err = cfg_init(rec, o);
	if (err)
		sp_sink_free(sink);
	else
		err = writer_new(rec, sink, o);
	if (!err)
		err = parts_new(rec, o);
	sp__procs_init(&rec->procs, &rec->mem, rec->writer, rec->unwinder);
	rec->procs.logger = rec->logger;
	rec->jit_side.dirfd = -1;
	if (!err)
		err = sp__jit_side_init(&rec->jit_side, &rec->mem, rec->logger,
					o->jit_dir);
	rec->procs.jit_side = &rec->jit_side;
	rec->procs.no_jit_code = !!(o->flags & SP_RECORDER_NO_JIT_CODE);
	if (!err && !rec->procs.no_jit_code)
		err = sp__jit_new(&rec->mem, rec->logger, &rec->procs.jit);
	if (!err)
		err = pipeline_new(rec, worker_count(o->threads), depth_of(o));
	if (err) {
		sp_recorder_close(rec);
		return err;
	}
	*out = rec;
	return 0;
}

/*
 * The spool file (format's door, spool_file.h): threaded mode writes
 * through io_uring, so the thread that orders and encodes never waits in
 * write(2); inline mode keeps the plain file sink.
 */
static int spool_open(const char *path, const struct sp_recorder_opts *o,
		      struct sp__spool_file **file, struct sp_sink **sink)
{
	struct sp__spool_file_opts so = {
		.allocator = o->allocator,
		.logger = o->logger,
		.keep_old = !!(o->flags & SP_RECORDER_KEEP_OLD),
		.uring = worker_count(o->threads) > 0,
	};

	return sp__spool_file_open(path, &so, file, sink);
}

/* The recorder writing to a new spool file at @path. */
static int recorder_open_path(const char *path,
			      const struct sp_recorder_opts *o,
			      struct sp_recorder **out)
{
	struct sp__spool_file *file = NULL;
	struct sp_sink *sink;
	size_t len = strlen(path) + 1;
	int err;

	err = spool_open(path, o, &file, &sink);
	if (err)
		return err;
	err = recorder_new(sink, o, out);
	if (err) {
		sp__spool_file_close(file); /* the path stays as it was */
		return err;
	}
	(*out)->out = file;
	(*out)->path = sp__mem_alloc(&(*out)->mem, len);
	if (!(*out)->path) {
		sp_recorder_close(*out);
		*out = NULL;
		return -ENOMEM;
	}
	memcpy((*out)->path, path, len);
	return 0;
}

/*
 * Both constructors: a file at @path, or @sink (owned, freed on every
 * failure). Everything that can be refused is checked first (options,
 * the rate, system-mode filters, the cgroup), so bad options never
 * create or truncate @path.
 */
static int recorder_open(const char *path, struct sp_sink *sink,
			 const struct sp_recorder_opts *opts,
			 struct sp_recorder **out)
{
	struct sp_recorder_opts o;
	struct sp_system_opts so;
	uint32_t hz;
	int cgfd = -1, err;

	err = sp__opts_load(opts, opts ? opts->size : 0, &o, sizeof(o));
	o.size = sizeof(o);
	if (!err)
		err = opts_check(&o);
	if (!err)
		err = rate_resolve(o.sample_hz, &hz);
	if (!err && o.system)
		err = sp__system_prepare(o.system, &so, &cgfd);
	if (err) {
		sp_sink_free(sink);
		return err;
	}
	if (path)
		err = recorder_open_path(path, &o, out);
	else
		err = recorder_new(sink, &o, out);
	if (err) {
		if (cgfd >= 0)
			close(cgfd);
		return err;
	}
	if (!o.system)
		return 0;
	err = sp__system_start(*out, &o, &so, cgfd); /* owns @cgfd */
	if (err) {
		sp_recorder_close(*out);
		*out = NULL;
	}
	return err;
}

int sp_recorder_open(const char *path, const struct sp_recorder_opts *opts,
		     struct sp_recorder **out)
{
	if (!path || !out)
		return -EINVAL;
	return recorder_open(path, NULL, opts, out);
}

int sp_recorder_open_sink(struct sp_sink *sink,
			  const struct sp_recorder_opts *opts,
			  struct sp_recorder **out)
{
	if (!sink || !out) {
		sp_sink_free(sink);
		return -EINVAL;
	}
	return recorder_open(NULL, sink, opts, out);
}

int sp__recorder_publish(struct sp_recorder *rec)
{
	int err;

	if (!rec->out || sp__spool_file_published(rec->out))
		return 0;
	sp__pipeline_writes_hold(rec->pipe); /* workers write to it */
	err = sp__spool_file_publish(rec->out);
	sp__pipeline_writes_let_go(rec->pipe);
	if (err)
		sp__log(rec->logger, SP_LOG_ERROR,
			"cannot put the spool at %s: %s", rec->path,
			sp_strerror(err));
	return err;
}

int sp_recorder_enable(struct sp_recorder *rec)
{
	bool was;
	int err;

	if (!rec)
		return -EINVAL;
	was = rec->enabled;
	/* Disabled events saw no fork/exec/mmap: catch up first. */
	err = was ? 0 : rec->policy->resume(rec);
	return err ? err : sp__recorder_set_enabled(rec, true);
}

int sp_recorder_disable(struct sp_recorder *rec)
{
	return rec ? sp__recorder_set_enabled(rec, false) : -EINVAL;
}

int sp_recorder_flush(struct sp_recorder *rec)
{
	int err;

	if (!rec)
		return -EINVAL;
	if (rec->finished)
		return 0;
	err = sp__recorder_publish(rec);
	return err ? err : sp__recorder_flush(rec);
}

int sp__recorder_flush(struct sp_recorder *rec)
{
	int err, ferr;

	if (rec->finished)
		return 0;
	/* Processes that died since the last poll are retired now too. */
	sp__recorder_collect(rec);
	err = sp__pipeline_step(rec->pipe, UINT64_MAX);
	if (!err)
		err = sp__recorder_read_lost(rec, true);
	if (!err)
		err = rec->policy->sweep(rec, true);
	sp__recorder_reap(rec);
	ferr = sp_writer_flush(rec->writer);
	return err ? err : ferr;
}

/*
 * The generations still running when the recording ends: their perf maps
 * go to the side directory as they are now (processes with no module left
 * were retired, and their copy made then).
 */
static void keep_running_maps(struct sp_recorder *rec)
{
	size_t i;

	for (i = 0; i < rec->procs.list.len; i++) {
		const struct sp__process *p =
			*(struct sp__process **)sp__vec_at(&rec->procs.list, i);

		if (p->modules.len)
			sp__jit_side_save(&rec->jit_side, p->pid,
					  SP__JIT_SIDE_OPEN);
	}
}

int sp_recorder_finish(struct sp_recorder *rec)
{
	int err, ferr;

	if (!rec)
		return -EINVAL;
	if (rec->finished)
		return 0;
	sp__recorder_set_enabled(rec, false);
	err = sp_recorder_flush(rec);
	keep_running_maps(rec);
	/* Threads still off the CPU were so up to now. */
	if (!err)
		err = sp__offcpu_finish(
			rec, sp__clock_read(sp__recorder_clock(rec)));
	ferr = sp_writer_finish(rec->writer);
	rec->finished = true;
	return err ? err : ferr;
}

static struct sp__process *attached(const struct sp_recorder *rec, int32_t pid)
{
	return sp__procs_find(&rec->procs, pid);
}

int sp_recorder_process_is_active(struct sp_recorder *rec, int32_t pid)
{
	struct sp__process *p;

	if (!rec || pid <= 0)
		return -EINVAL;
	p = attached(rec, pid);
	return p ? sp__process_alive(p) : -EINVAL;
}

int sp_recorder_active_process_count(struct sp_recorder *rec)
{
	size_t i;
	int n = 0, alive;

	if (!rec)
		return -EINVAL;
	for (i = 0; i < rec->procs.list.len; i++) {
		alive = sp__process_alive(*(
			struct sp__process **)sp__vec_at(&rec->procs.list, i));
		if (alive < 0)
			return alive;
		n += alive;
	}
	return n;
}

int sp_recorder_jit_stats(const struct sp_recorder *rec,
			  struct sp_jit_stats *out)
{
	struct sp_jit_stats st;

	if (!rec)
		return -EINVAL;
	memset(&st, 0, sizeof(st));
	if (rec->procs.jit)
		st = rec->procs.jit->st;
	st.size = sizeof(st);
	return sp__opts_store(out, &st, sizeof(st));
}

int sp_recorder_summary(const struct sp_recorder *rec,
			struct sp_recording_summary *out)
{
	const struct sp__pipeline *p;
	struct sp_recording_summary s;
	size_t i;

	if (!rec)
		return -EINVAL;
	s = rec->sum;
	sp__pipeline_writes_hold(rec->pipe);
	s.samples += rec->wsum.samples;
	s.empty_stack_samples += rec->wsum.empty_stack_samples;
	s.truncated_frame_markers += rec->wsum.truncated_frame_markers;
	s.size = sizeof(s);
	s.minimum_ring_buffer_bytes = rec->rings.min_bytes;
	s.maximum_ring_buffer_bytes = rec->rings.max_bytes;
	p = rec->pipe;
	s.sample_events += p->unusable; /* seen, but unusable */
	s.lost_events += p->dropped;
	for (i = 0; i < SP_SAMPLE_ERR_COUNT; i++)
		s.errors[i] += p->ustats.errors[i];
	memcpy(s.truncation_reasons, p->ustats.errors,
	       sizeof(s.truncation_reasons));
	memcpy(s.fallbacks, p->ustats.fallbacks, sizeof(s.fallbacks));
	sp__pipeline_writes_let_go(rec->pipe);
	s.jit_maps_kept = rec->jit_side.saved;
	s.jit_maps_failed = rec->jit_side.failed;
	return sp__opts_store(out, &s, sizeof(s));
}

int sp_recorder_pipeline_stats(const struct sp_recorder *rec,
			       struct sp_pipeline_stats *out)
{
	struct sp_pipeline_stats st;

	if (!rec)
		return -EINVAL;
	memset(&st, 0, sizeof(st));
	st.size = sizeof(st);
	sp__pipeline_stats(rec->pipe, &st);
	return sp__opts_store(out, &st, sizeof(st));
}

const struct sp__clock *sp__recorder_clock(const struct sp_recorder *rec)
{
	return rec->hooks.clock ? rec->hooks.clock : &sp__clock_monotonic;
}

int sp__recorder_set_hooks(struct sp_recorder *rec,
			   const struct sp__recorder_hooks *hooks)
{
	struct sp__recorder_hooks none = { 0 };
	int err;

	if (!hooks)
		hooks = &none;
	err = sp__pipeline_set_tap(rec->pipe, hooks->tap, hooks->tap_ctx);
	if (err)
		return err;
	rec->hooks = *hooks;
	rec->policy = hooks->policy ? hooks->policy : rec->own_policy;
	return sp__pipeline_set_clock(rec->pipe, sp__recorder_clock(rec));
}

void sp__recorder_parts(struct sp_recorder *rec, struct sp__recorder_parts *out)
{
	out->mem = &rec->mem;
	out->cfg = &rec->cfg;
	out->rings = &rec->rings;
	out->procs = &rec->procs;
	out->pipe = rec->pipe;
	out->policy = rec->own_policy;
}

void sp_recorder_close(struct sp_recorder *rec)
{
	struct sp__mem mem;

	if (!rec)
		return;
	mem = rec->mem;
	sp__guardian_stop(&rec->guardian);
	rec->own_policy->free(rec);
	sp__pipeline_free(rec->pipe); /* threads first: rings and maps */
	rec->procs.sync = NULL;
	sp__procs_fini(&rec->procs);
	sp__offcpu_fini(rec);
	sp__jit_side_fini(&rec->jit_side);
	sp__jit_free(rec->procs.jit); /* after the processes: their tables */
	sp__rings_fini(&rec->rings);
	if (rec->epfd >= 0)
		close(rec->epfd);
	sp_writer_free(rec->writer); /* closes the spool's fd */
	sp__spool_file_close(rec->out);
	sp_unwinder_free(rec->unwinder);
	if (rec->path)
		sp__mem_free(&mem, rec->path, strlen(rec->path) + 1);
	sp__mem_free(&mem, rec, sizeof(*rec));
}
