/* SPDX-License-Identifier: MIT */
/* Unit test of the intern hash map against a trivially correct reference. */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

#include "check.h"
#include "map.h"
#include "test_alloc.h"

/*
 * Keys are a pure function of an index, so the reference model is just a
 * "present" flag and a value per index. Key families 1, 2 and 3 each
 * differ from family 0 in exactly one of the three words, so a map that
 * compared only the tag, or only some key words, would return the wrong
 * value. Inserts happen in a shuffled order, and everything inserted so
 * far is re-checked each time the table grows.
 */
#define NKEYS 30000
#define NFAMILIES 4

struct reference {
	bool present[NKEYS];
	uint32_t value[NKEYS];
};

static void make_key(size_t i, uint64_t key[3])
{
	size_t idx = i / NFAMILIES;

	key[0] = idx * 0x9e3779b97f4a7c15ull;
	key[1] = idx ^ 0x5555;
	key[2] = 7;
	/* Families 1, 2 and 3 each change one word of family 0's key. */
	if (i % NFAMILIES == 1)
		key[2] = 8;
	else if (i % NFAMILIES == 2)
		key[0] ^= 1;
	else if (i % NFAMILIES == 3)
		key[1] ^= 2;
}

static bool map_lookup(const struct sp__map *map, size_t i, uint32_t *value)
{
	uint64_t key[3];

	make_key(i, key);
	return sp__map_get(map, key, sp__map_hash(key), value);
}

static int map_insert(struct sp__map *map, const struct sp__mem *mem, size_t i,
		      uint32_t value)
{
	uint64_t key[3];

	make_key(i, key);
	return sp__map_put(map, mem, key, sp__map_hash(key), value);
}

static void check_against(const struct sp__map *map,
			  const struct reference *ref, size_t limit)
{
	size_t i, count = 0;

	for (i = 0; i < limit; i++) {
		uint32_t v = 0xabababab;
		bool hit = map_lookup(map, i, &v);

		CHECK_EQ(hit, ref->present[i]);
		if (hit) {
			CHECK_EQ(v, ref->value[i]);
			count++;
		} else {
			CHECK_EQ(v,
				 0xabababab); /* a miss leaves *value alone */
		}
	}
	if (limit == NKEYS)
		CHECK_EQ(map->count, count);
}

/*
 * Looks up each sibling of a present key (same index, other family) with
 * the present key's hash, so the probe lands on a slot whose tag matches:
 * only a comparison of all three key words can reject it.
 */
static void check_forged_hash(const struct sp__map *map,
			      const struct reference *ref)
{
	size_t i, f, misses = 0;

	for (i = 0; i < NKEYS; i++) {
		uint64_t key[3], other[3];
		uint64_t hash;

		if (!ref->present[i])
			continue;
		make_key(i, key);
		hash = sp__map_hash(key);
		for (f = 0; f < NFAMILIES; f++) {
			size_t j = i - i % NFAMILIES + f;
			uint32_t v;

			if (j == i || j >= NKEYS)
				continue;
			make_key(j, other);
			CHECK(!sp__map_get(map, other, hash, &v));
			misses++;
		}
	}
	CHECK(misses > 0);
}

static void check_shape(const struct sp__map *map)
{
	CHECK(map->cap == 0 || (map->cap & (map->cap - 1)) == 0);
	CHECK(map->count <= map->cap / 2);
}

/* Fisher-Yates with a fixed LCG, so the order is reproducible. */
static void shuffle(size_t *order, size_t n)
{
	uint64_t state = 12345;
	size_t i;

	for (i = 0; i < n; i++)
		order[i] = i;
	for (i = n - 1; i > 0; i--) {
		size_t j, tmp;

		state = state * 6364136223846793005ull + 1442695040888963407ull;
		j = (size_t)(state >> 33) % (i + 1);
		tmp = order[i];
		order[i] = order[j];
		order[j] = tmp;
	}
}

static void test_insert_get_grow(struct sp__map *map, const struct sp__mem *mem,
				 struct reference *ref)
{
	static size_t order[NKEYS];
	size_t n, grows = 0, cap = map->cap;

	shuffle(order, NKEYS);
	for (n = 0; n < NKEYS; n++) {
		size_t i = order[n];
		/* Cover both extremes of the value range too. */
		uint32_t value = n == 0 ? 0 : n == 1 ? UINT32_MAX : (uint32_t)i;

		CHECK_OK(map_insert(map, mem, i, value));
		ref->present[i] = true;
		ref->value[i] = value;
		CHECK_EQ(map->count, n + 1);
		check_shape(map);
		if (map->cap != cap) {
			check_against(map, ref, NKEYS);
			cap = map->cap;
			grows++;
		}
	}
	CHECK(grows >= 8); /* 16 slots up to 65536 */
	check_against(map, ref, NKEYS);
	check_forged_hash(map, ref);
}

static void test_clear(struct sp__map *map, const struct sp__mem *mem,
		       struct reference *ref)
{
	size_t cap = map->cap, i;

