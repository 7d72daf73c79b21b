/* SPDX-License-Identifier: MIT */
/* Helpers of the self-unwind tests: maps, names, expectations. */
#ifndef SP_TESTS_UNWIND_SELF_COMMON_H
#define SP_TESTS_UNWIND_SELF_COMMON_H

#include <inttypes.h>
#include <stddef.h>

#include "self.h"

#define SELF_MAX_MAPS 256

struct self_maps {
	struct sp_mapping maps[SELF_MAX_MAPS];
	char paths[SELF_MAX_MAPS][256];
	size_t n;
};

uint64_t self_main_stack_top(void);
size_t self_load_maps(struct self_maps *out);
/* dladdr name of @pc ("?" when unknown); @file gets the object path. */
const char *self_name(uint64_t pc, const char **file);
void self_print(const struct sp_frame *f, int n);
int self_unwind(struct sp_unwinder *u, const struct self_sample *s,
		struct sp_frame *frames, size_t cap,
		struct sp_unwind_stats *st);
/* 1 when frames [from, from + count) resolve to @names, else prints. */
int self_expect(const struct sp_frame *f, int n, int from,
		const char *const *names, size_t count);
/* 1 when the stack ends at _start without a marker. */
int self_is_complete(const struct sp_frame *f, int n,
		     const struct sp_unwind_stats *st);
/*
 * Takes @s from inside libc (Debian's is built without frame pointers):
 * twalk walks a tsearch tree and its recursion (trecurse) calls
 * self_walk_action, which takes the sample at its sixth leaf. So the
 * stack is sample_here, self_walk_action, libc's frames (some save RBP),
 * self_capture_twalk, then the caller. Not qsort: sanitizer runtimes
 * replace qsort with their own.
 */
void self_capture_twalk(struct self_sample *s);

#endif /* SP_TESTS_UNWIND_SELF_COMMON_H */
