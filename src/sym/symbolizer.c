/* SPDX-License-Identifier: MIT */
/* The Symbolizer: options, resolution order per frame, cached frame and stack resolve. */

/*
 * Resolution of one raw frame as seen by one process
 * (research/stackpulse-features.md §1.10):
 *
 *   truncation marker  -> "<stack truncated>", TRUNCATED_STACK, pc 0
 *   kernel mode        -> kernel symbols, else "[kernel]+0x<abs>"
 *   user mode          -> module context from the spool (SPULSE3 §6), then
 *     perf map         if allowed for the pid and the module is unknown or
 *                      anonymous (a hit never overrides a file-backed one)
 *     native           file-backed module: the caller's plug-in (batched
 *                      per resolve call) or the built-in ELF/DWARF backend
 *     address-only     "<basename>+0x<ELF virtual address>" (the file
 *                      offset when the file cannot be read), or
 *                      "<0x<abs>>" when no module owns the address
 *
 * Hits are served from the shared cache without locks (sym_cache.c);
 * misses take sym->lock, so table builds, image opens and perf-map loads
 * are serialized and each (pid, frame) is computed once.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "hash.h"
#include "opts.h"
#include "symbolizer_internal.h"
#include "utf8.h"

/* Module context of a user frame, gathered once per miss. */
struct user_ctx {
	struct sp_frame frame;
	struct sp_frame_context fc;
	struct sp_module mod;
	bool has_mod;
};

static int read_opts(const struct sp_symbolizer_opts *opts,
		     struct sp_symbolizer_opts *o)
{
	int err = sp__opts_load(opts, opts ? opts->size : 0, o, sizeof(*o));

	if (err)
		return err;
	if (o->flags & ~(SP_SYMBOLIZER_NO_PERF_MAPS | SP_SYMBOLIZER_NO_KERNEL |
			 SP_SYMBOLIZER_NO_INLINE | SP_SYMBOLIZER_NO_LINES |
			 SP_SYMBOLIZER_NO_DEMANGLE | SP_SYMBOLIZER_NO_JIT))
		return -EINVAL;
	if (o->perf_map_pid_count && !o->perf_map_pids)
		return -EINVAL;
	if (o->native && !o->native->lookup)
		return -EINVAL;
	if (o->stack_cache > SP_STACK_CACHE_EXTERNAL)
		return -EINVAL;
	return 0;
}

static int copy_str(struct sp_symbolizer *sym, const char *s, const char **out)
{
	*out = NULL;
	if (!s)
		return 0;
	*out = sp__arena_strndup(&sym->arena, &sym->mem, s, strlen(s));
	return *out ? 0 : -ENOMEM;
}

static int cmp_pid(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;

	return (x > y) - (x < y);
}

static int copy_opts(struct sp_symbolizer *sym,
		     const struct sp_symbolizer_opts *o)
{
	const char *dirs = o->debug_dirs;
	size_t n = o->perf_map_pid_count;
	int err;

	sym->logger = o->logger;
	sym->flags = o->flags;
	sym->stack_cache = o->stack_cache;
	if (o->native) {
		sym->plugin = *o->native;
		sym->has_plugin = true;
	}
	if (!dirs)
		dirs = getenv("STACKPULSE_DEBUG_DIRS");
	err = copy_str(sym, o->perf_map_dir ? o->perf_map_dir : "/tmp",
		       &sym->perf_map_dir);
	if (!err)
		err = copy_str(sym, o->jit_dir, &sym->jit_dir);
	if (!err)
		err = copy_str(sym, o->kallsyms_path, &sym->kallsyms_path);
	if (!err)
		err = copy_str(sym, dirs ? dirs : "/usr/lib/debug",
			       &sym->debug_dirs);
	if (!err)
		err = sp__sym_jit_new(sym, sym->jit_dir);
	if (err || !n)
		return err;
	sym->perf_map_pids =
		sp__arena_alloc(&sym->arena, &sym->mem, n * sizeof(int32_t));
	if (!sym->perf_map_pids)
		return -ENOMEM;
	memcpy(sym->perf_map_pids, o->perf_map_pids, n * sizeof(int32_t));
	qsort(sym->perf_map_pids, n, sizeof(int32_t), cmp_pid);
	sym->perf_map_pid_count = n;
	return 0;
}

