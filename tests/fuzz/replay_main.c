/* SPDX-License-Identifier: MIT */
/* Corpus replay driver: runs one fuzz target over files, without libFuzzer. */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz.h"

/*
 * Usage: replay_<name> PATH...   where each PATH is a file or a directory
 * whose regular files (sorted by name, not recursive) are the inputs.
 * Each input is copied to an exactly sized heap block, as libFuzzer does,
 * so an overread is caught by ASan in sanitizer builds. A directory with
 * no inputs fails the run: an empty corpus would pass vacuously.
 * Exit 0 = all inputs ran, 1 = usage or I/O error; a broken invariant
 * aborts inside the target.
 */

static int run_file(const char *path)
{
	struct stat st;
	uint8_t *buf;
	size_t got;
	FILE *f = fopen(path, "rb");

	if (!f || fstat(fileno(f), &st) < 0) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		return -1;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	got = buf ? fread(buf, 1, (size_t)st.st_size, f) : 0;
	fclose(f);
	if (!buf || got != (size_t)st.st_size) {
		fprintf(stderr, "%s: short read\n", path);
		free(buf);
		return -1;
	}
	LLVMFuzzerTestOneInput(buf, got);
	free(buf);
	return 0;
}

static int only_files(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

/* Runs every regular file of @dir; returns the count or -1. */
static long run_dir(const char *dir)
{
	struct dirent **names;
	char path[4096];
	struct stat st;
	long ran = 0;
	int i, n = scandir(dir, &names, only_files, alphasort);

	if (n < 0) {
		fprintf(stderr, "%s: %s\n", dir, strerror(errno));
		return -1;
	}
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]->d_name);
		if (ran >= 0 && stat(path, &st) == 0 && S_ISREG(st.st_mode))
			ran = run_file(path) < 0 ? -1 : ran + 1;
		free(names[i]);
	}
	free(names);
	return ran;
}

int main(int argc, char **argv)
{
	struct stat st;
	long total = 0, ran;
	int i;

	if (argc < 2) {
		fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
		return 1;
	}
	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &st) < 0) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		ran = S_ISDIR(st.st_mode) ? run_dir(argv[i]) :
					    (run_file(argv[i]) < 0 ? -1 : 1);
		if (ran <= 0) {
			fprintf(stderr, "%s: no inputs could be run\n",
				argv[i]);
			return 1;
		}
		total += ran;
	}
	printf("%s: ran %ld inputs\n", argv[0], total);
	return 0;
}
