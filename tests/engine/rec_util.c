/* SPDX-License-Identifier: MIT */
/* Recorder integration tests: recording helpers and the test's ELF namer. */

/*
 * The namer keeps one symbol table per module path for the whole test:
 * every STT_FUNC symbol of .symtab (or .dynsym when the file is stripped)
 * sorted by value, plus the PT_LOAD segments that translate a file offset
 * (the spool's file_relative_ip) into a symbol value. vDSO and kernel
 * frames get no name; the tests only name frames of their own files.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <linux/perf_event.h>
#include <signal.h>
#include <spawn.h>
#include <stdbool.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse/launch.h>

#include "rec_util.h"
#include "threads_env.h"

extern char **environ;

/* --- perf availability ------------------------------------------------ */

void rec_require_perf(bool kernel)
{
	struct perf_event_attr attr = { 0 };
	long fd;

	attr.size = sizeof(attr);
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.disabled = 1;
	attr.exclude_kernel = !kernel;
	attr.exclude_hv = 1;
	fd = syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
	if (fd < 0) {
		fprintf(stderr,
			"skip: perf_event_open(cpu-clock%s) refused: %s "
			"(see /proc/sys/kernel/perf_event_paranoid)\n",
			kernel ? ", kernel" : "", strerror(errno));
		exit(T_EXIT_SKIP);
	}
	close((int)fd);
}

/* --- recording -------------------------------------------------------- */

uint32_t rec_mode;

static struct sp_recorder *open_recorder(struct rec_run *run, uint32_t flags)
{
	struct sp_recorder_opts opts = { .size = sizeof(opts) };
	struct sp_recorder *rec = NULL;
	const char *dir = getenv("TMPDIR");

	opts.threads = test_threads();
	opts.sample_hz = 999;
	opts.flags = flags;
	opts.mode = rec_mode;
	snprintf(run->spool, sizeof(run->spool), "%s/sp-rec-%d.spool",
		 dir && *dir ? dir : "/tmp", (int)getpid());
	CHECK_OK(sp_recorder_open(run->spool, &opts, &rec));
	return rec;
}

static void check_attach(int err)
{
	if (err == -EPERM || err == -EACCES) {
		fprintf(stderr, "skip: sp_recorder_attach refused: %s\n",
			sp_strerror(err));
		exit(T_EXIT_SKIP);
	}
	CHECK_EQ_INT(err, SP_ATTACHED);
}

/*
 * Poll until @reaped says the workload is gone (at most 60 s, then kill
 * it and fail), then finish the recording and open the spool.
 */
static void record_until_exit(struct sp_recorder *rec, struct rec_run *run,
			      int (*reaped)(void *ctx, int *status), void *ctx)
{
	int i, err;

	for (i = 0; i < 600; i++) {
		err = sp_recorder_poll(rec, 100, NULL);
		if (err < 0 && err != -EINTR)
			CHECK_OK(err);
		if (reaped(ctx, &run->status))
			break;
	}
	if (i == 600) {
		kill(run->pid, SIGKILL);
		fprintf(stderr, "workload %d did not exit within 60 s\n",
			(int)run->pid);
		exit(T_EXIT_FAIL);
	}
	CHECK_OK(sp_recorder_finish(rec));
	run->summary.size = sizeof(run->summary);
	sp_recorder_summary(rec, &run->summary);
	sp_recorder_close(rec);
	CHECK(WIFEXITED(run->status) && WEXITSTATUS(run->status) == 0);
	CHECK_OK(sp_snapshot_open(run->spool, NULL, &run->snap));
	run->defs = sp_snapshot_spool(run->snap);
	fprintf(stderr,
		"pid %d: %" PRIu64 " samples, %" PRIu64 " lost, %" PRIu64
		" truncated markers, %zu in the spool\n",
		(int)run->pid, run->summary.samples, run->summary.lost_events,
		run->summary.truncated_frame_markers,
		sp_snapshot_sample_count(run->snap));
}

