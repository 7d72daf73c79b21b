/* SPDX-License-Identifier: MIT */
/* spulse: the argument loop shared by the commands that read one spool FILE. */
#ifndef SPULSE_ARGS_H
#define SPULSE_ARGS_H

#include <stddef.h>
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
 * spulse_parse_int parses @val, the value of option @opt of @cmd, as a
 * decimal integer in [@min, INT32_MAX] into *@out. A NULL @val is a
 * missing value.
 */
int spulse_parse_int(const char *cmd, const char *opt, const char *val,
		     long min, long *out);

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
