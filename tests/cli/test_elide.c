/* SPDX-License-Identifier: MIT */
/* spulse_elide: long demangled names shortened whole tokens at a time. */

/*
 * Real demangled names (c++filt's output for libstdc++ and rustc
 * symbols) shortened to a table width: the shape of each result, that
 * it fits, that short names come back untouched, that "operator<" is no
 * bracket, and that every piece of a result is a piece of the name, in
 * order (nothing cut mid-token, nothing invented).
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "elide.h"

static const char *const cases[][2] = {
	{ "std::vector<std::__cxx11::basic_string<char, std::char_traits<char>, "
	  "std::allocator<char> >, std::allocator<std::__cxx11::basic_string<"
	  "char, std::char_traits<char>, std::allocator<char> > > >::push_back("
	  "std::__cxx11::basic_string<char, std::char_traits<char>, "
	  "std::allocator<char> > const&)",
	  "std::vector<...>::push_back(...)" },
	{ "bool std::operator< <char, std::char_traits<char>, "
	  "std::allocator<char> >(std::__cxx11::basic_string<char, "
	  "std::char_traits<char>, std::allocator<char> > const&, char const*)",
	  "bool std::operator< <...>(...)" },
	{ "rs_nested[5625eaac143e960f]::drive::<rs_nested[5625eaac143e960f]::"
	  "main::{closure#1}>",
	  "rs_nested[5625eaac143e960f]::drive::<...>" },
};

/* Every piece of @got between "..." occurs in @name, in order. */
static void check_pieces(const char *name, const char *got)
{
	const char *at = name, *p = got, *dots, *hit;
	char piece[512];
	size_t n;

	while (*p) {
		dots = strstr(p, "...");
		n = dots ? (size_t)(dots - p) : strlen(p);
		CHECK(n < sizeof(piece));
		memcpy(piece, p, n);
		piece[n] = '\0';
		hit = strstr(at, piece);
		CHECK_PTR(hit);
		at = hit + n;
		p += n + (dots ? 3 : 0);
	}
}

int main(void)
{
	char buf[512];
	const char *got;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		got = spulse_elide(cases[i][0], 60, buf, sizeof(buf));
		if (strcmp(got, cases[i][1]) != 0)
			fprintf(stderr, "got \"%s\"\n", got);
		CHECK(strcmp(got, cases[i][1]) == 0);
		CHECK(strlen(got) <= 60);
		check_pieces(cases[i][0], got);
		/* Wide enough: the name itself, not a copy. */
		CHECK(spulse_elide(cases[i][0], 4096, buf, sizeof(buf)) ==
		      cases[i][0]);
	}
	/* A buffer too small for the result: the name as it is. */
	CHECK(spulse_elide(cases[0][0], 60, buf, 8) == cases[0][0]);
	CHECK(strcmp(spulse_elide("main", 60, buf, sizeof(buf)), "main") == 0);
	return T_EXIT_PASS;
}
