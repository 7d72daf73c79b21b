/* SPDX-License-Identifier: MIT */
/* bench_unwind: captures real samples of a varied workload with a timer. */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <math.h>
#include <regex.h>
#include <search.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <ucontext.h>
#include <wchar.h>

#include "bench_unwind.h"

/*
 * The workload mixes what a profiler meets in a real process, so the
 * unwinder (and the libdw baseline) see thousands of distinct pcs:
 *
 *   run_one -> rec_plain / rec_saves / rec_alloca, 1..160 frames deep,
 *              three frame shapes (CFA = RSP + n; RBX, R12-R15 saved;
 *              CFA = RBP + 16 after alloca)
 *           -> one of ~16 libc / libm jobs: printf family, strtod, qsort
 *              (whose comparator may recurse again), bsearch, tsearch,
 *              regexec, sscanf, string and memory routines, malloc,
 *              libm, strftime, wide characters, fnmatch
 *
 * A CLOCK_MONOTONIC timer (hrtimer, microsecond resolution, unlike the
 * tick-based CPU-time timers) sends SIGPROF; the handler copies the
 * interrupted registers from the ucontext and the live stack bytes above
 * the interrupted RSP into a preallocated arena.
 */

static struct bench_corpus *capturing;
static volatile uint64_t sink;

/* ---- the signal handler ------------------------------------------------ */

/* The ucontext's GPRs in DWARF order (struct sp_regs). */
static const int dwarf_to_greg[SP_X86_64_NREGS] = {
	REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI,
	REG_RBP, REG_RSP, REG_R8,  REG_R9,  REG_R10, REG_R11,
	REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP
};

static void on_tick(int sig, siginfo_t *si, void *ctx)
{
	const greg_t *g = ((const ucontext_t *)ctx)->uc_mcontext.gregs;
	struct bench_corpus *c = capturing;
	struct bench_sample *s;
	uint64_t rsp = (uint64_t)g[REG_RSP];
	size_t i, len;

	(void)sig;
	(void)si;
	if (!c || c->n == c->cap)
		return;
	c->ticks++;
	if (rsp < c->stack_lo || rsp >= c->stack_top)
		return;
	len = (size_t)(c->stack_top - rsp);
	if (len > BENCH_STACK_MAX)
		len = BENCH_STACK_MAX;
	if (len > c->arena_size - c->used)
		return;
	s = &c->s[c->n];
	for (i = 0; i < SP_X86_64_NREGS; i++)
		s->regs.r[i] = (uint64_t)g[dwarf_to_greg[i]];
	s->regs.valid = (1u << SP_X86_64_NREGS) - 1;
	s->regs.abi = SP_REGS_ABI_64;
	memcpy(c->arena + c->used, (const void *)(uintptr_t)rsp, len);
	s->stack = c->arena + c->used;
	s->len = len;
	s->addr = rsp;
	c->used += (len + 63) & ~(size_t)63;
	c->n++;
}

/* ---- libc and libm jobs ---------------------------------------------------- */

