/* SPDX-License-Identifier: MIT */
/* sp__demangle: C++ and Rust names as c++filt prints them, hostile names refused. */

/*
 * The expected strings are what c++filt (binutils 2.40, Debian 12)
 * printed for each name; when c++filt is installed the test asks it
 * again, so a different libiberty on the build machine is caught as a
 * disagreement with the oracle, not with a string copied here. Then the
 * names that must stay mangled (not mangled, malformed, too long) and
 * hostile ones that only have to come back without a crash (libiberty
 * refuses names nested deeper than its recursion limit by itself).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "sym_internal.h"

static const char *const cases[][2] = {
	{ "_ZNSt6vectorIiSaIiEE9push_backERKi",
	  "std::vector<int, std::allocator<int> >::push_back(int const&)" },
	{ "_ZN2ns5driveIZ4mainEUliE_EElT_d",
	  "long ns::drive<main::{lambda(int)#1}>(main::{lambda(int)#1}, "
	  "double)" },
	/* A "@suffix" (PLT, symbol versions) stays after the name. */
	{ "_Z3foov@plt", "foo()@plt" },
	{ "_ZNKSt8functionIFvvEEclEv@@GLIBCXX_3.4",
	  "std::function<void ()>::operator()() const@@GLIBCXX_3.4" },
	/* Rust legacy (hash kept, as c++filt prints it) and v0. */
	{ "_ZN9rs_nested4main17h0123456789abcdefE",
	  "rs_nested::main::h0123456789abcdef" },
	{ "_RNvCs7oyZtkqNoq9_9rs_nested4main",
	  "rs_nested[5625eaac143e960f]::main" },
};

static const char *const refused[] = {
	"main", "", "_", "_Z", "_Zbogus", "_R", "_RNv", "Z3foov", "__Z3foov",
};

static void check_str(const char *got, const char *want)
{
	if (strcmp(got, want) != 0)
		fprintf(stderr, "got \"%s\", want \"%s\"\n", got, want);
	CHECK(strcmp(got, want) == 0);
}

/* c++filt's answer for @name read as text (as a report is), or NULL. */
static char *cxxfilt(const char *name)
{
	char cmd[256], line[1024];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "echo '%s' | c++filt 2>/dev/null", name);
	p = popen(cmd, "r");
	if (!p)
		return NULL;
	if (!fgets(line, sizeof(line), p)) {
		pclose(p);
		return NULL;
	}
	if (pclose(p) != 0)
		return NULL;
	line[strcspn(line, "\n")] = '\0';
	return strdup(line);
}

static void check_one(const struct sp__mem *mem, const char *name,
		      const char *want)
{
	size_t size = 0;
	char *got = sp__demangle(mem, name, &size);
	char *oracle = cxxfilt(name);

	CHECK_PTR(got);
	CHECK(size > strlen(got));
	check_str(got, want);
	if (oracle) {
		check_str(got, oracle);
		free(oracle);
	}
	sp__mem_free(mem, got, size);
}

/* "_Z<len><len times 'a'>v": the function aaa...a(). */
static char *long_name(size_t len)
{
	char *s = malloc(len + 32);
	int n;

	CHECK_PTR(s);
	n = sprintf(s, "_Z%zu", len);
	memset(s + n, 'a', len);
	strcpy(s + n + len, "v");
	return s;
}

int main(void)
{
	struct sp__mem mem;
	size_t size, i;
	char *name, *got;

	sp__mem_init(&mem, NULL);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_one(&mem, cases[i][0], cases[i][1]);
	for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		CHECK(sp__demangle(&mem, refused[i], &size) == NULL);
	CHECK(sp__demangle(&mem, NULL, &size) == NULL);

	/* A long name demangles; one longer than the input limit stays
	 * mangled (libiberty's stack use grows with the name). */
	name = long_name(1000);
	got = sp__demangle(&mem, name, &size);
	CHECK_PTR(got);
	CHECK(strlen(got) == 1000 + 2);
	CHECK(strcmp(got + strlen(got) - 3, "a()") == 0);
	sp__mem_free(&mem, got, size);
	free(name);
	name = long_name(SP__DEMANGLE_IN_MAX);
	CHECK(strlen(name) > SP__DEMANGLE_IN_MAX);
	CHECK(sp__demangle(&mem, name, &size) == NULL);
	free(name);

	/* Hostile: deep pointer nesting and back-references to themselves
	 * only have to come back (demangled or not), without a crash. */
	name = malloc(SP__DEMANGLE_IN_MAX + 1);
	CHECK_PTR(name);
	memcpy(name, "_Z1f", 4);
	memset(name + 4, 'P', SP__DEMANGLE_IN_MAX - 5);
	name[SP__DEMANGLE_IN_MAX - 1] = 'i';
	name[SP__DEMANGLE_IN_MAX] = '\0';
	got = sp__demangle(&mem, name, &size);
	if (got)
		sp__mem_free(&mem, got, size);
	got = sp__demangle(&mem, "_Z1fS_S_S_S_S_S_S_S_S_S_S_S_S_S_S_S_", &size);
	if (got)
		sp__mem_free(&mem, got, size);
	free(name);
	return T_EXIT_PASS;
}
