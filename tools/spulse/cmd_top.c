/* SPDX-License-Identifier: MIT */
/* spulse top: a live table of the hottest functions of a growing spool. */

/*
 * A Tail follows the spool while a writer appends to it. Every interval
 * the loop drains what is there (sp_tail_poll until has_more is false),
 * applies each batch to the Symbolizer before resolving it (the
 * symbolizer contract), resolves every new sample's stack and adds it to
 * per-function counters: the leaf gets a self sample, every distinct
 * function on the stack one total sample. Function names are copied when
 * they are interned (funcs.h), because an update may invalidate the
 * symbolizer's strings for a process while our counters live on.
 *
 * Without FILE, top_live.c records the process or command into a
 * temporary spool and drives the same counting and tables from the
 * recorder's loop.
 *
 * Output: on a TTY (without --once) the screen is cleared and redrawn;
 * otherwise one table per refresh, tables separated by a blank line, no
 * escape codes, and stdout is flushed after each so a pipe sees it live.
 * Bold only on a TTY without NO_COLOR. SIGINT/SIGTERM end the loop
 * cleanly (exit 0): the handler only sets a flag, and without SA_RESTART
 * it also cuts the sleep short.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "args.h"
#include "funcs.h"
#include "rec_errors.h"
#include "spulse.h"
#include "top.h"

/* magic (8 bytes) + two varints of at most 10 bytes each (SPULSE3 §3). */
#define HEADER_MAX 28
#define OPEN_WAIT_NS 5000000000ll
#define OPEN_RETRY_NS 50000000ll

volatile sig_atomic_t spulse_top_stop;

static void on_stop_signal(int sig)
{
	spulse_top_stop = sig;
}

void spulse_top_usage(FILE *f)
{
	fputs("usage: spulse top [options] -p PID\n"
	      "       spulse top [options] -- COMMAND [ARGS...]\n"
	      "       spulse top [options] [-p PID] FILE\n"
	      "\n"
	      "Show the top functions, refreshed every interval, of a running\n"
	      "process (-p PID, attached like record -p), of a command run\n"
	      "under the recorder from its first instruction (-- COMMAND), or\n"
	      "of the SPULSE3 spool FILE that another recorder is writing\n"
	      "(FILE may appear up to 5 s after the start). Live recordings\n"
	      "follow children and go to a temporary file that is removed at\n"
	      "the end; they stop when the process or command exits (then a\n"
	      "last table is printed). On a terminal the screen is redrawn;\n"
	      "otherwise (or with TERM=dumb) one table is printed per refresh,\n"
	      "separated by a blank line. NO_COLOR is honoured.\n"
	      "\n"
	      "  -p, --pid P      without FILE: record process P live;\n"
	      "                   with FILE: only samples of process P\n"
	      "  -F HZ|max        live: samples per CPU-second (default 999)\n"
	      "  --interval SECS  seconds between refreshes (default 1)\n"
	      "  --top N          rows per table (default 20)\n"
	      "  --self           sort by self samples (default)\n"
	      "  --total          sort by total samples\n"
	      "  --once           FILE: print one table of what exists, then\n"
	      "                   exit; live: one table when the target ends\n"
	      "  --iterations N   exit after N refreshes\n"
	      "  --no-demangle    C++ and Rust names as the symbol tables\n"
	      "                   have them\n"
	      "  -h, --help       show this help\n"
	      "\n"
	      "Stops on SIGINT or SIGTERM (exit 0); a command still running\n"
	      "then gets SIGTERM (SIGKILL after 2 s). A command's own output\n"
	      "shares the terminal: redirect it inside the command if needed.\n"
	      "Exit status: 0 success, 1 corrupt, unreadable or missing file,\n"
	      "2 usage error.\n",
	      f);
}

/* ---- options ---- */

/* A millisecond to a day between refreshes. */
static int parse_interval(const char *a, struct top_opts *o)
{
	return spulse_parse_seconds("top", "--interval", a, 0.001, 86400,
				    &o->interval);
}

