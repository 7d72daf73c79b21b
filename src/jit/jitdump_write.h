/* SPDX-License-Identifier: MIT */
/* Encoding jitdump records (the recorder's file for GDB JIT objects). */
#ifndef SP_JIT_JITDUMP_WRITE_H
#define SP_JIT_JITDUMP_WRITE_H

#include <stddef.h>
#include <stdint.h>

#include "mem.h"
#include "vec.h"

/*
 * The recorder turns the functions of GDB JIT objects into jitdump
 * records, so that everything the symbolizer learns about JIT code comes
 * through one format (and `perf inject --jit` can read the file too).
 * Records go into a byte vector (elem size 1) in the host's byte order,
 * laid out as jitdump.h describes; the caller writes the bytes out.
 */

/* Appends the 40-byte header (version 1, the host's e_machine). 0 or -ENOMEM. */
int sp__jitdump_put_header(struct sp__vec *out, const struct sp__mem *mem,
			   uint32_t pid, uint64_t timestamp);

/*
 * Appends a CODE_LOAD of @name (cut at 4 KiB) for code at @addr with
 * @code_len bytes of @code. 0, -EINVAL (a record over
 * SP__JITDUMP_RECORD_MAX) or -ENOMEM.
 */
int sp__jitdump_put_load(struct sp__vec *out, const struct sp__mem *mem,
			 uint64_t timestamp, uint32_t pid, uint32_t tid,
			 uint64_t addr, const void *code, size_t code_len,
			 uint64_t code_index, const char *name);

/* Appends a CODE_CLOSE record. 0 or -ENOMEM. */
int sp__jitdump_put_close(struct sp__vec *out, const struct sp__mem *mem,
			  uint64_t timestamp);

#endif /* SP_JIT_JITDUMP_WRITE_H */
