/* SPDX-License-Identifier: MIT */
/* Exporters: buffered output with JSON and XML escaping of arbitrary bytes. */

/*
 * Formats write many tiny pieces (a number, a comma, a name), so they go
 * through a 64 KiB buffer that is handed to the destination when full.
 * The destination is a struct sp_sink, or any emit function (the gzip
 * formats compress in between). The first error sticks: later writes are
 * dropped, so formats check once at the end instead of after every call.
 *
 * Names in a profile are whatever bytes the binary or the perf map held.
 * Both escapers first pass them through sp_text_escape(), the one escaper
 * of every text output: control bytes (C0, DEL, C1) and bytes that are
 * not valid UTF-8 become the text \xNN, so a name reads the same in JSON,
 * XML, folded stacks and the CLI, and nothing a terminal or a viewer
 * would act on survives. Then each format's own quoting applies.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "export_internal.h"

#define XOUT_BLOCK (64 * 1024)

static int sink_emit(void *ctx, const void *buf, size_t len)
{
	return sp_sink_write(ctx, buf, len);
}

int sp__xout_init_fn(struct sp__xout *out, const struct sp__xmem *mem,
		     int (*emit)(void *ctx, const void *buf, size_t len),
		     void *ctx)
{
	memset(out, 0, sizeof(*out));
	out->emit = emit;
	out->ctx = ctx;
	out->mem = mem;
	out->buf = sp__xmem_alloc(mem, XOUT_BLOCK);
	if (!out->buf)
		return -ENOMEM;
	out->cap = XOUT_BLOCK;
	return 0;
}

int sp__xout_init_sink(struct sp__xout *out, const struct sp__xmem *mem,
		       struct sp_sink *sink)
{
	return sp__xout_init_fn(out, mem, sink_emit, sink);
}

int sp__xout_flush(struct sp__xout *out)
{
	int err;

	if (!out->err && out->len) {
		err = out->emit(out->ctx, out->buf, out->len);
		if (err < 0)
			out->err = err;
	}
	out->len = 0;
	return out->err;
}

int sp__xout_finish(struct sp__xout *out)
{
	int err = sp__xout_flush(out);

	sp__xmem_free(out->mem, out->buf, out->cap);
	out->buf = NULL;
	out->cap = 0;
	return err;
}

void sp__xout_write(struct sp__xout *out, const void *buf, size_t len)
{
	const char *p = buf;
	size_t n;

	while (len && !out->err) {
		if (out->len == out->cap)
			sp__xout_flush(out);
		n = out->cap - out->len;
		if (n > len)
			n = len;
		memcpy(out->buf + out->len, p, n);
		out->len += n;
		p += n;
		len -= n;
	}
}

void sp__xout_str(struct sp__xout *out, const char *s)
{
	sp__xout_write(out, s, strlen(s));
}

void sp__xout_char_flush(struct sp__xout *out, char c)
{
	sp__xout_flush(out);
	/* After an error the buffer is kept empty, so nothing piles up. */
	if (!out->err)
		out->buf[out->len++] = c;
}

/* Decimal digits of @v (1..20); four at a time, few values are large. */
static size_t u64_digits(uint64_t v)
{
	size_t n = 1;

	for (;;) {
		if (v < 10)
			return n;
		if (v < 100)
			return n + 1;
		if (v < 1000)
			return n + 2;
		if (v < 10000)
			return n + 3;
		v /= 10000;
		n += 4;
	}
}

void sp__xout_u64(struct sp__xout *out, uint64_t v)
{
	static const char pairs[] = "00010203040506070809"
				    "10111213141516171819"
				    "20212223242526272829"
				    "30313233343536373839"
				    "40414243444546474849"
				    "50515253545556575859"
				    "60616263646566676869"
				    "70717273747576777879"
				    "80818283848586878889"
				    "90919293949596979899";
	size_t n = u64_digits(v), i = n;
	char tmp[20], *p;

	/*
	 * Numbers are most of a timeline's bytes: format them in place, two
	 * digits per division.
	 */
	p = out->cap - out->len >= n ? out->buf + out->len : tmp;
	for (; v >= 100; v /= 100, i -= 2)
		memcpy(p + i - 2, pairs + (v % 100) * 2, 2);
	if (v >= 10)
		memcpy(p, pairs + v * 2, 2);
	else
		p[0] = (char)('0' + v);
	if (p == tmp)
		sp__xout_write(out, tmp, n);
	else
		out->len += n;
}

