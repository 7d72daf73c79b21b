/* SPDX-License-Identifier: MIT */
/* stackpulse: SPULSE3 data model shared by the writer and the three readers. */
#ifndef STACKPULSE_SPOOL_H
#define STACKPULSE_SPOOL_H

#include <stackpulse/alloc.h>
#include <stackpulse/api.h>
#include <stackpulse/log.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A spool is an append-only SPULSE3 file (docs/spool-format.md and
 * spec SPULSE3): a header, then records that define modules, frames, stack
 * nodes and threads, and samples that refer to them by dense ids.
 *
 * The transparent structs below are plain data (ABI); their sizes are
 * checked by tests/format/test_abi.c.
 */

/** Sentinel module id: the frame is not pinned to / resolved to a module. */
#define SP_NO_MODULE UINT32_MAX
/** Sentinel stack-node parent: the node is a root (outermost caller). */
#define SP_NO_PARENT UINT32_MAX
/** Sentinel for struct sp_module.deactivated_at: never deactivated. */
#define SP_NEVER UINT32_MAX

/** Size of the header magic "SPULSE3\0". */
#define SP_SPOOL_MAGIC_SIZE 8

/**
 * Longest module path (bytes) the readers accept and the writer writes:
 * 1 MiB, 256 times PATH_MAX (the kernel never reports a longer path, even
 * with every byte escaped). A longer claim inside the file is corrupt (a
 * claim past its end is a cut-off tail, SPULSE3 §9.2), so no record makes
 * a reader allocate more than this plus a hundred bytes, also for zstd
 * input whose decoded size is unknown.
 */
#define SP_SPOOL_PATH_MAX (1024 * 1024)

/**
 * Profile modes. SPULSE3 has no mode field and no sample weights, so a
 * Recorder in off-CPU or wall mode (struct sp_recorder_opts.mode) marks
 * its spool with module records that 0.10.x readers read as ordinary
 * kernel modules (docs/explanation/off-cpu.md):
 *  - before any sample, an empty kernel module (start = end = 0) whose
 *    path is SP_MODE_MODULE_OFF_CPU or SP_MODE_MODULE_WALL names the mode;
 *  - every off-CPU stack ends, at its leaf, in a frame pinned to the
 *    kernel module SP_OFF_CPU_MODULE (start 0, end 2): address
 *    SP_OFF_CPU_BLOCKED (the thread waited) or SP_OFF_CPU_PREEMPTED (it
 *    was runnable but preempted). A blocked span becomes one such
 *    sample per sample interval of the header, so every reader weighs
 *    off-CPU time like on-CPU time.
 */
enum sp_profile_mode {
	SP_PROFILE_CPU = 0,	/* cpu-clock samples: on-CPU time */
	SP_PROFILE_OFF_CPU = 1, /* time switched out (blocked or preempted) */
	SP_PROFILE_WALL = 2,	/* both: a thread's total is its wall time */
};
#define SP_MODE_MODULE_OFF_CPU "[stackpulse:off-cpu]"
#define SP_MODE_MODULE_WALL "[stackpulse:wall]"
#define SP_OFF_CPU_MODULE "[off-cpu]"
#define SP_OFF_CPU_BLOCKED 0u
#define SP_OFF_CPU_PREEMPTED 1u

enum sp_frame_mode {
	SP_FRAME_USER = 0,
	SP_FRAME_KERNEL = 1,
	/** Synthetic marker: native unwinding stopped before the root. */
	SP_FRAME_TRUNCATED = 2,
};

/**
 * struct sp_frame is one raw (unsymbolized) frame.
 *
 * Pinned frames name a module (@module_id != SP_NO_MODULE) and carry the
 * address in the module's file-offset space (@file_relative_ip); @abs_ip is
 * the absolute address. Unpinned frames have @module_id == SP_NO_MODULE and
 * @file_relative_ip == @abs_ip. The truncated marker has mode
 * SP_FRAME_TRUNCATED, no module and both addresses 0. Non-leaf addresses
 * are already "return address - 1".
 */
