/* SPDX-License-Identifier: MIT */
/* Parsing perf ring records (untrusted bytes) into plain structs. */

/*
 * A cursor walks the record; each read checks the bytes left first, so a
 * record whose size disagrees with its contents is rejected as corrupt
 * instead of being read past its end. Field order follows
 * perf_event_open(2) for the sample_type bits the recorder sets.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>

#include <linux/perf_event.h>

#include <stackpulse/error.h>

#include "perf_record.h"

struct cur {
	const unsigned char *p;
	size_t left;
};

static int take(struct cur *c, void *dst, size_t n)
{
	if (c->left < n)
		return SP_ECORRUPT;
	if (dst)
		memcpy(dst, c->p, n);
	c->p += n;
	c->left -= n;
	return 0;
}

static int take_u64(struct cur *c, uint64_t *v)
{
	return take(c, v, sizeof(*v));
}

/*
 * The recorder always samples SP__PERF_REGS_MASK: its copy plan (which
 * sampled word goes to which DWARF register, the valid bits, the word
 * count) is built once, so a sample costs a straight copy, not a walk of
 * the mask's bits (and no popcount library call without -mpopcnt).
 */
struct regs_plan {
	uint64_t valid;
	unsigned n;	/* words in the record */
	unsigned ncopy; /* of them, mapped to a DWARF register */
	uint8_t src[64];
	uint8_t dst[64];
};

/* Which word of a record sampled with @mask goes to which DWARF register. */
static void plan_make(uint64_t mask, struct regs_plan *pl)
{
	unsigned bit, i = 0;

	memset(pl, 0, sizeof(*pl));
	/* The set bits only, lowest first (perf's order). */
	for (; mask; mask &= mask - 1, i++) {
		bit = (unsigned)__builtin_ctzll(mask);
		if (bit < SP__PERF_REGS_N && sp__perf_regs_dwarf[bit] >= 0) {
			pl->src[pl->ncopy] = (uint8_t)i;
			pl->dst[pl->ncopy] = (uint8_t)sp__perf_regs_dwarf[bit];
			pl->valid |= 1ull << sp__perf_regs_dwarf[bit];
			pl->ncopy++;
		}
	}
	pl->n = i;
}

static struct regs_plan fixed_plan;
static pthread_once_t fixed_once = PTHREAD_ONCE_INIT;

static void plan_build(void)
{
	plan_make(SP__PERF_REGS_MASK, &fixed_plan);
}

static const struct regs_plan *plan_fixed(void)
{
	pthread_once(&fixed_once, plan_build);
	return &fixed_plan;
}

/* Set bits of @mask without a library call. */
static unsigned mask_words(uint64_t mask)
{
	unsigned n = 0;

	if (mask == SP__PERF_REGS_MASK)
		return plan_fixed()->n;
	for (; mask; mask &= mask - 1)
		n++;
	return n;
}

void sp__perf_regs_to_dwarf(const uint64_t *perf_regs, uint64_t mask,
			    uint32_t abi, struct sp_regs *out)
{
	const unsigned char *src = (const unsigned char *)perf_regs;
	const struct regs_plan *pl;
	struct regs_plan other;
	unsigned i;

	memset(out, 0, sizeof(*out));
	out->arch = SP__PERF_REGS_ARCH;
	out->abi = abi;
	if (abi == SP_REGS_ABI_NONE)
		return;
	if (mask == SP__PERF_REGS_MASK) {
		pl = plan_fixed();
	} else {
		/* Another mask (tests): planned for this record alone. */
		plan_make(mask, &other);
		pl = &other;
	}
	for (i = 0; i < pl->ncopy; i++)
		memcpy(&out->r[pl->dst[i]], src + 8u * pl->src[i], 8);
	out->valid = pl->valid;
}

static int sample_head(struct cur *c, uint64_t st, struct sp__perf_sample *s)
{
	uint64_t v;
	int err = 0;

	if (st & PERF_SAMPLE_IDENTIFIER)
		err |= take_u64(c, &s->id);
	if (st & PERF_SAMPLE_IP)
		err |= take_u64(c, &s->ip);
	if (st & PERF_SAMPLE_TID) {
		err |= take(c, &s->pid, 4);
		err |= take(c, &s->tid, 4);
	}
	if (st & PERF_SAMPLE_TIME)
		err |= take_u64(c, &s->time);
	if (st & PERF_SAMPLE_ID)
		err |= take_u64(c, &s->id);
	if (st & PERF_SAMPLE_STREAM_ID)
		err |= take_u64(c, &v);
	if (st & PERF_SAMPLE_CPU) {
		err |= take(c, &s->cpu, 4);
		err |= take(c, NULL, 4);
	}
	if (st & PERF_SAMPLE_PERIOD)
		err |= take_u64(c, &s->period);
	return err ? SP_ECORRUPT : 0;
}

