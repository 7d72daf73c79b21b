/* SPDX-License-Identifier: MIT */
/* Fuzz target: sp_unwinder_unwind against an oracle built on the slow steps. */
#define _GNU_SOURCE
#include <inttypes.h>
#include <limits.h>
#include <unistd.h>

#include <stackpulse/unwind.h>

#include "fuzz.h"
#include "image.h"
#include "unwind_internal.h"

/*
 * The unwinder's frame loop (unwinder.c) takes an inline fast path
 * (sp__arch_step_simple, the pc cache, regions, RBX/R12-R15 saves kept
 * pending) and must give exactly what the full step functions give. The
 * oracle below walks the same stack with only sp__arch_step_cfi,
 * sp__arch_step_fp and sp__cfi_table_find, under the walk policy of
 * unwinder.c (walk_can_step, frame_step, step_slow, put_frame, put_marker,
 * walk_end), and every frame and counter must agree.
 *
 * The code is this process's own: its executable mappings, with tables
 * of real optimized CFI (the program, libc, ld.so, the vDSO). Code
 * addresses in the input are (mapping index, offset) pairs, indices in a
 * fixed order (program, libc, ld.so, vDSO, then by path), so seeds
 * mean the same despite ASLR. Input:
 *
 *   | cfg | param | nrec | trim | drop | abi | nrec x record | patches |
 *   record: | map u8 | offset u24 | slack u8 | flags u8 | fill u16 |
 *   patch:  | word index u16 | tagged value u32 |
 *
 * The records are synthesized into a stack that the rows at those pcs
 * would unwind (synth_frame: the CFA the row computes, the return
 * address at its slot, RBP where the row or the frame-pointer chain
 * reads it), so walks go as deep as the records; patches then overwrite
 * words with raw values, code addresses or stack pointers, and the
 * header can shorten the copy, drop a register, change the ABI, pick a
 * small frame array and a small depth limit, or repeat the records (walks
 * longer than the unwinder's 256 pending saves). The copy sits at a fixed
 * sampled address (STACK_ADDR); its bytes live in an exactly sized heap
 * block, so ASan sees overreads.
 */

#define MAX_MAPS 128
#define MAX_RECORDS 128
#define REPEAT 40
#define MAX_PATCHES 64
#define STACK_MAX (256 * 1024)
#define STACK_ADDR 0x7ffc12340000ull
#define UNMAPPED_PC 0x10000ull /* below every mapping */
#define CAP 1024
#define HDR 6
#define UNWRITTEN 0xabababababababa0ull /* oracle_step's poison */
#define REC 8

enum {
	CFG_SMALL_CAP = 0x03,	/* both bits: cap = 1 + (param & 15) */
	CFG_SMALL_DEPTH = 0x0c, /* both bits: a small-depth unwinder */
	CFG_DROP_REG = 0x10,
	CFG_ABI = 0x20,
	CFG_TRIM = 0x40,
	CFG_REPEAT = 0x80,  /* REPEAT rounds of the records */
	REC_END = 0x01,	    /* the caller: an unmapped pc, RBP 0 */
	REC_NO_RA = 0x02,   /* leave the return address slot alone */
	REC_RA_PLUS = 0x04, /* return address + 1: the next pc exact */
};

static const uint32_t small_depths[4] = { 1, 2, 5, 16 };

struct oracle_map {
	struct sp__image *img; /* kept: static state, reachable to LSan */
	const struct sp__cfi_table *table; /* NULL: no usable table */
	uint64_t bias;
	int status;
};

static struct sp_mapping maps[MAX_MAPS];
static struct oracle_map omaps[MAX_MAPS];
static char paths[MAX_MAPS][256];
static size_t nmaps, order[MAX_MAPS];
static struct sp_unwinder *unwinder, *small_unwinders[4];
static struct sp__mem oracle_mem;

/* ---- setup: this process's mappings, tables, unwinders ------------------ */

