/* SPDX-License-Identifier: MIT */
/* The definitions store every reader keeps, and its public read-only view. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "format_internal.h"

/*
 * struct sp_spool holds what the records of a spool defined, indexed by
 * their dense ids. Readers append through sp__spool_decode(); the public
 * functions below only read, so any number of threads may call them on a
 * spool that is no longer growing.
 */

void sp__spool_init(struct sp_spool *spool, const struct sp__mem *mem,
		    bool keep_python)
{
	memset(spool, 0, sizeof(*spool));
	spool->mem = *mem;
	sp__arena_init(&spool->arena);
	sp__vec_init(&spool->modules, sizeof(struct sp_module));
	sp__vec_init(&spool->frames, sizeof(struct sp__frame));
	sp__vec_init(&spool->stacks, sizeof(struct sp_stack_node));
	sp__vec_init(&spool->threads, sizeof(struct sp_thread));
	sp__vec_init(&spool->python, sizeof(struct sp_python_record));
	sp__vec_init(&spool->python_at, sizeof(uint32_t));
	sp__vec_init(&spool->retired, sizeof(uint32_t));
	sp__vec_init(&spool->frame_ns, sizeof(uint64_t));
	spool->keep_python = keep_python;
}

void sp__spool_fini(struct sp_spool *spool)
{
	const struct sp__mem *mem = &spool->mem;

	sp__vec_fini(&spool->modules, mem);
	sp__vec_fini(&spool->frames, mem);
	sp__vec_fini(&spool->stacks, mem);
	sp__vec_fini(&spool->threads, mem);
	sp__vec_fini(&spool->python, mem);
	sp__vec_fini(&spool->python_at, mem);
	sp__vec_fini(&spool->retired, mem);
	sp__vec_fini(&spool->frame_ns, mem);
	sp__arena_fini(&spool->arena, mem);
}

void sp__spool_stamp_frames(struct sp_spool *spool, uint64_t ts)
{
	size_t n = spool->frames.len - spool->frame_ns.len, i;

	/* Out of memory: these and later frames get no time (0), not a
	 * later sample's. */
	if (sp__vec_reserve(&spool->frame_ns, &spool->mem, n)) {
		spool->frame_ns_failed = true;
		return;
	}
	for (i = 0; i < n; i++)
		((uint64_t *)spool->frame_ns.data)[spool->frame_ns.len++] = ts;
}

SP_API uint64_t sp_spool_frame_time(const struct sp_spool *spool,
				    uint32_t frame_id)
{
	return spool ? sp__spool_frame_ns(spool, frame_id) : 0;
}

SP_API uint64_t sp_spool_start_timestamp_us(const struct sp_spool *spool)
{
	return spool->start_us;
}

SP_API uint64_t sp_spool_sample_interval_us(const struct sp_spool *spool)
{
	return spool->interval_us;
}

SP_API uint32_t sp_spool_module_count(const struct sp_spool *spool)
{
	return (uint32_t)spool->modules.len;
}

SP_API uint32_t sp_spool_frame_count(const struct sp_spool *spool)
{
	return (uint32_t)spool->frames.len;
}

SP_API uint32_t sp_spool_stack_count(const struct sp_spool *spool)
{
	return (uint32_t)spool->stacks.len;
}

SP_API uint32_t sp_spool_thread_count(const struct sp_spool *spool)
{
	return (uint32_t)spool->threads.len;
}

SP_API int sp_spool_module(const struct sp_spool *spool, uint32_t id,
			   struct sp_module *out)
{
	if (id >= spool->modules.len)
		return -EINVAL;
	*out = *(const struct sp_module *)sp__vec_at(&spool->modules, id);
	return 0;
}

static void frame_public(const struct sp__frame *f, struct sp_frame *out)
{
	out->abs_ip = f->abs_ip;
	out->file_relative_ip = f->rel_ip;
	out->module_id = f->module;
	out->mode = f->mode;
}

SP_API int sp_spool_frame(const struct sp_spool *spool, uint32_t id,
			  struct sp_frame *out)
{
	if (id >= spool->frames.len)
		return -EINVAL;
	frame_public(sp__vec_at(&spool->frames, id), out);
	return 0;
}

SP_API int sp_spool_stack_node(const struct sp_spool *spool, uint32_t id,
			       struct sp_stack_node *out)
{
	if (id >= spool->stacks.len)
		return -EINVAL;
	*out = *(const struct sp_stack_node *)sp__vec_at(&spool->stacks, id);
	return 0;
}

SP_API int sp_spool_thread(const struct sp_spool *spool, uint32_t index,
			   struct sp_thread *out)
{
	if (index >= spool->threads.len)
		return -EINVAL;
	*out = *(const struct sp_thread *)sp__vec_at(&spool->threads, index);
	return 0;
}

SP_API int sp_spool_stack_frames(const struct sp_spool *spool, uint32_t stack,
				 uint32_t *frame_ids, size_t cap)
{
	const struct sp_stack_node *n;
	uint32_t depth;
	size_t i = 0;

	if (stack >= spool->stacks.len)
		return -EINVAL;
	n = sp__vec_at(&spool->stacks, stack);
	depth = n->depth;
	/* Parents are strictly smaller ids (§5.3), so this walk terminates. */
	for (;;) {
		if (i < cap)
			frame_ids[i] = n->frame;
		i++;
		if (n->parent == SP_NO_PARENT || i >= cap)
			break;
		n = sp__vec_at(&spool->stacks, n->parent);
	}
	return depth > INT32_MAX ? INT32_MAX : (int)depth;
}

