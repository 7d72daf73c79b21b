/* SPDX-License-Identifier: MIT */
/* spulse: declarations shared by the CLI's command and output files. */
#ifndef SPULSE_H
#define SPULSE_H

/*
 * The CLI is built on the public API only (<stackpulse.h>); it never sees
 * src/. main.c dispatches to one cmd_<name>.c file per subcommand; out.c
 * holds the byte escaping (text and JSON), the "emitter" that prints one
 * record either as `type key=value ...` or as one JSON object per line,
 * and the stdout error bookkeeping.
 *
 * Exit statuses are the same for every command:
 *   0  success (a spool with a recovered cut-off tail is a success, with a
 *      warning on stderr; a reader that closed our stdout pipe too),
 *   1  the file is corrupt or cannot be read, or writing stdout failed,
 *   2  usage error (unknown command or option, missing or extra FILE).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <stackpulse.h>

#define SPULSE_EXIT_OK 0
#define SPULSE_EXIT_DATA 1
#define SPULSE_EXIT_USAGE 2

/* Subcommands: run() gets argv with argv[0] = the command name. */
int spulse_cmd_check(int argc, char **argv);
int spulse_cmd_dump(int argc, char **argv);
int spulse_cmd_export(int argc, char **argv);
int spulse_cmd_record(int argc, char **argv);
int spulse_cmd_report(int argc, char **argv);
int spulse_cmd_top(int argc, char **argv);
void spulse_check_usage(FILE *f);
void spulse_dump_usage(FILE *f);
void spulse_export_usage(FILE *f);
void spulse_record_usage(FILE *f);
void spulse_report_usage(FILE *f);
void spulse_top_usage(FILE *f);

/*
 * spulse_put_text writes bytes for a terminal: printable ASCII as is,
 * backslash as \\, everything else as \xNN; @quoted adds surrounding
 * quotes and escapes '"'.
 */
void spulse_put_text(FILE *f, const char *s, size_t len, bool quoted);
/* spulse_put_json writes a JSON string literal (quotes included). */
void spulse_put_json(FILE *f, const char *s, size_t len);

/*
 * struct spulse_emit prints records in one of two shapes:
 *   text: `module id=0 pid=7 path="/bin/app"`, list items on indented lines
 *   json: `{"type":"module","id":0,"pid":7,"path":"/bin/app"}`, one a line
 * Addresses are hex in both (JSON strings, so 64-bit values survive
 * readers that parse numbers as doubles).
 */
struct spulse_emit {
	FILE *f;
	bool json;
	bool need_comma; /* json: a value was written at this nesting level */
	bool line_open;	 /* text: the current line has no newline yet */
};

void spulse_emit_begin(struct spulse_emit *e, const char *type);
void spulse_emit_end(struct spulse_emit *e);
void spulse_emit_u64(struct spulse_emit *e, const char *key, uint64_t v);
void spulse_emit_i64(struct spulse_emit *e, const char *key, int64_t v);
void spulse_emit_hex(struct spulse_emit *e, const char *key, uint64_t v);
void spulse_emit_bool(struct spulse_emit *e, const char *key, bool v);
void spulse_emit_none(struct spulse_emit *e, const char *key);
void spulse_emit_word(struct spulse_emit *e, const char *key, const char *v);
void spulse_emit_str(struct spulse_emit *e, const char *key, const char *s,
		     size_t len);
void spulse_emit_list_begin(struct spulse_emit *e, const char *key);
void spulse_emit_list_end(struct spulse_emit *e);
void spulse_emit_item_begin(struct spulse_emit *e, const char *label);
void spulse_emit_item_end(struct spulse_emit *e);

/*
 * spulse_term_escapes tells whether @fd is a terminal that takes escape
 * codes (a TTY with TERM set and not "dumb"); spulse_term_color adds
 * NO_COLOR (unset) for bold and colours.
 */
bool spulse_term_escapes(int fd);
bool spulse_term_color(int fd);

/* spulse_usage_error prints "spulse CMD: MSG" and a hint; returns 2. */
int spulse_usage_error(const char *cmd, const char *msg, const char *arg);
/*
 * spulse_value_error prints "spulse CMD: bad value for OPT: VAL (allowed:
 * ALLOWED)" and the hint: every numeric option names its range this way.
 * Returns 2.
 */
int spulse_value_error(const char *cmd, const char *opt, const char *val,
		       const char *allowed);
/* spulse_report_error prints "spulse: FILE: <error> [at offset N: msg]". */
void spulse_report_error(const char *path, int err, const struct sp_diag *diag);
/* spulse_report_recovered warns on stderr about a cut-off tail. */
void spulse_report_recovered(const char *path);

/*
 * spulse_out_failed tells whether writing stdout has failed (and keeps
 * the first errno); long loops call it to stop early. spulse_out_finish
 * flushes stdout and turns a write error into exit status 1, except a
 * closed pipe (EPIPE: `spulse dump f | head`), which keeps @status.
 */
bool spulse_out_failed(void);
int spulse_out_finish(int status);

#endif /* SPULSE_H */