static void init_state(struct sp_symbolizer *sym)
{
	sp__arena_init(&sym->arena);
	sp__vec_init(&sym->modules, sizeof(struct sp__sym_module));
	sp__map_init(&sym->native_index);
	sp__vec_init(&sym->natives, sizeof(struct sp__sym_native));
	sp__map_init(&sym->pid_index);
	sp__vec_init(&sym->pids, sizeof(struct sp__sym_pid));
	sp__vec_init(&sym->miss_ids, sizeof(uint32_t));
	sp__vec_init(&sym->batch, sizeof(struct sp_native_lookup));
	sp__vec_init(&sym->batch_mods, sizeof(struct sp_module));
	sp__vec_init(&sym->batch_ids, sizeof(uint32_t));
	sp__vec_init(&sym->batch_out, sizeof(struct sp_resolved_frame));
	sp__vec_init(&sym->retire_pids, sizeof(int32_t));
	sp__vec_init(&sym->retire_modules, sizeof(uint32_t));
	sp__vec_init(&sym->invalid_pids, sizeof(int32_t));
	sym->vdso_err = 1; /* not tried */
	sym->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
}

static int setup(struct sp_symbolizer *sym, const struct sp_symbolizer_opts *o)
{
	int err;

	err = copy_opts(sym, o);
	if (err)
		return err;
	err = sp__image_cache_new(&sym->mem, &sym->images);
	if (err)
		return err;
	err = sp__sym_cache_init(&sym->cache, &sym->mem);
	if (err)
		return err;
	sym->cache_ready = true;
	err = sp__sym_scan_generations(sym);
	if (err)
		return err;
	sym->modules_seen = sp_spool_module_count(sym->spool);
	if (!sym->kallsyms_path || (sym->flags & SP_SYMBOLIZER_NO_KERNEL))
		return 0;
	/* An explicit file is loaded now so a missing one fails here. */
	sym->ksyms_loaded = true;
	return sp__ksyms_load(&sym->mem, sym->kallsyms_path, NULL, 0,
			      sym->logger, &sym->ksyms);
}

int sp__sym_new(const struct sp_spool *spool, const struct sp_module *mods,
		size_t n, const struct sp_symbolizer_opts *opts,
		struct sp_symbolizer **out)
{
	struct sp_symbolizer_opts o;
	struct sp__mem mem;
	struct sp_symbolizer *sym;
	int err;

	err = read_opts(opts, &o);
	if (err)
		return err;
	sp__mem_init(&mem, o.allocator);
	sym = sp__mem_calloc(&mem, 1, sizeof(*sym));
	if (!sym)
		return -ENOMEM;
	sym->mem = mem;
	sym->spool = spool;
	init_state(sym);
	err = pthread_mutex_init(&sym->lock, NULL);
	if (err) {
		sp__mem_free(&mem, sym, sizeof(*sym));
		return -err;
	}
	if (!spool)
		err = sp__sym_table_init(sym, mods, n);
	if (!err)
		err = setup(sym, &o);
	if (err) {
		sp_symbolizer_free(sym);
		return err;
	}
	*out = sym;
	return 0;
}

SP_API int sp_symbolizer_new(const struct sp_spool *spool,
			     const struct sp_symbolizer_opts *opts,
			     struct sp_symbolizer **out)
{
	if (!spool || !out)
		return -EINVAL;
	return sp__sym_new(spool, NULL, 0, opts, out);
}

static void free_backends(struct sp_symbolizer *sym)
{
	size_t i;

	for (i = 0; i < sym->natives.len; i++) {
		struct sp__sym_native *n = sp__vec_at(&sym->natives, i);

		sp__native_free(n->native);
		sp__image_unref(n->img);
	}
	for (i = 0; i < sym->modules.len; i++) {
		struct sp__sym_module *m = sp__vec_at(&sym->modules, i);

		if (m->img)
			sp__image_unref(m->img);
	}
	for (i = 0; i < sym->pids.len; i++)
		sp__sym_pid_fini(sym, sp__vec_at(&sym->pids, i));
	if (sym->vdso)
		sp__image_unref(sym->vdso);
	sp__ksyms_free(sym->ksyms);
	sp__image_cache_free(sym->images);
}