static int sample_callchain(struct cur *c, struct sp__perf_sample *s)
{
	uint64_t nr;

	if (take_u64(c, &nr) || nr > c->left / 8)
		return SP_ECORRUPT;
	s->ips = (const uint64_t *)(const void *)c->p;
	s->nr_ips = nr;
	return take(c, NULL, nr * 8);
}

static int sample_regs(struct cur *c, uint64_t mask, struct sp__perf_sample *s)
{
	uint64_t abi, n = mask_words(mask);
	const void *regs;

	if (take_u64(c, &abi))
		return SP_ECORRUPT;
	if (abi == PERF_SAMPLE_REGS_ABI_NONE) {
		sp__perf_regs_to_dwarf(NULL, mask, SP_REGS_ABI_NONE, &s->regs);
		return 0;
	}
	if (abi > PERF_SAMPLE_REGS_ABI_64 || n > c->left / 8)
		return SP_ECORRUPT;
	regs = c->p;
	sp__perf_regs_to_dwarf(regs, mask, (uint32_t)abi, &s->regs);
	return take(c, NULL, n * 8);
}

static int sample_stack(struct cur *c, struct sp__perf_sample *s)
{
	uint64_t size, dyn;

	if (take_u64(c, &size))
		return SP_ECORRUPT;
	if (size == 0)
		return 0; /* no data and no dyn_size (kernel threads) */
	if (size > c->left)
		return SP_ECORRUPT;
	s->stack = c->p;
	take(c, NULL, size);
	if (take_u64(c, &dyn) || dyn > size)
		return SP_ECORRUPT;
	s->stack_len = dyn;
	return 0;
}

int sp__perf_parse_sample(const void *rec, size_t len, uint64_t sample_type,
			  uint64_t regs_mask, struct sp__perf_sample *out)
{
	const struct perf_event_header *h = rec;
	struct cur c;
	int err;

	memset(out, 0, sizeof(*out));
	if (len < sizeof(*h) || h->size > len || h->size < sizeof(*h))
		return SP_ECORRUPT;
	out->misc = h->misc;
	c.p = (const unsigned char *)rec + sizeof(*h);
	c.left = h->size - sizeof(*h);
	err = sample_head(&c, sample_type, out);
	if (!err && (sample_type & PERF_SAMPLE_CALLCHAIN))
		err = sample_callchain(&c, out);
	if (!err && (sample_type & PERF_SAMPLE_REGS_USER))
		err = sample_regs(&c, regs_mask, out);
	if (!err && (sample_type & PERF_SAMPLE_STACK_USER))
		err = sample_stack(&c, out);
	return err;
}

size_t sp__perf_id_size(uint64_t st)
{
	size_t n = 0;

	n += (st & PERF_SAMPLE_TID) ? 8 : 0;
	n += (st & PERF_SAMPLE_TIME) ? 8 : 0;
	n += (st & PERF_SAMPLE_ID) ? 8 : 0;
	n += (st & PERF_SAMPLE_STREAM_ID) ? 8 : 0;
	n += (st & PERF_SAMPLE_CPU) ? 8 : 0;
	n += (st & PERF_SAMPLE_IDENTIFIER) ? 8 : 0;
	return n;
}

int sp__perf_parse_id(const void *rec, size_t len, uint64_t st,
		      struct sp__perf_id *out)
{
	const struct perf_event_header *h = rec;
	size_t n = sp__perf_id_size(st);
	struct cur c;
	int err = 0;

	memset(out, 0, sizeof(*out));
	if (len < sizeof(*h) || h->size > len || h->size < sizeof(*h) + n)
		return SP_ECORRUPT;
	c.p = (const unsigned char *)rec + h->size - n;
	c.left = n;
	if (st & PERF_SAMPLE_TID) {
		err |= take(&c, &out->pid, 4);
		err |= take(&c, &out->tid, 4);
	}
	if (st & PERF_SAMPLE_TIME)
		err |= take_u64(&c, &out->time);
	if (st & PERF_SAMPLE_ID)
		err |= take_u64(&c, &out->id);
	if (st & PERF_SAMPLE_STREAM_ID)
		err |= take(&c, NULL, 8);
	if (st & PERF_SAMPLE_CPU) {
		err |= take(&c, &out->cpu, 4);
		err |= take(&c, NULL, 4);
	}
	if (st & PERF_SAMPLE_IDENTIFIER)
		err |= take_u64(&c, &out->id);
	return err ? SP_ECORRUPT : 0;
}

/*
 * Checks the header and returns the body span without the trailer, so
 * that a string field cannot run into the trailer or past the record.
 */
