/* SPDX-License-Identifier: MIT */
/* Fuzz target: varint decode against a model, shortest re-encode, zigzag. */
#include "fuzz.h"
#include "varint.h"

/*
 * The input is decoded at each of its first offsets, once with all bytes
 * up to the end and once with a short exactly-sized copy (so reading one
 * byte too far is an ASan report). The result must match an independent
 * model of SPULSE3 §2.1; a decoded value must re-encode to its shortest
 * form, which decodes back to the same value. Zigzag (§2.2) must be an
 * involution on every 64-bit value seen.
 */

/* The reference decoder of §2.1, written from the spec text. */
static enum sp__varint_status model_get(const uint8_t *in, size_t avail,
					uint64_t *v, size_t *len)
{
	uint64_t value = 0;
	size_t i;

	for (i = 0; i < avail && i < 10; i++) {
		if (7 * i < 64)
			value |= (uint64_t)(in[i] & 0x7f) << (7 * i);
		if (i == 9) {
			*v = value;
			*len = 10;
			return in[i] <= 1 ? SP_VARINT_OK : SP_VARINT_OVERFLOW;
		}
		if (!(in[i] & 0x80)) {
			*v = value;
			*len = i + 1;
			return SP_VARINT_OK;
		}
	}
	return SP_VARINT_SHORT;
}

static void check_shortest(uint64_t v)
{
	uint8_t buf[SP_VARINT_MAX];
	uint64_t back = 0;
	size_t n = sp__varint_put(buf, v), m = 0;

	FUZZ_CHECK(n >= 1 && n <= SP_VARINT_MAX);
	FUZZ_CHECK(n == sp__varint_len(v));
	FUZZ_CHECK(!(buf[n - 1] & 0x80));
	/* Shortest: no trailing zero group, and the 10th byte is exactly 1. */
	FUZZ_CHECK(n == 1 || buf[n - 1] != 0);
	FUZZ_CHECK(n < SP_VARINT_MAX || buf[n - 1] == 1);
	FUZZ_CHECK(sp__varint_get(buf, n, &back, &m) == SP_VARINT_OK);
	FUZZ_CHECK(back == v && m == n);
	/* One byte fewer is always "short", never a different value. */
	FUZZ_CHECK(sp__varint_get(buf, n - 1, &back, &m) == SP_VARINT_SHORT);
}

static void check_zigzag(uint64_t u)
{
	int64_t s = (int64_t)u;
	uint64_t want = ((uint64_t)s << 1) ^ (s < 0 ? UINT64_MAX : 0);

	FUZZ_CHECK(sp__zigzag(s) == want);
	FUZZ_CHECK(sp__unzigzag(sp__zigzag(s)) == s);
	FUZZ_CHECK(sp__zigzag(sp__unzigzag(u)) == u);
	/* Even codes are the non-negative values, odd the negative ones. */
	FUZZ_CHECK(sp__unzigzag(u) == (int64_t)(u >> 1) ||
		   sp__unzigzag(u) == -(int64_t)(u >> 1) - 1);
}

static void check_at(const uint8_t *in, size_t avail)
{
	enum sp__varint_status got, want;
	uint64_t v = 1, mv = 2;
	size_t len = 99, mlen = 98;

	got = sp__varint_get(in, avail, &v, &len);
	want = model_get(in, avail, &mv, &mlen);
	FUZZ_CHECK(got == want);
	if (got != SP_VARINT_OK)
		return;
	FUZZ_CHECK(v == mv && len == mlen);
	FUZZ_CHECK(len >= 1 && len <= avail && len <= SP_VARINT_MAX);
	FUZZ_CHECK(sp__varint_len(v) <= len);
	check_shortest(v);
	check_zigzag(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint64_t raw = 0;
	size_t off, cut;
	uint8_t *copy;

	for (off = 0; off < size && off < 64; off++) {
		check_at(data + off, size - off);
		/* An exactly sized short view: ASan catches any overread. */
		cut = (size - off) % 11;
		copy = fuzz_dup(data + off, cut);
		check_at(copy, cut);
		free(copy);
	}
	/* The first 8 bytes as a raw value: encode/decode and zigzag. */
	memcpy(&raw, data, size < 8 ? size : 8);
	check_shortest(raw);
	check_zigzag(raw);
	check_shortest(sp__zigzag((int64_t)raw));
	return 0;
}
