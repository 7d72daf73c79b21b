/* SPDX-License-Identifier: MIT */
/* spulse export: write a spool as folded stacks, SVG, speedscope, Firefox or pprof. */

/*
 * A thin front end to sp_export(): the library reads the spool with a
 * Replay, symbolizes each distinct stack once and streams the chosen
 * format into a sink: the -o file (sp_sink_open_file_atomic: it takes
 * its name only once complete, a failure leaves it as it was), or stdout
 * (fd 1, not closed). The options map one to one onto struct
 * sp_export_opts.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"
#include "formats.h"
#include "spulse.h"

struct export_args {
	const char *path;
	const char *out;
	const char *title;
	enum sp_export_format format;
	bool has_format;
	uint32_t flags;
	int32_t pid;
	bool no_demangle;
};

void spulse_export_usage(FILE *f)
{
	fputs("usage: spulse export FILE --format FORMAT [-o OUT] [--pid P]\n"
	      "                     [--no-inline] [--no-demangle] [--title T]\n"
	      "                     [--annotate pid,tid,kind]\n"
	      "\n"
	      "Symbolize the SPULSE3 spool FILE and write it in FORMAT:\n"
	      "  folded      collapsed stacks, root first: a;b;c COUNT\n"
	      "  flamegraph  interactive SVG flame graph (self-contained)\n"
	      "  icicle      the same, drawn top-down\n"
	      "  speedscope  speedscope JSON, one profile per thread\n"
	      "  firefox     Firefox Profiler JSON, gzip-compressed\n"
	      "  pprof       pprof profile.proto, gzip-compressed\n"
	      "\n"
	      "  -o OUT       write to OUT instead of standard output (a new\n"
	      "               file, mode 0600, that replaces OUT once it is\n"
	      "               complete; a device or FIFO is written as it is;\n"
	      "               never the input FILE; pprof and firefox refuse\n"
	      "               to write to a terminal)\n"
	      "  --pid P      only samples of process P\n"
	      "  --no-inline  raw frames only, no inline expansion\n"
	      "  --no-demangle  C++ and Rust names as the symbol tables\n"
	      "               have them (pprof keeps them as system_name\n"
	      "               either way)\n"
	      "  --title T    title of the graph or profile (default: FILE's\n"
	      "               name)\n"
	      "  --annotate   folded only: prefix pid and/or tid frames, add\n"
	      "               kind suffixes _[k] kernel, _[j] JIT, _[p]\n"
	      "               Python, _[i] inlined\n"
	      "\n"
	      "Exit status: 0 success, 1 corrupt or unreadable file or write\n"
	      "error, 2 usage error.\n",
	      f);
}

static int parse_format(const char *v, struct export_args *a)
{
	if (spulse_export_format_parse(v, &a->format) == 0) {
		a->has_format = true;
		return -1;
	}
	return spulse_usage_error("export",
				  v ? "unknown format" : "missing value for",
				  v ? v : "--format");
}

static int parse_annotate(const char *v, struct export_args *a)
{
	char buf[64], *tok, *save;

	if (!v || strlen(v) >= sizeof(buf))
		return spulse_usage_error("export", "bad value for",
					  "--annotate");
	strcpy(buf, v);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		if (strcmp(tok, "pid") == 0)
			a->flags |= SP_EXPORT_ANNOTATE_PID;
		else if (strcmp(tok, "tid") == 0)
			a->flags |= SP_EXPORT_ANNOTATE_TID;
		else if (strcmp(tok, "kind") == 0)
			a->flags |= SP_EXPORT_ANNOTATE_KIND;
		else
			return spulse_usage_error("export",
						  "unknown annotation", tok);
	}
	return -1;
}

static int parse_pid(const char *v, struct export_args *a)
{
	long p = 0;
	int st = spulse_parse_int("export", "--pid", v, 1, &p);

	a->pid = (int32_t)p;
	return st;
}

/* Returns -1 to continue, else an exit status. */
static int parse_opt(void *ctx, int argc, char **argv, int *i)
{
	struct export_args *a = ctx;
	const char *o = argv[*i];
	const char *next = *i + 1 < argc ? argv[*i + 1] : NULL;
	bool takes = true;
	int st = -1;

	if (strcmp(o, "--format") == 0 || strcmp(o, "-f") == 0)
		st = parse_format(next, a);
	else if (strcmp(o, "-o") == 0 || strcmp(o, "--output") == 0)
		a->out = next;
	else if (strcmp(o, "--title") == 0)
		a->title = next;
	else if (strcmp(o, "--pid") == 0)
		st = parse_pid(next, a);
	else if (strcmp(o, "--annotate") == 0)
		st = parse_annotate(next, a);
	else if (strcmp(o, "--no-inline") == 0)
		a->flags |= SP_EXPORT_NO_INLINE, takes = false;
	else if (strcmp(o, "--no-demangle") == 0)
		a->no_demangle = true, takes = false;
	else
		return SPULSE_OPT_UNKNOWN;
	if (st >= 0)
		return st;
	if (takes && !next)
		return spulse_usage_error("export", "missing value for", o);
	*i += takes;
	return -1;
}