SP_API void sp_symbolizer_free(struct sp_symbolizer *sym)
{
	struct sp__mem mem;

	if (!sym)
		return;
	mem = sym->mem;
	if (sym->cache_ready)
		sp__sym_cache_fini(&sym->cache);
	free_backends(sym);
	sp__sym_jit_free(sym);
	sp__vec_fini(&sym->modules, &mem);
	sp__map_fini(&sym->native_index, &mem);
	sp__vec_fini(&sym->natives, &mem);
	sp__map_fini(&sym->pid_index, &mem);
	sp__vec_fini(&sym->pids, &mem);
	sp__vec_fini(&sym->miss_ids, &mem);
	sp__vec_fini(&sym->batch, &mem);
	sp__vec_fini(&sym->batch_mods, &mem);
	sp__vec_fini(&sym->batch_ids, &mem);
	sp__vec_fini(&sym->batch_out, &mem);
	sp__vec_fini(&sym->retire_pids, &mem);
	sp__vec_fini(&sym->retire_modules, &mem);
	sp__vec_fini(&sym->invalid_pids, &mem);
	sp__arena_fini(&sym->arena, &mem);
	/* Last: cached entries and modules borrowed its module paths. */
	sp__sym_table_fini(sym);
	pthread_mutex_destroy(&sym->lock);
	sp__mem_free(&mem, sym, sizeof(*sym));
}

struct sp__sym_pid *sp__sym_pid_state(struct sp_symbolizer *sym, int32_t pid,
				      bool create)
{
	uint64_t key[3] = { (uint64_t)(uint32_t)pid, 0, 0 };
	uint64_t h = sp__map_hash(key);
	struct sp__sym_pid p = { .pid = pid };
	uint32_t idx;

	sp__vec_init(&p.gens, sizeof(struct sp__sym_gen));

	if (sp__map_get(&sym->pid_index, key, h, &idx))
		return sp__vec_at(&sym->pids, idx);
	if (!create)
		return NULL;
	if (sp__vec_reserve(&sym->pids, &sym->mem, 1) ||
	    sp__map_put(&sym->pid_index, &sym->mem, key, h,
			(uint32_t)sym->pids.len))
		return NULL;
	sp__vec_push(&sym->pids, &sym->mem, &p);
	return sp__vec_at(&sym->pids, sym->pids.len - 1);
}

/* ---- building one chain into sym->chain ---- */

static void set_plain(struct sp_resolved_frame *f, const char *name,
		      uint32_t kind)
{
	memset(f, 0, sizeof(*f));
	f->name = name;
	f->kind = kind;
	f->origin = SP_ORIGIN_ADDRESS_ONLY;
}

static int marker_chain(struct sp_symbolizer *sym)
{
	set_plain(&sym->chain[0], "<stack truncated>", SP_RESOLVED_UNKNOWN);
	sym->chain[0].flags = SP_RESOLVED_TRUNCATED_STACK;
	sym->chain[0].module_id = SP_NO_MODULE;
	return 1;
}

/* An off-CPU pseudo-frame (spool.h): its name says how the thread left. */
static int off_cpu_chain(struct sp_symbolizer *sym, int how)
{
	set_plain(&sym->chain[0],
		  how == 2 ? "[off-cpu:preempted]" : "[off-cpu]",
		  SP_RESOLVED_UNKNOWN);
	sym->chain[0].flags = SP_RESOLVED_OFF_CPU;
	sym->chain[0].module = SP_OFF_CPU_MODULE;
	return 1;
}

static int kernel_chain(struct sp_symbolizer *sym, uint64_t abs_ip)
{
	const struct sp__ksyms *ks = NULL;
	struct sp_resolved_frame *f = &sym->chain[0];

	if (!(sym->flags & SP_SYMBOLIZER_NO_KERNEL))
		ks = sp__sym_ksyms(sym);
	memset(f, 0, sizeof(*f));
	if (ks && sp__ksyms_lookup(ks, abs_ip, f) == 1)
		return 1;
	sp__sym_address_name(sym->name_buf, sizeof(sym->name_buf), "[kernel]",
			     abs_ip);
	set_plain(f, sym->name_buf, SP_RESOLVED_KERNEL);
	f->module = "[kernel]";
	return 1;
}

