/* SPDX-License-Identifier: MIT */
/* Adding one set of unwind counters to another. */
#ifndef SP_UNWIND_STATS_H
#define SP_UNWIND_STATS_H

#include <stddef.h>

#include <stackpulse/unwind.h>

/* The unwinder sums a walk into the caller's counters, the recorder a
 * worker's per-sample counters into its summary: the same addition. */
static inline void sp__unwind_stats_add(struct sp_unwind_stats *to,
					const struct sp_unwind_stats *from)
{
	size_t i;

	to->samples += from->samples;
	to->frames += from->frames;
	to->truncated += from->truncated;
	for (i = 0; i < SP_SAMPLE_ERR_COUNT; i++)
		to->errors[i] += from->errors[i];
	for (i = 0; i < SP_FALLBACK_COUNT; i++)
		to->fallbacks[i] += from->fallbacks[i];
}

#endif /* SP_UNWIND_STATS_H */
