/* SPDX-License-Identifier: MIT */
/* perf as an oracle: our unwinder and `perf script` on the same samples. */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <stackpulse/unwind.h>

#include "check.h"
#include "perf_record.h"

/*
 * `perf record --call-graph dwarf,16384 -e cpu-clock` records a workload
 * built -O2 -fomit-frame-pointer (tests/workloads). The test reads
 * perf.data itself: the executable PERF_RECORD_MMAP2s give the mapping
 * table, and every PERF_RECORD_SAMPLE's user registers and stack bytes go
 * through sp_unwinder_unwind. `perf script` prints perf's own unwinding
 * of the same samples, matched by tid and time. Where perf reached
 * _start (a full stack), ours must be the same stack frame by frame, by
 * address: both report callers as return address - 1 (perf's unwinders
 * decrement non-signal frames too); an off-by-one is tolerated and
 * counted separately. At least 99% of those samples must agree.
 *
 * The workloads: a call ladder, a shared library, system calls, a hot
 * leaf whose epilogue pops RBP before the ret (wl_epilogue: samples after
 * the pop must reach _start as perf's do), and a recursion 2000 frames
 * deep in a 65528-byte copy (wl_recursion 1 2000), unwound with max_depth 8192
 * against `perf script --max-stack 8192`, and again with the default
 * depth limit: then every sample perf completed must be cut by it, and
 * each cut counted once as SP_SAMPLE_ERR_DEPTH_LIMIT.
 *
 * Skips (77) only when perf is missing or the kernel refuses
 * perf_event_open; anything else that goes wrong fails.
 */

#define MAX_MAPS 64
#define MAX_FRAMES (SP_DEPTH_MAX + 1)

struct chain {
	int32_t tid;
	uint64_t time;
	size_t n, cap;
	uint64_t *ip;
	uint64_t *rel; /* ours: file-relative pcs */
	bool full;     /* perf: ends in _start; ours: no truncated marker */
};

struct chains {
	struct chain *c;
	size_t n, cap;
};

struct perf_file {
	uint8_t *buf;
	size_t len;
	struct perf_event_attr attr;
	uint64_t data_off, data_len;
};

/* One workload of the comparison and the unwinder's depth for it. */
struct workload {
	const char *name, *exe, *args;
	unsigned stack_size;
	uint32_t max_depth; /* 0: the default */
};

struct run {
	struct sp_mapping maps[MAX_MAPS];
	char *paths[MAX_MAPS];
	size_t nmaps;
	int32_t pid;
	struct sp_unwinder *unwinder;
	struct sp_unwind_stats st;
	struct chains ours, perf;
	size_t full, agree, agree_off_by_one, ours_truncated;
};

static struct chain *chain_add(struct chains *cs)
{
	if (cs->n == cs->cap) {
		cs->cap = cs->cap ? 2 * cs->cap : 1024;
		cs->c = realloc(cs->c, cs->cap * sizeof(*cs->c));
		CHECK_PTR(cs->c);
	}
	memset(&cs->c[cs->n], 0, sizeof(cs->c[0]));
	return &cs->c[cs->n++];
}

static void chain_push(struct chain *c, uint64_t ip, uint64_t rel)
{
	if (c->n == c->cap) {
		c->cap = c->cap ? 2 * c->cap : 64;
		c->ip = realloc(c->ip, c->cap * sizeof(*c->ip));
		c->rel = realloc(c->rel, c->cap * sizeof(*c->rel));
		CHECK(c->ip && c->rel);
	}
	c->ip[c->n] = ip;
	c->rel[c->n++] = rel;
}

static void chains_free(struct chains *cs)
{
	size_t i;

	for (i = 0; i < cs->n; i++) {
		free(cs->c[i].ip);
		free(cs->c[i].rel);
	}
	free(cs->c);
}

static bool perf_usable(void)
{
	struct perf_event_attr attr = { 0 };
	long fd;

	if (system("perf version >/dev/null 2>&1") != 0) {
		fprintf(stderr, "skip: perf is not installed\n");
		return false;
	}
	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = 1000000;
	/* Kernel included, as perf record asks (kernel callchains). */
	fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0) {
		fprintf(stderr, "skip: perf_event_open: %s\n", strerror(errno));
		return false;
	}
	close((int)fd);
	return true;
}

static void read_file(const char *path, uint8_t **buf, size_t *len)
{
	FILE *f = fopen(path, "rb");
	struct stat st;

	CHECK_PTR(f);
	CHECK(fstat(fileno(f), &st) == 0 && st.st_size > 0);
	*len = (size_t)st.st_size;
	*buf = malloc(*len);
	CHECK_PTR(*buf);
	CHECK(fread(*buf, 1, *len, f) == *len);
	fclose(f);
}

