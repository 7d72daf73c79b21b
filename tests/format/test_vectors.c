/* SPDX-License-Identifier: MIT */
/* Decoding the SPULSE3 §11 golden vectors and accept/reject table via Snapshot. */
#include <errno.h>
#include <string.h>

#include <stackpulse.h>

#include "check.h"
#include "vectors.h"

/* Table rows leave trailing counts at zero. */
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"

enum expect {
	OK,
	RECOVERED,
	REJECT
};

struct vcase {
	const char *name;
	const char *hex;
	enum expect expect;
	size_t samples, modules, frames, stacks, threads;
};

#define R2_MODULE "01 00 0e 80 20 80 40 80 02 00 00 00 00 00 01 6d "
#define R4_BASE "02 00 01 80 20 03 00 ff ff ff ff 0f 00 "

static const struct vcase cases[] = {
	{ "V1", VEC_V1, OK, 0, 0, 0, 0, 0 },
	{ "V1b", VEC_V1B, OK, 0, 0, 0, 0, 0 },
	{ "V2", VEC_V2, OK, 1, 1, 1, 1, 1 },
	{ "V3", VEC_V3, OK, 2, 1, 2, 2, 1 },
	{ "V4", VEC_V4, REJECT, 0, 0, 0, 0, 0 },
	{ "V4b", VEC_V4B, REJECT, 0, 0, 0, 0, 0 },
	{ "V5", VEC_V5, OK, 2, 2, 4, 4, 2 },
	{ "V6", VEC_V6, REJECT, 0, 0, 0, 0, 0 },
	{ "V6-original", VEC_V6_ORIG, OK, 2, 0, 2, 2, 1 },
	{ "V7-ff", VEC_V6_ORIG " ff", REJECT, 0, 0, 0, 0, 0 },
	{ "V7-05", VEC_V6_ORIG " 05", RECOVERED, 2, 0, 2, 2, 1 },
	{ "V8", VEC_V8, REJECT, 0, 0, 0, 0, 0 },
	{ "SPULSE1", "53 50 55 4c 53 45 31 00 00 00", REJECT, 0, 0, 0, 0, 0 },
	{ "SPULSE4", "53 50 55 4c 53 45 34 00 00 00", REJECT, 0, 0, 0, 0, 0 },
	{ "short", "53 50 55 4c 53 45 33", REJECT, 0, 0, 0, 0, 0 },
	{ "cut header", "53 50 55 4c 53 45 33 00 80", REJECT, 0, 0, 0, 0, 0 },
	{ "no interval", "53 50 55 4c 53 45 33 00 00", REJECT, 0, 0, 0, 0, 0 },
	{ "empty", "", REJECT, 0, 0, 0, 0, 0 },
	{ "R1", VEC_H "01 00 00 80 20 80 40 00 00 00 00 00 00 00", REJECT },
	{ "R1 pid -1 user", VEC_H "01 00 01 80 20 80 40 00 00 00 00 00 00 00",
	  REJECT },
	{ "R1 kernel pid -1", VEC_H "01 00 01 80 20 80 40 00 00 00 00 00 01 00",
	  OK, 0, 1 },
	{ "R2a", VEC_H R2_MODULE "02 00 00 80 22", REJECT },
	{ "R2b", VEC_H R2_MODULE "02 00 00 80 01", REJECT },
	{ "R2c", VEC_H R2_MODULE "02 00 00 ff 21", OK, 0, 1, 1 },
	{ "R2d", VEC_H R2_MODULE "02 00 02 80 02", REJECT },
	{ "R3", VEC_H "02 00 05 01", REJECT },
	{ "R3b", VEC_H "02 00 05 00", OK, 0, 0, 1 },
	{ "R4", VEC_H R4_BASE "05 d0 0f 00 00", REJECT },
	{ "R4b", VEC_H "02 00 01 80 20 03 00 00 00", REJECT },
	{ "R5 tid 0", VEC_H "04 00 0e 00", REJECT },
	{ "R5 tid 2^31", VEC_H "04 00 0e 80 80 80 80 08", REJECT },
	{ "R5 tid max", VEC_H "04 00 0e ff ff ff ff 07", OK, 0, 0, 0, 0, 1 },
	{ "R5 pid 0", VEC_H "04 00 00 01", REJECT },
	{ "R5 pid 2^31", VEC_H "04 00 80 80 80 80 10 01", REJECT },
	{ "R6", VEC_H R4_BASE "04 00 0e 07 05 01 00 00", REJECT },
	{ "R7", VEC_H "01 00 0e 80 20 80 40 80 02 00 00 00 00 00 01 ff",
	  REJECT },
	{ "R7 surrogate",
	  VEC_H "01 00 0e 80 20 80 40 80 02 00 00 00 00 00 03 ed a0 80",
	  REJECT },
	{ "R7 overlong",
	  VEC_H "01 00 0e 80 20 80 40 80 02 00 00 00 00 00 02 c0 af", REJECT },
	{ "R7 NUL ok",
	  VEC_H "01 00 0e 80 20 80 40 80 02 00 00 00 00 00 02 00 41", OK, 0,
	  1 },
	{ "R8", VEC_H "08 00", REJECT },
	{ "R9", VEC_H "02 80 00 01 80 20", OK, 0, 0, 1 },
	{ "T1", VEC_H "01", RECOVERED },
	{ "T2", VEC_H "02 80 80 80 80 80 80 80 80 80", RECOVERED },
	{ "T3", VEC_H "02 80 80 80 80 80 80 80 80 80 80", REJECT },
	{ "L1",
	  VEC_H "01 00 0e 80 20 80 40 00 00 00 00 00 00 80 80 80 80 80 20 2f "
		"78 02 00 01 80 20",
	  RECOVERED },
	{ "tag 0", VEC_H "00", REJECT },
	{ "tag 9", VEC_H "09", REJECT },
	{ "module id 7", VEC_H "01 07", REJECT },
	{ "duplicate frame id", VEC_H "02 00 01 80 20 02 00 01 80 20", REJECT },
	{ "odd kind 7 accepted", VEC_H "02 00 07 80 20", OK, 0, 0, 1 },
	{ "dev major 2^32",
	  VEC_H "01 00 0e 80 20 80 40 00 00 80 80 80 80 10 00 00 00 00",
	  REJECT },
	{ "python pid 0", VEC_H "06 00 00 01", REJECT },
	{ "python ok", VEC_H "06 00 0e 01", OK },
	{ "python pid 2^31", VEC_H "06 00 80 80 80 80 10 01", REJECT },
	{ "retire pid 0", VEC_H "07 00", REJECT },
	{ "retire pid -1", VEC_H "07 01", REJECT },
	{ "retire unknown pid", VEC_H "07 0e", OK },
	{ "stack parent forward", VEC_H "02 00 01 80 20 03 00 01 00", REJECT },
	{ "stack parent 2^32", VEC_H "02 00 01 80 20 03 00 80 80 80 80 10 00",
	  REJECT },
	{ "frame id cut then bad", VEC_H "02 05", REJECT },
	{ "module cut inode", VEC_H "01 00 0e 80 20 80 40 00", RECOVERED },
	{ "bytes len overflows",
	  VEC_H "01 00 0e 00 00 00 00 00 00 00 00 "
		"ff ff ff ff ff ff ff ff ff 01",
	  REJECT },
	{ "marker cut payload", VEC_H "02 00 05", RECOVERED },
	{ "sample +1 over max",
	  VEC_H R4_BASE "04 00 0e 07 05 fe ff ff ff ff ff ff ff ff 01 00 00 "
			"05 fe ff ff ff ff ff ff ff ff 01 00 00 05 02 00 00 "
			"05 02 00 00",
	  REJECT },
	{ "sample at u64 max",
	  VEC_H R4_BASE "04 00 0e 07 05 fe ff ff ff ff ff ff ff ff 01 00 00 "
			"05 fe ff ff ff ff ff ff ff ff 01 00 00 05 02 00 00",
	  OK, 3, 0, 1, 1, 1 },
};

