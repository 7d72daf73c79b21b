/* SPDX-License-Identifier: MIT */
/* Strict UTF-8 validation. */
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
