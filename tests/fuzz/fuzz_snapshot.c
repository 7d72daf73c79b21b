/* SPDX-License-Identifier: MIT */
/* Fuzz target: Snapshot on raw bytes (plain or zstd) against the reference decode. */
#include <stackpulse/snapshot.h>

#include "fuzz_spool.h"

/*
 * sp_snapshot_open_buffer() runs on the raw input, so inputs starting with
 * 28 b5 2f fd go through the zstd path. The outcome must agree with the
 * reference decode (fuzz_run_decode) of the plain stream: it opens exactly
 * when the header is valid and no record is corrupt, it is "recovered"
 * exactly when the last record was cut off, and it holds the same
 * definitions and the same samples. Every sample's stack is walked.
 *
 * A second open uses an allocator that fails one allocation (chosen from
 * the input): it must fail with -ENOMEM (SP_EZSTD if zstd itself ran out)
 * or succeed, and in every case release all it allocated.
 */

static void walk_samples(const struct sp_snapshot *snap,
			 const struct fuzz_run *ref)
{
	const struct sp_spool *s = sp_snapshot_spool(snap);
	uint32_t nstacks = sp_spool_stack_count(s);
	struct sp_frame_context *ctx = calloc(nstacks + 1, sizeof(*ctx));
	uint32_t *ids = calloc(nstacks + 1, sizeof(*ids));
	struct sp_sample smp;
	size_t i, n = sp_snapshot_sample_count(snap);

	FUZZ_CHECK(ctx && ids);
	FUZZ_CHECK(n == ref->nsamples);
	for (i = 0; i < n; i++) {
		FUZZ_CHECK(sp_snapshot_sample(snap, i, &smp) == 0);
		FUZZ_CHECK(memcmp(&smp, &ref->samples[i], sizeof(smp)) == 0);
		if (i < 256)
			fuzz_check_stack(s, smp.stack, smp.pid, ids, ctx);
	}
	FUZZ_CHECK(sp_snapshot_sample(snap, n, &smp) == -EINVAL);
	free(ctx);
	free(ids);
}

/* @cut: zstd input that ends inside a frame is a cut-off tail too. */
static void compare(const struct sp_snapshot *snap, const struct fuzz_run *ref,
		    size_t plain_len, bool cut)
{
	const struct sp_spool *s = sp_snapshot_spool(snap);
	uint32_t a[4], b[4];
	struct sp_python_record py;
	size_t i;

	fuzz_counts(s, a);
	fuzz_counts(&ref->spool, b);
	FUZZ_CHECK(memcmp(a, b, sizeof(a)) == 0);
	FUZZ_CHECK(sp_snapshot_is_recovered(snap) ==
		   (ref->status == SP_ETRUNCATED || cut));
	FUZZ_CHECK(sp_snapshot_byte_size(snap) == plain_len);
	FUZZ_CHECK(sp_spool_start_timestamp_us(s) ==
		   sp_spool_start_timestamp_us(&ref->spool));
	FUZZ_CHECK(sp_snapshot_python_record_count(snap) == ref->npython);
	for (i = 0; i < ref->npython; i++) {
		FUZZ_CHECK(sp_snapshot_python_record(snap, i, &py) == 0);
		FUZZ_CHECK(py.pid >= 1 && py.is_python_runtime <= 1);
	}
	fuzz_check_spool(s);
	walk_samples(snap, ref);
}

/* Open under an allocator that fails allocation number @fail_at. */
static void open_failing(const uint8_t *data, size_t size, uint64_t fail_at,
			 bool zstd)
{
	struct sp_reader_opts o = { .size = sizeof(o) };
	struct sp_snapshot *snap = NULL;
	struct fuzz_alloc a;
	int err;

	fuzz_alloc_init(&a, fail_at);
	o.allocator = &a.hook;
	err = sp_snapshot_open_buffer(data, size, &o, &snap);
	if (err == 0)
		sp_snapshot_close(snap);
	else if (a.failed)
		FUZZ_CHECK(err == -ENOMEM || (zstd && err == SP_EZSTD));
	FUZZ_CHECK(a.outstanding == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_reader_opts o = { .size = sizeof(o) };
	struct sp_snapshot *snap = NULL;
	struct sp_diag diag = { 0 };
	struct fuzz_alloc a;
	struct fuzz_run ref;
	struct sp__vec plain;
	struct sp__mem mem;
	bool zstd = sp__is_zstd(data, size), cut = false;
	int err, zerr = 0;

	sp__mem_init(&mem, NULL);
	sp__vec_init(&plain, 1);
	if (zstd)
		zerr = sp__unzstd_all(&mem, data, size, &plain, &cut);
	else if (size)
		FUZZ_CHECK(sp__vec_reserve(&plain, &mem, size) == 0 &&
			   memcpy(plain.data, data, size) != NULL);
	plain.len = zstd ? plain.len : size;
	fuzz_run_decode(&ref, plain.data, plain.len);

	fuzz_alloc_init(&a, 0);
	o.allocator = &a.hook;
	o.diag = &diag;
	err = sp_snapshot_open_buffer(data, size, &o, &snap);
	if (zerr)
		FUZZ_CHECK(err == zerr);
	else if (!fuzz_run_opens(&ref))
		FUZZ_CHECK(err == SP_ECORRUPT && diag.message[0] != 0);
	else
		FUZZ_CHECK(err == 0);
	if (err == 0) {
		compare(snap, &ref, plain.len, cut);
		sp_snapshot_close(snap);
	}
	FUZZ_CHECK(a.outstanding == 0);
	if (a.allocs)
		open_failing(data, size, fuzz_hash(data, size) % a.allocs + 1,
			     zstd);
	fuzz_run_fini(&ref);
	sp__vec_fini(&plain, &mem);
	return 0;
}