static bool is_file_backed(const struct user_ctx *u)
{
	return u->has_mod && u->mod.path && u->mod.path[0] &&
	       !sp__sym_is_pseudo_path(u->mod.path);
}

static bool module_svma(const struct sp__sym_module *ms,
			const struct user_ctx *u, uint64_t *svma);

/*
 * The address of an address-only name: the ELF virtual address, the one
 * objdump, addr2line and gdb take (in a non-PIE executable the runtime
 * address too, as perf prints it, not the file offset), when the module's
 * file was opened (native_chain or the plug-in batch did that); else
 * the file offset, all the spool knows.
 */
static uint64_t address_only_ip(const struct sp_symbolizer *sym,
				const struct user_ctx *u)
{
	const struct sp__sym_module *ms;
	uint64_t svma;

	if (!is_file_backed(u) || u->fc.module_id >= sym->modules.len)
		return u->fc.file_relative_ip;
	ms = sp__vec_at(&sym->modules, u->fc.module_id);
	return module_svma(ms, u, &svma) ? svma : u->fc.file_relative_ip;
}

static int address_chain(struct sp_symbolizer *sym, const struct user_ctx *u)
{
	struct sp_resolved_frame *f = &sym->chain[0];

	if (!u->has_mod || !u->mod.path || !u->mod.path[0]) {
		sp__sym_unknown_name(sym->name_buf, sizeof(sym->name_buf),
				     u->frame.abs_ip);
		set_plain(f, sym->name_buf, SP_RESOLVED_UNKNOWN);
		return 1;
	}
	sp__sym_address_name(sym->name_buf, sizeof(sym->name_buf),
			     sp__sym_basename(u->mod.path),
			     address_only_ip(sym, u));
	set_plain(f, sym->name_buf, SP_RESOLVED_NATIVE);
	f->module = u->mod.path;
	return 1;
}

static bool perf_map_allowed(const struct sp_symbolizer *sym, int32_t pid)
{
	if (sym->flags & SP_SYMBOLIZER_NO_PERF_MAPS)
		return false;
	if (!sym->perf_map_pids)
		return true;
	return bsearch(&pid, sym->perf_map_pids, sym->perf_map_pid_count,
		       sizeof(int32_t), cmp_pid) != NULL;
}

static int perf_map_chain(struct sp_symbolizer *sym, const struct user_ctx *u,
			  uint32_t frame_id, int32_t pid)
{
	const struct sp__perf_map *map;

	if (!perf_map_allowed(sym, pid))
		return 0;
	if (u->has_mod && !sp__perf_map_eligible(u->mod.path))
		return 0;
	map = sp__sym_gen_perf_map(sym, pid, frame_id,
				   u->has_mod ? &u->mod : NULL);
	if (!map)
		return 0;
	memset(&sym->chain[0], 0, sizeof(sym->chain[0]));
	return sp__perf_map_lookup(map, u->frame.abs_ip, &sym->chain[0]) == 1;
}

/* JIT code names from jitdump files (sym_jit.c), same eligibility. */
static int jit_chain(struct sp_symbolizer *sym, const struct user_ctx *u,
		     uint32_t frame_id, int32_t pid)
{
	if (u->has_mod && !sp__perf_map_eligible(u->mod.path) &&
	    !sp__sym_jit_module(&u->mod))
		return 0;
	return sp__sym_jit_chain(sym, pid, frame_id, u->frame.abs_ip,
				 u->has_mod ? &u->mod : NULL);
}

static int gather_user(struct sp_symbolizer *sym, uint32_t frame_id,
		       int32_t pid, struct user_ctx *u)
{
	int err = sp_spool_resolve(sym->spool, frame_id, pid, &u->fc);

	if (err)
		return err;
	u->frame = u->fc.frame;
	u->has_mod = u->fc.module_id != SP_NO_MODULE &&
		     sp_spool_module(sym->spool, u->fc.module_id, &u->mod) == 0;
	return 0;
}

/* ---- native: images, per-image backends, per-module bias ---- */

