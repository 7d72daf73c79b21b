/* SPDX-License-Identifier: MIT */
/* spulse report: symbolized profile: top functions, hot stacks, threads, folded, tree. */

/*
 * One Replay pass counts samples per (thread, stack node) in a hash table,
 * so memory follows the number of distinct stacks, not samples. Each
 * distinct stack is then resolved once by a Symbolizer (leaf first,
 * inline frames innermost first) and mapped to interned functions
 * (name + module), from which every view is computed:
 *
 *   default   top functions by self and total samples, hot stacks,
 *             per-thread split (--threads), diagnostics (samples, stacks
 *             with a truncation marker, symbol-origin mix, recovered tail)
 *   --folded  Brendan Gregg's collapsed stacks: root first, ';'-joined,
 *             one line per distinct name sequence with its count
 *   --tree    the top-down call tree with counts and percentages
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "funcs.h"
#include "spulse.h"

#define TREE_MAX_DEPTH 512

struct report_opts {
	const char *path;
	unsigned top;
	bool folded, tree, threads, no_inline, has_pid, python_only;
	bool no_demangle;
	int32_t pid;
};

/* One distinct (thread, stack) with its samples and resolved functions. */
struct stack_entry {
	uint32_t thread;
	uint32_t stack;
	uint64_t count;
	size_t funcs; /* offset in report.func_ids, root first */
	size_t depth;
};

struct tree_node {
	uint32_t func;
	uint64_t count;
	size_t child, sibling; /* indices + 1, 0 = none */
};

struct report {
	struct stack_entry *entries;
	size_t nentries, cap;	/* open addressing: cap slots, count 0 = free */
	struct spulse_funcs fn; /* borrowed names; mark: last entry counted */
	uint32_t *func_ids;
	size_t nfunc_ids, func_ids_cap;
	uint64_t samples, truncated, origins[5];
	bool recovered;
};

void spulse_report_usage(FILE *f)
{
	fputs("usage: spulse report [--top N] [--folded] [--tree] [--threads]\n"
	      "                     [--no-inline] [--no-demangle]\n"
	      "                     [--python-only] [--pid P] FILE\n"
	      "\n"
	      "Symbolize the samples of the SPULSE3 spool FILE and print the\n"
	      "top functions by self and total samples, the hottest stacks\n"
	      "and diagnostics (samples, truncated stacks, symbol origins).\n"
	      "\n"
	      "  --top N      rows per table (default 20)\n"
	      "  --folded     collapsed stacks, root first: a;b;c COUNT\n"
	      "  --tree       top-down call tree with counts and percentages\n"
	      "  --threads    add the per-thread split\n"
	      "  --no-inline  do not expand inline frames\n"
	      "  --no-demangle  C++ and Rust names as the symbol tables\n"
	      "               have them\n"
	      "  --python-only  Python stacks as a Python user reads them:\n"
	      "               without the interpreter's own frames (eval\n"
	      "               loop, call machinery) and the process start\n"
	      "               below the first Python frame\n"
	      "  --pid P      only samples of process P\n"
	      "  -h, --help   show this help\n"
	      "\n"
	      "Exit status: 0 success, 1 corrupt or unreadable file, 2 usage\n"
	      "error.\n",
	      f);
}

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
	struct report_opts *o = ctx;
	const char *a = argv[*i];
	const char *next = *i + 1 < argc ? argv[*i + 1] : NULL;
	long v = 0;
	int st;

	if (strcmp(a, "--folded") == 0)
		o->folded = true;
	else if (strcmp(a, "--tree") == 0)
		o->tree = true;
	else if (strcmp(a, "--threads") == 0)
		o->threads = true;
	else if (strcmp(a, "--no-inline") == 0)
		o->no_inline = true;
	else if (strcmp(a, "--python-only") == 0)
		o->python_only = true;
	else if (strcmp(a, "--no-demangle") == 0)
		o->no_demangle = true;
	else if (strcmp(a, "--top") == 0 || strcmp(a, "--pid") == 0) {
		st = spulse_parse_int("report", a, next, a[2] == 't' ? 1 : 0,
				      &v);
		if (st >= 0)
			return st;
		(*i)++;
		if (a[2] == 't')
			o->top = (unsigned)v;
		else
			o->pid = (int32_t)v, o->has_pid = true;
	} else {
		return SPULSE_OPT_UNKNOWN;
	}
	return -1;
}

