/* SPDX-License-Identifier: MIT */
/* spulse: the argument loop of the one-FILE commands and the numeric option parsers. */

/*
 * See args.h. The loop is deliberately tiny (no getopt): getopt_long
 * permutes argv and reports errors in its own words, while the CLI wants
 * one message shape (spulse_usage_error) and the same exit status for
 * every command.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "args.h"
#include "spulse.h"

/* One option word @argv[*i]: -1 to go on, else an exit status. */
static int parse_option(const char *cmd, void (*usage)(FILE *f), int argc,
			char **argv,
			int (*opt)(void *ctx, int argc, char **argv, int *i),
			void *ctx, int *i)
{
	const char *a = argv[*i];
	int st;

	if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
		usage(stdout);
		return SPULSE_EXIT_OK;
	}
	st = opt(ctx, argc, argv, i);
	if (st == SPULSE_OPT_UNKNOWN)
		return spulse_usage_error(cmd, "unknown option", a);
	return st;
}

int spulse_parse_file_args(const char *cmd, void (*usage)(FILE *f), int argc,
			   char **argv,
			   int (*opt)(void *ctx, int argc, char **argv, int *i),
			   void *ctx, const char **path)
{
	int st = spulse_parse_args(cmd, usage, argc, argv, opt, ctx, path);

	if (st < 0 && !*path)
		return spulse_usage_error(cmd, "missing FILE", NULL);
	return st;
}

int spulse_parse_args(const char *cmd, void (*usage)(FILE *f), int argc,
		      char **argv,
		      int (*opt)(void *ctx, int argc, char **argv, int *i),
		      void *ctx, const char **path)
{
	bool dashdash = false;
	int i, st;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (dashdash || a[0] != '-' || a[1] == '\0') {
			if (*path)
				return spulse_usage_error(cmd, "extra argument",
							  a);
			*path = a;
		} else if (strcmp(a, "--") == 0) {
			dashdash = true;
		} else if ((st = parse_option(cmd, usage, argc, argv, opt, ctx,
					      &i)) >= 0) {
			return st;
		}
	}
	return -1;
}

bool spulse_read_uint(const char *s, uint64_t *out)
{
	unsigned long long v;
	char *end;

	/* Digits only: strtoull would take " 5", "+5" and negate "-5". */
	if (s[0] < '0' || s[0] > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

int spulse_parse_range(const char *cmd, const char *opt, const char *val,
		       uint64_t min, uint64_t max, uint64_t *out)
{
	char allowed[48];
	uint64_t v;

	if (!val)
		return spulse_usage_error(cmd, "missing value for", opt);
	if (!spulse_read_uint(val, &v) || v < min || v > max) {
		snprintf(allowed, sizeof(allowed), "%" PRIu64 "..%" PRIu64, min,
			 max);
		return spulse_value_error(cmd, opt, val, allowed);
	}
	*out = v;
	return -1;
}

int spulse_parse_int(const char *cmd, const char *opt, const char *val,
		     long min, long *out)
{
	uint64_t v = 0;
	int st =
		spulse_parse_range(cmd, opt, val, (uint64_t)min, INT32_MAX, &v);

	if (st < 0)
		*out = (long)v;
	return st;
}

int spulse_parse_seconds(const char *cmd, const char *opt, const char *val,
			 double min, double max, double *out)
{
	char allowed[64];
	char *end;
	double v;

	if (!val)
		return spulse_usage_error(cmd, "missing value for", opt);
	errno = 0;
	v = strtod(val, &end);
	/* !(v >= min) also refuses NaN; isfinite() refuses "inf". */
	if (errno || end == val || *end || !isfinite(v) || !(v >= min) ||
	    v > max) {
		snprintf(allowed, sizeof(allowed), "%g..%.0f seconds", min,
			 max);
		return spulse_value_error(cmd, opt, val, allowed);
	}
	*out = v;
	return -1;
}

int spulse_jit_dir(const char *spool, char *buf, size_t size)
{
	int n = snprintf(buf, size, "%s.jit", spool);

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

const char *spulse_jit_dir_found(const char *spool, char *buf, size_t size)
{
	struct stat st;

	if (!spool || spulse_jit_dir(spool, buf, size) || stat(buf, &st) ||
	    !S_ISDIR(st.st_mode))
		return NULL;
	return buf;
}