/*
 * perf.data: "PERFILE2", header size, attr entry size, then the attrs
 * and data sections ({offset, size} each). One event is expected.
 */
static void perf_file_open(const char *path, struct perf_file *pf)
{
	uint64_t h[7], attr_size;

	read_file(path, &pf->buf, &pf->len);
	CHECK(pf->len >= sizeof(h));
	memcpy(h, pf->buf, sizeof(h));
	CHECK(memcmp(pf->buf, "PERFILE2", 8) == 0);
	attr_size = h[2];
	/* attrs = {h[3], h[4]}: one entry, the attr then its ids section. */
	CHECK(attr_size > 16 && h[4] == attr_size);
	CHECK(h[3] <= pf->len && attr_size - 16 <= pf->len - h[3]);
	memset(&pf->attr, 0, sizeof(pf->attr));
	memcpy(&pf->attr, pf->buf + h[3],
	       attr_size - 16 < sizeof(pf->attr) ? attr_size - 16 :
						   sizeof(pf->attr));
	pf->data_off = h[5];
	pf->data_len = h[6];
	CHECK(pf->data_off <= pf->len &&
	      pf->data_len <= pf->len - pf->data_off);
	CHECK(pf->attr.sample_type & PERF_SAMPLE_STACK_USER);
	CHECK(pf->attr.sample_type & PERF_SAMPLE_REGS_USER);
}

/* Fields of a sample that the test uses. */
struct raw_sample {
	int32_t pid, tid;
	uint64_t time;
	struct sp_regs regs;
	const uint8_t *stack;
	uint64_t stack_len;
};

struct cursor {
	const uint8_t *p;
	size_t left;
};

static uint64_t take_u64(struct cursor *c)
{
	uint64_t v;

	CHECK(c->left >= 8);
	memcpy(&v, c->p, 8);
	c->p += 8;
	c->left -= 8;
	return v;
}

static void skip(struct cursor *c, uint64_t n)
{
	CHECK(n <= c->left);
	c->p += n;
	c->left -= n;
}

/* The fields before the callchain, in perf_event.h order. */
static void sample_head(struct cursor *c, uint64_t st, struct raw_sample *s)
{
	uint64_t v;

	/* READ, RAW and BRANCH_STACK are not requested by perf record here. */
	CHECK(!(st & (PERF_SAMPLE_READ | PERF_SAMPLE_RAW |
		      PERF_SAMPLE_BRANCH_STACK)));
	if (st & PERF_SAMPLE_IDENTIFIER)
		take_u64(c);
	if (st & PERF_SAMPLE_IP)
		take_u64(c);
	if (st & PERF_SAMPLE_TID) {
		v = take_u64(c);
		s->pid = (int32_t)(uint32_t)v;
		s->tid = (int32_t)(uint32_t)(v >> 32);
	}
	if (st & PERF_SAMPLE_TIME)
		s->time = take_u64(c);
	if (st & PERF_SAMPLE_ADDR)
		take_u64(c);
	if (st & PERF_SAMPLE_ID)
		take_u64(c);
	if (st & PERF_SAMPLE_STREAM_ID)
		take_u64(c);
	if (st & PERF_SAMPLE_CPU)
		take_u64(c);
	if (st & PERF_SAMPLE_PERIOD)
		take_u64(c);
}

static void parse_sample(const struct perf_file *pf, const uint8_t *rec,
			 size_t len, struct raw_sample *s)
{
	struct cursor c = { rec + 8, len - 8 };
	uint64_t st = pf->attr.sample_type, abi, n, size;

	memset(s, 0, sizeof(*s));
	sample_head(&c, st, s);
	if (st & PERF_SAMPLE_CALLCHAIN) {
		n = take_u64(&c);
		CHECK(n <= c.left / 8);
		skip(&c, 8 * n);
	}
	abi = take_u64(&c);
	n = abi ? (uint64_t)__builtin_popcountll(pf->attr.sample_regs_user) : 0;
	CHECK(n <= c.left / 8);
	sp__perf_regs_to_dwarf((const uint64_t *)(const void *)c.p,
			       pf->attr.sample_regs_user, (uint32_t)abi,
			       &s->regs);
	skip(&c, 8 * n);
	size = take_u64(&c);
	CHECK(size <= c.left);
	s->stack = c.p;
	skip(&c, size);
	s->stack_len = size ? take_u64(&c) : 0;
	CHECK(s->stack_len <= size);
}