static void load_maps(void)
{
	char line[1024], perms[8], path[256];
	FILE *f = fopen("/proc/self/maps", "r");
	uint64_t s, e, off, ino;
	unsigned maj, min;

	FUZZ_CHECK(f != NULL);
	while (fgets(line, sizeof(line), f) && nmaps < MAX_MAPS) {
		path[0] = 0;
		if (sscanf(line,
			   "%" SCNx64 "-%" SCNx64 " %7s %" SCNx64
			   " %x:%x %" SCNu64 " %255[^\n]",
			   &s, &e, perms, &off, &maj, &min, &ino, path) < 7)
			continue;
		/* Anonymous code (none expected) and [vsyscall]: no image. */
		if (perms[2] != 'x' || !path[0] || strstr(path, "[vsyscall]"))
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
			.module_id = 100 + (uint32_t)nmaps,
			.flags = strcmp(path, "[vdso]") ? 0 : SP_MAPPING_VDSO,
		};
		nmaps++;
	}
	fclose(f);
	FUZZ_CHECK(nmaps > 0);
}

/* Rank of a mapping in the input's index order (lower first). */
static int map_rank(size_t i, const char *exe)
{
	if (!strcmp(maps[i].path, exe))
		return 0;
	if (strstr(maps[i].path, "/libc.so"))
		return 1;
	if (strstr(maps[i].path, "/ld-linux"))
		return 2;
	return maps[i].flags & SP_MAPPING_VDSO ? 3 : 4;
}

static int cmp_path(const void *a, const void *b)
{
	const struct sp_mapping *x = &maps[*(const size_t *)a],
				*y = &maps[*(const size_t *)b];
	int c = strcmp(x->path, y->path);

	return c ? c : (x->start > y->start) - (x->start < y->start);
}

static void order_maps(void)
{
	char exe[PATH_MAX] = "";
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	size_t i, k = 0, rest = 0;
	int rank;

	if (n > 0)
		exe[n] = 0;
	for (rank = 0; rank <= 4; rank++) {
		if (rank == 4)
			rest = k;
		for (i = 0; i < nmaps; i++)
			if (map_rank(i, exe) == rank)
				order[k++] = i;
	}
	/* The rest by path, not by address: ASLR shuffles libraries. */
	qsort(order + rest, nmaps - rest, sizeof(order[0]), cmp_path);
}

/* The oracle's own image, bias and table of mapping @i (never freed). */
static void oracle_map_open(size_t i)
{
	const struct sp_mapping *m = &maps[i];
	struct oracle_map *o = &omaps[i];
	struct sp__cfi_table *t = NULL;
	struct sp__image *img;
	long page = sysconf(_SC_PAGESIZE);

	o->status = m->flags & SP_MAPPING_VDSO ?
			    sp__image_open_vdso(&oracle_mem, &img) :
			    sp__image_open_path(&oracle_mem, m->path, &img);
	if (o->status)
		return;
	o->img = img;
	o->status = sp__image_bias(img, m->start, m->end, m->file_offset,
				   page > 0 ? (uint64_t)page : 4096, &o->bias);
	if (!o->status) {
		sp__image_lock(img);
		o->status = sp__cfi_table_build(&oracle_mem, sp__image_elf(img),
						&t);
		sp__image_unlock(img);
	}
	o->table = o->status ? NULL : t;
}

static struct sp_unwinder *new_unwinder(uint32_t max_depth)
{
	struct sp_unwinder_opts opts = { .size = sizeof(opts),
					 .max_depth = max_depth };
	struct sp_unwinder *u;

	FUZZ_CHECK(sp_unwinder_new(&opts, &u) == 0);
	return u;
}

static void setup(void)
{
	static bool done;
	size_t i;

	if (done)
		return;
	done = true;
	sp__mem_init(&oracle_mem, NULL);
	load_maps();
	order_maps();
	for (i = 0; i < nmaps; i++)
		oracle_map_open(i);
	unwinder = new_unwinder(0);
}