static int parse_rate(const char *a, struct top_opts *o)
{
	long v = 0;
	int st;

	if (a && strcmp(a, "max") == 0) {
		o->sample_hz = SP_RATE_MAX;
		return -1;
	}
	st = spulse_parse_int("top", "-F", a, 1, &v);
	o->sample_hz = (uint32_t)v;
	return st;
}

/* Options with a value; @a is known to be one of them. */
static int parse_valued(const char *a, const char *next, struct top_opts *o)
{
	bool pid = strcmp(a, "--pid") == 0 || strcmp(a, "-p") == 0;
	long v = 0;
	int st;

	if (strcmp(a, "--interval") == 0)
		return parse_interval(next, o);
	if (strcmp(a, "-F") == 0)
		return parse_rate(next, o);
	st = spulse_parse_int("top", a, next, pid ? 0 : 1, &v);
	if (st >= 0)
		return st;
	if (strcmp(a, "--top") == 0)
		o->top = (unsigned)v;
	else if (pid)
		o->pid = (int32_t)v, o->has_pid = true;
	else
		o->iterations = (unsigned long)v;
	return -1;
}

static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
	struct top_opts *o = ctx;
	const char *a = argv[*i];
	const char *next = *i + 1 < argc ? argv[*i + 1] : NULL;

	if (strcmp(a, "--self") == 0)
		o->total = false;
	else if (strcmp(a, "--total") == 0)
		o->total = true;
	else if (strcmp(a, "--once") == 0)
		o->once = true;
	else if (strcmp(a, "--no-demangle") == 0)
		o->no_demangle = true;
	else if (strcmp(a, "--interval") == 0 || strcmp(a, "--top") == 0 ||
		 strcmp(a, "--pid") == 0 || strcmp(a, "-p") == 0 ||
		 strcmp(a, "-F") == 0 || strcmp(a, "--iterations") == 0) {
		(*i)++;
		return parse_valued(a, next, o);
	} else {
		return SPULSE_OPT_UNKNOWN;
	}
	return -1;
}

/*
 * FILE, -p PID or -- COMMAND: words after "--" are a command (a FILE
 * whose name starts with '-' is given as ./-name), the rest is options
 * and at most one FILE.
 */
static int parse_args(int argc, char **argv, struct top_opts *o)
{
	static char label[32];
	int i, end = argc, st;

	o->top = 20;
	o->interval = 1.0;
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			end = i;
			o->cmd = &argv[i + 1];
			break;
		}
	}
	st = spulse_parse_args("top", spulse_top_usage, end, argv, parse_opt, o,
			       &o->path);
	if (st >= 0)
		return st;
	if (o->cmd && !o->cmd[0])
		return spulse_usage_error("top", "missing COMMAND after --",
					  NULL);
	if (o->cmd && (o->path || o->has_pid))
		return spulse_usage_error(
			"top", "give one of FILE, -p PID or -- COMMAND", NULL);
	if (!o->path && !o->cmd && !o->has_pid)
		return spulse_usage_error(
			"top", "give FILE, -p PID or -- COMMAND", NULL);
	if (o->path) {
		o->label = o->path;
		return -1;
	}
	if (o->cmd) {
		o->label = o->cmd[0];
	} else {
		if (o->pid <= 0)
			return spulse_usage_error("top", "bad PID", "0");
		snprintf(label, sizeof(label), "pid %d", (int)o->pid);
		o->label = label;
	}
	return spulse_check_rate("top", o->sample_hz);
}

/* ---- counting ---- */

/* Resolves @s's stack into t->fr (leaf first); returns the depth. */
static int resolve(struct top *t, struct sp_symbolizer *sym,
		   const struct sp_sample *s)
{
	int n;

	for (;;) {
		n = sp_symbolizer_resolve_stack(sym, s->stack, s->pid, t->fr,
						t->fr_cap);
		if (n < 0 || (size_t)n <= t->fr_cap)
			return n;
		free(t->fr);
		t->fr_cap = 0;
		t->fr = malloc((size_t)n * sizeof(*t->fr));
		if (!t->fr)
			return -ENOMEM;
		t->fr_cap = (size_t)n;
	}
}

