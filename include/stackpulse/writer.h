/* SPDX-License-Identifier: MIT */
/* stackpulse: the SPULSE3 writer (interning encoder, byte-identical to stackpulse 0.10.x). */
#ifndef STACKPULSE_WRITER_H
#define STACKPULSE_WRITER_H

#include <stdbool.h>

#include <stackpulse/alloc.h>
#include <stackpulse/api.h>
#include <stackpulse/sink.h>
#include <stackpulse/spool.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The writer interns frames, stack prefixes and threads and appends SPULSE3
 * records to a chunk buffer that it hands to a sink whenever it fills up
 * and on sp_writer_flush(). For the same sequence of calls it produces the
 * same bytes as stackpulse 0.10.x (SPULSE3 §7). Every call either writes
 * its records completely or writes nothing and returns an error.
 *
 * A writer is single-owner: one thread at a time.
 */
struct sp_writer;

/**
 * struct sp_writer_opts configures sp_writer_new(). Set @size to
 * sizeof(struct sp_writer_opts); zero fields mean defaults.
 *
 * @start_timestamp_us / @sample_interval_us: header metadata (0 = absent).
 * @chunk_size: bytes buffered before a sink write (default 64 KiB; a single
 *   record larger than this is written as one bigger chunk).
 * @id_limit: maximum number of module, frame, stack-node and thread ids
 *   each (default and maximum 0xFFFFFFFF, the SPULSE3 sentinel); lower it to
 *   bound the writer's intern tables. Reaching it fails with SP_EIDSPACE.
 */
struct sp_writer_opts {
	size_t size;
	const struct sp_allocator *allocator;
	uint64_t start_timestamp_us;
	uint64_t sample_interval_us;
	size_t chunk_size;
	uint32_t id_limit;
};

/**
 * sp_writer_new creates a writer and writes and flushes the header, so a
 * Tail can open the destination immediately.
 * @param sink Takes ownership of `sink` (also when this call fails).
 * @return 0, -EINVAL (bad options or NULL sink), -ENOMEM, or a sink error.
 * Caller owns the result; free it with sp_writer_free().
 * Thread: any. Allocates: yes. Blocks: sink-dependent.
 */
SP_API int sp_writer_new(struct sp_sink *sink,
			 const struct sp_writer_opts *opts,
			 struct sp_writer **out);

/**
 * sp_writer_module writes a module record (tag 1) and clears the unpinned
 * frame cache.
 * @param module @id and @deactivated_at are ignored. User modules need
 *        pid >= 1; kernel modules are written with pid -1. The path must be
 *        valid UTF-8 and at most SP_SPOOL_PATH_MAX bytes.
 * @param id_out receives the new module id (may be NULL).
 * @return 0, -EINVAL, -ENAMETOOLONG, SP_EIDSPACE, -ENOMEM.
 * Thread: single-owner. Allocates: amortized. Blocks: sink-dependent.
 */
SP_API int sp_writer_module(struct sp_writer *writer,
			    const struct sp_module *module, uint32_t *id_out);

/**
 * sp_writer_sample writes one sample with frames given leaf first. New
 * frames, stack nodes and the thread are defined first (root to leaf). An
 * empty frame list writes nothing.
 * @param timestamp_ns perf monotonic clock, ns.
 * @param pid,tid must be >= 1.
 * @param frames pinned frames must name an existing module and lie inside
 *        it; truncated markers must have both addresses 0.
 * @return 0, -EINVAL, SP_EDELTA (delta to the previous sample outside
 *         int64), SP_EIDSPACE, -ENOMEM, or a sink error.
 * Thread: single-owner. Allocates: amortized (no when all frames, nodes and
 * the thread are known). Blocks: sink-dependent.
 */
SP_API int sp_writer_sample(struct sp_writer *writer, uint64_t timestamp_ns,
			    int32_t pid, int32_t tid,
			    const struct sp_frame *frames, size_t nframes);

/**
 * sp_writer_stack defines a stack without writing a sample: the frames
 * (leaf first) are interned below node @parent (SP_NO_PARENT: a whole
 * stack from its root), new frame and stack-node records are written,
 * and the leaf node id is returned for sp_writer_sample_node(). Node ids
 * never expire (a later module record does not change what a defined
 * node means), so a stack may be defined once and sampled much later.
 * @param parent SP_NO_PARENT or an existing node id.
 * @param frames as for sp_writer_sample(); may be empty when @parent is a
 *        node (then *@leaf = @parent).
 * @return 0, -EINVAL, SP_EIDSPACE, -ENOMEM, or a sink error.
 * Thread: single-owner. Allocates: amortized. Blocks: sink-dependent.
 */
