/* SPDX-License-Identifier: MIT */
/* Finding tiled JIT trampolines (CPython -X perf arenas) in a target's memory. */
#define _GNU_SOURCE /* process_vm_readv */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include <stackpulse/error.h>

#include "jit_arena.h"
#include "logging.h"
#include "process.h"
#include "unwind_jit.h"

#define ARENA_MAX (1u << 20)
#define PROBE_BYTES 4096u    /* read first: still zeroed, or worth a read */
#define RETRY_NS 20000000ull /* 20 ms */
#define READS_MAX 64	     /* whole-mapping reads per process */

bool sp__jit_arena_candidate(const struct sp__module *m)
{
	bool anon = m->path_len == 0 ||
		    (m->path_len == 6 && memcmp(m->path, "//anon", 6) == 0) ||
		    (m->path_len > 6 && memcmp(m->path, "[anon:", 6) == 0);

	return anon && m->inode == 0 && m->end > m->start &&
	       m->end - m->start <= ARENA_MAX;
}

/* @len bytes at @addr of the target: 0 or -errno (-EFAULT: cut short). */
static int read_target(int32_t pid, uint64_t addr, uint8_t *buf, size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)addr,
				.iov_len = len };
	ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (got < 0)
		return -errno;
	return (size_t)got == len ? 0 : -EFAULT;
}

/*
 * All of the module's bytes: its first page first, so that a mapping
 * still zeroed (not filled yet, -EAGAIN) costs one page per look.
 */
static int read_code(int32_t pid, const struct sp__module *m, uint8_t *buf,
		     size_t len)
{
	static const uint8_t zero[16];
	size_t probe = len < PROBE_BYTES ? len : PROBE_BYTES;
	int err = read_target(pid, m->start, buf, probe);

	if (err)
		return err;
	if (memcmp(buf, zero, sizeof(zero)) == 0)
		return -EAGAIN;
	return len > probe ? read_target(pid, m->start + probe, buf + probe,
					 len - probe) :
			     0;
}

/* One check of candidate @m: its id, or why not (-EAGAIN: try again). */
static int check_module(struct sp__procs *procs, struct sp__process *proc,
			struct sp__module *m)
{
	size_t len = (size_t)(m->end - m->start);
	uint8_t *buf;
	uint64_t id = 0;
	int err;

	if (proc->jit_reads >= READS_MAX)
		return -E2BIG;
	buf = sp__mem_alloc(procs->mem, len);
	if (!buf)
		return -ENOMEM;
	err = read_code(proc->pid, m, buf, len);
	proc->jit_reads += err != -EAGAIN;
	if (!err)
		err = sp__unwinder_jit_tiled(procs->unwinder, buf, len, &id);
	sp__mem_free(procs->mem, buf, len);
	if (!err)
		m->jit_id = id;
	return err;
}

void sp__jit_arena_check(struct sp__procs *procs, struct sp__process *proc,
			 uint64_t now_ns)
{
	uint32_t pending = 0;
	size_t i;
	int err;

	for (i = 0; i < proc->modules.len; i++) {
		struct sp__module *m = sp__vec_at(&proc->modules, i);

		if (!m->jit_tries || now_ns < m->jit_next_ns) {
			pending += m->jit_tries != 0;
			continue;
		}
		err = check_module(procs, proc, m);
		m->jit_tries = err == -EAGAIN ? m->jit_tries - 1 : 0;
		m->jit_next_ns = now_ns + RETRY_NS;
		pending += m->jit_tries != 0;
		if (!err) {
			proc->maps_dirty = true;
			sp__log(procs->logger, SP_LOG_DEBUG,
				"pid %d: JIT trampolines at %llx-%llx",
				proc->pid, (unsigned long long)m->start,
				(unsigned long long)m->end);
		}
	}
	proc->jit_pending = pending;
}