void sp__xout_i64(struct sp__xout *out, int64_t v)
{
	if (v < 0) {
		sp__xout_char(out, '-');
		sp__xout_u64(out, (uint64_t)0 - (uint64_t)v);
		return;
	}
	sp__xout_u64(out, (uint64_t)v);
}

void sp__xout_fixed(struct sp__xout *out, double v, int decimals)
{
	char tmp[64];
	int n = snprintf(tmp, sizeof(tmp), "%.*f", decimals, v);

	/* snprintf cannot fail for %f of a finite value within 64 bytes. */
	if (n > 0 && (size_t)n < sizeof(tmp))
		sp__xout_write(out, tmp, (size_t)n);
}

size_t sp__utf8_seq(const unsigned char *s, size_t len)
{
	uint32_t cp;
	size_t n, i;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (len < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	/* Overlong forms, UTF-16 surrogates and values past U+10FFFF. */
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

static void json_byte(struct sp__xout *out, unsigned char c)
{
	static const char hex[] = "0123456789abcdef";
	char esc[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };

	switch (c) {
	case '"':
		sp__xout_write(out, "\\\"", 2);
		break;
	case '\\':
		sp__xout_write(out, "\\\\", 2);
		break;
	case '\n':
		sp__xout_write(out, "\\n", 2);
		break;
	case '\t':
		sp__xout_write(out, "\\t", 2);
		break;
	default:
		if (c < 0x20 || c == 0x7f)
			sp__xout_write(out, esc, sizeof(esc));
		else
			sp__xout_char(out, (char)c);
	}
}

/* JSON-escapes one piece of sp_text_escape() output (valid UTF-8). */
static int json_piece(void *ctx, const char *buf, size_t len)
{
	struct sp__xout *out = ctx;
	const unsigned char *p = (const unsigned char *)buf;
	size_t n;

	while (len) {
		n = sp__utf8_seq(p, len);
		if (n == 1)
			json_byte(out, *p);
		else if (n)
			sp__xout_write(out, p, n);
		else
			sp__xout_write(out, "\\ufffd", 6);
		n = n ? n : 1;
		p += n;
		len -= n;
	}
	return 0;
}

void sp__xout_json_str(struct sp__xout *out, const char *s)
{
	sp__xout_char(out, '"');
	/* Names read the same as in the text outputs (\xNN), then JSON. */
	sp_text_escape(s, strlen(s), 0, json_piece, out);
	sp__xout_char(out, '"');
}

static void xml_byte(struct sp__xout *out, unsigned char c)
{
	switch (c) {
	case '&':
		sp__xout_write(out, "&amp;", 5);
		break;
	case '<':
		sp__xout_write(out, "&lt;", 4);
		break;
	case '>':
		sp__xout_write(out, "&gt;", 4);
		break;
	case '"':
		sp__xout_write(out, "&quot;", 6);
		break;
	case '\'':
		sp__xout_write(out, "&#39;", 5);
		break;
	default:
		/* XML 1.0 allows only tab, LF and CR below 0x20. */
		if (c < 0x20 && c != '\t' && c != '\n' && c != '\r')
			sp__xout_write(out, "&#xFFFD;", 8);
		else
			sp__xout_char(out, (char)c);
	}
}

/* XML-escapes one piece of sp_text_escape() output. */
static int xml_piece(void *ctx, const char *buf, size_t len)
{
	struct sp__xout *out = ctx;
	const unsigned char *p = (const unsigned char *)buf;
	size_t n;

	while (len) {
		n = sp__utf8_seq(p, len);
		if (n == 1)
			xml_byte(out, *p);
		else if (n == 3 && p[0] == 0xef && p[1] == 0xbf && p[2] >= 0xbe)
			/* U+FFFE and U+FFFF are not XML characters. */
			sp__xout_write(out, "&#xFFFD;", 8);
		else if (n)
			sp__xout_write(out, p, n);
		else
			sp__xout_write(out, "&#xFFFD;", 8);
		n = n ? n : 1;
		p += n;
		len -= n;
	}
	return 0;
}

void sp__xout_xml(struct sp__xout *out, const char *s)
{
	/*
	 * The library's one text escaper first (controls, DEL, C1 and
	 * invalid UTF-8 as \xNN: a name reads the same in the SVG's titles
	 * and labels as in every other text output), then XML's own rules.
	 */
	sp_text_escape(s, strlen(s), 0, xml_piece, out);
}
