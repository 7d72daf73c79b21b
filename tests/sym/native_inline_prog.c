/* SPDX-License-Identifier: MIT */
/* Oracle program for test_native*: -O2 -g, nested always_inline helpers. */
#include <stdio.h>
#include <stdlib.h>

#include "native_inline_prog.h"

/*
 * Random addresses inside these functions land in chains of up to four
 * inline levels (nip_fold -> nip_step -> nip_mix / nip_rot, plus the local
 * helpers below), from two source files. The program only has to run;
 * the tests read its symbols and DWARF.
 */

NIP_INLINE uint64_t local_sum(const uint64_t *p, int n)
{
	uint64_t s = 0;
	int i;

	for (i = 0; i < n; i++)
		s += nip_mix(p[i]) ^ (uint64_t)i;
	return s;
}

NIP_INLINE uint64_t local_twice(const uint64_t *p, int n)
{
	return local_sum(p, n) + nip_fold(p, n / 2);
}

#define NIP_FN(k)                                                              \
	__attribute__((noinline)) uint64_t nip_fn##k(uint64_t *p, int n);      \
	__attribute__((noinline)) uint64_t nip_fn##k(uint64_t *p, int n)       \
	{                                                                      \
		int i;                                                         \
		for (i = 0; i < n; i++)                                        \
			p[i] = nip_step(p[i], (uint64_t)(k + i));              \
		if (p[0] & (k))                                                \
			return local_twice(p, n) * (k);                        \
		return nip_fold(p, n) + local_sum(p, n - (k) % 3);             \
	}

NIP_FN(1)
NIP_FN(2)
NIP_FN(3)
NIP_FN(4)
NIP_FN(5)
NIP_FN(6)
NIP_FN(7)
NIP_FN(8)
NIP_FN(9)
NIP_FN(10)
NIP_FN(11)
NIP_FN(12)
NIP_FN(13)
NIP_FN(14)
NIP_FN(15)
NIP_FN(16)

static __attribute__((noinline)) uint64_t run_all(uint64_t *p, int n)
{
	uint64_t (*const fns[])(uint64_t *, int) = {
		nip_fn1,  nip_fn2,  nip_fn3,  nip_fn4,	nip_fn5,  nip_fn6,
		nip_fn7,  nip_fn8,  nip_fn9,  nip_fn10, nip_fn11, nip_fn12,
		nip_fn13, nip_fn14, nip_fn15, nip_fn16,
	};
	uint64_t acc = 0;
	size_t i;

	for (i = 0; i < sizeof(fns) / sizeof(fns[0]); i++)
		acc ^= fns[i](p, n);
	return acc;
}

int main(int argc, char **argv)
{
	uint64_t buf[64];
	int i, n = argc > 1 ? atoi(argv[1]) : 16;

	if (n < 1 || n > 64)
		n = 16;
	for (i = 0; i < n; i++)
		buf[i] = (uint64_t)i * 0x9e3779b97f4a7c15ull;
	printf("%llx\n", (unsigned long long)run_all(buf, n));
	return 0;
}