static int launch_reaped(void *ctx, int *status)
{
	int r = sp_launch_try_wait(ctx, status);

	CHECK_OK(r);
	return r;
}

void rec_launch(const char *const argv[], uint32_t flags, struct rec_run *run)
{
	struct sp_recorder *rec;
	struct sp_launch *launch = NULL;

	memset(run, 0, sizeof(*run));
	rec = open_recorder(run, flags);
	/* execvp's argv is char *const[] for historical reasons only. */
	CHECK_OK(sp_launch_suspended(argv[0], (char *const *)(uintptr_t)argv,
				     NULL, &launch));
	run->pid = sp_launch_pid(launch);
	check_attach(sp_recorder_attach(rec, run->pid, SP_ATTACH_ON_EXEC));
	CHECK_OK(sp_launch_resume(launch));
	record_until_exit(rec, run, launch_reaped, launch);
	sp_launch_free(launch);
}

static int pid_reaped(void *ctx, int *status)
{
	pid_t pid = *(const pid_t *)ctx;
	pid_t r = waitpid(pid, status, WNOHANG);

	CHECK(r >= 0);
	return r == pid;
}

void rec_spawned(const char *const argv[], enum sp_attach_mode mode,
		 uint32_t flags, struct rec_run *run)
{
	struct timespec settle = { 0, 200 * 1000 * 1000 };
	struct sp_recorder *rec;
	pid_t pid;

	memset(run, 0, sizeof(*run));
	rec = open_recorder(run, flags);
	/* posix_spawn returns after the exec: the image is the workload's. */
	CHECK_EQ_INT(posix_spawn(&pid, argv[0], NULL, NULL,
				 (char *const *)(uintptr_t)argv, environ),
		     0);
	run->pid = pid;
	/* Let ld.so finish, so the maps snapshot sees every library. */
	nanosleep(&settle, NULL);
	check_attach(sp_recorder_attach(rec, pid, mode));
	record_until_exit(rec, run, pid_reaped, &pid);
}

/* --- the ELF namer ---------------------------------------------------- */

struct elf_sym {
	uint64_t value;
	uint64_t size;
	char *name;
};

struct elf_load {
	uint64_t offset;
	uint64_t vaddr;
	uint64_t filesz;
};

struct elf_names {
	char *path;
	const char *base;
	struct elf_load loads[16];
	size_t nloads;
	struct elf_sym *syms;
	size_t nsyms;
	struct elf_names *next;
};

static struct elf_names *names_cache;

static int sym_cmp(const void *a, const void *b)
{
	const struct elf_sym *x = a, *y = b;

	return x->value < y->value ? -1 : x->value > y->value;
}

static void read_loads(Elf *elf, struct elf_names *n)
{
	size_t i, phnum = 0;
	GElf_Phdr ph;

	elf_getphdrnum(elf, &phnum);
	for (i = 0; i < phnum && n->nloads < 16; i++) {
		if (!gelf_getphdr(elf, (int)i, &ph) || ph.p_type != PT_LOAD)
			continue;
		n->loads[n->nloads++] = (struct elf_load){ ph.p_offset,
							   ph.p_vaddr,
							   ph.p_filesz };
	}
}

/* Adds the STT_FUNC symbols of the section of type @type; returns count. */
static size_t read_syms(Elf *elf, struct elf_names *n, Elf64_Word type)
{
	Elf_Scn *scn = NULL;
	size_t added = 0;

	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;
		size_t i, count;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != type ||
		    !sh.sh_entsize || !(data = elf_getdata(scn, NULL)))
			continue;
		count = sh.sh_size / sh.sh_entsize;
		n->syms =
			realloc(n->syms, (n->nsyms + count) * sizeof(*n->syms));
		CHECK(n->syms != NULL);
		for (i = 0; i < count; i++) {
			GElf_Sym s;
			const char *name;

			if (!gelf_getsym(data, (int)i, &s) ||
			    GELF_ST_TYPE(s.st_info) != STT_FUNC || !s.st_value)
				continue;
			name = elf_strptr(elf, sh.sh_link, s.st_name);
			if (!name)
				continue;
			n->syms[n->nsyms++] = (struct elf_sym){ s.st_value,
								s.st_size,
								strdup(name) };
			added++;
		}
	}
	return added;
}