/* An executable mapping of the recorded process. */
static void add_mapping(struct run *r, const struct sp__perf_mmap2 *m)
{
	struct sp_mapping *map;

	if (!(m->prot & PROT_EXEC) || m->pid != r->pid)
		return;
	CHECK(r->nmaps < MAX_MAPS);
	map = &r->maps[r->nmaps];
	r->paths[r->nmaps] = strdup(m->path);
	CHECK_PTR(r->paths[r->nmaps]);
	*map = (struct sp_mapping){
		.start = m->addr,
		.end = m->addr + m->len,
		.file_offset = m->pgoff,
		.inode = m->ino,
		.dev_major = m->maj,
		.dev_minor = m->min,
		.path = r->paths[r->nmaps],
		.module_id = (uint32_t)r->nmaps,
		.flags = strcmp(m->path, "[vdso]") == 0 ? SP_MAPPING_VDSO : 0,
	};
	r->nmaps++;
}

static int cmp_map(const void *a, const void *b)
{
	const struct sp_mapping *x = a, *y = b;

	return (x->start > y->start) - (x->start < y->start);
}

/* Calls @fn on every record of the data section. */
static void for_each_record(const struct perf_file *pf, struct run *r,
			    void (*fn)(const struct perf_file *, struct run *,
				       const uint8_t *, size_t, uint32_t))
{
	const uint8_t *p = pf->buf + pf->data_off;
	uint64_t left = pf->data_len;
	struct perf_event_header h;

	while (left >= sizeof(h)) {
		memcpy(&h, p, sizeof(h));
		CHECK(h.size >= sizeof(h) && h.size <= left);
		fn(pf, r, p, h.size, h.type);
		p += h.size;
		left -= h.size;
	}
}

static void on_mmap(const struct perf_file *pf, struct run *r,
		    const uint8_t *rec, size_t len, uint32_t type)
{
	struct sp__perf_mmap2 m;

	if (type == PERF_RECORD_COMM && r->pid == 0) {
		memcpy(&r->pid, rec + 8, 4); /* the workload's pid */
		return;
	}
	if (type != PERF_RECORD_MMAP2)
		return;
	CHECK_OK(sp__perf_parse_mmap2(rec, len, pf->attr.sample_type, &m));
	add_mapping(r, &m);
}

static void on_sample(const struct perf_file *pf, struct run *r,
		      const uint8_t *rec, size_t len, uint32_t type)
{
	static struct sp_frame frames[MAX_FRAMES];
	struct raw_sample s;
	struct chain *c;
	int n, i;

	if (type != PERF_RECORD_SAMPLE)
		return;
	parse_sample(pf, rec, len, &s);
	if (s.pid != r->pid)
		return;
	n = sp_unwinder_unwind(r->unwinder, &s.regs, s.stack, s.stack_len,
			       s.regs.r[SP_X86_64_RSP], r->maps, r->nmaps,
			       frames, MAX_FRAMES, &r->st);
	CHECK(n > 0);
	c = chain_add(&r->ours);
	c->tid = s.tid;
	c->time = s.time;
	c->full = frames[n - 1].mode != SP_FRAME_TRUNCATED;
	for (i = 0; i < n && frames[i].mode != SP_FRAME_TRUNCATED; i++)
		chain_push(c, frames[i].abs_ip, frames[i].file_relative_ip);
}

/*
 * `perf script -F tid,time,ip,sym --ns` prints, per sample,
 *   "  TID/TID  SEC.NSEC: " (or "TID SEC.NSEC:") then one line per frame
 *   "\t    ADDR SYMBOL" (kernel frames first; they are skipped). A
 *   frame with inline functions at ADDR prints them first, as
 *   "\t    ADDR SYMBOL (inlined)": a line after such a line with the same
 *   ADDR is the same frame (while a recursion repeats ADDR on lines
 *   without the mark, one frame each).
 */
static void parse_script(const char *path, struct chains *cs)
{
	char line[4096], sym[1024];
	struct chain *c = NULL;
	unsigned long sec, nsec;
	uint64_t ip, inlined_at = 0;
	FILE *f = fopen(path, "r");
	int tid;

	CHECK_PTR(f);
	while (fgets(line, sizeof(line), f)) {
		if (line[0] != '\t' &&
		    (sscanf(line, " %d/%*d %lu.%lu:", &tid, &sec, &nsec) == 3 ||
		     sscanf(line, " %d %lu.%lu:", &tid, &sec, &nsec) == 3)) {
			c = chain_add(cs);
			c->tid = tid;
			c->time = (uint64_t)sec * 1000000000u + nsec;
			continue;
		}
		sym[0] = 0;
		if (!c || sscanf(line, " %" SCNx64 " %1023s", &ip, sym) < 1)
			continue;
		if (ip >= 0xffff800000000000ull)
			continue; /* kernel frames */
		if (!(c->n && ip == inlined_at))
			chain_push(c, ip, ip);
		inlined_at = strstr(line, " (inlined)") ? ip : 0;
		c->full = strcmp(sym, "_start") == 0;
	}
	fclose(f);
}

