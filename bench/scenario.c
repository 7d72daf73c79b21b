/* SPDX-License-Identifier: MIT */
/* Deterministic synthetic spool scenarios: modules, stacks and the sample loop. */

/*
 * A generator precomputes two tables:
 *
 *   modules[]  in module-id order: "[kernel]" first (SCN_KERNEL), then
 *              modules_per_process mappings per process, then one spare
 *              slot for the SCN_CHURN replacement mapping;
 *   frames[]   unique_stacks x depth frames, leaf first; stack s belongs to
 *              process s % processes (so 256 stacks split over 3).
 *
 *   stack, leaf first:  [kernel 0..3] [leaf] [middle ...] [4-frame root prefix]
 *
 * The root prefix (_start, main, ...) is the same for every stack of a
 * process, so stacks share prefix-tree nodes as real ones do. The leaf
 * address is derived from the stack number, which makes every stack
 * unique; middle frames are PRNG picks (biased to libpython in Python
 * processes).
 *
 * A run emits every module, the Python-runtime markers, then the samples:
 * sample i goes to the next live thread (round-robin), uses the next stack
 * of that thread's process (each stack once, then PRNG picks) and moves the
 * clock ~1 ms forward with +-1 us of jitter. With SCN_CHURN, at 7/8 of the
 * run module 1 of process 0 is replaced (tag 8, a new module record, and
 * its frames re-pinned to the new id) and at 15/16 the last process exits
 * (tag 7) and is no longer sampled. Runs restore the tables first, so
 * every run emits the same calls.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "scenario.h"

#define SCN_MAX_PROCESSES 4
#define SCN_MAX_MODULES 6
#define SCN_ROOT_PREFIX 4

/* A non-leaf offset stays below this; leaves live above it. */
#define MODULE_LEAF_BASE 0x380000ull
#define MODULE_SPAN 0x400000ull
#define KERNEL_START 0xffffffff81000000ull
#define KERNEL_SPAN 0x1000000ull
#define JIT_BASE 0x7e0000000000ull
#define FIRST_SAMPLE_NS 1000000000000ull
#define SAMPLE_PERIOD_NS 1000000ull
#define JITTER_NS 1000ull

static const struct scenario scenarios[] = {
	{ "hot_stack_reuse", 1, 4, 2, 16, 16, 16384, 0 },
	{ "many_unique_stacks", 2, 6, 2, 4096, 32, 4096, SCN_MARKERS },
	{ "deep_native_stacks", 1, 5, 1, 64, 96, 2048, SCN_TRUNCATED },
	{ "python_kernel_mix", 3, 6, 2, 256, 48, 4096,
	  SCN_KERNEL | SCN_PYTHON | SCN_MARKERS | SCN_CHURN },
	{ SCENARIO_BULK, 1, 4, 8, 64, 16, 10000000, 0 },
};

static const char *const native_paths[SCN_MAX_MODULES] = {
	"/opt/app/bin/server",
	"/usr/lib/x86_64-linux-gnu/libc.so.6",
	"/usr/lib/x86_64-linux-gnu/libm.so.6",
	"/usr/lib/x86_64-linux-gnu/libstdc++.so.6",
	"/usr/lib/x86_64-linux-gnu/libz.so.1",
	"/usr/lib/x86_64-linux-gnu/libssl.so.3",
};

static const char *const python_paths[SCN_MAX_MODULES] = {
	"/usr/bin/python3.12",
	"/usr/lib/x86_64-linux-gnu/libpython3.12.so.1.0",
	"/usr/lib/x86_64-linux-gnu/libc.so.6",
	"/usr/lib/x86_64-linux-gnu/libm.so.6",
	"/usr/lib/python3.12/lib-dynload/_json.cpython-312-x86_64-linux-gnu.so",
	"/usr/lib/x86_64-linux-gnu/libz.so.1",
};

struct scenario_gen {
	const struct scenario *scn;
	uint64_t samples;
	uint32_t first_user_module; /* 1 with a kernel module, else 0 */
	uint32_t nmodules;	    /* module records written at the start */
	uint32_t nthreads;
	struct sp_module *modules; /* nmodules + 1 spare */
	struct sp_frame *frames;

	/* Run state, reset by run_reset(). */
	uint64_t rng;
	uint64_t ts;
	uint32_t live_threads;
	uint32_t next_thread;
	uint32_t next_stack[SCN_MAX_PROCESSES];
	uint32_t remap_from;
	uint32_t remap_to;
	bool remapped;
};

const struct scenario *scenario_get(size_t index)
{
	if (index >= sizeof(scenarios) / sizeof(scenarios[0]))
		return NULL;
	return &scenarios[index];
}