struct sp_frame {
	uint64_t abs_ip;
	uint64_t file_relative_ip;
	uint32_t module_id;
	uint32_t mode; /* enum sp_frame_mode */
};

/**
 * struct sp_module is one executable mapping generation.
 *
 * Addresses are absolute, @end exclusive; @file_offset backs @start.
 * Zero in @inode, @dev_major, @dev_minor or @inode_generation means
 * unknown. Kernel modules have @is_kernel = 1 and @pid = -1.
 * @path is not necessarily NUL-free; readers add a terminating NUL after
 * @path_len bytes. Readers fill @id and @deactivated_at (the number of
 * frame records before the record that retired it, or SP_NEVER); the
 * writer ignores both.
 */
struct sp_module {
	uint64_t start;
	uint64_t end;
	uint64_t file_offset;
	uint64_t inode;
	uint64_t inode_generation;
	uint32_t dev_major;
	uint32_t dev_minor;
	int32_t pid;
	uint32_t is_kernel;
	const char *path;
	size_t path_len;
	uint32_t id;
	uint32_t deactivated_at;
};

/** struct sp_thread is one interned (pid, tid) pair. */
struct sp_thread {
	int32_t pid;
	int32_t tid;
};

/** struct sp_stack_node is one prefix-tree node: a frame and its caller. */
struct sp_stack_node {
	uint32_t parent; /* SP_NO_PARENT for a root */
	uint32_t frame;
	uint32_t depth; /* 1 for a root */
};

/**
 * struct sp_sample is one decoded sample. @stack is the leaf stack-node id;
 * @thread the thread index; @timestamp_ns the perf monotonic clock.
 */
struct sp_sample {
	uint64_t timestamp_ns;
	int32_t pid;
	int32_t tid;
	uint32_t thread;
	uint32_t stack;
};

/** struct sp_python_record is a Python-runtime status change (tag 6). */
struct sp_python_record {
	uint64_t timestamp_ns;
	int32_t pid;
	uint32_t is_python_runtime;
};

/**
 * struct sp_frame_context is a frame together with the module the spool
 * maps it to for a given process (SPULSE3 §6). @module_id is SP_NO_MODULE
 * when nothing owns the address; @file_relative_ip is then 0.
 */
struct sp_frame_context {
	struct sp_frame frame;
	uint32_t frame_id;
	uint32_t module_id;
	uint64_t file_relative_ip;
};

/**
 * struct sp_diag optionally receives details of the first failure of a
 * reader: the byte offset in the decoded stream of the record that failed
 * and a message such as "frame id 3 did not match expected 1".
 */
struct sp_diag {
	uint64_t offset;
	char message[160];
};

/** Reader flag: the caller owns the file; Tail may punch holes in it. */
#define SP_READER_OWNS_FILE 0x1u

/**
 * struct sp_reader_opts configures sp_snapshot_open(), sp_replay_open()
 * and sp_tail_open(). Set @size to sizeof(struct sp_reader_opts); zero
 * fields mean defaults. All pointers must outlive the reader.
 */
struct sp_reader_opts {
	size_t size;
	const struct sp_allocator *allocator;
	const struct sp_logger *logger;
	struct sp_diag *diag;
	uint32_t flags; /* SP_READER_* */
};

/*
 * struct sp_spool: the definitions a reader has decoded so far (modules,
 * frames, stack nodes, threads, header values). Every reader exposes one
 * through sp_snapshot_spool(), sp_replay_spool() or sp_tail_spool().
 * Borrowed: valid until the reader is closed; for a Tail the counts grow
 * on each sp_tail_poll(), earlier ids never change.
 *
 * All functions below: Thread: any, concurrently with other readers of the
 * same spool but not with sp_tail_poll(). Allocates: no. Blocks: no.
 */
struct sp_spool;