static struct sp_unwinder *small_unwinder(unsigned k)
{
	if (!small_unwinders[k])
		small_unwinders[k] = new_unwinder(small_depths[k]);
	return small_unwinders[k];
}

/* ---- the oracle walk ---------------------------------------------------- */

static const struct sp_mapping *find_map(uint64_t pc)
{
	size_t i;

	for (i = 0; i < nmaps; i++)
		if (pc >= maps[i].start && pc < maps[i].end)
			return &maps[i];
	return NULL;
}

/*
 * The rule set of @pc and, when none, the fallback reason to count (as
 * region_fill and region_rules decide them); *@table is the table used.
 */
static const struct sp__cfi_rules *
oracle_rules(const struct sp_mapping *m, uint64_t pc,
	     const struct sp__cfi_table **table,
	     enum sp_unwind_fallback *reason)
{
	const struct oracle_map *o;

	*table = NULL;
	*reason = SP_FALLBACK_NO_MODULE;
	if (!m)
		return NULL;
	o = &omaps[m - maps];
	*reason = SP_FALLBACK_NO_MODULE_UNWIND_DATA;
	if (!o->table || !o->table->nrows)
		return NULL;
	*reason = SP_FALLBACK_DWARF_CFI_INDEX_LOOKUP;
	if (o->bias > UINT64_MAX - o->table->base)
		return NULL;
	*table = o->table;
	return sp__cfi_table_find(o->table, pc - o->bias);
}

static void oracle_frame(struct sp_frame *f, const struct sp_mapping *m,
			 uint64_t pc)
{
	bool pinned = m && pc - m->start <= UINT64_MAX - m->file_offset;

	f->abs_ip = pc;
	f->file_relative_ip = pinned ? pc - m->start + m->file_offset : pc;
	f->module_id = pinned ? m->module_id : SP_NO_MODULE;
	f->mode = SP_FRAME_USER;
}

struct oracle {
	struct sp__stack stack;
	struct sp_frame *frames;
	size_t n, cap, limit;
	struct sp_unwind_stats st;
};

/* step_slow of unwinder.c, every step: full CFI step, else frame pointers. */
static int oracle_step(struct oracle *o, const struct sp__cfi_table *table,
		       enum sp_unwind_fallback reason,
		       const struct sp__cfi_rules *row, struct sp_regs *cur,
		       bool *signal)
{
	struct sp__step_fail fail = { 0 }, fp_fail = { 0 };
	struct sp_regs next;
	int ret = -1;

	*signal = false;
	next.r[SP__ARCH_PC] = UNWRITTEN;
	if (row) {
		ret = sp__arch_step_cfi(table, row, &o->stack, cur, &next,
					&fail);
		/* A caller judged (check_next) by a RIP the step never set:
		 * the unwinder's result would depend on stack garbage. */
		FUZZ_CHECK(
			next.r[SP__ARCH_PC] != UNWRITTEN ||
			ret == SP__STEP_END ||
			(ret < 0 &&
			 fail.fallback != SP_FALLBACK_DWARF_DID_NOT_ADVANCE &&
			 fail.fallback !=
				 SP_FALLBACK_DWARF_SP_MOVED_BACKWARDS));
		*signal = ret >= 0 && (row->flags & SP__ROW_SIGNAL);
		if (ret < 0 && fail.error == SP_SAMPLE_ERR_STACK_TRUNCATED) {
			o->st.errors[fail.error]++;
			return -1;
		}
		reason = fail.fallback;
	}
	if (ret < 0) {
		ret = sp__arch_step_fp(&o->stack, cur, &next, &fp_fail);
		if (ret < 0) {
			o->st.errors[row ? fail.error : fp_fail.error]++;
			return -1;
		}
		o->st.fallbacks[reason] += ret == 0;
	}
	if (ret == 0)
		*cur = next;
	return ret;
}

