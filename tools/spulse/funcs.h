/* SPDX-License-Identifier: MIT */
/* spulse: functions interned by (name, module) for `report` and `top`. */
#ifndef SPULSE_FUNCS_H
#define SPULSE_FUNCS_H

/*
 * Both commands fold resolved frames into per-function counters, where a
 * function is its name plus its module path (two modules may both define
 * "main"). The table is an array of functions and an open-addressing
 * index over it (slot = function index + 1, 0 = free) that doubles with
 * the array, so the load stays at most one half.
 *
 * `report` borrows the strings: they live as long as its Symbolizer.
 * `top` copies them (@copy), because a symbolizer update may invalidate
 * the strings of a process while the counters live on. Both print their
 * tables with the same order and the same function labels (below).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <stackpulse/symbolizer.h>

struct spulse_func {
	const char *name;
	const char *module; /* NULL when the frame has no module */
	uint64_t self, total;
	uint64_t mark; /* the caller's; UINT64_MAX when interned */
	char *copy;    /* owned storage of name and module, or NULL */
};

struct spulse_funcs {
	struct spulse_func *v;
	size_t n, cap;
	size_t *index;
	size_t index_cap;
	bool copy; /* intern copies of the strings */
};

/* spulse_funcs_init prepares an empty table; @copy: see above. */
void spulse_funcs_init(struct spulse_funcs *t, bool copy);

/*
 * spulse_funcs_intern returns the index of (@name, @module) in t->v,
 * adding it with zero counters if new; -ENOMEM on failure. @module may be
 * NULL. Indices are stable; pointers into t->v are not.
 */
long spulse_funcs_intern(struct spulse_funcs *t, const char *name,
			 const char *module);

/*
 * spulse_func_cmp orders functions for a "top" table: most self samples
 * first (@by_total: most total samples), ties by name, so equal counts
 * always print in the same order.
 */
int spulse_func_cmp(const struct spulse_func *x, const struct spulse_func *y,
		    bool by_total);

/*
 * spulse_func_put prints "name  [module file name]" escaped for a
 * terminal, a long name shortened whole tokens at a time (elide.h).
 */
void spulse_func_put(FILE *f, const struct spulse_func *fn);

/*
 * spulse_frame_module is what a table names as @f's module: the .py file
 * of a Python frame (its perf map says nothing to a Python user), else
 * the module path.
 */
const char *spulse_frame_module(const struct sp_resolved_frame *f);

/* spulse_funcs_fini releases the table (and the copies). */
void spulse_funcs_fini(struct spulse_funcs *t);

#endif /* SPULSE_FUNCS_H */
