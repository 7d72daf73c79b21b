/* SPDX-License-Identifier: MIT */
/* Exporters: the buffered writer's numbers and separators, byte for byte. */

/*
 * xout.c formats numbers in place when the 64 KiB buffer has room and
 * through a small stack copy when a number straddles the end of the
 * buffer; sp__xout_char has an inline fast path and an out-of-line flush.
 * Every format's bytes go through these, so each path is checked against
 * printf: digit counts at every power of ten, both ends of the 64-bit
 * range, and numbers written at every offset around a buffer boundary.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "export_internal.h"

struct capture {
	char *buf;
	size_t len, cap;
};

static int capture_emit(void *ctx, const void *buf, size_t len)
{
	struct capture *c = ctx;

	if (c->len + len > c->cap) {
		c->cap = (c->len + len) * 2;
		c->buf = realloc(c->buf, c->cap);
		CHECK_PTR(c->buf);
	}
	memcpy(c->buf + c->len, buf, len);
	c->len += len;
	return 0;
}

/* Values whose digit count changes, and the extremes. */
static size_t test_values(uint64_t *v, size_t max)
{
	uint64_t p = 1;
	size_t n = 0;

	v[n++] = 0;
	for (int i = 0; i < 19 && n + 3 <= max; i++) {
		v[n++] = p * 10 - 1;
		v[n++] = p * 10;
		v[n++] = p * 10 + 1;
		p *= 10;
	}
	v[n++] = UINT64_MAX;
	return n;
}

/* Writes @pad filler bytes, then every test value as u64 and as i64. */
static void check_run(size_t pad)
{
	static const struct sp__xmem mem = { 0 };
	struct capture c = { 0 };
	struct sp__xout out;
	char *want;
	size_t wlen = 0, i, n;
	uint64_t v[64];

	n = test_values(v, 64);
	want = malloc(pad + (n + 1) * 64);
	CHECK_PTR(want);
	CHECK_OK(sp__xout_init_fn(&out, &mem, capture_emit, &c));
	for (i = 0; i < pad; i++)
		sp__xout_char(&out, 'x');
	memset(want, 'x', pad);
	wlen = pad;
	for (i = 0; i < n; i++) {
		sp__xout_u64(&out, v[i]);
		sp__xout_char(&out, ',');
		sp__xout_i64(&out, -(int64_t)(v[i] >> 1));
		sp__xout_char(&out, ';');
		wlen += (size_t)snprintf(want + wlen, 64,
					 "%" PRIu64 ",%" PRId64 ";", v[i],
					 -(int64_t)(v[i] >> 1));
	}
	sp__xout_i64(&out, INT64_MIN);
	wlen += (size_t)snprintf(want + wlen, 32, "%" PRId64, INT64_MIN);
	CHECK_OK(sp__xout_finish(&out));
	CHECK_MEM(c.buf, c.len, want, wlen);
	free(c.buf);
	free(want);
}

int main(void)
{
	size_t pad;

	/* Offsets that put numbers across the 64 KiB buffer boundary. */
	check_run(0);
	for (pad = 65536 - 48; pad <= 65536 + 2; pad++)
		check_run(pad);
	return T_EXIT_PASS;
}