static struct sp__sym_module *module_state(struct sp_symbolizer *sym,
					   uint32_t id)
{
	size_t need = (size_t)id + 1;

	if (need > sym->modules.len) {
		if (sp__vec_reserve(&sym->modules, &sym->mem,
				    need - sym->modules.len))
			return NULL;
		memset(sp__vec_at(&sym->modules, sym->modules.len), 0,
		       (need - sym->modules.len) * sym->modules.elem);
		sym->modules.len = need;
	}
	return sp__vec_at(&sym->modules, id);
}

static int open_vdso(struct sp_symbolizer *sym, struct sp__image **out)
{
	if (sym->vdso_err == 1)
		sym->vdso_err = sp__image_open_vdso(&sym->mem, &sym->vdso);
	if (sym->vdso_err)
		return sym->vdso_err;
	sp__image_ref(sym->vdso);
	*out = sym->vdso;
	return 0;
}

/*
 * A module whose file name was not UTF-8 is in the spool under the escape
 * of utf8.h: its raw name, if the path decodes as one. The device and
 * inode check of the cache keeps a literal backslash name that merely
 * looks escaped from opening the wrong file.
 */
static int open_unescaped(struct sp_symbolizer *sym, const struct sp_module *m,
			  uint64_t dev, struct sp__image **out)
{
	size_t n;
	char *raw;
	int err;

	if (!memchr(m->path, '\\', m->path_len))
		return -ENOENT;
	n = sp__utf8_unescape(m->path, m->path_len, NULL, 0);
	if (n == SIZE_MAX)
		return -ENOENT;
	raw = sp__mem_alloc(&sym->mem, n + 1);
	if (!raw)
		return -ENOMEM;
	sp__utf8_unescape(m->path, m->path_len, (uint8_t *)raw, n);
	raw[n] = '\0';
	/* A NUL (escaped or not) cannot be in a file name. */
	err = memchr(raw, '\0', n) ?
		      -ENOENT :
		      sp__image_cache_get(sym->images, raw, dev, m->inode, out);
	sp__mem_free(&sym->mem, raw, n + 1);
	return err;
}

/*
 * The module's file by path and identity (the raw name first decoded from
 * an escaped path); a file that is gone (deleted or replaced) is read
 * through /proc/PID/map_files while the process lives.
 */
static int open_image(struct sp_symbolizer *sym, const struct sp_module *m,
		      struct sp__image **out)
{
	char path[64];
	uint64_t dev = 0;
	int err, uerr;

	if (strcmp(m->path, "[vdso]") == 0)
		return open_vdso(sym, out);
	if (m->dev_major || m->dev_minor)
		dev = makedev(m->dev_major, m->dev_minor);
	err = sp__image_cache_get(sym->images, m->path, dev, m->inode, out);
	if (err && err != -ENOMEM) {
		uerr = open_unescaped(sym, m, dev, out);
		err = uerr == -ENOENT ? err : uerr;
	}
	if (!err || err == -ENOMEM || m->pid <= 0)
		return err;
	snprintf(path, sizeof(path), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
		 m->pid, m->start, m->end);
	if (sp__image_cache_get(sym->images, path, dev, m->inode, out) == 0)
		return 0;
	return err;
}

/* The backend of @img, created on first use and shared by its modules. */
static int native_for(struct sp_symbolizer *sym, struct sp__image *img,
		      struct sp__native **out)
{
	uint64_t key[3] = { (uint64_t)(uintptr_t)img, 0, 0 };
	uint64_t h = sp__map_hash(key);
	struct sp__sym_native n = { .img = img };
	uint32_t idx;
	int err;

	if (sp__map_get(&sym->native_index, key, h, &idx)) {
		*out = ((struct sp__sym_native *)sym->natives.data)[idx].native;
		return 0;
	}
	if (sp__vec_reserve(&sym->natives, &sym->mem, 1) ||
	    sp__map_reserve(&sym->native_index, &sym->mem, 1))
		return -ENOMEM;
	err = sp__native_new(&sym->mem, img, sym->debug_dirs, sym->logger,
			     &n.native);
	if (err)
		return err;
	sp__image_ref(img);
	sp__map_put(&sym->native_index, &sym->mem, key, h,
		    (uint32_t)sym->natives.len);
	sp__vec_push(&sym->natives, &sym->mem, &n);
	*out = n.native;
	return 0;
}