/* The frame loop: SP__STEP_END, 0 at the depth limit, -1 on an error. */
static int oracle_frames(struct oracle *o, const struct sp_regs *regs)
{
	const struct sp__cfi_table *table;
	const struct sp__cfi_rules *row;
	enum sp_unwind_fallback reason;
	const struct sp_mapping *m;
	struct sp_regs cur = *regs;
	uint64_t pc = cur.r[SP__ARCH_PC], back = 0;
	bool signal;
	int ret;

	for (;;) {
		m = find_map(pc);
		oracle_frame(&o->frames[o->n++], m, pc);
		row = oracle_rules(m, pc, &table, &reason);
		/* A signal trampoline is reported at its return address. */
		if (row && (row->flags & SP__ROW_SIGNAL) && back &&
		    pc + back - m->start < m->end - m->start)
			oracle_frame(&o->frames[o->n - 1], m, pc + back);
		ret = oracle_step(o, table, reason, row, &cur, &signal);
		if (ret != 0)
			return ret;
		if (o->n >= o->limit)
			return 0;
		/* Leaf exact; callers at the call site unless a signal. */
		back = signal ? 0 : 1;
		pc = cur.r[SP__ARCH_PC] - back;
	}
}

static bool oracle_can_step(struct oracle *o, const struct sp_regs *regs)
{
	enum sp_sample_error error;
	uint64_t pc = regs->r[SP__ARCH_PC];

	if (sp__arch_check_regs(regs, &error)) {
		o->st.errors[error]++;
		return false;
	}
	if (o->stack.len == 0) {
		oracle_frame(&o->frames[o->n++], find_map(pc), pc);
		o->st.errors[SP_SAMPLE_ERR_STACK_READ]++;
		return false;
	}
	return true;
}

/* walk_end and put_marker: the marker replaces a last frame at the cap. */
static void oracle_walk(struct oracle *o, const struct sp_regs *regs)
{
	struct sp_frame *f;
	int ret = oracle_can_step(o, regs) ? oracle_frames(o, regs) : -1;

	if (ret == SP__STEP_END)
		goto out_counted;
	/* The depth limit is the reason of a stack it cut. */
	if (ret == 0)
		o->st.errors[SP_SAMPLE_ERR_DEPTH_LIMIT]++;
	if (o->n == o->cap)
		o->n--;
	f = &o->frames[o->n++];
	*f = (struct sp_frame){ .module_id = SP_NO_MODULE,
				.mode = SP_FRAME_TRUNCATED };
	o->st.truncated++;
out_counted:
	o->st.samples = 1;
	o->st.frames = o->n - (o->st.truncated ? 1 : 0);
}

/* ---- the input: a synthesized stack ------------------------------------- */

/*
 * The build's rule sets: the frame pointer's slot, the rows a frame can
 * be laid out for (not the RA-in-X30 rows of AArch64, whose caller needs
 * the link register), and whether a frame-pointer step leaves SP a guess
 * that the next SP-relative row recovers through X29 (AArch64).
 */
#if defined(__aarch64__)
static int8_t row_fp(const struct sp__cfi_rules *row)
{
	return row->fp;
}
#define ROW_NO_SYNTH                                                           \
	(SP__ROW_EXTRA | SP__ROW_RA_UNDEF | SP__ROW_SIGNAL | SP__ROW_RA_LR)
#define FP_STEP_GUESSES_SP true
#else
static int8_t row_fp(const struct sp__cfi_rules *row)
{
	return row->rbp;
}
#define ROW_NO_SYNTH (SP__ROW_EXTRA | SP__ROW_RA_UNDEF | SP__ROW_SIGNAL)
#define FP_STEP_GUESSES_SP false
#endif

struct synth {
	uint8_t *buf; /* STACK_MAX bytes at STACK_ADDR */
	size_t len;   /* bytes written up to: the copy's length */
	uint64_t sp;  /* the frame's RSP */
	struct sp_regs regs;
	/* Where the frame's RBP comes from: buf offset, RBP_IN_REGS (the
	 * leaf's register) or RBP_FIXED (already used, cannot change). */
	int64_t rbp_from;
	bool after_fp; /* the frame was reached by a frame-pointer step */
};

