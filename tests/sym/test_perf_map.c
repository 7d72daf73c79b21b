/* SPDX-License-Identifier: MIT */
/* Unit test of perf maps: line rules, lookups, Python names, safe opening. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "perf_map_internal.h"
#include "sym_internal.h"

/*
 * Every parsing rule of research/stackpulse-features.md §1.10 gets one
 * crafted line; lookups check the declared ranges (no extension), the
 * "last covering symbol" rule and Python/native frame fields. The safe
 * open refusals use real files under a temporary directory: FIFO,
 * symlink, directory, a sparse 64 MiB + 1 file, a foreign owner.
 */
static struct sp__mem mem;

static void check_str(int line, const char *got, const char *want)
{
	if (!got || strcmp(got, want) != 0) {
		fprintf(stderr, "line %d: got \"%s\", want \"%s\"\n", line,
			got ? got : "(null)", want);
		exit(T_EXIT_FAIL);
	}
}

static struct sp__perf_map *parse(const char *text, size_t len)
{
	struct sp__perf_map *map = NULL;

	CHECK_OK(sp__perf_map_parse(&mem, text, len, "/tmp/perf-1.map", &map));
	CHECK_PTR(map);
	return map;
}

#define NATIVE(m, a, name, off) native(__LINE__, m, a, name, off)
#define PYTHON(m, a, func, file) python(__LINE__, m, a, func, file)

static void native(int line, const struct sp__perf_map *map, uint64_t addr,
		   const char *name, uint64_t off)
{
	struct sp_resolved_frame f;

	if (sp__perf_map_lookup(map, addr, &f) != 1) {
		fprintf(stderr, "line %d: 0x%llx unresolved\n", line,
			(unsigned long long)addr);
		exit(T_EXIT_FAIL);
	}
	check_str(line, f.name, name);
	check_str(line, f.module, "/tmp/perf-1.map");
	CHECK_EQ(f.offset, off);
	CHECK_EQ(f.kind, SP_RESOLVED_NATIVE);
	CHECK_EQ(f.origin, SP_ORIGIN_PERF_MAP);
	CHECK_EQ(f.flags, SP_RESOLVED_JIT);
	CHECK_EQ(f.file, NULL);
}

static void python(int line, const struct sp__perf_map *map, uint64_t addr,
		   const char *func, const char *file)
{
	struct sp_resolved_frame f;

	if (sp__perf_map_lookup(map, addr, &f) != 1) {
		fprintf(stderr, "line %d: 0x%llx unresolved\n", line,
			(unsigned long long)addr);
		exit(T_EXIT_FAIL);
	}
	check_str(line, f.name, func);
	check_str(line, f.file, file);
	CHECK_EQ(f.kind, SP_RESOLVED_PYTHON);
	CHECK_EQ(f.origin, SP_ORIGIN_PERF_MAP);
	CHECK_EQ(f.flags, SP_RESOLVED_JIT);
	CHECK_EQ(f.line, 0);
}

#define NONE(m, a) none(__LINE__, m, a)

static void none(int line, const struct sp__perf_map *map, uint64_t addr)
{
	struct sp_resolved_frame f;

	if (sp__perf_map_lookup(map, addr, &f) != 0) {
		fprintf(stderr, "line %d: 0x%llx resolved to \"%s\"\n", line,
			(unsigned long long)addr, f.name);
		exit(T_EXIT_FAIL);
	}
}

static void test_fields(void)
{
	static const char text[] = "1000 10 plain\n"
				   "0x2000 0X10 hex_prefix\n"
				   "  \t3000 10 leading_ws\n"
				   "4000\t\t10\t  kept  spaces\t\n"
				   "5000 0 zero_len\n"
				   "6000 1g bad_len\n"
				   "6100 10\n"
				   "6200 10 \n"
				   "6300\n"
				   "zz 10 bad_start\n"
				   "0x 10 empty_hex\n"
				   "10000000000000000 1 seventeen_digits\n"
				   "fffffffffffffff0 10 wraps_to_zero\n"
				   "ffffffffffffff00 ef fits_at_top\n"
				   "8000\xc2\xa0"
				   "10 nbsp_sep\n"
				   "8100 10\xc2\xa0nbsp_name\n"
				   "8200 10 nbsp\xc2\xa0stays\n"
				   "9000\v10 vtab\n"
				   "a000 10 crlf\r\n"
				   "b000 10 two\r\r\n"
				   "c000\f10 formfeed\n"
				   "d000 10 no_newline";
	static const char nul[] = "e000 10 nul\0x\ne100 10 ok\n";
	struct sp__perf_map *map = parse(text, sizeof(text) - 1);

	NATIVE(map, 0x1000, "plain", 0);
	NATIVE(map, 0x100f, "plain", 0xf);
	NONE(map, 0x1010); /* declared ranges only */
	NATIVE(map, 0x2008, "hex_prefix", 8);
	NATIVE(map, 0x3001, "leading_ws", 1);
	NATIVE(map, 0x4002, "  kept  spaces\t", 2);
	NONE(map, 0x5000);
	NONE(map, 0x6000);
	NONE(map, 0x6100);
	NONE(map, 0x6200);
	NONE(map, 0x6300);
	NONE(map, 0xfffffffffffffff0ull);
	NATIVE(map, 0xffffffffffffffeeull, "fits_at_top", 0xee);
	NONE(map, 0x8000);
	NONE(map, 0x8100);
	NATIVE(map, 0x8200, "nbsp\xc2\xa0stays", 0);
	NONE(map, 0x9000);
	NATIVE(map, 0xa000, "crlf", 0);
	NATIVE(map, 0xb000, "two\r", 0);
	NATIVE(map, 0xc00f, "formfeed", 0xf);
	NATIVE(map, 0xd000, "no_newline", 0);
	NONE(map, 0);
	sp__perf_map_free(map);
	/* A NUL byte in the name drops the line. */
	map = parse(nul, sizeof(nul) - 1);
	NONE(map, 0xe000);
	NATIVE(map, 0xe100, "ok", 0);
	sp__perf_map_free(map);
	map = parse("", 0);
	NONE(map, 0);
	sp__perf_map_free(map);
}

