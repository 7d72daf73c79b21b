/* SPDX-License-Identifier: MIT */
/* Debug files: stripped images, build-id dirs, mismatches, .gnu_debuglink. */
#include "native_test.h"

/*
 * Every case compares a native symbolizer of a modified copy with the
 * reference answer for the same addresses:
 *   - stripped libc, no debug dirs: .dynsym names only, no lines;
 *   - stripped libc + a build-id dir holding its debug file: full answer;
 *   - a build-id dir holding an empty file, then one holding another
 *     library's debug file (wrong build-id): neither is used;
 *   - stripped inline program + .gnu_debuglink next to it, in .debug/,
 *     and under a debug root: same answer as the unstripped program; a
 *     debug file with a changed byte (CRC mismatch) is not used.
 * Argument 1: native_inline_prog.
 */

#define ADDRS 1500
#define RANGES_MAX 200000
#define OUT_MAX 16

static struct sp__mem mem;
static char tmp[64];

static void sh(const char *fmt, const char *a, const char *b)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd), fmt, a, b, tmp);
	if (system(cmd) != 0) {
		fprintf(stderr, "command failed: %s\n", cmd);
		exit(T_EXIT_FAIL);
	}
}

static void frames_equal(const struct sp_resolved_frame *a, int na,
			 const struct sp_resolved_frame *b, int nb)
{
	int i;

	CHECK_EQ_INT(na, nb);
	for (i = 0; i < na; i++) {
		CHECK(strcmp(a[i].name, b[i].name) == 0);
		CHECK(strcmp(a[i].file ? a[i].file : "",
			     b[i].file ? b[i].file : "") == 0);
		CHECK_EQ(a[i].line, b[i].line);
		CHECK_EQ(a[i].column, b[i].column);
		CHECK_EQ(a[i].offset, b[i].offset);
		CHECK_EQ(a[i].inline_depth, b[i].inline_depth);
	}
}

/* @path with @dirs resolves every address exactly like @ref. */
static void same_as(struct sp__native *ref, const char *path, const char *dirs,
		    const uint64_t *addrs, size_t n)
{
	struct sp_resolved_frame fa[OUT_MAX], fb[OUT_MAX];
	struct sp__native *native = nt_open(&mem, path, dirs);
	size_t i;

	for (i = 0; i < n; i++) {
		int na = sp__native_lookup(ref, addrs[i], 0, fa, OUT_MAX);
		int nb = sp__native_lookup(native, addrs[i], 0, fb, OUT_MAX);

		frames_equal(fa, na, fb, nb);
	}
	sp__native_free(native);
}

/*
 * @path with @dirs answers from .dynsym only: one frame, no lines, on a
 * symbol that starts at a .dynsym function; returns how many resolved.
 */
static size_t dynsym_only(const char *path, const char *dirs,
			  const uint64_t *addrs, size_t n)
{
	struct sp__native *native = nt_open(&mem, path, dirs);
	struct sp_resolved_frame f[OUT_MAX];
	size_t i, hits = 0;

	for (i = 0; i < n; i++) {
		int k = sp__native_lookup(native, addrs[i], 0, f, OUT_MAX);

		CHECK_OK(k);
		if (k == 0)
			continue;
		CHECK_EQ_INT(k, 1);
		CHECK(f[0].file == NULL && f[0].line == 0);
		CHECK(f[0].offset <= addrs[i]);
		hits++;
	}
	sp__native_free(native);
	return hits;
}

static void libc_cases(void)
{
	struct nt_range *r = calloc(RANGES_MAX, sizeof(*r));
	char libc[512], stripped[600], dirs[700], path[2048];
	const struct sp__image_id *id;
	struct sp__native *ref;
	struct sp__image *img;
	uint64_t addrs[ADDRS];
	size_t n, i;

	nt_libc_path(libc);
	snprintf(stripped, sizeof(stripped), "%s/libc.so.6", tmp);
	sh("strip --strip-all -o '%2$s' '%1$s' # %3$s", libc, stripped);
	/* Exported functions only: what .dynsym can name. */
	n = nt_func_ranges(stripped, r, RANGES_MAX, 0);
	CHECK(n > 1000);
	nt_pick(r, n, 42, addrs, ADDRS);
	snprintf(dirs, sizeof(dirs), "%s/none", tmp);
	CHECK_EQ(dynsym_only(stripped, dirs, addrs, ADDRS), ADDRS);

	CHECK_OK(sp__image_open_path(&mem, libc, &img));
	id = sp__image_identity(img);
	n = (size_t)snprintf(path, sizeof(path), "%s/good/.build-id/%02x", tmp,
			     id->build_id[0]);
	sh("mkdir -p '%s' # %s %s", path, "");
	n += (size_t)snprintf(path + n, sizeof(path) - n, "/");
	for (i = 1; i < id->build_id_len; i++)
		n += (size_t)snprintf(path + n, sizeof(path) - n, "%02x",
				      id->build_id[i]);
	snprintf(path + n, sizeof(path) - n, ".debug");
	sp__image_unref(img);

	/* The real debug file under a temporary root: the full answer. */
	ref = nt_open(&mem, libc, NULL);
	sh("cp /usr/lib/debug/.build-id/%2$s '%1$s' # %3$s", path,
	   strstr(path, ".build-id/") + strlen(".build-id/"));
	snprintf(dirs, sizeof(dirs), "%s/none:%s/good", tmp, tmp);
	same_as(ref, stripped, dirs, addrs, ADDRS);
	sp__native_free(ref);

	/* Empty file, then a wrong build-id: neither is used. */
	sh("truncate -s 0 '%s' # %s %s", path, "");
	CHECK_EQ(dynsym_only(stripped, dirs, addrs, ADDRS), ADDRS);
	sh("cp \"$(ls /usr/lib/debug/.build-id/*/*.debug | grep -v %2$s | "
	   "head -1)\" '%1$s' # %3$s",
	   path, strstr(path, ".build-id/") + strlen(".build-id/") + 3);
	CHECK_EQ(dynsym_only(stripped, dirs, addrs, ADDRS), ADDRS);
	free(r);
	printf("libc: stripped, build-id dir, empty and mismatched debug files ok\n");
}

