/* SPDX-License-Identifier: MIT */
/* Open-addressing hash map (see map.h for the slot layout). */
#include <errno.h>
#include <string.h>

#include "hash.h"
#include "map.h"

static uint32_t slot_tag(uint64_t hash)
{
	return (uint32_t)(hash >> 32) | 1u;
}

static bool key_eq(const uint64_t a[3], const uint64_t b[3])
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2];
}

void sp__map_init(struct sp__map *map)
{
	map->slots = NULL;
	map->cap = 0;
	map->count = 0;
}

void sp__map_fini(struct sp__map *map, const struct sp__mem *mem)
{
	sp__mem_free(mem, map->slots, map->cap * sizeof(*map->slots));
	sp__map_init(map);
}

void sp__map_clear(struct sp__map *map)
{
	if (map->slots)
		memset(map->slots, 0, map->cap * sizeof(*map->slots));
	map->count = 0;
}

uint64_t sp__map_hash(const uint64_t key[3])
{
	return sp__hash_words(key, 3);
}

bool sp__map_get(const struct sp__map *map, const uint64_t key[3],
		 uint64_t hash, uint32_t *value)
{
	uint32_t tag = slot_tag(hash);
	size_t mask = map->cap - 1;
	size_t i;

	if (map->cap == 0)
		return false;
	for (i = (size_t)hash & mask;; i = (i + 1) & mask) {
		const struct sp__map_slot *s = &map->slots[i];

		if (s->tag == 0)
			return false;
		if (s->tag == tag && key_eq(s->k, key)) {
			*value = s->value;
			return true;
		}
	}
}

static void insert_slot(struct sp__map_slot *slots, size_t cap,
			const struct sp__map_slot *src, uint64_t hash)
{
	size_t mask = cap - 1;
	size_t i = (size_t)hash & mask;

	while (slots[i].tag != 0)
		i = (i + 1) & mask;
	slots[i] = *src;
}

static int grow(struct sp__map *map, const struct sp__mem *mem, size_t want)
{
	struct sp__map_slot *slots;
	size_t cap = map->cap ? map->cap : 16;
	size_t i;

	while (cap / 2 < want) {
		if (cap > SIZE_MAX / 2 / sizeof(*slots))
			return -ENOMEM;
		cap *= 2;
	}
	if (cap == map->cap)
		return 0;
	slots = sp__mem_calloc(mem, cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	for (i = 0; i < map->cap; i++) {
		const struct sp__map_slot *s = &map->slots[i];

		if (s->tag != 0)
			insert_slot(slots, cap, s, sp__map_hash(s->k));
	}
	sp__mem_free(mem, map->slots, map->cap * sizeof(*map->slots));
	map->slots = slots;
	map->cap = cap;
	return 0;
}

int sp__map_reserve(struct sp__map *map, const struct sp__mem *mem, size_t n)
{
	if (n > SIZE_MAX - map->count)
		return -ENOMEM;
	return grow(map, mem, map->count + n);
}

int sp__map_put(struct sp__map *map, const struct sp__mem *mem,
		const uint64_t key[3], uint64_t hash, uint32_t value)
{
	struct sp__map_slot s;
	int err = sp__map_reserve(map, mem, 1);

	if (err)
		return err;
	memcpy(s.k, key, sizeof(s.k));
	s.value = value;
	s.tag = slot_tag(hash);
	insert_slot(map->slots, map->cap, &s, hash);
	map->count++;
	return 0;
}
