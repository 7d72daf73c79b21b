/* SPDX-License-Identifier: MIT */
/* Real perf maps: CPython 3.12 -X perf and Node --perf-basic-prof. */
#define _GNU_SOURCE
#include <errno.h>
#include <glob.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "sym_internal.h"

/*
 * Each runtime runs a named hot function for about a second with its perf
 * map enabled; both leave /tmp/perf-<pid>.map behind when they exit. The
 * map is loaded through the safe loader (the pid is gone by then, the file
 * is ours), and every line of the file that names the hot function is
 * looked up at its start address: CPython's "py::" entries must become
 * Python frames with the function name and "<string>" as the file, V8's
 * "JS:*name ..." entries JIT native frames. Skips (77) when neither
 * runtime is installed.
 */
static struct sp__mem mem;

static const char py_prog[] = "import time\n"
			      "def hot_named_function(n):\n"
			      "    s = 0\n"
			      "    for i in range(n):\n"
			      "        s += i * i % 7\n"
			      "    return s\n"
			      "t = time.time()\n"
			      "while time.time() - t < 1.0:\n"
			      "    hot_named_function(1000)\n";

static const char js_prog[] =
	"function hotNamedJsFunction(n) {"
	"  let s = 0; for (let i = 0; i < n; i++) s += i * i % 7; return s; }"
	"let t = Date.now(), x = 0;"
	"while (Date.now() - t < 1000) x += hotNamedJsFunction(1000);";

/* Runs @argv to completion; returns its pid, or -1 when it failed. */
static pid_t run(const char *const argv[])
{
	char *v[8];
	int status, i;
	pid_t pid = fork();

	CHECK(pid >= 0);
	if (pid == 0) {
		/* execv takes char *const[]: copy (-Wwrite-strings). */
		for (i = 0; i < 7 && argv[i]; i++)
			v[i] = strdup(argv[i]);
		v[i] = NULL;
		execv(v[0], v);
		_exit(127);
	}
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		fprintf(stderr, "%s failed (status 0x%x)\n", argv[0], status);
		return -1;
	}
	return pid;
}

/*
 * Looks up every map line naming @needle at its start; returns how many
 * resolved with @kind and @want_name (checked for each). Lines sharing a
 * start with a later line are skipped: the later line wins there.
 */
static int check_lines(const struct sp__perf_map *map, const char *path,
		       const char *needle, uint32_t kind, const char *want_name)
{
	struct sp_resolved_frame f;
	unsigned long long start, len;
	char line[1024];
	int found = 0;
	bool match;
	FILE *fp = fopen(path, "r");

	CHECK_PTR(fp);
	while (fgets(line, sizeof(line), fp)) {
		if (!strstr(line, needle))
			continue;
		CHECK_EQ_INT(sscanf(line, "%llx %llx", &start, &len), 2);
		CHECK_EQ_INT(sp__perf_map_lookup(map, start, &f), 1);
		match = want_name ? strcmp(f.name, want_name) == 0 :
				    strstr(line, f.name) != NULL;
		if (!match)
			continue; /* a later entry at the same start */
		CHECK_EQ(f.kind, kind);
		CHECK_EQ(f.origin, SP_ORIGIN_PERF_MAP);
		CHECK_EQ(f.flags, SP_RESOLVED_JIT);
		CHECK_EQ(f.offset, 0);
		found++;
	}
	fclose(fp);
	return found;
}

static int test_python(void)
{
	const char *argv[] = { NULL, "-X", "perf", "-c", py_prog, NULL };
	struct sp__perf_map *map = NULL;
	struct sp_resolved_frame f;
	char path[64];
	uint64_t id = 0;
	glob_t g;
	pid_t pid;

	if (glob("/root/.pyenv/versions/3.12*/bin/python3.12", 0, NULL, &g) ||
	    !g.gl_pathc) {
		fprintf(stderr, "no CPython 3.12: skipping its part\n");
		return T_EXIT_SKIP;
	}
	argv[0] = g.gl_pathv[0];
	pid = run(argv);
	globfree(&g);
	CHECK(pid > 0);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	CHECK_OK(sp__perf_map_load(&mem, "/tmp", pid, &map, &id));
	CHECK(check_lines(map, path, "py::hot_named_function:",
			  SP_RESOLVED_PYTHON, "hot_named_function") >= 1);
	/* Every py:: entry of CPython's own modules is a Python frame. */
	CHECK(check_lines(map, path, " py::", SP_RESOLVED_PYTHON, NULL) > 10);
	CHECK_EQ_INT(sp__perf_map_lookup(map, 0, &f), 0);
	sp__perf_map_free(map);
	unlink(path);
	return T_EXIT_PASS;
}

static int test_node(void)
{
	const char *argv[] = { "/usr/bin/node", "--perf-basic-prof", "-e",
			       js_prog, NULL };
	struct sp__perf_map *map = NULL;
	char path[64];
	uint64_t id = 0;
	pid_t pid;
	int n;

	if (access(argv[0], X_OK) != 0) {
		fprintf(stderr, "no node: skipping its part\n");
		return T_EXIT_SKIP;
	}
	pid = run(argv);
	CHECK(pid > 0);
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	CHECK_OK(sp__perf_map_load(&mem, "/tmp", pid, &map, &id));
	n = check_lines(map, path, "hotNamedJsFunction", SP_RESOLVED_NATIVE,
			NULL);
	CHECK(n >= 1);
	sp__perf_map_free(map);
	unlink(path);
	return T_EXIT_PASS;
}

int main(void)
{
	int py, js;

	sp__mem_init(&mem, NULL);
	py = test_python();
	js = test_node();
	return py == T_EXIT_SKIP && js == T_EXIT_SKIP ? T_EXIT_SKIP :
							T_EXIT_PASS;
}
