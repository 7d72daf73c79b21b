/* SPDX-License-Identifier: MIT */
/* Exporters: a process's main executable and name, from its module records. */

/*
 * SPULSE3 carries no comm or exe records, so what names a process is its
 * executable mapping: the last module of the pid whose path is absolute,
 * not a shared object ("*.so", "*.so.N": ld.so, libc, Python's
 * extensions) and not anonymous memory ("//anon", the JIT code of
 * Python's perf trampolines and of V8) or an anonymous file
 * ("/memfd:...", "/dev/..."). The
 * last, because an exec replaces the image (sh -c CMD execs CMD in the
 * same pid) and the newest executable is the program the pid became;
 * without an exec there is one executable. Cached per pid in a map,
 * filled on the first question.
 */
#include <string.h>

#include "export_internal.h"

static bool is_program_path(const char *path, size_t len)
{
	const char *base, *so;

	if (!len || path[0] != '/' || path[1] == '/' ||
	    strncmp(path, "/memfd:", 7) == 0 ||
	    strncmp(path, "/dev/", 5) == 0 || memchr(path, 0, len))
		return false;
	base = strrchr(path, '/') + 1;
	so = strstr(base, ".so");
	return !so || (so[3] != '\0' && so[3] != '.');
}

uint32_t sp__profile_main_module(struct sp__profile *prof, int32_t pid)
{
	uint32_t i, n = sp_spool_module_count(prof->spool),
		    found = SP_NO_MODULE;
	uint64_t key = (uint64_t)(uint32_t)pid;
	uint32_t hit = sp__xmap_get(&prof->main_map, key);
	struct sp_module m;

	if (hit != UINT32_MAX)
		return hit;
	for (i = 0; i < n; i++)
		if (sp_spool_module(prof->spool, i, &m) == 0 && m.pid == pid &&
		    !m.is_kernel && is_program_path(m.path, m.path_len))
			found = i;
	/* A failed put only means asking again next time. */
	sp__xmap_put(&prof->main_map, &prof->mem, key, found);
	return found;
}

const char *sp__profile_process_name(struct sp__profile *prof, int32_t pid)
{
	uint32_t id = sp__profile_main_module(prof, pid);
	struct sp_module m;
	const char *slash;

	if (id == SP_NO_MODULE || sp_spool_module(prof->spool, id, &m) != 0)
		return NULL;
	slash = strrchr(m.path, '/');
	return slash && slash[1] ? slash + 1 : m.path;
}
