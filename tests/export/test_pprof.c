/* SPDX-License-Identifier: MIT */
/* pprof export: gzip profile.proto that decodes and matches a Snapshot. */

/*
 * The export is gunzipped and unpacked with protobuf-c's generated code
 * (an independent decoder of the same schema); every sample's locations
 * are turned back into root-first names and must give the same per-(tid,
 * stack) counts as a Snapshot plus a Symbolizer. The references between
 * tables (ids, string indices, mapping ranges) are checked, and
 * `protoc --decode` must accept the bytes and its samples must add up to
 * the spool's sample count (skipped without protoc).
 */
#define _GNU_SOURCE /* memmem */
#include "export_gz_test.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile Profile;

static const char *str_at(const Profile *p, int64_t i)
{
	CHECK(i >= 0 && (size_t)i < p->n_string_table);
	return p->string_table[i];
}

static const Perftools__Profiles__Location *location(const Profile *p,
						     uint64_t id)
{
	/* The exporter numbers locations 1..n in order. */
	CHECK(id >= 1 && id <= p->n_location);
	CHECK_EQ(p->location[id - 1]->id, id);
	return p->location[id - 1];
}

static const char *function_name(const Profile *p, uint64_t id)
{
	CHECK(id >= 1 && id <= p->n_function);
	CHECK_EQ(p->function[id - 1]->id, id);
	return str_at(p, p->function[id - 1]->name);
}

static void check_location(const Profile *p,
			   const Perftools__Profiles__Location *l)
{
	const Perftools__Profiles__Mapping *m;

	CHECK(l->n_line >= 1);
	if (!l->mapping_id)
		return;
	CHECK(l->mapping_id <= p->n_mapping);
	m = p->mapping[l->mapping_id - 1];
	CHECK_EQ(m->id, l->mapping_id);
	CHECK(l->address >= m->memory_start && l->address < m->memory_limit);
	CHECK(str_at(p, m->filename)[0] == '/');
	/* Read from the file at export time: empty or lowercase hex. */
	CHECK(strspn(str_at(p, m->build_id), "0123456789abcdef") ==
	      strlen(str_at(p, m->build_id)));
}

/* Root-first names of sample @s: locations reversed, lines reversed. */
static char *sample_key(const Profile *p, const Perftools__Profiles__Sample *s,
			int32_t tid, size_t *len)
{
	const char *names[256];
	size_t n = 0, i, j;

	for (i = s->n_location_id; i-- > 0;) {
		const Perftools__Profiles__Location *l =
			location(p, s->location_id[i]);

		check_location(p, l);
		for (j = l->n_line; j-- > 0;) {
			CHECK(n < 256);
			names[n] = function_name(p, l->line[j]->function_id);
			/* pprof's spelling of the marker (no '<': see pprof.c). */
			if (strcmp(names[n], "[stack truncated]") == 0)
				names[n] = "<stack truncated>";
			n++;
		}
	}
	return gzt_key(tid, names, n, len);
}

static int64_t label(const Profile *p, const Perftools__Profiles__Sample *s,
		     const char *key)
{
	size_t i;

	for (i = 0; i < s->n_label; i++)
		if (strcmp(str_at(p, s->label[i]->key), key) == 0)
			return s->label[i]->num;
	fprintf(stderr, "label %s missing\n", key);
	exit(T_EXIT_FAIL);
}

static void check_header(const Profile *p, int empty)
{
	CHECK(p->n_string_table >= 1);
	CHECK(strcmp(p->string_table[0], "") == 0);
	CHECK_EQ(p->n_sample_type, 2);
	CHECK(strcmp(str_at(p, p->sample_type[0]->type), "samples") == 0);
	CHECK(strcmp(str_at(p, p->sample_type[0]->unit), "count") == 0);
	CHECK(strcmp(str_at(p, p->sample_type[1]->type), "cpu") == 0);
	CHECK(strcmp(str_at(p, p->sample_type[1]->unit), "nanoseconds") == 0);
	CHECK_PTR(p->period_type);
	CHECK_EQ(p->period, 1000000);
	CHECK_EQ(p->time_nanos, 1700000000000000ull * 1000);
	CHECK(empty ? p->duration_nanos == 0 : p->duration_nanos > 0);
	CHECK_EQ(p->n_comment, 1);
	CHECK(strcmp(str_at(p, p->comment[0]), "gz \"test\"") == 0);
}

