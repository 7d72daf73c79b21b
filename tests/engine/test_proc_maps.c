/* SPDX-License-Identifier: MIT */
/* Unit test: /proc/PID/maps line parsing, including hostile lines. */
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "proc_maps.h"

static int parse(const char *line, struct sp__maps_entry *e)
{
	return sp__maps_parse_line(line, strlen(line), e);
}

static void test_good(void)
{
	struct sp__maps_entry e;

	CHECK_OK(parse("55b4b78e7000-55b4b78e8000 r-xp 00001000 fe:00 1234"
		       "                      /tmp/my prog (deleted)",
		       &e));
	CHECK_EQ(e.start, 0x55b4b78e7000ull);
	CHECK_EQ(e.end, 0x55b4b78e8000ull);
	CHECK_EQ(e.offset, 0x1000);
	CHECK_EQ(e.dev_major, 0xfe);
	CHECK_EQ(e.dev_minor, 0);
	CHECK_EQ(e.inode, 1234);
	CHECK_EQ(e.path_len, strlen("/tmp/my prog (deleted)"));
	CHECK(memcmp(e.path, "/tmp/my prog (deleted)", e.path_len) == 0);
	CHECK(sp__maps_is_tracked(&e));

	CHECK_OK(parse("7ffd1000-7ffd3000 r-xp 00000000 00:00 0 [vdso]", &e));
	CHECK(sp__maps_is_tracked(&e));
	CHECK_OK(parse("ffffffffff600000-ffffffffff601000 --xp 00000000 "
		       "00:00 0                  [vsyscall]",
		       &e));
	CHECK(!sp__maps_is_tracked(&e));
	CHECK_OK(parse("7f0000000000-7f0000001000 rwxp 00000000 00:00 0", &e));
	CHECK_EQ(e.path_len, 0);
	CHECK(sp__maps_is_tracked(&e)); /* anonymous JIT code */
	CHECK_OK(parse("1000-2000 r--p 00000000 08:01 5 /lib/x.so", &e));
	CHECK(!sp__maps_is_tracked(&e));
}

static void test_hostile(void)
{
	static const char *const bad[] = {
		"",
		"zzzz-2000 r-xp 0 08:01 5 /a",
		"2000-1000 r-xp 00000000 08:01 5 /a", /* end before start */
		"1000-1000 r-xp 00000000 08:01 5 /a", /* empty */
		"1000 r-xp 00000000 08:01 5 /a",
		"1000-2000 r-x",
		"1000-2000 r-xp 00000000 0801 5 /a",
		"1000-2000 r-xp 00000000 08:01",
		"1000-2000 r-xp 00000000 08:01 5x /a",
		"10000000000000000-10000000000000001 r-xp 0 08:01 5 /a",
		"1000-2000 r-xp 00000000 100000000:01 5 /a",
		"1000-2000 r-xp 00000000 08:01 99999999999999999999 /a",
	};
	struct sp__maps_entry e;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (parse(bad[i], &e) != SP_ECORRUPT) {
			fprintf(stderr, "accepted: '%s'\n", bad[i]);
			CHECK(0);
		}
	}
	/* Embedded NUL in the path. */
	CHECK_EQ_INT(sp__maps_parse_line("1000-2000 r-xp 0 08:01 5 /a\0b", 29,
					 &e),
		     SP_ECORRUPT);
}

/* The kernel's one path escape: "\012" for a newline (issue 20 item 11). */
static void test_unescape(void)
{
	char a[] = "/tmp/lib\\012nl.so", b[] = "\\012\\01\\0121\\";
	char c[] = "/plain";

	CHECK_EQ(sp__maps_unescape_path(a, strlen(a)),
		 strlen("/tmp/lib\nnl.so"));
	CHECK_MEM(a, strlen("/tmp/lib\nnl.so"), "/tmp/lib\nnl.so",
		  strlen("/tmp/lib\nnl.so"));
	CHECK_EQ(sp__maps_unescape_path(b, strlen(b)), (size_t)7);
	CHECK_MEM(b, 7, "\n\\01\n1\\", 7);
	CHECK_EQ(sp__maps_unescape_path(c, strlen(c)), strlen(c));
	CHECK_MEM(c, strlen(c), "/plain", strlen(c));
}

static void test_self(void)
{
	uint64_t start = 0;
	char st = 0;

	CHECK_OK(sp__proc_stat(getpid(), 0, &start, &st));
	CHECK(start > 0);
	/* qemu-user emulates /proc/self/stat and writes 0 for the state. */
	if (st == '0')
		fprintf(stderr,
			"state not checked: /proc/self/stat emulated\n");
	else
		CHECK_EQ(st, 'R');
	CHECK_EQ_INT(sp__proc_tgid(getpid()), getpid());
}

int main(void)
{
	test_good();
	test_hostile();
	test_unescape();
	test_self();
	return T_EXIT_PASS;
}