static int count_sample(struct top *t, struct sp_symbolizer *sym,
			const struct sp_sample *s)
{
	uint64_t serial = t->samples + 1;
	int i, n = resolve(t, sym, s);

	if (n < 0)
		return n;
	for (i = 0; i < n; i++) {
		long id = spulse_funcs_intern(&t->fn, t->fr[i]->name,
					      spulse_frame_module(t->fr[i]));

		if (id < 0)
			return (int)id;
		if (i == 0)
			t->fn.v[id].self++;
		if (t->fn.v[id].mark != serial) {
			t->fn.v[id].mark = serial;
			t->fn.v[id].total++;
		}
	}
	t->samples++;
	t->last++;
	return 0;
}

static int count_batch(struct top *t, struct sp_tail *tail,
		       struct sp_symbolizer *sym, const struct top_opts *o)
{
	size_t i, n = sp_tail_sample_count(tail);
	struct sp_sample s;
	int err;

	for (i = 0; i < n; i++) {
		err = sp_tail_sample(tail, i, &s);
		if (err)
			return err;
		if (o->has_pid && s.pid != o->pid)
			continue;
		err = count_sample(t, sym, &s);
		if (err)
			return err;
	}
	return 0;
}

int spulse_top_drain(struct top *t, struct sp_tail *tail,
		     struct sp_symbolizer *sym, const struct top_opts *o)
{
	struct sp_invalidation inv;
	int err;

	do {
		err = sp_tail_poll(tail);
		if (err < 0)
			return err;
		err = sp_symbolizer_update(sym, tail, &inv);
		if (!err)
			err = count_batch(t, tail, sym, o);
		if (err)
			return err;
	} while (sp_tail_has_more(tail) && !spulse_top_stop);
	return 0;
}

/* ---- output ---- */

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0.0;
}

static const struct spulse_func *sort_funcs; /* qsort has no context */
static bool sort_total;

static int cmp_func(const void *a, const void *b)
{
	return spulse_func_cmp(&sort_funcs[*(const size_t *)a],
			       &sort_funcs[*(const size_t *)b], sort_total);
}

static void print_header(const struct top *t, const struct top_opts *o,
			 double elapsed)
{
	fputs(t->color ? "\033[1mspulse top: " : "spulse top: ", stdout);
	spulse_put_text(stdout, o->label, strlen(o->label), false);
	printf("  samples: %" PRIu64 "  last interval: %" PRIu64, t->samples,
	       t->last);
	/* The first refresh drained a backlog: no meaningful rate yet. */
	if (elapsed > 0)
		printf("  rate: %.1f/s", (double)t->last / elapsed);
	else
		fputs("  rate: -", stdout);
	printf("%s\n", t->color ? "\033[0m" : "");
	printf("  %10s %7s %10s %7s  function  [module]\n", "self", "self%",
	       "total", "total%");
}

int spulse_top_refresh(struct top *t, const struct top_opts *o)
{
	size_t i, *order = malloc((t->fn.n + 1) * sizeof(*order));
	int64_t now = spulse_top_now_ns();
	/* The first refresh drained a backlog: no meaningful rate yet. */
	double elapsed = t->refreshes ? (double)(now - t->last_ns) / 1e9 : 0;
	bool first = t->refreshes == 0;

	if (!order)
		return -ENOMEM;
	t->last_ns = now;
	t->refreshes++;
	for (i = 0; i < t->fn.n; i++)
		order[i] = i;
	sort_funcs = t->fn.v;
	sort_total = o->total;
	qsort(order, t->fn.n, sizeof(*order), cmp_func);
	if (t->tty)
		fputs("\033[H\033[2J", stdout);
	else if (!first)
		putchar('\n');
	print_header(t, o, elapsed);
	for (i = 0; i < t->fn.n && i < o->top; i++) {
		const struct spulse_func *f = &t->fn.v[order[i]];

		if (o->total ? !f->total : !f->self)
			break;
		printf("  %10" PRIu64 " %6.2f%% %10" PRIu64 " %6.2f%%  ",
		       f->self, pct(f->self, t->samples), f->total,
		       pct(f->total, t->samples));
		spulse_func_put(stdout, f);
		putchar('\n');
	}
	free(order);
	t->last = 0;
	fflush(stdout);
	return 0;
}

/* ---- the loop ---- */

int64_t spulse_top_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

