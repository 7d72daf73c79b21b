/* SPDX-License-Identifier: MIT */
/* Strict UTF-8 validation, and the escape for paths that are not UTF-8. */
#include "utf8.h"

/*
 * Table 3-7 of the Unicode standard: the allowed second byte depends on the
 * lead byte (E0 needs A0..BF, ED needs 80..9F, F0 needs 90..BF, F4 needs
 * 80..8F); every other continuation byte is 80..BF.
 */
size_t sp__utf8_seq_len(const uint8_t *s, size_t avail)
{
	uint8_t b0 = s[0], lo = 0x80, hi = 0xbf;
	size_t n, i;

	if (b0 < 0x80)
		return 1;
	if (b0 >= 0xc2 && b0 <= 0xdf)
		n = 2;
	else if (b0 >= 0xe0 && b0 <= 0xef)
		n = 3;
	else if (b0 >= 0xf0 && b0 <= 0xf4)
		n = 4;
	else
		return 0;
	if (avail < n)
		return 0;
	if (b0 == 0xe0)
		lo = 0xa0;
	else if (b0 == 0xed)
		hi = 0x9f;
	else if (b0 == 0xf0)
		lo = 0x90;
	else if (b0 == 0xf4)
		hi = 0x8f;
	if (s[1] < lo || s[1] > hi)
		return 0;
	for (i = 2; i < n; i++)
		if (s[i] < 0x80 || s[i] > 0xbf)
			return 0;
	return n;
}

bool sp__utf8_valid(const uint8_t *s, size_t len)
{
	size_t i = 0;

	while (i < len) {
		size_t n = sp__utf8_seq_len(s + i, len - i);

		if (n == 0)
			return false;
		i += n;
	}
	return true;
}

/* Appends byte @c at @out[@n] if it fits; returns @n + 1. */
static size_t put(char *out, size_t cap, size_t n, char c)
{
	if (n < cap)
		out[n] = c;
	return n + 1;
}

size_t sp__utf8_escape(const uint8_t *s, size_t len, char *out, size_t cap)
{
	static const char hex[] = "0123456789abcdef";
	size_t i = 0, n = 0, k, step;

	while (i < len) {
		step = sp__utf8_seq_len(s + i, len - i);
		if (step == 1 && s[i] == '\\') {
			n = put(out, cap, n, '\\');
			n = put(out, cap, n, '\\');
		} else if (step == 0) {
			n = put(out, cap, n, '\\');
			n = put(out, cap, n, 'x');
			n = put(out, cap, n, hex[s[i] >> 4]);
			n = put(out, cap, n, hex[s[i] & 15]);
			step = 1;
		} else {
			for (k = 0; k < step; k++)
				n = put(out, cap, n, (char)s[i + k]);
		}
		i += step;
	}
	return n;
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

size_t sp__utf8_unescape(const char *s, size_t len, uint8_t *out, size_t cap)
{
	size_t i = 0, n = 0;
	int hi, lo;

	while (i < len) {
		if (s[i] != '\\') {
			n = put((char *)out, cap, n, s[i++]);
			continue;
		}
		if (i + 1 < len && s[i + 1] == '\\') {
			n = put((char *)out, cap, n, '\\');
			i += 2;
			continue;
		}
		if (i + 3 >= len || s[i + 1] != 'x' ||
		    (hi = hex_digit(s[i + 2])) < 0 ||
		    (lo = hex_digit(s[i + 3])) < 0)
			return SIZE_MAX;
		n = put((char *)out, cap, n, (char)(hi << 4 | lo));
		i += 4;
	}
	return n;
}
