/* SPDX-License-Identifier: MIT */
/* Unit test of strict UTF-8 validation and the escape of non-UTF-8 paths. */

/*
 * The escape (utf8.h) must turn any byte string into valid UTF-8, leave
 * valid sequences as they are, and be undone exactly: vectors for each
 * rule, the strict edges (overlongs, surrogates, > U+10FFFF, cut
 * sequences), a cut output buffer, malformed escapes for the decoder,
 * then a pseudo-random round trip over short strings of any bytes.
 */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "utf8.h"

struct vector {
	const char *raw;
	size_t len;
	const char *escaped;
};

static const struct vector vectors[] = {
	{ "/lib/\xff\xfe.so", 10, "/lib/\\xff\\xfe.so" },
	{ "a\\b\x80", 4, "a\\\\b\\x80" },
	{ "\xc3\xa9\xc3", 3, "\xc3\xa9\\xc3" },		   /* cut sequence */
	{ "\xc0\xaf", 2, "\\xc0\\xaf" },		   /* overlong '/' */
	{ "\xed\xa0\x80", 3, "\\xed\\xa0\\x80" },	   /* surrogate */
	{ "\xf4\x90\x80\x80", 4, "\\xf4\\x90\\x80\\x80" }, /* > U+10FFFF */
	{ "\xf0\x9f\x98\x80\xfe", 5, "\xf0\x9f\x98\x80\\xfe" },
};

static void test_vectors(void)
{
	char out[64];
	uint8_t back[64];
	size_t i, n;

	for (i = 0; i < sizeof(vectors) / sizeof(vectors[0]); i++) {
		const struct vector *v = &vectors[i];

		CHECK(!sp__utf8_valid((const uint8_t *)v->raw, v->len));
		n = sp__utf8_escape((const uint8_t *)v->raw, v->len, out,
				    sizeof(out));
		CHECK_MEM(out, n, v->escaped, strlen(v->escaped));
		CHECK(sp__utf8_valid((const uint8_t *)out, n));
		CHECK_EQ(sp__utf8_unescape(out, n, back, sizeof(back)), v->len);
		CHECK_MEM(back, v->len, v->raw, v->len);
	}
}

static void test_cut_and_malformed(void)
{
	const char *raw = "\xff\xff";
	char out[8];
	uint8_t back[8];

	/* The full length is returned; only @cap bytes are written. */
	memset(out, '#', sizeof(out));
	CHECK_EQ(sp__utf8_escape((const uint8_t *)raw, 2, out, 5), (size_t)8);
	CHECK_MEM(out, 6, "\\xff\\#", 6);
	CHECK_EQ(sp__utf8_escape((const uint8_t *)raw, 2, NULL, 0), (size_t)8);
	/* A backslash that starts neither escape: not ours. */
	CHECK_EQ(sp__utf8_unescape("a\\b", 3, back, sizeof(back)), SIZE_MAX);
	CHECK_EQ(sp__utf8_unescape("\\x4", 3, back, sizeof(back)), SIZE_MAX);
	CHECK_EQ(sp__utf8_unescape("\\xG0", 4, back, sizeof(back)), SIZE_MAX);
	CHECK_EQ(sp__utf8_unescape("\\xAB", 4, back, sizeof(back)), SIZE_MAX);
	CHECK_EQ(sp__utf8_unescape("\\", 1, back, sizeof(back)), SIZE_MAX);
	CHECK_EQ(sp__utf8_unescape("plain", 5, back, sizeof(back)), (size_t)5);
}

static void test_round_trip(void)
{
	uint8_t raw[12], back[12];
	char out[48];
	uint64_t x = 0x9e3779b97f4a7c15ull;
	size_t len, n, i;
	int round;

	for (round = 0; round < 200000; round++) {
		len = (size_t)(round % 13);
		for (i = 0; i < len; i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			/* Bias towards backslashes and UTF-8 lead bytes. */
			raw[i] = (x & 7) == 0 ? '\\' : (uint8_t)(x >> 8);
		}
		n = sp__utf8_escape(raw, len, out, sizeof(out));
		CHECK(n <= 4 * len);
		CHECK(sp__utf8_valid((const uint8_t *)out, n));
		if (sp__utf8_valid(raw, len) && !memchr(raw, '\\', len))
			CHECK_MEM(out, n, raw, len);
		CHECK_EQ(sp__utf8_unescape(out, n, back, sizeof(back)), len);
		CHECK_MEM(back, len, raw, len);
	}
}

int main(void)
{
	test_vectors();
	test_cut_and_malformed();
	test_round_trip();
	return T_EXIT_PASS;
}
