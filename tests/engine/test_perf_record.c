/* SPDX-License-Identifier: MIT */
/* Unit test: perf record parsing (synthetic, truncated, hostile) and regs. */
#include <linux/perf_event.h>

#include "check.h"
#include "perf_record.h"

#define ST_USER                                                                \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_IP | PERF_SAMPLE_TID |           \
	 PERF_SAMPLE_TIME | PERF_SAMPLE_CPU | PERF_SAMPLE_PERIOD |             \
	 PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)
#define ST_KERN (ST_USER | PERF_SAMPLE_CALLCHAIN)

static uint64_t buf[4096];
static size_t pos;

static void put(uint64_t v)
{
	buf[pos++] = v;
}

static size_t finish(uint16_t type, uint16_t misc)
{
	struct perf_event_header h = { type, misc, (uint16_t)(pos * 8) };

	memcpy(buf, &h, sizeof(h));
	return pos * 8;
}

/*
 * A kernel-mode sample: 2 kernel ips, the build's registers (20 on
 * x86-64, 33 on AArch64; value = 100 + index).
 */
static size_t make_sample(uint64_t stack_size, uint64_t dyn)
{
	uint64_t i;

	pos = 1;
	put(0xabc);		      /* identifier */
	put(0xffffffff81000000ull);   /* ip */
	put((uint64_t)42 << 32 | 41); /* pid 41, tid 42 */
	put(123456789);		      /* time */
	put(1);			      /* cpu */
	put(1001001);		      /* period */
	put(3);
	put((uint64_t)PERF_CONTEXT_KERNEL);
	put(0xffffffff81000010ull);
	put(0xffffffff81000020ull);
	put(PERF_SAMPLE_REGS_ABI_64);
	for (i = 0; i < (uint64_t)__builtin_popcountll(SP__PERF_REGS_MASK); i++)
		put(100 + i);
	put(stack_size);
	for (i = 0; i < stack_size / 8; i++)
		put(0x1111111111111111ull * (i & 0xf));
	if (stack_size)
		put(dyn);
	return finish(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_KERNEL);
}

static void test_sample(void)
{
	struct sp__perf_sample s;
	size_t len = make_sample(64, 40), cut;

	CHECK_OK(sp__perf_parse_sample(buf, len, ST_KERN, SP__PERF_REGS_MASK,
				       &s));
	CHECK_EQ(s.id, 0xabc);
	CHECK_EQ_INT(s.pid, 41);
	CHECK_EQ_INT(s.tid, 42);
	CHECK_EQ(s.time, 123456789);
	CHECK_EQ(s.cpu, 1);
	CHECK_EQ(s.nr_ips, 3);
	CHECK_EQ(s.stack_len, 40);
	CHECK_EQ(s.regs.abi, SP_REGS_ABI_64);
#if defined(__aarch64__)
	/* perf order X0..X28, X29, LR, SP, PC: the DWARF numbers. */
	CHECK_EQ(s.regs.arch, SP_ARCH_AARCH64);
	CHECK_EQ(s.regs.r[0], 100);
	CHECK_EQ(s.regs.r[SP_AARCH64_X19], 119);
	CHECK_EQ(s.regs.r[SP_AARCH64_X29], 129);
	CHECK_EQ(s.regs.r[SP_AARCH64_X30], 130);
	CHECK_EQ(s.regs.r[SP_AARCH64_SP], 131);
	CHECK_EQ(s.regs.r[SP_AARCH64_PC], 132);
	CHECK_EQ(s.regs.valid, 0x1ffffffffull);
#else
	/* perf order AX,BX,CX,DX,SI,DI,BP,SP,IP,FLAGS,CS,SS,R8..R15 */
	CHECK_EQ(s.regs.arch, SP_ARCH_X86_64);
	CHECK_EQ(s.regs.r[SP_X86_64_RAX], 100);
	CHECK_EQ(s.regs.r[SP_X86_64_RBX], 101);
	CHECK_EQ(s.regs.r[SP_X86_64_RCX], 102);
	CHECK_EQ(s.regs.r[SP_X86_64_RDX], 103);
	CHECK_EQ(s.regs.r[SP_X86_64_RSI], 104);
	CHECK_EQ(s.regs.r[SP_X86_64_RDI], 105);
	CHECK_EQ(s.regs.r[SP_X86_64_RBP], 106);
	CHECK_EQ(s.regs.r[SP_X86_64_RSP], 107);
	CHECK_EQ(s.regs.r[SP_X86_64_RIP], 108);
	CHECK_EQ(s.regs.r[SP_X86_64_R8], 112);
	CHECK_EQ(s.regs.r[SP_X86_64_R15], 119);
	CHECK_EQ(s.regs.valid, 0x1ffffu);
#endif
	{
		uint64_t pc, sp;

		/* The same registers by role, whatever the numbering. */
		CHECK_OK(sp_regs_get(&s.regs, SP_REG_PC, &pc));
		CHECK_OK(sp_regs_get(&s.regs, SP_REG_SP, &sp));
		CHECK(pc == 108 || pc == 132);
		CHECK(sp == 107 || sp == 131);
	}
	/* Every shorter length is rejected, never read past. */
	for (cut = 0; cut < len; cut += 8) {
		struct perf_event_header h = { PERF_RECORD_SAMPLE, 0,
					       (uint16_t)cut };

		memcpy(buf, &h, sizeof(h));
		CHECK_EQ_INT(sp__perf_parse_sample(buf, len, ST_KERN,
						   SP__PERF_REGS_MASK, &s),
			     SP_ECORRUPT);
	}
	/* header.size larger than the bytes we have */
	len = make_sample(64, 40);
	CHECK_EQ_INT(sp__perf_parse_sample(buf, len - 8, ST_KERN,
					   SP__PERF_REGS_MASK, &s),
		     SP_ECORRUPT);
	/* dyn_size larger than size */
	len = make_sample(64, 72);
	CHECK_EQ_INT(sp__perf_parse_sample(buf, len, ST_KERN,
					   SP__PERF_REGS_MASK, &s),
		     SP_ECORRUPT);
}