const struct scenario *scenario_find(const char *name)
{
	const struct scenario *scn;
	size_t i;

	for (i = 0; (scn = scenario_get(i)) != NULL; i++)
		if (strcmp(scn->name, name) == 0)
			return scn;
	return NULL;
}

/* splitmix64: tiny, fast, and identical on every platform. */
static uint64_t rng_next(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t rng_seed(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull;

	while (*name)
		h = (h ^ (uint8_t)*name++) * 0x100000001b3ull;
	return h;
}

static int32_t proc_pid(uint32_t p)
{
	return (int32_t)(4200 + 100 * p);
}

/* In a Python scenario every process but the last (native) one is Python. */
static bool proc_is_python(const struct scenario_gen *gen, uint32_t p)
{
	const struct scenario *scn = gen->scn;

	return (scn->flags & SCN_PYTHON) &&
	       (p + 1 < scn->processes || scn->processes == 1);
}

static bool proc_has_markers(const struct scenario_gen *gen, uint32_t p)
{
	if (!(gen->scn->flags & SCN_MARKERS))
		return false;
	if (gen->scn->flags & SCN_PYTHON)
		return proc_is_python(gen, p);
	return p == 0;
}

static uint32_t module_id(const struct scenario_gen *gen, uint32_t p,
			  uint32_t m)
{
	return gen->first_user_module + p * gen->scn->modules_per_process + m;
}

static void init_kernel_module(struct sp_module *mod)
{
	memset(mod, 0, sizeof(*mod));
	mod->start = KERNEL_START;
	mod->end = KERNEL_START + KERNEL_SPAN;
	mod->pid = -1;
	mod->is_kernel = 1;
	mod->path = "[kernel]";
	mod->path_len = strlen(mod->path);
}

/* Executables sit low, libraries high; each mapping spans 4 MiB. */
static void init_user_module(const struct scenario_gen *gen, uint32_t p,
			     uint32_t m, struct sp_module *mod)
{
	const char *const *paths = proc_is_python(gen, p) ? python_paths :
							    native_paths;

	memset(mod, 0, sizeof(*mod));
	if (m == 0)
		mod->start = 0x560000000000ull + ((uint64_t)p << 32);
	else
		mod->start = 0x7f0000000000ull + ((uint64_t)p << 36) +
			     ((uint64_t)m << 28);
	mod->end = mod->start + MODULE_SPAN;
	mod->file_offset = 0x1000ull * (m + 1);
	mod->inode = 1000 + m + (paths == python_paths ? 100 : 0);
	mod->inode_generation = 1;
	mod->dev_major = 8;
	mod->dev_minor = 1;
	mod->pid = proc_pid(p);
	mod->path = paths[m];
	mod->path_len = strlen(mod->path);
}

static void init_modules(struct scenario_gen *gen)
{
	uint32_t p, m;

	if (gen->first_user_module)
		init_kernel_module(&gen->modules[0]);
	for (p = 0; p < gen->scn->processes; p++)
		for (m = 0; m < gen->scn->modules_per_process; m++)
			init_user_module(gen, p, m,
					 &gen->modules[module_id(gen, p, m)]);
}

static void frame_pin(const struct scenario_gen *gen, uint32_t id,
		      uint64_t offset, struct sp_frame *f)
{
	const struct sp_module *mod = &gen->modules[id];

	f->abs_ip = mod->start + offset;
	f->file_relative_ip = mod->file_offset + offset;
	f->module_id = id;
	f->mode = mod->is_kernel ? SP_FRAME_KERNEL : SP_FRAME_USER;
}

static void frame_unpinned(uint64_t abs_ip, enum sp_frame_mode mode,
			   struct sp_frame *f)
{
	f->abs_ip = abs_ip;
	f->file_relative_ip = abs_ip;
	f->module_id = SP_NO_MODULE;
	f->mode = mode;
}

static uint32_t kernel_depth(const struct scenario_gen *gen, uint32_t s)
{
	if (!(gen->scn->flags & SCN_KERNEL) || s % 4 != 0)
		return 0;
	return 1 + (s / 4) % 4;
}

/* Kernel frames: pinned to [kernel], except an unpinned leaf now and then. */
static void kernel_frame(const struct scenario_gen *gen, uint32_t s, uint32_t j,
			 uint64_t r, struct sp_frame *f)
{
	if (j == 0 && s % 32 == 4)
		frame_unpinned(KERNEL_START + 0x200000 + s * 0x10ull,
			       SP_FRAME_KERNEL, f);
	else
		frame_pin(gen, 0, 0x10000 + (r % 0x10000) * 0x40 + 0x5, f);
}

/* The leaf is unique per stack; SCN_CHURN makes some of them JIT code. */
static void leaf_frame(const struct scenario_gen *gen, uint32_t p, uint32_t s,
		       struct sp_frame *f)
{
	uint32_t m = s % gen->scn->modules_per_process;

	if ((gen->scn->flags & SCN_CHURN) && s % 16 == 5)
		frame_unpinned(JIT_BASE + s * 0x40ull + 0x10, SP_FRAME_USER, f);
	else
		frame_pin(gen, module_id(gen, p, m),
			  MODULE_LEAF_BASE + s * 0x40ull + 0x1c, f);
}

static void middle_frame(const struct scenario_gen *gen, uint32_t p, uint64_t r,
			 struct sp_frame *f)
{
	uint32_t m = (uint32_t)(r >> 32) % gen->scn->modules_per_process;

	if (proc_is_python(gen, p) && (r & 0x100))
		m = 1;
	frame_pin(gen, module_id(gen, p, m), 0x1000 + (r % 0x10000) * 0x30 + 7,
		  f);
}

static void build_stack(struct scenario_gen *gen, uint32_t s, uint64_t *rng)
{
	uint32_t depth = gen->scn->depth;
	uint32_t p = s % gen->scn->processes;
	uint32_t nk = kernel_depth(gen, s);
	struct sp_frame *f = gen->frames + (size_t)s * depth;
	uint32_t j;

	for (j = 0; j < depth; j++) {
		uint64_t r = rng_next(rng);

		if ((gen->scn->flags & SCN_TRUNCATED) && s % 8 == 0 &&
		    j == depth - 1)
			frame_unpinned(0, SP_FRAME_TRUNCATED, &f[j]);
		else if (j < nk)
			kernel_frame(gen, s, j, r, &f[j]);
		else if (j == nk)
			leaf_frame(gen, p, s, &f[j]);
		else if (depth - j <= SCN_ROOT_PREFIX)
			frame_pin(gen, module_id(gen, p, 0),
				  0x1000 + (depth - j) * 0x100ull + 0x2b,
				  &f[j]);
		else
			middle_frame(gen, p, r, &f[j]);
	}
}

static bool shape_is_valid(const struct scenario *scn)
{
	return scn->processes >= 1 && scn->processes <= SCN_MAX_PROCESSES &&
	       scn->modules_per_process >= 2 &&
	       scn->modules_per_process <= SCN_MAX_MODULES &&
	       scn->threads_per_process >= 1 && scn->unique_stacks >= 1 &&
	       scn->unique_stacks >= scn->processes &&
	       scn->depth >= SCN_ROOT_PREFIX + 6 && scn->depth <= 1024;
}

int scenario_gen_new(const struct scenario *scn, uint64_t samples,
		     struct scenario_gen **out)
{
	struct scenario_gen *gen;
	uint64_t rng = rng_seed(scn->name);
	uint32_t s;

	if (!shape_is_valid(scn))
		return -EINVAL;
	gen = calloc(1, sizeof(*gen));
	if (!gen)
		return -ENOMEM;
	gen->scn = scn;
	gen->samples = samples ? samples : scn->samples;
	gen->first_user_module = (scn->flags & SCN_KERNEL) ? 1 : 0;
	gen->nmodules = module_id(gen, scn->processes, 0);
	gen->nthreads = scn->processes * scn->threads_per_process;
	gen->modules = calloc(gen->nmodules + 1, sizeof(*gen->modules));
	gen->frames = calloc((size_t)scn->unique_stacks * scn->depth,
			     sizeof(*gen->frames));
	if (!gen->modules || !gen->frames) {
		scenario_gen_free(gen);
		return -ENOMEM;
	}
	init_modules(gen);
	for (s = 0; s < scn->unique_stacks; s++)
		build_stack(gen, s, &rng);
	*out = gen;
	return 0;
}

void scenario_gen_free(struct scenario_gen *gen)
{
	if (!gen)
		return;
	free(gen->frames);
	free(gen->modules);
	free(gen);
}

uint64_t scenario_gen_samples(const struct scenario_gen *gen)
{
	return gen->samples;
}

/* Re-pin frames from module @from to module @to. */
static void repin(struct scenario_gen *gen, uint32_t from, uint32_t to)
{
	size_t n = (size_t)gen->scn->unique_stacks * gen->scn->depth;
	size_t i;

	for (i = 0; i < n; i++)
		if (gen->frames[i].module_id == from)
			gen->frames[i].module_id = to;
}

/* Process @p owns stacks p, p + processes, p + 2 * processes, ... */
static uint32_t proc_stacks(const struct scenario_gen *gen, uint32_t p)
{
	const struct scenario *scn = gen->scn;

	return (scn->unique_stacks - p + scn->processes - 1) / scn->processes;
}

static void run_reset(struct scenario_gen *gen)
{
	if (gen->remapped)
		repin(gen, gen->remap_to, gen->remap_from);
	gen->remapped = false;
	gen->rng = rng_seed(gen->scn->name) ^ 0x5a5a5a5a5a5a5a5aull;
	gen->ts = FIRST_SAMPLE_NS;
	gen->live_threads = gen->nthreads;
	gen->next_thread = 0;
	memset(gen->next_stack, 0, sizeof(gen->next_stack));
}

static int emit_modules(struct scenario_gen *gen,
			const struct scenario_ops *ops, void *ctx)
{
	uint32_t id, got;
	int err;

	for (id = 0; id < gen->nmodules; id++) {
		err = ops->module(ctx, &gen->modules[id], &got);
		if (err)
			return err;
		/* Stack frames name modules by id: ids must be dense. */
		if (got != id)
			return -EPROTO;
	}
	return 0;
}

/* Processes that are still sampled: the exited one is always the last. */
static uint32_t live_processes(const struct scenario_gen *gen)
{
	return gen->live_threads / gen->scn->threads_per_process;
}

static int emit_markers(struct scenario_gen *gen,
			const struct scenario_ops *ops, void *ctx,
			bool is_python_runtime)
{
	uint64_t ts = is_python_runtime ? FIRST_SAMPLE_NS - 500000 :
					  gen->ts + 500000;
	uint32_t p;
	int err;

	for (p = 0; p < live_processes(gen); p++) {
		if (!proc_has_markers(gen, p))
			continue;
		err = ops->python(ctx, ts, proc_pid(p), is_python_runtime);
		if (err)
			return err;
	}
	return 0;
}

/* A new mapping generation replaces module 1 of process 0 (tag 8). */
static int remap_module(struct scenario_gen *gen,
			const struct scenario_ops *ops, void *ctx)
{
	uint32_t old = module_id(gen, 0, 1);
	struct sp_module *repl = &gen->modules[gen->nmodules];
	uint32_t id;
	int err;

	*repl = gen->modules[old];
	repl->inode_generation++;
	err = ops->retire_module(ctx, old);
	if (!err)
		err = ops->module(ctx, repl, &id);
	if (err)
		return err;
	if (id != gen->nmodules)
		return -EPROTO;
	repin(gen, old, id);
	gen->remap_from = old;
	gen->remap_to = id;
	gen->remapped = true;
	return 0;
}

/* The last process exits (tag 7); its threads are no longer sampled. */
static int exit_process(struct scenario_gen *gen,
			const struct scenario_ops *ops, void *ctx)
{
	uint32_t p = gen->scn->processes - 1;
	int err;

	if (proc_has_markers(gen, p)) {
		err = ops->python(ctx, gen->ts, proc_pid(p), false);
		if (err)
			return err;
	}
	gen->live_threads -= gen->scn->threads_per_process;
	gen->next_thread = 0;
	return ops->retire_process(ctx, proc_pid(p));
}

static int emit_events(struct scenario_gen *gen, const struct scenario_ops *ops,
		       void *ctx, uint64_t i)
{
	int err = 0;

	if (i == gen->samples / 8 * 7)
		err = remap_module(gen, ops, ctx);
	if (!err && i == gen->samples / 16 * 15 && gen->scn->processes > 1)
		err = exit_process(gen, ops, ctx);
	return err;
}

static int emit_sample(struct scenario_gen *gen, const struct scenario_ops *ops,
		       void *ctx)
{
	uint32_t tpp = gen->scn->threads_per_process;
	uint32_t t = gen->next_thread;
	uint32_t p = t / tpp;
	uint32_t nstacks = proc_stacks(gen, p);
	uint64_t r = rng_next(&gen->rng);
	uint32_t s;

	if (++gen->next_thread == gen->live_threads)
		gen->next_thread = 0;
	/* Use every stack once before picking at random. */
	if (gen->next_stack[p] < nstacks)
		s = gen->next_stack[p]++;
	else
		s = (uint32_t)(r >> 32) % nstacks;
	s = p + s * gen->scn->processes;
	gen->ts += SAMPLE_PERIOD_NS - JITTER_NS + r % (2 * JITTER_NS + 1);
	return ops->sample(ctx, gen->ts, proc_pid(p),
			   proc_pid(p) + (int32_t)(t % tpp),
			   gen->frames + (size_t)s * gen->scn->depth,
			   gen->scn->depth);
}

int scenario_gen_run(struct scenario_gen *gen, const struct scenario_ops *ops,
		     void *ctx)
{
	bool churn = gen->scn->flags & SCN_CHURN;
	uint64_t i;
	int err;

	run_reset(gen);
	err = emit_modules(gen, ops, ctx);
	if (!err)
		err = emit_markers(gen, ops, ctx, true);
	for (i = 0; !err && i < gen->samples; i++) {
		if (churn)
			err = emit_events(gen, ops, ctx, i);
		if (!err)
			err = emit_sample(gen, ops, ctx);
	}
	if (!err)
		err = emit_markers(gen, ops, ctx, false);
	return err;
}
