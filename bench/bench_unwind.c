/* SPDX-License-Identifier: MIT */
/* bench_unwind: CFI table builds, warm unwind ns/frame vs libdw per frame. */
#define _GNU_SOURCE
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse/unwind.h>

#include "bench_unwind.h"
#include "cfi_oracle.h"
#include "image.h"
#include "unwind_internal.h"
#include "unwind_jit.h"

/*
 * Three measurements, JSON lines:
 *  - "table": build time and bytes of the compact CFI table of libc,
 *    libstdc++, python and cc1 (best of 5 builds), and in the same run the
 *    time of the libdw-based builder it replaced (tests/unwind/
 *    cfi_oracle.c) and the ratio ("--tables": only these lines);
 *  - "unwind": a corpus of real samples of this process (bench_unwind.h:
 *    a timer interrupts a varied workload, so samples land on thousands of
 *    distinct pcs in this program, libc and libm), unwound with
 *    sp_unwinder_unwind once its tables are built, and in the same run
 *    with libdw's dwarf_cfi_addrframe on every frame (CFA = reg + off, RA
 *    and RBP from the rules, the approach the compact tables replace);
 *  - three orders: "varied" unwinds every sample once, in capture order,
 *    so consecutive lookups hit different pcs and every stack copy comes
 *    from memory; "same_sample_x8" unwinds each sample 8 times in a row:
 *    stack bytes hot and libdw's FDE cache hitting the same pcs, libdw's
 *    best case; "stacks_in_cache" is "varied" with each sample's copy
 *    read (untimed) shortly before it is unwound, as a recorder finds it
 *    in the perf ring buffer (pass_window);
 *  - after those runs, "stack_touch_ns_per_frame": the time to merely
 *    read every cache line of the copies (pass_touch), the memory floor
 *    under the first two orders. The corpus holds 40-65 MB of copies
 *    (4000 of 10-16 KB), so that floor is most of "varied"'s time.
 * "stacks_in_cache" is close to the recorder's case: it unwinds each
 * sample in place in the perf ring soon after the kernel wrote it (a
 * wakeup every eighth of a ring); bench/unwind_in_recorder.py measures
 * the unwinder inside `spulse record`, where on short stacks the first
 * reads of lines written on another CPU add to it. "varied" is the worst
 * case, every copy cold in memory, as an embedder that stores copies and
 * unwinds them much later would see.
 * --memo instead measures the walk memo (unwind_jit.h) on the corpus in
 * capture order, stacks in cache (pass_window): "memo" lines give ns per
 * sample without a memo, with one where every sample is its own thread
 * (tid_per_sample: nothing repeats, the memo only records: its overhead)
 * and with one where they are all one thread (same_tid: outer frames
 * repeat from sample to sample), median of RUNS runs, the three
 * alternating, ratios within each run.
 * Each figure is the median of RUNS runs, ours and libdw alternating, with
 * the ratio taken within each run. Times are thread CPU time.
 * Targets (reported, never enforced): <= 30 ns/frame warm, >= 5x faster
 * than libdw per frame, libc table <= 40 ms, <= 16 bytes per row.
 */

#define NSAMPLES 4000
#define INTERVAL_US 47
#define RUNS 7
#define CAP 1024
#define MAX_MAPS 256

static struct bench_corpus corpus;
static struct sp_mapping maps[MAX_MAPS];
static char paths[MAX_MAPS][256];
static size_t nmaps;
static volatile uint64_t touch_sink;

