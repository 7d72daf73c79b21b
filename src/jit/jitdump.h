/* SPDX-License-Identifier: MIT */
/* jitdump files (jit-PID.dump, perf's JIT format): layout and a bounded parser. */
#ifndef SP_JIT_JITDUMP_H
#define SP_JIT_JITDUMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * A jitdump file is what a JIT writes for `perf inject --jit`: a header,
 * then records appended as code is generated (tools/perf/util/jitdump.h
 * is the reference; Python 3.13 -X perf_jit, V8 --perf-prof and the JVMTI
 * agent write it). Every field is in the writer's byte order; a header
 * magic read backwards means the other order, and this parser swaps.
 *
 *   header  | magic u32 | version u32 | size u32 | elf_mach u32 |
 *           | pad u32 | pid u32 | timestamp u64 | flags u64 |  (size bytes)
 *   record  | id u32 | size u32 | timestamp u64 | body ... |   (size bytes)
 *
 *   0 CODE_LOAD   pid u32, tid u32, vma u64, code_addr u64, code_size u64,
 *                 code_index u64, name (NUL-terminated), code bytes
 *   1 CODE_MOVE   pid u32, tid u32, vma u64, old_code_addr u64,
 *                 new_code_addr u64, code_size u64, code_index u64
 *   2 DEBUG_INFO  code_addr u64, nr_entry u64, then nr_entry times
 *                 { addr u64, line i32, discrim i32, file (NUL-terminated) }
 *   3 CODE_CLOSE  (no body)
 *   4 UNWINDING   unwinding_size u64, eh_frame_hdr_size u64,
 *                 mapped_size u64, data: .eh_frame then .eh_frame_hdr
 *                 (unwinding_size bytes in all)
 *
 * DEBUG_INFO and UNWINDING describe the CODE_LOAD that follows them.
 * Timestamps are CLOCK_MONOTONIC nanoseconds (the clock of perf samples)
 * unless the header flags say they are architecture timestamps (TSC),
 * which cannot be compared with samples.
 *
 * The parser works on bytes in memory and hands out pointers into them
 * (zero copy). It tells a record cut off at the end of the bytes
 * (SP_ETRUNCATED: the writer may still be appending it) from one that
 * cannot be valid (SP_ECORRUPT); every size and count is checked before
 * use, and records are at most SP__JITDUMP_RECORD_MAX bytes.
 */

#define SP__JITDUMP_MAGIC 0x4A695444u	      /* "JiTD" */
#define SP__JITDUMP_MAGIC_SWAPPED 0x4454694Au /* the other byte order */
#define SP__JITDUMP_VERSION 1
#define SP__JITDUMP_HEADER_SIZE 40
#define SP__JITDUMP_HEADER_MAX 4096 /* a longer header is not a jitdump */
#define SP__JITDUMP_PREFIX_SIZE 16
#define SP__JITDUMP_FLAG_ARCH_TIMESTAMP 1ull
/* One record: bigger ones are corrupt (the largest JIT blobs are KBs). */
#define SP__JITDUMP_RECORD_MAX (64u << 20)

enum sp__jitdump_id {
	SP__JITDUMP_CODE_LOAD = 0,
	SP__JITDUMP_CODE_MOVE = 1,
	SP__JITDUMP_DEBUG_INFO = 2,
	SP__JITDUMP_CODE_CLOSE = 3,
	SP__JITDUMP_UNWINDING_INFO = 4,
};

struct sp__jitdump_header {
	uint32_t version;
	uint32_t size; /* bytes, >= SP__JITDUMP_HEADER_SIZE */
	uint32_t elf_mach;
	uint32_t pid;
	uint64_t timestamp;
	uint64_t flags;
	bool swapped; /* fields are in the other byte order */
};

struct sp__jitdump_load {
	uint32_t pid;
	uint32_t tid;
	uint64_t vma;
	uint64_t code_addr;
	uint64_t code_size;
	uint64_t code_index;
	const char *name; /* not NUL-terminated here; name_len bytes */
	size_t name_len;
	const uint8_t *code; /* code_size bytes */
};

struct sp__jitdump_move {
	uint32_t pid;
	uint32_t tid;
	uint64_t vma;
	uint64_t old_addr;
	uint64_t new_addr;
	uint64_t code_size;
	uint64_t code_index;
};

/* The entries of a DEBUG_INFO record, validated; read with _next_line. */
struct sp__jitdump_debug {
	uint64_t code_addr;
	uint64_t count;
	const uint8_t *entries;
	size_t len;
};

struct sp__jitdump_line {
	uint64_t addr;
	int32_t line;
	int32_t discrim;
	const char *file; /* file_len bytes, no NUL */
	size_t file_len;
};

struct sp__jitdump_unwind {
	const uint8_t *eh_frame;
	size_t eh_frame_len;
	const uint8_t *hdr; /* .eh_frame_hdr, right after .eh_frame */
	size_t hdr_len;
	uint64_t mapped_size;
};

struct sp__jitdump_record {
	uint32_t id; /* enum sp__jitdump_id, or an unknown id (skip it) */
	uint32_t size;
	uint64_t timestamp;
	union {
		struct sp__jitdump_load load;
		struct sp__jitdump_move move;
		struct sp__jitdump_debug debug;
		struct sp__jitdump_unwind unwind;
	} u;
};

/*
 * Parses the header at buf[0..len). Returns its size (> 0: the first
 * record starts there), SP_ETRUNCATED (fewer bytes than the header needs),
 * SP_ECORRUPT (no jitdump magic, or a header size below 40 or above
 * SP__JITDUMP_HEADER_MAX) or -EOPNOTSUPP (a version or flag bit this
 * parser does not know).
 */
int sp__jitdump_parse_header(const void *buf, size_t len,
			     struct sp__jitdump_header *out);

/*
 * Parses the record at buf[0..len) of a file with header @h. Returns its
 * size (> 0), SP_ETRUNCATED (the record runs past @len) or SP_ECORRUPT
 * (a size below 16 or above SP__JITDUMP_RECORD_MAX, or a body that does
 * not fit its kind: a name without its NUL, code or entries past the
 * record). Unknown ids are returned as they are, for the caller to skip.
 */
int sp__jitdump_parse_record(const struct sp__jitdump_header *h,
			     const void *buf, size_t len,
			     struct sp__jitdump_record *out);

/*
 * Reads the next entry of @d (advancing it) into @out. Returns 1, or 0
 * once every entry was read. The record parser validated the entries.
 */
int sp__jitdump_next_line(const struct sp__jitdump_header *h,
			  struct sp__jitdump_debug *d,
			  struct sp__jitdump_line *out);

/* Whether record timestamps are comparable with perf sample times. */
static inline bool sp__jitdump_monotonic(const struct sp__jitdump_header *h)
{
	return !(h->flags & SP__JITDUMP_FLAG_ARCH_TIMESTAMP);
}

#endif /* SP_JIT_JITDUMP_H */