/** sp_spool_start_timestamp_us returns the header's timeline anchor (0 = none). */
SP_API uint64_t sp_spool_start_timestamp_us(const struct sp_spool *spool);
/** sp_spool_sample_interval_us returns the header's nominal interval (0 = none). */
SP_API uint64_t sp_spool_sample_interval_us(const struct sp_spool *spool);
/** sp_spool_module_count returns the number of module records decoded. */
SP_API uint32_t sp_spool_module_count(const struct sp_spool *spool);
/** sp_spool_frame_count returns the number of frame records decoded. */
SP_API uint32_t sp_spool_frame_count(const struct sp_spool *spool);
/** sp_spool_stack_count returns the number of stack-node records decoded. */
SP_API uint32_t sp_spool_stack_count(const struct sp_spool *spool);
/** sp_spool_thread_count returns the number of thread records decoded. */
SP_API uint32_t sp_spool_thread_count(const struct sp_spool *spool);

/**
 * sp_spool_mode returns the profile mode the spool's mode module names
 * (enum sp_profile_mode): SP_PROFILE_CPU when there is none (every
 * spool of a cpu-mode recorder, of 0.10.x and of other writers).
 */
SP_API int sp_spool_mode(const struct sp_spool *spool);

/**
 * sp_spool_off_cpu_frame tells whether frame @frame_id is an off-CPU
 * pseudo-frame (pinned to the SP_OFF_CPU_MODULE kernel module).
 * @return 0 (not one, or no such frame), 1 (blocked), 2 (preempted).
 */
SP_API int sp_spool_off_cpu_frame(const struct sp_spool *spool,
				  uint32_t frame_id);

/**
 * sp_spool_module copies module @id into @out. @out->path is borrowed from
 * the reader.
 * @return 0, or -EINVAL if @id is out of range.
 */
SP_API int sp_spool_module(const struct sp_spool *spool, uint32_t id,
			   struct sp_module *out);

/**
 * sp_spool_frame copies frame @id into @out.
 * @return 0, or -EINVAL if @id is out of range.
 */
SP_API int sp_spool_frame(const struct sp_spool *spool, uint32_t id,
			  struct sp_frame *out);

/**
 * sp_spool_stack_node copies stack node @id into @out.
 * @return 0, or -EINVAL if @id is out of range.
 */
SP_API int sp_spool_stack_node(const struct sp_spool *spool, uint32_t id,
			       struct sp_stack_node *out);

/**
 * sp_spool_thread copies thread @index into @out.
 * @return 0, or -EINVAL if @index is out of range.
 */
SP_API int sp_spool_thread(const struct sp_spool *spool, uint32_t index,
			   struct sp_thread *out);

/**
 * sp_spool_stack_frames walks stack node @stack to its root and stores up
 * to @cap frame ids, leaf first, in @frame_ids.
 * @return the full depth of the stack (which may exceed @cap), or -EINVAL.
 */
SP_API int sp_spool_stack_frames(const struct sp_spool *spool, uint32_t stack,
				 uint32_t *frame_ids, size_t cap);

/**
 * sp_spool_frame_time returns when frame @frame_id was first sampled:
 * the timestamp of the first sample record after the frame's record,
 * i.e. the sample the writer defined it for (SPULSE3 §7 writes a frame
 * right before the sample that first uses it). The Symbolizer names JIT
 * code at that time, so code freed and replaced at the same addresses
 * keeps its own name (docs/how-to/jit.md).
 * @return nanoseconds on the sample clock, or 0 when unknown: no sample
 *         followed the frame (yet), a module-table store, or @frame_id
 *         out of range.
 */
SP_API uint64_t sp_spool_frame_time(const struct sp_spool *spool,
				    uint32_t frame_id);

/**
 * sp_spool_resolve maps frame @frame_id, as used by a sample of process
 * @pid, to its module following SPULSE3 §6 (pinned frames: their module;
 * unpinned: the newest module visible to the frame that owns the address).
 * @return 0, or -EINVAL if @frame_id is out of range.
 */
SP_API int sp_spool_resolve(const struct sp_spool *spool, uint32_t frame_id,
			    int32_t pid, struct sp_frame_context *out);

/**
 * sp_spool_stack_contexts is sp_spool_stack_frames() followed by
 * sp_spool_resolve() for each frame, leaf first, up to @cap entries.
 * @return the full depth of the stack, or -EINVAL.
 */
