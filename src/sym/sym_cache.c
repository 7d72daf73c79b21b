/* SPDX-License-Identifier: MIT */
/* The shared result cache: an SPMC hash table read without locks, ck_epoch reclaim. */

/*
 * One writer (whoever holds sym->lock) and any number of readers.
 *
 *   cache->table --> [ header | slot{key, value} x cap ]   cap = 2^k
 *
 * Linear probing, load factor at most 1/2, no deletion while readers run:
 * a slot goes from empty (key 0) to {key, entry} exactly once, the writer
 * storing the value before publishing the key with a release store, so a
 * reader that sees the key (acquire) sees the value. Growth builds a new
 * table, publishes it with a release store of cache->table and hands the
 * old one to ck_epoch_call; it is freed once every reader that might have
 * loaded the old pointer has left its epoch section.
 *
 * Readers need a registered ck_epoch record, and a record may be used by
 * one thread at a time. A fixed pool of records is registered up front;
 * a reader claims one with an atomic exchange on its busy flag, starting
 * at a slot derived from its stack address so each thread tends to reuse
 * "its" record without contention. No read path allocates.
 *
 * The table knows entries only by their header (struct sp__sym_hdr: key
 * and allocation size), so one implementation stores resolved frames,
 * resolved stacks and the raw-frame index of a module-table symbolizer.
 * Keys are unique except in the raw-frame index, whose keys are hashes:
 * sp__sym_cache_find() probes past entries its caller does not want.
 */
#include <errno.h>
#include <string.h>

#include "atomic.h"
#include "hash.h"
#include "symbolizer_internal.h"

/*
 * An entry is at least 16-byte aligned (sp__mem_alloc), so the low bits of
 * its address carry its kind: a probe compares key and kind without
 * touching the entry.
 */
#define SLOT_KIND_MASK 0xfull

struct sp__sym_slot {
	uint64_t key;	/* 0 = empty; written once, release */
	uint64_t value; /* entry address | kind, written before key */
};

static struct sp__sym_hdr *slot_entry(uint64_t value)
{
	return (struct sp__sym_hdr *)(uintptr_t)(value & ~SLOT_KIND_MASK);
}

struct sp__sym_table {
	ck_epoch_entry_t epoch_entry; /* first: the deferred-free callback */
	const struct sp__mem *mem;
	size_t cap;
	struct sp__sym_slot slots[];
};

#define SP_SYM_TABLE_MIN 1024

static size_t table_bytes(size_t cap)
{
	return sizeof(struct sp__sym_table) + cap * sizeof(struct sp__sym_slot);
}

static struct sp__sym_table *table_new(const struct sp__mem *mem, size_t cap)
{
	struct sp__sym_table *t;

	t = sp__mem_calloc(mem, 1, table_bytes(cap));
	if (!t)
		return NULL;
	t->mem = mem;
	t->cap = cap;
	return t;
}

static void table_free(struct sp__sym_table *t)
{
	sp__mem_free(t->mem, t, table_bytes(t->cap));
}

static void entry_free(const struct sp__mem *mem, uint64_t value)
{
	struct sp__sym_hdr *h = slot_entry(value);

	sp__mem_free(mem, h, h->bytes);
}

/* ck_epoch callback: no reader can reach the old table any more. */
static void table_free_deferred(ck_epoch_entry_t *e)
{
	/* epoch_entry is the first member, so the addresses coincide. */
	table_free((struct sp__sym_table *)(void *)e);
}

static struct sp__sym_table *table_load(const struct sp__sym_cache *cache)
{
	/* Pairs with the release store in publish(): slots are initialized. */
	return atomic_load_explicit(&cache->table, memory_order_acquire);
}

static void publish(struct sp__sym_cache *cache, struct sp__sym_table *t)
{
	atomic_store_explicit(&cache->table, t, memory_order_release);
}

/* Writer-side insertion into a table that is not yet (or no longer) shared. */
static void slot_insert(struct sp__sym_table *t, uint64_t key, uint64_t value)
{
	size_t mask = t->cap - 1;
	size_t i = (size_t)sp__hash_mix(key) & mask;

	while (sp__load_relaxed_u64(&t->slots[i].key))
		i = (i + 1) & mask;
	sp__store_relaxed_u64(&t->slots[i].value, value);
	/* Publishes the value before the key; pairs with cache_get()'s acquire. */
	sp__store_release_u64(&t->slots[i].key, key);
}

int sp__sym_cache_init(struct sp__sym_cache *cache, const struct sp__mem *mem)
{
	struct sp__sym_table *t;
	size_t i;

	memset(cache, 0, sizeof(*cache));
	cache->mem = mem;
	t = table_new(mem, SP_SYM_TABLE_MIN);
	if (!t)
		return -ENOMEM;
	cache->readers =
		sp__mem_calloc(mem, SP_SYM_READERS, sizeof(*cache->readers));
	if (!cache->readers) {
		table_free(t);
		return -ENOMEM;
	}
	ck_epoch_init(&cache->epoch);
	ck_epoch_register(&cache->epoch, &cache->writer, NULL);
	for (i = 0; i < SP_SYM_READERS; i++)
		ck_epoch_register(&cache->epoch, &cache->readers[i].rec, NULL);
	publish(cache, t);
	return 0;
}

