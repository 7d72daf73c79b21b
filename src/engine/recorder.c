/* SPDX-License-Identifier: MIT */
/* The Recorder API: options, lifetime, enable/disable, flush, liveness. */

/*
 * Options are validated up front (rate against the kernel maximum, stack
 * size), then the writer, unwinder, epoll and CPU list are set up, and in
 * threaded mode the reader and unwinder threads are started. Targets come later through sp_recorder_attach(). The
 * recorder starts enabled: attached processes sample at once.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <stackpulse/error.h>

#include "jit_side_names.h"
#include "jit_track.h"
#include "logging.h"
#include "opts.h"
#include "out_file.h"
#include "perf_event.h"
#include "pipeline.h"
#include "recorder_internal.h"
#include "sink_internal.h"
#include "system.h"

#define CPUS_MAX 4096

static int opts_check(const struct sp_recorder_opts *o)
{
	if (o->flags & ~(SP_RECORDER_KERNEL | SP_RECORDER_INHERIT_CHILDREN |
			 SP_RECORDER_ZSTD | SP_RECORDER_NO_JIT_CODE |
			 SP_RECORDER_KEEP_OLD))
		return -EINVAL;
	if (o->stack_size > SP_RECORDER_STACK_MAX ||
	    o->max_depth > SP_DEPTH_MAX || o->reserved)
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
	rec->cfg.stack_size = (stack + 7) & ~7u;
	rec->cfg.kernel = !!(o->flags & SP_RECORDER_KERNEL);
	rec->cfg.children = !!(o->flags & SP_RECORDER_INHERIT_CHILDREN);
	rec->cfg.inherit_thread = true;
	rec->cfg.read_lost = true;
	rec->ring_samples = o->ring_samples; /* 0: sized from the rate */
	rec->sample_type = sp__perf_sample_type(&rec->cfg);
	rec->sum.kernel_enabled = rec->cfg.kernel;
	return 0;
}

static int parts_new(struct sp_recorder *rec, const struct sp_recorder_opts *o)
{
	struct sp_unwinder_opts uo = { .size = sizeof(uo) };
	uint32_t depth = o->max_depth ? o->max_depth : SP_DEPTH_DEFAULT;
	int cpus[CPUS_MAX], n, i, err;

	uo.allocator = o->allocator;
	uo.logger = o->logger;
	uo.max_depth = depth;
	err = sp_unwinder_new(&uo, &rec->unwinder);
	if (err)
		return err;
	n = sp__perf_online_cpus(cpus, CPUS_MAX);
	if (n <= 0)
		return n < 0 ? n : -ENODEV;
	rec->ncpus = n;
	rec->cpus = sp__mem_calloc(&rec->mem, (size_t)n, sizeof(int));
	rec->cpu_ring = sp__mem_calloc(&rec->mem, (size_t)n, sizeof(int));
	rec->scratch = sp__mem_alloc(&rec->mem, SP__RING_RECORD_MAX);
	rec->job = sp__mem_calloc(&rec->mem, 1, sizeof(*rec->job));
	if (!rec->cpus || !rec->cpu_ring || !rec->scratch || !rec->job)
		return -ENOMEM;
	/* The threaded pool sizes its jobs from this one. */
	rec->job->cap = sp__job_frames(depth);
	rec->job->frames = sp__mem_calloc(&rec->mem, rec->job->cap,
					  sizeof(*rec->job->frames));
	if (!rec->job->frames)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		rec->cpus[i] = cpus[i];
		rec->cpu_ring[i] = -1;
	}
	rec->epfd = epoll_create1(EPOLL_CLOEXEC);
	return rec->epfd < 0 ? -errno : 0;
}

