/* SPDX-License-Identifier: MIT */
/* CFI tables: the builder against its libdw oracle on real ELF files. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cfi_oracle.h"
#include "check.h"
#include "image.h"
#include "unwind_internal.h"

/*
 * sp__cfi_table_build (its own section parser and CFA interpreter) must
 * give byte for byte the table the libdw-based builder gave
 * (cfi_oracle.c): base, span, rows, rule sets, extras, expressions and
 * their operations, and the same error, for each of a set of real files:
 * /lib/x86_64-linux-gnu/ (*.so*), /usr/bin/ (all), pyenv's libpython3.12/3.13,
 * AArch64 ELFs of a cross build in the source tree (build-aarch64) when
 * there is one, this executable, the unwind fixture DSO and the ELF
 * images of tests/corpus/cfi. The oracle needs about 0.6 us a row, so the
 * directories are sampled evenly down to MAX_FILES (SP_CFI_DIFF_ALL=1
 * compares every file); the named big objects are always in. Every file
 * is counted: compared with rows, compared without CFI, not an ELF.
 */

#ifndef SP_SRC_ROOT
#define SP_SRC_ROOT "."
#endif
#ifndef SP_UNWIND_DSO
#define SP_UNWIND_DSO ""
#endif

#if defined(__SANITIZE_ADDRESS__)
#define MAX_FILES 48
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MAX_FILES 48
#endif
#endif
#if !defined(MAX_FILES) && defined(__aarch64__)
#define MAX_FILES 40 /* the cross build runs it under qemu-user */
#endif
#ifndef MAX_FILES
#define MAX_FILES 400
#endif

struct list {
	char **path;
	size_t n, cap;
};

static struct sp__mem mem;
static size_t n_rows, n_empty, n_notelf, n_elf_err, total_rows;

static void add(struct list *l, const char *path)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 256;
		l->path = realloc(l->path, l->cap * sizeof(*l->path));
		CHECK(l->path != NULL);
	}
	l->path[l->n] = strdup(path);
	CHECK(l->path[l->n] != NULL);
	l->n++;
}

static void list_free(struct list *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->path[i]);
	free(l->path);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Regular files in @dir whose name contains @part (NULL: all), sorted. */
static void list_dir(struct list *l, const char *dir, const char *part)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char path[4096];
	struct stat st;
	size_t first = l->n;

	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.' || (part && !strstr(e->d_name, part)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
		    st.st_size > 64)
			add(l, path);
	}
	closedir(d);
	qsort(l->path + first, l->n - first, sizeof(*l->path), cmp_str);
}

/* Every stride-th entry of @from, in order, at most @max: how many. */
static size_t sample(struct list *to, const struct list *from, size_t max)
{
	size_t i, n = 0, stride = from->n > max ? (from->n + max - 1) / max : 1;

	for (i = 0; i < from->n; i += stride, n++)
		add(to, from->path[i]);
	return n;
}

#define SAME_ARRAY(a, b, n)                                                    \
	CHECK((n) == 0 || memcmp((a), (b), (n) * sizeof(*(a))) == 0)

static void compare(const char *what, const struct sp__cfi_table *t,
		    const struct sp__cfi_table *o)
{
	size_t i;

	if (t->nrows != o->nrows || t->base != o->base || t->span != o->span)
		fprintf(stderr, "%s: rows %zu/%zu base %#lx/%#lx\n", what,
			t->nrows, o->nrows, (unsigned long)t->base,
			(unsigned long)o->base);
	for (i = 0; i < t->nrows && i < o->nrows; i++) {
		if (t->rows[i].pc == o->rows[i].pc &&
		    t->rows[i].rules == o->rows[i].rules)
			continue;
		fprintf(stderr,
			"%s: row %zu: pc %#x rules %u, oracle pc %#x rules "
			"%u\n",
			what, i, t->rows[i].pc, t->rows[i].rules, o->rows[i].pc,
			o->rows[i].rules);
		break;
	}
	CHECK_EQ(t->base, o->base);
	CHECK_EQ(t->span, o->span);
	CHECK_EQ(t->nrows, o->nrows);
	SAME_ARRAY(t->rows, o->rows, t->nrows);
	CHECK_EQ(t->nrules, o->nrules);
	SAME_ARRAY(t->rules, o->rules, t->nrules);
	CHECK_EQ(t->nextras, o->nextras);
	SAME_ARRAY(t->extras, o->extras, t->nextras);
	CHECK_EQ(t->nexprs, o->nexprs);
	SAME_ARRAY(t->exprs, o->exprs, t->nexprs);
	CHECK_EQ(t->nops, o->nops);
	SAME_ARRAY(t->ops, o->ops, t->nops);
	CHECK_EQ(t->npages, o->npages);
	SAME_ARRAY(t->page_first, o->page_first, t->npages + 1);
	CHECK_EQ(t->bytes, o->bytes);
}