static int parse_args(int argc, char **argv, struct report_opts *o)
{
	int st;

	o->top = 20;
	st = spulse_parse_file_args("report", spulse_report_usage, argc, argv,
				    parse_opt, o, &o->path);
	if (st >= 0)
		return st;
	if (o->folded && o->tree)
		return spulse_usage_error(
			"report", "--folded and --tree exclude each other",
			NULL);
	return -1;
}

static uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	return h;
}

/* ---- pass 1: samples per (thread, stack) ---- */

static int entries_grow(struct report *r)
{
	size_t i, cap = r->cap ? r->cap * 2 : 1024;
	struct stack_entry *old = r->entries, *e;

	e = calloc(cap, sizeof(*e));
	if (!e)
		return -ENOMEM;
	for (i = 0; i < r->cap; i++) {
		size_t j;

		if (!old[i].count)
			continue;
		j = mix((uint64_t)old[i].thread << 32 | old[i].stack) &
		    (cap - 1);
		while (e[j].count)
			j = (j + 1) & (cap - 1);
		e[j] = old[i];
	}
	free(old);
	r->entries = e;
	r->cap = cap;
	return 0;
}

static int count_sample(struct report *r, const struct sp_sample *s)
{
	size_t j;

	if ((r->nentries + 1) * 2 > r->cap && entries_grow(r))
		return -ENOMEM;
	j = mix((uint64_t)s->thread << 32 | s->stack) & (r->cap - 1);
	while (r->entries[j].count && (r->entries[j].thread != s->thread ||
				       r->entries[j].stack != s->stack))
		j = (j + 1) & (r->cap - 1);
	if (!r->entries[j].count) {
		r->entries[j].thread = s->thread;
		r->entries[j].stack = s->stack;
		r->nentries++;
	}
	r->entries[j].count++;
	r->samples++;
	return 0;
}

/* Packs the used slots to the front, most samples first. */
static int cmp_entry(const void *a, const void *b)
{
	const struct stack_entry *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return (x->stack > y->stack) - (x->stack < y->stack);
}

static int count_samples(struct sp_replay *replay, const struct report_opts *o,
			 struct report *r)
{
	struct sp_sample s;
	size_t i, n = 0;
	int err;

	while ((err = sp_replay_next(replay, &s)) == 1) {
		if (o->has_pid && s.pid != o->pid)
			continue;
		if (count_sample(r, &s))
			return -ENOMEM;
	}
	if (err < 0)
		return err;
	for (i = 0; i < r->cap; i++)
		if (r->entries[i].count)
			r->entries[n++] = r->entries[i];
	if (n)
		qsort(r->entries, n, sizeof(*r->entries), cmp_entry);
	return 0;
}

/* ---- functions ---- */

static int push_func_id(struct report *r, uint32_t id)
{
	if (r->nfunc_ids == r->func_ids_cap) {
		size_t cap = r->func_ids_cap ? r->func_ids_cap * 2 : 4096;
		uint32_t *p = realloc(r->func_ids, cap * sizeof(*p));

		if (!p)
			return -ENOMEM;
		r->func_ids = p;
		r->func_ids_cap = cap;
	}
	r->func_ids[r->nfunc_ids++] = id;
	return 0;
}

/* ---- pass 2: resolve each distinct stack ---- */

/*
 * --python-only: a stack with Python frames loses the frames the
 * symbolizer flags HIDDEN_DEFAULT (the interpreter's: eval loop, call
 * machinery, the -X perf trampolines' helpers) and everything below its
 * outermost Python frame (process start-up). Native code the Python code
 * called (C extensions, libc) stays, above the Python frame that called
 * it. A stack without Python frames is left alone. Filters @fr (leaf
 * first) in place; returns the new count.
 */
static size_t python_only(const struct sp_resolved_frame **fr, size_t n)
{
	size_t i, k = 0, root = n;

	for (i = 0; i < n; i++)
		if (fr[i]->kind == SP_RESOLVED_PYTHON)
			root = i;
	if (root == n)
		return n;
	for (i = 0; i <= root; i++)
		if (!(fr[i]->flags & SP_RESOLVED_HIDDEN_DEFAULT))
			fr[k++] = fr[i];
	return k;
}