static void check_case(const struct vcase *c)
{
	static uint8_t buf[512];
	struct sp_diag diag;
	struct sp_reader_opts opts = { .size = sizeof(opts), .diag = &diag };
	struct sp_snapshot *s = NULL;
	const struct sp_spool *sp;
	size_t len = vec_hex(c->hex, buf, sizeof(buf));
	int err;

	memset(&diag, 0, sizeof(diag));
	err = sp_snapshot_open_buffer(buf, len, &opts, &s);
	if (c->expect == REJECT) {
		if (err != SP_ECORRUPT) {
			fprintf(stderr, "%s: expected SP_ECORRUPT\n", c->name);
			CHECK_EQ_INT(err, SP_ECORRUPT);
		}
		CHECK(diag.message[0] != '\0');
		return;
	}
	if (err) {
		fprintf(stderr, "%s: %s (%s at %llu)\n", c->name,
			sp_strerror(err), diag.message,
			(unsigned long long)diag.offset);
		CHECK_OK(err);
	}
	sp = sp_snapshot_spool(s);
	if (sp_snapshot_is_recovered(s) != (c->expect == RECOVERED))
		fprintf(stderr, "%s: recovered flag wrong\n", c->name);
	CHECK_EQ(sp_snapshot_is_recovered(s), c->expect == RECOVERED);
	CHECK_EQ(sp_snapshot_sample_count(s), c->samples);
	CHECK_EQ(sp_spool_module_count(sp), c->modules);
	CHECK_EQ(sp_spool_frame_count(sp), c->frames);
	CHECK_EQ(sp_spool_stack_count(sp), c->stacks);
	CHECK_EQ(sp_spool_thread_count(sp), c->threads);
	sp_snapshot_close(s);
}