/* §6: is module @m visible to frame @f (by position in the stream)? */
static bool visible(const struct sp_module *m, uint32_t frame_id)
{
	return m->deactivated_at == SP_NEVER || frame_id < m->deactivated_at;
}

static bool owns(const struct sp_module *m, uint32_t mode, int32_t pid,
		 uint64_t ip)
{
	if (mode == SP_FRAME_KERNEL ? !m->is_kernel :
				      (m->is_kernel || m->pid != pid))
		return false;
	return m->start <= ip && ip < m->end;
}

static void resolve_unpinned(const struct sp_spool *spool,
			     const struct sp__frame *f, uint32_t frame_id,
			     int32_t pid, struct sp_frame_context *out)
{
	size_t i = f->module_limit;

	while (i-- > 0) {
		const struct sp_module *m = sp__vec_at(&spool->modules, i);
		uint64_t rel;

		if (!visible(m, frame_id) || !owns(m, f->mode, pid, f->abs_ip))
			continue;
		rel = f->abs_ip - m->start;
		/* Overflow leaves the frame unresolved, no fall-back (§6). */
		if (rel > UINT64_MAX - m->file_offset)
			return;
		out->module_id = (uint32_t)i;
		out->file_relative_ip = rel + m->file_offset;
		return;
	}
}

SP_API int sp_spool_resolve(const struct sp_spool *spool, uint32_t frame_id,
			    int32_t pid, struct sp_frame_context *out)
{
	const struct sp__frame *f;

	if (frame_id >= spool->frames.len)
		return -EINVAL;
	f = sp__vec_at(&spool->frames, frame_id);
	frame_public(f, &out->frame);
	out->frame_id = frame_id;
	out->module_id = SP_NO_MODULE;
	out->file_relative_ip = 0;
	if (f->mode == SP_FRAME_TRUNCATED)
		return 0;
	if (f->module != SP_NO_MODULE) {
		out->module_id = f->module;
		out->file_relative_ip = f->rel_ip;
		return 0;
	}
	resolve_unpinned(spool, f, frame_id, pid, out);
	return 0;
}

SP_API int sp_spool_stack_contexts(const struct sp_spool *spool, uint32_t stack,
				   int32_t pid, struct sp_frame_context *out,
				   size_t cap)
{
	const struct sp_stack_node *n;
	size_t i = 0;

	if (stack >= spool->stacks.len)
		return -EINVAL;
	n = sp__vec_at(&spool->stacks, stack);
	while (i < cap) {
		sp_spool_resolve(spool, n->frame, pid, &out[i++]);
		if (n->parent == SP_NO_PARENT)
			break;
		n = sp__vec_at(&spool->stacks, n->parent);
	}
	n = sp__vec_at(&spool->stacks, stack);
	return n->depth > INT32_MAX ? INT32_MAX : (int)n->depth;
}

SP_API uint64_t sp_spool_timestamp_us(const struct sp_spool *spool,
				      uint64_t timestamp_ns)
{
	uint64_t first = spool->have_first ? spool->first_ns : timestamp_ns;
	uint64_t off = timestamp_ns > first ? (timestamp_ns - first) / 1000 : 0;

	if (spool->start_us == 0)
		return 0;
	return off > UINT64_MAX - spool->start_us ? UINT64_MAX :
						    spool->start_us + off;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Sorted distinct kernel addresses, without allocating: frames are
 * collected into @out, sorted and de-duplicated there. When @out is too
 * small the result is the number of kernel-mode frames, the capacity that
 * is always enough for a second call.
 */
SP_API size_t sp_spool_kernel_addresses(const struct sp_spool *spool,
					uint64_t *out, size_t cap)
{
	size_t i, n = 0, kept = 0;

	for (i = 0; i < spool->frames.len; i++) {
		const struct sp__frame *f = sp__vec_at(&spool->frames, i);

		if (f->mode != SP_FRAME_KERNEL)
			continue;
		if (n < cap)
			out[n] = f->abs_ip;
		n++;
	}
	if (n > cap || out == NULL)
		return n; /* upper bound: call again with cap >= this */
	qsort(out, n, sizeof(*out), cmp_u64);
	for (i = 0; i < n; i++)
		if (kept == 0 || out[kept - 1] != out[i])
			out[kept++] = out[i];
	return kept;
}

static bool module_named(const struct sp_module *m, const char *name)
{
	size_t n = strlen(name);

	return m->is_kernel && m->path_len == n && !memcmp(m->path, name, n);
}

/* The mode module is written before any sample: look among the first. */
#define MODE_MODULE_SCAN 16u

SP_API int sp_spool_mode(const struct sp_spool *spool)
{
	size_t i;

	for (i = 0; i < spool->modules.len && i < MODE_MODULE_SCAN; i++) {
		const struct sp_module *m = sp__vec_at(&spool->modules, i);

		if (module_named(m, SP_MODE_MODULE_WALL))
			return SP_PROFILE_WALL;
		if (module_named(m, SP_MODE_MODULE_OFF_CPU))
			return SP_PROFILE_OFF_CPU;
	}
	return SP_PROFILE_CPU;
}

SP_API int sp_spool_off_cpu_frame(const struct sp_spool *spool,
				  uint32_t frame_id)
{
	const struct sp__frame *f;
	const struct sp_module *m;

	if (frame_id >= spool->frames.len)
		return 0;
	f = sp__vec_at(&spool->frames, frame_id);
	if (f->module >= spool->modules.len)
		return 0;
	m = sp__vec_at(&spool->modules, f->module);
	if (!module_named(m, SP_OFF_CPU_MODULE))
		return 0;
	return f->rel_ip == SP_OFF_CPU_PREEMPTED ? 2 : 1;
}
