/* SPDX-License-Identifier: MIT */
/* stackpulse: the native unwinder (DWARF CFI tables, frame-pointer fallback). */
#ifndef STACKPULSE_UNWIND_H
#define STACKPULSE_UNWIND_H

#include <stackpulse/alloc.h>
#include <stackpulse/api.h>
#include <stackpulse/log.h>
#include <stackpulse/spool.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The unwinder turns a captured user stack (registers + a copy of the stack
 * bytes) into frames, leaf first, each pinned to the caller's module id
 * with a file-relative pc, ready for sp_writer_sample(). It is the code the
 * recorder uses; embedders that capture stacks by other means (eBPF,
 * signal handlers) call it directly.
 *
 * Per ELF image a compact CFI table is built once from .eh_frame (and
 * .debug_frame) and shared read-only; unwinding only reads tables and the
 * copied stack bytes, so any number of threads may unwind concurrently with
 * one sp_unwinder.
 */
struct sp_unwinder;

/**
 * Architectures of register sets (struct sp_regs @arch). A build of the
 * library unwinds the architecture it was built for (sp_unwind_arch());
 * SP_ARCH_NATIVE, the zero value, names that one.
 */
enum sp_arch {
	SP_ARCH_NATIVE = 0,
	SP_ARCH_X86_64 = 1,
	SP_ARCH_AARCH64 = 2,
};

/* x86-64 registers in DWARF numbering (System V psABI). */
enum sp_x86_64_reg {
	SP_X86_64_RAX = 0,
	SP_X86_64_RDX = 1,
	SP_X86_64_RCX = 2,
	SP_X86_64_RBX = 3,
	SP_X86_64_RSI = 4,
	SP_X86_64_RDI = 5,
	SP_X86_64_RBP = 6,
	SP_X86_64_RSP = 7,
	SP_X86_64_R8 = 8,
	SP_X86_64_R15 = 15,
	SP_X86_64_RIP = 16,
	SP_X86_64_NREGS = 17,
};

/*
 * AArch64 registers in DWARF numbering (AADWARF64): X0-X30 are 0-30, X29
 * the frame pointer, X30 the link register (the return address column of
 * CFI), then SP and PC.
 */
enum sp_aarch64_reg {
	SP_AARCH64_X0 = 0,
	SP_AARCH64_X19 = 19,
	SP_AARCH64_X28 = 28,
	SP_AARCH64_X29 = 29,
	SP_AARCH64_X30 = 30,
	SP_AARCH64_SP = 31,
	SP_AARCH64_PC = 32,
	SP_AARCH64_NREGS = 33,
};

/* Registers struct sp_regs has room for: the largest NREGS above. */
#define SP_REGS_MAX 33

/** Register ABI of a sample (perf's PERF_SAMPLE_REGS_ABI_*). */
enum sp_regs_abi {
	SP_REGS_ABI_NONE = 0,
	SP_REGS_ABI_32 = 1,
	SP_REGS_ABI_64 = 2,
};

/**
 * struct sp_regs is a user register set of one architecture, in that
 * architecture's DWARF numbering (enum sp_x86_64_reg, enum
 * sp_aarch64_reg): @r[n] is register n, and bit n of @valid says that it
 * holds a captured value. @arch is an enum sp_arch, @abi an enum
 * sp_regs_abi. The layout is the same on every architecture (280 bytes);
 * only the meaning of the indices changes with @arch.
 */
struct sp_regs {
	uint64_t r[SP_REGS_MAX];
	uint64_t valid;
	uint32_t arch;
	uint32_t abi;
};

/** Registers with the same role on every architecture (sp_regs_get). */
enum sp_reg_role {
	SP_REG_PC = 0, /* RIP, PC */
	SP_REG_SP = 1, /* RSP, SP */
	SP_REG_FP = 2, /* RBP, X29 */
};

/**
 * sp_regs_get reads the register that plays @role in @regs, whatever its
 * architecture's numbering.
 * @return 0 with *@out set; -ENOENT when that register was not captured
 *         (its @valid bit is clear); -EINVAL for a NULL argument, an
 *         unknown role, or an architecture this build does not unwind.
 * Thread: any. Allocates: no. Blocks: no.
 */
SP_API int sp_regs_get(const struct sp_regs *regs, enum sp_reg_role role,
		       uint64_t *out);

