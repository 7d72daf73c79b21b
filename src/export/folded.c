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
 * Names go through sp_text_escape() (as every text output does): control
 * bytes (ESC, BEL, CR, LF, DEL, C1) and invalid UTF-8 become \xNN, so the
 * output is safe on a terminal and a line always parses; then ';' becomes
 * ':'. Other bytes pass through unchanged (a name with a space is fine,
 * the count follows the last one). Each frame's written text is made once
 * (names[]) and lines are compared as that text.
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

/* The qsort context: the profile and each frame's written name. */
struct folded_ctx {
	const struct sp__profile *prof;
	char **names; /* [prof->nframes], into one block */
	char *block;
	size_t block_size;
};

/* Escaped pieces of a name: counted, or copied with ';' as ':'. */
struct name_sink {
	char *at; /* NULL: count only */
	size_t len;
};

static int name_piece(void *ctx, const char *buf, size_t len)
{
	struct name_sink *n = ctx;
	size_t i;

	if (n->at)
		for (i = 0; i < len; i++)
			*n->at++ = buf[i] == ';' ? ':' : buf[i];
	n->len += len;
	return 0;
}

/* Builds c->names: every frame's name as the line will hold it. */
static int names_build(struct folded_ctx *c)
{
	const struct sp__profile *prof = c->prof;
	struct name_sink n = { 0 };
	size_t i;

	for (i = 0; i < prof->nframes; i++) {
		sp_text_escape(prof->frames[i].name,
			       strlen(prof->frames[i].name), 0, name_piece, &n);
		n.len++;
	}
	c->block_size = n.len ? n.len : 1;
	c->block = sp__xmem_alloc(&prof->mem, c->block_size);
	c->names = sp__xmem_calloc(&prof->mem,
				   prof->nframes ? prof->nframes : 1,
				   sizeof(*c->names));
	if (!c->block || !c->names)
		return -ENOMEM;
	n.at = c->block;
	for (i = 0; i < prof->nframes; i++) {
		c->names[i] = n.at;
		sp_text_escape(prof->frames[i].name,
			       strlen(prof->frames[i].name), 0, name_piece, &n);
		*n.at++ = '\0';
	}
	return 0;
}

static void names_fini(struct folded_ctx *c)
{
	const struct sp__xmem *mem = &c->prof->mem;

	sp__xmem_free(mem, c->block, c->block ? c->block_size : 0);
	sp__xmem_free(mem, c->names,
		      c->names ? (c->prof->nframes ? c->prof->nframes : 1) *
					 sizeof(*c->names) :
				 0);
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
static int cmp_frame(const struct folded_ctx *c, uint32_t a, uint32_t b)
{
	const struct sp__profile *prof = c->prof;
	int d;

	if (a == b)
		return 0;
	d = strcmp(c->names[a], c->names[b]);
	if (d)
		return d;
	return strcmp(suffix(prof, &prof->frames[a]),
		      suffix(prof, &prof->frames[b]));
}

static int cmp_int(int64_t a, int64_t b)
{
	return (a > b) - (a < b);
}

static int cmp_line(const void *pa, const void *pb, void *ctx)
{
	const struct folded_ctx *fc = ctx;
	const struct sp__profile *prof = fc->prof;
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
		c = cmp_frame(fc, fa[i], fb[i]);
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

static void write_line(const struct folded_ctx *c, struct sp__xout *out,
		       const struct folded_line *l, uint64_t count)
{
	const struct sp__profile *prof = c->prof;
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
		sp__xout_str(out, c->names[f[i]]);
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
	struct folded_ctx c = { .prof = prof };
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
	err = names_build(&c);
	if (!err)
		err = sp__xout_init_sink(&out, &prof->mem, sink);
	if (err)
		goto out_lines;
	n = collect(prof, lines);
	qsort_r(lines, n, sizeof(*lines), cmp_line, &c);
	for (i = 0; i < n; i++) {
		/* Adjacent equal lines print once with the summed count. */
		count = lines[i].count;
		while (i + 1 < n && !cmp_line(&lines[i], &lines[i + 1], &c))
			count += lines[++i].count;
		write_line(&c, &out, &lines[i], count);
	}
	err = sp__xout_finish(&out);
out_lines:
	names_fini(&c);
	sp__xmem_free(&prof->mem, lines, cap * sizeof(*lines));
	return err;
}
