/* SPDX-License-Identifier: MIT */
/* Exporters: Brendan Gregg's folded (collapsed) stacks. */

/*
 * One line per distinct stack, root first, frame names joined by ';',
 * then a space and the sample count:
 *
 *   [pid;][tid;]main;run;work_[k] 42
 *
 * Annotations (SP_EXPORT_ANNOTATE_*), following flamegraph.pl's
 * conventions where they exist:
 *   pid / tid   the process and thread id as the first one or two frames
 *               (stacks of different threads are then separate lines);
 *   kind        suffix _[k] kernel, _[j] JIT / perf-map code, _[p] Python
 *               (ours: flamegraph.pl has no Python colour), _[i] for a
 *               frame inlined into its caller.
 * Names are sanitized so a line always parses: ';' becomes ':', and CR
 * or LF become a space. Other bytes pass through unchanged (the format
 * is bytes; a name with a space is fine, the count follows the last one).
 *
 * Lines are sorted by their text and identical lines are merged (the same
 * function names reached by different processes or different inline
 * positions), so the output is deterministic and each line unique.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export_internal.h"

struct folded_line {
	uint32_t stack;
	int32_t pid; /* 0 unless annotated */
	int32_t tid;
	uint64_t count;
};

static unsigned char sanitize(unsigned char c)
{
	if (c == ';')
		return ':';
	if (c == '\n' || c == '\r')
		return ' ';
	return c;
}

static const char *suffix(const struct sp__profile *prof,
			  const struct sp__xframe *f)
{
	if (!(prof->flags & SP_EXPORT_ANNOTATE_KIND))
		return "";
	if (f->kind == SP__XKIND_KERNEL)
		return "_[k]";
	if (f->kind == SP__XKIND_JIT)
		return "_[j]";
	if (f->kind == SP__XKIND_PYTHON)
		return "_[p]";
	return f->inline_depth ? "_[i]" : "";
}

/* Compares two frames as the bytes they are written as. */
static int cmp_frame(const struct sp__profile *prof, uint32_t a, uint32_t b)
{
	const struct sp__xframe *fa = &prof->frames[a], *fb = &prof->frames[b];
	const unsigned char *x = (const unsigned char *)fa->name;
	const unsigned char *y = (const unsigned char *)fb->name;

	if (a == b)
		return 0;
	while (*x && sanitize(*x) == sanitize(*y))
		x++, y++;
	if (*x || *y)
		return (int)sanitize(*x) - (int)sanitize(*y);
	return strcmp(suffix(prof, fa), suffix(prof, fb));
}

static int cmp_int(int64_t a, int64_t b)
{
	return (a > b) - (a < b);
}

static int cmp_line(const void *pa, const void *pb, void *ctx)
{
	const struct sp__profile *prof = ctx;
	const struct folded_line *a = pa, *b = pb;
	const uint32_t *fa = sp__profile_stack_frames(prof, a->stack);
	const uint32_t *fb = sp__profile_stack_frames(prof, b->stack);
	uint32_t na = prof->stacks[a->stack].len,
		 nb = prof->stacks[b->stack].len;
	uint32_t i;
	int c = cmp_int(a->pid, b->pid);

	if (!c)
		c = cmp_int(a->tid, b->tid);
	for (i = 0; !c && i < na && i < nb; i++)
		c = cmp_frame(prof, fa[i], fb[i]);
	return c ? c : cmp_int(na, nb);
}

/* One line per stack, or per (thread, stack) when tids are shown. */
static size_t collect(const struct sp__profile *prof, struct folded_line *l)
{
	bool by_tid = prof->flags & SP_EXPORT_ANNOTATE_TID;
	bool by_pid = prof->flags &
		      (SP_EXPORT_ANNOTATE_PID | SP_EXPORT_ANNOTATE_TID);
	size_t i, n = by_tid ? prof->ncounts : prof->nstacks;

	for (i = 0; i < n; i++) {
		const struct sp__xcount *c = &prof->counts[i];

		if (by_tid)
			l[i] = (struct folded_line){
				c->stack, prof->threads[c->thread].pid,
				prof->threads[c->thread].tid, c->count
			};
		else
			l[i] = (struct folded_line){
				(uint32_t)i, by_pid ? prof->stacks[i].pid : 0,
				0, prof->stacks[i].samples
			};
	}
	return n;
}

static void write_name(struct sp__xout *out, const char *s)
{
	const char *p;

	for (p = s; *p; p++)
		sp__xout_char(out, (char)sanitize((unsigned char)*p));
}

static void write_line(const struct sp__profile *prof, struct sp__xout *out,
		       const struct folded_line *l, uint64_t count)
{
	const uint32_t *f = sp__profile_stack_frames(prof, l->stack);
	uint32_t i, n = prof->stacks[l->stack].len;

	if (prof->flags & (SP_EXPORT_ANNOTATE_PID | SP_EXPORT_ANNOTATE_TID)) {
		sp__xout_i64(out, l->pid);
		sp__xout_char(out, ';');
	}
	if (prof->flags & SP_EXPORT_ANNOTATE_TID) {
		sp__xout_i64(out, l->tid);
		sp__xout_char(out, ';');
	}
	for (i = 0; i < n; i++) {
		if (i)
			sp__xout_char(out, ';');
		write_name(out, prof->frames[f[i]].name);
		sp__xout_str(out, suffix(prof, &prof->frames[f[i]]));
	}
	sp__xout_char(out, ' ');
	sp__xout_u64(out, count);
	sp__xout_char(out, '\n');
}

int sp__export_folded(struct sp__profile *prof, struct sp_sink *sink)
{
	size_t cap = prof->ncounts > prof->nstacks ? prof->ncounts :
						     prof->nstacks;
	struct folded_line *lines;
	struct sp__xout out;
	size_t i, n;
	uint64_t count;
	int err;

	if (!cap)
		return 0;
	lines = sp__xmem_calloc(&prof->mem, cap, sizeof(*lines));
	if (!lines)
		return -ENOMEM;
	err = sp__xout_init_sink(&out, &prof->mem, sink);
	if (err)
		goto out_lines;
	n = collect(prof, lines);
	qsort_r(lines, n, sizeof(*lines), cmp_line, prof);
	for (i = 0; i < n; i++) {
		/* Adjacent equal lines print once with the summed count. */
		count = lines[i].count;
		while (i + 1 < n && !cmp_line(&lines[i], &lines[i + 1], prof))
			count += lines[++i].count;
		write_line(prof, &out, &lines[i], count);
	}
	err = sp__xout_finish(&out);
out_lines:
	sp__xmem_free(&prof->mem, lines, cap * sizeof(*lines));
	return err;
}
