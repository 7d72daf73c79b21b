/* SPDX-License-Identifier: MIT */
/* perf_event_open: the attr, fallbacks, online CPUs and ring sizing. */

/*
 * Facts from research/feasibility.md §2: software events (cpu-clock in
 * frequency mode today: event_source.h), CLOCK_MONOTONIC timestamps, the
 * full GPR mask 0xff0fff, stack sizes that are multiples of 8 up to
 * 65528, per-(thread, CPU) events with inherit (per-task inherit events
 * with cpu = -1 cannot be mapped); CPU-wide and cgroup events (one per
 * CPU) take the same attr without inheritance.
 *
 * Ring sizing (gotcha 1): every sample record has the full requested
 * stack size whatever the real stack depth, so a CPU's ring fills at
 * rate x stack size (1.6 GB/s at 50 kHz with 32 KiB stacks). A fixed
 * count of samples is milliseconds at high rates, and one late poll (a
 * busy machine, a slow spool write) loses samples. The default ring holds
 * SP__RING_DEFAULT_MS of samples at the configured rate (rounded up to a
 * power of two: up to twice that), never fewer than the old 256; the
 * recorder's per-CPU and total budgets cap it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "perf_event.h"
#include "perf_record.h"
#include "proc_maps.h"

uint64_t sp__perf_sample_type(const struct sp__perf_cfg *cfg)
{
	uint64_t st = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP |
		      PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU |
		      PERF_SAMPLE_PERIOD | PERF_SAMPLE_REGS_USER |
		      PERF_SAMPLE_STACK_USER;

	if (cfg->kernel)
		st |= PERF_SAMPLE_CALLCHAIN;
	return st;
}

/* Whether a task event of @cfg asks for inherit_thread (Linux 5.13+). */
static bool wants_inherit_thread(const struct sp__perf_cfg *cfg,
				 const struct sp__perf_target *t)
{
	/* Without child following, only threads inherit the events. */
	return t->kind == SP__TARGET_TASK && !cfg->children &&
	       cfg->inherit_thread;
}

void sp__perf_attr(const struct sp__perf_cfg *cfg,
		   const struct sp__perf_target *t, struct perf_event_attr *a)
{
	const struct sp__event_source *src = t->source ? t->source :
							 cfg->source;
	bool sideband = src == cfg->source;

	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = src->type;
	a->config = src->config;
	a->freq = src->period == 0;
	if (a->freq)
		a->sample_freq = cfg->hz;
	else
		a->sample_period = src->period;
	/*
	 * Wall mode weighs every sample as one interval, so an on-CPU sample
	 * must stand for exactly that much CPU time: frequency mode adjusts
	 * the period from burst to burst, and a thread that runs in short
	 * bursts (fsync) came out 14 % over its wall time.
	 */
	if (a->freq && cfg->all_modes && cfg->hz) {
		a->freq = 0;
		a->sample_period = 1000000000ull / cfg->hz;
	}
	a->sample_type = sp__perf_sample_type(cfg);
	a->sample_regs_user = SP__PERF_REGS_MASK;
	a->sample_stack_user = cfg->stack_size;
	a->read_format = cfg->read_lost ? SP__PERF_READ_FORMAT : 0;
	a->disabled = 1;
	a->enable_on_exec = t->kind == SP__TARGET_TASK && t->on_exec;
	a->inherit = t->kind == SP__TARGET_TASK;
	a->inherit_thread = wants_inherit_thread(cfg, t);
	a->exclude_kernel = !cfg->kernel && !src->in_kernel && !cfg->all_modes;
	a->exclude_hv = 1;
	a->exclude_callchain_user = 1;
	a->mmap = sideband;
	a->mmap2 = sideband;
	a->comm = sideband;
	a->comm_exec = sideband;
	a->task = sideband;
	a->context_switch = src->context_switch;
	a->sample_id_all = 1;
	a->use_clockid = 1;
	a->clockid = CLOCK_MONOTONIC;
	a->watermark = 1;
	a->wakeup_watermark = (uint32_t)cfg->wakeup_bytes;
}

static int open_once(const struct sp__perf_cfg *cfg,
		     const struct sp__perf_target *t)
{
	unsigned long flags = PERF_FLAG_FD_CLOEXEC;
	struct perf_event_attr a;
	pid_t pid = -1;
	long fd;

	sp__perf_attr(cfg, t, &a);
	if (t->kind == SP__TARGET_TASK) {
		pid = (pid_t)t->tid;
	} else if (t->kind == SP__TARGET_CGROUP) {
		pid = (pid_t)t->cgroup_fd;
		flags |= PERF_FLAG_PID_CGROUP;
	}
	fd = syscall(SYS_perf_event_open, &a, pid, t->cpu, -1, flags);
	return fd < 0 ? -errno : (int)fd;
}

