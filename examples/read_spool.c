/* SPDX-License-Identifier: MIT */
/* read_spool: the tutorial's reader: count a spool's stacks, name the hottest. */

/*
 * Usage: read_spool SPOOL [TOP]
 *
 * A Replay streams the samples once. Each sample contributes one
 * (pid, leaf stack node) key; sorting the keys and merging equal runs
 * gives the number of samples per distinct stack, so the Symbolizer is
 * asked for each distinct stack only once, however many samples share it.
 * The keys cost 16 bytes per sample; `spulse report` uses a hash table
 * instead when that matters. docs/tutorial.md walks through this file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stackpulse.h>

#define MAX_FRAMES 256

/* One distinct stack of one process and how many samples hit it. */
struct stack_count {
	int32_t pid;
	uint32_t stack; /* leaf stack-node id */
	uint64_t count;
};

/* Step 2: read every sample with a Replay, one key per sample. */
static int collect(struct sp_replay *replay, struct stack_count **out,
		   size_t *len)
{
	struct stack_count *v = NULL, *grown;
	size_t n = 0, cap = 0;
	struct sp_sample s;
	int err;

	while ((err = sp_replay_next(replay, &s)) == 1) {
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			grown = realloc(v, cap * sizeof(*v));
			if (!grown) {
				err = -ENOMEM;
				break;
			}
			v = grown;
		}
		v[n++] = (struct stack_count){ s.pid, s.stack, 1 };
	}
	if (err < 0) {
		free(v);
		return err;
	}
	*out = v;
	*len = n;
	return 0;
}

static int by_key(const void *pa, const void *pb)
{
	const struct stack_count *a = pa, *b = pb;

	if (a->pid != b->pid)
		return a->pid < b->pid ? -1 : 1;
	return a->stack < b->stack ? -1 : a->stack > b->stack;
}

static int by_count_desc(const void *pa, const void *pb)
{
	const struct stack_count *a = pa, *b = pb;

	if (a->count != b->count)
		return a->count > b->count ? -1 : 1;
	return by_key(pa, pb);
}

/* Sorts by key, merges equal keys, sorts by count; returns the new length. */
static size_t count_stacks(struct stack_count *v, size_t n)
{
	size_t i, out = 0;

	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), by_key);
	for (i = 0; i < n; i++) {
		if (out && by_key(&v[out - 1], &v[i]) == 0)
			v[out - 1].count += v[i].count;
		else
			v[out++] = v[i];
	}
	qsort(v, out, sizeof(*v), by_count_desc);
	return out;
}

/* Step 3: one resolved frame per line, "name at file:line  [module]". */
static void print_frame(const struct sp_resolved_frame *f)
{
	const char *base = f->module ? strrchr(f->module, '/') : NULL;

	printf("      %s", f->name);
	if (f->inline_depth > 0)
		fputs(" (inlined)", stdout);
	if (f->file)
		printf(" at %s:%u", f->file, (unsigned)f->line);
	if (f->module)
		printf("  [%s]", base ? base + 1 : f->module);
	putchar('\n');
}

static int print_stack(struct sp_symbolizer *sym, const struct stack_count *sc,
		       int rank, uint64_t total)
{
	const struct sp_resolved_frame *frames[MAX_FRAMES];
	int n, i;

	n = sp_symbolizer_resolve_stack(sym, sc->stack, sc->pid, frames,
					MAX_FRAMES);
	if (n < 0)
		return n;
	printf("  #%d  %llu samples (%.1f%%), pid %d\n", rank,
	       (unsigned long long)sc->count, 100.0 * sc->count / total,
	       (int)sc->pid);
	for (i = 0; i < n && i < MAX_FRAMES; i++)
		print_frame(frames[i]);
	if (n > MAX_FRAMES)
		printf("      ... %d more frames\n", n - MAX_FRAMES);
	return 0;
}

static int report(const struct sp_spool *spool, struct stack_count *v, size_t n,
		  size_t top)
{
	struct sp_symbolizer *sym;
	uint64_t total = 0;
	size_t i;
	int err;

	for (i = 0; i < n; i++)
		total += v[i].count;
	printf("%llu samples, %zu distinct stacks\n", (unsigned long long)total,
	       n);
	err = sp_symbolizer_new(spool, NULL, &sym);
	if (err < 0)
		return err;
	for (i = 0; i < n && i < top && err >= 0; i++)
		err = print_stack(sym, &v[i], (int)i + 1, total);
	sp_symbolizer_free(sym);
	return err;
}

/* Step 1: open the spool; then collect, count and report. */
int main(int argc, char **argv)
{
	struct sp_replay *replay;
	struct stack_count *counts = NULL;
	size_t n = 0, top = argc > 2 ? strtoul(argv[2], NULL, 10) : 10;
	int err;

	if (argc < 2 || argc > 3 || top == 0) {
		fprintf(stderr, "usage: read_spool SPOOL [TOP]\n");
		return 2;
	}
	err = sp_replay_open(argv[1], NULL, &replay);
	if (err < 0) {
		fprintf(stderr, "read_spool: %s: %s\n", argv[1],
			sp_strerror(err));
		return 1;
	}
	if (sp_replay_is_recovered(replay))
		fprintf(stderr,
			"read_spool: %s ends inside a record; "
			"reading the complete part\n",
			argv[1]);
	err = collect(replay, &counts, &n);
	if (err >= 0)
		err = report(sp_replay_spool(replay), counts,
			     count_stacks(counts, n), top);
	if (err < 0)
		fprintf(stderr, "read_spool: %s: %s\n", argv[1],
			sp_strerror(err));
	free(counts);
	sp_replay_close(replay);
	return err < 0;
}
