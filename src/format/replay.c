/* SPDX-License-Identifier: MIT */
/* Replay: validate a spool once, then re-decode its samples in bounded memory. */
#include <errno.h>
#include <string.h>

#include <stackpulse/error.h>
#include <stackpulse/replay.h>

#include "format_internal.h"
#include "logging.h"
#include "source.h"

/*
 * Open makes one APPLY pass over the whole stream through a sp__source
 * window (SPULSE3 §10): every record is validated, definitions and Python
 * records are kept, samples are only counted and indexed.
 *
 * The index holds where runs of adjacent sample records start, together
 * with the §5.5 baseline (last_ns) in force there, so each run can be
 * decoded on its own with exact timestamps:
 *
 *   hdr D D S S S D S P S S ... D S S S | S D S ... (cut-off)
 *           ^run 0     ^run 1   ^run N-1 ^overflow        ^data_end
 *
 * A run ends at the first non-sample record. When SP_REPLAY_MAX_RANGES
 * runs are indexed, the position and baseline of the next sample are
 * remembered instead, and iteration re-scans from there, stepping over
 * definition records with SP_DECODE_SAMPLES_ONLY. Iteration never reads
 * past data_end (the end of the last complete record), so a cut-off tail
 * stays invisible. The window reaches its largest size during open;
 * iteration reuses it and does not allocate.
 */
#define SP_REPLAY_MAX_RANGES 524288u

struct sp__range {
	uint64_t offset;  /* stream offset of the run's first sample */
	uint64_t base_ns; /* baseline before that sample */
};

enum replay_mode {
	REPLAY_IDLE,   /* between runs */
	REPLAY_RUN,    /* inside an indexed run */
	REPLAY_RESCAN, /* after the index: every remaining record */
	REPLAY_DONE,
};

struct sp_replay {
	struct sp__mem mem;
	struct sp_spool spool;
	struct sp__source src;
	struct sp__vec ranges; /* struct sp__range */
	uint64_t samples;
	uint64_t data_end;
	bool recovered;
	bool overflow;
	struct sp__range rescan; /* valid when overflow */
	struct sp_diag *diag;
	/* Iteration state. */
	enum replay_mode mode;
	size_t next_range;
	uint64_t pos;
	uint64_t last_ns;
};

/* Adds the sample at @off to the index (merging it into the current run). */
static int index_sample(struct sp_replay *r, uint64_t off, uint64_t base_ns,
			uint64_t *run_end, uint64_t end)
{
	struct sp__range range = { off, base_ns };
	int err;

	if (r->overflow)
		return 0;
	if (*run_end != off) {
		if (r->ranges.len == SP_REPLAY_MAX_RANGES) {
			r->overflow = true;
			r->rescan = range;
			return 0;
		}
		err = sp__vec_push(&r->ranges, &r->mem, &range);
		if (err)
			return err;
	}
	*run_end = end;
	return 0;
}

/* One decoded record of the open pass. */
static int scan_record(struct sp_replay *r, const struct sp__event *ev,
		       uint64_t off, uint64_t base_ns, uint64_t end,
		       uint64_t *run_end)
{
	if (ev->tag != SP_TAG_SAMPLE)
		return 0;
	sp__spool_note_sample(&r->spool, ev->u.sample.timestamp_ns);
	r->samples++;
	return index_sample(r, off, base_ns, run_end, end);
}

/*
 * The open pass: decode records until the stream ends cleanly, ends in a
 * cut-off record (recovered) or a record fails.
 */
static int scan(struct sp_replay *r, uint64_t pos)
{
	struct sp__cursor cur;
	struct sp__event ev;
	uint64_t last_ns = 0, run_end = 0, off;
	int err;

	for (;;) {
		sp__source_cursor(&r->src, pos, last_ns, &cur);
		err = sp__spool_decode(&r->spool, &cur, SP_DECODE_APPLY, &ev,
				       r->diag);
		if (err == SP_ETRUNCATED) {
			err = sp__source_extend(&r->src, pos);
			if (err < 0)
				return err;
			if (err > 0)
				continue;
			/*
			 * At the true end: clean if no byte is left and no
			 * zstd frame was cut short.
			 */
			r->recovered = r->src.win.len > 0 ||
				       sp__source_cut(&r->src);
			break;
		}
		if (err)
			return err;
		off = pos;
		pos = cur.offset + cur.pos;
		err = scan_record(r, &ev, off, last_ns, pos, &run_end);
		if (err)
			return err;
		last_ns = cur.last_ns;
	}
	r->data_end = pos;
	return 0;
}

static void replay_free(struct sp_replay *r)
{
	sp__source_close(&r->src);
	sp__vec_fini(&r->ranges, &r->mem);
	sp__spool_fini(&r->spool);
	sp__mem_free(&r->mem, r, sizeof(*r));
}

static int replay_load(struct sp_replay *r, const char *path,
		       const struct sp_reader_opts *o)
{
	int err;

	err = sp__source_open(&r->src, &r->mem, path, false);
	if (err)
		return err;
	err = sp__source_header(&r->src, &r->spool, r->diag);
	if (err < 0)
		return err;
	err = scan(r, (uint64_t)err);
	if (err)
		return err;
	if (r->recovered && r->src.win.len == 0)
		sp__log(o->logger, SP_LOG_WARN,
			"%s: compressed spool ends inside a zstd frame; kept "
			"the complete records decoded before the cut",
			path);
	else if (r->recovered)
		sp__log(o->logger, SP_LOG_WARN,
			"%s: spool ends inside a record at offset %llu; kept "
			"the complete prefix",
			path, (unsigned long long)r->data_end);
	r->src.limit = r->data_end;
	return sp_replay_rewind(r);
}