static struct elf_names *names_load(const char *path)
{
	struct elf_names *n = calloc(1, sizeof(*n));
	const char *slash = strrchr(path, '/');
	Elf *elf;
	int fd;

	CHECK(n != NULL);
	n->path = strdup(path);
	n->base = n->path + (slash ? slash - path + 1 : 0);
	n->next = names_cache;
	names_cache = n;
	fd = path[0] == '/' ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	if (fd < 0)
		return n; /* [vdso], [kernel], a deleted file: no names */
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (elf) {
		read_loads(elf, n);
		if (!read_syms(elf, n, SHT_SYMTAB))
			read_syms(elf, n, SHT_DYNSYM);
		elf_end(elf);
	}
	close(fd);
	if (n->nsyms) /* an ELF without symbols: qsort(NULL) is undefined */
		qsort(n->syms, n->nsyms, sizeof(*n->syms), sym_cmp);
	return n;
}

static struct elf_names *names_get(const char *path)
{
	struct elf_names *n;

	for (n = names_cache; n; n = n->next)
		if (strcmp(n->path, path) == 0)
			return n;
	return names_load(path);
}

/* The symbol containing file offset @off, or NULL. */
static const char *names_lookup(const struct elf_names *n, uint64_t off)
{
	size_t i, lo = 0, hi = n->nsyms;
	uint64_t svma = 0;
	bool mapped = false;

	for (i = 0; i < n->nloads && !mapped; i++) {
		const struct elf_load *l = &n->loads[i];

		if (off >= l->offset && off - l->offset < l->filesz) {
			svma = off - l->offset + l->vaddr;
			mapped = true;
		}
	}
	if (!mapped)
		return NULL;
	while (lo < hi) { /* first symbol with value > svma */
		size_t mid = lo + (hi - lo) / 2;

		if (n->syms[mid].value <= svma)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Aliases share a value: any of them with a size that covers svma. */
	for (i = lo; i-- > 0 && n->syms[i].value == n->syms[lo - 1].value;)
		if (svma - n->syms[i].value < n->syms[i].size)
			return n->syms[i].name;
	return NULL;
}

static void names_free(void)
{
	while (names_cache) {
		struct elf_names *n = names_cache;
		size_t i;

		names_cache = n->next;
		for (i = 0; i < n->nsyms; i++)
			free(n->syms[i].name);
		free(n->syms);
		free(n->path);
		free(n);
	}
}

void rec_run_close(struct rec_run *run)
{
	sp_snapshot_close(run->snap);
	run->snap = NULL;
	if (run->spool[0] && !getenv("REC_KEEP_SPOOL"))
		unlink(run->spool);
	names_free();
}

/* --- stacks ----------------------------------------------------------- */

size_t rec_stack(struct rec_run *run, size_t index, struct sp_sample *sample,
		 struct rec_frame *out)
{
	struct sp_frame_context ctx[REC_MAX_FRAMES];
	int depth;
	size_t i, n;

	CHECK_OK(sp_snapshot_sample(run->snap, index, sample));
	depth = sp_spool_stack_contexts(run->defs, sample->stack, sample->pid,
					ctx, REC_MAX_FRAMES);
	CHECK_OK(depth);
	n = (size_t)depth < REC_MAX_FRAMES ? (size_t)depth : REC_MAX_FRAMES;
	for (i = 0; i < n; i++) {
		struct rec_frame *f = &out[i];
		struct sp_module m;

		memset(f, 0, sizeof(*f));
		f->mode = ctx[i].frame.mode;
		f->abs_ip = ctx[i].frame.abs_ip;
		if (ctx[i].module_id == SP_NO_MODULE ||
		    sp_spool_module(run->defs, ctx[i].module_id, &m) != 0 ||
		    m.is_kernel || !m.path_len)
			continue;
		{
			/* The reader NUL-terminates paths after path_len. */
			struct elf_names *names = names_get(m.path);

			f->module = names->path;
			f->base = names->base;
			f->name = names_lookup(names, ctx[i].file_relative_ip);
		}
	}
	return n;
}

bool rec_is(const struct rec_frame *f, const char *name)
{
	size_t len = strlen(name);

	return f->name && strncmp(f->name, name, len) == 0 &&
	       (f->name[len] == '\0' || f->name[len] == '.');
}

int rec_find(const struct rec_frame *frames, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (rec_is(&frames[i], name))
			return (int)i;
	return -1;
}

bool rec_has_run(const struct rec_frame *frames, size_t n, size_t at,
		 const char *const *names, size_t count)
{
	size_t i;

	if (at > n || n - at < count)
		return false;
	for (i = 0; i < count; i++)
		if (!rec_is(&frames[at + i], names[i]))
			return false;
	return true;
}

bool rec_reaches_main(const struct rec_frame *frames, size_t n,
		      const char *exe_path)
{
	const char *slash = strrchr(exe_path, '/');
	const char *base = slash ? slash + 1 : exe_path;
	size_t i;

	/* Basenames: the recorder may report a canonicalized path. */
	for (i = 0; i < n; i++)
		if (rec_is(&frames[i], "main") && frames[i].base &&
		    strcmp(frames[i].base, base) == 0)
			return true;
	return false;
}

void rec_print_stack(const char *why, const struct sp_sample *s,
		     const struct rec_frame *frames, size_t n)
{
	static const char *const modes[] = { "user", "kernel", "truncated" };
	size_t i;

	fprintf(stderr, "%s: pid %d tid %d, %zu frames (leaf first):\n", why,
		(int)s->pid, (int)s->tid, n);
	for (i = 0; i < n; i++)
		fprintf(stderr, "  #%zu %-9s 0x%016" PRIx64 " %s (%s)\n", i,
			frames[i].mode < 3 ? modes[frames[i].mode] : "?",
			frames[i].abs_ip, frames[i].name ? frames[i].name : "?",
			frames[i].base ? frames[i].base : "-");
}

bool rec_in_loader_start(const struct rec_frame *frames, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (frames[i].mode != SP_FRAME_USER || !frames[i].base ||
		    strncmp(frames[i].base, "ld-linux", 8) != 0)
			return false;
	return n > 0;
}

size_t rec_check_main_n(struct rec_run *run, int32_t pid, const char *exe_path,
			unsigned min_percent, size_t min_samples)
{
	size_t i, total = 0, reached = 0, loader = 0, shown = 0;
	size_t count = sp_snapshot_sample_count(run->snap);
	struct rec_frame frames[REC_MAX_FRAMES];
	struct sp_sample s;

	for (i = 0; i < count; i++) {
		size_t n = rec_stack(run, i, &s, frames);

		if (s.pid != pid)
			continue;
		if (rec_in_loader_start(frames, n))
			loader++;
		else if (total++, rec_reaches_main(frames, n, exe_path))
			reached++;
		else if (shown++ < 3)
			rec_print_stack("does not reach main", &s, frames, n);
	}
	fprintf(stderr,
		"pid %d: %zu of %zu samples reach main of %s (%zu more in the "
		"loader's start)\n",
		(int)pid, reached, total, exe_path, loader);
	CHECK(total >= min_samples);
	CHECK(reached * 100 >= total * min_percent);
	return total + loader;
}

size_t rec_check_main(struct rec_run *run, int32_t pid, const char *exe_path,
		      unsigned min_percent)
{
	return rec_check_main_n(run, pid, exe_path, min_percent,
				REC_MIN_SAMPLES);
}
