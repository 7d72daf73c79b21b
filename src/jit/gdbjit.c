/* SPDX-License-Identifier: MIT */
/* Walking a target's GDB JIT entry list and reading its objects, bounded. */
#include <errno.h>
#include <string.h>

#include <stackpulse/error.h>

#include "gdbjit.h"
#include "map.h"

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

int sp__gdbjit_read_desc(const struct sp__gdbjit_ops *ops, uint64_t addr,
			 struct sp__gdbjit_desc *out)
{
	uint8_t b[SP__GDBJIT_DESC_SIZE];
	int err = ops->read(ops->ctx, addr, b, sizeof(b));

	if (err)
		return err;
	out->version = rd32(b);
	out->action = rd32(b + 4);
	out->relevant = rd64(b + 8);
	out->first = rd64(b + 16);
	return out->version == 1 ? 0 : SP_ECORRUPT;
}

static int read_entry(const struct sp__gdbjit_ops *ops, uint64_t addr,
		      struct sp__gdbjit_entry *e)
{
	uint8_t b[SP__GDBJIT_ENTRY_SIZE];
	int err = ops->read(ops->ctx, addr, b, sizeof(b));

	if (err)
		return err;
	e->addr = addr;
	e->next = rd64(b);
	e->symfile = rd64(b + 16);
	e->size = rd64(b + 24);
	return 0;
}

/* Marks @addr visited; true when it was already (a loop). */
static int visit(struct sp__map *seen, const struct sp__mem *mem, uint64_t addr,
		 bool *again)
{
	uint64_t key[3] = { addr, 0, 0 };
	uint64_t h = sp__map_hash(key);

	*again = sp__map_get(seen, key, h, &(uint32_t){ 0 });
	return *again ? 0 : sp__map_put(seen, mem, key, h, 0);
}

/* One step of the walk: 1 = go on from e->next, 0 = end, < 0 = stop. */
static int walk_step(const struct sp__gdbjit_ops *ops, uint64_t at,
		     const struct sp__mem *mem, struct sp__map *seen,
		     struct sp__vec *out, struct sp__gdbjit_stats *st,
		     struct sp__gdbjit_entry *e)
{
	bool again;
	int err;

	if (at == 0)
		return 0;
	err = visit(seen, mem, at, &again);
	if (err)
		return err;
	if (again) {
		st->loops++;
		return -ELOOP;
	}
	if (seen->count > SP__GDBJIT_MAX_OBJECTS) {
		st->too_many++;
		return -E2BIG;
	}
	err = read_entry(ops, at, e);
	if (err) {
		st->read_errors++;
		return err;
	}
	if (e->symfile == 0 || e->size == 0 ||
	    e->size > SP__GDBJIT_MAX_OBJECT ||
	    e->symfile + e->size < e->symfile) {
		st->bad_sizes++;
		return 1;
	}
	return sp__vec_push(out, mem, e) ? -ENOMEM : 1;
}

int sp__gdbjit_walk(const struct sp__gdbjit_ops *ops,
		    const struct sp__gdbjit_desc *d, const struct sp__mem *mem,
		    struct sp__vec *out, struct sp__gdbjit_stats *st)
{
	struct sp__gdbjit_entry e;
	struct sp__map seen;
	uint64_t at = d->first;
	int r;

	st->walks++;
	out->len = 0;
	sp__map_init(&seen);
	while ((r = walk_step(ops, at, mem, &seen, out, st, &e)) > 0)
		at = e.next;
	sp__map_fini(&seen, mem);
	return r < 0 ? r : (int)out->len;
}

int sp__gdbjit_read_object(const struct sp__gdbjit_ops *ops,
			   const struct sp__gdbjit_entry *e,
			   const struct sp__mem *mem, uint64_t *budget,
			   uint8_t **buf, struct sp__gdbjit_stats *st)
{
	struct sp__gdbjit_entry again;
	uint8_t *b;
	int err;

	if (e->size > *budget) {
		st->over_total++;
		return -EFBIG;
	}
	b = sp__mem_alloc(mem, (size_t)e->size);
	if (!b)
		return -ENOMEM;
	err = ops->read(ops->ctx, e->symfile, b, (size_t)e->size);
	if (!err)
		err = read_entry(ops, e->addr, &again);
	if (!err && (again.symfile != e->symfile || again.size != e->size ||
		     again.next != e->next)) {
		st->raced++;
		err = -EAGAIN;
	} else if (err) {
		st->read_errors++;
	}
	if (err) {
		sp__mem_free(mem, b, (size_t)e->size);
		return err;
	}
	*budget -= e->size;
	st->objects_read++;
	st->bytes_read += e->size;
	*buf = b;
	return 0;
}
