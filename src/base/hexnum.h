/* SPDX-License-Identifier: MIT */
/* Hexadecimal numbers in text files (kallsyms, perf maps). */
#ifndef SP_BASE_HEXNUM_H
#define SP_BASE_HEXNUM_H

#include <stddef.h>
#include <stdint.h>

static inline int sp__hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/*
 * Parses the hex digits at the start of @s (at most @n bytes) into *@out.
 * Returns how many digits, or 0 when there are none or the value does not
 * fit in 64 bits (then *@out is untouched).
 */
static inline size_t sp__hex_prefix(const char *s, size_t n, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;
	int d;

	for (i = 0; i < n && (d = sp__hex_digit(s[i])) >= 0; i++) {
		if (v >> 60)
			return 0;
		v = v << 4 | (uint64_t)d;
	}
	if (i)
		*out = v;
	return i;
}

#endif /* SP_BASE_HEXNUM_H */
