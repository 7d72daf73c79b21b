/* SPDX-License-Identifier: MIT */
/* Byte-string hashing. */
#include <string.h>

#include "hash.h"

uint64_t sp__hash_bytes(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ull ^ len;
	size_t i = 0;

	/* Eight bytes at a time through the mixer, then the tail bytewise. */
	for (; i + 8 <= len; i += 8) {
		uint64_t w;

		memcpy(&w, p + i, 8);
		h = sp__hash_mix(h ^ w);
	}
	for (; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return sp__hash_mix(h);
}