/* Counts one resolved stack (leaf first in @fr) into functions. */
static int account(struct report *r, size_t ei,
		   const struct sp_resolved_frame **fr, size_t n)
{
	struct stack_entry *e = &r->entries[ei];
	bool truncated = false;
	size_t i;

	e->funcs = r->nfunc_ids;
	e->depth = n;
	for (i = n; i-- > 0;) {
		long id = spulse_funcs_intern(&r->fn, fr[i]->name,
					      spulse_frame_module(fr[i]));

		if (id < 0 || push_func_id(r, (uint32_t)id))
			return -ENOMEM;
		if (r->fn.v[id].mark != ei) {
			r->fn.v[id].mark = ei;
			r->fn.v[id].total += e->count;
		}
		if (fr[i]->origin < 5)
			r->origins[fr[i]->origin] += e->count;
		truncated |= (fr[i]->flags & SP_RESOLVED_TRUNCATED_STACK) != 0;
	}
	if (n)
		r->fn.v[r->func_ids[e->funcs + n - 1]].self += e->count;
	if (truncated)
		r->truncated += e->count;
	return 0;
}

static int resolve_all(struct sp_symbolizer *sym, const struct sp_spool *spool,
		       const struct report_opts *o, struct report *r)
{
	const struct sp_resolved_frame **fr = NULL;
	size_t i, cap = 0;
	struct sp_thread t;
	int n = 0, err = 0;

	for (i = 0; i < r->nentries && !err; i++) {
		err = sp_spool_thread(spool, r->entries[i].thread, &t);
		while (!err) {
			n = sp_symbolizer_resolve_stack(
				sym, r->entries[i].stack, t.pid, fr, cap);
			if (n < 0 || (size_t)n <= cap)
				break;
			cap = (size_t)n;
			free(fr);
			fr = malloc(cap * sizeof(*fr));
			if (!fr) {
				cap = 0;
				n = -ENOMEM;
				break;
			}
		}
		if (!err && n > 0 && o->python_only)
			n = (int)python_only(fr, (size_t)n);
		if (!err)
			err = n < 0 ? n : account(r, i, fr, (size_t)n);
	}
	free(fr);
	return err;
}

/* ---- text output ---- */

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static const struct spulse_func *sort_funcs; /* qsort has no context argument */

static int cmp_self_cb(const void *a, const void *b)
{
	return spulse_func_cmp(&sort_funcs[*(const uint32_t *)a],
			       &sort_funcs[*(const uint32_t *)b], false);
}

static int cmp_total_cb(const void *a, const void *b)
{
	return spulse_func_cmp(&sort_funcs[*(const uint32_t *)a],
			       &sort_funcs[*(const uint32_t *)b], true);
}

static void print_table(const struct report *r, uint32_t *order, bool self,
			unsigned top)
{
	size_t i;

	sort_funcs = r->fn.v;
	qsort(order, r->fn.n, sizeof(*order),
	      self ? cmp_self_cb : cmp_total_cb);
	printf("\ntop functions by %s samples:\n", self ? "self" : "total");
	printf("  %10s %7s %10s %7s  function  [module]\n", "self", "self%",
	       "total", "total%");
	for (i = 0; i < r->fn.n && i < top; i++) {
		const struct spulse_func *f = &r->fn.v[order[i]];

		if (self ? !f->self : !f->total)
			break;
		printf("  %10" PRIu64 " %6.2f%% %10" PRIu64 " %6.2f%%  ",
		       f->self, pct(f->self, r->samples), f->total,
		       pct(f->total, r->samples));
		spulse_func_put(stdout, f);
		putchar('\n');
	}
}

/* Hot stacks are merged by their function chain, not by raw addresses. */
struct hot_group {
	size_t entry; /* first entry of the group */
	uint64_t count;
};

static const struct report *sort_report;

static int cmp_chain(const void *a, const void *b)
{
	const struct stack_entry *x = &sort_report->entries[*(const size_t *)a];
	const struct stack_entry *y = &sort_report->entries[*(const size_t *)b];
	const uint32_t *ids = sort_report->func_ids;

	if (x->depth != y->depth)
		return x->depth < y->depth ? -1 : 1;
	return memcmp(ids + x->funcs, ids + y->funcs, x->depth * sizeof(*ids));
}

static int cmp_group(const void *a, const void *b)
{
	const struct hot_group *x = a, *y = b;

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return (x->entry > y->entry) - (x->entry < y->entry);
}

