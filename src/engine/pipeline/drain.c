/* SPDX-License-Identifier: MIT */
/* Turning the records of one perf ring into queued, ordered records. */

/*
 * Only records that carry state, samples or counts are kept (THROTTLE
 * and UNTHROTTLE for the summary); the like of ITRACE are dropped here. A sample the parser rejects is counted as seen
 * but unusable. Every record read takes the next position of its ring's
 * sequence, which breaks timestamp ties deterministically.
 */
#include <string.h>

#include <linux/perf_event.h>

#include "drain.h"
#include "perf_record.h"
#include "qsample.h"

/*
 * The merge item of the record just read: ordered by @time, ties broken
 * by the ring's read order; nothing held in the ring unless the caller
 * sets @pos. Per record, so inline.
 */
static inline void item_init(struct sp__merge_item *it,
			     const struct sp__drain *d, uint64_t time,
			     uint32_t type, int32_t pid)
{
	memset(it, 0, sizeof(*it));
	it->time = time;
	it->key = sp__merge_key(d->ring_index, *d->ring_seq);
	it->type = type;
	it->pid = pid;
	it->pos = SP__NO_HOLD;
}

static int push_sample(struct sp__drain *d, const void *r, size_t len,
		       uint64_t pos)
{
	struct sp__perf_sample ps;
	struct sp__qsample q;
	struct sp__span spans[3];
	struct sp__merge_item it;
	uint64_t sp;

	if (sp__perf_parse_sample(r, len, d->sample_type, SP__PERF_REGS_MASK,
				  &ps)) {
		d->unusable++;
		return 0;
	}
	memset(&q, 0, sizeof(q));
	q.ip = ps.ip;
	q.time = ps.time;
	q.pid = ps.pid;
	q.tid = ps.tid;
	q.cpu = ps.cpu;
	q.misc = ps.misc | (ps.period == 1 ? SP__QSAMPLE_UNIT_PERIOD : 0);
	q.nr_ips = ps.nr_ips;
	q.stack_len = ps.stack_len;
	q.regs = ps.regs;
	if (ps.regs.abi == SP_REGS_ABI_64 &&
	    !sp_regs_get(&ps.regs, SP_REG_PC, &q.user_pc) &&
	    !sp_regs_get(&ps.regs, SP_REG_SP, &sp))
		q.misc |= SP__QSAMPLE_USER_PC;
	spans[0] = (struct sp__span){ &q, sizeof(q) };
	spans[1] = (struct sp__span){ ps.ips, ps.nr_ips * 8 };
	spans[2] = (struct sp__span){ ps.stack, ps.stack_len };
	item_init(&it, d, ps.time, PERF_RECORD_SAMPLE, ps.pid);
	/* A timestamp far ahead would pin the ring: such a sample is copied. */
	if (d->in_place && r != d->scratch && ps.time <= d->hold_until) {
		it.pos = pos;
		q.ext_ips = ps.ips;
		q.ext_stack = ps.stack;
		return d->push(d->ctx, &it, spans, 1);
	}
	return d->push(d->ctx, &it, spans, 3);
}

static int on_record_at(void *ctx, const struct sp__ring *ring, const void *r,
			size_t len, uint64_t pos)
{
	struct sp__drain *d = ctx;
	const struct perf_event_header *h = r;
	struct sp__span span = { r, len };
	struct sp__merge_item it;
	struct sp__perf_id id;
	int err;

	(void)ring;
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		err = push_sample(d, r, len, pos);
		break;
	case PERF_RECORD_MMAP2:
	case PERF_RECORD_COMM:
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
	case PERF_RECORD_LOST:
	case PERF_RECORD_LOST_SAMPLES:
	case PERF_RECORD_SWITCH:
	case PERF_RECORD_SWITCH_CPU_WIDE:
	case PERF_RECORD_THROTTLE:
	case PERF_RECORD_UNTHROTTLE:
		if (sp__perf_parse_id(r, len, d->sample_type, &id)) {
			err = 0; /* unusable: dropped */
			break;
		}
		/* Copied whole: the ring is not needed (no @pos). */
		item_init(&it, d, id.time, h->type, id.pid);
		err = d->push(d->ctx, &it, &span, 1);
		break;
	default:
		err = 0; /* the others carry nothing we use */
		break;
	}
	if (err) {
		d->err = err;
		return err;
	}
	(*d->ring_seq)++;
	return 0;
}

static int on_record_tapped_at(void *ctx, const struct sp__ring *ring,
			       const void *r, size_t len, uint64_t pos)
{
	struct sp__drain *d = ctx;
	int err = on_record_at(ctx, ring, r, len, pos);

	if (!err)
		d->tap(d->tap_ctx, d->ring_index, r, len);
	return err;
}

/*
 * Always a scan, never a read that consumes: records before read_pos may
 * still be held (a reader copying a half-held ring has samples of
 * earlier drains in it), and a read would start again from data_tail,
 * queue them twice and give their space back to the kernel.
 */
long sp__drain_ring(struct sp__drain *d, struct sp__ring *ring, void *scratch)
{
	d->err = 0;
	d->ring = ring;
	d->scratch = scratch;
	return sp__ring_scan(ring, scratch,
			     d->tap ? on_record_tapped_at : on_record_at, d);
}
