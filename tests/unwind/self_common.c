/* SPDX-License-Identifier: MIT */
/* Capture, mapping table and name resolution helpers of the self tests. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <search.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "self.h"
#include "self_common.h"

/*
 * sample_here() is the leaf of every captured stack: it records its own
 * registers at a known return address and copies the stack from its RSP
 * (or self_stack_bottom) up to the top of the stack region. Only the
 * callee-saved registers, the stack pointer and the pc (and on AArch64
 * the link register) are captured, as the unwinder needs nothing else at
 * a call site.
 */
uint64_t self_stack_top;
uint64_t self_stack_bottom;

/*
 * Copies live stack memory, redzones included: not instrumented, and a
 * volatile byte loop so the compiler does not turn it into memcpy (which
 * sanitizers intercept).
 */
#if defined(__clang__) || defined(__GNUC__)
__attribute__((no_sanitize_address))
#endif
static void
raw_copy(uint8_t *dst, uint64_t src, size_t n)
{
	const volatile uint8_t *p = (const volatile uint8_t *)(uintptr_t)src;
	size_t i;

	for (i = 0; i < n; i++)
		dst[i] = p[i];
}

SELF_NOIPA void sample_here(struct self_sample *s)
{
	uint64_t from, top = self_stack_top;

	if (s->taken)
		return;
	memset(&s->regs, 0, sizeof(s->regs));
	sp_test_capture(&s->regs);
	s->regs.valid = SELF_CAPTURED;
	s->regs.abi = SP_REGS_ABI_64;
	from = self_stack_bottom ? self_stack_bottom : s->regs.r[SELF_SP];
	if (!top)
		top = self_main_stack_top();
	s->stack_len = (size_t)(top - from);
	s->stack_addr = from;
	s->stack = malloc(s->stack_len);
	if (s->stack)
		raw_copy(s->stack, from, s->stack_len);
	s->taken = 1;
}

uint64_t self_main_stack_top(void)
{
	static uint64_t top;
	char line[512];
	uint64_t start;
	FILE *f;

	if (top)
		return top;
	f = fopen("/proc/self/maps", "r");
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "[stack]"))
			sscanf(line, "%" SCNx64 "-%" SCNx64, &start, &top);
	if (f)
		fclose(f);
	return top;
}

size_t self_load_maps(struct self_maps *out)
{
	char line[1024];
	FILE *f = fopen("/proc/self/maps", "r");

	out->n = 0;
	while (f && fgets(line, sizeof(line), f) && out->n < SELF_MAX_MAPS) {
		struct sp_mapping *m = &out->maps[out->n];
		char perms[8] = "", path[200] = "";
		unsigned maj, min;
		uint64_t ino;

		if (sscanf(line,
			   "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64
			   " %x:%x %" SCNu64 " %199[^\n]",
			   &m->start, &m->end, perms, &m->file_offset, &maj,
			   &min, &ino, path) < 7 ||
		    perms[2] != 'x' || strstr(path, "[vsyscall]"))
			continue;
		memset(out->paths[out->n], 0, sizeof(out->paths[0]));
		snprintf(out->paths[out->n], sizeof(out->paths[0]), "%s",
			 path[0] == ' ' ? path + 1 : path);
		m->path = out->paths[out->n];
		m->dev_major = maj;
		m->dev_minor = min;
		m->inode = ino;
		m->module_id = (uint32_t)out->n;
		m->flags = strstr(path, "[vdso]") ? SP_MAPPING_VDSO : 0;
		out->n++;
	}
	if (f)
		fclose(f);
	return out->n;
}

const char *self_name(uint64_t pc, const char **file)
{
	Dl_info info;

	if (file)
		*file = "";
	if (!dladdr((void *)(uintptr_t)pc, &info))
		return "?";
	if (file && info.dli_fname)
		*file = info.dli_fname;
	return info.dli_sname ? info.dli_sname : "?";
}

void self_print(const struct sp_frame *f, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		const char *file;
		const char *name = self_name(f[i].abs_ip, &file);

		fprintf(stderr,
			"  #%d %#" PRIx64 " mod %u rel %#" PRIx64
			" mode %u %s (%s)\n",
			i, f[i].abs_ip, f[i].module_id, f[i].file_relative_ip,
			f[i].mode, name, file);
	}
}

int self_unwind(struct sp_unwinder *u, const struct self_sample *s,
		struct sp_frame *frames, size_t cap, struct sp_unwind_stats *st)
{
	static struct self_maps maps;
	int n;

	self_load_maps(&maps);
	memset(st, 0, sizeof(*st));
	n = sp_unwinder_unwind(u, &s->regs, s->stack, s->stack_len,
			       s->stack_addr, maps.maps, maps.n, frames, cap,
			       st);
	CHECK_OK(n);
	return n;
}

int self_expect(const struct sp_frame *f, int n, int from,
		const char *const *names, size_t count)
{
	size_t i;

	for (i = 0; i < count; i++) {
		if (from + (int)i >= n ||
		    strcmp(self_name(f[from + i].abs_ip, NULL), names[i]) !=
			    0) {
			fprintf(stderr, "frame %zu: expected %s\n", from + i,
				names[i]);
			self_print(f, n);
			return 0;
		}
	}
	return 1;
}

int self_is_complete(const struct sp_frame *f, int n,
		     const struct sp_unwind_stats *st)
{
	if (n == 0 || f[n - 1].mode == SP_FRAME_TRUNCATED ||
	    st->truncated != 0 ||
	    strcmp(self_name(f[n - 1].abs_ip, NULL), "_start") != 0) {
		fprintf(stderr, "stack not complete (truncated %" PRIu64 ")\n",
			st->truncated);
		self_print(f, n);
		return 0;
	}
	return 1;
}

/* ---- a capture from inside libc (self_capture_twalk) ---- */

/* Not static: named in the expected frames. */
void self_walk_action(const void *node, VISIT which, int depth);

static struct self_sample *walk_sample;
static int walk_calls;
static volatile int walk_sink;

static void free_nothing(void *p)
{
	(void)p;
}

static int compare_ints(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

SELF_NOIPA void self_walk_action(const void *node, VISIT which, int depth)
{
	(void)node;
	(void)depth;
	if (which == leaf && walk_calls++ == 5)
		sample_here(walk_sample);
	walk_sink++; /* no tail call: keep this frame */
}

SELF_NOIPA void self_capture_twalk(struct self_sample *s)
{
	static int keys[64];
	void *root = NULL;
	int i;

	for (i = 0; i < 64; i++) {
		keys[i] = (i * 7919) % 64;
		CHECK(tsearch(&keys[i], &root, compare_ints) != NULL);
	}
	walk_calls = 0;
	walk_sample = s;
	twalk(root, self_walk_action);
	tdestroy(root, free_nothing);
	walk_sink++; /* no tail call: keep this frame */
}
