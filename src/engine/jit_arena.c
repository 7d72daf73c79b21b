/* SPDX-License-Identifier: MIT */
/* Finding tiled JIT trampolines (CPython -X perf arenas) in a target's memory. */
#define _GNU_SOURCE /* process_vm_readv */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>

#include <stackpulse/error.h>

#include "jit_arena.h"
#include "jit_table.h"
#include "logging.h"
#include "process.h"

#define ARENA_MAX (1u << 20)
#define RETRY_NS 20000000ull /* 20 ms */

bool sp__jit_arena_candidate(const struct sp__module *m)
{
	bool anon = m->path_len == 0 ||
		    (m->path_len == 6 && memcmp(m->path, "//anon", 6) == 0) ||
		    (m->path_len > 6 && memcmp(m->path, "[anon:", 6) == 0);

	return anon && m->inode == 0 && m->end > m->start &&
	       m->end - m->start <= ARENA_MAX;
}

/* All of the module's bytes from the target; 0, -EAGAIN (still zeroed), -errno. */
static int read_code(int32_t pid, const struct sp__module *m, uint8_t *buf,
		     size_t len)
{
	struct iovec local = { .iov_base = buf, .iov_len = len };
	struct iovec remote = { .iov_base = (void *)(uintptr_t)m->start,
				.iov_len = len };
	static const uint8_t zero[16];
	ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);

	if (got < 0)
		return -errno;
	if ((size_t)got != len)
		return -EFAULT;
	return memcmp(buf, zero, sizeof(zero)) == 0 ? -EAGAIN : 0;
}

/* One check of candidate @m: its id, or why not (-EAGAIN: try again). */
static int check_module(struct sp__procs *procs, int32_t pid,
			struct sp__module *m)
{
	size_t len = (size_t)(m->end - m->start);
	uint8_t *buf = sp__mem_alloc(procs->mem, len);
	uint64_t id = 0;
	int err;

	if (!buf)
		return -ENOMEM;
	err = read_code(pid, m, buf, len);
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
		err = check_module(procs, proc->pid, m);
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
