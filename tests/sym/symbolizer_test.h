/* SPDX-License-Identifier: MIT */
/* Helpers of the Symbolizer tests: spools written in memory, this program's mapping. */
#ifndef SP_TESTS_SYMBOLIZER_TEST_H
#define SP_TESTS_SYMBOLIZER_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stackpulse.h>

#include "check.h"

/*
 * The tests write spools with the public writer into a memory sink and
 * read them back with a Snapshot, so the symbolizer sees exactly what a
 * reader of a real recording would. Modules that must resolve natively
 * are taken from /proc/self/maps: the executable mapping that holds a
 * given code address, with its real offset, device and inode.
 */

struct tspool {
	struct sp_writer *w;
	struct sp_snapshot *snap;
	void *buf;
	uint64_t ts;
};

static inline void check_str(const char *file, int line, const char *got,
			     const char *want)
{
	if (got && want && strcmp(got, want) == 0)
		return;
	if (!got && !want)
		return;
	fprintf(stderr, "%s:%d: got \"%s\", want \"%s\"\n", file, line,
		got ? got : "(null)", want ? want : "(null)");
	exit(T_EXIT_FAIL);
}

#define CHECK_STR(got, want) check_str(__FILE__, __LINE__, (got), (want))

static inline void tspool_begin(struct tspool *t)
{
	struct sp_sink *sink;

	memset(t, 0, sizeof(*t));
	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	CHECK_OK(sp_writer_new(sink, NULL, &t->w));
	t->ts = 1000;
}

static inline uint32_t tspool_module(struct tspool *t, const char *path,
				     uint64_t start, uint64_t end,
				     uint64_t offset, int32_t pid)
{
	struct sp_module m = {
		.start = start,
		.end = end,
		.file_offset = offset,
		.pid = pid,
		.path = path,
		.path_len = strlen(path),
	};
	uint32_t id;

	if (pid < 0)
		m.is_kernel = 1;
	CHECK_OK(sp_writer_module(t->w, &m, &id));
	return id;
}

static inline void tspool_sample(struct tspool *t, int32_t pid,
				 const struct sp_frame *frames, size_t n)
{
	CHECK_OK(sp_writer_sample(t->w, t->ts++, pid, pid, frames, n));
}

static inline const struct sp_spool *tspool_end(struct tspool *t)
{
	const void *data;
	size_t len;

	CHECK_OK(sp_writer_finish(t->w));
	CHECK_OK(sp_sink_memory_data(sp_writer_sink(t->w), &data, &len));
	t->buf = malloc(len);
	CHECK_PTR(t->buf);
	memcpy(t->buf, data, len);
	CHECK_OK(sp_snapshot_open_buffer(t->buf, len, NULL, &t->snap));
	return sp_snapshot_spool(t->snap);
}

static inline void tspool_free(struct tspool *t)
{
	sp_snapshot_close(t->snap);
	sp_writer_free(t->w);
	free(t->buf);
}

/* Frame helpers. */
static inline struct sp_frame tframe_user(uint64_t abs)
{
	struct sp_frame f = { .abs_ip = abs,
			      .file_relative_ip = abs,
			      .module_id = SP_NO_MODULE,
			      .mode = SP_FRAME_USER };
	return f;
}

static inline struct sp_frame tframe_kernel(uint64_t abs)
{
	struct sp_frame f = tframe_user(abs);

	f.mode = SP_FRAME_KERNEL;
	return f;
}

static inline struct sp_frame tframe_marker(void)
{
	struct sp_frame f = { .module_id = SP_NO_MODULE,
			      .mode = SP_FRAME_TRUNCATED };
	return f;
}

/* The id of the frame with @abs and @mode (writers define root first). */
static inline uint32_t tframe_id(const struct sp_spool *spool, uint64_t abs,
				 uint32_t mode)
{
	uint32_t i, n = sp_spool_frame_count(spool);
	struct sp_frame f;

	for (i = 0; i < n; i++)
		if (sp_spool_frame(spool, i, &f) == 0 && f.abs_ip == abs &&
		    f.mode == mode)
			return i;
	fprintf(stderr, "frame 0x%" PRIx64 " not in the spool\n", abs);
	exit(T_EXIT_FAIL);
}

/* A mapping of this process from /proc/self/maps. */
struct tmapping {
	uint64_t start, end, offset, inode;
	uint32_t major, minor;
	char path[512];
};

/* The mapping that contains @addr, or @name ("[vdso]") when addr is 0. */
static inline int tmapping_find(uint64_t addr, const char *name,
				struct tmapping *m)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[1024];
	int found = 0;

	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f)) {
		char perms[8];
		int pos = 0;

		memset(m, 0, sizeof(*m));
		if (sscanf(line,
			   "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64
			   " %x:%x %" SCNu64 " %n",
			   &m->start, &m->end, perms, &m->offset, &m->major,
			   &m->minor, &m->inode, &pos) < 7)
			continue;
		snprintf(m->path, sizeof(m->path), "%s", line + pos);
		m->path[strcspn(m->path, "\n")] = 0;
		if (name)
			found = strcmp(m->path, name) == 0;
		else
			found = addr >= m->start && addr < m->end;
	}
	fclose(f);
	return found;
}

/* A module record of @m for @pid, written to @t. */
static inline uint32_t tspool_mapping(struct tspool *t,
				      const struct tmapping *m, int32_t pid)
{
	struct sp_module mod = {
		.start = m->start,
		.end = m->end,
		.file_offset = m->offset,
		.inode = m->inode,
		.dev_major = m->major,
		.dev_minor = m->minor,
		.pid = pid,
		.path = m->path,
		.path_len = strlen(m->path),
	};
	uint32_t id;

	CHECK_OK(sp_writer_module(t->w, &mod, &id));
	return id;
}

/* A pinned frame at @abs of module @id mapped as @m. */
static inline struct sp_frame tframe_pinned(const struct tmapping *m,
					    uint32_t id, uint64_t abs)
{
	struct sp_frame f = { .abs_ip = abs,
			      .file_relative_ip = abs - m->start + m->offset,
			      .module_id = id,
			      .mode = SP_FRAME_USER };
	return f;
}

/* Counting allocator: every call through it is counted. */
struct tcount {
	unsigned long allocs;
	unsigned long frees;
};

static inline void *tcount_alloc(void *ctx, size_t size, size_t align)
{
	struct tcount *c = ctx;
	void *p = NULL;

	__atomic_add_fetch(&c->allocs, 1, __ATOMIC_RELAXED);
	if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align,
			   size))
		return NULL;
	return p;
}

static inline void tcount_free(void *ctx, void *ptr, size_t size)
{
	struct tcount *c = ctx;

	(void)size;
	__atomic_add_fetch(&c->frees, 1, __ATOMIC_RELAXED);
	free(ptr);
}

#endif /* SP_TESTS_SYMBOLIZER_TEST_H */
