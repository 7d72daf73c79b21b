/* SPDX-License-Identifier: MIT */
/* Call chains built -O2 -fomit-frame-pointer for the self-unwind tests. */
#include "self.h"

/*
 * Each function does a little work around its call so that the compiler
 * keeps a real frame (stack adjustment, saved registers) and no tail call;
 * the meson target disables inlining, cloning and sibling calls.
 */
static volatile int sink;

SELF_NOIPA int chain_c(struct self_sample *s, int x)
{
	volatile int pad[8];

	pad[x & 7] = x;
	sample_here(s);
	sink += pad[x & 7];
	return x + 3;
}

SELF_NOIPA int chain_b(struct self_sample *s, int x)
{
	int r = chain_c(s, x * 2);

	sink += r;
	return r + 1;
}

SELF_NOIPA int chain_a(struct self_sample *s, int x)
{
	int r = chain_b(s, x + 1);

	sink += r;
	return r * 2;
}

SELF_NOIPA int chain_recurse(struct self_sample *s, int depth)
{
	int r;

	if (depth == 0) {
		sample_here(s);
		return 1;
	}
	r = chain_recurse(s, depth - 1);
	sink += r;
	return r + 1;
}

SELF_NOIPA void chain_cb(void *arg)
{
	chain_c(arg, 5);
	sink++;
}

/* Spins without calls, so a signal interrupts this very function. */
SELF_NOIPA void chain_spin(volatile int *flag)
{
	while (!*flag)
		sink++;
}