#define RBP_IN_REGS (-1)
#define RBP_FIXED (-2)

/* Mapping @k of the input's order, offset @off into it; or unmapped. */
static uint64_t code_addr(unsigned k, uint32_t off)
{
	const struct sp_mapping *m;

	if (k >= 0xf0)
		return UNMAPPED_PC + off % 0x1000;
	m = &maps[order[k % nmaps]];
	return m->start + off % (m->end - m->start);
}

static uint64_t rd32(const uint8_t *p)
{
	return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 |
	       (uint64_t)p[3] << 24;
}

static void put(struct synth *s, uint64_t addr, uint64_t v)
{
	uint64_t off = addr - STACK_ADDR;

	if (addr < STACK_ADDR || off > STACK_MAX - 8)
		return;
	memcpy(s->buf + off, &v, 8);
	if (off + 8 > s->len)
		s->len = off + 8;
}

/* Gives the frame's RBP the value @v, where it is still open. */
static void set_rbp(struct synth *s, uint64_t v)
{
	if (s->rbp_from == RBP_IN_REGS)
		s->regs.r[SP__ARCH_FP] = v;
	else if (s->rbp_from >= 0)
		put(s, STACK_ADDR + (uint64_t)s->rbp_from, v);
	s->rbp_from = RBP_FIXED;
}

/* A frame-pointer record at RBP = sp + 8 * slack: [RBP] RBP', [RBP+8] RA. */
static void synth_fp(struct synth *s, const uint8_t *rec, uint64_t ra)
{
	uint64_t bp = s->sp + 8 * (uint64_t)(rec[4] & 31);

	set_rbp(s, bp);
	if (!(rec[5] & REC_NO_RA))
		put(s, bp + 8, ra);
	s->rbp_from = (int64_t)(bp - STACK_ADDR);
	s->sp = bp + 16;
	s->after_fp = true;
}

/* The deepest slot below the CFA that @saves names, in words. */
static uint64_t max_save(uint64_t saves)
{
	uint64_t n = 0;

	for (; saves; saves >>= SP__SAVE_BITS)
		if ((saves & SP__SAVE_MAX) > n)
			n = saves & SP__SAVE_MAX;
	return n;
}

/*
 * The frame of record @rec whose pc has rule set @row (simple, RA
 * defined, CFA from RSP or RBP): saves, return address @ra and RBP slots
 * around the CFA; returns false for the rows it cannot lay out.
 */
static bool synth_cfi(struct synth *s, const struct sp__cfi_rules *row,
		      const uint8_t *rec, uint64_t ra)
{
	uint64_t cfa, fill = rec[6] | (uint64_t)rec[7] << 8;
	uint64_t saves;
	unsigned n;

	if (row->flags & ROW_NO_SYNTH)
		return false;
	if (FP_STEP_GUESSES_SP && s->after_fp && row->cfa_reg == SP__ARCH_SP &&
	    (row->flags & SP__ROW_FP_SAVED)) {
		/* SP is a guess: the CFA comes from X29, its own slot. */
		cfa = s->sp + 8 * (max_save(row->saves) + 2 + (rec[4] & 31));
		set_rbp(s, cfa + 8 * (uint64_t)(int64_t)row_fp(row));
	} else if (row->cfa_reg == SP__ARCH_SP && row->cfa_off > 0) {
		cfa = s->sp + (uint64_t)row->cfa_off;
	} else if (row->cfa_reg == SP__ARCH_FP) {
		cfa = s->sp + 8 * (max_save(row->saves) + 2 + (rec[4] & 31));
		set_rbp(s, cfa - (uint64_t)(int64_t)row->cfa_off);
	} else {
		return false;
	}
	for (saves = row->saves; saves; saves >>= SP__SAVE_BITS, fill++)
		if ((n = saves & SP__SAVE_MAX) && cfa - 8 * n >= s->sp)
			put(s, cfa - 8 * n, STACK_ADDR + 8 * (fill & 0xff));
	if (!(rec[5] & REC_NO_RA))
		put(s, cfa + 8 * (uint64_t)(int64_t)row->ra, ra);
	if (row->flags & SP__ROW_FP_SAVED) {
		put(s, cfa + 8 * (uint64_t)(int64_t)row_fp(row), 0);
		s->rbp_from =
			(int64_t)(cfa + 8 * (uint64_t)(int64_t)row_fp(row) -
				  STACK_ADDR);
	} else if (row->flags & SP__ROW_FP_UNDEF) {
		s->rbp_from = RBP_FIXED;
	}
	s->sp = cfa;
	s->after_fp = false;
	return true;
}

