/* SPDX-License-Identifier: MIT */
/* LEB128 varints and zigzag exactly as integer-encoding 4.1.0 (SPULSE3 §2). */
#ifndef SP_BASE_VARINT_H
#define SP_BASE_VARINT_H

#include <stddef.h>
#include <stdint.h>

/*
 * Encoding always produces the shortest form (1..10 bytes):
 *
 *   value  = g0 | g1 << 7 | g2 << 14 | ...   (7-bit groups, LSB first)
 *   bytes  = [g0|0x80] [g1|0x80] ... [gn]     (last byte has bit 7 clear)
 *
 * Decoding examines at most 10 bytes. Overlong forms are accepted (80 00 is
 * 0). Bits past bit 63 are discarded; overflow is rejected only through the
 * 10th byte, which must be 00 or 01.
 */
#define SP_VARINT_MAX 10

/* Writes @v at @out (which has room for SP_VARINT_MAX bytes); returns length. */
static inline size_t sp__varint_put(uint8_t *out, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

/* Returns the encoded length of @v. */
static inline size_t sp__varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

enum sp__varint_status {
	SP_VARINT_OK = 0,
	/* Input ended before a terminating byte (fewer than 10 bytes seen). */
	SP_VARINT_SHORT = 1,
	/* The 10th byte was not 00 or 01. */
	SP_VARINT_OVERFLOW = 2,
};

/*
 * Decodes one varint from @in (@avail bytes readable). On success stores
 * the value in *@v and the consumed length in *@len.
 */
static inline enum sp__varint_status
sp__varint_get(const uint8_t *in, size_t avail, uint64_t *v, size_t *len)
{
	uint64_t value = 0;
	size_t i;

	for (i = 0; i < avail && i < SP_VARINT_MAX; i++) {
		uint8_t b = in[i];

		if (i == SP_VARINT_MAX - 1) {
			if (b > 1)
				return SP_VARINT_OVERFLOW;
			value |= (uint64_t)b << 63;
			*v = value;
			*len = SP_VARINT_MAX;
			return SP_VARINT_OK;
		}
		value |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			*v = value;
			*len = i + 1;
			return SP_VARINT_OK;
		}
	}
	return SP_VARINT_SHORT;
}

/* Zigzag: 0->0, -1->1, 1->2, -2->3 ... on 64-bit two's complement. */
static inline uint64_t sp__zigzag(int64_t v)
{
	return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t sp__unzigzag(uint64_t u)
{
	return (int64_t)((u >> 1) ^ (~(u & 1) + 1));
}

#endif /* SP_BASE_VARINT_H */