static int body(const void *rec, size_t len, size_t trailer, struct cur *c)
{
	const struct perf_event_header *h = rec;

	if (len < sizeof(*h) || h->size > len || h->size < sizeof(*h) + trailer)
		return SP_ECORRUPT;
	c->p = (const unsigned char *)rec + sizeof(*h);
	c->left = h->size - sizeof(*h) - trailer;
	return 0;
}

/* A NUL-terminated string filling the rest of @c. */
static int take_string(struct cur *c, const char **s)
{
	if (c->left == 0 || !memchr(c->p, '\0', c->left))
		return SP_ECORRUPT;
	*s = (const char *)c->p;
	return 0;
}

int sp__perf_parse_mmap2(const void *rec, size_t len, uint64_t st,
			 struct sp__perf_mmap2 *out)
{
	const struct perf_event_header *h = rec;
	struct cur c;
	int err;

	memset(out, 0, sizeof(*out));
	if (body(rec, len, sp__perf_id_size(st), &c))
		return SP_ECORRUPT;
	out->misc = h->misc;
	err = take(&c, &out->pid, 4) | take(&c, &out->tid, 4);
	err |= take_u64(&c, &out->addr) | take_u64(&c, &out->len);
	err |= take_u64(&c, &out->pgoff);
	/* With MMAP_BUILD_ID these 24 bytes hold a build id instead. */
	err |= take(&c, &out->maj, 4) | take(&c, &out->min, 4);
	err |= take_u64(&c, &out->ino) | take_u64(&c, &out->ino_generation);
	if (h->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
		out->maj = out->min = 0;
		out->ino = out->ino_generation = 0;
	}
	err |= take(&c, &out->prot, 4) | take(&c, &out->flags, 4);
	if (err || take_string(&c, &out->path))
		return SP_ECORRUPT;
	return 0;
}

int sp__perf_parse_task(const void *rec, size_t len, struct sp__perf_task *out)
{
	struct cur c;
	int err;

	memset(out, 0, sizeof(*out));
	if (body(rec, len, 0, &c))
		return SP_ECORRUPT;
	err = take(&c, &out->pid, 4) | take(&c, &out->ppid, 4);
	err |= take(&c, &out->tid, 4) | take(&c, &out->ptid, 4);
	err |= take_u64(&c, &out->time);
	return err ? SP_ECORRUPT : 0;
}

int sp__perf_parse_comm(const void *rec, size_t len, uint64_t st,
			struct sp__perf_comm *out)
{
	const struct perf_event_header *h = rec;
	struct cur c;

	memset(out, 0, sizeof(*out));
	if (body(rec, len, sp__perf_id_size(st), &c))
		return SP_ECORRUPT;
	if (take(&c, &out->pid, 4) || take(&c, &out->tid, 4) ||
	    take_string(&c, &out->comm))
		return SP_ECORRUPT;
	out->exec = !!(h->misc & PERF_RECORD_MISC_COMM_EXEC);
	return 0;
}

int sp__perf_parse_lost(const void *rec, size_t len, uint64_t *lost)
{
	struct cur c;

	if (body(rec, len, 0, &c) || take(&c, NULL, 8) || take_u64(&c, lost))
		return SP_ECORRUPT;
	return 0;
}

int sp__perf_parse_lost_samples(const void *rec, size_t len, uint64_t *lost)
{
	struct cur c;

	if (body(rec, len, 0, &c) || take_u64(&c, lost))
		return SP_ECORRUPT;
	return 0;
}

int sp__perf_parse_switch(const void *rec, size_t len, uint32_t type,
			  uint64_t st, struct sp__perf_switch *out)
{
	const struct perf_event_header *h = rec;
	struct cur c;
	int err = 0;

	memset(out, 0, sizeof(*out));
	out->next_prev_pid = out->next_prev_tid = -1;
	if ((type != PERF_RECORD_SWITCH &&
	     type != PERF_RECORD_SWITCH_CPU_WIDE) ||
	    (st & (PERF_SAMPLE_TID | PERF_SAMPLE_TIME)) !=
		    (PERF_SAMPLE_TID | PERF_SAMPLE_TIME) ||
	    body(rec, len, sp__perf_id_size(st), &c) ||
	    sp__perf_parse_id(rec, len, st, &out->id))
		return SP_ECORRUPT;
	if (type == PERF_RECORD_SWITCH_CPU_WIDE)
		err = take(&c, &out->next_prev_pid, 4) |
		      take(&c, &out->next_prev_tid, 4);
	if (err || c.left != 0)
		return SP_ECORRUPT;
	out->out = !!(h->misc & PERF_RECORD_MISC_SWITCH_OUT);
	out->preempt = out->out &&
		       !!(h->misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT);
	return 0;
}
