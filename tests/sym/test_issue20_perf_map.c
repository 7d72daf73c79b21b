/* SPDX-License-Identifier: MIT */
/* Issue 20 item 7: perf maps cost a bounded multiple of their size, parse linearly. */

/*
 * A map of the shortest lines a JIT can write ("H 1 f\n", 6 bytes) is
 * the worst case for memory per byte. Parsed through a counting
 * allocator, a 16 MiB one must peak below 7x its size (text kept once,
 * 16-byte entries allocated once, the radix sort's scratch; it was about
 * 12x: names copied, 48-byte entries grown by doubling) and settle below
 * 4x. sp__perf_map_load_within() refuses (-ENOBUFS) a map whose peak
 * would not fit the caller's budget, before reading it, and frees
 * everything. The rules the compact layout must keep: a later line for
 * the same start wins (stable sort of unsorted input), ranges of 4 GiB
 * and more stay exact, Python names split in place ("~" when no file).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "peak_alloc.h"
#include "perf_map_internal.h"
#include "sym_internal.h"

/* "%x 1 f\n" lines, starts cycling 0..f (unsorted), @len bytes. */
static char *minimal_lines(size_t len)
{
	char *t = malloc(len);
	size_t i;

	CHECK_PTR(t);
	for (i = 0; i + 6 <= len; i += 6)
		memcpy(t + i,
		       &"0 1 f\n1 1 f\n2 1 f\n3 1 f\n4 1 f\n5 1 f\n"
			"6 1 f\n7 1 f\n8 1 f\n9 1 f\na 1 f\nb 1 f\n"
			"c 1 f\nd 1 f\ne 1 f\nf 1 f\n"[(i / 6 % 16) * 6],
		       6);
	return t;
}

static void test_memory(void)
{
	size_t len = (16u << 20) / 6 * 6;
	char *text = minimal_lines(len);
	struct peak_count c = { 0 };
	struct sp_allocator hook = peak_count_hook(&c);
	struct sp_resolved_frame f;
	struct sp__perf_map *map;
	struct sp__mem mem;

	sp__mem_init(&mem, &hook);
	CHECK_OK(sp__perf_map_parse(&mem, text, len, "/tmp/perf-1.map", &map));
	fprintf(stderr, "16 MiB of 6-byte lines: peak %zu MiB, held %zu MiB\n",
		c.peak >> 20, c.live >> 20);
	CHECK(c.peak < 7 * len);
	CHECK(c.live < 4 * len);
	CHECK_EQ(c.live, sp__perf_map_bytes(map));
	/* The last line for start 0xa (file order) wins. */
	CHECK_EQ_INT(sp__perf_map_lookup(map, 0xa, &f), 1);
	CHECK(strcmp(f.name, "f") == 0 && f.offset == 0);
	CHECK_EQ_INT(sp__perf_map_lookup(map, 0x10, &f), 0);
	sp__perf_map_free(map);
	CHECK_EQ(c.live, 0);
	free(text);
}

static void test_budget(void)
{
	char dir[] = "/tmp/sp_issue20_pm_XXXXXX", path[64];
	size_t len = (1u << 20) / 6 * 6;
	char *text = minimal_lines(len);
	struct peak_count c = { 0 };
	struct sp_allocator hook = peak_count_hook(&c);
	struct sp__perf_map *map = NULL;
	struct sp__mem mem;
	uint64_t id;
	int fd;

	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/perf-%d.map", dir, (int)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && write(fd, text, len) == (ssize_t)len);
	close(fd);
	sp__mem_init(&mem, &hook);
	/* The text alone does not fit: nothing is allocated. */
	CHECK_EQ_INT(sp__perf_map_load_within(&mem, dir, getpid(), len / 2,
					      &map, &id),
		     -ENOBUFS);
	CHECK_EQ(c.peak, 0);
	/* The text fits, the entries do not: all of it is freed again. */
	CHECK_EQ_INT(sp__perf_map_load_within(&mem, dir, getpid(), len * 2,
					      &map, &id),
		     -ENOBUFS);
	CHECK_EQ(c.live, 0);
	CHECK_OK(sp__perf_map_load_within(&mem, dir, getpid(), 16 * len, &map,
					  &id));
	CHECK(sp__perf_map_bytes(map) <= 4 * len);
	sp__perf_map_free(map);
	CHECK_EQ(c.live, 0);
	unlink(path);
	rmdir(dir);
	free(text);
}

static void test_rules(void)
{
	static const char text[] = "2000 10 later_line_wins_not\n"
				   "1000 100000000 four_gib\n"
				   "2000 10 later_line_wins\n"
				   "3000 10 py::fn:/srv/app.py:42\n"
				   "3100 10 py::bare\n"
				   "1 fffffffffffffffe all\n";
	struct sp_resolved_frame f;
	struct sp__perf_map *map;
	struct sp__mem mem;

	sp__mem_init(&mem, NULL);
	CHECK_OK(sp__perf_map_parse(&mem, text, sizeof(text) - 1, "m", &map));
	CHECK_EQ_INT(sp__perf_map_lookup(map, 0x2005, &f), 1);
	CHECK(strcmp(f.name, "later_line_wins") == 0 && f.offset == 5);
	CHECK_EQ_INT(sp__perf_map_lookup(map, 0x100000fff, &f), 1);
	CHECK(strcmp(f.name, "four_gib") == 0 && f.offset == 0xffffffff);
	CHECK_EQ_INT(sp__perf_map_lookup(map, 0x100001000, &f), 1);
	CHECK(strcmp(f.name, "all") == 0);
	CHECK_EQ_INT(sp__perf_map_lookup(map, 0x3001, &f), 1);
	CHECK(strcmp(f.name, "fn") == 0 && strcmp(f.file, "/srv/app.py") == 0);
	CHECK_EQ(f.kind, SP_RESOLVED_PYTHON);
	CHECK_EQ_INT(sp__perf_map_lookup(map, 0x3101, &f), 1);
	CHECK(strcmp(f.name, "bare") == 0 && strcmp(f.file, "~") == 0);
	CHECK_EQ_INT(sp__perf_map_lookup(map, 0, &f), 0);
	sp__perf_map_free(map);
}

int main(void)
{
	test_rules();
	test_memory();
	test_budget();
	return T_EXIT_PASS;
}