/* Unwinder threads for the threads option (SP_THREADS_AUTO: CPUs - 1). */
/*
 * Unwinder threads for the threads option. SP_THREADS_AUTO: inline mode
 * up to two CPUs, where the hand-offs between threads cost more than they
 * win (bench_system at the maximum rate here: 58-162 k samples/s inline vs
 * 4.8-13.5 k threaded; bench_pipeline: 568 k vs 220-306 k samples/s),
 * then one thread fewer than the CPUs.
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
		err = sp_sink_new_zstd(sink, 0, o->allocator, &sink);
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
	return sp_writer_new(sink, &wo, &rec->writer);
}

int sp_recorder_open_sink(struct sp_sink *sink,
			  const struct sp_recorder_opts *opts,
			  struct sp_recorder **out)
{
	struct sp_recorder_opts o;
	struct sp__mem mem;
	struct sp_recorder *rec;
	int err;

	err = sp__opts_load(opts, opts ? opts->size : 0, &o, sizeof(o));
	o.size = sizeof(o);
	if (!out || !sink || err || (err = opts_check(&o))) {
		sp_sink_free(sink);
		return !out || !sink ? -EINVAL : err;
	}
	sp__mem_init(&mem, o.allocator);
	rec = sp__mem_calloc(&mem, 1, sizeof(*rec));
	if (!rec) {
		sp_sink_free(sink);
		return -ENOMEM;
	}
	rec->mem = mem;
	rec->logger = o.logger;
	rec->epfd = -1;
	sp__guardian_init(&rec->guardian);
	rec->enabled = true;
	sp__vec_init(&rec->rings, sizeof(struct sp__ring));
	sp__merge_init(&rec->merge, &rec->mem);
	err = cfg_init(rec, &o);
	if (err)
		sp_sink_free(sink);
	else
		err = writer_new(rec, sink, &o);
	if (!err)
		err = parts_new(rec, &o);
	if (!err && !(o.flags & SP_RECORDER_NO_JIT_CODE))
		err = sp__jit_new(&rec->mem, rec->logger, &rec->jit);
	sp__procs_init(&rec->procs, &rec->mem, rec->writer, rec->unwinder);
	rec->procs.logger = rec->logger;
	rec->jit_side.dirfd = -1;
	if (!err)
		err = sp__jit_side_init(&rec->jit_side, &rec->mem, rec->logger,
					o.jit_dir);
	rec->procs.jit_side = &rec->jit_side;
	rec->procs.no_jit_code = !!(o.flags & SP_RECORDER_NO_JIT_CODE);
	if (!err && worker_count(o.threads))
		err = sp__pipeline_new(rec, worker_count(o.threads));
	if (err) {
		sp_recorder_close(rec);
		return err;
	}
	*out = rec;
	return 0;
}

static void spool_close(struct sp__mem *mem, struct sp__out_file *f)
{
	if (f) {
		sp__out_close(f, mem);
		sp__mem_free(mem, f, sizeof(*f));
	}
}

/*
 * Threaded mode writes through io_uring, so the thread that orders and
 * encodes never waits in write(2); inline mode keeps the plain file sink.
 * Explicit flushes are durable (fdatasync) in both; the periodic push
 * that keeps live Tails fed is not. A device or FIFO gets the plain sink.
 */
static int spool_open(const char *path, const struct sp_recorder_opts *o,
		      struct sp__out_file **file, struct sp_sink **sink)
{
	struct sp_sink_uring_opts uo = { .size = sizeof(uo) };
	uint32_t flags = SP__OUT_AT_COMMIT;
	struct sp__out_file *f;
	struct sp__mem mem;
	int err, fd;

	sp__mem_init(&mem, o->allocator);
	f = sp__mem_calloc(&mem, 1, sizeof(*f));
	if (!f)
		return -ENOMEM;
	if (o->flags & SP_RECORDER_KEEP_OLD)
		flags |= SP__OUT_KEEP_OLD;
	err = sp__out_open(f, &mem, path, flags);
	/* The sink's own descriptor: @f keeps one to publish the file by. */
	fd = err ? -1 : fcntl(f->fd, F_DUPFD_CLOEXEC, 0);
	if (!err && fd < 0)
		err = -errno;
	if (!err && (!worker_count(o->threads) || sp__out_in_place(f))) {
		err = sp__sink_new_fd_owned(fd, f->regular, o->allocator, sink);
	} else if (!err) {
		uo.logger = o->logger;
		uo.flags = SP_SINK_URING_DATASYNC;
		err = sp_sink_new_uring_fd(fd, SP_SINK_CLOSE_FD, &uo,
					   o->allocator, sink);
	}
	if (err) {
		if (fd >= 0)
			close(fd);
		spool_close(&mem, f);
		return err;
	}
	*file = f;
	return 0;
}

/* Everything sp_recorder_open_sink() would refuse, without its effects. */
static int opts_validate(const struct sp_recorder_opts *o)
{
	uint32_t hz;
	int err = opts_check(o);

	return err ? err : rate_resolve(o->sample_hz, &hz);
}

int sp_recorder_open(const char *path, const struct sp_recorder_opts *opts,
		     struct sp_recorder **out)
{
	struct sp_recorder_opts o;
	struct sp__out_file *file = NULL;
	struct sp_sink *sink;
	struct sp__mem mem;
	size_t n;
	int err;

