/* SPDX-License-Identifier: MIT */
/* The recorder's JIT side directory: per-generation perf-map copies, and what it refuses. */

/*
 * sp__jit_side_* on a perf map this test writes as /tmp/perf-<own pid>.map
 * (the test is the "runtime"): a copy per generation under the names the
 * symbolizer looks for, no second copy of an unchanged file, a marker
 * that lets the next recording empty the directory, and refusals of /tmp
 * and of a directory of someone else's that holds perf-*.map names.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "jit_side.h"
#include "jit_side_names.h"

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK_PTR(f);
	fputs(text, f);
	CHECK_OK(fclose(f));
}

static void check_file(const char *path, const char *text)
{
	char buf[256] = { 0 };
	FILE *f = fopen(path, "r");

	CHECK_PTR(f);
	CHECK(fread(buf, 1, sizeof(buf) - 1, f) == strlen(text));
	fclose(f);
	CHECK(strcmp(buf, text) == 0);
}

static bool exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0;
}

int main(void)
{
	char dir[] = "/tmp/sp_jitside_XXXXXX", side[96], map[64], path[160];
	struct sp__jit_side s;
	struct sp__mem mem;
	int pid = (int)getpid();

	sp__mem_init(&mem, NULL);
	CHECK_PTR(mkdtemp(dir));
	snprintf(map, sizeof(map), "/tmp/perf-%d.map", pid);
	snprintf(side, sizeof(side), "%s/s.spool.jit", dir);
	/*
	 * A map left in /tmp by an earlier process with this pid (a Python
	 * or Node test's child: they never remove theirs) is stale: no
	 * living process but this one has the pid.
	 */
	unlink(map);

	/* /tmp itself, and a directory of the user's with such names. */
	CHECK_EQ_INT(sp__jit_side_init(&s, &mem, NULL, "/tmp"), -EINVAL);
	snprintf(path, sizeof(path), "%s/perf-1.map", dir);
	write_file(path, "1 1 theirs\n");
	CHECK_EQ_INT(sp__jit_side_init(&s, &mem, NULL, dir), -EEXIST);
	CHECK(exists(path));
	unlink(path);
	/* GDB JIT names (jit_sidecar.c) are such names too. */
	snprintf(path, sizeof(path), "%s/gdbjit-1-0.dump", dir);
	write_file(path, "x");
	CHECK_EQ_INT(sp__jit_side_init(&s, &mem, NULL, dir), -EEXIST);
	CHECK(exists(path));
	unlink(path);

	/* Two generations of this pid, and nothing when there is no map. */
	CHECK_OK(sp__jit_side_init(&s, &mem, NULL, side));
	CHECK(!exists(side)); /* made on the first copy */
	sp__jit_side_save(&s, pid, 7);
	CHECK(!exists(side));
	write_file(map, "1000 10 first\n");
	sp__jit_side_save(&s, pid, 7);
	snprintf(path, sizeof(path), "%s/perf-%d@7.map", side, pid);
	check_file(path, "1000 10 first\n");
	/* Unchanged since that copy: a fork before its exec wrote nothing. */
	sp__jit_side_save(&s, pid, 9);
	snprintf(path, sizeof(path), "%s/perf-%d@9.map", side, pid);
	CHECK(!exists(path));
	write_file(map, "1000 10 first\n2000 20 second\n");
	sp__jit_side_save(&s, pid, SP__JIT_SIDE_OPEN);
	snprintf(path, sizeof(path), "%s/perf-%d.map", side, pid);
	check_file(path, "1000 10 first\n2000 20 second\n");
	CHECK_EQ(s.saved, 2);
	CHECK_EQ(s.failed, 0);
	sp__jit_side_fini(&s);

	/* The next recording with the same directory starts empty. */
	CHECK_OK(sp__jit_side_init(&s, &mem, NULL, side));
	CHECK(!exists(path));
	CHECK(!exists(side));
	/* A sidecar's directory is made as the copies' is (0700, marked). */
	CHECK_OK(sp__jit_side_open(&s));
	snprintf(path, sizeof(path), "%s/gdbjit-%d-0.dump", side, pid);
	write_file(path, "x");
	sp__jit_side_fini(&s);
	CHECK_OK(sp__jit_side_init(&s, &mem, NULL, side));
	CHECK(!exists(path));
	CHECK(!exists(side));
	sp__jit_side_fini(&s);
	CHECK_EQ_INT(sp__jit_side_open(&s), -ENOENT); /* no directory */

	unlink(map);
	CHECK_OK(rmdir(dir));
	return T_EXIT_PASS;
}
