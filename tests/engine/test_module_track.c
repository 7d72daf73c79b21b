/* SPDX-License-Identifier: MIT */
/* Unit test: module tracking (dedup, overlaps, fragments, fork, exec). */
#include <string.h>

#include <stackpulse/snapshot.h>

#include "check.h"
#include "process.h"

static struct sp__map_desc desc(uint64_t s, uint64_t e, uint64_t off,
				const char *path)
{
	struct sp__map_desc d;

	memset(&d, 0, sizeof(d));
	d.start = s;
	d.end = e;
	d.offset = off;
	d.inode = 7;
	d.path = path;
	d.path_len = strlen(path);
	return d;
}

static void expect(const struct sp_spool *sp, uint32_t id, int32_t pid,
		   uint64_t s, uint64_t e, uint64_t off, const char *path,
		   int retired)
{
	struct sp_module m;

	CHECK_OK(sp_spool_module(sp, id, &m));
	CHECK_EQ_INT(m.pid, pid);
	CHECK_EQ(m.start, s);
	CHECK_EQ(m.end, e);
	CHECK_EQ(m.file_offset, off);
	CHECK_MEM(m.path, m.path_len, path, strlen(path));
	CHECK_EQ(m.deactivated_at != SP_NEVER, retired);
}

int main(void)
{
	struct sp_writer_opts wo = { .size = sizeof(wo) };
	struct sp__procs procs;
	struct sp__process *p, *c;
	struct sp_writer *w;
	struct sp_sink *sink;
	struct sp__mem mem;
	struct sp_snapshot *snap;
	const struct sp_mapping *maps;
	struct sp__map_desc d;
	const void *data;
	size_t len, n;

	sp__mem_init(&mem, NULL);
	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	CHECK_OK(sp_writer_new(sink, &wo, &w));
	sp__procs_init(&procs, &mem, w, NULL);
	CHECK_OK(sp__procs_add(&procs, 100, &p));
	d = desc(0x1000, 0x5000, 0, "/a");
	CHECK_OK(sp__process_map(&procs, p, &d)); /* id 0 */
	CHECK_OK(sp__process_map(&procs, p, &d)); /* identical: kept */
	CHECK_EQ(p->modules.len, 1);
	d = desc(0x2000, 0x3000, 0, "/b");
	CHECK_OK(sp__process_map(&procs, p, &d)); /* 0 retired; 1, 2, 3 */
	CHECK_EQ(p->modules.len, 3);
	CHECK_OK(sp__process_mappings(&procs, p, &maps, &n));
	CHECK_EQ(n, 3);
	CHECK_EQ(maps[0].start, 0x1000);
	CHECK_EQ(maps[1].start, 0x2000);
	CHECK_EQ(maps[1].module_id, 3);
	CHECK_EQ(maps[2].start, 0x3000);
	CHECK_EQ(maps[2].file_offset, 0x2000);
	d = desc(0x4000, 0x6000, 0, "/c (deleted)");
	CHECK_OK(sp__process_map(&procs, p, &d)); /* 2 retired; 4, 5 */
	CHECK_OK(sp__process_mappings(&procs, p, &maps, &n));
	CHECK_EQ(n, 4);
	CHECK(strcmp(maps[3].path, "/proc/100/map_files/4000-6000") == 0);
	CHECK_OK(sp__procs_add(&procs, 101, &c));
	CHECK_OK(sp__process_clone_modules(&procs, p, c)); /* 6..9 */
	CHECK_EQ(c->modules.len, 4);
	CHECK_OK(sp__process_retire_all(&procs, p)); /* exec: tag 7 */
	CHECK_EQ(p->modules.len, 0);
	CHECK_OK(sp_writer_flush(w));

	CHECK_OK(sp_sink_memory_data(sp_writer_sink(w), &data, &len));
	CHECK_OK(sp_snapshot_open_buffer(data, len, NULL, &snap));
	const struct sp_spool *sp = sp_snapshot_spool(snap);
	CHECK_EQ(sp_spool_module_count(sp), 10);
	expect(sp, 0, 100, 0x1000, 0x5000, 0, "/a", 1);
	expect(sp, 1, 100, 0x1000, 0x2000, 0, "/a", 1);
	expect(sp, 2, 100, 0x3000, 0x5000, 0x2000, "/a", 1);
	expect(sp, 3, 100, 0x2000, 0x3000, 0, "/b", 1);
	expect(sp, 4, 100, 0x3000, 0x4000, 0x2000, "/a", 1);
	expect(sp, 5, 100, 0x4000, 0x6000, 0, "/c (deleted)", 1);
	expect(sp, 6, 101, 0x1000, 0x2000, 0, "/a", 0);
	expect(sp, 9, 101, 0x4000, 0x6000, 0, "/c (deleted)", 0);
	sp_snapshot_close(snap);
	sp__procs_fini(&procs);
	sp_writer_free(w);
	return T_EXIT_PASS;
}