static uint32_t rng(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static int rec_plain(int depth, uint32_t r);

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A comparator that sometimes recurses: libc frames in mid-stack. */
static int cmp_deep(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	static int nested;

	if (!nested && ((unsigned)x * 2654435761u >> 28) == 3) {
		nested = 1;
		sink += (uint64_t)rec_plain(3 + (x & 7), (uint32_t)x | 1);
		nested = 0;
	}
	return (x > y) - (x < y);
}

__attribute__((noinline)) static void job_printf(uint32_t r)
{
	char buf[256];
	int i;

	for (i = 0; i < 20; i++)
		sink += (uint64_t)snprintf(buf, sizeof(buf),
					   "%d %s %08x %.3f %g %-12s|%ld", i,
					   "frame", r + (unsigned)i,
					   (double)r / 7.0, (double)i * 1e-3,
					   "x", (long)r * i);
}

__attribute__((noinline)) static void job_strtod(uint32_t r)
{
	char buf[64], *end;
	int i;

	for (i = 0; i < 30; i++) {
		snprintf(buf, sizeof(buf), "%u.%ue-%u", r % 1000, (unsigned)i,
			 r % 30);
		sink += (uint64_t)(strtod(buf, &end) * 1e6);
		sink += (uint64_t)strtol(buf, &end, 10);
	}
}

__attribute__((noinline)) static void job_qsort(uint32_t r, int deep)
{
	int v[96];
	size_t i;

	for (i = 0; i < 96; i++)
		v[i] = (int)(rng(&r) & 0xffff);
	qsort(v, 96, sizeof(int), deep ? cmp_deep : cmp_int);
	sink += (uint64_t)v[r % 96];
}

__attribute__((noinline)) static void job_strings(uint32_t r)
{
	static const char *words[] = { "delta",	 "alpha",   "kilo",    "echo",
				       "bravo",	 "golf",    "india",   "hotel",
				       "juliet", "foxtrot", "charlie", "lima" };
	const char *w[12], *key = "golf";
	size_t i;

	for (i = 0; i < 12; i++)
		w[i] = words[(i + r) % 12];
	qsort(w, 12, sizeof(w[0]), cmp_str);
	sink += bsearch(&key, w, 12, sizeof(w[0]), cmp_str) != NULL;
}

__attribute__((noinline)) static void job_memory(uint32_t r)
{
	static char a[8192], b[8192];
	size_t n = 64 + r % 8000;

	memset(a, 'a' + (int)(r % 26), n);
	a[n - 1] = 0;
	memcpy(b, a, n);
	memmove(b + 1, b, n - 1);
	sink += strlen(a) + (uint64_t)memcmp(a, b, n);
	sink += strchr(a, 'z') != NULL;
	sink += strstr(a, "aab") != NULL;
}

__attribute__((noinline)) static void job_malloc(uint32_t r)
{
	void *p[32];
	size_t i;

	for (i = 0; i < 32; i++)
		p[i] = malloc(16 + (rng(&r) % 4000));
	for (i = 0; i < 32; i += 3)
		p[i] = realloc(p[i], 8000 + i);
	for (i = 0; i < 32; i++)
		free(p[i]);
}

__attribute__((noinline)) static void job_math(uint32_t r)
{
	double x = (double)(r % 1000) / 100.0, acc = 0;
	int i;

	for (i = 0; i < 40; i++) {
		acc += sin(x + i) * cos(x) + exp(-x) + log1p(x + i);
		acc += pow(x, 1.5) + atan2(x, i + 1.0) + cbrt(x + i);
	}
	sink += (uint64_t)acc;
}

__attribute__((noinline)) static void job_regex(uint32_t r)
{
	static regex_t re;
	static int ready;
	regmatch_t m[3];
	char buf[64];

	if (!ready) {
		if (regcomp(&re, "([a-z]+)-([0-9]+)", REG_EXTENDED))
			return;
		ready = 1;
	}
	snprintf(buf, sizeof(buf), "frame-%u and name-%u", r, r / 3);
	sink += regexec(&re, buf, 3, m, 0) == 0 ? (uint64_t)m[2].rm_eo : 0;
}

__attribute__((noinline)) static void job_tree(uint32_t r)
{
	static void *root;
	static int keys[512];
	int i;

	for (i = 0; i < 16; i++) {
		int *k = &keys[rng(&r) % 512];

		*k = (int)(k - keys);
		if (tsearch(k, &root, cmp_int) == NULL)
			return;
	}
	for (i = 0; i < 8; i++) {
		int k = (int)(rng(&r) % 512);

		sink += tfind(&k, &root, cmp_int) != NULL;
		tdelete(&k, &root, cmp_int);
	}
}

__attribute__((noinline)) static void job_scan_time(uint32_t r)
{
	char buf[128];
	struct tm tm;
	time_t t = (time_t)r * 1000;
	int a = 0, b = 0;
	char word[32];

	gmtime_r(&t, &tm);
	sink += strftime(buf, sizeof(buf), "%Y-%m-%d %H:%M:%S %a %b %j", &tm);
	sink += (uint64_t)sscanf(buf, "%d-%d %31s", &a, &b, word);
	sink += (uint64_t)(a + b);
}

__attribute__((noinline)) static void job_wide(uint32_t r)
{
	wchar_t w[64];
	char buf[64];

	snprintf(buf, sizeof(buf), "wide %u characters", r);
	sink += mbstowcs(w, buf, 64);
	sink += wcslen(w) + (uint64_t)swprintf(w, 64, L"%u-%ls", r, L"x");
	sink += fnmatch("*-[0-9]*", buf, 0) == 0;
	sink += fnmatch("wide*ch?racters", buf, FNM_CASEFOLD) == 0;
}

static void run_job(uint32_t r)
{
	switch (r % 13) {
	case 0:
		job_printf(r);
		break;
	case 1:
		job_strtod(r);
		break;
	case 2:
	case 3:
		job_qsort(r, (int)(r % 13 == 3));
		break;
	case 4:
		job_strings(r);
		break;
	case 5:
		job_memory(r);
		break;
	case 6:
		job_malloc(r);
		break;
	case 7:
		job_math(r);
		break;
	case 8:
		job_regex(r);
		break;
	case 9:
		job_tree(r);
		break;
	case 10:
		job_scan_time(r);
		break;
	default:
		job_wide(r);
		break;
	}
}

/* ---- recursion of three frame shapes --------------------------------------- */

static int rec_saves(int depth, uint32_t r);
static int rec_alloca(int depth, uint32_t r);

static int rec_next(int depth, uint32_t r)
{
	if (depth <= 0) {
		run_job(r >> 4);
		return (int)(r & 7);
	}
	switch (r & 3) {
	case 0:
		return rec_saves(depth - 1, r * 1103515245u + 12345u);
	case 1:
		return rec_alloca(depth - 1, r * 1103515245u + 12345u);
	default:
		return rec_plain(depth - 1, r * 1103515245u + 12345u);
	}
}

__attribute__((noinline)) static int rec_plain(int depth, uint32_t r)
{
	return rec_next(depth, r) + 1;
}

/* Many values live across the calls: RBX, R12-R15 are saved. */
__attribute__((noinline)) static int rec_saves(int depth, uint32_t r)
{
	int a = (int)(r & 15), b = (int)(r >> 8 & 15), c = depth * 3;
	int d = (int)(r >> 16 & 7), e = a ^ b;

	a += rec_next(depth, r ^ 0x9e3779b9u);
	sink += (uint64_t)(a + b + c + d + e);
	if (depth < 2) /* a second call site, bounded */
		a += rec_next(0, r >> 3);
	return a + b * c + d * e;
}

/* A variable-sized frame: the CFA is RBP based. */
__attribute__((noinline)) static int rec_alloca(int depth, uint32_t r)
{
	size_t n = 16 + (r >> 5) % 200;
	volatile char *p = __builtin_alloca(n);

	p[0] = (char)depth;
	p[n - 1] = (char)r;
	return rec_next(depth, r ^ 0x5bd1e995u) + p[0];
}

static void run_one(uint32_t *state)
{
	uint32_t r = rng(state);
	int depth = (int)(r % 24);

	if (r % 17 == 0)
		depth += 60 + (int)(r % 100); /* an occasional deep stack */
	sink += (uint64_t)rec_next(depth, r);
}

/* ---- capture ------------------------------------------------------------- */

static int find_stack(struct bench_corpus *c)
{
	char line[512];
	uint64_t s, e;
	FILE *f = fopen("/proc/self/maps", "r");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "[stack]") &&
		    sscanf(line, "%" SCNx64 "-%" SCNx64, &s, &e) == 2) {
			c->stack_lo = s;
			c->stack_top = e;
		}
	fclose(f);
	return c->stack_top ? 0 : -ENOENT;
}

