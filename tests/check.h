/* SPDX-License-Identifier: MIT */
/* Tiny in-house test assertions: print both values with file and line. */
#ifndef SP_TESTS_CHECK_H
#define SP_TESTS_CHECK_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stackpulse/error.h>

/*
 * Tests are small executables: exit 0 = pass, 1 = fail, 77 = skip (R21).
 * A failed CHECK prints what it compared and exits 1 at once, so one
 * failure never cascades into a crash of the next line.
 */
#define T_EXIT_PASS 0
#define T_EXIT_FAIL 1
#define T_EXIT_SKIP 77

static inline void check_fail_u(const char *file, int line, const char *a,
				const char *b, uint64_t va, uint64_t vb)
{
	fprintf(stderr,
		"%s:%d: CHECK_EQ(%s, %s) failed: %" PRIu64 " (0x%" PRIx64
		") != %" PRIu64 " (0x%" PRIx64 ")\n",
		file, line, a, b, va, va, vb, vb);
	exit(T_EXIT_FAIL);
}

static inline void check_eq_u(const char *file, int line, const char *a,
			      const char *b, uint64_t va, uint64_t vb)
{
	if (va != vb)
		check_fail_u(file, line, a, b, va, vb);
}

static inline void check_eq_i(const char *file, int line, const char *a,
			      const char *b, int64_t va, int64_t vb)
{
	if (va != vb) {
		fprintf(stderr,
			"%s:%d: CHECK_EQ(%s, %s) failed: %" PRId64
			" != %" PRId64 " (%s / %s)\n",
			file, line, a, b, va, vb, sp_strerror((int)va),
			sp_strerror((int)vb));
		exit(T_EXIT_FAIL);
	}
}

static inline void check_ok(const char *file, int line, const char *expr,
			    long long err)
{
	if (err < 0) {
		fprintf(stderr, "%s:%d: CHECK_OK(%s) failed: %lld (%s)\n", file,
			line, expr, err, sp_strerror((int)err));
		exit(T_EXIT_FAIL);
	}
}

static inline void check_true(const char *file, int line, const char *expr,
			      int v)
{
	if (!v) {
		fprintf(stderr, "%s:%d: CHECK(%s) failed\n", file, line, expr);
		exit(T_EXIT_FAIL);
	}
}

static inline void check_mem(const char *file, int line, const void *a,
			     size_t alen, const void *b, size_t blen)
{
	const unsigned char *pa = a, *pb = b;
	size_t i, n = alen < blen ? alen : blen;

	if (alen == blen && (n == 0 || memcmp(a, b, n) == 0))
		return;
	for (i = 0; i < n && pa[i] == pb[i]; i++)
		;
	fprintf(stderr,
		"%s:%d: CHECK_MEM failed: lengths %zu vs %zu, first "
		"difference at byte %zu",
		file, line, alen, blen, i);
	if (i < n)
		fprintf(stderr, " (%02x vs %02x)", pa[i], pb[i]);
	fprintf(stderr, "\n");
	exit(T_EXIT_FAIL);
}

/* Unsigned/pointer-sized equality. */
#define CHECK_EQ(a, b)                                                         \
	check_eq_u(__FILE__, __LINE__, #a, #b, (uint64_t)(a), (uint64_t)(b))
/* Signed equality (error codes, pids); prints sp_strerror of both. */
#define CHECK_EQ_INT(a, b)                                                     \
	check_eq_i(__FILE__, __LINE__, #a, #b, (int64_t)(a), (int64_t)(b))
/* The expression is a stackpulse return value that must be >= 0. */
#define CHECK_OK(err) check_ok(__FILE__, __LINE__, #err, (long long)(err))
#define CHECK(expr) check_true(__FILE__, __LINE__, #expr, !!(expr))
#define CHECK_PTR(p) check_true(__FILE__, __LINE__, #p " != NULL", (p) != NULL)
#define CHECK_MEM(a, alen, b, blen)                                            \
	check_mem(__FILE__, __LINE__, (a), (alen), (b), (blen))

#endif /* SP_TESTS_CHECK_H */
