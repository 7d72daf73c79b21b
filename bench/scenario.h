/* SPDX-License-Identifier: MIT */
/* Deterministic synthetic spool scenarios shared by spool_gen and bench_spool. */
#ifndef SP_BENCH_SCENARIO_H
#define SP_BENCH_SCENARIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <stackpulse/sink.h>
#include <stackpulse/writer.h>

/*
 * A scenario describes the shape of a recording (processes, modules,
 * threads, unique stacks, depth, kernel and Python content); a generator
 * turns it into the exact sequence of writer calls a recorder would make.
 * Everything is derived from a fixed-seed PRNG, so the same scenario and
 * sample count always produce the same calls and therefore the same bytes.
 *
 * The first SCENARIO_FIXTURES entries mirror the Rust stackpulse bench
 * fixtures (research/stackpulse-features.md §3); "bulk_hot_stacks" is the
 * long run (hot_stack_reuse with 8 threads and 64 stacks, 10 M samples).
 *
 * Spools are produced only through the public writer API: the generator
 * drives a table of callbacks (struct scenario_ops), which is either the
 * writer (scenario_writer_ops) or a no-op walk used as the bench baseline.
 */

/* Header values of every generated spool (the Rust fixtures' values). */
#define SCENARIO_START_US 1700000000000000ull
#define SCENARIO_INTERVAL_US 1000ull

/* Number of fixture scenarios; scenario_get() also returns the bulk one. */
#define SCENARIO_FIXTURES 4
#define SCENARIO_BULK "bulk_hot_stacks"

enum scenario_flags {
	SCN_KERNEL = 0x1,  /* [kernel] module, kernel frames at the leaf end */
	SCN_PYTHON = 0x2,  /* python3.12 / libpython processes */
	SCN_MARKERS = 0x4, /* Python-runtime status records (tag 6) */
	SCN_CHURN = 0x8,   /* unpinned frames, a tag-8 remap, a tag-7 exit */
	SCN_TRUNCATED = 0x10, /* some stacks end in a truncated marker */
};

struct scenario {
	const char *name;
	uint32_t processes;
	uint32_t modules_per_process;
	uint32_t threads_per_process;
	uint32_t unique_stacks; /* in total, split evenly over processes */
	uint32_t depth;
	uint64_t samples; /* default sample count */
	uint32_t flags;	  /* enum scenario_flags */
};

/* scenario_get returns scenario @index (fixtures first), NULL past the end. */
const struct scenario *scenario_get(size_t index);

/* scenario_find returns the scenario called @name, or NULL. */
const struct scenario *scenario_find(const char *name);

/*
 * struct scenario_ops receives the generated calls; each callback has the
 * shape of the sp_writer_* call it stands for and returns 0 or a negative
 * code, which stops the run.
 */
struct scenario_ops {
	int (*module)(void *ctx, const struct sp_module *module, uint32_t *id);
	int (*sample)(void *ctx, uint64_t timestamp_ns, int32_t pid,
		      int32_t tid, const struct sp_frame *frames,
		      size_t nframes);
	int (*python)(void *ctx, uint64_t timestamp_ns, int32_t pid,
		      bool is_python_runtime);
	int (*retire_process)(void *ctx, int32_t pid);
	int (*retire_module)(void *ctx, uint32_t module_id);
};

/* Forwards every call to the struct sp_writer passed as ctx. */
extern const struct scenario_ops scenario_writer_ops;

struct scenario_gen;

/*
 * scenario_gen_new precomputes the modules and stacks of @scn for a run of
 * @samples samples (0 = the scenario's default).
 * @return 0, -EINVAL (unknown shape), -ENOMEM. Free with scenario_gen_free().
 */
int scenario_gen_new(const struct scenario *scn, uint64_t samples,
		     struct scenario_gen **out);

/* scenario_gen_free releases @gen; NULL is a no-op. */
void scenario_gen_free(struct scenario_gen *gen);

/* scenario_gen_samples returns the number of samples one run produces. */
uint64_t scenario_gen_samples(const struct scenario_gen *gen);

/*
 * scenario_gen_run emits the whole recording to @ops. Every run starts
 * from the same state, so repeated runs emit identical calls.
 * @return 0 or the first negative code returned by a callback.
 */
int scenario_gen_run(struct scenario_gen *gen, const struct scenario_ops *ops,
		     void *ctx);

/*
 * scenario_gen_walk runs the generator into no-op callbacks: the cost of
 * the sample loop alone. @return a checksum of the calls (never 0).
 */
uint64_t scenario_gen_walk(struct scenario_gen *gen);

/*
 * scenario_write creates a writer with the scenario header on @sink, runs
 * @gen into it and finishes it.
 * @param sink Takes ownership of `sink`.
 * @return 0 with *@out the finished writer (read its sink or byte count,
 * then free it with sp_writer_free()), or a negative code.
 */
int scenario_write(struct scenario_gen *gen, struct sp_sink *sink,
		   struct sp_writer **out);

/* Compression choice for scenario_write_file(). */
enum scenario_compression {
	SCN_RAW = 0,
	SCN_ZSTD = 1,
};

/*
 * scenario_write_file writes one run of @gen to @path through a file sink
 * (wrapped in a zstd sink for SCN_ZSTD) and stores the uncompressed spool
 * size in *@raw_bytes (may be NULL).
 * @return 0 or a negative code.
 */
int scenario_write_file(struct scenario_gen *gen, const char *path,
			enum scenario_compression compression,
			uint64_t *raw_bytes);

#endif /* SP_BENCH_SCENARIO_H */
