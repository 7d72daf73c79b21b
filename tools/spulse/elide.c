/* SPDX-License-Identifier: MIT */
/* spulse: long C++ and Rust names shortened for tables, whole tokens at a time. */

/*
 * A demangled C++ name can run to thousands of characters, nearly all of
 * them template arguments:
 *
 *   std::_Hashtable<std::__cxx11::basic_string<char, ...>, ...>::_M_find_before_node(...) const
 *
 * A table shows what a reader needs to tell functions apart: the path
 * and the function name. So the longest outermost argument list <...>
 * (or {...} of a lambda) is replaced by "<...>" until the name fits, then
 * the parameter list (...); if it still does not fit, leading path
 * components go ("...::"). A token is never cut: the result is made of
 * whole pieces of the name and "...", and a name that cannot be made to
 * fit that way is shown as short as it gets. "operator<" and friends are
 * not brackets.
 */
#include <stdbool.h>
#include <string.h>

#include "elide.h"

#define DOTS "..."

/* Length of an operator token at @s ("operator<<=", "operator->"), or 0. */
static size_t operator_len(const char *s, size_t n)
{
	size_t i = 8;

	if (n < 8 || memcmp(s, "operator", 8) != 0)
		return 0;
	while (i < n && strchr("<>=-!&|+*/%^~[]()", s[i]) && i < 11)
		i++;
	return i > 8 ? i : 0;
}

/* Where the group opened at @s[open] closes, or @n when it does not. */
static size_t group_end(const char *s, size_t n, size_t open)
{
	int depth = 0;
	size_t i, op;

	for (i = open; i < n; i++) {
		op = operator_len(s + i, n - i);
		if (op) {
			i += op - 1;
			continue;
		}
		if (s[i] == '<' || s[i] == '(' || s[i] == '{' || s[i] == '[')
			depth++;
		else if (s[i] == '>' || s[i] == ')' || s[i] == '}' ||
			 s[i] == ']')
			if (--depth == 0)
				return i;
	}
	return n;
}

/*
 * The longest outermost group opened by one of @opens whose inside is
 * not already "...": its bounds in *@a, *@b (open and close). False when
 * there is none.
 */
static bool longest_group(const char *s, size_t n, const char *opens, size_t *a,
			  size_t *b)
{
	size_t i, e, best = 0, op;

	for (i = 0; i < n; i++) {
		op = operator_len(s + i, n - i);
		if (op) {
			i += op - 1;
			continue;
		}
		if (!strchr("<({[", s[i]) || s[i] == '\0')
			continue;
		e = group_end(s, n, i);
		if (e == n)
			return best != 0;
		if (strchr(opens, s[i]) && e - i - 1 > strlen(DOTS) &&
		    e - i > best) {
			best = e - i;
			*a = i;
			*b = e;
		}
		i = e;
	}
	return best != 0;
}

/* Replaces @s[a + 1, b) by "..." in place; returns the new length. */
static size_t collapse(char *s, size_t n, size_t a, size_t b)
{
	size_t d = strlen(DOTS);

	memcpy(s + a + 1, DOTS, d);
	memmove(s + a + 1 + d, s + b, n - b + 1);
	return n - (b - a - 1) + d;
}

/* Drops the leading path component ("a::b::f" -> "...::b::f"). */
static size_t drop_component(char *s, size_t n)
{
	size_t start = strncmp(s, DOTS "::", 5) == 0 ? 5 : 0, i, op;

	for (i = start; i + 1 < n; i++) {
		op = operator_len(s + i, n - i);
		if (op) {
			i += op - 1;
			continue;
		}
		if (strchr("<({[", s[i])) {
			i = group_end(s, n, i);
			continue;
		}
		if (s[i] == ' ')
			return n; /* "const" after the function: the end */
		if (s[i] == ':' && s[i + 1] == ':' &&
		    strstr(s + i + 2, "::") != NULL) {
			memmove(s + 5, s + i + 2, n - (i + 2) + 1);
			memcpy(s, DOTS "::", 5);
			return n - (i + 2) + 5;
		}
	}
	return n;
}

const char *spulse_elide(const char *name, size_t width, char *buf, size_t cap)
{
	size_t n = strlen(name), a, b, m;

	if (n <= width || n >= cap)
		return name;
	memcpy(buf, name, n + 1);
	while (n > width && longest_group(buf, n, "<{", &a, &b))
		n = collapse(buf, n, a, b);
	while (n > width && longest_group(buf, n, "(", &a, &b))
		n = collapse(buf, n, a, b);
	while (n > width) {
		m = drop_component(buf, n);
		if (m == n)
			break;
		n = m;
	}
	return buf;
}