/* Lays out the frame of @rec, whose pc is @pc, returning to @ra. */
static void synth_frame(struct synth *s, const uint8_t *rec, uint64_t pc,
			uint64_t ra)
{
	const struct sp__cfi_table *table;
	const struct sp__cfi_rules *row;
	enum sp_unwind_fallback reason;

	row = oracle_rules(find_map(pc), pc, &table, &reason);
	if (row && synth_cfi(s, row, rec, ra))
		return;
	synth_fp(s, rec, ra);
}

/* The caller's return address named by record @next (NULL: the last). */
static uint64_t next_ra(const uint8_t *rec, const uint8_t *next)
{
	uint64_t ra;

	if (!next || (rec[5] & REC_END))
		return UNMAPPED_PC + 0x800;
	ra = code_addr(next[0], (uint32_t)rd32(next + 1) & 0xffffff);
	return ra + !!(rec[5] & REC_RA_PLUS);
}

/*
 * The frames of the @nrec records, or with CFG_REPEAT of REPEAT rounds of
 * them (deeper than the unwinder's PENDING_SAVES), until the copy is full.
 */
static void synth_records(struct synth *s, const uint8_t *recs, size_t nrec,
			  bool repeat)
{
	size_t i, total = repeat ? REPEAT * nrec : nrec;
	uint64_t pc, ra;

	pc = code_addr(recs[0], (uint32_t)rd32(recs + 1) & 0xffffff);
	s->regs.r[SP__ARCH_PC] = pc;
	for (i = 0; i < total && s->sp - STACK_ADDR < STACK_MAX; i++) {
		const uint8_t *rec = recs + REC * (i % nrec);

		ra = next_ra(rec, i + 1 < total ?
					  recs + REC * ((i + 1) % nrec) :
					  NULL);
		synth_frame(s, rec, pc, ra);
		if (rec[5] & REC_END) {
			set_rbp(s, 0); /* the frame-pointer chain's end */
			break;
		}
		pc = ra - 1;
	}
}

/* A patch value: raw, a code address or a pointer into the copy. */
static uint64_t patch_value(uint32_t v)
{
	switch (v & 3) {
	case 0:
		return v >> 2;
	case 1:
		return code_addr((v >> 2) & 15, v >> 6);
	case 2:
		return STACK_ADDR + ((v >> 2) & 0xffff);
	default:
		return 0;
	}
}

static void synth_patches(struct synth *s, const uint8_t *p, size_t size)
{
	size_t i, word;

	for (i = 0; i < MAX_PATCHES && size - 6 * i >= 6; i++, p += 6) {
		if (s->len < 8)
			return;
		word = (p[0] | (size_t)p[1] << 8) % (s->len / 8);
		put(s, STACK_ADDR + 8 * word,
		    patch_value((uint32_t)rd32(p + 2)));
	}
}