static int start_timer(timer_t *timer, unsigned interval_us)
{
	struct sigevent ev = { .sigev_notify = SIGEV_SIGNAL,
			       .sigev_signo = SIGPROF };
	struct itimerspec its = { { 0, (long)interval_us * 1000 },
				  { 0, (long)interval_us * 1000 } };

	if (timer_create(CLOCK_MONOTONIC, &ev, timer))
		return -errno;
	if (timer_settime(*timer, 0, &its, NULL)) {
		timer_delete(*timer);
		return -errno;
	}
	return 0;
}

int bench_corpus_capture(struct bench_corpus *c, size_t cap,
			 unsigned interval_us)
{
	struct sigaction sa = { .sa_sigaction = on_tick,
				.sa_flags = SA_SIGINFO | SA_RESTART };
	uint32_t state = 0x12345678u;
	uint64_t rounds;
	timer_t timer;
	int err;

	memset(c, 0, sizeof(*c));
	err = find_stack(c);
	if (err)
		return err;
	c->cap = cap;
	c->arena_size = cap * 16384;
	c->s = calloc(cap, sizeof(*c->s));
	c->arena = malloc(c->arena_size);
	if (!c->s || !c->arena)
		return -ENOMEM;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL))
		return -errno;
	capturing = c;
	err = start_timer(&timer, interval_us);
	/* Bounded: a machine that never delivers the timer still ends. */
	for (rounds = 0; !err && c->n < c->cap && rounds < 50000000 &&
			 c->arena_size - c->used >= BENCH_STACK_MAX;
	     rounds++)
		run_one(&state);
	if (!err)
		timer_delete(timer);
	capturing = NULL;
	signal(SIGPROF, SIG_DFL);
	return err;
}

void bench_corpus_free(struct bench_corpus *c)
{
	free(c->s);
	free(c->arena);
	memset(c, 0, sizeof(*c));
}
