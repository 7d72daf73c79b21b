/* SPDX-License-Identifier: MIT */
/* Unit test: Python runtime basenames and perf-support detection (§1.7). */

/*
 * The accept/reject lists are stackpulse 0.10.2's (is_python_runtime_
 * basename); the perf-support strings are NUL-separated as /proc gives
 * them.
 */
#include <string.h>

#include "check.h"
#include "python.h"

static int is_rt(const char *s)
{
	return sp__python_is_runtime_basename(s, strlen(s));
}

static void test_basenames(void)
{
	static const char *const yes[] = { "python",
					   "python3",
					   "python3.12",
					   "python3.13t",
					   "python3.12d",
					   "Python3.11",
					   "PYTHON",
					   "libpython3.12.so",
					   "libpython3.12.so.1.0",
					   "libpython3.so",
					   "libpython3.13t.so.1",
					   "libpython3.9.dylib",
					   "LibPython3.10.so.1" };
	static const char *const no[] = { "pypy3",
					  "python3.12-config",
					  "libpythonx.so",
					  "libnotpython3.so",
					  "python3.",
					  "python3..12",
					  "libpython3.12.so.",
					  "libpython.so",
					  "libpython3.12.a",
					  "python3.12x",
					  "python3.12dtd",
					  "pythonw.exe",
					  "libpython3.12.dylib.1",
					  "" };
	size_t i;

	for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!is_rt(yes[i]))
			fprintf(stderr, "rejected %s\n", yes[i]);
		CHECK(is_rt(yes[i]));
	}
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		if (is_rt(no[i]))
			fprintf(stderr, "accepted %s\n", no[i]);
		CHECK(!is_rt(no[i]));
	}
}

#define PERF(env, cmd)                                                         \
	sp__python_perf_enabled(env, sizeof(env) - 1, cmd, sizeof(cmd) - 1)

static void test_perf_support(void)
{
	CHECK(PERF("A=1\0PYTHONPERFSUPPORT=1\0", "python3\0x.py\0"));
	CHECK(!PERF("PYTHONPERFSUPPORT=0\0", "python3\0x.py\0"));
	CHECK(!PERF("PYTHONPERFSUPPORT=11\0", "python3\0"));
	CHECK(!PERF("XPYTHONPERFSUPPORT=1\0", "python3\0"));
	CHECK(PERF("", "python3\0-Xperf\0x.py\0"));
	CHECK(PERF("", "python3\0-X\0perf\0x.py\0"));
	CHECK(PERF("", "python3\0-X\0perf,foo\0"));
	CHECK(!PERF("", "python3\0-X\0perfx\0"));
	CHECK(!PERF("", "python3\0-X\0"));
	CHECK(!PERF("", "python3\0-Xperfx\0"));
	CHECK(!PERF("", "python3\0-c\0-Xperf2\0"));
	/* No terminating NUL (a truncated read) is still bounded. */
	CHECK(PERF("PYTHONPERFSUPPORT=1", "python3"));
}

int main(void)
{
	test_basenames();
	test_perf_support();
	return T_EXIT_PASS;
}
