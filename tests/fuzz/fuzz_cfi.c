/* SPDX-License-Identifier: MIT */
/* Fuzz target: CFI table build from an in-memory ELF, then unwind steps. */
#include "fuzz.h"
#include "unwind_internal.h"

/*
 * Input: | elf_len u32 LE | ELF image (elf_len bytes) | stack bytes |.
 * The ELF goes through the image layer (sp__image_open_memory) and the
 * table builder; on success every row must be found at its own start, and
 * up to 64 unwind steps run over the stack bytes with registers derived
 * from the input hash, applying rows when a lookup hits and the frame
 * pointer step otherwise. Nothing may crash, hang, leak or read outside
 * the stack copy (an exact-size heap copy, so ASan sees overreads).
 */

static void check_table(const struct sp__cfi_table *t)
{
	size_t i;

	for (i = 0; i < t->nrows; i++) {
		const struct sp__cfi_row *row = &t->rows[i];
		const struct sp__cfi_rules *rules,
			*hit = sp__cfi_table_find(t, t->base + row->pc);

		FUZZ_CHECK(row->rules < t->nrules);
		rules = &t->rules[row->rules];
		FUZZ_CHECK(i == 0 || t->rows[i - 1].pc < row->pc);
		FUZZ_CHECK(hit ==
			   (row->rules == SP__RULES_NONE ? NULL : rules));
		FUZZ_CHECK(!(rules->flags & SP__ROW_EXTRA) ||
			   rules->extra < t->nextras);
	}
}

static void run_steps(const struct sp__cfi_table *t, const uint8_t *stack,
		      size_t len, uint64_t h)
{
	struct sp__stack s = { stack, len, 0x7ffe0000 };
	struct sp_regs cur = { .valid = 0x1ffff, .abi = SP_REGS_ABI_64 };
	struct sp_regs next;
	struct sp__step_fail fail;
	int i, ret;

	for (i = 0; i < SP_X86_64_NREGS; i++)
		cur.r[i] = s.addr + ((h >> (i * 3)) & 0x1f8);
	cur.r[SP_X86_64_RIP] = t->base + (t->span ? h % t->span : 0);
	for (i = 0; i < 64; i++) {
		const struct sp__cfi_rules *row =
			sp__cfi_table_find(t, cur.r[SP_X86_64_RIP]);

		if (row)
			ret = sp__arch_step_cfi(t, row, &s, &cur, &next, &fail);
		else
			ret = sp__arch_step_fp(&s, &cur, &next, &fail);
		if (ret != 0)
			break;
		FUZZ_CHECK(next.valid & (1u << SP_X86_64_RSP));
		cur = next;
		cur.r[SP_X86_64_RIP]--;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp__cfi_table *t = NULL;
	struct sp__image *img;
	struct fuzz_alloc a;
	struct sp__mem mem;
	uint8_t *elf, *stack;
	size_t elf_len;

	if (size < 4)
		return 0;
	elf_len = (size_t)data[0] | (size_t)data[1] << 8 |
		  (size_t)data[2] << 16 | (size_t)data[3] << 24;
	if (elf_len > size - 4)
		elf_len = size - 4;
	fuzz_alloc_init(&a, 0);
	sp__mem_init(&mem, &a.hook);
	elf = fuzz_dup(data + 4, elf_len);
	stack = fuzz_dup(data + 4 + elf_len, size - 4 - elf_len);
	if (sp__image_open_memory(&mem, elf, elf_len, false, "fuzz", &img) ==
	    0) {
		sp__image_lock(img);
		if (sp__cfi_table_build(&mem, sp__image_elf(img), &t) == 0) {
			check_table(t);
			run_steps(t, stack, size - 4 - elf_len,
				  fuzz_hash(data, size));
			sp__cfi_table_free(t);
		}
		sp__image_unlock(img);
		sp__image_unref(img);
	}
	FUZZ_CHECK(a.outstanding == 0);
	free(stack);
	free(elf);
	return 0;
}