static bool is_transient(int err)
{
	return err == -EMFILE || err == -ENFILE || err == -EINTR ||
	       err == -EAGAIN;
}

static int module_open(struct sp_symbolizer *sym, struct sp__sym_module *ms,
		       const struct sp_module *m)
{
	struct sp__image *img;
	int err = open_image(sym, m, &img);

	if (err == -ENOMEM)
		return err;
	if (err) {
		/* Retryable failures are not remembered: later frames retry. */
		if (!is_transient(err))
			ms->status = err;
		return 0;
	}
	ms->img = img;
	ms->has_bias = sp__image_bias(img, m->start, m->end, m->file_offset,
				      sym->page_size, &ms->bias) == 0;
	if (!sym->has_plugin) {
		err = native_for(sym, img, &ms->native);
		if (err == -ENOMEM)
			return err;
		if (err) {
			ms->status = err;
			return 0;
		}
	}
	ms->status = 1;
	return 0;
}

/* The module's state, opened on first use; NULL on -ENOMEM. */
static struct sp__sym_module *module_ready(struct sp_symbolizer *sym,
					   const struct user_ctx *u)
{
	struct sp__sym_module *ms = module_state(sym, u->fc.module_id);

	if (!ms)
		return NULL;
	if (ms->status == 0 && module_open(sym, ms, &u->mod))
		return NULL;
	return ms;
}

/*
 * SVMA of the frame: through the mapping's load bias, else the file
 * offset. False when the module's file is not open or the offset maps to
 * no segment.
 */
static bool module_svma(const struct sp__sym_module *ms,
			const struct user_ctx *u, uint64_t *svma)
{
	if (ms->status != 1)
		return false;
	if (ms->has_bias) {
		*svma = u->frame.abs_ip - ms->bias;
		return true;
	}
	return sp__image_offset_to_svma(ms->img, u->fc.file_relative_ip,
					svma) == 0;
}

static int native_chain(struct sp_symbolizer *sym, const struct user_ctx *u)
{
	struct sp__sym_module *ms = module_ready(sym, u);
	uint32_t nflags = 0;
	uint64_t svma;
	int i, n;

	if (!ms)
		return -ENOMEM;
	if (ms->status != 1 || !ms->native)
		return 0;
	if (sym->flags & SP_SYMBOLIZER_NO_INLINE)
		nflags |= SP_NATIVE_NO_INLINE;
	if (sym->flags & SP_SYMBOLIZER_NO_LINES)
		nflags |= SP_NATIVE_NO_LINES;
	memset(sym->chain, 0, sizeof(sym->chain));
	if (!module_svma(ms, u, &svma))
		return 0;
	n = sp__native_lookup(ms->native, svma, nflags, sym->chain,
			      SP_SYM_MAX_CHAIN);
	for (i = 0; i < n; i++)
		sym->chain[i].module = u->mod.path;
	return n;
}

/* ---- one chain, core fields and flags ---- */

/* Fills what the core decides: ids, pc, Python-runtime and eval flags. */
static void finish_chain(struct sp_symbolizer *sym, int n, uint32_t frame_id,
			 const struct sp_frame_context *fc, bool python_rt)
{
	int i;

	for (i = 0; i < n; i++) {
		struct sp_resolved_frame *f = &sym->chain[i];

		f->frame_id = frame_id;
		f->module_id = fc ? fc->module_id : SP_NO_MODULE;
		f->pc = fc ? fc->frame.abs_ip : 0;
		if (python_rt)
			f->flags |= SP_RESOLVED_PYTHON_RUNTIME |
				    SP_RESOLVED_HIDDEN_DEFAULT;
		if (sp__is_eval_frame_name(f->name))
			f->flags |= SP_RESOLVED_EVAL_FRAME;
	}
}

static bool in_python_runtime(const struct user_ctx *u)
{
	return u->has_mod && sp__is_python_runtime_path(u->mod.path);
}

enum chain_state {
	CHAIN_DONE = 0,	  /* sym->chain holds the result */
	CHAIN_PLUGIN = 1, /* file-backed user frame for the plug-in */
};