static void check_image(const char *what, struct sp__image *img)
{
	struct sp__cfi_table *t = NULL, *o = NULL;
	int err, oerr;

	sp__image_lock(img);
	err = sp__cfi_table_build(&mem, sp__image_elf(img), &t);
	oerr = cfi_oracle_build(&mem, sp__image_elf(img), &o);
	sp__image_unlock(img);
	if (err != oerr)
		fprintf(stderr, "%s: build %d, oracle %d\n", what, err, oerr);
	CHECK_EQ_INT(err, oerr);
	if (err) {
		n_elf_err++;
		return;
	}
	compare(what, t, o);
	if (t->nrows) {
		n_rows++;
		total_rows += t->nrows;
	} else {
		n_empty++;
	}
	sp__cfi_table_free(t);
	sp__cfi_table_free(o);
}

static void check_path(const char *path)
{
	struct sp__image *img;

	if (sp__image_open_path(&mem, path, &img) != 0) {
		n_notelf++;
		return;
	}
	check_image(path, img);
	sp__image_unref(img);
}

/* tests/corpus/cfi inputs: | elf_len u32 LE | ELF | stack bytes |. */
static void check_corpus(const char *path)
{
	struct sp__image *img;
	uint8_t *buf = NULL;
	size_t len = 0, elf_len;
	FILE *f = fopen(path, "rb");
	long size;

	if (!f)
		return;
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 4) {
		buf = malloc((size_t)size);
		rewind(f);
		if (buf && fread(buf, 1, (size_t)size, f) == (size_t)size)
			len = (size_t)size;
	}
	fclose(f);
	if (len < 4) {
		free(buf);
		return;
	}
	elf_len = (size_t)buf[0] | (size_t)buf[1] << 8 | (size_t)buf[2] << 16 |
		  (size_t)buf[3] << 24;
	if (elf_len > len - 4)
		elf_len = len - 4;
	if (sp__image_open_memory(&mem, buf + 4, elf_len, false, path, &img) ==
	    0) {
		check_image(path, img);
		sp__image_unref(img);
	} else {
		n_notelf++;
	}
	free(buf);
}

static void pyenv_libs(struct list *l)
{
	const char *root = getenv("PYENV_ROOT");
	char dir[4096];
	struct list v = { 0 };
	size_t i;

	if (!root)
		root = "/root/.pyenv";
	snprintf(dir, sizeof(dir), "%s/versions", root);
	{
		DIR *d = opendir(dir);
		struct dirent *e;

		while (d && (e = readdir(d)) != NULL) {
			char lib[4096 + 300];

			if (strncmp(e->d_name, "3.12", 4) &&
			    strncmp(e->d_name, "3.13", 4))
				continue;
			snprintf(lib, sizeof(lib), "%s/%s/lib", dir, e->d_name);
			list_dir(&v, lib, "libpython3.1");
		}
		if (d)
			closedir(d);
	}
	for (i = 0; i < v.n; i++)
		add(l, v.path[i]);
	list_free(&v);
}

int main(void)
{
	static const char *named[] = {
		"/lib/x86_64-linux-gnu/libc.so.6",
		"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
		"/usr/bin/python3.11",
		"/usr/lib/gcc/x86_64-linux-gnu/12/cc1",
		"/proc/self/exe",
		SP_UNWIND_DSO,
	};
	struct list libs = { 0 }, bins = { 0 }, a64 = { 0 }, set = { 0 };
	struct list corpus = { 0 };
	bool all = getenv("SP_CFI_DIFF_ALL") != NULL;
	size_t i, nlibs, nbins, na64, max = all ? SIZE_MAX / 4 : MAX_FILES;
	struct timespec t0, t1;

	sp__mem_init(&mem, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	list_dir(&libs, "/lib/x86_64-linux-gnu", ".so");
	list_dir(&bins, "/usr/bin", NULL);
	list_dir(&a64, SP_SRC_ROOT "/build-aarch64/src", ".so");
	list_dir(&a64, SP_SRC_ROOT "/build-aarch64/tests/unwind", "test_");
	list_dir(&corpus, SP_SRC_ROOT "/tests/corpus/cfi", NULL);
	for (i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		if (named[i][0] && access(named[i], R_OK) == 0)
			add(&set, named[i]);
	pyenv_libs(&set);
	nlibs = sample(&set, &libs, max / 2);
	nbins = sample(&set, &bins, max / 2);
	na64 = sample(&set, &a64, 40);
	for (i = 0; i < set.n; i++)
		check_path(set.path[i]);
	for (i = 0; i < corpus.n; i++)
		check_corpus(corpus.path[i]);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("test_cfi_differential: %zu files (%zu of %zu libs, %zu of "
	       "%zu bins, %zu AArch64, %zu corpus): %zu with rows (%zu rows "
	       "in all), %zu without CFI, %zu not ELF, %zu failed alike; "
	       "%.1f s\n",
	       set.n + corpus.n, nlibs, libs.n, nbins, bins.n, na64, corpus.n,
	       n_rows, total_rows, n_empty, n_notelf, n_elf_err,
	       (double)(t1.tv_sec - t0.tv_sec) +
		       (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	list_free(&libs);
	list_free(&bins);
	list_free(&a64);
	list_free(&set);
	list_free(&corpus);
	CHECK(n_rows > 0);
	return T_EXIT_PASS;
}