	sp__map_clear(map);
	CHECK_EQ(map->count, 0);
	CHECK_EQ(map->cap, cap);
	memset(ref, 0, sizeof(*ref));
	check_against(map, ref, NKEYS);
	/* Re-insert every fifth key with new values: no stale hits. */
	for (i = 0; i < NKEYS; i += 5) {
		CHECK_OK(map_insert(map, mem, i, (uint32_t)(i * 3 + 1)));
		ref->present[i] = true;
		ref->value[i] = (uint32_t)(i * 3 + 1);
	}
	CHECK_EQ(map->cap, cap); /* clear kept the storage */
	check_against(map, ref, NKEYS);
}

/* After reserve(n), n puts succeed even when the allocator refuses all. */
static void test_reserve_then_put(struct test_alloc *ta,
				  const struct sp__mem *mem)
{
	struct sp__map map;
	size_t i, cap;
	int err = 0;

	sp__map_init(&map);
	CHECK_OK(sp__map_reserve(&map, mem, 1000));
	cap = map.cap;
	CHECK(cap / 2 >= 1000);
	ta->fail_after = 0;
	for (i = 0; i < 1000; i++)
		CHECK_OK(map_insert(&map, mem, i, (uint32_t)i));
	CHECK_EQ(ta->failures, 0);
	/* Keep going until the table would have to grow: that put fails. */
	for (; i < cap; i++) {
		err = map_insert(&map, mem, i, (uint32_t)i);
		if (err)
			break;
	}
	CHECK_EQ_INT(err, -ENOMEM);
	CHECK_EQ(map.count, cap / 2);
	CHECK_EQ(map.cap, cap);
	CHECK(!map_lookup(&map, i, &(uint32_t){ 0 }));
	for (i = 0; i < cap / 2; i++) {
		uint32_t v = 0;

		CHECK(map_lookup(&map, i, &v));
		CHECK_EQ(v, i);
	}
	/* Reserving more also fails cleanly. */
	CHECK_EQ_INT(sp__map_reserve(&map, mem, 1), -ENOMEM);
	CHECK_EQ(map.cap, cap);
	ta->fail_after = -1;
	CHECK_OK(map_insert(&map, mem, cap / 2, 42));
	CHECK(map.cap > cap);
	sp__map_fini(&map, mem);
	CHECK_EQ(map.cap, 0);
	CHECK(map.slots == NULL);
}

/* A failed growth must leave slots, capacity, count and contents alone. */
static void test_failing_allocator(struct test_alloc *ta,
				   const struct sp__mem *mem)
{
	struct sp__map map;
	struct sp__map_slot *slots;
	size_t i, cap;

	sp__map_init(&map);
	ta->fail_after = 0;
	CHECK_EQ_INT(map_insert(&map, mem, 0, 1), -ENOMEM);
	CHECK(map.slots == NULL);
	CHECK_EQ(map.cap, 0);
	CHECK_EQ(map.count, 0);
	CHECK(!map_lookup(&map, 0, &(uint32_t){ 0 }));

	ta->fail_after = -1;
	for (i = 0; i < 8; i++) /* fills 16 slots to the 1/2 limit */
		CHECK_OK(map_insert(&map, mem, i, (uint32_t)(100 + i)));
	slots = map.slots;
	cap = map.cap;
	ta->fail_after = 0;
	CHECK_EQ_INT(map_insert(&map, mem, 8, 108), -ENOMEM);
	CHECK(map.slots == slots);
	CHECK_EQ(map.cap, cap);
	CHECK_EQ(map.count, 8);
	for (i = 0; i < 8; i++) {
		uint32_t v = 0;

		CHECK(map_lookup(&map, i, &v));
		CHECK_EQ(v, 100 + i);
	}
	CHECK(!map_lookup(&map, 8, &(uint32_t){ 0 }));
	/* A request whose size overflows is refused without allocating. */
	CHECK_EQ_INT(sp__map_reserve(&map, mem, SIZE_MAX), -ENOMEM);
	CHECK_EQ_INT(sp__map_reserve(&map, mem, SIZE_MAX / 2), -ENOMEM);
	CHECK_EQ(map.cap, cap);
	ta->fail_after = -1;
	sp__map_fini(&map, mem);
}

int main(void)
{
	static struct reference ref;
	struct test_alloc ta;
	struct sp__mem mem;
	struct sp__map map;
	uint32_t v = 0;

	test_alloc_init(&ta, &mem);
	sp__map_init(&map);
	CHECK(!map_lookup(&map, 0, &v)); /* empty, never allocated */
	sp__map_clear(&map);
	CHECK_OK(sp__map_reserve(&map, &mem, 0));

	test_insert_get_grow(&map, &mem, &ref);
	test_clear(&map, &mem, &ref);
	sp__map_fini(&map, &mem);
	CHECK_EQ(ta.live_blocks, 0);

	test_reserve_then_put(&ta, &mem);
	test_failing_allocator(&ta, &mem);
	CHECK_EQ(ta.live_blocks, 0);
	CHECK_EQ(ta.live_bytes, 0);
	return T_EXIT_PASS;
}
