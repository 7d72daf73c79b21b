/* SPDX-License-Identifier: MIT */
/* Event sources: the kinds of perf event a sample can come from. */
#ifndef SP_ENGINE_EVENT_SOURCE_H
#define SP_ENGINE_EVENT_SOURCE_H

#include <stdint.h>

/*
 * struct sp__event_source describes what triggers a sample: the perf
 * event (type, config) and how it is paced. Everything else of the attr
 * (what a sample carries, the side-band records, the clock) is the same
 * for every source and comes from struct sp__perf_cfg, and every target
 * (task, CPU, cgroup) is opened through the one fallback ladder of
 * sp__perf_open(). So another kind of sample is another descriptor in
 * event_source.c, plus its fields here if it needs new attr bits:
 * context switches for off-CPU time (PERF_COUNT_SW_CONTEXT_SWITCHES with
 * a period of 1, and attr.context_switch for the switch-in records)
 * would add those two here and their parsers in perf_record.c.
 */
struct sp__event_source {
	const char *name; /* as perf names it, for logs */
	uint32_t type;	  /* perf_event_attr.type */
	uint64_t config;  /* perf_event_attr.config */
	/*
	 * Events between samples; 0 = frequency mode at the recorder's
	 * sample rate (the kernel adjusts the period).
	 */
	uint64_t period;
};

/* Software cpu-clock: on-CPU time, sampled at the configured rate. */
extern const struct sp__event_source sp__source_cpu_clock;

#endif /* SP_ENGINE_EVENT_SOURCE_H */
