/* SPDX-License-Identifier: MIT */
/* Where generated scenario calls go: the real writer, or a no-op baseline walk. */

/*
 * scenario_writer_ops forwards each generated call to the public writer
 * API, so every spool the bench and spool_gen produce is exactly what a
 * recorder using the library would write. The walk callbacks do nothing
 * but fold their arguments into a checksum: timing a walk gives the cost
 * of the generator loop itself, which bench_spool subtracts out as
 * "loop_ns_per_sample" / "vs_loop".
 */
#include <stackpulse/sink.h>
#include <stackpulse/writer.h>

#include "scenario.h"

static int writer_module(void *ctx, const struct sp_module *module,
			 uint32_t *id)
{
	return sp_writer_module(ctx, module, id);
}

static int writer_sample(void *ctx, uint64_t timestamp_ns, int32_t pid,
			 int32_t tid, const struct sp_frame *frames,
			 size_t nframes)
{
	return sp_writer_sample(ctx, timestamp_ns, pid, tid, frames, nframes);
}

static int writer_python(void *ctx, uint64_t timestamp_ns, int32_t pid,
			 bool is_python_runtime)
{
	return sp_writer_python_runtime(ctx, timestamp_ns, pid,
					is_python_runtime);
}

static int writer_retire_process(void *ctx, int32_t pid)
{
	return sp_writer_deactivate_process(ctx, pid);
}

static int writer_retire_module(void *ctx, uint32_t module_id)
{
	return sp_writer_deactivate_module(ctx, module_id);
}

const struct scenario_ops scenario_writer_ops = {
	.module = writer_module,
	.sample = writer_sample,
	.python = writer_python,
	.retire_process = writer_retire_process,
	.retire_module = writer_retire_module,
};

/* The walk folds every call into a checksum so none can be optimized out. */
struct walk {
	uint64_t sum;
	uint32_t modules;
};

static int walk_module(void *ctx, const struct sp_module *module, uint32_t *id)
{
	struct walk *w = ctx;

	w->sum = (w->sum ^ module->start) * 0x100000001b3ull;
	*id = w->modules++;
	return 0;
}

static int walk_sample(void *ctx, uint64_t timestamp_ns, int32_t pid,
		       int32_t tid, const struct sp_frame *frames,
		       size_t nframes)
{
	struct walk *w = ctx;

	w->sum ^= timestamp_ns ^ frames[0].abs_ip ^ nframes;
	w->sum = (w->sum ^ (uint32_t)pid ^ ((uint64_t)tid << 32)) *
		 0x100000001b3ull;
	return 0;
}

static int walk_python(void *ctx, uint64_t timestamp_ns, int32_t pid,
		       bool is_python_runtime)
{
	struct walk *w = ctx;

	w->sum ^= timestamp_ns + (uint32_t)pid + is_python_runtime;
	return 0;
}

static int walk_retire_process(void *ctx, int32_t pid)
{
	struct walk *w = ctx;

	w->sum ^= (uint32_t)pid;
	return 0;
}

static int walk_retire_module(void *ctx, uint32_t module_id)
{
	struct walk *w = ctx;

	w->sum ^= module_id;
	return 0;
}

static const struct scenario_ops walk_ops = {
	.module = walk_module,
	.sample = walk_sample,
	.python = walk_python,
	.retire_process = walk_retire_process,
	.retire_module = walk_retire_module,
};

uint64_t scenario_gen_walk(struct scenario_gen *gen)
{
	struct walk w = { .sum = 0xcbf29ce484222325ull };

	scenario_gen_run(gen, &walk_ops, &w);
	return w.sum ? w.sum : 1;
}

int scenario_write(struct scenario_gen *gen, struct sp_sink *sink,
		   struct sp_writer **out)
{
	const struct sp_writer_opts opts = {
		.size = sizeof(opts),
		.start_timestamp_us = SCENARIO_START_US,
		.sample_interval_us = SCENARIO_INTERVAL_US,
	};
	struct sp_writer *writer;
	int err;

	err = sp_writer_new(sink, &opts, &writer);
	if (err)
		return err;
	err = scenario_gen_run(gen, &scenario_writer_ops, writer);
	if (!err)
		err = sp_writer_finish(writer);
	if (err) {
		sp_writer_free(writer);
		return err;
	}
	*out = writer;
	return 0;
}

int scenario_write_file(struct scenario_gen *gen, const char *path,
			enum scenario_compression compression,
			uint64_t *raw_bytes)
{
	struct sp_sink *sink, *zsink;
	struct sp_writer *writer;
	int err;

	err = sp_sink_open_file(path, NULL, &sink);
	if (err)
		return err;
	if (compression == SCN_ZSTD) {
		/* The zstd sink owns the file sink, also on failure. */
		err = sp_sink_new_zstd(sink, NULL, &zsink);
		if (err)
			return err;
		sink = zsink;
	}
	err = scenario_write(gen, sink, &writer);
	if (err)
		return err;
	if (raw_bytes)
		*raw_bytes = sp_writer_bytes(writer);
	sp_writer_free(writer);
	return 0;
}
