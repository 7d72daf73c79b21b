/* SPDX-License-Identifier: MIT */
/* Oracle program for test_native_names: PLT calls and labels without a size. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * Built -O2 several ways (meson.build): non-PIE with lazy binding and
 * with -z now, IBT (.plt.sec), PIE (.plt.got for __cxa_finalize),
 * static (IRELATIVE .plt entries for the IFUNCs strlen, memset), and
 * stripped. names_work calls through the PLT; the assembly below defines
 * symbols without a size, as ld.so's _start and _dl_start_user are:
 *
 *   names_entry       GLOBAL NOTYPE, size 0
 *   names_entry_user  LOCAL NOTYPE, size 0
 *   names_sized       FUNC with a size, holding the label names_inner
 *   (8 bytes no symbol covers)
 *   names_tail        LOCAL NOTYPE, size 0, up to the next function
 */
__asm__(".text\n"
	".globl names_entry\n"
	"names_entry:\n"
	"\tnop\n\tnop\n\tnop\n\tnop\n"
	"names_entry_user:\n"
	"\tnop\n\tnop\n\tnop\n\tnop\n\tret\n"
	".globl names_sized\n"
	".type names_sized, @function\n"
	"names_sized:\n"
	"\tnop\n\tnop\n"
	"names_inner:\n"
	"\tnop\n\tnop\n\tret\n"
	".size names_sized, .-names_sized\n"
	"\t.skip 8, 0x90\n"
	"names_tail:\n"
	"\tnop\n\tnop\n\tret\n");

void names_entry(void);
unsigned names_work(unsigned n);

__attribute__((noinline)) unsigned names_work(unsigned n)
{
	char buf[64];
	unsigned s = 0, i;

	for (i = 0; i < n; i++) {
		s += (unsigned)rand();
		memset(buf, (int)s, sizeof(buf) - 1);
		buf[sizeof(buf) - 1] = 0;
		s += (unsigned)strlen(buf + (s & 7));
	}
	return s;
}

int main(int argc, char **argv)
{
	names_entry();
	printf("%u\n", names_work(argc > 1 ? (unsigned)atoi(argv[1]) : 10));
	return 0;
}
