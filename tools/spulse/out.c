/* SPDX-License-Identifier: MIT */
/* spulse: escaping, the text/JSON record emitter and stdout error handling. */

/*
 * Module paths and file names may hold any bytes (SPULSE3 only promises
 * UTF-8, which still allows control characters and NUL), so every string
 * goes through one of two escapers:
 *
 *   text  sp_text_escape() (the one escaper of every text output):
 *         printable ASCII as is; '\\' -> \\, '"' -> \" when quoted;
 *         every other byte (controls, DEL, all bytes >= 0x80) -> \xNN.
 *         Byte-exact and safe on any terminal.
 *   JSON  '"' '\\' and \b \f \n \r \t by name, other controls and DEL as
 *         \u00NN, valid UTF-8 sequences copied unchanged; a byte that is
 *         not part of valid UTF-8 becomes \u00NN (its Latin-1 reading), so
 *         the output is always valid JSON even for non-UTF-8 file names.
 *
 * stdout errors: main() ignores SIGPIPE, so a closed pipe turns into a
 * failed write with EPIPE instead of killing the process. The first
 * failure's errno is kept here because later calls may clobber errno.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "spulse.h"

static int out_errno; /* errno of the first failed stdout write, or 0 */

static int put_piece(void *ctx, const char *buf, size_t len)
{
	fwrite(buf, 1, len, ctx);
	return 0;
}

void spulse_put_text(FILE *f, const char *s, size_t len, bool quoted)
{
	uint32_t flags = SP_TEXT_ASCII | SP_TEXT_REVERSIBLE;

	if (quoted)
		putc('"', f);
	/* The library's escaper, as for every text output. */
	sp_text_escape(s, len, quoted ? flags | SP_TEXT_QUOTED : flags,
		       put_piece, f);
	if (quoted)
		putc('"', f);
}