SP_API int sp_spool_stack_contexts(const struct sp_spool *spool, uint32_t stack,
				   int32_t pid, struct sp_frame_context *out,
				   size_t cap);

/**
 * sp_spool_timestamp_us converts a sample timestamp to the header's wall
 * clock timeline (SPULSE3 §8): start + (ts - first sample ts) / 1000,
 * clamped at the start and saturating.
 * @return microseconds, or 0 when the spool has no timeline (start 0).
 */
SP_API uint64_t sp_spool_timestamp_us(const struct sp_spool *spool,
				      uint64_t timestamp_ns);

/**
 * sp_spool_kernel_addresses stores the distinct absolute addresses of
 * kernel-mode frames, sorted ascending, in @out (for sparse kernel symbol
 * loading).
 * @param out,cap destination; @out is also used as scratch space, so it
 *        must hold one entry per kernel-mode frame.
 * @return the number of distinct addresses stored when @cap was large
 *         enough; otherwise (including @out NULL) the number of
 *         kernel-mode frames: call again with at least that capacity.
 */
SP_API size_t sp_spool_kernel_addresses(const struct sp_spool *spool,
					uint64_t *out, size_t cap);

/**
 * sp_spool_python_records returns the Python-runtime records (tag 6) the
 * spool keeps, in file order: a Snapshot's or a Replay's spool keeps them
 * all; a Tail hands them out per batch instead (sp_tail_python_records()).
 * @param records receives the array (borrowed: valid until the reader is
 *        closed). @param count receives its length.
 * @return 0, or -EOPNOTSUPP when the spool keeps none by design (a Tail's,
 *         or one from sp_spool_new()).
 */
SP_API int sp_spool_python_records(const struct sp_spool *spool,
				   const struct sp_python_record **records,
				   size_t *count);

/*
 * A spool of one's own: definitions added one by one instead of decoded
 * from a file, read and resolved with the same functions (SPULSE3 §6: a
 * frame sees the modules added before it). A symbolizer built from a
 * module table keeps one (sp_symbolizer_new_modules()).
 */

/**
 * sp_spool_new creates an empty spool (no header values, no records).
 * @param allocator NULL for the default.
 * @return 0 or -ENOMEM.
 * Caller owns the result; free it with sp_spool_free().
 * Thread: any. Allocates: yes. Blocks: no.
 */
SP_API int sp_spool_new(const struct sp_allocator *allocator,
			struct sp_spool **out);

/**
 * sp_spool_add_module appends a copy of @module (its path too) as the
 * next module id, never deactivated; @module->id and
 * @module->deactivated_at are ignored, a kernel module gets pid -1, and
 * @module->path_len 0 means strlen(@module->path).
 * @param id receives the new id (may be NULL).
 * @return 0, -EINVAL (start >= end, a path length without a path, a user
 *         module without a pid > 0; NULL argument), -ENOMEM.
 * Thread: single-owner (no reader of @spool meanwhile). Allocates: yes.
 * Blocks: no.
 */
SP_API int sp_spool_add_module(struct sp_spool *spool,
			       const struct sp_module *module, uint32_t *id);

/**
 * sp_spool_add_frame appends @frame as the next frame id, as the decoder
 * would store it (a pinned frame names a module added before it).
 * @param id receives the new id (may be NULL).
 * @return 0, -EINVAL (unknown mode or module; NULL argument), -ENOMEM
 *         (also when the ids are exhausted).
 * Thread: single-owner (no reader of @spool meanwhile). Allocates: yes.
 * Blocks: no.
 */
SP_API int sp_spool_add_frame(struct sp_spool *spool,
			      const struct sp_frame *frame, uint32_t *id);

/**
 * sp_spool_free releases a spool from sp_spool_new(). NULL is a no-op; a
 * reader's spool is freed by its reader, never here.
 * Thread: single-owner. Allocates: no. Blocks: no.
 */
SP_API void sp_spool_free(struct sp_spool *spool);

#ifdef __cplusplus
}
#endif

#endif /* STACKPULSE_SPOOL_H */
