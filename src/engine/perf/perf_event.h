/* SPDX-License-Identifier: MIT */
/* perf_event_open: the attr, fallbacks, online CPUs and ring sizing. */
#ifndef SP_ENGINE_PERF_EVENT_H
#define SP_ENGINE_PERF_EVENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/perf_event.h>

#include "event_source.h"

/*
 * struct sp__perf_cfg is what every event of one recorder shares. The
 * fallback ladder of sp__perf_open() clears what the kernel refuses, so
 * after the first open it says what every later event gets.
 */
struct sp__perf_cfg {
	const struct sp__event_source *source;
	/*
	 * A second source opened beside @source on every target, without
	 * side-band records of its own (wall mode: context switches beside
	 * cpu-clock); NULL for none.
	 */
	const struct sp__event_source *extra;
	/*
	 * Every source counts kernel-mode time too, kernel callchains or
	 * not (wall mode: a thread's samples must add up to its time, and
	 * time in a syscall is neither user time nor off-CPU time).
	 */
	bool all_modes;
	uint32_t hz;
	uint32_t stack_size;
	bool kernel; /* still true after the first open if kernel allowed */
	bool children;
	bool inherit_thread; /* cleared if the kernel refuses it */
	uint64_t wakeup_bytes;
	bool emfile_raised;
	bool read_lost; /* read_format has PERF_FORMAT_LOST (Linux 6.0+) */
	bool read_lost_probed; /* an open succeeded with the current choice */
};

/** struct sp__perf_read is what read() returns for SP__PERF_READ_FORMAT. */
struct sp__perf_read {
	uint64_t value;
	uint64_t id;
	uint64_t lost;
};

#define SP__PERF_READ_FORMAT (PERF_FORMAT_ID | PERF_FORMAT_LOST)

/* What an event samples: one task, or everything on a CPU. */
enum sp__perf_target_kind {
	SP__TARGET_TASK = 0,   /* one thread (and what inherits from it) */
	SP__TARGET_CPU = 1,    /* every task on the CPU */
	SP__TARGET_CGROUP = 2, /* the tasks of a cgroup v2 (and below) */
};

/** struct sp__perf_target is where one event is opened. */
struct sp__perf_target {
	enum sp__perf_target_kind kind;
	int32_t tid;   /* SP__TARGET_TASK */
	int cgroup_fd; /* SP__TARGET_CGROUP: the cgroup's directory */
	int cpu;
	bool on_exec; /* SP__TARGET_TASK: counting starts at execve */
	/* The source to open (NULL: cfg->source); one other than
	 * cfg->source asks for no MMAP2/COMM/FORK/EXIT records (the primary
	 * event of the same target reports those once). */
	const struct sp__event_source *source;
};

/* The sample_type the config implies. */
uint64_t sp__perf_sample_type(const struct sp__perf_cfg *cfg);

/*
 * Fills @attr for an event of @cfg's source on @target (disabled). Task
 * events inherit (threads only, unless children are followed); CPU-wide
 * events do not, as inheritance means nothing for them.
 */
void sp__perf_attr(const struct sp__perf_cfg *cfg,
		   const struct sp__perf_target *target,
		   struct perf_event_attr *attr);

/*
 * Opens one event of @cfg's source on @target. The one fallback ladder
 * for every target: without PERF_FORMAT_LOST when the first open refuses
 * it (clearing cfg->read_lost), once more after raising RLIMIT_NOFILE on
 * EMFILE, user-only when kernel sampling is refused (clearing
 * cfg->kernel), and without inherit_thread when a task event is refused
 * with it (clearing cfg->inherit_thread).
 * Returns the fd or -errno.
 */
int sp__perf_open(struct sp__perf_cfg *cfg,
		  const struct sp__perf_target *target);

/** struct sp__event is one open event: one thread (or CPU) on one CPU. */
struct sp__event {
	int fd;
	int32_t tid;   /* -1 for a CPU-wide event */
	uint64_t lost; /* PERF_FORMAT_LOST value at the last read */
};

/*
 * The growth of @ev's lost counter since the last read (0 for an event
 * being torn down). Returns 0 or -EPROTO (the counter went backwards).
 */
int sp__event_lost_delta(struct sp__event *ev, uint64_t *delta);

/*
 * Online CPU ids from /sys/devices/system/cpu/online (sparse ids kept).
 * Returns the count stored (at most @cap) or -errno.
 */
int sp__perf_online_cpus(int *cpus, int cap);

/* /proc/sys/kernel/perf_event_max_sample_rate, or -errno. */
long sp__perf_max_rate(void);

/*
 * Default ring sizing: a per-CPU ring holds at least this much time of
 * samples at the configured rate (one CPU runs at most the rate), and
 * never fewer samples than the fixed default of earlier versions.
 */
#define SP__RING_DEFAULT_MS 100
#define SP__RING_MIN_SAMPLES 256

/* Samples of the default ring for @cfg's rate (>= SP__RING_MIN_SAMPLES). */
uint64_t sp__perf_ring_default_samples(const struct sp__perf_cfg *cfg);

/*
 * Data bytes of one ring: @samples records of the configured size, rounded
 * up to a power of two of pages, at least one full record and 64 KiB, at
 * most @cap_bytes. Returns 0 when one record does not fit in @cap_bytes.
 */
size_t sp__perf_ring_bytes(const struct sp__perf_cfg *cfg, uint64_t samples,
			   size_t cap_bytes);

/* Size of the biggest sample record @cfg can produce (estimate). */
size_t sp__perf_record_bytes(const struct sp__perf_cfg *cfg);

#endif /* SP_ENGINE_PERF_EVENT_H */