/* Sleeps @ns unless a stop signal arrives (it interrupts nanosleep). */
static void pause_ns(int64_t ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000ll,
			       .tv_nsec = ns % 1000000000ll };

	if (!spulse_top_stop)
		nanosleep(&ts, NULL);
}

/*
 * The writer may not have created the file or flushed its header yet:
 * retry for up to 5 s while the file is missing or shorter than the
 * longest header; a longer file that fails to open is really broken.
 */
static int open_tail(const char *path, struct sp_reader_opts *ropts,
		     struct sp_tail **tail)
{
	int64_t deadline = spulse_top_now_ns() + OPEN_WAIT_NS;
	struct stat st;
	int err;

	for (;;) {
		err = sp_tail_open(path, ropts, tail);
		if (err >= 0 || spulse_top_stop ||
		    spulse_top_now_ns() >= deadline)
			return err;
		if (err == SP_ECORRUPT &&
		    (stat(path, &st) != 0 || st.st_size >= HEADER_MAX))
			return err;
		if (err != SP_ECORRUPT && err != -ENOENT)
			return err;
		pause_ns(OPEN_RETRY_NS);
	}
}

static int top_loop(struct top *t, struct sp_tail *tail,
		    struct sp_symbolizer *sym, const struct top_opts *o)
{
	int64_t interval = (int64_t)(o->interval * 1e9);
	int err;

	for (;;) {
		err = spulse_top_drain(t, tail, sym, o);
		if (err)
			return err;
		err = spulse_top_refresh(t, o);
		if (err || o->once || spulse_top_stop || spulse_out_failed() ||
		    (o->iterations && t->refreshes >= o->iterations))
			return err;
		pause_ns(interval);
		if (spulse_top_stop)
			return 0;
	}
}

static void install_handlers(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	/* No SA_RESTART: the signal must cut the sleep short. */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

void spulse_top_init(struct top *t, const struct top_opts *o)
{
	memset(t, 0, sizeof(*t));
	spulse_funcs_init(&t->fn, true);
	/* Redraw in place only on a terminal that takes escape codes. */
	t->tty = !o->once && spulse_term_escapes(STDOUT_FILENO);
	t->color = t->tty && spulse_term_color(STDOUT_FILENO);
}

void spulse_top_fini(struct top *t)
{
	spulse_funcs_fini(&t->fn);
	free(t->fr);
}

static int run_top(struct sp_tail *tail, const struct top_opts *o)
{
	struct sp_symbolizer_opts so = { .size = sizeof(so) };
	struct sp_symbolizer *sym;
	struct top t;
	char jit[4096];
	int err;

	spulse_top_init(&t, o);
	so.jit_dir = spulse_jit_dir_found(o->path, jit, sizeof(jit));
	if (o->no_demangle)
		so.flags |= SP_SYMBOLIZER_NO_DEMANGLE;
	err = sp_symbolizer_new(sp_tail_spool(tail), &so, &sym);
	if (err)
		return err;
	err = top_loop(&t, tail, sym, o);
	sp_symbolizer_free(sym);
	spulse_top_fini(&t);
	return err;
}

int spulse_cmd_top(int argc, char **argv)
{
	struct sp_diag diag = { 0 };
	struct sp_reader_opts ropts = { .size = sizeof(ropts), .diag = &diag };
	struct top_opts o = { 0 };
	struct sp_tail *tail = NULL;
	int err;

	err = parse_args(argc, argv, &o);
	if (err >= 0)
		return err;
	install_handlers();
	if (!o.path)
		return spulse_top_live(&o);
	err = open_tail(o.path, &ropts, &tail);
	if (spulse_top_stop) {
		/* Stopped while waiting for the file: not an error. */
		sp_tail_close(tail);
		return SPULSE_EXIT_OK;
	}
	if (err < 0) {
		spulse_report_error(o.path, err, &diag);
		return SPULSE_EXIT_DATA;
	}
	err = run_top(tail, &o);
	sp_tail_close(tail);
	if (err < 0) {
		spulse_report_error(o.path, err, NULL);
		return SPULSE_EXIT_DATA;
	}
	return SPULSE_EXIT_OK;
}