	if (!path || !out)
		return -EINVAL;
	/* Checked here too, so bad options never create anything. */
	err = sp__opts_load(opts, opts ? opts->size : 0, &o, sizeof(o));
	o.size = sizeof(o);
	if (err || (err = opts_validate(&o)) ||
	    (err = spool_open(path, &o, &file, &sink)))
		return err;
	sp__mem_init(&mem, o.allocator);
	err = sp_recorder_open_sink(sink, &o, out);
	if (err) {
		spool_close(&mem, file); /* the path stays as it was */
		return err;
	}
	(*out)->out = file;
	n = strlen(path) + 1;
	(*out)->path = sp__mem_alloc(&(*out)->mem, n);
	if (!(*out)->path) {
		sp_recorder_close(*out);
		*out = NULL;
		return -ENOMEM;
	}
	memcpy((*out)->path, path, n);
	return 0;
}

int sp__recorder_publish(struct sp_recorder *rec)
{
	int err;

	if (!rec->out || rec->out->published)
		return 0;
	err = sp__out_publish(rec->out, &rec->mem);
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
	/* Disabled CPU events saw no fork/exec/mmap: read /proc again. */
	err = rec->sys && !was ? sp__system_scan(rec) : 0;
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
	if (rec->pipe) {
		err = sp__pipeline_step(rec, true);
	} else {
		err = sp__recorder_drain(rec);
		if (!err)
			err = sp__recorder_release(rec, UINT64_MAX);
		if (!err)
			rec->released_ns = UINT64_MAX;
	}
	if (!err)
		err = sp__recorder_read_lost(rec, true);
	if (!err)
		err = rec->replay ? 0 : sp__recorder_sweep(rec, true);
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
	size_t size;

	/* An output struct's size follows the input rule (src/base/opts.h). */
	if (!rec || !out || !sp__opts_size_ok(out->size))
		return -EINVAL;
	size = out->size < sizeof(st) ? out->size : sizeof(st);
	memset(&st, 0, sizeof(st));
	if (rec->jit)
		st = rec->jit->st;
	st.size = out->size;
	memcpy(out, &st, size);
	return 0;
}

void sp_recorder_summary(const struct sp_recorder *rec,
			 struct sp_recording_summary *out)
{
	if (!rec || !out)
		return;
	*out = rec->sum;
	memcpy(out->errors, rec->sum.errors, sizeof(out->errors));
	for (size_t i = 0; i < SP_SAMPLE_ERR_COUNT; i++)
		out->errors[i] += rec->ustats.errors[i];
	memcpy(out->truncation_reasons, rec->ustats.errors,
	       sizeof(out->truncation_reasons));
	memcpy(out->fallbacks, rec->ustats.fallbacks, sizeof(out->fallbacks));
	out->jit_maps_kept = rec->jit_side.saved;
	out->jit_maps_failed = rec->jit_side.failed;
}

void sp_recorder_close(struct sp_recorder *rec)
{
	struct sp__mem mem;
	size_t i;

	if (!rec)
		return;
	mem = rec->mem;
	sp__guardian_stop(&rec->guardian);
	sp__system_free(rec);
	sp__pipeline_free(rec); /* threads first: they read rings and maps */
	sp__procs_fini(&rec->procs);
	sp__jit_side_fini(&rec->jit_side);
	sp__jit_free(rec->jit); /* after the processes: they hold its tables */
	for (i = 0; i < rec->rings.len; i++) {
		struct sp__ring *r = sp__vec_at(&rec->rings, i);

		sp__ring_unmap(r);
		close(r->owner_fd);
	}
	sp__vec_fini(&rec->rings, &mem);
	sp__merge_fini(&rec->merge);
	if (rec->epfd >= 0)
		close(rec->epfd);
	sp_writer_free(rec->writer); /* closes the spool's fd */
	spool_close(&mem, rec->out);
	sp_unwinder_free(rec->unwinder);
	sp__mem_free(&mem, rec->cpus, (size_t)rec->ncpus * sizeof(int));
	sp__mem_free(&mem, rec->cpu_ring, (size_t)rec->ncpus * sizeof(int));
	sp__mem_free(&mem, rec->scratch, SP__RING_RECORD_MAX);
	if (rec->path)
		sp__mem_free(&mem, rec->path, strlen(rec->path) + 1);
	if (rec->job)
		sp__mem_free(&mem, rec->job->frames,
			     rec->job->cap * sizeof(*rec->job->frames));
	sp__mem_free(&mem, rec->job, sizeof(*rec->job));
	sp__mem_free(&mem, rec, sizeof(*rec));
}