/* Registers and stack of the input; the caller frees s->buf. */
static void synth_input(struct synth *s, const uint8_t *data, size_t size)
{
	size_t nrec = data[2] % (MAX_RECORDS + 1), i;

	if (nrec > (size - HDR) / REC)
		nrec = (size - HDR) / REC;
	memset(s, 0, sizeof(*s));
	s->buf = calloc(1, STACK_MAX);
	FUZZ_CHECK(s->buf != NULL);
	s->sp = STACK_ADDR;
	s->rbp_from = RBP_IN_REGS;
	s->regs.valid = (1ull << SP__ARCH_NREGS) - 1;
	s->regs.abi = SP_REGS_ABI_64;
	for (i = 0; i < SP__ARCH_NREGS; i++)
		s->regs.r[i] = STACK_ADDR + 8 * i;
	s->regs.r[SP__ARCH_SP] = STACK_ADDR;
	s->regs.r[SP__ARCH_FP] = 0;
	s->regs.r[SP__ARCH_PC] = code_addr(0, 0);
	if (nrec)
		synth_records(s, data + HDR, nrec, data[0] & CFG_REPEAT);
	synth_patches(s, data + HDR + REC * nrec, size - HDR - REC * nrec);
	if (data[0] & CFG_TRIM)
		s->len -= s->len < data[3] ? s->len : data[3];
	if (data[0] & CFG_DROP_REG)
		s->regs.valid &= ~(1ull << (data[4] % SP__ARCH_NREGS));
	if (data[0] & CFG_ABI)
		s->regs.abi = data[5] % 3;
}

/* ---- the comparison ----------------------------------------------------- */

static void compare(const struct sp_frame *a, int n,
		    const struct sp_unwind_stats *sa, const struct oracle *o)
{
	uint64_t reasons = 0;
	int i;

	FUZZ_CHECK(n >= 1 && (size_t)n == o->n);
	for (i = 0; i < n; i++) {
		FUZZ_CHECK(a[i].abs_ip == o->frames[i].abs_ip);
		FUZZ_CHECK(a[i].mode == o->frames[i].mode);
		FUZZ_CHECK(a[i].file_relative_ip ==
			   o->frames[i].file_relative_ip);
		FUZZ_CHECK(a[i].module_id == o->frames[i].module_id);
	}
	FUZZ_CHECK(sa->samples == 1 && sa->frames == o->st.frames &&
		   sa->truncated == o->st.truncated);
	for (i = 0; i < SP_SAMPLE_ERR_COUNT; i++) {
		FUZZ_CHECK(sa->errors[i] == o->st.errors[i]);
		reasons += sa->errors[i];
	}
	/* Each truncated stack has its one reason. */
	FUZZ_CHECK(reasons == sa->truncated);
	for (i = 0; i < SP_FALLBACK_COUNT; i++)
		FUZZ_CHECK(sa->fallbacks[i] == o->st.fallbacks[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sp_unwinder *u;
	struct sp_unwind_stats st = { 0 };
	struct oracle o = { 0 };
	struct sp_frame *frames;
	struct synth s;
	uint32_t depth = 1024;
	uint8_t *stack;
	int n;

	if (size < HDR)
		return 0;
	setup();
	synth_input(&s, data, size);
	stack = fuzz_dup(s.buf, s.len);
	free(s.buf);
	o.cap = (data[0] & CFG_SMALL_CAP) == CFG_SMALL_CAP ?
			1 + (data[1] & 15) :
			CAP;
	u = unwinder;
	if ((data[0] & CFG_SMALL_DEPTH) == CFG_SMALL_DEPTH) {
		u = small_unwinder((data[1] >> 4) & 3);
		depth = small_depths[(data[1] >> 4) & 3];
	}
	o.limit = depth < o.cap ? depth : o.cap;
	o.stack = (struct sp__stack){ stack, s.len, STACK_ADDR };
	frames = calloc(o.cap, sizeof(*frames));
	o.frames = calloc(o.cap, sizeof(*frames));
	FUZZ_CHECK(frames && o.frames);
	n = sp_unwinder_unwind(u, &s.regs, stack, s.len, STACK_ADDR, maps,
			       nmaps, frames, o.cap, &st);
	oracle_walk(&o, &s.regs);
	compare(frames, n, &st, &o);
	free(o.frames);
	free(frames);
	free(stack);
	return 0;
}
