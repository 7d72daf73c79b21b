/* SPDX-License-Identifier: MIT */
/* AArch64 JIT trampoline tables: none are built. */
#include <errno.h>

#include "jit_table.h"

/*
 * CPython's AArch64 trampoline keeps a frame record (stp x29, x30; mov
 * x29, sp; blr; ldp x29, x30; ret), so the unwinder's frame-record step
 * crosses it wherever x29 holds that record. No template is decoded
 * here: every arena is "not tiled code", and its frames take the counted
 * frame-pointer path instead of CFI rows.
 */
int sp__jit_tiled_table(const struct sp__mem *mem, const uint8_t *code,
			size_t len, struct sp__cfi_table **out)
{
	(void)mem;
	(void)code;
	(void)len;
	*out = NULL;
	return -EINVAL;
}
