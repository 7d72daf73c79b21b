/* SPDX-License-Identifier: MIT */
/* Python runtime detection and its tag-6 marker records (§1.7). */

/*
 * A process counts as a Python runtime for the spool when it has an
 * executable CPython module (the interpreter or libpython) mapped and was
 * started with perf support, the mode in which CPython writes the
 * /tmp/perf-PID.map trampolines that readers use to name Python frames.
 * Support is read from /proc once per exec, and only once a runtime
 * module shows up, so processes that are not Python cost nothing.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "proc_maps.h"
#include "python.h"

/* /proc/PID/environ and cmdline beyond this are not looked at. */
#define PROC_TEXT_MAX (64u << 10)

/* Length of a dotted numeric version at @s ("3", "3.12"), 0 if none. */
static size_t version_len(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && isdigit((unsigned char)s[i])) {
		while (i < n && isdigit((unsigned char)s[i]))
			i++;
		if (i + 1 < n && s[i] == '.' &&
		    isdigit((unsigned char)s[i + 1]))
			i++;
	}
	return i;
}

/* Length of the ABI letters (d, t) at @s. */
static size_t abi_len(const char *s, size_t n)
{
	size_t i = 0;

	while (i < n && i < 2 && (s[i] == 'd' || s[i] == 't'))
		i++;
	return i;
}

/* Whether @s is "" or ".N[.N...]" (a shared library version tail). */
static bool so_tail(const char *s, size_t n)
{
	return n == 0 ||
	       (s[0] == '.' && n > 1 && version_len(s + 1, n - 1) == n - 1);
}

static bool lib_rest(const char *s, size_t n)
{
	size_t v = version_len(s, n);

	if (v == 0)
		return false;
	v += abi_len(s + v, n - v);
	s += v;
	n -= v;
	if (n >= 3 && memcmp(s, ".so", 3) == 0)
		return so_tail(s + 3, n - 3);
	return n == 6 && memcmp(s, ".dylib", 6) == 0;
}

bool sp__python_is_runtime_basename(const char *base, size_t len)
{
	size_t v;

	if (len >= 9 && strncasecmp(base, "libpython", 9) == 0)
		return lib_rest(base + 9, len - 9);
	if (len < 6 || strncasecmp(base, "python", 6) != 0)
		return false;
	base += 6;
	len -= 6;
	v = version_len(base, len);
	v += abi_len(base + v, len - v);
	return v == len;
}

/* Calls @fn on each NUL-separated string of @s until it returns true. */
static bool any_arg(const char *s, size_t n,
		    bool (*fn)(const char *arg, const char *next))
{
	const char *end = s + n, *next;

	while (s < end) {
		next = s + strnlen(s, (size_t)(end - s)) + 1;
		if (fn(s, next < end ? next : NULL))
			return true;
		s = next;
	}
	return false;
}

static bool env_perf(const char *arg, const char *next)
{
	(void)next;
	return strcmp(arg, "PYTHONPERFSUPPORT=1") == 0;
}

static bool arg_perf(const char *arg, const char *next)
{
	if (strcmp(arg, "-Xperf") == 0)
		return true;
	return strcmp(arg, "-X") == 0 && next &&
	       (strcmp(next, "perf") == 0 || strncmp(next, "perf,", 5) == 0);
}

bool sp__python_perf_enabled(const char *environ, size_t environ_len,
			     const char *cmdline, size_t cmdline_len)
{
	return any_arg(environ, environ_len, env_perf) ||
	       any_arg(cmdline, cmdline_len, arg_perf);
}

/* Reads /proc/PID/@what into @buf; 0 bytes when unreadable. */
static size_t proc_text(int32_t pid, const char *what, char *buf)
{
	char path[64];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, what);
	n = sp__proc_read(path, buf, PROC_TEXT_MAX);
	return n > 0 ? (size_t)n : 0;
}

static enum sp__py_support probe(const struct sp__procs *procs, int32_t pid)
{
	char *env = sp__mem_alloc(procs->mem, 2 * (size_t)PROC_TEXT_MAX);
	size_t ne, nc;
	bool yes;

	if (!env)
		return SP__PY_UNKNOWN; /* probed again with the next module */
	ne = proc_text(pid, "environ", env);
	nc = proc_text(pid, "cmdline", env + PROC_TEXT_MAX);
	yes = sp__python_perf_enabled(env, ne, env + PROC_TEXT_MAX, nc);
	sp__mem_free(procs->mem, env, 2 * (size_t)PROC_TEXT_MAX);
	return yes ? SP__PY_YES : SP__PY_NO;
}

static bool module_is_runtime(const struct sp__module *m)
{
	size_t i = m->path_len;

	while (i > 0 && m->path[i - 1] != '/')
		i--;
	return sp__python_is_runtime_basename(m->path + i, m->path_len - i);
}

int sp__python_note_module(struct sp__procs *procs, struct sp__process *proc,
			   const struct sp__module *m)
{
	int err;

	if (proc->py_marked || !module_is_runtime(m))
		return 0;
	if (proc->py_support == SP__PY_UNKNOWN)
		proc->py_support = probe(procs, proc->pid);
	if (proc->py_support != SP__PY_YES)
		return 0;
	err = sp__procs_sync(procs);
	if (!err)
		err = sp_writer_python_runtime(procs->writer, procs->time_ns,
					       proc->pid, true);
	if (!err)
		proc->py_marked = true;
	return err;
}

int sp__python_unmark(struct sp__procs *procs, struct sp__process *proc)
{
	int err;

	if (!proc->py_marked)
		return 0;
	err = sp__procs_sync(procs);
	if (!err)
		err = sp_writer_python_runtime(procs->writer, procs->time_ns,
					       proc->pid, false);
	if (!err)
		proc->py_marked = false;
	return err;
}

int sp__python_recheck(struct sp__procs *procs, struct sp__process *proc)
{
	size_t i;
	int err = sp__python_unmark(procs, proc);

	for (i = 0; !err && i < proc->modules.len; i++)
		err = sp__python_note_module(procs, proc,
					     sp__vec_at(&proc->modules, i));
	return err;
}