/**
 * sp_unwind_arch is the architecture this build of the library unwinds
 * (enum sp_arch, never SP_ARCH_NATIVE); its register sets use that
 * numbering.
 * Thread: any. Allocates: no. Blocks: no.
 */
SP_API uint32_t sp_unwind_arch(void);

/**
 * sp_arch_name names an architecture as ELF tools do ("x86_64",
 * "aarch64"); SP_ARCH_NATIVE names the build's. NULL for an unknown
 * value. The string is static.
 * Thread: any. Allocates: no. Blocks: no.
 */
SP_API const char *sp_arch_name(uint32_t arch);

/** Flags of struct sp_mapping. */
#define SP_MAPPING_VDSO 0x1u /* the [vdso] image of this kernel */

/**
 * struct sp_mapping is one executable mapping of the unwound process.
 * Arrays of mappings passed to the unwinder are sorted by @start and do
 * not overlap. @path names the file to read unwind tables from (for a
 * deleted file, a /proc/PID/map_files/... path); @dev_major, @dev_minor
 * and @inode (0 = unknown) guard against a file replaced since it was
 * mapped. @module_id is reported in the frames.
 */
struct sp_mapping {
	uint64_t start;
	uint64_t end;
	uint64_t file_offset;
	uint64_t inode;
	uint32_t dev_major;
	uint32_t dev_minor;
	const char *path;
	uint32_t module_id;
	uint32_t flags;
};

/**
 * Why a sample's stack was cut short: stackpulse's SampleErrorKind, then
 * SP_SAMPLE_ERR_DEPTH_LIMIT (the unwinder's max_depth, or the caller's
 * frame array, was full while the stack went on).
 */
enum sp_sample_error {
	SP_SAMPLE_ERR_REGISTER_CAPTURE = 0,
	SP_SAMPLE_ERR_STACK_READ = 1,
	SP_SAMPLE_ERR_STACK_TRUNCATED = 2,
	SP_SAMPLE_ERR_DID_NOT_ADVANCE = 3,
	SP_SAMPLE_ERR_RETURN_ADDRESS_NULL = 4,
	SP_SAMPLE_ERR_MOVED_BACKWARDS = 5,
	SP_SAMPLE_ERR_INTEGER_OVERFLOW = 6,
	SP_SAMPLE_ERR_USER_REGISTERS_MISSING = 7,
	SP_SAMPLE_ERR_DEPTH_LIMIT = 8,
	SP_SAMPLE_ERR_COUNT = 9,
};

/** Why a step used the frame-pointer fallback (UnwindFallbackKind). */
enum sp_unwind_fallback {
	SP_FALLBACK_NO_MODULE = 0,
	SP_FALLBACK_NO_MODULE_UNWIND_DATA = 1,
	SP_FALLBACK_EH_FRAME_HDR_LOOKUP = 2,
	SP_FALLBACK_DWARF_CFI_INDEX_LOOKUP = 3,
	SP_FALLBACK_DWARF_FDE_READ = 4,
	SP_FALLBACK_DWARF_UNWIND_INFO = 5,
	SP_FALLBACK_DWARF_SP_MOVED_BACKWARDS = 6,
	SP_FALLBACK_DWARF_DID_NOT_ADVANCE = 7,
	SP_FALLBACK_DWARF_NO_CFA = 8,
	SP_FALLBACK_DWARF_NO_RETURN_ADDRESS = 9,
	SP_FALLBACK_DWARF_NO_FRAME_POINTER = 10,
	SP_FALLBACK_OTHER_UNWIND_FORMAT = 11,
	SP_FALLBACK_COUNT = 12,
};

/**
 * struct sp_unwind_stats accumulates counters; the caller owns it and
 * passes it to each call (one per thread, or sum them). Every truncated
 * stack counts exactly one reason in @errors, so @errors sum to
 * @truncated.
 */
struct sp_unwind_stats {
	uint64_t samples;
	uint64_t frames;
	uint64_t truncated; /* samples that ended with a truncated marker */
	uint64_t errors[SP_SAMPLE_ERR_COUNT];
	uint64_t fallbacks[SP_FALLBACK_COUNT];
};

/** Default of the max_depth options (unwinder and recorder). */
#define SP_DEPTH_DEFAULT 1024u
/**
 * Largest max_depth: every frame takes at least the 8 bytes of its return
 * address, so a 65528-byte stack copy holds at most 8191 frames.
 */
