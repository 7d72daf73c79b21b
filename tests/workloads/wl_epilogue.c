/* SPDX-License-Identifier: MIT */
/* Workload: a short hot leaf that saves every callee-saved register. */
#include <stdint.h>

#include "wl_common.h"

uint64_t wl_epilogue_leaf(const uint64_t *v);
uint64_t wl_epilogue_loop(const uint64_t *v, unsigned n);

static volatile uint64_t sink;

/*
 * Sixteen values live at once: more than the nine caller-saved registers,
 * so -O2 pushes RBX, RBP and R12-R15 in the prologue and pops them in the
 * epilogue. The body is short, so a good share of samples falls on the
 * pops and the ret, where the CFI still names save slots below RSP.
 */
WL_NAMED uint64_t wl_epilogue_leaf(const uint64_t *v)
{
	uint64_t a = v[0], b = v[1], c = v[2], d = v[3], e = v[4], f = v[5];
	uint64_t g = v[6], h = v[7], i = v[8], j = v[9], k = v[10], l = v[11];
	uint64_t m = v[12], n = v[13], o = v[14], p = v[15];

	a += b * c;
	d ^= e + f;
	g += h ^ i;
	j ^= k * l;
	m += n ^ o;
	p ^= a + d;
	b += g * j;
	e ^= m + p;
	h += b ^ e;
	k ^= h * a;
	n += k ^ d;
	c ^= n + g;
	f += c * j;
	i ^= f + m;
	l += i ^ p;
	o ^= l * b;
	return a ^ b ^ c ^ d ^ e ^ f ^ g ^ h ^ i ^ j ^ k ^ l ^ m ^ n ^ o ^ p;
}

WL_NAMED uint64_t wl_epilogue_loop(const uint64_t *v, unsigned n)
{
	uint64_t acc = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		acc += wl_epilogue_leaf(v + (i & 15));
	return acc;
}

int main(int argc, char **argv)
{
	double end = wl_now() + wl_duration(argc, argv);
	uint64_t v[32], x = 0;
	unsigned i;

	for (i = 0; i < 32; i++)
		v[i] = 0x9e3779b97f4a7c15ull * (i + 1);
	while (wl_now() < end)
		x += wl_epilogue_loop(v, 100000);
	sink = x;
	return wl_finish(0);
}