SP_API int sp_replay_open(const char *path, const struct sp_reader_opts *opts,
			  struct sp_replay **out)
{
	struct sp_reader_opts o;
	struct sp__mem mem;
	struct sp_replay *r;
	int err;

	if (!path || !out)
		return -EINVAL;
	err = sp__reader_opts_load(opts, &o);
	if (err)
		return err;
	sp__mem_init(&mem, o.allocator);
	r = sp__mem_calloc(&mem, 1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->mem = mem;
	r->diag = o.diag;
	r->src.fd = -1;
	sp__spool_init(&r->spool, &mem, true);
	sp__vec_init(&r->ranges, sizeof(struct sp__range));
	err = replay_load(r, path, &o);
	if (err) {
		replay_free(r);
		return err;
	}
	*out = r;
	return 0;
}

SP_API void sp_replay_close(struct sp_replay *replay)
{
	if (replay)
		replay_free(replay);
}

SP_API const struct sp_spool *sp_replay_spool(const struct sp_replay *replay)
{
	return &replay->spool;
}

SP_API uint64_t sp_replay_sample_count(const struct sp_replay *replay)
{
	return replay->samples;
}

SP_API bool sp_replay_is_recovered(const struct sp_replay *replay)
{
	return replay->recovered;
}

SP_API size_t sp_replay_python_record_count(const struct sp_replay *replay)
{
	return replay->spool.python.len;
}

SP_API int sp_replay_python_record(const struct sp_replay *replay, size_t index,
				   struct sp_python_record *out)
{
	if (index >= replay->spool.python.len)
		return -EINVAL;
	*out = *(const struct sp_python_record *)sp__vec_at(
		&replay->spool.python, index);
	return 0;
}

SP_API int sp_replay_rewind(struct sp_replay *replay)
{
	sp__source_rewind(&replay->src);
	replay->mode = REPLAY_IDLE;
	replay->next_range = 0;
	replay->pos = 0;
	replay->last_ns = 0;
	return 0;
}

/*
 * Bytes below data_end were there at open and are not any more: the file
 * was cut (or replaced by something shorter) under the Replay.
 */
static int gone(struct sp_replay *r, int err)
{
	if (err < 0)
		return err;
	if (sp__source_stat(&r->src) == 0 && r->src.file_size < r->data_end)
		return SP_ESHRANK;
	return r->src.shrunk ? SP_ESHRANK : SP_ECORRUPT;
}

/* Moves to the next indexed run, or the rescan point, or the end. */
static int next_run(struct sp_replay *r)
{
	const struct sp__range *range;
	int err;

	if (r->next_range < r->ranges.len) {
		range = sp__vec_at(&r->ranges, r->next_range++);
		r->mode = REPLAY_RUN;
	} else if (r->overflow && r->mode != REPLAY_RESCAN) {
		range = &r->rescan;
		r->mode = REPLAY_RESCAN;
	} else {
		r->mode = REPLAY_DONE;
		return 0;
	}
	r->pos = range->offset;
	r->last_ns = range->base_ns;
	err = sp__source_seek(&r->src, r->pos);
	return err == SP_ECORRUPT ? gone(r, 0) : err;
}

/* Whether the record at the current position still belongs to this pass. */
static int record_ready(struct sp_replay *r)
{
	size_t at;
	int err;

	if (r->pos >= r->data_end)
		return 0;
	at = (size_t)(r->pos - r->src.win_off);
	if (at >= r->src.win.len) {
		sp__source_drop(&r->src, r->pos);
		err = sp__source_fill(&r->src, 1);
		if (err <= 0)
			return gone(r, err);
		at = 0;
	}
	if (r->mode == REPLAY_RUN &&
	    ((const uint8_t *)r->src.win.data)[at] != SP_TAG_SAMPLE)
		return 0;
	return 1;
}

/* Decodes the record at r->pos (SAMPLES_ONLY); 1 = a sample was stored. */
static int decode_one(struct sp_replay *r, struct sp_sample *out)
{
	struct sp__cursor cur;
	struct sp__event ev;
	int err;

	for (;;) {
		sp__source_cursor(&r->src, r->pos, r->last_ns, &cur);
		err = sp__spool_decode(&r->spool, &cur, SP_DECODE_SAMPLES_ONLY,
				       &ev, r->diag);
		if (err != SP_ETRUNCATED)
			break;
		/* Validated at open: a record cut now means the file changed. */
		err = sp__source_extend(&r->src, r->pos);
		if (err <= 0)
			return gone(r, err);
	}
	if (err)
		return err;
	r->pos = cur.offset + cur.pos;
	if (ev.tag != SP_TAG_SAMPLE)
		return 0;
	r->last_ns = cur.last_ns;
	*out = ev.u.sample;
	return 1;
}

SP_API int sp_replay_next(struct sp_replay *replay, struct sp_sample *out)
{
	int err;

	for (;;) {
		if (replay->mode == REPLAY_DONE)
			return 0;
		if (replay->mode == REPLAY_IDLE) {
			err = next_run(replay);
			if (err)
				return err;
			continue;
		}
		err = record_ready(replay);
		if (err < 0)
			return err;
		if (err == 0) {
			replay->mode = replay->mode == REPLAY_RESCAN ?
					       REPLAY_DONE :
					       REPLAY_IDLE;
			continue;
		}
		err = decode_one(replay, out);
		if (err)
			return err;
	}
}
