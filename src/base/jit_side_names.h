/* SPDX-License-Identifier: MIT */
/* File names of a spool's JIT side directory, shared by its writer and its readers. */
#ifndef SP_BASE_JIT_SIDE_NAMES_H
#define SP_BASE_JIT_SIDE_NAMES_H

#include <stdint.h>
#include <stdio.h>

/*
 * JIT runtimes describe their generated code in files and memory that
 * do not outlive the process: /tmp/perf-<pid>.map is rewritten or
 * appended to by the next process that gets the pid, jitdump files and
 * GDB JIT objects go with it. SPULSE3 has no record for them, so the
 * recorder keeps a copy of each process generation's data in a side
 * directory next to the spool (docs/explanation/jit.md), and the
 * symbolizer reads it back per generation:
 *
 *   perf-<pid>@<end>.map   the perf map of the generation of <pid> that a
 *                          tag-7 retirement ended when the spool held
 *                          <end> frame records (SPULSE3 §5.7, §6)
 *   perf-<pid>.map         the generation still running when the
 *                          recording ended (copied by sp_recorder_finish)
 *
 * A frame record's generation is the range of frame ids between two
 * retirements of its pid, which both sides can compute: the recorder
 * knows its writer's frame count when it retires a process, a reader
 * knows where each retirement came in the stream. Other kinds of side
 * data (issue 18: jitdump, GDB JIT objects) take names of the same
 * shape with their own prefix.
 */

/* @end for the generation still running at the end of the recording. */
#define SP__JIT_SIDE_OPEN UINT32_MAX

/*
 * Formats the side file name "<prefix>-<pid>[@<end>]<suffix>" (perf
 * maps: "perf", ".map") of @pid's generation that ended at frame count
 * @end into @buf. Returns what snprintf returns.
 */
static inline int sp__jit_side_name(char *buf, size_t size, const char *prefix,
				    const char *suffix, int32_t pid,
				    uint32_t end)
{
	if (end == SP__JIT_SIDE_OPEN)
		return snprintf(buf, size, "%s-%d%s", prefix, (int)pid, suffix);
	return snprintf(buf, size, "%s-%d@%u%s", prefix, (int)pid,
			(unsigned)end, suffix);
}

#endif /* SP_BASE_JIT_SIDE_NAMES_H */