/*
 * Builds the chain of @frame_id for @pid into sym->chain (count in *@n),
 * or returns CHAIN_PLUGIN with @u filled for a batched plug-in lookup.
 */
static int build_chain(struct sp_symbolizer *sym, uint32_t frame_id,
		       int32_t pid, struct user_ctx *u, int *n)
{
	int err = gather_user(sym, frame_id, pid, u);

	if (err)
		return err;
	if (u->frame.mode == SP_FRAME_TRUNCATED) {
		*n = marker_chain(sym);
		finish_chain(sym, *n, frame_id, NULL, false);
		return CHAIN_DONE;
	}
	if (u->frame.mode == SP_FRAME_KERNEL &&
	    sp_spool_off_cpu_frame(sym->spool, frame_id)) {
		*n = off_cpu_chain(sym, sp_spool_off_cpu_frame(sym->spool,
							       frame_id));
		finish_chain(sym, *n, frame_id, &u->fc, false);
		return CHAIN_DONE;
	}
	if (u->frame.mode == SP_FRAME_KERNEL) {
		*n = kernel_chain(sym, u->frame.abs_ip);
		finish_chain(sym, *n, frame_id, &u->fc, false);
		return CHAIN_DONE;
	}
	*n = jit_chain(sym, u, frame_id, pid);
	if (*n < 0)
		return *n;
	if (!*n)
		*n = perf_map_chain(sym, u, frame_id, pid);
	if (*n) {
		finish_chain(sym, *n, frame_id, &u->fc, false);
		return CHAIN_DONE;
	}
	if (is_file_backed(u) && sym->has_plugin)
		return CHAIN_PLUGIN;
	if (is_file_backed(u))
		*n = native_chain(sym, u);
	if (*n < 0)
		return *n;
	if (!*n)
		*n = address_chain(sym, u);
	finish_chain(sym, *n, frame_id, &u->fc, in_python_runtime(u));
	return CHAIN_DONE;
}

/* ---- inserting results, plug-in batches ---- */

static int insert_chain(struct sp_symbolizer *sym, uint64_t key, int n,
			const struct user_ctx *u)
{
	struct sp__sym_entry *e;
	const char *borrowed = u->has_mod ? u->mod.path : NULL;
	int err;

	e = sp__sym_entry_new(&sym->mem, key, sym->chain, (size_t)n, borrowed,
			      !(sym->flags & SP_SYMBOLIZER_NO_DEMANGLE));
	if (!e)
		return -ENOMEM;
	err = sp__sym_cache_put(&sym->cache, &e->hdr);
	if (err)
		sp__sym_entry_free(&sym->mem, e);
	return err;
}

static bool batch_has(const struct sp_symbolizer *sym, uint32_t frame_id)
{
	const uint32_t *ids = sym->batch_ids.data;
	size_t i;

	for (i = 0; i < sym->batch_ids.len; i++)
		if (ids[i] == frame_id)
			return true;
	return false;
}

static int batch_push(struct sp_symbolizer *sym, uint32_t frame_id, int32_t pid,
		      const struct user_ctx *u)
{
	struct sp__sym_module *ms = module_ready(sym, u);
	struct sp_native_lookup l = {
		.pid = pid,
		.module_id = u->fc.module_id,
		.abs_ip = u->frame.abs_ip,
		.file_relative_ip = u->fc.file_relative_ip,
	};

	if (!ms)
		return -ENOMEM;
	if (!module_svma(ms, u, &l.image_address))
		l.image_address = 0;
	if (sp__vec_push(&sym->batch, &sym->mem, &l) ||
	    sp__vec_push(&sym->batch_mods, &sym->mem, &u->mod) ||
	    sp__vec_push(&sym->batch_ids, &sym->mem, &frame_id))
		return -ENOMEM;
	return 0;
}