static void test_hostile_sample(void)
{
	struct sp__perf_sample s;
	size_t len;

	/* callchain nr far beyond the record */
	pos = 1;
	for (int i = 0; i < 6; i++)
		put(1);
	put(UINT64_MAX / 4);
	len = finish(PERF_RECORD_SAMPLE, 0);
	CHECK_EQ_INT(sp__perf_parse_sample(buf, len, ST_KERN,
					   SP__PERF_REGS_MASK, &s),
		     SP_ECORRUPT);
	/* kernel thread: abi 0, stack size 0 */
	pos = 1;
	for (int i = 0; i < 6; i++)
		put(1);
	put(PERF_SAMPLE_REGS_ABI_NONE);
	put(0);
	len = finish(PERF_RECORD_SAMPLE, 0);
	CHECK_OK(sp__perf_parse_sample(buf, len, ST_USER, SP__PERF_REGS_MASK,
				       &s));
	CHECK_EQ(s.regs.abi, SP_REGS_ABI_NONE);
	CHECK_EQ(s.regs.valid, 0);
	CHECK_EQ(s.stack_len, 0);
	/* unknown abi */
	pos = 1;
	for (int i = 0; i < 6; i++)
		put(1);
	put(7);
	len = finish(PERF_RECORD_SAMPLE, 0);
	CHECK_EQ_INT(sp__perf_parse_sample(buf, len, ST_USER,
					   SP__PERF_REGS_MASK, &s),
		     SP_ECORRUPT);
}

static void put_id(void)
{
	put((uint64_t)7 << 32 | 7);
	put(555);
	put(0);
	put(0xabc);
}