static struct sp_snapshot *open_hex(const char *hex)
{
	static uint8_t buf[512];
	struct sp_snapshot *s = NULL;
	size_t len = vec_hex(hex, buf, sizeof(buf));

	CHECK_OK(sp_snapshot_open_buffer(buf, len, NULL, &s));
	return s;
}

static void check_v1b(void)
{
	struct sp_snapshot *s = open_hex(VEC_V1B);
	const struct sp_spool *sp = sp_snapshot_spool(s);

	CHECK_EQ(sp_spool_start_timestamp_us(sp), 1700000000000000ull);
	CHECK_EQ(sp_spool_sample_interval_us(sp), 1000);
	sp_snapshot_close(s);
}

static void check_v2_v3(void)
{
	struct sp_snapshot *s = open_hex(VEC_V3);
	const struct sp_spool *sp = sp_snapshot_spool(s);
	struct sp_frame_context ctx[4];
	struct sp_module m;
	struct sp_sample smp;

	CHECK_OK(sp_spool_module(sp, 0, &m));
	CHECK_EQ(m.pid, 7);
	CHECK_EQ(m.start, 0x1000);
	CHECK_EQ(m.end, 0x2000);
	CHECK_EQ(m.file_offset, 0x100);
	CHECK_EQ(m.inode, 1);
	CHECK_EQ(m.dev_major, 8);
	CHECK_EQ(m.dev_minor, 1);
	CHECK_EQ(m.path_len, 6);
	CHECK(strcmp(m.path, "/first") == 0);
	CHECK_EQ(m.deactivated_at, SP_NEVER);
	CHECK_OK(sp_snapshot_sample(s, 0, &smp));
	CHECK_EQ(smp.timestamp_ns, 1000);
	CHECK_EQ(smp.pid, 7);
	CHECK_EQ(smp.tid, 11);
	CHECK_EQ(sp_spool_timestamp_us(sp, smp.timestamp_ns), 123);
	CHECK_EQ(sp_spool_stack_contexts(sp, smp.stack, smp.pid, ctx, 4), 1);
	CHECK_EQ(ctx[0].frame.abs_ip, 0x1010);
	CHECK_EQ(ctx[0].module_id, 0);
	CHECK_EQ(ctx[0].file_relative_ip, 0x110);
	CHECK_OK(sp_snapshot_sample(s, 1, &smp));
	CHECK_EQ(smp.timestamp_ns, 3000);
	CHECK_EQ(sp_spool_timestamp_us(sp, smp.timestamp_ns), 125);
	CHECK_EQ(sp_spool_stack_contexts(sp, smp.stack, smp.pid, ctx, 4), 2);
	CHECK_EQ(ctx[0].frame.abs_ip, 0x3010);
	CHECK_EQ(ctx[0].module_id, SP_NO_MODULE);
	CHECK_EQ(ctx[1].module_id, 0);
	CHECK_EQ(ctx[1].file_relative_ip, 0x110);
	CHECK_EQ(sp_snapshot_sample(s, 2, &smp), -EINVAL);
	sp_snapshot_close(s);
}

