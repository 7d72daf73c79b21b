/* SPDX-License-Identifier: MIT */
/* Fuzz target: the record decoder, the spool view and the §9.2 prefix rule. */
#include "fuzz_spool.h"

/*
 * The input is a spool; when it does not start with the SPULSE3 magic a
 * header "SPULSE3\0 00 00" is put in front, so most inputs reach the record
 * decoder. Checks:
 *
 *   1. the reference decode loop (fuzz_run_decode) never overreads and a
 *      failed record changes neither cursor nor spool;
 *   2. the resulting spool view is consistent (fuzz_check_spool), every
 *      sample's stack resolves leaf to root, and every frame resolves as
 *      an independent model of §6 says (module_limit from record order);
 *   3. a SAMPLES_ONLY pass over the validated bytes (what Replay does on
 *      each iteration) yields the same records and samples;
 *   4. §9.2: decoding a prefix buf[0..k) yields exactly the records of the
 *      whole decode that end at or before k, the same definitions and
 *      samples, and then stops cleanly (k on a record boundary) or with
 *      SP_ETRUNCATED, or SP_ECORRUPT only where the whole decode was
 *      corrupt at that same record.
 */

static void check_samples(const struct fuzz_run *r)
{
	uint32_t nstacks = sp_spool_stack_count(&r->spool);
	struct sp_frame_context *ctx = calloc(nstacks + 1, sizeof(*ctx));
	uint32_t *ids = calloc(nstacks + 1, sizeof(*ids));
	struct sp_thread t;
	size_t i;

	FUZZ_CHECK(ctx && ids);
	for (i = 0; i < r->nsamples && i < 256; i++) {
		const struct sp_sample *smp = &r->samples[i];

		FUZZ_CHECK(sp_spool_thread(&r->spool, smp->thread, &t) == 0);
		FUZZ_CHECK(t.pid == smp->pid && t.tid == smp->tid);
		fuzz_check_stack(&r->spool, smp->stack, smp->pid, ids, ctx);
		if (sp_spool_start_timestamp_us(&r->spool) == 0)
			FUZZ_CHECK(sp_spool_timestamp_us(
					   &r->spool, smp->timestamp_ns) == 0);
		else
			FUZZ_CHECK(sp_spool_timestamp_us(&r->spool,
							 smp->timestamp_ns) >=
				   sp_spool_start_timestamp_us(&r->spool));
	}
	free(ctx);
	free(ids);
}

/* §6 written from the spec: the newest visible module owning the address. */
static void model_resolve(const struct sp_spool *s, uint32_t id, uint32_t limit,
			  int32_t pid, uint32_t *module, uint64_t *rel)
{
	struct sp_module m;
	struct sp_frame f;
	uint32_t i;

	FUZZ_CHECK(sp_spool_frame(s, id, &f) == 0);
	*module = f.module_id;
	*rel = f.module_id == SP_NO_MODULE ? 0 : f.file_relative_ip;
	if (f.mode == SP_FRAME_TRUNCATED || f.module_id != SP_NO_MODULE)
		return;
	for (i = limit; i-- > 0;) {
		FUZZ_CHECK(sp_spool_module(s, i, &m) == 0);
		if (m.deactivated_at != SP_NEVER && id >= m.deactivated_at)
			continue;
		if (f.mode == SP_FRAME_KERNEL ? !m.is_kernel :
						m.is_kernel || m.pid != pid)
			continue;
		if (f.abs_ip < m.start || f.abs_ip >= m.end)
			continue;
		if (f.abs_ip - m.start > UINT64_MAX - m.file_offset)
			return;
		*module = i;
		*rel = f.abs_ip - m.start + m.file_offset;
		return;
	}
}

/* Every frame resolves as the model says, for each thread's pid and pid 1. */
static void check_resolution(const struct fuzz_run *r)
{
	const struct sp_spool *s = &r->spool;
	struct sp_frame_context c;
	struct sp_thread t;
	uint32_t limit = 0, frame = 0, module, i;
	uint64_t rel;
	size_t k;

	for (k = 0; k < r->nrec; k++) {
		limit += r->tags[k] == SP_TAG_MODULE;
		if (r->tags[k] != SP_TAG_FRAME)
			continue;
		for (i = 0; i <= sp_spool_thread_count(s) && i < 4; i++) {
			t.pid = 1;
			if (i > 0)
				FUZZ_CHECK(sp_spool_thread(s, i - 1, &t) == 0);
			model_resolve(s, frame, limit, t.pid, &module, &rel);
			FUZZ_CHECK(sp_spool_resolve(s, frame, t.pid, &c) == 0);
			FUZZ_CHECK(c.module_id == module &&
				   c.file_relative_ip == rel);
		}
		frame++;
	}
	FUZZ_CHECK(frame == sp_spool_frame_count(s));
}

/* Replay's re-decode: definitions skipped, samples against the full spool. */
static void check_samples_only(struct fuzz_run *r, const uint8_t *buf,
			       size_t len)
{
	struct sp__cursor cur = { .buf = buf, .len = len };
	struct sp__event ev;
	size_t rec = 0, smp = 0;

	if (r->hdr < 0)
		return;
	cur.pos = (size_t)r->hdr;
	while (cur.pos < r->stop) {
		FUZZ_CHECK(sp__spool_decode(&r->spool, &cur,
					    SP_DECODE_SAMPLES_ONLY, &ev,
					    NULL) == 0);
		FUZZ_CHECK(rec < r->nrec && cur.pos == r->ends[rec]);
		FUZZ_CHECK(ev.tag == r->tags[rec++]);
		if (ev.tag != SP_TAG_SAMPLE)
			continue;
		FUZZ_CHECK(smp < r->nsamples);
		FUZZ_CHECK(memcmp(&ev.u.sample, &r->samples[smp++],
				  sizeof(ev.u.sample)) == 0);
	}
	FUZZ_CHECK(rec == r->nrec && smp == r->nsamples);
}