static void debuglink_cases(const char *prog)
{
	char s[600], dbg[600], dirs[700];
	struct nt_range r[256];
	struct sp__native *ref;
	uint64_t addrs[ADDRS];
	size_t n;

	n = nt_func_ranges(prog, r, 256, 0);
	CHECK(n > 10);
	nt_pick(r, n, 7, addrs, ADDRS);
	ref = nt_open(&mem, prog, NULL);
	snprintf(s, sizeof(s), "%s/bin/prog", tmp);
	snprintf(dirs, sizeof(dirs), "%s/root", tmp);
	sh("mkdir -p %3$s/bin/.debug %3$s/root && "
	   "objcopy --only-keep-debug '%1$s' %3$s/prog.debug && "
	   "strip --strip-all -o '%2$s' '%1$s' && "
	   "objcopy --add-gnu-debuglink=%3$s/prog.debug '%2$s'",
	   prog, s);
	/* Without the debug file: no symbols at all (an executable). */
	n = dynsym_only(s, dirs, addrs, ADDRS);
	CHECK_EQ(n, 0);
	/* Next to the image, in .debug/, and under the root. */
	sh("cp %3$s/prog.debug %3$s/bin/ # %1$s %2$s", "", "");
	same_as(ref, s, dirs, addrs, ADDRS);
	sh("mv %3$s/bin/prog.debug %3$s/bin/.debug/ # %1$s %2$s", "", "");
	same_as(ref, s, dirs, addrs, ADDRS);
	sh("mkdir -p %3$s/root%3$s/bin && "
	   "mv %3$s/bin/.debug/prog.debug %3$s/root%3$s/bin/ # %1$s %2$s",
	   "", "");
	same_as(ref, s, dirs, addrs, ADDRS);
	/* One flipped byte at the end: CRC mismatch, not used. */
	snprintf(dbg, sizeof(dbg), "%s/root%s/bin/prog.debug", tmp, tmp);
	sh("printf 'X' >> '%s' # %s %s", dbg, "");
	CHECK_EQ(dynsym_only(s, dirs, addrs, ADDRS), 0);
	sp__native_free(ref);
	printf("inline_prog: .gnu_debuglink (dir, .debug/, root) and CRC ok\n");
}

/*
 * Hostile files: copies of the program with bytes overwritten at random
 * offsets past the ELF header (sections, DWARF, symbol tables). Opening
 * may fail; whatever opens must answer every lookup without crashing or
 * hanging (run under ASan/UBSan too).
 */
static void corrupt_cases(const char *prog)
{
	struct sp_resolved_frame f[OUT_MAX];
	char path[128], *buf;
	uint64_t seed = 77, addrs[256];
	struct nt_range r[256];
	size_t n, size, i, k;
	int round, opened = 0;
	FILE *fp;

	n = nt_func_ranges(prog, r, 256, 0);
	nt_pick(r, n, 3, addrs, 256);
	fp = fopen(prog, "rb");
	CHECK(fp && fseek(fp, 0, SEEK_END) == 0);
	size = (size_t)ftell(fp);
	buf = malloc(size);
	CHECK(buf && fseek(fp, 0, SEEK_SET) == 0 &&
	      fread(buf, 1, size, fp) == size);
	fclose(fp);
	snprintf(path, sizeof(path), "%s/corrupt", tmp);
	for (round = 0; round < 40; round++) {
		struct sp__native *native = NULL;
		struct sp__image *img;
		char *copy = malloc(size);

		CHECK(copy);
		memcpy(copy, buf, size);
		for (k = 0; k < 64; k++)
			copy[64 + nt_rand(&seed) % (size - 64)] =
				(char)nt_rand(&seed);
		fp = fopen(path, "wb");
		CHECK(fp && fwrite(copy, 1, size, fp) == size);
		fclose(fp);
		free(copy);
		if (sp__image_open_path(&mem, path, &img) < 0)
			continue;
		if (sp__native_new(&mem, img, tmp, NULL, &native) == 0) {
			opened++;
			for (i = 0; i < 256; i++)
				CHECK_OK(sp__native_lookup(native, addrs[i], 0,
							   f, OUT_MAX));
			sp__native_free(native);
		}
		sp__image_unref(img);
	}
	free(buf);
	printf("corrupted copies: %d of 40 opened, no crash\n", opened);
}

int main(int argc, char **argv)
{
	char cmd[128];
	int rc;

	unsetenv("DEBUGINFOD_URLS");
	if (argc < 2)
		return T_EXIT_FAIL;
	if (!nt_have_tool("strip") || !nt_have_tool("objcopy")) {
		printf("SKIP: binutils strip/objcopy not installed\n");
		return T_EXIT_SKIP;
	}
	sp__mem_init(&mem, NULL);
	snprintf(tmp, sizeof(tmp), "/tmp/test_native_debug_XXXXXX");
	CHECK(mkdtemp(tmp) != NULL);
	debuglink_cases(argv[1]);
	corrupt_cases(argv[1]);
	if (access("/usr/lib/debug/.build-id", R_OK) == 0)
		libc_cases();
	else
		printf("libc: no /usr/lib/debug, part skipped\n");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	rc = system(cmd);
	(void)rc;
	return T_EXIT_PASS;
}