static void check_v3_cut(void)
{
	static uint8_t buf[128];
	size_t len = vec_hex(VEC_V3, buf, sizeof(buf));
	struct sp_snapshot *s = NULL;

	CHECK_EQ(len, 67);
	CHECK_OK(sp_snapshot_open_buffer(buf, 66, NULL, &s));
	CHECK(sp_snapshot_is_recovered(s));
	CHECK_EQ(sp_snapshot_sample_count(s), 1);
	CHECK_EQ(sp_spool_frame_count(sp_snapshot_spool(s)), 2);
	CHECK_EQ(sp_spool_stack_count(sp_snapshot_spool(s)), 2);
	sp_snapshot_close(s);
}

static void check_v5(void)
{
	struct sp_snapshot *s = open_hex(VEC_V5);
	const struct sp_spool *sp = sp_snapshot_spool(s);
	struct sp_frame_context ctx[4];
	struct sp_python_record py;
	struct sp_module m;
	struct sp_sample smp;
	uint64_t kaddr[8];

	CHECK_OK(sp_spool_module(sp, 0, &m));
	CHECK_EQ(m.deactivated_at, 3);
	CHECK_OK(sp_spool_module(sp, 1, &m));
	CHECK_EQ(m.is_kernel, 1);
	CHECK_EQ(m.pid, -1);
	CHECK(strcmp(m.path, "[kernel]") == 0);
	CHECK_EQ(m.deactivated_at, SP_NEVER);
	CHECK_EQ(sp_snapshot_python_record_count(s), 1);
	CHECK_OK(sp_snapshot_python_record(s, 0, &py));
	CHECK_EQ(py.timestamp_ns, 500);
	CHECK_EQ(py.pid, 7);
	CHECK_EQ(py.is_python_runtime, 1);
	CHECK_OK(sp_snapshot_sample(s, 0, &smp));
	CHECK_EQ(smp.timestamp_ns, 1000);
	CHECK_EQ(sp_spool_stack_contexts(sp, smp.stack, smp.pid, ctx, 4), 3);
	CHECK_EQ(ctx[0].frame.mode, SP_FRAME_KERNEL);
	CHECK_EQ(ctx[0].module_id, 1);
	CHECK_EQ(ctx[0].file_relative_ip, 0x10);
	CHECK_EQ(ctx[1].frame.mode, SP_FRAME_USER);
	CHECK_EQ(ctx[1].module_id, 0);
	CHECK_EQ(ctx[1].file_relative_ip, 0x123);
	CHECK_EQ(ctx[2].frame.mode, SP_FRAME_TRUNCATED);
	CHECK_EQ(ctx[2].module_id, SP_NO_MODULE);
	CHECK_OK(sp_snapshot_sample(s, 1, &smp));
	CHECK_EQ(smp.timestamp_ns, 900);
	CHECK_EQ(smp.tid, 8);
	CHECK_EQ(sp_spool_stack_contexts(sp, smp.stack, smp.pid, ctx, 4), 1);
	CHECK_EQ(ctx[0].frame_id, 3);
	CHECK_EQ(ctx[0].module_id, SP_NO_MODULE);
	/* Another process does not own pid 7's module. */
	CHECK_OK(sp_spool_resolve(sp, 1, 8, &ctx[0]));
	CHECK_EQ(ctx[0].module_id, SP_NO_MODULE);
	CHECK_EQ(sp_spool_kernel_addresses(sp, kaddr, 8), 1);
	CHECK_EQ(kaddr[0], 0xffffffff81000010ull);
	sp_snapshot_close(s);
}

int main(void)
{
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		check_case(&cases[i]);
	check_v1b();
	check_v2_v3();
	check_v3_cut();
	check_v5();
	return T_EXIT_PASS;
}
