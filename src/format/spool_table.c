/* SPDX-License-Identifier: MIT */
/* Spools built in memory (definitions added one by one), Python records. */

/*
 * A spool from sp_spool_new() is the same store a reader decodes into
 * (format_internal.h), so every sp_spool_* function and the §6
 * resolution work on it unchanged. Additions follow the decoder's rules:
 * ids are dense in call order, a frame's resolution context is the
 * module count at the time it was added, nothing is ever deactivated.
 */
#include <errno.h>
#include <string.h>

#include "for_sym/spool_gens.h"
#include "format_internal.h"

SP_API int sp_spool_python_records(const struct sp_spool *spool,
				   const struct sp_python_record **records,
				   size_t *count)
{
	if (!spool || !records || !count)
		return -EINVAL;
	if (!spool->keep_python)
		return -EOPNOTSUPP;
	*records = spool->python.data;
	*count = spool->python.len;
	return 0;
}

int sp__spool_python_at(const struct sp_spool *spool, const uint32_t **at,
			size_t *count)
{
	if (!spool || !at || !count)
		return -EINVAL;
	if (!spool->keep_python)
		return -EOPNOTSUPP;
	*at = spool->python_at.data;
	*count = spool->python_at.len;
	return 0;
}

uint64_t sp__spool_retirements(const struct sp_spool *spool)
{
	return spool ? spool->retirements : 0;
}

SP_API int sp_spool_new(const struct sp_allocator *allocator,
			struct sp_spool **out)
{
	struct sp__mem mem;
	struct sp_spool *s;

	if (!out)
		return -EINVAL;
	sp__mem_init(&mem, allocator);
	s = sp__mem_alloc(&mem, sizeof(*s));
	if (!s)
		return -ENOMEM;
	sp__spool_init(s, &mem, false);
	*out = s;
	return 0;
}

SP_API void sp_spool_free(struct sp_spool *s)
{
	struct sp__mem mem;

	if (!s)
		return;
	mem = s->mem;
	sp__spool_fini(s);
	sp__mem_free(&mem, s, sizeof(*s));
}

SP_API int sp_spool_add_module(struct sp_spool *s, const struct sp_module *in,
			       uint32_t *id)
{
	struct sp_module m;
	size_t len;
	char *path;

	if (!s || !in || (!in->path && in->path_len) || in->start >= in->end ||
	    (!in->is_kernel && in->pid < 1))
		return -EINVAL;
	len = in->path && !in->path_len ? strlen(in->path) : in->path_len;
	if (s->modules.len >= SP_NO_MODULE ||
	    sp__vec_reserve(&s->modules, &s->mem, 1))
		return -ENOMEM;
	path = sp__arena_strndup(&s->arena, &s->mem, in->path ? in->path : "",
				 len);
	if (!path)
		return -ENOMEM;
	m = *in;
	m.path = path;
	m.path_len = len;
	m.is_kernel = in->is_kernel ? 1 : 0;
	m.pid = m.is_kernel ? -1 : in->pid;
	m.id = (uint32_t)s->modules.len;
	m.deactivated_at = SP_NEVER;
	if (id)
		*id = m.id;
	return sp__vec_push(&s->modules, &s->mem, &m); /* reserved */
}

SP_API int sp_spool_add_frame(struct sp_spool *s, const struct sp_frame *f,
			      uint32_t *id)
{
	struct sp__frame sf;

	if (!s || !f || f->mode > SP_FRAME_TRUNCATED ||
	    (f->module_id != SP_NO_MODULE && f->module_id >= s->modules.len))
		return -EINVAL;
	/* Frame ids are uint32_t: a table that large is out of memory. */
	if (s->frames.len >= UINT32_MAX - 1)
		return -ENOMEM;
	memset(&sf, 0, sizeof(sf));
	sf.abs_ip = f->abs_ip;
	sf.rel_ip = f->file_relative_ip;
	sf.module = f->module_id;
	sf.module_limit = (uint32_t)s->modules.len;
	sf.mode = f->mode;
	if (sp__vec_push(&s->frames, &s->mem, &sf))
		return -ENOMEM;
	if (id)
		*id = (uint32_t)s->frames.len - 1;
	return 0;
}
