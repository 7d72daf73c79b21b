/* SPDX-License-Identifier: MIT */
/* bench_native: native symbolizer table builds, warm/cold lookups vs eu-addr2line. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <gelf.h>
#include <glob.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "image.h"
#include "native_internal.h"
#include "sym_internal.h"

/*
 * Per object (libc with libc6-dbg; python3.12 and libpython3.12 from
 * pyenv when present),
 * JSON lines:
 *  - "build": sp__native_new (debug file search + symbol table), best of
 *    BUILDS, and the symbol count;
 *  - "cold": a fresh symbolizer's first lookup with lines (opens DWARF,
 *    indexes the CUs, builds one CU), then the rest of a first pass over
 *    ADDRS addresses (each new CU built once), wall time;
 *  - "warm": ns per lookup once every CU is built, symbol only
 *    (SP_NATIVE_NO_LINES) and with lines + inline frames, median of RUNS
 *    passes (thread CPU time);
 *  - "addr2line": `eu-addr2line -i -f` on the same ADDRS addresses in the
 *    same run (wall time, one process), with the ratio to our cold path
 *    (new + first pass) and to the warm one.
 * Addresses are random, inside FUNC symbols (fixed seed).
 * Targets (reported, never enforced): ~40 ns symbol-only lookups.
 */

#define ADDRS 1000
#define BUILDS 5
#define RUNS 9
#define RANGES_MAX 300000
#define OUT_MAX 16

struct range {
	uint64_t addr;
	uint64_t size;
};

static struct range ranges[RANGES_MAX];
static uint64_t addrs[ADDRS];
static struct sp__mem mem;

