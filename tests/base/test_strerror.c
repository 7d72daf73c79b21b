/* SPDX-License-Identifier: MIT */
/* Unit test of sp_strerror over the whole error table and errno range. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <string.h>

#include <stackpulse/error.h>
#include <stackpulse/version.h>

#include "check.h"

/*
 * The table in error.h is the only source of library error strings
 * (STYLE.md R6), so the test walks the same X-macro: every code must have
 * its own string, distinct from the others and from the fallbacks. Negated
 * errno values must come back as the C library's own description.
 */
struct code {
	int value;
	const char *name;
};

static const struct code codes[] = {
#define CODE_ENTRY(name, value, msg) { value, #name },
	SP_ERRORS(CODE_ENTRY)
#undef CODE_ENTRY
};

#define NCODES (sizeof(codes) / sizeof(codes[0]))

static void test_library_codes(void)
{
	size_t i, j;

	CHECK(NCODES >= 9);
	for (i = 0; i < NCODES; i++) {
		const char *s = sp_strerror(codes[i].value);

		CHECK_PTR(s);
		CHECK(strlen(s) > 0);
		CHECK(strcmp(s, "unknown error") != 0);
		CHECK(strcmp(s, "success") != 0);
		/* Library codes sit below every errno value. */
		CHECK(codes[i].value <= -4000);
		for (j = 0; j < i; j++) {
			CHECK(codes[i].value != codes[j].value);
			CHECK(strcmp(s, sp_strerror(codes[j].value)) != 0);
		}
	}
	CHECK(strcmp(sp_strerror(SP_ECORRUPT), "corrupt spool data") == 0);
	CHECK_EQ_INT(SP_ECORRUPT, -4000);
	CHECK_EQ_INT(SP_ETRUNCATED, -4001);
}

static void test_errno_codes(void)
{
	int e;

	CHECK(strcmp(sp_strerror(-ENOMEM), strerror(ENOMEM)) == 0);
	CHECK(strcmp(sp_strerror(-ENOMEM), "Cannot allocate memory") == 0);
	CHECK(strcmp(sp_strerror(-EINVAL), strerror(EINVAL)) == 0);
	for (e = 1; e < 134; e++) {
		const char *want = strerrordesc_np(e);

		if (want)
			CHECK(strcmp(sp_strerror(-e), want) == 0);
	}
}

static void test_fallbacks(void)
{
	CHECK(strcmp(sp_strerror(0), "success") == 0);
	CHECK(strcmp(sp_strerror(1), "success") == 0);
	CHECK(strcmp(sp_strerror(4000), "success") == 0);
	CHECK(strcmp(sp_strerror(INT_MAX), "success") == 0);
	/* Neither an errno value nor a table entry. */
	CHECK(strcmp(sp_strerror(-3999), "unknown error") == 0);
	CHECK(strcmp(sp_strerror(-4100), "unknown error") == 0);
	CHECK(strcmp(sp_strerror(codes[NCODES - 1].value - 1),
		     "unknown error") == 0);
	CHECK(strcmp(sp_strerror(INT_MIN), "unknown error") == 0);
	CHECK(strcmp(sp_strerror(INT_MIN + 1), "unknown error") == 0);
}

/* errors.c also holds sp_version, which must agree with version.h. */
static void test_version(void)
{
	char want[32];

	snprintf(want, sizeof(want), "%d.%d.%d", SP_VERSION_MAJOR,
		 SP_VERSION_MINOR, SP_VERSION_PATCH);
	CHECK(strcmp(sp_version(), want) == 0);
}

int main(void)
{
	test_library_codes();
	test_errno_codes();
	test_fallbacks();
	test_version();
	return T_EXIT_PASS;
}
