/* SPDX-License-Identifier: MIT */
/* sp_text_escape(): recorded names made safe for terminals, in one place. */
#include <errno.h>

#include <stackpulse/text.h>

#include "utf8.h"

/*
 * The input is cut into units: one ASCII byte, one well-formed UTF-8
 * sequence, or one byte that is neither. A unit either passes as it is
 * (runs of them are emitted straight from the input, so a name without
 * anything to escape is one call of @emit) or is escaped, byte by byte,
 * as \xNN; a backslash or a quote asked for by the flags becomes \\ or
 * \". C1 controls are the two-byte sequences C2 80 .. C2 9F.
 */
#define TEXT_FLAGS (SP_TEXT_ASCII | SP_TEXT_QUOTED | SP_TEXT_REVERSIBLE)

/* Whether the unit at @s (*@n bytes, set here) passes unescaped. */
static bool unit_passes(const uint8_t *s, size_t avail, uint32_t flags,
			size_t *n)
{
	uint8_t c = s[0];

	*n = 1;
	if (c < 0x80) {
		if (c < 0x20 || c == 0x7f)
			return false;
		if (c == '\\' && (flags & SP_TEXT_REVERSIBLE))
			return false;
		return !(c == '"' && (flags & SP_TEXT_QUOTED));
	}
	*n = sp__utf8_seq_len(s, avail);
	if (*n == 0) {
		*n = 1;
		return false;
	}
	if (flags & SP_TEXT_ASCII)
		return false;
	return !(*n == 2 && c == 0xc2 && s[1] <= 0x9f);
}

static int escape_unit(const uint8_t *s, size_t n,
		       int (*emit)(void *ctx, const char *buf, size_t len),
		       void *ctx)
{
	static const char hex[] = "0123456789abcdef";
	char buf[16];
	size_t i, k = 0;

	if (n == 1 && (s[0] == '\\' || s[0] == '"')) {
		buf[0] = '\\';
		buf[1] = (char)s[0];
		return emit(ctx, buf, 2);
	}
	for (i = 0; i < n; i++) {
		buf[k++] = '\\';
		buf[k++] = 'x';
		buf[k++] = hex[s[i] >> 4];
		buf[k++] = hex[s[i] & 15];
	}
	return emit(ctx, buf, k);
}

SP_API int sp_text_escape(const char *text, size_t len, uint32_t flags,
			  int (*emit)(void *ctx, const char *buf, size_t len),
			  void *ctx)
{
	const uint8_t *p = (const uint8_t *)text;
	size_t i = 0, run = 0, n;
	int err;

	if (!emit || (!text && len) || (flags & ~TEXT_FLAGS))
		return -EINVAL;
	while (i < len) {
		if (unit_passes(p + i, len - i, flags, &n)) {
			i += n;
			continue;
		}
		if (i > run && (err = emit(ctx, text + run, i - run)) < 0)
			return err;
		err = escape_unit(p + i, n, emit, ctx);
		if (err < 0)
			return err;
		i += n;
		run = i;
	}
	if (i > run && (err = emit(ctx, text + run, i - run)) < 0)
		return err;
	return 0;
}