static void test_overlaps(void)
{
	static const char text[] = "20000 10 old\n"
				   "10010 10 inner\n"
				   "10000 100 outer\n"
				   "20000 10 new\n"
				   "30000 1000 big\n"
				   "30100 10 small\n"
				   "30200 10 small2\n";
	struct sp__perf_map *map = parse(text, sizeof(text) - 1);

	NATIVE(map, 0x10015, "inner", 5);
	NATIVE(map, 0x10050, "outer", 0x50);
	NATIVE(map, 0x10005, "outer", 5);
	NONE(map, 0x10100);
	/* Same start: the later line (reused JIT code) wins. */
	NATIVE(map, 0x20004, "new", 4);
	/* Past small2, big still covers: the last covering symbol. */
	NATIVE(map, 0x30300, "big", 0x300);
	NATIVE(map, 0x30205, "small2", 5);
	NONE(map, 0x31000);
	sp__perf_map_free(map);
}

static void test_python(void)
{
	static const char text[] =
		"1000 10 py::func:/path/file.py\n"
		"2000 10 py::func /path\n"
		"3000 10 py::func\n"
		"4000 10 py::func:/x.py:12\n"
		"5000 10 py::\n"
		"6000 10 py:::/x.py\n"
		"7000 10 py::  spaced:/a.py  \n"
		"8000 10 py::Cls.meth:/a b/c.py\n"
		"9000 10 py::f x:y.py\n"
		"a000 10 py::_find_and_load:<frozen importlib._bootstrap>\n"
		"b000 10 py::f:\n"
		"c000 10 py::f:/x.py:\n"
		"d000 10 py::f:/x.py:1a\n"
		"e000 10 PY::upper\n"
		"f000 10 py:: \n";
	struct sp__perf_map *map = parse(text, sizeof(text) - 1);

	PYTHON(map, 0x1001, "func", "/path/file.py");
	PYTHON(map, 0x2001, "func", "/path");
	PYTHON(map, 0x3001, "func", "~");
	PYTHON(map, 0x4001, "func", "/x.py");
	NATIVE(map, 0x5001, "py::", 1);
	NATIVE(map, 0x6001, "py:::/x.py", 1);
	PYTHON(map, 0x7001, "spaced", "/a.py");
	PYTHON(map, 0x8001, "Cls.meth", "/a b/c.py");
	PYTHON(map, 0x9001, "f", "x:y.py");
	PYTHON(map, 0xa001, "_find_and_load", "<frozen importlib._bootstrap>");
	PYTHON(map, 0xb001, "f", "~");
	PYTHON(map, 0xc001, "f", "/x.py:");
	PYTHON(map, 0xd001, "f", "/x.py:1a");
	NATIVE(map, 0xe001, "PY::upper", 1);
	NATIVE(map, 0xf001, "py:: ", 1);
	sp__perf_map_free(map);
}

static void test_eligible(void)
{
	static const char *const yes[] = {
		"//anon",
		"[anon]",
		"[anon:v8]",
		"[anon:]",
		"[heap]",
		"[stack]",
		"[stack:1234]",
		"/dev/zero",
		"/dev/zero (deleted)",
		"/anon_hugepage",
		"/anon_hugepage (deleted)",
		"/SYSV00000000",
		"",
	};
	static const char *const no[] = {
		"/usr/bin/python3.12",
		"[vdso]",
		"[vvar]",
		"//anonx",
		"[anon",
		"[heapx]",
		"/tmp/perf-1.map",
		"anon",
		"/dev/zer",
		"[kernel]",
	};
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
		CHECK(sp__perf_map_eligible(yes[i]));
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		if (sp__perf_map_eligible(no[i])) {
			fprintf(stderr, "%s must not be eligible\n", no[i]);
			exit(T_EXIT_FAIL);
		}
	CHECK(sp__perf_map_eligible(NULL));
}