/* Groups entries with equal chains; returns the number of groups, or 0. */
static size_t group_chains(const struct report *r, struct hot_group *g,
			   size_t *idx)
{
	size_t i, n = 0;

	for (i = 0; i < r->nentries; i++)
		idx[i] = i;
	sort_report = r;
	qsort(idx, r->nentries, sizeof(*idx), cmp_chain);
	for (i = 0; i < r->nentries; i++) {
		if (n && cmp_chain(&idx[i], &g[n - 1].entry) == 0) {
			g[n - 1].count += r->entries[idx[i]].count;
			continue;
		}
		g[n].entry = idx[i];
		g[n++].count = r->entries[idx[i]].count;
	}
	qsort(g, n, sizeof(*g), cmp_group);
	return n;
}

static void print_hot_stacks(const struct report *r, unsigned top)
{
	struct hot_group *g = calloc(r->nentries + 1, sizeof(*g));
	size_t *idx = calloc(r->nentries + 1, sizeof(*idx));
	size_t i, k, n = 0;

	/* Without memory for grouping, entries print one by one. */
	if (g && idx)
		n = group_chains(r, g, idx);
	printf("\nhot stacks:\n");
	for (i = 0; i < (g && idx ? n : r->nentries) && i < top; i++) {
		size_t ei = g && idx ? g[i].entry : i;
		const struct stack_entry *e = &r->entries[ei];
		uint64_t count = g && idx ? g[i].count : e->count;

		printf("  #%zu  %" PRIu64 " samples (%.2f%%)\n", i + 1, count,
		       pct(count, r->samples));
		for (k = e->depth; k-- > 0;) {
			fputs("      ", stdout);
			spulse_func_put(stdout,
					&r->fn.v[r->func_ids[e->funcs + k]]);
			putchar('\n');
		}
	}
	free(g);
	free(idx);
}

static void print_thread(const struct report *r, const struct sp_thread *t,
			 uint32_t index, uint32_t *order)
{
	uint64_t n = 0;
	size_t i, k = 0;

	for (i = 0; i < r->fn.n; i++)
		r->fn.v[i].mark = 0;
	for (i = 0; i < r->nentries; i++) {
		const struct stack_entry *e = &r->entries[i];

		if (e->thread != index || !e->depth)
			continue;
		n += e->count;
		r->fn.v[r->func_ids[e->funcs + e->depth - 1]].mark += e->count;
	}
	if (!n)
		return;
	printf("  pid %" PRId32 " tid %" PRId32 ": %" PRIu64
	       " samples (%.2f%%), top self:",
	       t->pid, t->tid, n, pct(n, r->samples));
	for (i = 0; i < r->fn.n; i++)
		if (r->fn.v[i].mark)
			order[k++] = (uint32_t)i;
	for (i = 0; i < 3 && i < k; i++) {
		size_t j, best = i;
		uint32_t tmp;

		for (j = i + 1; j < k; j++)
			if (r->fn.v[order[j]].mark > r->fn.v[order[best]].mark)
				best = j;
		tmp = order[i];
		order[i] = order[best];
		order[best] = tmp;
		putchar(' ');
		spulse_put_text(stdout, r->fn.v[order[i]].name,
				strlen(r->fn.v[order[i]].name), false);
		printf(" %" PRIu64, r->fn.v[order[i]].mark);
	}
	putchar('\n');
}

static void print_threads(struct report *r, const struct sp_spool *spool,
			  uint32_t *order)
{
	uint32_t i, n = sp_spool_thread_count(spool);
	struct sp_thread t;

	printf("\nthreads:\n");
	for (i = 0; i < n; i++)
		if (sp_spool_thread(spool, i, &t) == 0)
			print_thread(r, &t, i, order);
}

static void print_diagnostics(const struct report *r)
{
	static const char *const names[5] = { "elf", "perf_map", "kernel",
					      "address_only", "plugin" };
	uint64_t all = 0;
	int i;

	for (i = 0; i < 5; i++)
		all += r->origins[i];
	printf("\ndiagnostics:\n  samples: %" PRIu64
	       "\n  distinct stacks: %zu\n  truncated stacks: %" PRIu64
	       " samples (%.2f%%)\n  symbol origins:",
	       r->samples, r->nentries, r->truncated,
	       pct(r->truncated, r->samples));
	for (i = 0; i < 5; i++)
		printf(" %s %.1f%%", names[i], pct(r->origins[i], all));
	printf("\n  recovered tail: %s\n", r->recovered ? "yes" : "no");
}