#define SP_DEPTH_MAX 8192u

/**
 * sp_unwind_stats_add adds every counter of @from to @to (summing the
 * per-thread counters of several unwinding threads, say).
 * @param to receives the sums (not NULL).
 * @param from the counters to add (not NULL; may be @to).
 * Thread: any (the caller serialises access to @to). Allocates: no.
 * Blocks: no.
 */
SP_API void sp_unwind_stats_add(struct sp_unwind_stats *to,
				const struct sp_unwind_stats *from);

/**
 * struct sp_unwinder_opts configures sp_unwinder_new(). Set @size to
 * sizeof(struct sp_unwinder_opts); zero fields mean defaults.
 * @max_depth: frames per stack before the truncated marker (default
 * SP_DEPTH_DEFAULT, at most SP_DEPTH_MAX); a stack cut there counts
 * SP_SAMPLE_ERR_DEPTH_LIMIT.
 */
struct sp_unwinder_opts {
	size_t size;
	const struct sp_allocator *allocator;
	const struct sp_logger *logger;
	uint32_t max_depth;
	uint32_t flags;
};

/**
 * sp_unwinder_new creates an unwinder with an empty image/table cache.
 * @return 0, -EINVAL, -ENOMEM.
 * Caller owns the result; free it with sp_unwinder_free().
 * Thread: any. Allocates: yes. Blocks: no.
 */
SP_API int sp_unwinder_new(const struct sp_unwinder_opts *opts,
			   struct sp_unwinder **out);

/**
 * sp_unwinder_free releases the unwinder and its tables. NULL is a no-op.
 * Thread: single-owner (no unwind may be running). Allocates: no.
 */
SP_API void sp_unwinder_free(struct sp_unwinder *unwinder);

/**
 * sp_unwinder_prepare opens @mapping's image and builds its CFI table now,
 * so that later unwinds through it do not (the recorder calls it when a
 * module appears).
 * @return 0, -errno (file cannot be opened), -ESTALE (file replaced),
 *         SP_ECORRUPT (malformed ELF), -ENOMEM. A file without CFI is not
 *         an error (frame-pointer fallback is used).
 * Thread: any. Allocates: yes. Blocks: yes (reads the file).
 */
SP_API int sp_unwinder_prepare(struct sp_unwinder *unwinder,
			       const struct sp_mapping *mapping);

/**
 * sp_unwinder_unwind walks one captured stack.
 * @param regs user registers at the sample: arch SP_ARCH_NATIVE or
 *        sp_unwind_arch(), abi SP_REGS_ABI_64, the pc and stack pointer
 *        required (on AArch64 also the link register, for the leaf).
 * @param stack,stack_len copy of user memory starting at address
 *        @stack_addr (normally the sample's stack pointer).
 * @param maps,nmaps the process's executable mappings, sorted by start.
 * @param frames,cap output, leaf first: the leaf pc as sampled, callers as
 *        return address - 1 (the call site), except exact pcs where no
 *        call was made: a frame a signal interrupted, and a signal
 *        trampoline (__restore_rt) at the return address the kernel
 *        pushed; each pinned to its mapping's module_id with a
 *        file-relative pc, or unpinned (SP_NO_MODULE) when no mapping
 *        covers it. When unwinding stops early (error, or max_depth or
 *        @cap reached: SP_SAMPLE_ERR_DEPTH_LIMIT) the last entry is a
 *        truncated marker; at @cap it replaces the last frame.
 * @param stats counters to add to (may be NULL).
 * @return the number of frames stored (>= 0), or -EINVAL for bad
 *         arguments (registers of another architecture among them). Unwinding problems are not errors: they are counted
 *         in @stats and end the stack with the marker.
 * Thread: any; uses about 5 KiB of the calling thread's stack. Allocates:
 * only to build the table of an image seen for the first time. Blocks:
 * only then (file I/O).
 */
SP_API int sp_unwinder_unwind(struct sp_unwinder *unwinder,
			      const struct sp_regs *regs, const void *stack,
			      size_t stack_len, uint64_t stack_addr,
			      const struct sp_mapping *maps, size_t nmaps,
			      struct sp_frame *frames, size_t cap,
			      struct sp_unwind_stats *stats);

#ifdef __cplusplus
}
#endif

#endif /* STACKPULSE_UNWIND_H */