/* One plug-in result (or its address-only fallback) into the cache. */
static int batch_result(struct sp_symbolizer *sym, int32_t pid, size_t i)
{
	uint32_t frame_id = ((const uint32_t *)sym->batch_ids.data)[i];
	const struct sp_resolved_frame *r = sp__vec_at(&sym->batch_out, i);
	struct user_ctx u;
	int n = 1, err;

	if (sp__sym_cache_frame(&sym->cache, pid, frame_id))
		return 0;
	err = gather_user(sym, frame_id, pid, &u);
	if (err)
		return err;
	if (r->name) {
		sym->chain[0] = *r;
		sym->chain[0].kind = SP_RESOLVED_NATIVE;
		sym->chain[0].origin = SP_ORIGIN_PLUGIN;
		sym->chain[0].module = u.mod.path;
		sym->chain[0].inline_depth = 0;
		sym->chain[0].flags &= SP_RESOLVED_JIT;
	} else {
		n = address_chain(sym, &u);
	}
	finish_chain(sym, n, frame_id, &u.fc, in_python_runtime(&u));
	return insert_chain(sym, sp__sym_key(pid, frame_id), n, &u);
}

static int batch_flush(struct sp_symbolizer *sym, int32_t pid)
{
	struct sp_native_lookup *l = sym->batch.data;
	size_t i, n = sym->batch.len;
	int err;

	if (!n)
		return 0;
	if (sp__vec_reserve(&sym->batch_out, &sym->mem, n))
		return -ENOMEM;
	/* The vec may have moved while it grew: point at the final copies. */
	for (i = 0; i < n; i++)
		l[i].module = sp__vec_at(&sym->batch_mods, i);
	memset(sym->batch_out.data, 0, n * sizeof(struct sp_resolved_frame));
	sym->batch_out.len = n;
	err = sym->plugin.lookup(sym->plugin.ctx, l, n, sym->batch_out.data);
	if (err < 0)
		return err;
	for (i = 0; i < n && !err; i++)
		err = batch_result(sym, pid, i);
	return err;
}

static void batch_clear(struct sp_symbolizer *sym)
{
	sym->batch.len = 0;
	sym->batch_mods.len = 0;
	sym->batch_ids.len = 0;
	sym->batch_out.len = 0;
}

int sp__sym_resolve_misses(struct sp_symbolizer *sym, int32_t pid,
			   const uint32_t *ids, size_t count)
{
	struct user_ctx u;
	size_t i;
	int err = 0, n = 0, st;

	batch_clear(sym);
	for (i = 0; i < count && !err; i++) {
		if (sp__sym_cache_frame(&sym->cache, pid, ids[i]) ||
		    batch_has(sym, ids[i]))
			continue;
		st = build_chain(sym, ids[i], pid, &u, &n);
		if (st < 0)
			err = st;
		else if (st == CHAIN_PLUGIN)
			err = batch_push(sym, ids[i], pid, &u);
		else
			err = insert_chain(sym, sp__sym_key(pid, ids[i]), n,
					   &u);
	}
	if (!err)
		err = batch_flush(sym, pid);
	batch_clear(sym);
	return err;
}

/* ---- public resolve ---- */

static const struct sp__sym_entry *lookup_shared(struct sp_symbolizer *sym,
						 int32_t pid, uint32_t frame_id)
{
	struct sp__sym_reader *r = sp__sym_cache_enter(&sym->cache);
	const struct sp__sym_entry *e;

	if (!r) {
		/* Every epoch record is taken: read under the writer lock. */
		pthread_mutex_lock(&sym->lock);
		e = sp__sym_cache_frame(&sym->cache, pid, frame_id);
		pthread_mutex_unlock(&sym->lock);
		return e;
	}
	e = sp__sym_cache_frame(&sym->cache, pid, frame_id);
	sp__sym_cache_leave(r);
	return e;
}

SP_API int sp_symbolizer_resolve_frame(struct sp_symbolizer *sym,
				       uint32_t frame_id, int32_t pid,
				       const struct sp_resolved_frame **out)
{
	const struct sp__sym_entry *e;
	int err;

	if (!sym || !out || !sp__sym_valid_pid(pid) ||
	    frame_id >= sp__sym_frame_limit(sym))
		return -EINVAL;
	e = lookup_shared(sym, pid, frame_id);
	if (!e) {
		pthread_mutex_lock(&sym->lock);
		err = sp__sym_resolve_misses(sym, pid, &frame_id, 1);
		e = sp__sym_cache_frame(&sym->cache, pid, frame_id);
		pthread_mutex_unlock(&sym->lock);
		if (err)
			return err;
	}
	*out = e->frames;
	return (int)e->count;
}