static int cmp_chain(const void *a, const void *b)
{
	const struct chain *x = a, *y = b;

	if (x->time != y->time)
		return (x->time > y->time) - (x->time < y->time);
	return (x->tid > y->tid) - (x->tid < y->tid);
}

/* |a - b|, saturated at 2. */
static uint64_t distance(uint64_t a, uint64_t b)
{
	uint64_t d = a > b ? a - b : b - a;

	return d > 2 ? 2 : d;
}

/*
 * 0: same, 1: same but some frame off by one, -1: different. perf script
 * prints user frames as map-relative addresses (ip - start + pgoff, our
 * file_relative_ip; absolute for a non-PIE executable), so a frame
 * matches either of ours.
 */
static int compare(const struct chain *ours, const struct chain *perf)
{
	int off_by_one = 0;
	uint64_t d, d_rel;
	size_t i;

	if (!ours->full || ours->n != perf->n)
		return -1;
	for (i = 0; i < perf->n; i++) {
		d = distance(ours->ip[i], perf->ip[i]);
		d_rel = distance(ours->rel[i], perf->ip[i]);
		if (d > 1 && d_rel > 1)
			return -1;
		off_by_one |= d != 0 && d_rel != 0;
	}
	return off_by_one;
}

static void print_chains(const struct chain *ours, const struct chain *perf)
{
	size_t i;

	fprintf(stderr, "mismatch at time %" PRIu64 " tid %d:\n", perf->time,
		perf->tid);
	for (i = 0; i < ours->n || i < perf->n; i++)
		fprintf(stderr,
			"  %2zu ours %16" PRIx64 " (file %8" PRIx64
			")  perf %16" PRIx64 "\n",
			i, i < ours->n ? ours->ip[i] : 0,
			i < ours->n ? ours->rel[i] : 0,
			i < perf->n ? perf->ip[i] : 0);
	if (!ours->full)
		fprintf(stderr, "  (ours ends with the truncated marker)\n");
}

static void match_all(struct run *r)
{
	struct chains *o = &r->ours, *p = &r->perf;
	size_t i = 0, j = 0, printed = 0;
	int res;

	qsort(o->c, o->n, sizeof(*o->c), cmp_chain);
	qsort(p->c, p->n, sizeof(*p->c), cmp_chain);
	while (i < o->n && j < p->n) {
		res = cmp_chain(&o->c[i], &p->c[j]);
		if (res) {
			i += res < 0;
			j += res > 0;
			continue;
		}
		if (p->c[j].full) {
			r->full++;
			res = compare(&o->c[i], &p->c[j]);
			r->agree += res >= 0;
			r->agree_off_by_one += res == 1;
			r->ours_truncated += !o->c[i].full;
			if (res < 0 && printed++ < 5)
				print_chains(&o->c[i], &p->c[j]);
		}
		i++;
		j++;
	}
}

/* The unwinder of a run: the default one, or one of @max_depth. */
static struct sp_unwinder *unwinder_new(uint32_t max_depth)
{
	struct sp_unwinder_opts o = { .size = sizeof(o),
				      .max_depth = max_depth };
	struct sp_unwinder *u;

	CHECK_OK(sp_unwinder_new(&o, &u));
	return u;
}

