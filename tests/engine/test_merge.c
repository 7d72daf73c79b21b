/* SPDX-License-Identifier: MIT */
/* Unit test: the timestamp merge queue (order, watermark, compaction). */
#include <errno.h>
#include <string.h>

#include "check.h"
#include "merge.h"

static uint64_t seen[64];
static size_t nseen;
static uint64_t nkey;

static int collect(void *ctx, const struct sp__merge_item *it, const void *rec)
{
	uint64_t v;

	(void)ctx;
	CHECK_EQ(it->len, 8 + it->type);
	memcpy(&v, rec, 8);
	seen[nseen++] = v;
	return v == 999 ? -EIO : 0;
}

static void push(struct sp__merge *m, uint64_t t, int32_t pid)
{
	static const char pad[16];
	struct sp__span s[2] = { { &t, 8 }, { pad, (size_t)(t % 5) } };
	struct sp__merge_item it = { .time = t, .key = nkey++, .pid = pid };

	it.type = (uint32_t)(t % 5);
	CHECK_OK(sp__merge_push(m, &it, s, 2));
}

int main(void)
{
	struct sp__merge m;
	struct sp__mem mem;

	sp__mem_init(&mem, NULL);
	sp__merge_init(&m, &mem);
	push(&m, 30, 1); /* ring A */
	push(&m, 50, 2);
	push(&m, 10, 1); /* ring B */
	push(&m, 40, 3);
	CHECK_OK(sp__merge_release(&m, 35, collect, NULL));
	CHECK_EQ(nseen, 2);
	CHECK_EQ(seen[0], 10);
	CHECK_EQ(seen[1], 30);
	CHECK_EQ(sp__merge_count(&m), 2);
	CHECK(sp__merge_has_pid(&m, 3));
	CHECK(!sp__merge_has_pid(&m, 1));
	push(&m, 36, 1);
	push(&m, 999, 4);
	push(&m, 1000, 4);
	CHECK_EQ_INT(sp__merge_release(&m, UINT64_MAX, collect, NULL), -EIO);
	CHECK_EQ(nseen, 6);
	CHECK_EQ(seen[2], 36);
	CHECK_EQ(seen[3], 40);
	CHECK_EQ(seen[4], 50);
	CHECK_EQ(seen[5], 999);
	CHECK_EQ(sp__merge_count(&m), 2); /* the failed one stays queued */
	sp__merge_fini(&m);
	return T_EXIT_PASS;
}
