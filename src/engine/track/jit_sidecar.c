/* SPDX-License-Identifier: MIT */
/* The recorder's own jitdump files: names of GDB JIT functions, kept at once. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stackpulse/error.h>

#include "jit_elf.h"
#include "jit_side.h"
#include "jit_track.h"
#include "jitdump_write.h"
#include "logging.h"
#include "process.h"

/*
 * GDB JIT objects live in the target's memory and vanish when the code
 * is freed or the process exits, so their function names are written,
 * as soon as an object is read, to a jitdump file of the recorder's (one
 * per process generation):
 *
 *   <jit_dir>/gdbjit-<pid>-<n>.dump    header, then one CODE_LOAD per
 *                                      function (timestamp: when the
 *                                      object was seen, on the sample
 *                                      clock; code bytes read from the
 *                                      target), CODE_CLOSE at the end
 *
 * The directory is the recorder's JIT side directory (jit_side.h; the
 * jit_dir option, spulse record: FILE.jit), created on first use;
 * sidecars a previous recording left there are removed when the
 * recorder opens, so the directory describes one recording. The file's absolute path is the path of the modules jit_gdb.c
 * maps over the objects' code, and of a module record of size 0 written
 * for the process when the file is opened: that is how a symbolizer
 * finds it, under the same generation rules as the jitdump files JITs
 * write themselves, also for frames sampled before an object's module
 * was mapped. An empty module is inert for any SPULSE3 reader: no frame
 * can lie in it. Sidecar I/O failures are counted (names_lost) and end
 * that process's sidecar; they never fail the recording.
 */

#define CODE_MAX (1u << 20) /* code bytes copied per function */

/*
 * The side directory, made once (jit_side.h: 0700 with the marker, so
 * the next recording into it removes these files); its absolute path in
 * @abs (PATH_MAX).
 */
