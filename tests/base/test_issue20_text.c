/* SPDX-License-Identifier: MIT */
/* Issue 20 item 15: sp_text_escape(), the one escaper of every text output. */

/*
 * Names from a JIT's perf map or a target's ELF symbols reach the
 * terminal through folded stacks, reports, top, dump and SVG titles. A
 * terminal acts on C0 controls (ESC starts a sequence, BEL rings, CR
 * returns, BS erases), DEL, and C1 controls (CSI 0x9b is ESC [ on 8-bit
 * terminals; U+009B is one in UTF-8 for some). Each of them, and every
 * byte that is not valid UTF-8, must come out as \xNN; valid UTF-8
 * passes (é, a 4-byte emoji), and the flags escape more.
 */
#include <errno.h>
#include <string.h>

#include <stackpulse/text.h>

#include "check.h"

struct buf {
	char s[512];
	size_t n;
	int calls;
	int fail_at; /* 0: never */
};

static int put(void *ctx, const char *p, size_t len)
{
	struct buf *b = ctx;

	if (++b->calls == b->fail_at)
		return -EPIPE;
	CHECK(b->n + len < sizeof(b->s));
	memcpy(b->s + b->n, p, len);
	b->n += len;
	b->s[b->n] = '\0';
	return 0;
}

static void expect(const char *in, size_t len, uint32_t flags, const char *want)
{
	struct buf b = { .n = 0 };

	CHECK_OK(sp_text_escape(in, len, flags, put, &b));
	if (strcmp(b.s, want) != 0) {
		fprintf(stderr, "escaped \"%s\", want \"%s\"\n", b.s, want);
		exit(T_EXIT_FAIL);
	}
}

#define EXPECT(in, flags, want) expect(in, sizeof(in) - 1, flags, want)

int main(void)
{
	struct buf b = { .n = 0 };
	int c;

	/* Printable ASCII and valid UTF-8 pass in one piece. */
	EXPECT("main;work (x)", 0, "main;work (x)");
	EXPECT("caf\xc3\xa9 \xf0\x9f\x94\xa5", 0,
	       "caf\xc3\xa9 \xf0\x9f\x94\xa5");
	CHECK_OK(sp_text_escape("plain", 5, 0, put, &b));
	CHECK_EQ_INT(b.calls, 1);
	/* C0, DEL: ESC sequences, BEL, CR, LF, TAB, BS, NUL. */
	EXPECT("a\x1b]0;owned\x07z", 0, "a\\x1b]0;owned\\x07z");
	EXPECT("\r\n\t\b\x7f", 0, "\\x0d\\x0a\\x09\\x08\\x7f");
	EXPECT("n\0ul", 0, "n\\x00ul");
	for (c = 0; c < 0x20; c++) {
		char in = (char)c, want[8];

		snprintf(want, sizeof(want), "\\x%02x", c);
		expect(&in, 1, 0, want);
	}
	/* C1: U+0080..U+009F in UTF-8, and the raw bytes 0x80..0x9f. */
	EXPECT("\xc2\x9b"
	       "31m",
	       0,
	       "\\xc2\\x9b"
	       "31m");
	EXPECT("\xc2\x80\xc2\x9f\xc2\xa0", 0, "\\xc2\\x80\\xc2\\x9f\xc2\xa0");
	EXPECT("\x9b"
	       "2J",
	       0,
	       "\\x9b"
	       "2J");
	/* Invalid UTF-8: overlong, surrogate, cut, past U+10FFFF, 0xff. */
	EXPECT("\xc0\x80", 0, "\\xc0\\x80");
	EXPECT("\xed\xa0\x80", 0, "\\xed\\xa0\\x80");
	EXPECT("\xe2\x82", 0, "\\xe2\\x82");
	EXPECT("\xf4\x90\x80\x80", 0, "\\xf4\\x90\\x80\\x80");
	EXPECT("\xff\xfe", 0, "\\xff\\xfe");
	/* Flags: ASCII only, quotes, reversible backslashes. */
	EXPECT("caf\xc3\xa9", SP_TEXT_ASCII, "caf\\xc3\\xa9");
	EXPECT("say \"hi\" \\o/", 0, "say \"hi\" \\o/");
	EXPECT("say \"hi\" \\o/", SP_TEXT_QUOTED, "say \\\"hi\\\" \\o/");
	EXPECT("a\\x1b", SP_TEXT_REVERSIBLE, "a\\\\x1b");
	EXPECT("", 0, "");
	/* Errors: arguments, and the first failure of emit, at once. */
	CHECK_EQ_INT(sp_text_escape("x", 1, 0, NULL, NULL), -EINVAL);
	CHECK_EQ_INT(sp_text_escape(NULL, 1, 0, put, &b), -EINVAL);
	CHECK_EQ_INT(sp_text_escape("x", 1, 0x80, put, &b), -EINVAL);
	CHECK_OK(sp_text_escape(NULL, 0, 0, put, &b));
	b = (struct buf){ .fail_at = 2 };
	CHECK_EQ_INT(sp_text_escape("ab\x1b"
				    "cd\x07",
				    6, 0, put, &b),
		     -EPIPE);
	CHECK_EQ_INT(b.calls, 2);
	return T_EXIT_PASS;
}