static int print_text(struct report *r, const struct sp_spool *spool,
		      const struct report_opts *o)
{
	uint32_t *order = malloc((r->fn.n + 1) * sizeof(*order));
	size_t i;

	if (!order)
		return -ENOMEM;
	for (i = 0; i < r->fn.n; i++)
		order[i] = (uint32_t)i;
	printf("samples: %" PRIu64 "\n", r->samples);
	print_table(r, order, true, o->top);
	print_table(r, order, false, o->top);
	print_hot_stacks(r, o->top < 10 ? o->top : 10);
	if (o->threads)
		print_threads(r, spool, order);
	print_diagnostics(r);
	free(order);
	return 0;
}

/* ---- --folded ---- */

struct folded_line {
	char *text;
	uint64_t count;
};

static int cmp_folded(const void *a, const void *b)
{
	return strcmp(((const struct folded_line *)a)->text,
		      ((const struct folded_line *)b)->text);
}

/* Appends escaped pieces to a folded line, ';' replaced by '_'. */
static int folded_piece(void *ctx, const char *buf, size_t len)
{
	char **at = ctx;
	size_t i;

	for (i = 0; i < len; i++)
		*(*at)++ = buf[i] == ';' ? '_' : buf[i];
	return 0;
}

/*
 * "root;...;leaf": names through sp_text_escape() (controls, line breaks
 * and invalid UTF-8 as \xNN, at most 4 bytes a byte), ';' in them '_'.
 */
static char *folded_text(const struct report *r, const struct stack_entry *e)
{
	size_t k, len = 1;
	char *s, *at;

	for (k = 0; k < e->depth; k++)
		len += 4 * strlen(r->fn.v[r->func_ids[e->funcs + k]].name) + 1;
	s = malloc(len);
	if (!s)
		return NULL;
	at = s;
	for (k = 0; k < e->depth; k++) {
		const char *name = r->fn.v[r->func_ids[e->funcs + k]].name;

		if (k)
			*at++ = ';';
		sp_text_escape(name, strlen(name), 0, folded_piece, &at);
	}
	*at = '\0';
	return s;
}

static int print_folded(const struct report *r)
{
	struct folded_line *l = calloc(r->nentries + 1, sizeof(*l));
	size_t i, n = 0;
	int err = 0;

	if (!l)
		return -ENOMEM;
	for (i = 0; i < r->nentries && !err; i++) {
		if (!r->entries[i].depth)
			continue;
		l[n].count = r->entries[i].count;
		l[n].text = folded_text(r, &r->entries[i]);
		err = l[n++].text ? 0 : -ENOMEM;
	}
	if (!err && n)
		qsort(l, n, sizeof(*l), cmp_folded);
	for (i = 0; !err && i < n; i++) {
		uint64_t c = l[i].count;

		while (i + 1 < n && strcmp(l[i].text, l[i + 1].text) == 0)
			c += l[++i].count;
		printf("%s %" PRIu64 "\n", l[i].text, c);
	}
	for (i = 0; i < n; i++)
		free(l[i].text);
	free(l);
	return err;
}

/* ---- --tree ---- */

struct tree {
	struct tree_node *nodes;
	size_t n, cap;
};

/* The child of @parent (index + 1, 0 = the virtual root) for @func. */
static size_t tree_child(struct tree *t, size_t parent, uint32_t func)
{
	size_t *link = parent ? &t->nodes[parent - 1].child :
				&t->nodes[0].sibling;
	size_t c;

	for (c = *link; c; c = t->nodes[c - 1].sibling)
		if (t->nodes[c - 1].func == func)
			return c;
	if (t->n == t->cap) {
		size_t cap = t->cap * 2;
		struct tree_node *p = realloc(t->nodes, cap * sizeof(*p));

		if (!p)
			return 0;
		t->nodes = p;
		t->cap = cap;
		link = parent ? &t->nodes[parent - 1].child :
				&t->nodes[0].sibling;
	}
	memset(&t->nodes[t->n], 0, sizeof(t->nodes[0]));
	t->nodes[t->n].func = func;
	t->nodes[t->n].sibling = *link;
	*link = ++t->n;
	return t->n;
}

static int cmp_node(const void *a, const void *b, const struct tree *t)
{
	const struct tree_node *x = &t->nodes[*(const size_t *)a - 1];
	const struct tree_node *y = &t->nodes[*(const size_t *)b - 1];

	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return (x->func > y->func) - (x->func < y->func);
}

static const struct tree *sort_tree; /* qsort has no context argument */

static int cmp_node_cb(const void *a, const void *b)
{
	return cmp_node(a, b, sort_tree);
}