static void test_sideband(void)
{
	struct sp__perf_mmap2 m;
	struct sp__perf_comm c;
	struct sp__perf_task t;
	struct sp__perf_id id;
	uint64_t lost;
	size_t len;

	pos = 1;
	put((uint64_t)7 << 32 | 7);
	put(0x400000);
	put(0x1000);
	put(0x2000);
	put((uint64_t)1 << 32 | 8); /* maj 8 min 1 */
	put(99);
	put(3);
	put((uint64_t)2 << 32 | 5); /* prot 5 flags 2 */
	memcpy(&buf[pos++], "/bin/ls", 8);
	put_id();
	len = finish(PERF_RECORD_MMAP2, 0);
	CHECK_OK(sp__perf_parse_mmap2(buf, len, ST_USER, &m));
	CHECK_EQ(m.addr, 0x400000);
	CHECK_EQ(m.pgoff, 0x2000);
	CHECK_EQ(m.maj, 8);
	CHECK_EQ(m.min, 1);
	CHECK_EQ(m.ino, 99);
	CHECK_EQ(m.prot, 5);
	CHECK(strcmp(m.path, "/bin/ls") == 0);
	CHECK_OK(sp__perf_parse_id(buf, len, ST_USER, &id));
	CHECK_EQ(id.time, 555);
	CHECK_EQ(id.id, 0xabc);
	CHECK_EQ_INT(id.pid, 7);
	/* An unterminated path must not run into the trailer. */
	memcpy(&buf[9], "/bin/lsX", 8);
	CHECK_EQ_INT(sp__perf_parse_mmap2(buf, len, ST_USER, &m), SP_ECORRUPT);

	pos = 1;
	put((uint64_t)9 << 32 | 9);
	memcpy(&buf[pos++], "sh\0\0\0\0\0", 8);
	put_id();
	len = finish(PERF_RECORD_COMM, PERF_RECORD_MISC_COMM_EXEC);
	CHECK_OK(sp__perf_parse_comm(buf, len, ST_USER, &c));
	CHECK(c.exec);
	CHECK(strcmp(c.comm, "sh") == 0);

	pos = 1;
	put((uint64_t)1 << 32 | 2); /* pid 2 ppid 1 */
	put((uint64_t)1 << 32 | 3); /* tid 3 ptid 1 */
	put(777);
	put_id();
	len = finish(PERF_RECORD_FORK, 0);
	CHECK_OK(sp__perf_parse_task(buf, len, &t));
	CHECK_EQ_INT(t.pid, 2);
	CHECK_EQ_INT(t.ppid, 1);
	CHECK_EQ_INT(t.tid, 3);
	CHECK_EQ(t.time, 777);
	CHECK_EQ_INT(sp__perf_parse_task(buf, 16, &t), SP_ECORRUPT);

	pos = 1;
	put(5);
	put(12);
	put_id();
	len = finish(PERF_RECORD_LOST, 0);
	CHECK_OK(sp__perf_parse_lost(buf, len, &lost));
	CHECK_EQ(lost, 12);
	pos = 1;
	len = finish(PERF_RECORD_LOST, 0);
	CHECK_EQ_INT(sp__perf_parse_lost(buf, len, &lost), SP_ECORRUPT);
}

/*
 * sp__perf_regs_to_dwarf against the definition: perf stores one u64 per
 * set mask bit, lowest bit first; a bit with a DWARF number lands in that
 * register and sets its valid bit, any other (no DWARF number, or past
 * the table) only takes its slot. Masks with gaps, high bits and none.
 */
static void expect_regs(const uint64_t *vals, uint64_t mask, uint32_t abi,
			struct sp_regs *want)
{
	unsigned bit, i = 0;

	memset(want, 0, sizeof(*want));
	want->arch = SP__PERF_REGS_ARCH;
	want->abi = abi;
	for (bit = 0; bit < 64; bit++) {
		if (!(mask & (1ull << bit)))
			continue;
		if (bit < SP__PERF_REGS_N && sp__perf_regs_dwarf[bit] >= 0) {
			want->r[sp__perf_regs_dwarf[bit]] = vals[i];
			want->valid |= 1ull << sp__perf_regs_dwarf[bit];
		}
		i++;
	}
}

static void test_regs_to_dwarf(void)
{
	const uint64_t masks[] = { SP__PERF_REGS_MASK,
				   0,
				   1,
				   1ull << 63,
				   0x8000000000000001ull,
				   0xaaaaaaaaaaaaaaaaull,
				   0x5555555555555555ull,
				   UINT64_MAX,
				   SP__PERF_REGS_MASK | 1ull << 40 };
	uint64_t vals[64];
	struct sp_regs got, want;
	size_t k;

	for (k = 0; k < 64; k++)
		vals[k] = 0x1000 + 17 * k;
	for (k = 0; k < sizeof(masks) / sizeof(masks[0]); k++) {
		sp__perf_regs_to_dwarf(vals, masks[k], SP_REGS_ABI_64, &got);
		expect_regs(vals, masks[k], SP_REGS_ABI_64, &want);
		CHECK(memcmp(&got, &want, sizeof(got)) == 0);
	}
	/* The mask's first slot goes to the lowest mapped bit. */
	sp__perf_regs_to_dwarf(vals, SP__PERF_REGS_MASK, SP_REGS_ABI_64, &got);
	CHECK(got.valid != 0);
}

int main(void)
{
	test_sample();
	test_hostile_sample();
	test_sideband();
	test_regs_to_dwarf();
	return T_EXIT_PASS;
}
