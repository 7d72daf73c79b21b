/* SPDX-License-Identifier: MIT */
/* The recorder's JIT side directory: per-generation copies of JIT runtimes' data. */
#ifndef SP_ENGINE_JIT_SIDE_H
#define SP_ENGINE_JIT_SIDE_H

#include <stdint.h>

#include <stackpulse/log.h>

#include "mem.h"
#include "vec.h"

/*
 * What a JIT runtime writes about its code (/tmp/perf-<pid>.map here;
 * the names of GDB JIT objects: jit_sidecar.c) dies with the process or
 * is overwritten by the next process that gets its pid. When the recorder
 * has a side directory (struct sp_recorder_opts.jit_dir), it copies a
 * process's data at the end of each of its generations: at the tag-7
 * retirement of an exit or exec, and at sp_recorder_finish() for the
 * processes still running, under the names of src/base/jit_side_names.h.
 *
 * Everything runs on the thread that applies records (the sequencer).
 * The directory is created on the first copy, 0700, files 0600; a copy
 * goes to a temporary name first and is renamed when complete, so a
 * reader never sees half a file. A file unchanged since the pid's last
 * copy is not copied again: the new generation (say a fork before its
 * exec) did not write it. The sources are hostile files in a
 * world-writable directory: opened without following links or blocking
 * on FIFOs, regular files only, owned by root, by us or by the process,
 * at most 64 MiB each and 256 MiB per recording. A failed copy is counted
 * and logged and never fails the recording.
 */
/* What a pid's last copy was made from (a file that did not change since
 * belongs to an earlier generation: a fork that never wrote its own). */
struct sp__jit_side_copy {
	int32_t pid;
	uint64_t dev, ino, size, mtime_ns;
};

struct sp__jit_side {
	const struct sp__mem *mem;
	const struct sp_logger *logger;
	char *dir; /* NULL: no side directory */
	int dirfd; /* -1 until the first copy */
	char *buf; /* copy buffer, SP__JIT_SIDE_BUF bytes */
	uint64_t bytes;
	uint64_t saved;
	uint64_t failed;
	struct sp__vec copied; /* struct sp__jit_side_copy, one per pid */
};

/*
 * Sets @side up for directory @dir (NULL: no side directory, every call
 * is then a no-op). Files a previous recording left there under our names
 * are removed now, so they cannot be taken for this recording's, but only
 * from a directory a recorder made (it holds a marker file); the
 * directory itself is created only when something is copied.
 * Returns 0, -ENOMEM, -EINVAL (@dir is /tmp, where the runtimes write),
 * -EEXIST (a directory of someone else's holding such names), -ENOTDIR
 * (not a directory), -errno.
 */
int sp__jit_side_init(struct sp__jit_side *side, const struct sp__mem *mem,
		      const struct sp_logger *logger, const char *dir);
void sp__jit_side_fini(struct sp__jit_side *side);

/*
 * Copies what @pid's runtime wrote for the generation that ends at writer
 * frame count @end (SP__JIT_SIDE_OPEN: still running at the end). Nothing
 * to copy is not an error; failures are counted in @side.
 */
void sp__jit_side_save(struct sp__jit_side *side, int32_t pid, uint32_t end);

/*
 * Creates the directory (0700, with the marker) unless done before, for
 * files of other kinds the recorder writes there (jit_sidecar.c: files
 * 0600, names that sp__jit_side_init() removes). Returns 0 (@side->dirfd
 * is open), -ENOENT (no side directory) or -errno.
 */
int sp__jit_side_open(struct sp__jit_side *side);

#endif /* SP_ENGINE_JIT_SIDE_H */
