/* SPDX-License-Identifier: MIT */
/* Fuzz target: a GDB JIT descriptor, its entry list and objects in hostile memory. */
#include <errno.h>
#include <string.h>

#include "fuzz.h"
#include "gdbjit.h"
#include "jit_elf.h"
#include "unwind_jit.h"

/*
 * The input models a target's memory: its first 8 bytes are the
 * descriptor's offset, the rest is mapped at BASE; reads outside it fail
 * with -EFAULT, and (chosen from the hash) the memory changes after a
 * number of reads, as when the JIT frees code while we read it. The
 * walk, object reads (with the real bounds), the ELF reader and the CFI
 * builder run over it. Invariants:
 *   - the walk returns entries or -ELOOP, -E2BIG, -EFAULT, -ENOMEM, never
 *     more than SP__GDBJIT_MAX_OBJECTS entries, each with a size in
 *     (0, SP__GDBJIT_MAX_OBJECT];
 *   - an object read never exceeds the budget, and returns 0, -EFBIG,
 *     -EAGAIN, -EFAULT or -ENOMEM;
 *   - the ELF reader returns 0, SP_ECORRUPT or -ENOMEM, and every symbol
 *     it gives lies in a code section it gives, start < end;
 *   - every allocation is returned.
 */
#define BASE 0x10000ull

struct memory {
	uint8_t *data;
	size_t size;
	uint64_t reads;
	uint64_t flip_at; /* after this many reads, flip a byte (0 = never) */
};

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct memory *m = ctx;

	if (m->flip_at && ++m->reads == m->flip_at && m->size)
		m->data[(m->reads * 7919) % m->size] ^= 0x40;
	if (addr < BASE || addr - BASE > m->size ||
	    len > m->size - (addr - BASE))
		return -EFAULT;
	memcpy(buf, m->data + (addr - BASE), len);
	return 0;
}

static void check_object(const struct sp__mem *mem, struct fuzz_alloc *fa,
			 uint8_t *obj, size_t len)
{
	struct sp__jit_elf e;
	const struct sp__jit_elf_sym *s;
	struct sp__cfi_table *t;
	size_t i;
	int err = sp__jit_elf_parse(mem, obj, len, &e);

	FUZZ_CHECK(err == 0 || err == SP_ECORRUPT ||
		   (err == -ENOMEM && fa->failed));
	if (err)
		return;
	s = e.syms.data;
	for (i = 0; i < e.syms.len; i++) {
		FUZZ_CHECK(s[i].start < s[i].end && s[i].name);
		FUZZ_CHECK(sp__jit_elf_covers(&e, s[i].start));
	}
	if (e.eh_frame) {
		err = sp__cfi_table_from_eh_frame(mem, e.eh_frame, e.eh_len,
						  e.eh_addr, &t);
		FUZZ_CHECK(err == 0 || err == SP_ECORRUPT || err == -E2BIG ||
			   (err == -ENOMEM && fa->failed));
		if (!err)
			sp__cfi_table_free(t);
	}
	sp__jit_elf_fini(&e);
}

static void read_objects(const struct sp__gdbjit_ops *ops,
			 const struct sp__mem *mem, struct fuzz_alloc *fa,
			 const struct sp__vec *entries,
			 struct sp__gdbjit_stats *st)
{
	uint64_t budget = SP__GDBJIT_MAX_TOTAL, before;
	size_t i;

	for (i = 0; i < entries->len && i < 8; i++) {
		const struct sp__gdbjit_entry *e = sp__vec_at(entries, i);
		uint8_t *obj;
		int err;

		FUZZ_CHECK(e->size > 0 && e->size <= SP__GDBJIT_MAX_OBJECT);
		before = budget;
		err = sp__gdbjit_read_object(ops, e, mem, &budget, &obj, st);
		FUZZ_CHECK(err == 0 || err == -EFBIG || err == -EAGAIN ||
			   err == -EFAULT || (err == -ENOMEM && fa->failed));
		if (err) {
			FUZZ_CHECK(budget == before);
			continue;
		}
		FUZZ_CHECK(budget == before - e->size);
		check_object(mem, fa, obj, (size_t)e->size);
		sp__mem_free(mem, obj, (size_t)e->size);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t h = fuzz_hash(data, size), off = 0;
	struct memory m = { 0 };
	struct sp__gdbjit_ops ops = { mem_read, &m };
	struct sp__gdbjit_stats st = { 0 };
	struct sp__gdbjit_desc d;
	struct sp__vec entries;
	struct fuzz_alloc fa;
	struct sp__mem mem;
	int n;

	if (size < 8)
		return 0;
	memcpy(&off, data, 8);
	m.data = fuzz_dup(data + 8, size - 8);
	m.size = size - 8;
	m.flip_at = (h & 3) == 0 ? 1 + (h >> 2) % 16 : 0;
	fuzz_alloc_init(&fa, (h & 7) == 1 ? 1 + (h >> 3) % 10 : 0);
	sp__mem_init(&mem, &fa.hook);
	sp__vec_init(&entries, sizeof(struct sp__gdbjit_entry));
	if (sp__gdbjit_read_desc(&ops, BASE + off, &d) == 0) {
		n = sp__gdbjit_walk(&ops, &d, &mem, &entries, &st);
		FUZZ_CHECK(n >= 0 || n == -ELOOP || n == -E2BIG ||
			   n == -EFAULT || (n == -ENOMEM && fa.failed));
		FUZZ_CHECK(entries.len <= SP__GDBJIT_MAX_OBJECTS);
		read_objects(&ops, &mem, &fa, &entries, &st);
	}
	sp__vec_fini(&entries, &mem);
	free(m.data);
	FUZZ_CHECK(fa.outstanding == 0);
	return 0;
}