void sp__sym_cache_fini(struct sp__sym_cache *cache)
{
	struct sp__sym_table *t = table_load(cache);
	size_t i;

	if (!t)
		return;
	/* Runs the deferred frees of grown tables (no reader is left). */
	ck_epoch_barrier(&cache->writer);
	for (i = 0; i < t->cap; i++)
		if (t->slots[i].key)
			entry_free(cache->mem, t->slots[i].value);
	table_free(t);
	sp__mem_free(cache->mem, cache->readers,
		     SP_SYM_READERS * sizeof(*cache->readers));
	publish(cache, NULL);
}

struct sp__sym_reader *sp__sym_cache_enter(struct sp__sym_cache *cache)
{
	uintptr_t here = (uintptr_t)&cache;
	size_t start = (size_t)sp__hash_mix(here >> 16);
	size_t i;

	for (i = 0; i < SP_SYM_READERS; i++) {
		struct sp__sym_reader *r =
			&cache->readers[(start + i) % SP_SYM_READERS];

		if (atomic_load_explicit(&r->busy, memory_order_relaxed))
			continue;
		/* Acquire pairs with the release in leave(): one user a time. */
		if (atomic_exchange_explicit(&r->busy, 1,
					     memory_order_acquire) == 0) {
			ck_epoch_begin(&r->rec, NULL);
			return r;
		}
	}
	return NULL;
}

void sp__sym_cache_leave(struct sp__sym_reader *reader)
{
	ck_epoch_end(&reader->rec, NULL);
	/* Hands the record to the next reader after our section ended. */
	atomic_store_explicit(&reader->busy, 0, memory_order_release);
}

const struct sp__sym_hdr *
sp__sym_cache_find(const struct sp__sym_cache *cache, uint64_t key,
		   uint32_t kind,
		   bool (*match)(const struct sp__sym_hdr *, const void *),
		   const void *ctx)
{
	const struct sp__sym_table *t = table_load(cache);
	size_t mask = t->cap - 1;
	size_t i = (size_t)sp__hash_mix(key) & mask;

	for (;;) {
		/* Pairs with slot_insert()'s release store of the key. */
		uint64_t k = sp__load_acquire_u64(&t->slots[i].key), v;
		const struct sp__sym_hdr *h;

		if (!k)
			return NULL;
		if (k == key) {
			v = sp__load_relaxed_u64(&t->slots[i].value);
			h = slot_entry(v);
			if ((v & SLOT_KIND_MASK) == kind &&
			    (!match || match(h, ctx)))
				return h;
		}
		i = (i + 1) & mask;
	}
}

const struct sp__sym_hdr *sp__sym_cache_get(const struct sp__sym_cache *cache,
					    uint64_t key, uint32_t kind)
{
	return sp__sym_cache_find(cache, key, kind, NULL, NULL);
}

/* Copies every entry into a table twice as large and retires the old one. */
static int grow(struct sp__sym_cache *cache, struct sp__sym_table *old)
{
	struct sp__sym_table *t = table_new(cache->mem, old->cap * 2);
	size_t i;

	if (!t)
		return -ENOMEM;
	for (i = 0; i < old->cap; i++)
		if (old->slots[i].key)
			slot_insert(t, old->slots[i].key, old->slots[i].value);
	publish(cache, t);
	ck_epoch_call(&cache->writer, &old->epoch_entry, table_free_deferred);
	/* Frees earlier tables whose readers are gone; never waits. */
	ck_epoch_poll(&cache->writer);
	return 0;
}

int sp__sym_cache_put(struct sp__sym_cache *cache, struct sp__sym_hdr *entry)
{
	struct sp__sym_table *t = table_load(cache);
	int err;

	if ((cache->count + 1) * 2 > t->cap) {
		err = grow(cache, t);
		if (err)
			return err;
		t = table_load(cache);
	}
	slot_insert(t, entry->key,
		    (uint64_t)(uintptr_t)entry |
			    (entry->kind & SLOT_KIND_MASK));
	cache->count++;
	return 0;
}

static bool pid_listed(const int32_t *pids, size_t n, int32_t pid)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pids[mid] == pid)
			return true;
		if (pids[mid] < pid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

long sp__sym_cache_drop_pids(struct sp__sym_cache *cache, const int32_t *pids,
			     size_t n)
{
	struct sp__sym_table *old = table_load(cache);
	struct sp__sym_table *t;
	long dropped = 0;
	size_t i;

	if (!n && pids)
		return 0;
	t = table_new(cache->mem, old->cap);
	if (!t)
		return -ENOMEM;
	for (i = 0; i < old->cap; i++) {
		uint64_t key = old->slots[i].key;

		if (!key)
			continue;
		if (!pids || pid_listed(pids, n, sp__sym_key_pid(key))) {
			entry_free(cache->mem, old->slots[i].value);
			dropped++;
		} else {
			slot_insert(t, key, old->slots[i].value);
		}
	}
	cache->count -= (size_t)dropped;
	publish(cache, t);
	/* Single owner: no reader can hold the old table. */
	ck_epoch_barrier(&cache->writer);
	table_free(old);
	return dropped;
}