static void same_definitions(const struct sp_spool *p, const struct sp_spool *f,
			     const uint32_t want[4])
{
	struct sp_module pm, fm;
	struct sp_frame pf, ff;
	struct sp_stack_node pn, fn;
	struct sp_thread pt, ft;
	uint32_t got[4], i;

	fuzz_counts(p, got);
	FUZZ_CHECK(memcmp(got, want, sizeof(got)) == 0);
	for (i = 0; i < got[0]; i++) {
		FUZZ_CHECK(!sp_spool_module(p, i, &pm) &&
			   !sp_spool_module(f, i, &fm));
		FUZZ_CHECK(pm.deactivated_at == SP_NEVER ||
			   pm.deactivated_at == fm.deactivated_at);
		pm.deactivated_at = fm.deactivated_at;
		FUZZ_CHECK(pm.path_len == fm.path_len &&
			   memcmp(pm.path, fm.path, pm.path_len) == 0);
		pm.path = fm.path;
		FUZZ_CHECK(memcmp(&pm, &fm, sizeof(pm)) == 0);
	}
	for (i = 0; i < got[1]; i++)
		FUZZ_CHECK(!sp_spool_frame(p, i, &pf) &&
			   !sp_spool_frame(f, i, &ff) &&
			   !memcmp(&pf, &ff, sizeof(pf)));
	for (i = 0; i < got[2]; i++)
		FUZZ_CHECK(!sp_spool_stack_node(p, i, &pn) &&
			   !sp_spool_stack_node(f, i, &fn) &&
			   !memcmp(&pn, &fn, sizeof(pn)));
	for (i = 0; i < got[3]; i++)
		FUZZ_CHECK(!sp_spool_thread(p, i, &pt) &&
			   !sp_spool_thread(f, i, &ft) &&
			   !memcmp(&pt, &ft, sizeof(pt)));
}

/* The outcome §9.2 allows for the prefix run @p of the whole run @f. */
static void check_prefix_status(const struct fuzz_run *p,
				const struct fuzz_run *f, size_t k, size_t m)
{
	size_t boundary = m ? f->ends[m - 1] : (size_t)f->hdr;

	if (k == boundary)
		FUZZ_CHECK(p->status == 0);
	else if (m < f->nrec || f->status == SP_ETRUNCATED)
		FUZZ_CHECK(p->status == SP_ETRUNCATED);
	else
		FUZZ_CHECK(p->status == SP_ETRUNCATED ||
			   p->status == SP_ECORRUPT);
}

static void check_prefix(const struct fuzz_run *f, const uint8_t *buf, size_t k)
{
	uint8_t *copy = fuzz_dup(buf, k);
	uint32_t want[4] = { 0 };
	struct fuzz_run p;
	size_t m = 0, s = 0, i;

	fuzz_run_decode(&p, copy, k);
	if (k < (size_t)f->hdr) {
		FUZZ_CHECK(p.hdr == SP_ETRUNCATED);
		goto out;
	}
	FUZZ_CHECK(p.hdr == f->hdr);
	while (m < f->nrec && f->ends[m] <= k) {
		if (f->tags[m] >= SP_TAG_MODULE && f->tags[m] <= SP_TAG_THREAD)
			want[f->tags[m] - SP_TAG_MODULE]++;
		s += f->tags[m++] == SP_TAG_SAMPLE;
	}
	FUZZ_CHECK(p.nrec == m && p.nsamples == s);
	for (i = 0; i < m; i++)
		FUZZ_CHECK(p.ends[i] == f->ends[i] && p.tags[i] == f->tags[i]);
	FUZZ_CHECK(s == 0 ||
		   memcmp(p.samples, f->samples, s * sizeof(*p.samples)) == 0);
	check_prefix_status(&p, f, k, m);
	same_definitions(&p.spool, &f->spool, want);
out:
	fuzz_run_fini(&p);
	free(copy);
}

/* The input, with a default header in front unless it has the magic. */
static uint8_t *make_stream(const uint8_t *data, size_t size, size_t *len)
{
	static const uint8_t hdr[10] = { 'S', 'P', 'U', 'L', 'S',
					 'E', '3', 0,	0,   0 };
	uint8_t *buf;

	if (size >= 8 && memcmp(data, hdr, 8) == 0) {
		*len = size;
		return fuzz_dup(data, size);
	}
	*len = size + sizeof(hdr);
	buf = malloc(*len);
	FUZZ_CHECK(buf != NULL);
	memcpy(buf, hdr, sizeof(hdr));
	memcpy(buf + sizeof(hdr), data, size);
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t h = fuzz_hash(data, size);
	struct fuzz_run full;
	size_t len;
	uint8_t *buf = make_stream(data, size, &len);

	fuzz_run_decode(&full, buf, len);
	if (full.hdr > 0) {
		fuzz_check_spool(&full.spool);
		check_samples(&full);
		check_resolution(&full);
		check_samples_only(&full, buf, len);
		check_prefix(&full, buf, (size_t)(h % (len + 1)));
		if (len > 0)
			check_prefix(&full, buf, len - 1);
		check_prefix(&full, buf, full.stop);
	}
	fuzz_run_fini(&full);
	free(buf);
	return 0;
}