/*
 * Thread CPU time: the bench machines are shared (2 vCPUs, other jobs), and
 * wall time would count the time this thread waited for a CPU.
 */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void load_maps(void)
{
	char line[1024], perms[8], path[200];
	FILE *f = fopen("/proc/self/maps", "r");
	uint64_t s, e, off, ino;
	unsigned maj, min;

	nmaps = 0;
	while (f && fgets(line, sizeof(line), f) && nmaps < MAX_MAPS) {
		path[0] = 0;
		if (sscanf(line,
			   "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64
			   " %x:%x %" SCNu64 " %199[^\n]",
			   &s, &e, perms, &off, &maj, &min, &ino, path) < 7)
			continue;
		if (perms[2] != 'x' || strstr(path, "[vsyscall]"))
			continue;
		snprintf(paths[nmaps], sizeof(paths[0]), "%s", path);
		maps[nmaps] = (struct sp_mapping){
			.start = s,
			.end = e,
			.file_offset = off,
			.inode = ino,
			.dev_major = maj,
			.dev_minor = min,
			.path = paths[nmaps],
			.module_id = (uint32_t)nmaps,
			.flags = strstr(path, "[vdso]") ? SP_MAPPING_VDSO : 0
		};
		nmaps++;
	}
	if (f)
		fclose(f);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* ---- tables ------------------------------------------------------------ */

typedef int (*build_fn)(const struct sp__mem *mem, Elf *elf,
			struct sp__cfi_table **out);

/* One build of @img's table by @fn: thread CPU ms, or -1. */
static double build_once(build_fn fn, struct sp__image *img, size_t *rows,
			 size_t *bytes)
{
	struct sp__cfi_table *t;
	struct sp__mem mem;
	uint64_t t0;
	double ms;
	int err;

	sp__mem_init(&mem, NULL);
	sp__image_lock(img);
	t0 = now_ns();
	err = fn(&mem, sp__image_elf(img), &t);
	ms = (double)(now_ns() - t0) / 1e6;
	sp__image_unlock(img);
	if (err)
		return -1;
	*rows = t->nrows;
	*bytes = t->bytes;
	sp__cfi_table_free(t);
	return ms;
}

/*
 * The table of @path built by sp__cfi_table_build and by the libdw-based
 * builder it replaced (tests/unwind/cfi_oracle.c), alternating, best of
 * 5 each; the ratio is old / new of the same run.
 */
static void bench_table(const char *name, const char *path)
{
	double best = 1e30, best_old = 1e30, ms;
	size_t rows = 0, bytes = 0, orows = 0, obytes = 0;
	struct sp__image *img;
	struct sp__mem mem;
	int rep;

	sp__mem_init(&mem, NULL);
	if (access(path, R_OK) != 0 || sp__image_open_path(&mem, path, &img))
		return;
	for (rep = 0; rep < 5; rep++) {
		ms = build_once(cfi_oracle_build, img, &orows, &obytes);
		if (ms >= 0 && ms < best_old)
			best_old = ms;
		ms = build_once(sp__cfi_table_build, img, &rows, &bytes);
		if (ms < 0)
			break;
		if (ms < best)
			best = ms;
	}
	sp__image_unref(img);
	if (rows)
		printf("{\"bench\":\"table\",\"object\":\"%s\",\"path\":\"%s\","
		       "\"rows\":%zu,\"bytes\":%zu,\"bytes_per_row\":%.1f,"
		       "\"build_ms\":%.2f,\"libdw_build_ms\":%.2f,"
		       "\"speedup\":%.1f,\"same_size\":%s,\"target_ms\":%s}\n",
		       name, path, rows, bytes, (double)bytes / (double)rows,
		       best, best_old, best_old / best,
		       rows == orows && bytes == obytes ? "true" : "false",
		       strcmp(name, "libc") ? "null" : "40");
}

/* ---- our unwinder -------------------------------------------------------- */

struct timing {
	uint64_t ns;
	uint64_t frames;
};

/* The memo of --memo's runs, and how its samples name threads. */
static struct sp__walk_memo *bench_memo;
static int memo_tids; /* 0: one thread; 1: a thread per sample */

/* Unwinds sample @s once; returns the frames stored. */
static uint64_t unwind_ours(struct sp_unwinder *u, const struct bench_sample *s)
{
	static struct sp_frame frames[CAP];
	int32_t tid = memo_tids ? (int32_t)(s - corpus.s) + 1 : 1;
	int n = sp__unwinder_unwind_jit(u, &s->regs, s->stack, s->len, s->addr,
					maps, nmaps, NULL, 0, bench_memo, tid,
					bench_memo ? 1 : 0, frames, CAP, NULL);

	return n > 0 ? (uint64_t)n : 0;
}

/* Distinct frame pcs of the corpus, and how many stacks were complete. */
static void describe_corpus(struct sp_unwinder *u)
{
	static struct sp_frame frames[CAP];
	struct sp_unwind_stats st = { 0 };
	uint64_t *pcs = NULL, fallbacks = 0;
	size_t i, npcs = 0, distinct = 0, leaves = 0;
	int k, n;

	for (i = 0; i < corpus.n; i++) {
		const struct bench_sample *s = &corpus.s[i];

		n = sp_unwinder_unwind(u, &s->regs, s->stack, s->len, s->addr,
				       maps, nmaps, frames, CAP, &st);
		pcs = realloc(pcs, (npcs + (size_t)n + 1) * sizeof(*pcs));
		if (!pcs)
			return;
		for (k = 0; k < n; k++)
			pcs[npcs++] = frames[k].abs_ip;
	}
	qsort(pcs, npcs, sizeof(*pcs), cmp_u64);
	for (i = 0; i < npcs; i++)
		distinct += i == 0 || pcs[i] != pcs[i - 1];
	for (i = 0; i < corpus.n; i++)
		pcs[i] = corpus.s[i].regs.r[SP_X86_64_RIP];
	qsort(pcs, corpus.n, sizeof(*pcs), cmp_u64);
	for (i = 0; i < corpus.n; i++)
		leaves += i == 0 || pcs[i] != pcs[i - 1];
	for (i = 0; i < SP_FALLBACK_COUNT; i++)
		fallbacks += st.fallbacks[i];
	printf("{\"bench\":\"corpus\",\"samples\":%zu,\"timer_ticks\":%" PRIu64
	       ",\"stack_bytes_avg\":%zu,\"frames\":%" PRIu64
	       ",\"distinct_frame_pcs\":%zu,\"distinct_leaf_pcs\":%zu,"
	       "\"truncated_stacks\":%" PRIu64 ",\"fp_fallback_steps\":%" PRIu64
	       "}\n",
	       corpus.n, corpus.ticks, corpus.used / (corpus.n ? corpus.n : 1),
	       st.frames, distinct, leaves, st.truncated, fallbacks);
	free(pcs);
}

/* ---- libdw per frame ----------------------------------------------------- */

struct dw_module {
	Elf *elf;
	Dwarf_CFI *cfi;
	uint64_t bias;
	int fd;
};

static struct dw_module dwmods[MAX_MAPS];

/* The vDSO from this process's memory, as the unwinder's image layer. */
static void dw_open_vdso(struct dw_module *d, const struct sp_mapping *m)
{
	uint64_t base = getauxval(AT_SYSINFO_EHDR);

	if (!base || base != m->start)
		return;
	d->elf = elf_memory((char *)(uintptr_t)base, m->end - m->start);
	d->cfi = d->elf ? dwarf_getcfi_elf(d->elf) : NULL;
	d->bias = base; /* its first PT_LOAD has vaddr 0 */
}

static void dw_open(void)
{
	struct sp__mem mem;
	size_t i;

	sp__mem_init(&mem, NULL);
	elf_version(EV_CURRENT);
	for (i = 0; i < nmaps; i++) {
		struct sp__image *img;
		int err;

		dwmods[i].fd = -1;
		if (maps[i].flags & SP_MAPPING_VDSO) {
			dw_open_vdso(&dwmods[i], &maps[i]);
			continue;
		}
		if (sp__image_open_path(&mem, paths[i], &img))
			continue;
		err = sp__image_bias(img, maps[i].start, maps[i].end,
				     maps[i].file_offset, 4096,
				     &dwmods[i].bias);
		sp__image_unref(img);
		if (err)
			continue;
		dwmods[i].fd = open(paths[i], O_RDONLY);
		dwmods[i].elf = elf_begin(dwmods[i].fd, ELF_C_READ_MMAP, NULL);
		dwmods[i].cfi =
			dwmods[i].elf ? dwarf_getcfi_elf(dwmods[i].elf) : NULL;
	}
}

static void dw_close(void)
{
	size_t i;

	for (i = 0; i < nmaps; i++) {
		if (dwmods[i].cfi)
			dwarf_cfi_end(dwmods[i].cfi);
		if (dwmods[i].elf)
			elf_end(dwmods[i].elf);
		if (dwmods[i].fd >= 0)
			close(dwmods[i].fd);
	}
}

/* The mapping of @pc by binary search, as our unwinder does. */
static int dw_find(uint64_t pc)
{
	size_t lo = 0, hi = nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (maps[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || pc >= maps[lo - 1].end || !dwmods[lo - 1].cfi)
		return -1;
	return (int)lo - 1;
}

static int dw_read(const struct bench_sample *s, uint64_t addr, uint64_t *v)
{
	if (addr < s->addr || addr - s->addr + 8 > s->len)
		return -1;
	memcpy(v, s->stack + (addr - s->addr), 8);
	return 0;
}

/* Location rule "at CFA + off": 0 and the offset, else -1. */
static int dw_rule(Dwarf_Frame *fr, int reg, int64_t *off)
{
	Dwarf_Op mem[3], *ops;
	size_t nops;

	if (dwarf_frame_register(fr, reg, mem, &ops, &nops) || nops == 0 ||
	    ops[0].atom != DW_OP_call_frame_cfa)
		return -1;
	*off = nops > 1 ? (int64_t)ops[1].number : 0;
	return 0;
}

/* One libdw step; returns 1 when a caller was found. */
static int dw_step(const struct bench_sample *s, uint64_t *r, uint64_t key)
{
	int m = dw_find(key);
	Dwarf_Frame *fr = NULL;
	Dwarf_Op *ops;
	size_t nops;
	int64_t off;
	uint64_t cfa;
	int ok = 0;

	if (m < 0 ||
	    dwarf_cfi_addrframe(dwmods[m].cfi, key - dwmods[m].bias, &fr))
		return 0;
	if (dwarf_frame_cfa(fr, &ops, &nops) || nops != 1 ||
	    ops[0].atom != DW_OP_bregx || ops[0].number > 16)
		goto out;
	cfa = r[ops[0].number] + ops[0].number2;
	if (dw_rule(fr, 16, &off) || dw_read(s, cfa + (uint64_t)off, &r[16]))
		goto out;
	if (dw_rule(fr, 6, &off) == 0 && dw_read(s, cfa + (uint64_t)off, &r[6]))
		goto out;
	ok = r[16] != 0 && cfa > r[7]; /* the stack pointer must advance */
	r[7] = cfa;
out:
	free(fr);
	return ok;
}

/* Unwinds sample @s once with libdw; returns the frames found. */
static uint64_t unwind_libdw(const struct bench_sample *s)
{
	uint64_t r[17], depth = 1;

	memcpy(r, s->regs.r, sizeof(r));
	if (dw_step(s, r, r[16]))
		for (depth++; depth < CAP && dw_step(s, r, r[16] - 1); depth++)
			;
	return depth;
}

/* ---- passes -------------------------------------------------------------- */

/* Unwinds samples [i, j), each @inner times: with @u, else with libdw. */
static uint64_t unwind_range(struct sp_unwinder *u, size_t i, size_t j,
			     int inner)
{
	uint64_t frames = 0;
	int k;

	for (; i < j; i++)
		for (k = 0; k < inner; k++)
			frames += u ? unwind_ours(u, &corpus.s[i]) :
				      unwind_libdw(&corpus.s[i]);
	return frames;
}

/* Reads one word of every cache line of the copies of samples [i, j). */
static uint64_t touch_range(size_t i, size_t j, int inner)
{
	uint64_t sum = 0, v;
	size_t off;
	int k;

	for (; i < j; i++)
		for (k = 0; k < inner; k++)
			for (off = 0; off + 8 <= corpus.s[i].len; off += 64) {
				memcpy(&v, corpus.s[i].stack + off, 8);
				sum += v;
			}
	return sum;
}

/*
 * "stacks_in_cache": the corpus in capture order, in windows of samples
 * holding at most WINDOW_BYTES of stack copies. Each window's copies are
 * read once, untimed, and then the window is unwound, timed (two clock
 * reads per window of ~50 samples). That is what a recorder meets when it
 * drains the perf ring buffer soon after the kernel copied the samples
 * into it: the bytes are in cache, where "varied" fetches every sample's
 * copy from memory (the corpus holds 40-65 MB of them).
 */
#define WINDOW_BYTES (512u * 1024)

static struct timing pass_window(struct sp_unwinder *u)
{
	struct timing t = { 0, 0 };
	size_t i, j, bytes;
	uint64_t t0;

	for (i = 0; i < corpus.n; i = j) {
		for (j = i, bytes = 0;
		     j < corpus.n &&
		     (j == i || bytes + corpus.s[j].len <= WINDOW_BYTES);
		     j++)
			bytes += corpus.s[j].len;
		touch_sink = touch_range(i, j, 1);
		t0 = now_ns();
		t.frames += unwind_range(u, i, j, 1);
		t.ns += now_ns() - t0;
	}
	return t;
}

/*
 * One pass over the corpus, each sample unwound @inner times in a row
 * (0: windowed, see pass_window), by @u or else by libdw.
 */
static struct timing pass(struct sp_unwinder *u, int inner)
{
	struct timing t;
	uint64_t t0;

	if (inner == 0)
		return pass_window(u);
	t0 = now_ns();
	t.frames = unwind_range(u, 0, corpus.n, inner);
	t.ns = now_ns() - t0;
	return t;
}

/* ---- memory floor ------------------------------------------------------- */

/*
 * Reads one word of every cache line of every sample's copy, @inner times
 * per sample: no unwinding, just the loads, all independent so that the
 * core overlaps as many misses as it can. An unwind reads a subset of
 * those lines, but each read waits for the one before it; this pass is
 * what bringing the corpus's stack bytes in from memory costs at best.
 */
static struct timing pass_touch(int inner)
{
	struct timing t = { 0, 0 };
	uint64_t t0 = now_ns();

	touch_sink = touch_range(0, corpus.n, inner);
	t.ns = now_ns() - t0;
	return t;
}

/* ---- report -------------------------------------------------------------- */

static void report(struct sp_unwinder *u, const char *mode, int inner)
{
	double ours[RUNS], dw[RUNS], ratio[RUNS], ours_s[RUNS], dw_s[RUNS];
	double touch[RUNS], n = (double)corpus.n * (inner ? inner : 1);
	double fours = 0, fdw = 0;
	struct timing a, b, c;
	int run;

	for (run = 0; run < RUNS; run++) {
		a = pass(u, inner);
		b = pass(NULL, inner);
		if (!a.frames || !b.frames)
			return;
		ours[run] = (double)a.ns / (double)a.frames;
		dw[run] = (double)b.ns / (double)b.frames;
		ratio[run] = dw[run] / ours[run];
		ours_s[run] = (double)a.ns / n;
		dw_s[run] = (double)b.ns / n;
		fours = (double)a.frames / n;
		fdw = (double)b.frames / n;
	}
	/* Apart from the runs above, whose caches it would flush. In cache
	 * it would only measure the cache: -1. */
	for (run = 0; run < RUNS; run++) {
		c = pass_touch(inner ? inner : 1);
		touch[run] = inner ? (double)c.ns / (fours * n) : -1;
	}
	printf("{\"bench\":\"unwind\",\"mode\":\"%s\",\"samples\":%zu,"
	       "\"runs\":%d,\"frames_per_sample\":%.1f,\"ns_per_frame\":%.1f,"
	       "\"ns_per_sample\":%.0f,\"libdw_ns_per_frame\":%.1f,"
	       "\"libdw_ns_per_sample\":%.0f,\"libdw_frames_per_sample\":%.1f,"
	       "\"speedup\":%.1f,\"stack_touch_ns_per_frame\":%.1f,"
	       "\"target_ns_per_frame\":30,\"target_speedup\":5}\n",
	       mode, corpus.n, RUNS, fours, median(ours, RUNS),
	       median(ours_s, RUNS), median(dw, RUNS), median(dw_s, RUNS), fdw,
	       median(ratio, RUNS), median(touch, RUNS));
}

/* --memo: the walk memo against none, stacks in cache (see the top). */
static void report_memo(struct sp_unwinder *u)
{
	double none[RUNS], own[RUNS], same[RUNS], r_own[RUNS], r_same[RUNS];
	struct sp__mem mem;
	struct timing a, b, c;
	uint64_t hits, misses, reused;
	int run;

	sp__mem_init(&mem, NULL);
	if (sp__walk_memo_new(&mem, &bench_memo))
		return;
	for (run = 0; run < RUNS; run++) {
		struct sp__walk_memo *m = bench_memo;

		bench_memo = NULL;
		a = pass(u, 0);
		bench_memo = m;
		memo_tids = 1;
		b = pass(u, 0);
		memo_tids = 0;
		c = pass(u, 0);
		none[run] = (double)a.ns / (double)corpus.n;
		own[run] = (double)b.ns / (double)corpus.n;
		same[run] = (double)c.ns / (double)corpus.n;
		r_own[run] = own[run] / none[run];
		r_same[run] = same[run] / none[run];
		if (a.frames != b.frames || a.frames != c.frames)
			fprintf(stderr, "bench_unwind: memo frames differ\n");
	}
	sp__walk_memo_counters(bench_memo, &hits, &misses, &reused);
	printf("{\"bench\":\"memo\",\"samples\":%zu,\"runs\":%d,"
	       "\"frames_per_sample\":%.1f,\"ns_per_sample_no_memo\":%.0f,"
	       "\"ns_per_sample_tid_per_sample\":%.0f,"
	       "\"ns_per_sample_same_tid\":%.0f,"
	       "\"ratio_tid_per_sample\":%.3f,\"ratio_same_tid\":%.3f,"
	       "\"hits\":%" PRIu64 ",\"misses\":%" PRIu64
	       ",\"frames_reused\":%" PRIu64 "}\n",
	       corpus.n, RUNS, (double)a.frames / (double)corpus.n,
	       median(none, RUNS), median(own, RUNS), median(same, RUNS),
	       median(r_own, RUNS), median(r_same, RUNS), hits, misses, reused);
	sp__walk_memo_free(bench_memo);
	bench_memo = NULL;
}

/* --profile MODE [PASSES]: only our unwinder, for perf record. */
static void profile(struct sp_unwinder *u, const char *mode, int passes)
{
	int inner = strcmp(mode, "varied") == 0	  ? 1 :
		    strcmp(mode, "in_cache") == 0 ? 0 :
						    8,
	    i;

	for (i = 0; i < passes; i++)
		pass(u, inner);
}

int main(int argc, char **argv)
{
	const char *prof = argc > 2 && !strcmp(argv[1], "--profile") ? argv[2] :
								       NULL;
	bool memo = argc > 1 && !strcmp(argv[1], "--memo");
	struct sp_unwinder *u;
	int err;

	if (prof || memo)
		goto capture;
	if (argc > 2 && (!strcmp(argv[1], "--table-only") ||
			 !strcmp(argv[1], "--table-only-libdw"))) {
		/* One build of argv[2], for callgrind --toggle-collect. */
		struct sp__image *img;
		struct sp__mem mem;
		size_t rows, bytes;

		sp__mem_init(&mem, NULL);
		if (sp__image_open_path(&mem, argv[2], &img))
			return 1;
		build_once(argv[1][12] ? cfi_oracle_build : sp__cfi_table_build,
			   img, &rows, &bytes);
		sp__image_unref(img);
		return 0;
	}
	bench_table("libc", "/lib/x86_64-linux-gnu/libc.so.6");
	bench_table("libstdc++", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6");
	bench_table("libpython3.12",
		    "/root/.pyenv/versions/3.12.1/lib/libpython3.12.so.1.0");
	bench_table("python3.11", "/usr/bin/python3.11");
	bench_table("cc1", "/usr/lib/gcc/x86_64-linux-gnu/12/cc1");
	if (argc > 1 && !strcmp(argv[1], "--tables"))
		return 0;
capture:
	err = bench_corpus_capture(&corpus, NSAMPLES, INTERVAL_US);
	if (err || corpus.n == 0) {
		fprintf(stderr, "bench_unwind: no samples (%d)\n", err);
		return 1;
	}
	load_maps();
	if (sp_unwinder_new(NULL, &u))
		return 1;
	describe_corpus(u); /* also builds every table: not measured */
	if (prof) {
		profile(u, prof, argc > 3 ? atoi(argv[3]) : 25);
		goto out;
	}
	if (memo) {
		report_memo(u);
		goto out;
	}
	dw_open();
	pass(NULL, 1); /* fills libdw's FDE caches: not measured */
	report(u, "varied", 1);
	report(u, "same_sample_x8", 8);
	report(u, "stacks_in_cache", 0);
	dw_close();
out:
	sp_unwinder_free(u);
	bench_corpus_free(&corpus);
	return 0;
}