/* Length of the valid multi-byte UTF-8 sequence at @p, or 0 (RFC 3629). */
static size_t utf8_seq_len(const unsigned char *p, size_t avail)
{
	uint32_t cp;
	size_t len, i;

	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2, cp = p[0] & 0x1f;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3, cp = p[0] & 0x0f;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4, cp = p[0] & 0x07;
	else
		return 0;
	if (len > avail)
		return 0;
	for (i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	/* Overlong forms, UTF-16 surrogates and values past U+10FFFF. */
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return len;
}

static void put_json_byte(FILE *f, unsigned char c)
{
	static const char named[] = "\bb\ff\nn\rr\tt\"\"\\\\";
	const char *hit = c ? memchr(named, c, sizeof(named) - 1) : NULL;

	/* Only even positions of named[] are raw bytes; odd ones are names. */
	if (hit && (hit - named) % 2 == 0)
		fprintf(f, "\\%c", hit[1]);
	else if (c < 0x20 || c >= 0x7f)
		fprintf(f, "\\u%04x", c);
	else
		putc(c, f);
}

void spulse_put_json(FILE *f, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, n;

	putc('"', f);
	while (i < len) {
		n = p[i] >= 0x80 ? utf8_seq_len(p + i, len - i) : 0;
		if (n) {
			fwrite(p + i, 1, n, f);
			i += n;
		} else {
			put_json_byte(f, p[i++]);
		}
	}
	putc('"', f);
}

/* Starts one key: ` key=` in text, `,"key":` in JSON. */
static void emit_key(struct spulse_emit *e, const char *key)
{
	if (e->json) {
		fprintf(e->f, "%s\"%s\":", e->need_comma ? "," : "", key);
		e->need_comma = true;
	} else {
		fprintf(e->f, " %s=", key);
	}
}

void spulse_emit_begin(struct spulse_emit *e, const char *type)
{
	if (e->json) {
		fprintf(e->f, "{\"type\":\"%s\"", type);
		e->need_comma = true;
	} else {
		fputs(type, e->f);
		e->line_open = true;
	}
}

void spulse_emit_end(struct spulse_emit *e)
{
	if (e->json)
		fputs("}\n", e->f);
	else if (e->line_open)
		putc('\n', e->f);
	e->need_comma = false;
	e->line_open = false;
}

void spulse_emit_u64(struct spulse_emit *e, const char *key, uint64_t v)
{
	emit_key(e, key);
	fprintf(e->f, "%" PRIu64, v);
}

void spulse_emit_i64(struct spulse_emit *e, const char *key, int64_t v)
{
	emit_key(e, key);
	fprintf(e->f, "%" PRId64, v);
}

void spulse_emit_hex(struct spulse_emit *e, const char *key, uint64_t v)
{
	emit_key(e, key);
	fprintf(e->f, e->json ? "\"0x%" PRIx64 "\"" : "0x%" PRIx64, v);
}

void spulse_emit_bool(struct spulse_emit *e, const char *key, bool v)
{
	emit_key(e, key);
	if (e->json)
		fputs(v ? "true" : "false", e->f);
	else
		fputs(v ? "yes" : "no", e->f);
}

void spulse_emit_none(struct spulse_emit *e, const char *key)
{
	emit_key(e, key);
	fputs(e->json ? "null" : "none", e->f);
}

/* A fixed word (a mode name): bare in text, a JSON string in JSON. */
void spulse_emit_word(struct spulse_emit *e, const char *key, const char *v)
{
	emit_key(e, key);
	fprintf(e->f, e->json ? "\"%s\"" : "%s", v);
}

void spulse_emit_str(struct spulse_emit *e, const char *key, const char *s,
		     size_t len)
{
	emit_key(e, key);
	if (e->json)
		spulse_put_json(e->f, s, len);
	else
		spulse_put_text(e->f, s, len, true);
}

/* Text lists put each item on its own indented line below the record. */
void spulse_emit_list_begin(struct spulse_emit *e, const char *key)
{
	if (e->json) {
		emit_key(e, key);
		putc('[', e->f);
		e->need_comma = false;
	} else if (e->line_open) {
		putc('\n', e->f);
		e->line_open = false;
	}
}

void spulse_emit_list_end(struct spulse_emit *e)
{
	if (e->json) {
		putc(']', e->f);
		e->need_comma = true;
	}
}

void spulse_emit_item_begin(struct spulse_emit *e, const char *label)
{
	if (e->json) {
		fputs(e->need_comma ? ",{" : "{", e->f);
		e->need_comma = false;
	} else {
		fprintf(e->f, "  %s", label);
		e->line_open = true;
	}
}

void spulse_emit_item_end(struct spulse_emit *e)
{
	if (e->json) {
		putc('}', e->f);
		e->need_comma = true;
	} else {
		putc('\n', e->f);
		e->line_open = false;
	}
}

/* The hint line that ends every usage error; returns 2. */
static int usage_hint(const char *cmd)
{
	fprintf(stderr, "\nTry 'spulse %s%s--help' for more information.\n",
		cmd ? cmd : "", cmd ? " " : "");
	return SPULSE_EXIT_USAGE;
}

int spulse_usage_error(const char *cmd, const char *msg, const char *arg)
{
	fprintf(stderr, "spulse%s%s: %s", cmd ? " " : "", cmd ? cmd : "", msg);
	if (arg) {
		fputs(": ", stderr);
		spulse_put_text(stderr, arg, strlen(arg), false);
	}
	return usage_hint(cmd);
}

int spulse_value_error(const char *cmd, const char *opt, const char *val,
		       const char *allowed)
{
	fprintf(stderr, "spulse %s: bad value for %s: ", cmd, opt);
	spulse_put_text(stderr, val, strlen(val), false);
	fprintf(stderr, " (allowed: %s)", allowed);
	return usage_hint(cmd);
}

void spulse_report_error(const char *path, int err, const struct sp_diag *diag)
{
	fputs("spulse: ", stderr);
	spulse_put_text(stderr, path, strlen(path), false);
	fprintf(stderr, ": %s", sp_strerror(err));
	if (diag && diag->message[0])
		fprintf(stderr, " at offset %" PRIu64 ": %s", diag->offset,
			diag->message);
	putc('\n', stderr);
}

void spulse_report_recovered(const char *path)
{
	fputs("spulse: ", stderr);
	spulse_put_text(stderr, path, strlen(path), false);
	fputs(": warning: the file ends inside a record (cut-off tail); "
	      "only the complete records before it were read\n",
	      stderr);
}

bool spulse_out_failed(void)
{
	if (!ferror(stdout))
		return false;
	/* Right after the failing call errno still holds its reason. */
	if (!out_errno)
		out_errno = errno ? errno : EIO;
	return true;
}

int spulse_out_finish(int status)
{
	if (fflush(stdout) != 0 || ferror(stdout))
		spulse_out_failed();
	if (!out_errno || out_errno == EPIPE)
		return status;
	fprintf(stderr, "spulse: error writing output: %s\n",
		strerror(out_errno));
	return SPULSE_EXIT_DATA;
}