static int parse_args(int argc, char **argv, struct export_args *a)
{
	int st = spulse_parse_file_args("export", spulse_export_usage, argc,
					argv, parse_opt, a, &a->path);

	if (st >= 0)
		return st;
	if (!a->has_format)
		return spulse_usage_error("export", "missing --format", NULL);
	return -1;
}

/* pprof and Firefox profiles are gzip streams: no place for a terminal. */
static bool is_binary(enum sp_export_format f)
{
	return f == SP_EXPORT_PPROF || f == SP_EXPORT_FIREFOX;
}

/*
 * The output is watched through a callback sink in front of the real one,
 * so that a failed write (ENOSPC on /dev/full, EPIPE) is reported against
 * the output and not against the spool being read.
 */
struct out_watch {
	struct sp_sink *inner;
	int err;
};

static int watch_write(void *ctx, const void *buf, size_t len)
{
	struct out_watch *w = ctx;
	int err = sp_sink_write(w->inner, buf, len);

	if (err < 0 && !w->err)
		w->err = err;
	return err;
}

static int watch_flush(void *ctx)
{
	struct out_watch *w = ctx;
	int err = sp_sink_flush(w->inner);

	if (err < 0 && !w->err)
		w->err = err;
	return err;
}

static const struct sp_sink_ops watch_ops = {
	.write = watch_write,
	.flush = watch_flush,
};

/*
 * Refuses to write over the spool being read: `-o` naming the input (or
 * a hard or symbolic link to it), or standard output redirected into it.
 * The atomic output would keep the input intact while it is read, but
 * replacing the recording with its export still loses the recording.
 */
static bool same_file(const char *in, const char *out)
{
	struct stat a, b;

	if (stat(in, &a) < 0)
		return false;
	if (out ? stat(out, &b) < 0 : fstat(STDOUT_FILENO, &b) < 0)
		return false;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static int open_output(const struct export_args *a, struct sp_sink **sink)
{
	int err;

	if (same_file(a->path, a->out)) {
		fputs("spulse export: the output is the input file ", stderr);
		spulse_put_text(stderr, a->path, strlen(a->path), false);
		fputs("; refusing to overwrite the recording\n", stderr);
		return SPULSE_EXIT_USAGE;
	}
	/* A regular output file appears only once it is complete. */
	if (a->out)
		err = sp_sink_open_file_atomic(a->out, NULL, sink);
	else
		err = sp_sink_new_fd(STDOUT_FILENO, NULL, sink);
	if (err < 0) {
		spulse_report_error(a->out ? a->out : "<stdout>", err, NULL);
		return SPULSE_EXIT_DATA;
	}
	return -1;
}

static int run_export(const struct export_args *a,
		      const struct sp_export_opts *opts, struct sp_sink *sink)
{
	struct out_watch w = { .inner = sink };
	struct sp_sink *outer;
	const char *out = a->out ? a->out : "<stdout>";
	int err = sp_sink_new_callback(&watch_ops, &w, NULL, &outer);

	if (err < 0) {
		spulse_report_error(out, err, NULL);
		return SPULSE_EXIT_DATA;
	}
	err = sp_export(a->path, a->format, outer, opts);
	sp_sink_free(outer);
	/* Renames a complete output file over the name it was asked for. */
	if (!err && a->out && (err = sp_sink_finish(sink)) < 0)
		w.err = err;
	if (err == -EPIPE && !a->out)
		return SPULSE_EXIT_OK; /* `spulse export ... | head` */
	if (err < 0) {
		/* Nothing is removed: a failed file output never took a name. */
		spulse_report_error(w.err == err ? out : a->path, err, NULL);
		return SPULSE_EXIT_DATA;
	}
	return SPULSE_EXIT_OK;
}

int spulse_cmd_export(int argc, char **argv)
{
	struct export_args a = { 0 };
	struct sp_export_opts opts = { .size = sizeof(opts) };
	struct sp_symbolizer_opts so = { .size = sizeof(so) };
	struct sp_sink *sink;
	char jit[4096];
	int err = parse_args(argc, argv, &a);

	if (err >= 0)
		return err;
	if (!a.out && is_binary(a.format) && isatty(STDOUT_FILENO) == 1)
		return spulse_usage_error(
			"export",
			"refusing to write gzip data to a terminal; use -o "
			"FILE or redirect stdout",
			NULL);
	opts.flags = a.flags;
	opts.pid = a.pid;
	opts.title = a.title;
	/* Each distinct stack is resolved once (as with no options). */
	so.stack_cache = SP_STACK_CACHE_EXTERNAL;
	so.jit_dir = spulse_jit_dir_found(a.path, jit, sizeof(jit));
	if (a.no_demangle)
		so.flags |= SP_SYMBOLIZER_NO_DEMANGLE;
	opts.symbolizer = &so;
	err = open_output(&a, &sink);
	if (err >= 0)
		return err;
	err = run_export(&a, &opts, sink);
	sp_sink_free(sink);
	return err;
}
