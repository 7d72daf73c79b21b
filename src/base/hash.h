/* SPDX-License-Identifier: MIT */
/* Fast non-cryptographic hashing of 64-bit words and byte strings. */
#ifndef SP_BASE_HASH_H
#define SP_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

/*
 * Intern tables hash a few 64-bit words per lookup, millions of times a
 * second, so the mixer is a multiply-xorshift (the "moremur"/splitmix
 * finalizer family): two multiplies per word, good avalanche.
 */
static inline uint64_t sp__hash_mix(uint64_t h)
{
	h ^= h >> 32;
	h *= 0xd6e8feb86659fd93ull;
	h ^= h >> 32;
	h *= 0xd6e8feb86659fd93ull;
	h ^= h >> 32;
	return h;
}

static inline uint64_t sp__hash_words(const uint64_t *w, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
	size_t i;

	for (i = 0; i < n; i++)
		h = sp__hash_mix(h ^ w[i]) + 0x9e3779b97f4a7c15ull;
	return h;
}

/* Hashes @len bytes (FNV-1a folded through the mixer). */
uint64_t sp__hash_bytes(const void *data, size_t len);

#endif /* SP_BASE_HASH_H */