static uint64_t ns_of(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t wall_ns(void)
{
	return ns_of(CLOCK_MONOTONIC);
}

/* Thread CPU time: the machine is shared, waits for a CPU do not count. */
static uint64_t cpu_ns(void)
{
	return ns_of(CLOCK_THREAD_CPUTIME_ID);
}

static size_t func_ranges(const char *path, size_t n)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	Elf *elf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return n;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && (scn = elf_nextscn(elf, scn)) != NULL) {
		Elf_Data *d = NULL;
		size_t i;

		if (gelf_getshdr(scn, &sh) && sh.sh_entsize &&
		    (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM))
			d = elf_getdata(scn, NULL);
		for (i = 1;
		     d && i < d->d_size / sh.sh_entsize && n < RANGES_MAX;
		     i++) {
			GElf_Sym s;

			if (gelf_getsym(d, (int)i, &s) &&
			    GELF_ST_TYPE(s.st_info) == STT_FUNC &&
			    s.st_shndx != SHN_UNDEF && s.st_size) {
				ranges[n].addr = s.st_value;
				ranges[n++].size = s.st_size;
			}
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return n;
}

static void debug_file(struct sp__image *img, char *out, size_t cap)
{
	const struct sp__image_id *id = sp__image_identity(img);
	size_t i, n;

	out[0] = '\0';
	if (id->build_id_len < 2)
		return;
	n = (size_t)snprintf(out, cap, "/usr/lib/debug/.build-id/%02x/",
			     id->build_id[0]);
	for (i = 1; i < id->build_id_len && n < cap; i++)
		n += (size_t)snprintf(out + n, cap - n, "%02x",
				      id->build_id[i]);
	if (n < cap)
		snprintf(out + n, cap - n, ".debug");
}

static void pick(size_t n)
{
	uint64_t s = 0x243f6a8885a308d3ull;
	size_t i;

	for (i = 0; i < ADDRS; i++) {
		const struct range *r;

		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		r = &ranges[s % n];
		s ^= s << 13, s ^= s >> 7, s ^= s << 17;
		addrs[i] = r->addr + s % r->size;
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Median ns per lookup of RUNS warm passes with @flags. */
static double warm_ns(struct sp__native *native, uint32_t flags, size_t *frames)
{
	struct sp_resolved_frame f[OUT_MAX];
	uint64_t t[RUNS], t0;
	int r;
	size_t i;

	for (r = 0; r < RUNS; r++) {
		*frames = 0;
		t0 = cpu_ns();
		for (i = 0; i < ADDRS; i++) {
			int k = sp__native_lookup(native, addrs[i], flags, f,
						  OUT_MAX);

			*frames += k > 0 ? (size_t)k : 0;
		}
		t[r] = cpu_ns() - t0;
	}
	qsort(t, RUNS, sizeof(t[0]), cmp_u64);
	return (double)t[RUNS / 2] / ADDRS;
}

/*
 * Median ns per table search over the ADDRS addresses: the two-level
 * index (@indexed) or the plain binary search it replaced, same run.
 */
static double find_ns(const struct sp__symtab *tab, bool indexed)
{
	uint64_t t[RUNS], t0;
	uintptr_t sink = 0;
	size_t i;
	int r;

	for (r = 0; r < RUNS; r++) {
		t0 = cpu_ns();
		for (i = 0; i < ADDRS; i++)
			sink += (uintptr_t)(indexed ? sp__symtab_find(
							      tab, addrs[i]) :
						      sp__symtab_find_bsearch(
							      tab, addrs[i]));
		t[r] = cpu_ns() - t0;
	}
	if (sink == 1)
		puts("");
	qsort(t, RUNS, sizeof(t[0]), cmp_u64);
	return (double)t[RUNS / 2] / ADDRS;
}

static double addr2line_ms(const char *path)
{
	char tmp[] = "/tmp/bench_native_XXXXXX", cmd[1024];
	uint64_t t0;
	size_t i;
	FILE *f;
	int fd = mkstemp(tmp), rc;

	if (fd < 0 || !(f = fdopen(fd, "w")))
		return -1;
	for (i = 0; i < ADDRS; i++)
		fprintf(f, "0x%" PRIx64 "\n", addrs[i]);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "eu-addr2line -i -f -e '%s' < %s > /dev/null 2>&1", path, tmp);
	t0 = wall_ns();
	rc = system(cmd);
	t0 = wall_ns() - t0;
	unlink(tmp);
	return rc == 0 ? (double)t0 / 1e6 : -1;
}

static double build_ms(struct sp__image *img)
{
	double best = 1e30;
	int i;

	for (i = 0; i < BUILDS; i++) {
		struct sp__native *native;
		uint64_t t0 = wall_ns();

		if (sp__native_new(&mem, img, NULL, NULL, &native) < 0)
			return -1;
		t0 = wall_ns() - t0;
		best = (double)t0 / 1e6 < best ? (double)t0 / 1e6 : best;
		sp__native_free(native);
	}
	return best;
}

static void bench_object(const char *name, const char *path)
{
	struct sp_resolved_frame f[OUT_MAX];
	struct sp__native *native;
	double ms, cold_first, cold_rest, eu, sym_ns, full_ns, newms;
	double idx_ns, bs_ns;
	size_t nsyms, dwarf_bytes, n, frames, i;
	struct sp__image *img;
	char dbg[600];
	uint64_t t0;

	if (sp__image_open_path(&mem, path, &img) < 0)
		return;
	debug_file(img, dbg, sizeof(dbg));
	n = func_ranges(path, 0);
	n = dbg[0] ? func_ranges(dbg, n) : n;
	if (n == 0)
		goto out;
	pick(n);
	ms = build_ms(img);

	t0 = wall_ns();
	if (sp__native_new(&mem, img, NULL, NULL, &native) < 0)
		goto out;
	newms = (double)(wall_ns() - t0) / 1e6;
	t0 = wall_ns();
	sp__native_lookup(native, addrs[0], 0, f, OUT_MAX);
	cold_first = (double)(wall_ns() - t0) / 1e6;
	t0 = wall_ns();
	for (i = 1; i < ADDRS; i++)
		sp__native_lookup(native, addrs[i], 0, f, OUT_MAX);
	cold_rest = (double)(wall_ns() - t0) / 1e6;

	sym_ns = warm_ns(native, SP_NATIVE_NO_LINES, &frames);
	idx_ns = find_ns(sp__native_symtab(native), true);
	bs_ns = find_ns(sp__native_symtab(native), false);
	full_ns = warm_ns(native, 0, &frames);
	sp__native_stats(native, &nsyms, &dwarf_bytes);
	eu = addr2line_ms(path);
	printf("{\"bench\":\"native_build\",\"object\":\"%s\",\"path\":\"%s\","
	       "\"build_ms\":%.3f,\"symbols\":%zu,\"debug_file\":%s}\n",
	       name, path, ms, nsyms,
	       dbg[0] && access(dbg, R_OK) == 0 ? "true" : "false");
	printf("{\"bench\":\"native_cold\",\"object\":\"%s\",\"addrs\":%d,"
	       "\"new_ms\":%.3f,\"first_lookup_ms\":%.3f,"
	       "\"rest_of_first_pass_ms\":%.3f,\"dwarf_table_bytes\":%zu}\n",
	       name, ADDRS, newms, cold_first, cold_rest, dwarf_bytes);
	printf("{\"bench\":\"native_warm\",\"object\":\"%s\",\"addrs\":%d,"
	       "\"symbol_only_ns\":%.1f,\"lines_inline_ns\":%.1f,"
	       "\"frames_per_addr\":%.2f}\n",
	       name, ADDRS, sym_ns, full_ns, (double)frames / ADDRS);
	printf("{\"bench\":\"native_symtab_find\",\"object\":\"%s\","
	       "\"symbols\":%zu,\"two_level_index_ns\":%.1f,"
	       "\"binary_search_ns\":%.1f}\n",
	       name, nsyms, idx_ns, bs_ns);
	printf("{\"bench\":\"native_vs_addr2line\",\"object\":\"%s\","
	       "\"addrs\":%d,\"eu_addr2line_ms\":%.1f,\"ours_cold_ms\":%.1f,"
	       "\"ours_warm_ms\":%.3f,\"ratio_cold\":%.1f,\"ratio_warm\":%.0f}\n",
	       name, ADDRS, eu, newms + cold_first + cold_rest,
	       full_ns * ADDRS / 1e6, eu / (newms + cold_first + cold_rest),
	       eu / (full_ns * ADDRS / 1e6));
	fflush(stdout);
	sp__native_free(native);
out:
	sp__image_unref(img);
}

int main(void)
{
	glob_t g;

	unsetenv("DEBUGINFOD_URLS");
	elf_version(EV_CURRENT);
	sp__mem_init(&mem, NULL);
	bench_object("libc", "/lib/x86_64-linux-gnu/libc.so.6");
	if (glob("/root/.pyenv/versions/3.12*/bin/python3.12", 0, NULL, &g) ==
	    0) {
		bench_object("python3.12", g.gl_pathv[0]);
		globfree(&g);
	}
	/* pyenv's python3.12 is a launcher; the interpreter is libpython. */
	if (glob("/root/.pyenv/versions/3.12*/lib/libpython3.12.so.1.0", 0,
		 NULL, &g) == 0) {
		bench_object("libpython3.12", g.gl_pathv[0]);
		globfree(&g);
	}
	return 0;
}
