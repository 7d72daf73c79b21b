/* SPDX-License-Identifier: MIT */
/* Inline helpers of native_inline_prog.c, in a header so call files differ. */
#ifndef NATIVE_INLINE_PROG_H
#define NATIVE_INLINE_PROG_H

#include <stdint.h>

#define NIP_INLINE static inline __attribute__((always_inline))

NIP_INLINE uint64_t nip_mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 29;
	return x;
}

NIP_INLINE uint64_t nip_rot(uint64_t x, unsigned r)
{
	return (x << (r & 63)) | (x >> ((64 - r) & 63));
}

NIP_INLINE uint64_t nip_step(uint64_t acc, uint64_t v)
{
	acc += nip_mix(v + acc);
	return nip_rot(acc, (unsigned)v);
}

NIP_INLINE uint64_t nip_fold(const uint64_t *p, int n)
{
	uint64_t acc = 0;
	int i;

	for (i = 0; i < n; i++)
		acc = nip_step(acc, p[i]);
	return acc;
}

#endif
