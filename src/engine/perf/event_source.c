/* SPDX-License-Identifier: MIT */
/* Event sources: the kinds of perf event a sample can come from. */
#include <linux/perf_event.h>

#include "event_source.h"

const struct sp__event_source sp__source_cpu_clock = {
	.name = "cpu-clock",
	.type = PERF_TYPE_SOFTWARE,
	.config = PERF_COUNT_SW_CPU_CLOCK,
	.period = 0,
};

const struct sp__event_source sp__source_context_switches = {
	.name = "context-switches",
	.type = PERF_TYPE_SOFTWARE,
	.config = PERF_COUNT_SW_CONTEXT_SWITCHES,
	.period = 1,
	.context_switch = true,
	.in_kernel = true,
};