static bool raise_nofile(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= rl.rlim_max)
		return false;
	rl.rlim_cur = rl.rlim_max;
	return setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

int sp__perf_open(struct sp__perf_cfg *cfg, const struct sp__perf_target *t)
{
	int fd = open_once(cfg, t);

	/* Kernels before 6.0 reject PERF_FORMAT_LOST: probed on first open. */
	if (fd == -EINVAL && cfg->read_lost && !cfg->read_lost_probed) {
		cfg->read_lost = false;
		fd = open_once(cfg, t);
		if (fd < 0)
			cfg->read_lost = true;
	}
	if (fd == -EMFILE && !cfg->emfile_raised) {
		cfg->emfile_raised = true;
		if (raise_nofile())
			fd = open_once(cfg, t);
	}
	if ((fd == -EACCES || fd == -EPERM) && cfg->kernel) {
		cfg->kernel = false;
		fd = open_once(cfg, t);
	}
	if (fd == -EINVAL && wants_inherit_thread(cfg, t)) {
		cfg->inherit_thread = false; /* kernels before 5.13 */
		fd = open_once(cfg, t);
		if (fd < 0)
			cfg->inherit_thread = true;
	}
	if (fd >= 0)
		cfg->read_lost_probed = true;
	return fd;
}

int sp__event_lost_delta(struct sp__event *ev, uint64_t *delta)
{
	struct sp__perf_read r;
	ssize_t n = read(ev->fd, &r, sizeof(r));

	*delta = 0;
	if (n != (ssize_t)sizeof(r))
		return 0; /* an event being torn down: nothing to add */
	if (r.lost < ev->lost)
		return -EPROTO;
	*delta = r.lost - ev->lost;
	ev->lost = r.lost;
	return 0;
}

static int parse_cpu_list(const char *s, int *cpus, int cap)
{
	int n = 0;

	while (*s && *s != '\n') {
		char *end;
		long a = strtol(s, &end, 10), b = a;

		if (end == s || a < 0)
			return -EINVAL;
		s = end;
		if (*s == '-') {
			b = strtol(s + 1, &end, 10);
			if (end == s + 1 || b < a)
				return -EINVAL;
			s = end;
		}
		for (; a <= b && n < cap; a++)
			cpus[n++] = (int)a;
		if (*s == ',')
			s++;
	}
	return n;
}

int sp__perf_online_cpus(int *cpus, int cap)
{
	char buf[4096];
	ssize_t n = sp__proc_read("/sys/devices/system/cpu/online", buf,
				  sizeof(buf));

	if (n < 0)
		return (int)n;
	return parse_cpu_list(buf, cpus, cap);
}

long sp__perf_max_rate(void)
{
	char buf[64];
	ssize_t n = sp__proc_read("/proc/sys/kernel/perf_event_max_sample_rate",
				  buf, sizeof(buf));
	char *end;
	long v;

	if (n < 0)
		return (long)n;
	v = strtol(buf, &end, 10);
	if (end == buf || v <= 0)
		return -EINVAL;
	return v;
}

size_t sp__perf_record_bytes(const struct sp__perf_cfg *cfg)
{
	/* header, 6 fixed u64s, abi, 20 regs, size, data, dyn_size */
	size_t n = 8 + 6 * 8 + 8 + 20 * 8 + 8 + cfg->stack_size + 8;

	if (cfg->kernel)
		n += 8 + 8 * 512; /* nr + a generous kernel callchain */
	return n < 65535u ? n : 65535u;
}

uint64_t sp__perf_ring_default_samples(const struct sp__perf_cfg *cfg)
{
	uint64_t n = (uint64_t)cfg->hz * SP__RING_DEFAULT_MS / 1000;

	return n > SP__RING_MIN_SAMPLES ? n : SP__RING_MIN_SAMPLES;
}

size_t sp__perf_ring_bytes(const struct sp__perf_cfg *cfg, uint64_t samples,
			   size_t cap_bytes)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t rec = sp__perf_record_bytes(cfg), want, bytes = page;

	if (rec < page)
		rec = page;
	want = samples > cap_bytes / rec ? cap_bytes : (size_t)samples * rec;
	if (want < 65536)
		want = 65536;
	while (bytes < want && bytes <= cap_bytes / 2)
		bytes *= 2;
	while (bytes > cap_bytes)
		bytes /= 2;
	return bytes >= rec && bytes >= page ? bytes : 0;
}
