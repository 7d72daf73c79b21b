/* SPDX-License-Identifier: MIT */
/* Exporters: a u64 -> u32 open-addressing multimap and hashing. */

/*
 * Linear probing over two parallel arrays; an empty slot holds the value
 * UINT32_MAX (no table stores that many entries). Duplicate keys are
 * allowed so content-keyed interning can keep entries whose 64-bit hashes
 * collide and tell them apart by comparing contents. The table doubles at
 * half load, so probe runs stay short and a miss ends at an empty slot.
 */
#include <errno.h>
#include <string.h>

#include "export_internal.h"

#define XMAP_EMPTY UINT32_MAX

uint64_t sp__xhash_u64(uint64_t h)
{
	/* The splitmix64 finalizer: cheap with full avalanche. */
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	h ^= h >> 31;
	return h;
}

uint64_t sp__xhash(const void *data, size_t len, uint64_t seed)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ull ^ seed;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return sp__xhash_u64(h ^ len);
}

static int xmap_grow(struct sp__xmap *map, const struct sp__xmem *mem)
{
	size_t ncap = map->cap ? map->cap * 2 : 64, i;
	struct sp__xmap n = { .cap = ncap, .len = 0 };

	n.keys = sp__xmem_alloc(mem, ncap * sizeof(*n.keys));
	n.vals = sp__xmem_alloc(mem, ncap * sizeof(*n.vals));
	if (!n.keys || !n.vals) {
		sp__xmem_free(mem, n.keys, ncap * sizeof(*n.keys));
		sp__xmem_free(mem, n.vals, ncap * sizeof(*n.vals));
		return -ENOMEM;
	}
	memset(n.vals, 0xff, ncap * sizeof(*n.vals));
	for (i = 0; i < map->cap; i++) {
		if (map->vals[i] == XMAP_EMPTY)
			continue;
		/* Cannot fail: n has room for every old entry. */
		sp__xmap_put(&n, mem, map->keys[i], map->vals[i]);
	}
	sp__xmap_fini(map, mem);
	*map = n;
	return 0;
}

int sp__xmap_put(struct sp__xmap *map, const struct sp__xmem *mem, uint64_t key,
		 uint32_t val)
{
	size_t mask, i;
	int err;

	if ((map->len + 1) * 2 > map->cap) {
		err = xmap_grow(map, mem);
		if (err)
			return err;
	}
	mask = map->cap - 1;
	i = sp__xhash_u64(key) & mask;
	while (map->vals[i] != XMAP_EMPTY)
		i = (i + 1) & mask;
	map->keys[i] = key;
	map->vals[i] = val;
	map->len++;
	return 0;
}

bool sp__xmap_next(const struct sp__xmap *map, uint64_t key, size_t *pos,
		   uint32_t *val)
{
	size_t mask, i;

	if (!map->cap)
		return false;
	mask = map->cap - 1;
	/* *pos counts probes already made from the home slot. */
	for (i = (sp__xhash_u64(key) + *pos) & mask; map->vals[i] != XMAP_EMPTY;
	     i = (i + 1) & mask) {
		(*pos)++;
		if (map->keys[i] == key) {
			*val = map->vals[i];
			return true;
		}
	}
	return false;
}

uint32_t sp__xmap_get(const struct sp__xmap *map, uint64_t key)
{
	size_t mask = map->cap - 1, i;

	/* Timeline formats look up every sample's stack: keep this lean. */
	if (!map->cap)
		return XMAP_EMPTY;
	for (i = sp__xhash_u64(key) & mask; map->vals[i] != XMAP_EMPTY;
	     i = (i + 1) & mask)
		if (map->keys[i] == key)
			return map->vals[i];
	return XMAP_EMPTY;
}

void sp__xmap_fini(struct sp__xmap *map, const struct sp__xmem *mem)
{
	sp__xmem_free(mem, map->keys, map->cap * sizeof(*map->keys));
	sp__xmem_free(mem, map->vals, map->cap * sizeof(*map->vals));
	memset(map, 0, sizeof(*map));
}
