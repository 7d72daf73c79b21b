/* SPDX-License-Identifier: MIT */
/* GDB's JIT interface: the descriptor and entry list in a target, read safely. */
#ifndef SP_JIT_GDBJIT_H
#define SP_JIT_GDBJIT_H

#include <stdint.h>

#include "mem.h"
#include "vec.h"

/*
 * A JIT that supports debuggers (LLVM MCJIT/ORC, LuaJIT, Wasmtime, ...)
 * keeps, in its own memory, a descriptor the debugger finds by symbol
 * name, and a doubly linked list of in-memory ELF objects describing the
 * generated code (GDB manual, "JIT Interface"; 64-bit little-endian):
 *
 *   __jit_debug_descriptor  | version u32 = 1 | action_flag u32 |
 *                           | relevant_entry ptr | first_entry ptr |
 *   struct jit_code_entry   | next ptr | prev ptr | symfile_addr ptr |
 *                           | symfile_size u64 |
 *
 * Everything here is read from a live process that keeps changing it,
 * through a callback (process_vm_readv in the recorder, a byte blob in
 * tests and the fuzz target). So the walk trusts nothing: a list that
 * comes back to an entry it visited is a loop (-ELOOP), more than
 * SP__GDBJIT_MAX_OBJECTS entries is too many (-E2BIG), an entry that
 * cannot be read ends the walk with the read's error, and objects of
 * size 0 or over SP__GDBJIT_MAX_OBJECT are skipped and counted. The
 * entries found before the problem stay in the output: they are real.
 * An object is read whole and then its entry again: if the entry changed
 * meanwhile (the JIT freed the code while we read), the bytes are
 * dropped (-EAGAIN).
 *
 * Bounds are stackpulse 0.12's: 4,096 objects, 64 MiB per object,
 * 256 MiB in all (the caller keeps the running total).
 */

#define SP__GDBJIT_MAX_OBJECTS 4096
#define SP__GDBJIT_MAX_OBJECT (64u << 20)
#define SP__GDBJIT_MAX_TOTAL (256u << 20)
#define SP__GDBJIT_DESC_SIZE 24
#define SP__GDBJIT_ENTRY_SIZE 32

/* GDB's action_flag values. */
enum sp__gdbjit_action {
	SP__GDBJIT_NOACTION = 0,
	SP__GDBJIT_REGISTER = 1,
	SP__GDBJIT_UNREGISTER = 2,
};

/* Reads @len bytes at target address @addr: 0 or -errno (-EFAULT: unmapped). */
struct sp__gdbjit_ops {
	int (*read)(void *ctx, uint64_t addr, void *buf, size_t len);
	void *ctx;
};

struct sp__gdbjit_desc {
	uint32_t version;
	uint32_t action;
	uint64_t relevant;
	uint64_t first;
};

struct sp__gdbjit_entry {
	uint64_t addr; /* of the jit_code_entry */
	uint64_t next;
	uint64_t symfile;
	uint64_t size;
};

struct sp__gdbjit_stats {
	uint64_t walks;
	uint64_t loops;	       /* lists that came back to a visited entry */
	uint64_t too_many;     /* lists over SP__GDBJIT_MAX_OBJECTS */
	uint64_t read_errors;  /* descriptor or entry not readable */
	uint64_t bad_sizes;    /* objects of size 0 or over the bound */
	uint64_t over_total;   /* objects left out: 256 MiB reached */
	uint64_t raced;	       /* objects changed while being read */
	uint64_t bad_objects;  /* not a usable ELF object */
	uint64_t objects_read; /* objects read whole */
	uint64_t bytes_read;
};

/*
 * Reads the descriptor at @addr. Returns 0, the read's -errno, or
 * SP_ECORRUPT (a version other than 1: not a GDB JIT descriptor).
 */
int sp__gdbjit_read_desc(const struct sp__gdbjit_ops *ops, uint64_t addr,
			 struct sp__gdbjit_desc *out);

/*
 * Walks the list from @d->first, appending a struct sp__gdbjit_entry per
 * entry with a plausible object to @out (cleared first). Returns the
 * number of entries, or -ELOOP, -E2BIG, a read's -errno, -ENOMEM (with
 * the entries found before in @out).
 */
int sp__gdbjit_walk(const struct sp__gdbjit_ops *ops,
		    const struct sp__gdbjit_desc *d, const struct sp__mem *mem,
		    struct sp__vec *out, struct sp__gdbjit_stats *st);

/*
 * Reads the object of @e into a new buffer of e->size bytes, if it fits
 * in what is left of *@budget (which it then reduces). Returns 0 (*@buf
 * is the caller's; free it with sp__mem_free(mem, buf, e->size)),
 * -EFBIG (over the budget), -EAGAIN (the entry changed while reading),
 * the read's -errno, or -ENOMEM.
 */
int sp__gdbjit_read_object(const struct sp__gdbjit_ops *ops,
			   const struct sp__gdbjit_entry *e,
			   const struct sp__mem *mem, uint64_t *budget,
			   uint8_t **buf, struct sp__gdbjit_stats *st);

#endif /* SP_JIT_GDBJIT_H */
