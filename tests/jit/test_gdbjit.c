/* SPDX-License-Identifier: MIT */
/* GDB JIT: the bounded list walk, racing reads, and the ELF object reader. */
#include <elf.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gdbjit.h"
#include "jit_elf.h"
#include "unwind_internal.h"
#include "unwind_jit.h"

/*
 * Target memory is a blob mapped at BASE. The descriptor sits at BASE,
 * entries from BASE + 0x40 (32 bytes each), objects after them.
 */
#define BASE 0x10000ull
#define TEXT_ADDR 0x7f0000100000ull

struct memory {
	uint8_t *data;
	size_t size;
	/* When set, the entry at @race_entry changes after an object read. */
	uint64_t race_entry;
};

static struct sp__mem mem;

static int mem_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct memory *m = ctx;

	if (addr < BASE || addr - BASE > m->size ||
	    len > m->size - (addr - BASE))
		return -EFAULT;
	memcpy(buf, m->data + (addr - BASE), len);
	if (m->race_entry && len > 32) { /* an object: the JIT frees it now */
		uint64_t gone = 0;

		memcpy(m->data + (m->race_entry - BASE) + 16, &gone, 8);
	}
	return 0;
}

static void put_entry(struct memory *m, unsigned i, uint64_t next,
		      uint64_t symfile, uint64_t size)
{
	uint64_t w[4] = { next, 0, symfile, size };

	memcpy(m->data + 0x40 + 32 * i, w, sizeof(w));
}

static void put_desc(struct memory *m, uint32_t version, uint64_t first)
{
	uint32_t v[2] = { version, SP__GDBJIT_REGISTER };

	memcpy(m->data, v, 8);
	memcpy(m->data + 8, &first, 8);
	memcpy(m->data + 16, &first, 8);
}

static uint64_t entry_addr(unsigned i)
{
	return BASE + 0x40 + 32 * i;
}

static void test_walk(void)
{
	struct memory m = { .size = 0x40 + 32 * 5000 };
	struct sp__gdbjit_ops ops = { mem_read, &m };
	struct sp__gdbjit_stats st = { 0 };
	struct sp__gdbjit_desc d;
	struct sp__vec out;
	unsigned i;

	m.data = calloc(1, m.size);
	CHECK_PTR(m.data);
	sp__vec_init(&out, sizeof(struct sp__gdbjit_entry));
	put_desc(&m, 1, entry_addr(0));
	put_entry(&m, 0, entry_addr(1), BASE + 0x1000, 64);
	put_entry(&m, 1, entry_addr(2), BASE + 0x2000, 0); /* size 0 */
	put_entry(&m, 2, 0, BASE + 0x3000, 1ull << 40);	   /* absurd */
	CHECK_OK(sp__gdbjit_read_desc(&ops, BASE, &d));
	CHECK_EQ(d.first, entry_addr(0));
	CHECK_EQ_INT(sp__gdbjit_walk(&ops, &d, &mem, &out, &st), 1);
	CHECK_EQ(st.bad_sizes, 2);
	/* A loop back to the first entry: the entries before it are kept. */
	put_entry(&m, 2, entry_addr(0), BASE + 0x3000, 64);
	CHECK_EQ_INT(sp__gdbjit_walk(&ops, &d, &mem, &out, &st), -ELOOP);
	CHECK_EQ(out.len, 2);
	CHECK_EQ(st.loops, 1);
	/* A next pointer into unmapped memory. */
	put_entry(&m, 2, 0xdead0000, BASE + 0x3000, 64);
	CHECK_EQ_INT(sp__gdbjit_walk(&ops, &d, &mem, &out, &st), -EFAULT);
	CHECK_EQ(out.len, 2);
	/* 5,000 entries: the walk stops at the bound. */
	for (i = 0; i < 5000; i++)
		put_entry(&m, i, i + 1 < 5000 ? entry_addr(i + 1) : 0,
			  BASE + 0x40, 32);
	CHECK_EQ_INT(sp__gdbjit_walk(&ops, &d, &mem, &out, &st), -E2BIG);
	CHECK_EQ(out.len, SP__GDBJIT_MAX_OBJECTS);
	/* Not a descriptor. */
	put_desc(&m, 2, entry_addr(0));
	CHECK_EQ_INT(sp__gdbjit_read_desc(&ops, BASE, &d), SP_ECORRUPT);
	CHECK_EQ_INT(sp__gdbjit_read_desc(&ops, 0x1000, &d), -EFAULT);
	sp__vec_fini(&out, &mem);
	free(m.data);
}

/*
 * Gives .text of relocatable object @obj a load address, and .eh_frame
 * one a page below it, as RuntimeDyld does for the debugger's copy.
 */
