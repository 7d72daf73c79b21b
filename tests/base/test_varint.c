/* SPDX-License-Identifier: MIT */
/* Unit test of the LEB128 varint and zigzag helpers against SPULSE3 §2. */
#include <stdint.h>

#include "check.h"
#include "varint.h"

/*
 * Every byte string below is copied from the examples and rules of
 * SPULSE3 §2 (integer-encoding 4.1.0 semantics). The encoder must produce
 * exactly these shortest forms; the decoder must also accept overlong
 * forms, reject a 10th byte above 01, and report input that ends before a
 * terminating byte as SHORT. A pseudo-random round trip then covers every
 * encoded length many times over.
 */

struct vector {
	uint64_t value;
	uint8_t bytes[SP_VARINT_MAX];
	size_t len;
};

static const struct vector unsigned_vectors[] = {
	{ 0, { 0x00 }, 1 },
	{ 1, { 0x01 }, 1 },
	{ 127, { 0x7f }, 1 },
	{ 128, { 0x80, 0x01 }, 2 },
	{ 300, { 0xac, 0x02 }, 2 },
	{ 16383, { 0xff, 0x7f }, 2 },
	{ 16384, { 0x80, 0x80, 0x01 }, 3 },
	{ UINT32_MAX, { 0xff, 0xff, 0xff, 0xff, 0x0f }, 5 },
	{ (1ull << 63) - 1,
	  { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f },
	  9 },
	{ 1ull << 63,
	  { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01 },
	  10 },
	{ UINT64_MAX,
	  { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 },
	  10 },
};

/* SPULSE3 §2.2 examples of the S (zigzag) encoding. */
struct signed_vector {
	int64_t value;
	uint8_t bytes[SP_VARINT_MAX];
	size_t len;
};

static const struct signed_vector signed_vectors[] = {
	{ 7, { 0x0e }, 1 },
	{ -1, { 0x01 }, 1 },
	{ -7, { 0x0d }, 1 },
	{ 1000, { 0xd0, 0x0f }, 2 },
	{ -100, { 0xc7, 0x01 }, 2 },
	{ 2147483648ll, { 0x80, 0x80, 0x80, 0x80, 0x10 }, 5 },
	{ -2147483648ll, { 0xff, 0xff, 0xff, 0xff, 0x0f }, 5 },
};

static void check_decodes(const uint8_t *in, size_t avail, uint64_t want,
			  size_t want_len)
{
	uint64_t v = 0;
	size_t len = 0;

	CHECK_EQ(sp__varint_get(in, avail, &v, &len), SP_VARINT_OK);
	CHECK_EQ(v, want);
	CHECK_EQ(len, want_len);
}

static void check_status(const uint8_t *in, size_t avail,
			 enum sp__varint_status want)
{
	uint64_t v = 0xdeadbeef;
	size_t len = 12345;

	CHECK_EQ(sp__varint_get(in, avail, &v, &len), want);
	/* A failed decode must not report a value or a length. */
	CHECK_EQ(v, 0xdeadbeef);
	CHECK_EQ(len, 12345);
}

static void test_unsigned_vectors(void)
{
	size_t i;

	for (i = 0; i < sizeof(unsigned_vectors) / sizeof(unsigned_vectors[0]);
	     i++) {
		const struct vector *t = &unsigned_vectors[i];
		uint8_t buf[SP_VARINT_MAX + 4];
		size_t n;

		memset(buf, 0xaa, sizeof(buf));
		n = sp__varint_put(buf, t->value);
		CHECK_MEM(buf, n, t->bytes, t->len);
		CHECK_EQ(buf[n], 0xaa); /* nothing written past the end */
		CHECK_EQ(sp__varint_len(t->value), t->len);
		/* Trailing bytes after the varint are not consumed. */
		check_decodes(buf, sizeof(buf), t->value, t->len);
		check_decodes(t->bytes, t->len, t->value, t->len);
	}
}

static void test_signed_vectors(void)
{
	size_t i;

	for (i = 0; i < sizeof(signed_vectors) / sizeof(signed_vectors[0]);
	     i++) {
		const struct signed_vector *t = &signed_vectors[i];
		uint8_t buf[SP_VARINT_MAX];
		uint64_t u = sp__zigzag(t->value);
		size_t n = sp__varint_put(buf, u);

		CHECK_MEM(buf, n, t->bytes, t->len);
		check_decodes(t->bytes, t->len, u, t->len);
		CHECK_EQ_INT(sp__unzigzag(u), t->value);
	}
}

