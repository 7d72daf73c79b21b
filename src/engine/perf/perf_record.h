/* SPDX-License-Identifier: MIT */
/* Parsing perf ring records (untrusted bytes) into plain structs. */
#ifndef SP_ENGINE_PERF_RECORD_H
#define SP_ENGINE_PERF_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include <stackpulse/unwind.h>

/*
 * Records come from a ring the kernel writes, but they are parsed as
 * hostile input anyway: every length is checked against the record size
 * (a bug or a future kernel layout must not make us read past a record).
 * Parsed structs point into the record bytes; they live as long as those.
 * The layout depends on the attr's sample_type, so the parser is given it.
 */

/*
 * The architecture's user registers in perf's order (asm/perf_regs.h):
 * SP__PERF_REGS_MASK (the attr's sample_regs_user), SP__PERF_REGS_ARCH
 * (the enum sp_arch of the sets) and SP__PERF_REGS_N; meson names the
 * header, perf_regs_<arch>.h, whose .c has sp__perf_regs_dwarf.
 */
#include SP__PERF_REGS_H

/* DWARF number of each perf register index, -1 for those unwinding
 * never uses (perf_regs_<arch>.c). */
extern const int8_t sp__perf_regs_dwarf[SP__PERF_REGS_N];

/** struct sp__perf_sample is one PERF_RECORD_SAMPLE. */
struct sp__perf_sample {
	uint64_t id;
	uint64_t ip;
	int32_t pid;
	int32_t tid;
	uint64_t time;
	uint32_t cpu;
	uint16_t misc;
	uint64_t period;
	const uint64_t *ips; /* callchain (unaligned-safe copy not needed) */
	uint64_t nr_ips;
	struct sp_regs regs; /* DWARF numbering */
	const unsigned char *stack;
	uint64_t stack_len; /* dyn_size (valid bytes) */
};

/** struct sp__perf_id is the sample_id_all trailer of side-band records. */
struct sp__perf_id {
	int32_t pid;
	int32_t tid;
	uint64_t time;
	uint32_t cpu;
	uint64_t id;
};

/** struct sp__perf_mmap2 is one PERF_RECORD_MMAP2. */
struct sp__perf_mmap2 {
	int32_t pid;
	int32_t tid;
	uint64_t addr;
	uint64_t len;
	uint64_t pgoff;
	uint32_t maj;
	uint32_t min;
	uint64_t ino;
	uint64_t ino_generation;
	uint32_t prot;
	uint32_t flags;
	uint16_t misc;
	const char *path; /* NUL-terminated inside the record */
};

/** struct sp__perf_task is PERF_RECORD_FORK / EXIT. */
struct sp__perf_task {
	int32_t pid;
	int32_t ppid;
	int32_t tid;
	int32_t ptid;
	uint64_t time;
};

/** struct sp__perf_comm is PERF_RECORD_COMM. */
struct sp__perf_comm {
	int32_t pid;
	int32_t tid;
	int exec; /* PERF_RECORD_MISC_COMM_EXEC */
	const char *comm;
};

/*
 * struct sp__perf_switch is PERF_RECORD_SWITCH (a task event: its own
 * task) or PERF_RECORD_SWITCH_CPU_WIDE (a CPU event: also the task on
 * the other side of the switch). The sample_id_all trailer names the
 * task switched out (@out) or in, and the time.
 */
struct sp__perf_switch {
	int out;     /* PERF_RECORD_MISC_SWITCH_OUT */
	int preempt; /* switched out while runnable (..._OUT_PREEMPT) */
	int32_t next_prev_pid; /* CPU-wide only, else -1 */
	int32_t next_prev_tid;
	struct sp__perf_id id;
};

/*
 * Converts perf's register array (ascending bits of @mask) into DWARF
 * numbering of the build's architecture. Registers outside the mask stay
 * invalid.
 */
void sp__perf_regs_to_dwarf(const uint64_t *perf_regs, uint64_t mask,
			    uint32_t abi, struct sp_regs *out);

/* Parses a sample. Returns 0 or SP_ECORRUPT. */
int sp__perf_parse_sample(const void *rec, size_t len, uint64_t sample_type,
			  uint64_t regs_mask, struct sp__perf_sample *out);

/* Parses the sample_id_all trailer. Returns 0 or SP_ECORRUPT. */
int sp__perf_parse_id(const void *rec, size_t len, uint64_t sample_type,
		      struct sp__perf_id *out);

/* Record-specific parsers (header included in @rec). 0 or SP_ECORRUPT. */
int sp__perf_parse_mmap2(const void *rec, size_t len, uint64_t sample_type,
			 struct sp__perf_mmap2 *out);
int sp__perf_parse_task(const void *rec, size_t len, struct sp__perf_task *out);
int sp__perf_parse_comm(const void *rec, size_t len, uint64_t sample_type,
			struct sp__perf_comm *out);
/*
 * PERF_RECORD_SWITCH / SWITCH_CPU_WIDE (@type says which); the trailer
 * must carry the tid and the time. 0 or SP_ECORRUPT.
 */
int sp__perf_parse_switch(const void *rec, size_t len, uint32_t type,
			  uint64_t sample_type, struct sp__perf_switch *out);
/* PERF_RECORD_LOST / LOST_SAMPLES: the lost count. 0 or SP_ECORRUPT. */
int sp__perf_parse_lost(const void *rec, size_t len, uint64_t *lost);
int sp__perf_parse_lost_samples(const void *rec, size_t len, uint64_t *lost);

/* Size of the sample_id_all trailer for @sample_type. */
size_t sp__perf_id_size(uint64_t sample_type);

#endif /* SP_ENGINE_PERF_RECORD_H */