/* ---- safe opening ---- */

static char dir[] = "/tmp/sp-perfmap-XXXXXX";

static void map_path(char *buf, size_t len, int pid)
{
	snprintf(buf, len, "%s/perf-%d.map", dir, pid);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK_PTR(f);
	fputs(text, f);
	fclose(f);
}

static int load(int pid, uint64_t *identity)
{
	struct sp__perf_map *map = NULL;
	int err = sp__perf_map_load(&mem, dir, pid, &map, identity);
	struct sp_resolved_frame f;

	if (err == 0) {
		CHECK_EQ_INT(sp__perf_map_lookup(map, 0x1000, &f), 1);
		check_str(__LINE__, f.name, "jit_fn");
		sp__perf_map_free(map);
	} else {
		CHECK_EQ(map, NULL);
	}
	return err;
}

static void test_open_ok(int pid)
{
	struct sp__perf_map *map = NULL;
	uint64_t id1 = 0, id2 = 0, id3 = 0;
	struct sp_resolved_frame f;
	char path[128];

	map_path(path, sizeof(path), pid);
	write_file(path, "1000 10 jit_fn\n");
	CHECK_OK(sp__perf_map_load(&mem, dir, pid, &map, &id1));
	CHECK_EQ_INT(sp__perf_map_lookup(map, 0x1000, &f), 1);
	check_str(__LINE__, f.name, "jit_fn");
	check_str(__LINE__, f.module, path);
	sp__perf_map_free(map);
	CHECK_OK(load(pid, &id2));
	CHECK_EQ(id1, id2);
	/* An appended line changes the identity (size, mtime). */
	write_file(path, "1000 10 jit_fn\n2000 10 more\n");
	CHECK_OK(load(pid, &id3));
	CHECK(id3 != id1);
	unlink(path);
	CHECK_EQ_INT(load(pid, &id3), -ENOENT);
}

static void test_open_refusals(int pid)
{
	char path[128], target[160];
	uint64_t id = 0;
	int fd;

	map_path(path, sizeof(path), pid);
	CHECK_EQ_INT(mkfifo(path, 0600), 0);
	CHECK_EQ_INT(load(pid, &id), -EPERM); /* and it did not block */
	unlink(path);
	snprintf(target, sizeof(target), "%s/target.map", dir);
	write_file(target, "1000 10 jit_fn\n");
	CHECK_EQ_INT(symlink(target, path), 0);
	CHECK_EQ_INT(load(pid, &id), -EPERM);
	unlink(path);
	CHECK_EQ_INT(mkdir(path, 0700), 0);
	CHECK_EQ_INT(load(pid, &id), -EPERM);
	rmdir(path);
	/* 64 MiB exactly is allowed, one byte more is not (sparse files). */
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, "1000 10 jit_fn\n", 15), 15);
	CHECK_EQ_INT(ftruncate(fd, 64ll << 20), 0);
	CHECK_OK(load(pid, &id));
	CHECK_EQ_INT(ftruncate(fd, (64ll << 20) + 1), 0);
	CHECK_EQ_INT(load(pid, &id), -EFBIG);
	close(fd);
	unlink(path);
	unlink(target);
}

/* Root only: a map owned by someone else than the target's owner. */
static void test_owner(int pid, int dead_pid)
{
	char path[128];
	uint64_t id;

	if (geteuid() != 0)
		return;
	map_path(path, sizeof(path), pid);
	write_file(path, "1000 10 jit_fn\n");
	CHECK_EQ_INT(chown(path, 65534, 65534), 0);
	CHECK_EQ_INT(load(pid, &id), -EPERM); /* /proc/<pid> is root's */
	unlink(path);
	/* Target gone: our own maps (copied for offline use) are fine. */
	map_path(path, sizeof(path), dead_pid);
	write_file(path, "1000 10 jit_fn\n");
	CHECK_OK(load(dead_pid, &id));
	CHECK_EQ_INT(chown(path, 65534, 65534), 0);
	CHECK_EQ_INT(load(dead_pid, &id), -EPERM);
	unlink(path);
}

static int find_dead_pid(void)
{
	char proc[32];
	int pid;

	for (pid = 4000000; pid > 1000; pid -= 7919) {
		snprintf(proc, sizeof(proc), "/proc/%d", pid);
		if (access(proc, F_OK) != 0)
			return pid;
	}
	return -1;
}

int main(void)
{
	int pid = (int)getpid();

	sp__mem_init(&mem, NULL);
	test_fields();
	test_overlaps();
	test_python();
	test_eligible();
	CHECK_PTR(mkdtemp(dir));
	test_open_ok(pid);
	test_open_refusals(pid);
	test_owner(pid, find_dead_pid());
	CHECK_EQ_INT(rmdir(dir), 0);
	return T_EXIT_PASS;
}