SP_API int sp_writer_stack(struct sp_writer *writer, uint32_t parent,
			   const struct sp_frame *frames, size_t nframes,
			   uint32_t *leaf);

/**
 * sp_writer_sample_node writes one sample of a stack already defined
 * (sp_writer_stack(), or the leaf of an earlier sample): one sample
 * record, and the thread record first if the thread is new.
 * @param leaf an existing stack-node id.
 * @return 0, -EINVAL (pid or tid < 1, unknown node), SP_EDELTA,
 *         SP_EIDSPACE, -ENOMEM, or a sink error.
 * Thread: single-owner. Allocates: only for a new thread. Blocks:
 * sink-dependent.
 */
SP_API int sp_writer_sample_node(struct sp_writer *writer,
				 uint64_t timestamp_ns, int32_t pid,
				 int32_t tid, uint32_t leaf);

/**
 * sp_writer_python_runtime writes a Python-runtime status record (tag 6).
 * @return 0, -EINVAL (pid < 1), -ENOMEM, or a sink error.
 * Thread: single-owner. Allocates: amortized. Blocks: sink-dependent.
 */
SP_API int sp_writer_python_runtime(struct sp_writer *writer,
				    uint64_t timestamp_ns, int32_t pid,
				    bool is_python_runtime);

/**
 * sp_writer_deactivate_process writes tag 7 (retire every active user
 * module of @pid) and clears the unpinned frame cache.
 * @return 0, -EINVAL (pid < 1), -ENOMEM, or a sink error.
 * Thread: single-owner. Allocates: amortized. Blocks: sink-dependent.
 */
SP_API int sp_writer_deactivate_process(struct sp_writer *writer, int32_t pid);

/**
 * sp_writer_deactivate_module writes tag 8 (retire one module) and clears
 * the unpinned frame cache.
 * @return 0, -EINVAL (no such module), -ENOMEM, or a sink error.
 * Thread: single-owner. Allocates: amortized. Blocks: sink-dependent.
 */
SP_API int sp_writer_deactivate_module(struct sp_writer *writer,
				       uint32_t module_id);

/**
 * sp_writer_flush hands buffered records to the sink and flushes it.
 * @return 0 or a sink error (the buffered bytes are kept for a retry).
 * Thread: single-owner. Allocates: no. Blocks: sink-dependent.
 */
SP_API int sp_writer_flush(struct sp_writer *writer);

/**
 * sp_writer_push hands buffered records to the sink without flushing it:
 * a reader tailing the destination sees them (a file sink: in the page
 * cache), but they are not made durable. Cheaper than sp_writer_flush()
 * for keeping a live reader fed.
 * @return 0 or a sink error (the buffered bytes are kept for a retry).
 * Thread: single-owner. Allocates: no. Blocks: sink-dependent.
 */
SP_API int sp_writer_push(struct sp_writer *writer);

/**
 * sp_writer_frame_count is the number of frame records written so far,
 * i.e. the id the next new frame gets: a retirement written now falls
 * there in the frame stream (SPULSE3 §6), which is how a side file names
 * the process generation that ends (sp_spool_frame_count() on the
 * reading side).
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API uint32_t sp_writer_frame_count(const struct sp_writer *writer);

/**
 * sp_writer_finish flushes and finishes the sink (ends a zstd stream).
 * Later writes fail with -EPIPE.
 * @return 0 or a sink error.
 * Thread: single-owner. Allocates: no. Blocks: sink-dependent.
 */
SP_API int sp_writer_finish(struct sp_writer *writer);

/**
 * sp_writer_sink returns the writer's sink, e.g. to read a memory sink.
 * Borrowed: valid until sp_writer_free() is called on the same object.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API struct sp_sink *sp_writer_sink(struct sp_writer *writer);

/**
 * sp_writer_bytes returns the number of spool bytes produced so far
 * (uncompressed, including the header and still-buffered records).
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API uint64_t sp_writer_bytes(const struct sp_writer *writer);

/**
 * sp_writer_free releases the writer and its sink without flushing
 * (call sp_writer_finish() first to keep buffered records). NULL is a no-op.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API void sp_writer_free(struct sp_writer *writer);

#ifdef __cplusplus
}
#endif

#endif /* STACKPULSE_WRITER_H */