/*
 * Sums the first value of every sample in `protoc --decode` text: the
 * first "value:" line after each top-level "sample {".
 */
static int64_t text_total(FILE *f)
{
	char line[512];
	int64_t total = 0, v;
	int want = 0;

	while (fgets(line, sizeof(line), f)) {
		if (strcmp(line, "sample {\n") == 0)
			want = 1;
		else if (want && sscanf(line, " value: %" SCNd64, &v) == 1)
			total += v, want = 0;
	}
	return total;
}

/*
 * `protoc --decode` on the raw message, when protoc is installed: it must
 * accept the bytes, and its samples must add up to @total.
 */
static void protoc_decode(const struct gzt *t, const char *tests_dir,
			  const unsigned char *pb, size_t len, int64_t total)
{
	char path[192], cmd[1024];
	FILE *f;

	if (system("protoc --version >/dev/null 2>&1") != 0) {
		fprintf(stderr, "protoc missing: --decode check skipped\n");
		return;
	}
	snprintf(path, sizeof(path), "%s/profile.pb", t->dir);
	f = fopen(path, "wb");
	CHECK_PTR(f);
	CHECK_EQ(fwrite(pb, 1, len, f), len);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "protoc --decode perftools.profiles.Profile "
		 "-I '%s/../../src/export' profile.proto < '%s' > '%s.txt'",
		 tests_dir, path, path);
	CHECK_EQ_INT(system(cmd), 0);
	snprintf(cmd, sizeof(cmd), "%s.txt", path);
	f = fopen(cmd, "r");
	CHECK_PTR(f);
	CHECK_EQ(text_total(f), total);
	fclose(f);
}

static uint64_t stacks_total(const struct gzt_stacks *st)
{
	uint64_t total = 0;
	size_t i;

	for (i = 0; i < st->n; i++)
		total += st->v[i].count;
	return total;
}

static void test_profile(const char *tests_dir)
{
	struct gzt_stacks got = { 0 }, want;
	unsigned char *pb;
	size_t len, i, klen;
	Profile *p;
	struct gzt t;

	gzt_setup(&t, 0);
	gzt_export(&t, SP_EXPORT_PPROF, &pb, &len);
	gzt_expected(&t, &want);
	protoc_decode(&t, tests_dir, pb, len, (int64_t)stacks_total(&want));
	p = perftools__profiles__profile__unpack(NULL, len, pb);
	CHECK_PTR(p);
	check_header(p, 0);
	for (i = 0; i < p->n_sample; i++) {
		const Perftools__Profiles__Sample *s = p->sample[i];
		int32_t tid = (int32_t)label(p, s, "tid");
		char *key = sample_key(p, s, tid, &klen);

		CHECK_EQ(s->n_value, 2);
		CHECK_EQ(s->value[1], s->value[0] * 1000000);
		CHECK(label(p, s, "pid") == t.pid ||
		      label(p, s, "pid") == t.pid + 7);
		gzt_stacks_add(&got, key, klen, (uint64_t)s->value[0]);
	}
	CHECK_EQ(want.n, 6);
	CHECK_EQ(stacks_total(&got), stacks_total(&want));
	CHECK(gzt_has_name(&want, "gzt_root"));
	CHECK(gzt_has_name(&want, "\\xff\\xfe"));
	gzt_compare(&got, &want);
	gzt_stacks_free(&got);
	gzt_stacks_free(&want);
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(pb);
	gzt_teardown(&t);
}

static void test_empty(const char *tests_dir)
{
	unsigned char *pb;
	size_t len;
	Profile *p;
	struct gzt t;

	gzt_setup(&t, 1);
	gzt_export(&t, SP_EXPORT_PPROF, &pb, &len);
	protoc_decode(&t, tests_dir, pb, len, 0);
	p = perftools__profiles__profile__unpack(NULL, len, pb);
	CHECK_PTR(p);
	check_header(p, 1);
	CHECK_EQ(p->n_sample, 0);
	CHECK_EQ(p->n_location, 0);
	perftools__profiles__profile__free_unpacked(p, NULL);
	free(pb);
	gzt_teardown(&t);
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return T_EXIT_SKIP;
	test_profile(argv[1]);
	test_empty(argv[1]);
	return T_EXIT_PASS;
}