static int print_nodes(const struct report *r, const struct tree *t,
		       size_t first, unsigned depth)
{
	size_t c, n = 0, i, *kids;

	for (c = first; c; c = t->nodes[c - 1].sibling)
		n++;
	kids = malloc((n + 1) * sizeof(*kids));
	if (!kids)
		return -ENOMEM;
	for (c = first, i = 0; c; c = t->nodes[c - 1].sibling)
		kids[i++] = c;
	sort_tree = t;
	qsort(kids, n, sizeof(*kids), cmp_node_cb);
	for (i = 0; i < n; i++) {
		const struct tree_node *nd = &t->nodes[kids[i] - 1];

		printf("%10" PRIu64 " %6.2f%%  %*s", nd->count,
		       pct(nd->count, r->samples), (int)(depth * 2), "");
		spulse_func_put(stdout, &r->fn.v[nd->func]);
		putchar('\n');
		if (depth + 1 < TREE_MAX_DEPTH && nd->child &&
		    print_nodes(r, t, nd->child, depth + 1)) {
			free(kids);
			return -ENOMEM;
		}
	}
	free(kids);
	return 0;
}

static int print_tree(const struct report *r)
{
	struct tree t = { .cap = 1024 };
	size_t i, k;
	int err = 0;

	t.nodes = calloc(t.cap, sizeof(*t.nodes));
	if (!t.nodes)
		return -ENOMEM;
	t.n = 1; /* node 1 is the virtual root; its sibling link lists roots */
	for (i = 0; i < r->nentries && !err; i++) {
		const struct stack_entry *e = &r->entries[i];
		size_t at = 0;

		for (k = 0; k < e->depth && !err; k++) {
			at = tree_child(&t, at, r->func_ids[e->funcs + k]);
			if (!at)
				err = -ENOMEM;
			else
				t.nodes[at - 1].count += e->count;
		}
	}
	printf("%10s %7s  call tree (top-down), %" PRIu64 " samples\n",
	       "samples", "%", r->samples);
	if (!err)
		err = print_nodes(r, &t, t.nodes[0].sibling, 0);
	free(t.nodes);
	return err;
}

/* ---- the command ---- */

static void report_fini(struct report *r)
{
	free(r->entries);
	spulse_funcs_fini(&r->fn);
	free(r->func_ids);
}

static int run_report(struct sp_replay *replay, const struct report_opts *o,
		      struct report *r)
{
	const struct sp_spool *spool = sp_replay_spool(replay);
	struct sp_symbolizer_opts so = { .size = sizeof(so) };
	struct sp_symbolizer *sym;
	char jit[4096];
	int err;

	r->recovered = sp_replay_is_recovered(replay);
	so.jit_dir = spulse_jit_dir_found(o->path, jit, sizeof(jit));
	err = count_samples(replay, o, r);
	if (err)
		return err;
	if (o->no_inline)
		so.flags |= SP_SYMBOLIZER_NO_INLINE;
	if (o->no_demangle)
		so.flags |= SP_SYMBOLIZER_NO_DEMANGLE;
	err = sp_symbolizer_new(spool, &so, &sym);
	if (err)
		return err;
	err = resolve_all(sym, spool, o, r);
	if (!err && o->folded)
		err = print_folded(r);
	else if (!err && o->tree)
		err = print_tree(r);
	else if (!err)
		err = print_text(r, spool, o);
	sp_symbolizer_free(sym);
	return err;
}

int spulse_cmd_report(int argc, char **argv)
{
	struct sp_diag diag = { 0 };
	struct sp_reader_opts ropts = { .size = sizeof(ropts), .diag = &diag };
	struct report_opts o = { 0 };
	struct report r = { 0 };
	struct sp_replay *replay;
	int err;

	err = parse_args(argc, argv, &o);
	if (err >= 0)
		return err;
	spulse_funcs_init(&r.fn, false);
	err = sp_replay_open(o.path, &ropts, &replay);
	if (err < 0) {
		spulse_report_error(o.path, err, &diag);
		return SPULSE_EXIT_DATA;
	}
	if (sp_replay_is_recovered(replay))
		spulse_report_recovered(o.path);
	err = run_report(replay, &o, &r);
	sp_replay_close(replay);
	report_fini(&r);
	if (err < 0) {
		spulse_report_error(o.path, err, NULL);
		return SPULSE_EXIT_DATA;
	}
	return SPULSE_EXIT_OK;
}
