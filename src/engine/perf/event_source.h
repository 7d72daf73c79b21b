/* SPDX-License-Identifier: MIT */
/* Event sources: the kinds of perf event a sample can come from. */
#ifndef SP_ENGINE_EVENT_SOURCE_H
#define SP_ENGINE_EVENT_SOURCE_H

#include <stdbool.h>
#include <stdint.h>

/*
 * struct sp__event_source describes what triggers a sample: the perf
 * event (type, config) and how it is paced. Everything else of the attr
 * (what a sample carries, the side-band records, the clock) is the same
 * for every source and comes from struct sp__perf_cfg, and every target
 * (task, CPU, cgroup) is opened through the one fallback ladder of
 * sp__perf_open(). So another kind of sample is another descriptor in
 * event_source.c, plus its fields here if it needs new attr bits, as
 * context switches for off-CPU time do (PERF_COUNT_SW_CONTEXT_SWITCHES
 * with a period of 1, attr.context_switch for the switch records, whose
 * parser is in perf_record.c).
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
	/* attr.context_switch: PERF_RECORD_SWITCH(_CPU_WIDE) records. */
	bool context_switch;
	/*
	 * The event fires in the kernel (the scheduler): it must not
	 * exclude kernel mode even when kernel callchains are not wanted,
	 * or it never samples (perf's context-switches:u records nothing).
	 */
	bool in_kernel;
};

/* Software cpu-clock: on-CPU time, sampled at the configured rate. */
extern const struct sp__event_source sp__source_cpu_clock;
/*
 * Software context-switches, one sample per switch out of a task (taken
 * in its context: its user registers and stack as of kernel entry),
 * with switch records for the switch back in (off-CPU time).
 */
extern const struct sp__event_source sp__source_context_switches;

#endif /* SP_ENGINE_EVENT_SOURCE_H */
