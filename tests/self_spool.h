/* SPDX-License-Identifier: MIT */
/* Test and bench helper: spool modules and frames that point at this program's own code. */
#ifndef SP_TESTS_SELF_SPOOL_H
#define SP_TESTS_SELF_SPOOL_H

/*
 * Several tests and benchmarks write spools whose frames are real
 * functions of the running executable, so a Symbolizer resolves them
 * through the file's .symtab, even after the writing process has exited
 * (tests/cli/report_gen.c, the tests in tests/export, bench_export.c).
 *
 * The module is the /proc/self/maps line that holds a given address, with
 * its file offset, device and inode, exactly as the recorder would
 * describe it. A frame pinned to it carries the absolute address and the
 * same address in the file-offset space (SPULSE3 §5.2): abs - start +
 * file_offset.
 *
 * Only the public API is used, so the CLI tests and benches (built on
 * libstackpulse.so) can include this header as well as unit tests.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <stackpulse.h>

/*
 * self_spool_module fills @m with the mapping of this process that holds
 * @addr, owned by @pid (the spool's process id, not necessarily ours).
 * @path (of @len bytes) receives the mapped file's name; @m->path points
 * at it. Returns 0, or -1 when no mapping holds @addr.
 */
static inline int self_spool_module(uint64_t addr, int32_t pid,
				    struct sp_module *m, char *path, size_t len)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[1024], perms[8];
	unsigned major, minor;
	int pos, found = 0;

	while (f && !found && fgets(line, sizeof(line), f)) {
		memset(m, 0, sizeof(*m));
		pos = 0;
		if (sscanf(line,
			   "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64
			   " %x:%x %" SCNu64 " %n",
			   &m->start, &m->end, perms, &m->file_offset, &major,
			   &minor, &m->inode, &pos) < 7 ||
		    !pos)
			continue;
		found = addr >= m->start && addr < m->end;
		m->dev_major = major;
		m->dev_minor = minor;
		snprintf(path, len, "%s", line + pos);
		path[strcspn(path, "\n")] = 0;
	}
	if (f)
		fclose(f);
	m->path = path;
	m->path_len = strlen(path);
	m->pid = pid;
	return found ? 0 : -1;
}

/*
 * self_spool_frame is the user frame at absolute address @abs, pinned to
 * module @id, which the writer gave for @m.
 */
static inline struct sp_frame self_spool_frame(const struct sp_module *m,
					       uint32_t id, uint64_t abs)
{
	struct sp_frame f = { .abs_ip = abs,
			      .file_relative_ip =
				      abs - m->start + m->file_offset,
			      .module_id = id,
			      .mode = SP_FRAME_USER };
	return f;
}

#endif /* SP_TESTS_SELF_SPOOL_H */
