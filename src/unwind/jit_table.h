/* SPDX-License-Identifier: MIT */
/* Unwind tables for JIT code that has no file and no CFI, from its own bytes. */
#ifndef SP_UNWIND_JIT_TABLE_H
#define SP_UNWIND_JIT_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include <stackpulse/unwind.h>

#include "for_engine/unwind_jit.h" /* SP__MAPPING_JIT, sp__unwinder_jit_tiled */

/*
 * Generated code in anonymous memory has no ELF file, so no CFI, and the
 * frame-pointer fallback is only right where the code keeps a frame
 * pointer. Some JIT code can be described exactly from its instructions
 * instead. The recorder reads the code from the target (it knows the
 * process), the unwinder turns it into a table of the same shape as an
 * ELF image's (struct sp__cfi_table) and registers it under an id that
 * a mapping then names (for_engine/unwind_jit.h, the engine's door:
 * sp__unwinder_jit_tiled and SP__MAPPING_JIT), and its frames are stepped by the table's rows at pc - mapping start,
 * on the fast path like any CFI row (no frame-pointer guess, no fallback
 * counted). Today's kind of code: tiled trampolines, a short
 * straight-line function copied back to back over the whole mapping, as
 * CPython's -X perf trampolines are (Python/perf_trampoline.c copies
 * _Py_trampoline_func_start..end over each 64 KiB arena). Its template is
 * decoded instruction by instruction by the architecture's decoder
 * (arch/<arch>_jit.c); every copy is checked byte for byte, and a row is
 * made only for bytes that were checked. Issue 18 registers tables built
 * from jitdump unwinding info and GDB JIT objects the same way.
 */

/*
 * One row of a decoded template: at template offset @off (until the next
 * row) the frame has these rules. Registers in DWARF numbering.
 * @cfa_reg/@cfa_off: CFA = reg + off; the return address is at CFA - 8.
 * @saved[r]: register r saved at CFA - 8 * saved[r] (0: not saved).
 */
#define SP__JIT_TPL_ROWS 32
#define SP__JIT_TPL_MAX 256 /* template bytes */

struct sp__jit_row {
	uint32_t off;
	uint8_t cfa_reg;
	int32_t cfa_off;
	uint8_t saved[SP_X86_64_NREGS];
};

struct sp__jit_template {
	size_t len; /* bytes, ending with the return */
	size_t nrows;
	struct sp__jit_row rows[SP__JIT_TPL_ROWS];
};

/*
 * arch/<arch>_jit.c: decodes the function at the start of @code (@len
 * bytes) into @out. Only straight-line code made of the instructions a
 * trampoline needs (stack adjustments, pushes and pops, the frame-pointer
 * prologue and epilogue, calls) up to a return is accepted, and it must
 * call something (else no frame of it is ever on a stack).
 * Returns 0, or -EINVAL for anything else.
 */
int sp__arch_jit_decode(const uint8_t *code, size_t len,
			struct sp__jit_template *out);

/*
 * jit_table.c: when @code (@len bytes, a whole mapping as read from the
 * target) is one template tiled from its start (copies every @stride >=
 * template bytes, all identical), builds the table covering the copies.
 * Returns 0, -EINVAL (not tiled code), -ENOMEM, -E2BIG.
 */
struct sp__cfi_table;
struct sp__mem;
int sp__jit_tiled_table(const struct sp__mem *mem, const uint8_t *code,
			size_t len, struct sp__cfi_table **out);

#endif /* SP_UNWIND_JIT_TABLE_H */