static void test_zigzag_table(void)
{
	static const int64_t order[] = { 0, -1, 1, -2, 2, -3, 3 };
	size_t i;

	for (i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		CHECK_EQ(sp__zigzag(order[i]), i);
		CHECK_EQ_INT(sp__unzigzag(i), order[i]);
	}
	CHECK_EQ(sp__zigzag(INT64_MAX), UINT64_MAX - 1);
	CHECK_EQ(sp__zigzag(INT64_MIN), UINT64_MAX);
	CHECK_EQ_INT(sp__unzigzag(UINT64_MAX - 1), INT64_MAX);
	CHECK_EQ_INT(sp__unzigzag(UINT64_MAX), INT64_MIN);
}

/* §2.1: readers accept overlong forms that writers never produce. */
static void test_overlong(void)
{
	static const uint8_t zero2[] = { 0x80, 0x00 };
	static const uint8_t one3[] = { 0x81, 0x80, 0x00 };
	static const uint8_t max63[] = { 0xff, 0xff, 0xff, 0xff, 0xff,
					 0xff, 0xff, 0xff, 0xff, 0x00 };
	static const uint8_t zero10[] = { 0x80, 0x80, 0x80, 0x80, 0x80,
					  0x80, 0x80, 0x80, 0x80, 0x00 };

	check_decodes(zero2, sizeof(zero2), 0, 2);
	check_decodes(one3, sizeof(one3), 1, 3);
	check_decodes(max63, sizeof(max63), (1ull << 63) - 1, 10);
	check_decodes(zero10, sizeof(zero10), 0, 10);
}

/* §2.1: overflow is rejected only through the 10th byte. */
static void test_overflow(void)
{
	static const uint8_t tenth[] = { 0x02, 0x03, 0x7f, 0x80, 0x81, 0xff };
	uint8_t buf[SP_VARINT_MAX + 2];
	size_t i;

	for (i = 0; i < sizeof(tenth); i++) {
		memset(buf, 0xff, sizeof(buf));
		buf[9] = tenth[i];
		check_status(buf, 10, SP_VARINT_OVERFLOW);
		/* There is never an 11th byte, however much input follows. */
		check_status(buf, sizeof(buf), SP_VARINT_OVERFLOW);
		memset(buf, 0x80, 9);
		check_status(buf, sizeof(buf), SP_VARINT_OVERFLOW);
	}
}

/* Input that ends before a terminator (and before 10 bytes) is SHORT. */
static void test_short(void)
{
	static const uint8_t max[] = { 0xff, 0xff, 0xff, 0xff, 0xff,
				       0xff, 0xff, 0xff, 0xff, 0x01 };
	static const uint8_t two[] = { 0x80, 0x01 };
	size_t n;

	check_status(two, 0, SP_VARINT_SHORT);
	check_status(two, 1, SP_VARINT_SHORT);
	for (n = 0; n < sizeof(max); n++)
		check_status(max, n, SP_VARINT_SHORT);
}

/* xorshift64*: deterministic, so a failure reproduces exactly. */
static uint64_t next_random(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}

static void round_trip_one(uint64_t v)
{
	uint8_t buf[SP_VARINT_MAX];
	size_t n = sp__varint_put(buf, v);
	uint64_t got = 0;
	size_t len = 0;

	CHECK_EQ(n, sp__varint_len(v));
	CHECK(n >= 1 && n <= SP_VARINT_MAX);
	/* Shortest form: only the last byte may end the value, and it is
	 * non-zero unless the value is 0. */
	CHECK(n == 1 || buf[n - 1] != 0);
	CHECK_EQ(sp__varint_get(buf, n, &got, &len), SP_VARINT_OK);
	CHECK_EQ(got, v);
	CHECK_EQ(len, n);
	CHECK_EQ(sp__varint_get(buf, n - 1, &got, &len), SP_VARINT_SHORT);
	CHECK_EQ(sp__zigzag(sp__unzigzag(v)), v);
	CHECK_EQ_INT(sp__unzigzag(sp__zigzag((int64_t)v)), (int64_t)v);
}

static void test_random_round_trip(void)
{
	uint64_t state = 0x9e3779b97f4a7c15ull;
	size_t seen[SP_VARINT_MAX + 1] = { 0 };
	size_t i;

	for (i = 0; i < 3000000; i++) {
		uint64_t r = next_random(&state);
		/* Shift by a random amount so every length is common. */
		uint64_t v = r >> (next_random(&state) % 64);

		round_trip_one(v);
		seen[sp__varint_len(v)]++;
	}
	for (i = 1; i <= SP_VARINT_MAX; i++)
		CHECK(seen[i] > 1000);
}

int main(void)
{
	test_unsigned_vectors();
	test_signed_vectors();
	test_zigzag_table();
	test_overlong();
	test_overflow();
	test_short();
	test_random_round_trip();
	return T_EXIT_PASS;
}
