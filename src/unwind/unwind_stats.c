/* SPDX-License-Identifier: MIT */
/* Adding one set of unwind counters to another (the public entry point). */
#include "unwind_stats.h"

SP_API void sp_unwind_stats_add(struct sp_unwind_stats *to,
				const struct sp_unwind_stats *from)
{
	sp__unwind_stats_add(to, from);
}
