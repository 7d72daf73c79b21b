/* SPDX-License-Identifier: MIT */
/* spulse: functions interned by (name, module) for `report` and `top`. */

/*
 * See funcs.h. The hash is FNV-1a over the name, then the module, with a
 * final mix so the low bits (the slot) depend on every byte.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "elide.h"
#include "funcs.h"
#include "spulse.h"

static uint64_t hash_str(const char *s, uint64_t h)
{
	while (s && *s)
		h = (h ^ (unsigned char)*s++) * 0x100000001b3ull;
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	return h ^ (h >> 33);
}

static uint64_t hash_func(const char *name, const char *module)
{
	return hash_str(module, hash_str(name, 0));
}

static bool same(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

void spulse_funcs_init(struct spulse_funcs *t, bool copy)
{
	memset(t, 0, sizeof(*t));
	t->copy = copy;
}

/* Doubles the index and the array together and rehashes. */
static int grow(struct spulse_funcs *t)
{
	size_t i, cap = t->index_cap ? t->index_cap * 2 : 1024;
	size_t *idx = calloc(cap, sizeof(*idx));
	struct spulse_func *f = realloc(t->v, cap / 2 * sizeof(*f));

	if (f)
		t->v = f;
	if (!idx || !f) {
		free(idx);
		return -ENOMEM;
	}
	t->cap = cap / 2;
	for (i = 0; i < t->n; i++) {
		size_t j = hash_func(f[i].name, f[i].module) & (cap - 1);

		while (idx[j])
			j = (j + 1) & (cap - 1);
		idx[j] = i + 1;
	}
	free(t->index);
	t->index = idx;
	t->index_cap = cap;
	return 0;
}

/* Points @f at copies of @name and @module in one allocation. */
static int copy_strings(struct spulse_func *f, const char *name,
			const char *module)
{
	size_t nlen = strlen(name) + 1, mlen = module ? strlen(module) + 1 : 0;

	f->copy = malloc(nlen + mlen);
	if (!f->copy)
		return -ENOMEM;
	memcpy(f->copy, name, nlen);
	if (module)
		memcpy(f->copy + nlen, module, mlen);
	f->name = f->copy;
	f->module = module ? f->copy + nlen : NULL;
	return 0;
}

long spulse_funcs_intern(struct spulse_funcs *t, const char *name,
			 const char *module)
{
	struct spulse_func *f;
	size_t j, mask;

	if (t->n + 1 > t->cap && grow(t))
		return -ENOMEM;
	mask = t->index_cap - 1;
	j = hash_func(name, module) & mask;
	while (t->index[j]) {
		f = &t->v[t->index[j] - 1];
		if (same(f->name, name) && same(f->module, module))
			return (long)(t->index[j] - 1);
		j = (j + 1) & mask;
	}
	f = &t->v[t->n];
	memset(f, 0, sizeof(*f));
	f->mark = UINT64_MAX;
	f->name = name;
	f->module = module;
	if (t->copy && copy_strings(f, name, module))
		return -ENOMEM;
	t->index[j] = ++t->n;
	return (long)(t->n - 1);
}

int spulse_func_cmp(const struct spulse_func *x, const struct spulse_func *y,
		    bool by_total)
{
	uint64_t kx = by_total ? x->total : x->self;
	uint64_t ky = by_total ? y->total : y->self;

	if (kx != ky)
		return kx < ky ? 1 : -1;
	return strcmp(x->name, y->name);
}

void spulse_func_put(FILE *f, const struct spulse_func *fn)
{
	char buf[8192];
	const char *base, *name = spulse_elide(fn->name, SPULSE_NAME_WIDTH, buf,
					       sizeof(buf));

	spulse_put_text(f, name, strlen(name), false);
	if (!fn->module)
		return;
	base = strrchr(fn->module, '/');
	base = base ? base + 1 : fn->module;
	fputs("  [", f);
	spulse_put_text(f, base, strlen(base), false);
	putc(']', f);
}

void spulse_funcs_fini(struct spulse_funcs *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->v[i].copy);
	free(t->v);
	free(t->index);
	memset(t, 0, sizeof(*t));
}

const char *spulse_frame_module(const struct sp_resolved_frame *f)
{
	if (f->kind == SP_RESOLVED_PYTHON && f->file && f->file[0])
		return f->file;
	return f->module;
}