static int dir_ready(struct sp__procs *procs, char *abs)
{
	struct sp__jit *jit = procs->jit;
	struct sp__jit_side *side = procs->jit_side;
	int err;

	if (jit->dir_err)
		return jit->dir_err;
	err = sp__jit_side_open(side); /* -ENOENT: names are not kept */
	if (!err && !realpath(side->dir, abs))
		err = -errno;
	if (err && err != -ENOENT)
		sp__log(jit->logger, SP_LOG_WARN,
			"JIT side directory %s: %s (names of GDB JIT code "
			"are not kept)",
			side->dir, sp_strerror(err));
	jit->dir_err = err;
	return err;
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * The module of size 0 naming the sidecar for the process. No frame
 * refers to it, so it may be written at any point of the stream (also
 * while jobs are being written). A path the writer refuses (not UTF-8)
 * only costs the names of frames outside the objects' own modules.
 */
static int name_in_spool(struct sp__procs *procs, struct sp__jit_proc *jp)
{
	struct sp_module m = { 0 };
	int err;

	m.pid = jp->pid;
	m.path = jp->side_path;
	m.path_len = strlen(jp->side_path);
	/* After what was dispatched, as in inline mode (no-op in a write). */
	err = sp__procs_sync(procs);
	if (!err)
		err = sp_writer_module(procs->writer, &m, NULL);
	return err == -EINVAL ? 0 : err;
}

/* Opens the sidecar of @jp, writes its header and names it in the spool. */
static int side_open(struct sp__procs *procs, struct sp__jit_proc *jp,
		     uint64_t stamp)
{
	struct sp__jit *jit = procs->jit;
	char dir[PATH_MAX], path[PATH_MAX + 64];
	struct sp__vec hdr;
	int err, n;

	err = dir_ready(procs, dir);
	if (err)
		return err;
	n = snprintf(path, sizeof(path), "%s/gdbjit-%d-%llu.dump", dir,
		     (int)jp->pid, (unsigned long long)jit->side_seq++);
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	jp->side_fd = open(
		path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		0600);
	if (jp->side_fd < 0)
		return -errno;
	sp__vec_init(&hdr, 1);
	err = sp__jitdump_put_header(&hdr, &jit->mem, (uint32_t)jp->pid, stamp);
	if (!err)
		err = write_all(jp->side_fd, hdr.data, hdr.len);
	sp__vec_fini(&hdr, &jit->mem);
	if (!err && !(jp->side_path = sp__mem_alloc(&jit->mem, (size_t)n + 1)))
		err = -ENOMEM;
	if (!err) {
		memcpy(jp->side_path, path, (size_t)n + 1);
		err = name_in_spool(procs, jp);
	}
	return err;
}

const char *sp__jit_sidecar_path(const struct sp__jit_proc *jp)
{
	return jp->side_fd >= 0 ? jp->side_path : NULL;
}

static void side_path_free(struct sp__jit_proc *jp)
{
	if (jp->side_path)
		sp__mem_free(&jp->jit->mem, jp->side_path,
			     strlen(jp->side_path) + 1);
	jp->side_path = NULL;
}

static void side_fail(struct sp__jit_proc *jp, int err)
{
	sp__log(jp->jit->logger, SP_LOG_WARN,
		"JIT names of pid %d not kept: %s", jp->pid, sp_strerror(err));
	if (jp->side_fd >= 0)
		close(jp->side_fd);
	jp->side_fd = -1;
	jp->side_failed = true;
	side_path_free(jp);
}

/* Appends a CODE_LOAD for @s with its code read from the target. */
static int put_function(struct sp__jit_proc *jp, struct sp__vec *out,
			const struct sp__jit_elf_sym *s, uint64_t stamp)
{
	const struct sp__mem *mem = &jp->jit->mem;
	size_t len = s->end - s->start > CODE_MAX ? CODE_MAX :
						    (size_t)(s->end - s->start);
	uint8_t *code = sp__mem_alloc(mem, len);
	int err;

	if (!code)
		return -ENOMEM;
	err = sp__jit_vm_read(&jp->pid, s->start, code, len);
	if (!err)
		err = sp__jitdump_put_load(out, mem, stamp, (uint32_t)jp->pid,
					   (uint32_t)jp->pid, s->start, code,
					   len, ++jp->side_index, s->name);
	sp__mem_free(mem, code, len);
	return err;
}

int sp__jit_sidecar_object(struct sp__procs *procs, struct sp__jit_proc *jp,
			   const struct sp__jit_elf *e, uint64_t stamp)
{
	struct sp__jit *jit = procs->jit;
	const struct sp__jit_elf_sym *s = e->syms.data;
	struct sp__vec out;
	size_t i, kept = 0;
	int err = 0;

	if (jp->side_failed) {
		jit->st.names_lost += e->syms.len;
		return 0;
	}
	if (jp->side_fd < 0) {
		err = side_open(procs, jp, stamp);
		if (err) {
			jit->st.names_lost += e->syms.len;
			side_fail(jp, err);
			/* -ENOMEM, or the spool writer's own failure. */
			return err == -ENOMEM || err < -4000 ? err : 0;
		}
	}
	if (!e->syms.len)
		return 0;
	sp__vec_init(&out, 1);
	for (i = 0; i < e->syms.len && err != -ENOMEM; i++) {
		err = put_function(jp, &out, &s[i], stamp);
		kept += err == 0;
	}
	jit->st.names += kept;
	jit->st.names_lost += e->syms.len - kept;
	err = err == -ENOMEM ? err : write_all(jp->side_fd, out.data, out.len);
	sp__vec_fini(&out, &jit->mem);
	if (err && err != -ENOMEM)
		side_fail(jp, err);
	return err == -ENOMEM ? err : 0;
}

void sp__jit_sidecar_close(struct sp__jit_proc *jp, uint64_t time)
{
	struct sp__vec out;

	if (jp->side_fd < 0)
		return;
	sp__vec_init(&out, 1);
	if (sp__jitdump_put_close(&out, &jp->jit->mem, time) == 0)
		write_all(jp->side_fd, out.data, out.len);
	sp__vec_fini(&out, &jp->jit->mem);
	close(jp->side_fd);
	jp->side_fd = -1;
	side_path_free(jp);
}
