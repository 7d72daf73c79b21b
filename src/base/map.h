/* SPDX-License-Identifier: MIT */
/* Open-addressing hash map from three 64-bit key words to a 32-bit value. */
#ifndef SP_BASE_MAP_H
#define SP_BASE_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mem.h"

/*
 * The writer's intern tables (frames, stack nodes, threads) all map small
 * fixed keys to dense ids, so one layout serves them all:
 *
 *   slot = { k0, k1, k2 : u64, value : u32, tag : u32 }   (32 bytes)
 *
 * tag is 0 for an empty slot, otherwise the high 32 bits of the hash with
 * bit 0 forced to 1, which rejects most mismatches without touching the
 * keys. Linear probing, power-of-two capacity, load factor at most 1/2.
 * Single-owner: no internal locking.
 */
struct sp__map_slot {
	uint64_t k[3];
	uint32_t value;
	uint32_t tag;
};

struct sp__map {
	struct sp__map_slot *slots;
	size_t cap; /* power of two, or 0 before the first insertion */
	size_t count;
};

void sp__map_init(struct sp__map *map);
void sp__map_fini(struct sp__map *map, const struct sp__mem *mem);

/* Removes every entry, keeping the storage. */
void sp__map_clear(struct sp__map *map);

/* Hash of a key, to pass to get/put (computed once per lookup pair). */
uint64_t sp__map_hash(const uint64_t key[3]);

/* Looks up @key; on a hit stores its value and returns true. */
bool sp__map_get(const struct sp__map *map, const uint64_t key[3],
		 uint64_t hash, uint32_t *value);

/*
 * Ensures @n more insertions will not need to grow the table.
 * Returns 0 or -ENOMEM (the map is unchanged on failure).
 */
int sp__map_reserve(struct sp__map *map, const struct sp__mem *mem, size_t n);

/*
 * Inserts @key (which must not be present). Returns 0 or -ENOMEM; on
 * failure the map is unchanged.
 */
int sp__map_put(struct sp__map *map, const struct sp__mem *mem,
		const uint64_t key[3], uint64_t hash, uint32_t value);

#endif /* SP_BASE_MAP_H */
