/* SPDX-License-Identifier: MIT */
/* The kernel text range from kallsyms text (src/engine/track/kernel_module.c). */

/*
 * sp__kmod_read_range on crafted kallsyms files: the lower of _text and
 * _stext starts the range, _etext ends it, module symbols with the same
 * names and zeroed (kptr_restrict) lines never count, a last line without
 * a newline is read, and lines longer than the read chunk neither crash
 * nor hide what follows. When the host's /proc/kallsyms shows addresses,
 * its range must contain a known kernel function.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "kernel_module.h"

static char path[64];

static void write_file(const char *text)
{
	FILE *f = fopen(path, "w");

	CHECK(f != NULL);
	CHECK(fputs(text, f) >= 0);
	CHECK(fclose(f) == 0);
}

static int range_of(const struct sp__mem *mem, const char *text,
		    uint64_t *start, uint64_t *end)
{
	write_file(text);
	*start = *end = 0;
	return sp__kmod_read_range(mem, path, start, end);
}

static void check_basic(const struct sp__mem *mem)
{
	uint64_t s, e;

	/* Module symbols named like the anchors come first and must not win. */
	CHECK_OK(range_of(mem,
			  "ffffffffc0000000 t _text\t[fake]\n"
			  "ffffffff81000000 T _stext\n"
			  "ffffffff81000010 T __entry_text_start\n"
			  "ffffffff81200000 T _text\n"
			  "ffffffff82209988 T _etext\n"
			  "ffffffffc1000000 t _etext\t[fake]\n",
			  &s, &e));
	CHECK_EQ(s, 0xffffffff81000000ull); /* _stext below _text */
	CHECK_EQ(e, 0xffffffff82209988ull);
	/* No newline after the last line. */
	CHECK_OK(range_of(mem,
			  "ffffffff81000000 T _text\n"
			  "ffffffff81400000 T _etext",
			  &s, &e));
	CHECK_EQ(s, 0xffffffff81000000ull);
	CHECK_EQ(e, 0xffffffff81400000ull);
}

static void check_unusable(const struct sp__mem *mem)
{
	uint64_t s, e;

	/* kptr_restrict: every address reads as zero. */
	CHECK_EQ_INT(range_of(mem,
			      "0000000000000000 T _text\n"
			      "0000000000000000 T _etext\n",
			      &s, &e),
		     -ENOENT);
	CHECK_EQ_INT(range_of(mem, "ffffffff81000000 T _text\n", &s, &e),
		     -ENOENT);
	/* An end below the start is no range. */
	CHECK_EQ_INT(range_of(mem,
			      "ffffffff82000000 T _text\n"
			      "ffffffff81000000 T _etext\n",
			      &s, &e),
		     -ENOENT);
	/* Malformed lines are skipped, not fatal. */
	CHECK_EQ_INT(range_of(mem, "_text\nzz T _etext\n\n", &s, &e), -ENOENT);
	CHECK_EQ_INT(sp__kmod_read_range(mem, "/nonexistent/kallsyms", &s, &e),
		     -ENOENT);
}

/* A line longer than the 64 KiB read chunk, then the real anchors. */
static void check_long_line(const struct sp__mem *mem)
{
	size_t n = 200000, at;
	char *text = malloc(n + 128);
	uint64_t s, e;

	CHECK(text != NULL);
	memcpy(text, "ffffffff81000000 T ", 19);
	memset(text + 19, 'x', n - 19);
	at = n;
	at += (size_t)sprintf(text + at, "\nffffffff81000000 T _text\n"
					 "ffffffff81001000 T _etext\n");
	text[at] = '\0';
	CHECK_OK(range_of(mem, text, &s, &e));
	CHECK_EQ(s, 0xffffffff81000000ull);
	CHECK_EQ(e, 0xffffffff81001000ull);
	free(text);
}

/* The host's kallsyms, when readable with addresses (root, kptr ok). */
static void check_host(const struct sp__mem *mem)
{
	char line[512];
	uint64_t s, e, addr = 0;
	FILE *f;
	int err = sp__kmod_read_range(mem, "/proc/kallsyms", &s, &e);

	if (err == -ENOENT || err == -EACCES) {
		fprintf(stderr, "host kallsyms has no usable range (%d)\n",
			err);
		return;
	}
	CHECK_OK(err);
	f = fopen("/proc/kallsyms", "r");
	CHECK(f != NULL);
	while (!addr && fgets(line, sizeof(line), f))
		if (strstr(line, " T do_syscall_64\n") ||
		    strstr(line, " t do_syscall_64\n"))
			addr = strtoull(line, NULL, 16);
	fclose(f);
	fprintf(stderr, "host kernel text %#llx-%#llx\n", (unsigned long long)s,
		(unsigned long long)e);
	if (addr)
		CHECK(s <= addr && addr < e);
}

int main(void)
{
	struct sp__mem mem;
	int fd;

	sp__mem_init(&mem, NULL);
	snprintf(path, sizeof(path), "/tmp/sp-kallsyms-XXXXXX");
	fd = mkstemp(path);
	CHECK(fd >= 0);
	close(fd);
	check_basic(&mem);
	check_unusable(&mem);
	check_long_line(&mem);
	check_host(&mem);
	unlink(path);
	return T_EXIT_PASS;
}