/* Records @w under perf, then unwinds perf's samples with @max_depth. */
static struct run *run_new(const char *dir, const struct workload *w,
			   uint32_t max_depth, struct perf_file *pf)
{
	char cmd[4096], data[1024], script[1024];
	struct run *r = calloc(1, sizeof(*r));

	CHECK_PTR(r);
	snprintf(data, sizeof(data), "%s/%s.data", dir, w->name);
	snprintf(script, sizeof(script), "%s/%s.script", dir, w->name);
	snprintf(cmd, sizeof(cmd),
		 "test -e %s || perf record -q -e cpu-clock -F 999 "
		 "--call-graph dwarf,%u -o %s -- %s %s >%s/%s.out 2>&1",
		 data, w->stack_size, data, w->exe, w->args, dir, w->name);
	CHECK(system(cmd) == 0);
	snprintf(cmd, sizeof(cmd),
		 "test -e %s || perf script -i %s --max-stack %u "
		 "-F tid,time,ip,sym --ns >%s 2>/dev/null",
		 script, data, SP_DEPTH_MAX, script);
	CHECK(system(cmd) == 0);
	perf_file_open(data, pf);
	r->unwinder = unwinder_new(max_depth);
	for_each_record(pf, r, on_mmap);
	CHECK(r->pid > 0 && r->nmaps > 0);
	qsort(r->maps, r->nmaps, sizeof(r->maps[0]), cmp_map);
	for_each_record(pf, r, on_sample);
	parse_script(script, &r->perf);
	match_all(r);
	printf("%s (depth %u): %zu samples ours, %zu perf, %zu full in perf, "
	       "%zu agree (%zu with an off-by-one frame), %zu ours "
	       "truncated, %" PRIu64 " of them by the depth limit\n",
	       w->name, max_depth ? max_depth : SP_DEPTH_DEFAULT, r->ours.n,
	       r->perf.n, r->full, r->agree, r->agree_off_by_one,
	       r->ours_truncated, r->st.errors[SP_SAMPLE_ERR_DEPTH_LIMIT]);
	/* Up to 999 samples a CPU second (fewer on a busy machine): the
	 * comparison must still have substance. */
	CHECK(r->full >= 100);
	return r;
}

static void run_free(struct run *r, struct perf_file *pf)
{
	size_t i;

	for (i = 0; i < r->nmaps; i++)
		free(r->paths[i]);
	sp_unwinder_free(r->unwinder);
	chains_free(&r->ours);
	chains_free(&r->perf);
	free(r);
	free(pf->buf);
}

/* Each truncated stack of a run has exactly one counted reason. */
static void check_reasons(const struct run *r)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < SP_SAMPLE_ERR_COUNT; i++)
		sum += r->st.errors[i];
	CHECK_EQ(sum, r->st.truncated);
}

static void run_workload(const char *dir, const struct workload *w)
{
	struct perf_file pf;
	struct run *r = run_new(dir, w, w->max_depth, &pf);

	CHECK(r->agree * 100 >= r->full * 99);
	check_reasons(r);
	run_free(r, &pf);
}

/*
 * The same perf.data of the deep recursion, unwound with the default
 * depth limit: every stack perf completed beyond 1024 frames is cut by
 * the limit, counted as such; the shorter ones (start-up, the loop
 * around the recursion) still agree.
 */
static void run_depth_limited(const char *dir, const struct workload *w)
{
	struct perf_file pf;
	struct run *r = run_new(dir, w, 0, &pf);
	size_t i, deep = 0;

	for (i = 0; i < r->perf.n; i++)
		deep += r->perf.c[i].full && r->perf.c[i].n > SP_DEPTH_DEFAULT;
	printf("deep: %zu stacks of perf deeper than %u frames\n", deep,
	       SP_DEPTH_DEFAULT);
	CHECK(deep >= 100);
	CHECK_EQ(r->ours_truncated, deep);
	CHECK_EQ(r->agree, r->full - deep);
	/* Samples perf did not complete may be cut for other reasons. */
	CHECK(r->st.errors[SP_SAMPLE_ERR_DEPTH_LIMIT] >= deep);
	check_reasons(r);
	run_free(r, &pf);
}

int main(void)
{
	/* Paths from meson: tests/workloads is configured after this dir. */
	static const struct workload loads[] = {
		{ "ladder", SP_WL_DIR "/wl_ladder", "2", 16384, 0 },
		{ "sharedlib", SP_WL_DIR "/wl_sharedlib", "2", 16384, 0 },
		{ "syscalls", SP_WL_DIR "/wl_syscalls", "2", 16384, 0 },
		{ "epilogue", SP_WL_DIR "/wl_epilogue", "2", 16384, 0 },
		{ "deep", SP_WL_DIR "/wl_recursion", "1 2000", 65528,
		  SP_DEPTH_MAX },
	};
	char dir[] = "/tmp/sp_perf_compare.XXXXXX", cmd[256];
	size_t i;

	if (!perf_usable())
		return T_EXIT_SKIP;
	CHECK_PTR(mkdtemp(dir));
	for (i = 0; i < (sizeof(loads) / sizeof(loads[0])); i++)
		run_workload(dir, &loads[i]);
	run_depth_limited(dir, &loads[(sizeof(loads) / sizeof(loads[0])) - 1]);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CHECK(system(cmd) == 0);
	return T_EXIT_PASS;
}
