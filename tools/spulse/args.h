/* SPDX-License-Identifier: MIT */
/* spulse: the argument loop of the one-FILE commands and the numeric option parsers. */
#ifndef SPULSE_ARGS_H
#define SPULSE_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * `spulse report`, `top` and `export` take the same shape of command line:
 * exactly one FILE anywhere among the options, "--" ending the options
 * (so a FILE may start with '-'), and "-" alone being a FILE. Only the
 * options themselves differ, so each command hands its option parser to
 * spulse_parse_file_args() and keeps its own checks of combinations.
 *
 * Every parser here returns -1 to go on, or an exit status (0 for --help,
 * SPULSE_EXIT_USAGE after printing the usage error) to return at once.
 * The loop also owns what every command shares: -h/--help and the
 * "unknown option" error.
 */

/* What an option parser returns for an option it does not know. */
#define SPULSE_OPT_UNKNOWN (-2)

/*
 * spulse_parse_file_args walks argv[1..argc) of command @cmd: words that
 * are not options fill *@path (a second one is an "extra argument");
 * -h and --help print @usage to stdout and return 0; every other option
 * goes to @opt(@ctx, argc, argv, &i), which advances i past a value it
 * consumes, and may return SPULSE_OPT_UNKNOWN (a usage error). A missing
 * FILE is a usage error.
 */
int spulse_parse_file_args(const char *cmd, void (*usage)(FILE *f), int argc,
			   char **argv,
			   int (*opt)(void *ctx, int argc, char **argv, int *i),
			   void *ctx, const char **path);

/* spulse_parse_args is spulse_parse_file_args() with FILE optional. */
int spulse_parse_args(const char *cmd, void (*usage)(FILE *f), int argc,
		      char **argv,
		      int (*opt)(void *ctx, int argc, char **argv, int *i),
		      void *ctx, const char **path);

/*
 * Numeric option values. Each parses @val, the value of option @opt of
 * @cmd; a NULL @val is a missing value, and a value that is malformed,
 * out of range, infinite or NaN is a usage error that names the allowed
 * range (spulse_value_error).
 *
 * spulse_read_uint reads @s as a decimal uint64_t without printing
 * anything (digits only: no sign, no blanks, no overflow); false if it is
 * not one. spulse_parse_range: such an integer in [@min, @max]. spulse_parse_int: the same into a long,
 * in [@min, INT32_MAX]. spulse_parse_seconds: a finite number of seconds
 * in [@min, @max]; @max keeps every later conversion (to ns, to ms) far
 * from overflowing.
 */
bool spulse_read_uint(const char *s, uint64_t *out);
int spulse_parse_range(const char *cmd, const char *opt, const char *val,
		       uint64_t min, uint64_t max, uint64_t *out);
int spulse_parse_int(const char *cmd, const char *opt, const char *val,
		     long min, long *out);
int spulse_parse_seconds(const char *cmd, const char *opt, const char *val,
			 double min, double max, double *out);

/*
 * spulse_jit_dir writes the JIT side directory of spool @spool ("@spool.jit":
 * perf maps `record` kept for each process, and the names of GDB JIT
 * objects) into @buf. Returns 0, or -1 when it does not fit.
 */
int spulse_jit_dir(const char *spool, char *buf, size_t size);

/*
 * spulse_jit_dir_found is the same for readers: @buf when that directory
 * exists, else NULL (a spool recorded without one, or copied alone).
 */
const char *spulse_jit_dir_found(const char *spool, char *buf, size_t size);

#endif /* SPULSE_ARGS_H */
