/* SPDX-License-Identifier: MIT */
/* Parsing /proc/PID/maps lines, reading small /proc files, walking tasks. */
#ifndef SP_ENGINE_PROC_MAPS_H
#define SP_ENGINE_PROC_MAPS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/** struct sp__maps_entry is one parsed line; @path points into the line. */
struct sp__maps_entry {
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	char perms[5];
	const char *path; /* "" for anonymous mappings */
	size_t path_len;
};

/*
 * Parses one line (without its newline) of /proc/PID/maps. The line is
 * untrusted: a malformed line returns SP_ECORRUPT and is skipped by
 * callers. The path keeps a literal " (deleted)" suffix.
 */
int sp__maps_parse_line(const char *line, size_t len,
			struct sp__maps_entry *out);

/*
 * sp__maps_unescape_path decodes, in place, the one escape /proc/PID/maps
 * applies to paths ("\012" for a newline) and returns the new length, so
 * a path reads as in perf's MMAP2 records and opens as the file. A name
 * that really holds the characters "\012" reads the same in maps: the
 * kernel leaves that ambiguous.
 */
size_t sp__maps_unescape_path(char *path, size_t len);

/*
 * Whether a parsed entry is an executable mapping the recorder tracks:
 * files, [vdso], and anonymous code (JIT runtimes), which the recorder
 * describes as an MMAP2 record would: path "//anon", offset = start.
 */
int sp__maps_is_tracked(const struct sp__maps_entry *e);

/*
 * Reads a whole /proc file into @buf (NUL-terminated, truncated to
 * @cap - 1). Returns the length or -errno.
 */
ssize_t sp__proc_read(const char *path, char *buf, size_t cap);

/*
 * Field 22 (starttime) and field 3 (state) of /proc/PID[/task/TID]/stat.
 * Returns 0 or -errno / SP_ECORRUPT.
 */
int sp__proc_stat(int32_t pid, int32_t tid, uint64_t *starttime, char *state);

/* The Tgid of @pid from /proc/PID/status. Returns it or -errno. */
int32_t sp__proc_tgid(int32_t pid);

/*
 * Calls @fn for each thread of @pid listed in /proc/PID/task (threads may
 * come and go meanwhile) until a call returns non-zero. Returns that
 * value, 0 when every call returned 0, -ESRCH when @pid is gone, or
 * -errno.
 */
int sp__proc_each_task(int32_t pid, int (*fn)(void *ctx, int32_t tid),
		       void *ctx);

#endif /* SP_ENGINE_PROC_MAPS_H */
