/* SPDX-License-Identifier: MIT */
/* spool_gen: write a deterministic scenario spool (fixtures, demos, corpora). */

/*
 * Usage: spool_gen --scenario NAME --out FILE [--zstd] [--samples N]
 *
 * The file is produced by the public writer through a file sink (wrapped
 * in a zstd sink with --zstd), so it is exactly what a recorder using the
 * library would write. The same arguments always give the same bytes.
 * A one-line summary goes to stderr; nothing is printed on stdout.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <stackpulse/error.h>

#include "scenario.h"

struct gen_args {
	const char *scenario;
	const char *out;
	uint64_t samples;
	enum scenario_compression compression;
};

static void usage(FILE *f)
{
	const struct scenario *scn;
	size_t i;

	fprintf(f, "usage: spool_gen --scenario NAME --out FILE [--zstd] "
		   "[--samples N]\nscenarios:");
	for (i = 0; (scn = scenario_get(i)) != NULL; i++)
		fprintf(f, " %s", scn->name);
	fprintf(f, "\n");
}

static int parse_count(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 10);
	return (errno || end == s || *end || *out == 0 || s[0] == '-') ?
		       -EINVAL :
		       0;
}

static int parse_args(int argc, char **argv, struct gen_args *a)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *arg = argv[i];
		const char *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(arg, "--zstd") == 0) {
			a->compression = SCN_ZSTD;
			continue;
		}
		if (!val)
			return -EINVAL;
		if (strcmp(arg, "--scenario") == 0)
			a->scenario = val;
		else if (strcmp(arg, "--out") == 0)
			a->out = val;
		else if (strcmp(arg, "--samples") != 0 ||
			 parse_count(val, &a->samples))
			return -EINVAL;
		i++;
	}
	return a->scenario && a->out ? 0 : -EINVAL;
}

int main(int argc, char **argv)
{
	struct gen_args a = { 0 };
	const struct scenario *scn;
	struct scenario_gen *gen = NULL;
	uint64_t raw = 0;
	struct stat st;
	int err;

	if (parse_args(argc, argv, &a)) {
		usage(stderr);
		return 2;
	}
	scn = scenario_find(a.scenario);
	if (!scn) {
		fprintf(stderr, "spool_gen: unknown scenario '%s'\n",
			a.scenario);
		usage(stderr);
		return 2;
	}
	err = scenario_gen_new(scn, a.samples, &gen);
	if (!err)
		err = scenario_write_file(gen, a.out, a.compression, &raw);
	if (!err && stat(a.out, &st) != 0)
		err = -errno;
	if (err) {
		fprintf(stderr, "spool_gen: %s: %s\n", a.out, sp_strerror(err));
		scenario_gen_free(gen);
		return 1;
	}
	fprintf(stderr,
		"spool_gen: %s: %" PRIu64 " samples, %" PRIu64
		" spool bytes (%.2f/sample), %lld bytes%s -> %s\n",
		scn->name, scenario_gen_samples(gen), raw,
		(double)raw / (double)scenario_gen_samples(gen),
		(long long)st.st_size, a.compression == SCN_ZSTD ? " zstd" : "",
		a.out);
	scenario_gen_free(gen);
	return 0;
}
