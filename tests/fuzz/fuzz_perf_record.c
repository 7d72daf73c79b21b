/* SPDX-License-Identifier: MIT */
/* Fuzz target: perf ring records (samples, side-band, switch records). */
#include <string.h>

#include <linux/perf_event.h>

#include "fuzz.h"
#include "perf_event.h"
#include "perf_record.h"

/*
 * The input is one perf record as the kernel would write it into a ring
 * (header included; its size field is forced to the input length, as the
 * ring reader checks it before a parser sees a record), parsed by every
 * parser under both sample types the recorder uses (with and without the
 * kernel callchain). Invariants: no parser reads outside the record
 * (ASan), every pointer a parser returns lies inside it, and a switch
 * record's preempt flag implies a switch out.
 */
#define MAX_RECORD 65536

static unsigned char rec[MAX_RECORD] __attribute__((aligned(8)));

static void inside(const void *p, size_t n, size_t len)
{
	const unsigned char *q = p;

	if (!p)
		return;
	FUZZ_CHECK(q >= rec && q + n <= rec + len);
}

static void parse_all(size_t len, uint64_t st)
{
	struct sp__perf_sample s;
	struct sp__perf_id id;
	struct sp__perf_mmap2 m;
	struct sp__perf_task t;
	struct sp__perf_comm c;
	struct sp__perf_switch sw;
	uint64_t lost;
	uint32_t type;

	if (!sp__perf_parse_sample(rec, len, st, SP__PERF_REGS_MASK, &s)) {
		inside(s.ips, s.nr_ips * 8, len);
		inside(s.stack, s.stack_len, len);
	}
	(void)sp__perf_parse_id(rec, len, st, &id);
	if (!sp__perf_parse_mmap2(rec, len, st, &m))
		inside(m.path, strlen(m.path) + 1, len);
	(void)sp__perf_parse_task(rec, len, &t);
	if (!sp__perf_parse_comm(rec, len, st, &c))
		inside(c.comm, strlen(c.comm) + 1, len);
	(void)sp__perf_parse_lost(rec, len, &lost);
	(void)sp__perf_parse_lost_samples(rec, len, &lost);
	for (type = PERF_RECORD_SWITCH; type <= PERF_RECORD_SWITCH_CPU_WIDE;
	     type++)
		if (!sp__perf_parse_switch(rec, len, type, st, &sw))
			FUZZ_CHECK(!sw.preempt || sw.out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp__perf_cfg cfg;
	struct perf_event_header h;
	uint64_t st;

	if (size < sizeof(h) || size > MAX_RECORD || size > UINT16_MAX)
		return 0;
	memcpy(rec, data, size);
	memcpy(&h, rec, sizeof(h));
	h.size = (uint16_t)size;
	memcpy(rec, &h, sizeof(h));
	memset(&cfg, 0, sizeof(cfg));
	st = sp__perf_sample_type(&cfg);
	parse_all(size, st);
	cfg.kernel = true;
	parse_all(size, sp__perf_sample_type(&cfg));
	return 0;
}