static void set_text_addr(uint8_t *obj, size_t len, uint64_t addr)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh, str;
	unsigned i;

	CHECK(len >= sizeof(eh));
	memcpy(&eh, obj, sizeof(eh));
	CHECK(eh.e_shoff + (uint64_t)eh.e_shnum * sizeof(sh) <= len);
	memcpy(&str, obj + eh.e_shoff + eh.e_shstrndx * sizeof(sh),
	       sizeof(str));
	for (i = 0; i < eh.e_shnum; i++) {
		size_t at = eh.e_shoff + i * sizeof(sh);

		const char *name;

		memcpy(&sh, obj + at, sizeof(sh));
		name = (const char *)obj + str.sh_offset + sh.sh_name;
		if (strcmp(name, ".text") == 0)
			sh.sh_addr = addr;
		else if (strcmp(name, ".eh_frame") == 0)
			sh.sh_addr = addr - 0x1000;
		memcpy(obj + at, &sh, sizeof(sh));
	}
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *b;
	long n;

	CHECK_PTR(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	b = malloc((size_t)n);
	CHECK_PTR(b);
	CHECK_EQ(fread(b, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

static const struct sp__jit_elf_sym *find_sym(const struct sp__jit_elf *e,
					      const char *name)
{
	const struct sp__jit_elf_sym *s = e->syms.data;
	size_t i;

	for (i = 0; i < e->syms.len; i++)
		if (strcmp(s[i].name, name) == 0)
			return &s[i];
	return NULL;
}

/* The object as a JIT registers it: symbols absolute, .eh_frame relocated. */
static void test_object(const char *path)
{
	const struct sp__jit_elf_sym *leaf, *caller;
	struct sp__cfi_table *t;
	struct sp__jit_elf e;
	size_t len;
	uint8_t *obj = read_file(path, &len);

	set_text_addr(obj, len, TEXT_ADDR);
	CHECK_OK(sp__jit_elf_parse(&mem, obj, len, &e));
	CHECK_EQ(e.type, ET_REL);
	CHECK_EQ(e.text.len, 1);
	leaf = find_sym(&e, "jit_leaf");
	caller = find_sym(&e, "jit_caller");
	CHECK(leaf && caller);
	CHECK(leaf->start >= TEXT_ADDR && leaf->end > leaf->start);
	CHECK(caller->start >= TEXT_ADDR && caller->start != leaf->start);
	CHECK(!find_sym(&e, "jit_callee")); /* undefined: not code here */
	CHECK_PTR(e.eh_frame);
	CHECK_EQ(e.eh_relocs_skipped, 0);
	/* After relocation every FDE points into the loaded .text. */
	CHECK_OK(sp__cfi_table_from_eh_frame(&mem, e.eh_frame, e.eh_len,
					     e.eh_addr, &t));
	CHECK(sp__cfi_table_find(t, leaf->start) != NULL);
	CHECK(sp__cfi_table_find(t, caller->start) != NULL);
	CHECK(sp__cfi_table_find(t, caller->end - 1) != NULL);
	sp__cfi_table_free(t);
	sp__jit_elf_fini(&e);
	/* Not the host's architecture: refused. */
	obj[18] = SP__JIT_MACHINE == EM_X86_64 ? EM_AARCH64 : EM_X86_64;
	CHECK_EQ_INT(sp__jit_elf_parse(&mem, obj, len, &e), SP_ECORRUPT);
	/* Cut in half: refused, never read past the buffer. */
	obj[18] = SP__JIT_MACHINE;
	CHECK_EQ_INT(sp__jit_elf_parse(&mem, obj, len / 2, &e), SP_ECORRUPT);
	free(obj);
}

/* Objects read through the budget; one freed while read is dropped. */
static void test_read_object(const char *path)
{
	struct memory m;
	struct sp__gdbjit_ops ops = { mem_read, &m };
	struct sp__gdbjit_stats st = { 0 };
	struct sp__gdbjit_entry e;
	uint64_t budget;
	uint8_t *buf;
	size_t len;
	uint8_t *obj = read_file(path, &len);

	m.size = 0x1000 + len;
	m.data = calloc(1, m.size);
	m.race_entry = 0;
	CHECK_PTR(m.data);
	memcpy(m.data + 0x1000, obj, len);
	put_entry(&m, 0, 0, BASE + 0x1000, len);
	e = (struct sp__gdbjit_entry){ entry_addr(0), 0, BASE + 0x1000, len };
	budget = len - 1;
	CHECK_EQ_INT(sp__gdbjit_read_object(&ops, &e, &mem, &budget, &buf, &st),
		     -EFBIG);
	CHECK_EQ(st.over_total, 1);
	budget = len + 10;
	CHECK_OK(sp__gdbjit_read_object(&ops, &e, &mem, &budget, &buf, &st));
	CHECK_EQ(budget, 10);
	CHECK_MEM(buf, len, obj, len);
	sp__mem_free(&mem, buf, len);
	m.race_entry = entry_addr(0);
	budget = len;
	CHECK_EQ_INT(sp__gdbjit_read_object(&ops, &e, &mem, &budget, &buf, &st),
		     -EAGAIN);
	CHECK_EQ(budget, len);
	CHECK_EQ(st.raced, 1);
	/* Its bytes unmapped: the read's error, nothing kept. */
	m.race_entry = 0;
	e.symfile = 0xdead0000;
	CHECK_EQ_INT(sp__gdbjit_read_object(&ops, &e, &mem, &budget, &buf, &st),
		     -EFAULT);
	free(m.data);
	free(obj);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: test_gdbjit OBJECT\n");
		return T_EXIT_FAIL;
	}
	sp__mem_init(&mem, NULL);
	test_walk();
	test_object(argv[1]);
	test_read_object(argv[1]);
	return T_EXIT_PASS;
}
