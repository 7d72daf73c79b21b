/* SPDX-License-Identifier: MIT */
/* Writer under allocation failure: every -ENOMEM leaves a consistent writer. */

/*
 * A scripted recording (modules, many samples with shared and growing
 * stacks, python records, deactivations) is run once with a working
 * allocator to get the reference bytes. Then, for N = 1, 2, ..., the
 * writer's allocator fails exactly its N-th allocation:
 *
 *   - every call returns 0 or -ENOMEM, nothing crashes;
 *   - right after a -ENOMEM, the bytes written so far are a prefix of the
 *     reference (the failed call wrote nothing);
 *   - retrying the failed call succeeds (only one allocation fails) and the
 *     run then ends with exactly the reference bytes, so the failure left
 *     no trace in the caches either;
 *   - after sp_writer_free() no byte is outstanding.
 *
 * The walk stops at the first N whose allocation is never reached.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <stackpulse/sink.h>
#include <stackpulse/writer.h>

#include "check.h"

struct failing {
	size_t live;
	unsigned calls;
	unsigned fail_at; /* 0 = never */
	bool failed;
};

static void *fail_alloc(void *ctx, size_t size, size_t align)
{
	struct failing *f = ctx;
	void *p = NULL;

	if (++f->calls == f->fail_at) {
		f->failed = true;
		return NULL;
	}
	if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align,
			   size))
		return NULL;
	f->live += size;
	return p;
}

static void fail_free(void *ctx, void *ptr, size_t size)
{
	struct failing *f = ctx;

	CHECK(f->live >= size);
	f->live -= size;
	free(ptr);
}

struct run {
	struct sp_writer *w;
	const uint8_t *ref; /* reference bytes (NULL while producing them) */
	size_t ref_len;
	unsigned enomem;
};

/* Bytes the memory sink holds after a flush (flush does not allocate). */
static const uint8_t *written(struct sp_writer *w, size_t *len)
{
	const void *data;

	CHECK_OK(sp_writer_flush(w));
	CHECK_OK(sp_sink_memory_data(sp_writer_sink(w), &data, len));
	return data;
}

/* Checks one call's result; on -ENOMEM checks the prefix property. */
static bool failed(struct run *r, int err)
{
	const uint8_t *data;
	size_t len;

	if (err == 0)
		return false;
	CHECK_EQ_INT(err, -ENOMEM);
	CHECK_PTR(r->ref);
	r->enomem++;
	data = written(r->w, &len);
	CHECK(len <= r->ref_len);
	CHECK_MEM(data, len, r->ref, len);
	return true;
}

static struct sp_frame frame(unsigned i, uint32_t modules)
{
	struct sp_frame f = { .module_id = SP_NO_MODULE };

	if (i % 5 == 0 && modules > 0) {
		f.module_id = i % modules;
		f.file_relative_ip = 0x100 + i % 0x800;
		/* Modules map file offset 0x100 at their start. */
		f.abs_ip = 0x10000 * (f.module_id + 1) + f.file_relative_ip -
			   0x100;
		return f;
	}
	if (i % 17 == 16) {
		f.mode = SP_FRAME_TRUNCATED;
		return f;
	}
	f.abs_ip = f.file_relative_ip = 0x400000 + (uint64_t)i * 0x10;
	f.mode = i % 3 == 0 ? SP_FRAME_KERNEL : SP_FRAME_USER;
	return f;
}

static int do_module(struct run *r, uint32_t i)
{
	static const char path[] = "/usr/lib/libmodule.so";
	struct sp_module m = {
		.start = 0x10000 * (i + 1),
		.end = 0x10000 * (i + 1) + 0x1000,
		.file_offset = 0x100,
		.inode = i,
		.dev_major = 8,
		.pid = 1 + (int32_t)(i % 3),
		.is_kernel = i == 2,
		.path = path,
		.path_len = sizeof(path) - 1,
	};

	return sp_writer_module(r->w, &m, NULL);
}

static int do_sample(struct run *r, unsigned i, uint32_t modules)
{
	struct sp_frame stack[64];
	size_t depth = 1 + (i * 7) % 60, j;

	/* Roots from a small set (shared prefixes), leaves spread out. */
	for (j = 0; j < depth; j++)
		stack[depth - 1 - j] =
			frame(j < 8 ? j : (i * 31 + j) % 400, modules);
	return sp_writer_sample(r->w, 1000 + (uint64_t)i * 997 - (i % 4) * 50,
				1 + (int32_t)(i % 3), 1 + (int32_t)(i % 11),
				stack, depth);
}

/* Runs the script; a call that fails with -ENOMEM is retried once. */
static void script(struct run *r)
{
	uint32_t modules = 0;
	unsigned i;

	for (i = 0; i < 600; i++) {
		if (i % 60 == 0) {
			while (failed(r, do_module(r, modules)))
				;
			modules++;
		}
		if (i % 97 == 50) {
			while (failed(r, sp_writer_python_runtime(r->w, i, 2,
								  i & 1)))
				;
		}
		if (i % 150 == 149) {
			while (failed(r, sp_writer_deactivate_module(r->w, 0)))
				;
			while (failed(r, sp_writer_deactivate_process(r->w, 3)))
				;
		}
		while (failed(r, do_sample(r, i, modules)))
			;
		/* Revisit old stacks: exercises the memo and known nodes. */
		while (failed(r, do_sample(r, i / 2, modules)))
			;
	}
}

static struct sp_writer *writer_new(struct failing *fa)
{
	struct sp_allocator a = { fail_alloc, fail_free, fa };
	struct sp_writer_opts o = { .size = sizeof(o),
				    .allocator = &a,
				    .chunk_size = 1024 };
	struct sp_writer *w = NULL;
	struct sp_sink *sink;
	int err;

	/* The sink's own allocations use the default allocator. */
	CHECK_OK(sp_sink_new_memory(NULL, &sink));
	err = sp_writer_new(sink, &o, &w);
	if (err) {
		CHECK_EQ_INT(err, -ENOMEM);
		CHECK(w == NULL);
		return NULL;
	}
	return w;
}

int main(void)
{
	struct failing fa = { 0 };
	struct run ref = { 0 }, r;
	const uint8_t *data;
	uint8_t *golden;
	size_t len;
	unsigned n, failures = 0;

	ref.w = writer_new(&fa);
	CHECK_PTR(ref.w);
	script(&ref);
	data = written(ref.w, &len);
	golden = malloc(len);
	memcpy(golden, data, len);
	sp_writer_free(ref.w);
	CHECK_EQ(fa.live, 0);
	CHECK(len > 10000);

	for (n = 1;; n++) {
		memset(&fa, 0, sizeof(fa));
		fa.fail_at = n;
		memset(&r, 0, sizeof(r));
		r.ref = golden;
		r.ref_len = len;
		r.w = writer_new(&fa);
		if (r.w) {
			script(&r);
			data = written(r.w, &len);
			CHECK_MEM(data, len, golden, r.ref_len);
			sp_writer_free(r.w);
		}
		CHECK_EQ(fa.live, 0);
		failures += r.enomem;
		if (!fa.failed)
			break;
		len = r.ref_len;
	}
	/* The walk reached allocations inside write calls, not only setup. */
	CHECK(n > 20);
	CHECK(failures > 10);
	free(golden);
	return T_EXIT_PASS;
}
