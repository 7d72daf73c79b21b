/* SPDX-License-Identifier: MIT */
/* Kernel test: a recorded pid is reused by a different program. */

/*
 * Process A (wl_ladder) is attached and recorded, then killed and reaped;
 * a child B running a different program (wl_sharedlib) is forked with
 * A's pid by writing A-1 to /proc/sys/kernel/ns_last_pid (root only,
 * else skip). Attaching the pid again must see a new generation
 * (SP_ATTACHED, not SP_ALREADY_ATTACHED), both when the recorder polled
 * A's death first and when the reuse happened behind its back, with A's
 * last samples still queued (they must be unwound with A's maps). The spool
 * must keep the generations apart: A's samples only touch A's modules,
 * B's only B's, A's modules are retired before B's are defined, and B's
 * modules stay active while B's frames are defined, and every sample has
 * a frame in its own generation's modules.
 */
#include <fcntl.h>
#include <string.h>

#include <stackpulse/snapshot.h>

#include "eng_util.h"
#include "format_internal.h"
#include "threads_env.h"
#include "workload_paths.h"

#define NS_LAST_PID "/proc/sys/kernel/ns_last_pid"
#define REUSE_TRIES 400
#define MAX_FRAMES 128

enum gen {
	GEN_NONE,
	GEN_A,
	GEN_B
};

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t); /* the perf events' clock */
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* Waits until @pid maps a file whose path contains @needle. */
static void wait_mapped(pid_t pid, const char *needle)
{
	char path[64], line[512];
	bool found = false;
	int i;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	for (i = 0; i < 400 && !found; i++) {
		FILE *f = fopen(path, "r");

		CHECK_PTR(f);
		while (!found && fgets(line, sizeof(line), f))
			found = strstr(line, needle) != NULL;
		fclose(f);
		if (!found)
			usleep(5000);
	}
	CHECK(found);
}

/* A workload child that dies with the test if a CHECK fails. */
static pid_t fork_workload(const char *path)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl(path, path, "30", (char *)NULL);
		_exit(127);
	}
	CHECK(pid > 0);
	return pid;
}

static void skip(const char *why)
{
	fprintf(stderr, "skip: %s\n", why);
	exit(T_EXIT_SKIP);
}

/* Forks wl_sharedlib as pid @want (which must be free now). */
static pid_t spawn_reusing(pid_t want)
{
	char buf[32];
	int i, fd, n;
	pid_t pid;

	for (i = 0; i < REUSE_TRIES; i++) {
		fd = open(NS_LAST_PID, O_WRONLY | O_CLOEXEC);
		if (fd < 0)
			skip(NS_LAST_PID " is not writable");
		n = snprintf(buf, sizeof(buf), "%d", (int)want - 1);
		if (write(fd, buf, (size_t)n) != n) {
			close(fd);
			skip(NS_LAST_PID " is not writable");
		}
		close(fd);
		pid = fork_workload(WL_SHAREDLIB_PATH);
		if (pid == want)
			return pid;
		eng_kill_reap(pid); /* another fork took @want first */
		usleep(10000); /* let whoever holds @want go (parallel tests) */
	}
	skip("pid reuse: another process kept taking the pid");
	return -1;
}

static const char *base_of(const struct sp_module *m)
{
	const char *s = strrchr(m->path, '/');

	return s ? s + 1 : m->path;
}

/* Which generation module @id of @pid belongs to; @b0: B's first module. */
static enum gen module_gen(const struct sp_spool *sp, uint32_t id, pid_t pid,
			   uint32_t b0)
{
	struct sp_module m;

	CHECK_OK(sp_spool_module(sp, id, &m));
	if (m.is_kernel || m.pid != pid)
		return GEN_NONE;
	return id < b0 ? GEN_A : GEN_B;
}

/* The first module of @pid named wl_sharedlib: B's generation starts. */
static uint32_t first_b_module(const struct sp_spool *sp, pid_t pid)
{
	uint32_t i, n = sp_spool_module_count(sp);
	struct sp_module m;

	for (i = 0; i < n; i++) {
		CHECK_OK(sp_spool_module(sp, i, &m));
		if (m.pid == pid && strcmp(base_of(&m), "wl_sharedlib") == 0)
			return i;
	}
	CHECK(!"no wl_sharedlib module");
	return 0;
}

/* A's generation maps wl_ladder only, B's wl_sharedlib + libwlshared. */
static void check_modules(const struct sp_spool *sp, pid_t pid, uint32_t b0,
			  uint32_t b_frames)
{
	uint32_t i, n = sp_spool_module_count(sp);
	int a_main = 0, b_lib = 0;
	struct sp_module m;

	for (i = 0; i < n; i++) {
		enum gen g = module_gen(sp, i, pid, b0);
		const char *b;

		CHECK_OK(sp_spool_module(sp, i, &m));
		b = base_of(&m);
		if (g == GEN_A) {
			a_main += strcmp(b, "wl_ladder") == 0;
			CHECK(strcmp(b, "libwlshared.so") != 0);
			/* Retired before B's generation was defined. */
			CHECK(m.deactivated_at != SP_NEVER);
			CHECK(m.deactivated_at <= b_frames);
		} else if (g == GEN_B) {
			b_lib += strcmp(b, "libwlshared.so") == 0;
			CHECK(strcmp(b, "wl_ladder") != 0);
			/* Not swept away by A's retirement (tag 7). */
			CHECK(m.deactivated_at == SP_NEVER ||
			      m.deactivated_at > b_frames);
		}
	}
	CHECK(a_main >= 1);
	CHECK(b_lib >= 1);
}

/* Frames decoded before module @b0 was (format_internal: module_limit). */
static uint32_t frames_before(const struct sp_spool *sp, uint32_t b0)
{
	uint32_t i;

	for (i = 0; i < sp->frames.len; i++) {
		const struct sp__frame *f = sp__vec_at(&sp->frames, i);

		if (f->module_limit > b0)
			return i;
	}
	return (uint32_t)sp->frames.len;
}

struct tally {
	size_t n[3];   /* samples per enum gen (GEN_NONE: other pids) */
	size_t hit[3]; /* ... touching wl_ladder / libwlshared.so */
	size_t own[3]; /* ... with a frame in their generation's modules */
	size_t last_a_index; /* file order */
	size_t first_b_index;
};

/* Every module a sample's stack touches belongs to its generation @g. */
static void check_stack(const struct sp_spool *sp, const struct sp_sample *s,
			enum gen g, uint32_t b0, struct tally *t)
{
	struct sp_frame_context ctx[MAX_FRAMES];
	const char *want = g == GEN_A ? "wl_ladder" : "libwlshared.so";
	int depth, i;
	bool hit = false, own = false;

	depth = sp_spool_stack_contexts(sp, s->stack, s->pid, ctx, MAX_FRAMES);
	CHECK(depth > 0);
	for (i = 0; i < depth && i < MAX_FRAMES; i++) {
		struct sp_module m;
		enum gen mg;

		if (ctx[i].module_id == SP_NO_MODULE)
			continue;
		mg = module_gen(sp, ctx[i].module_id, s->pid, b0);
		if (mg == GEN_NONE)
			continue; /* kernel */
		if (mg != g)
			fprintf(stderr, "gen %d sample at %llu in gen %d\n", g,
				(unsigned long long)s->timestamp_ns, mg);
		CHECK_EQ_INT(mg, g);
		own = true;
		CHECK_OK(sp_spool_module(sp, ctx[i].module_id, &m));
		hit |= strcmp(base_of(&m), want) == 0;
	}
	t->hit[g] += hit;
	t->own[g] += own;
}

static void check_samples(const struct sp_snapshot *snap, pid_t pid,
			  uint32_t b0, uint64_t t_dead, uint64_t t_born)
{
	const struct sp_spool *sp = sp_snapshot_spool(snap);
	size_t i, n = sp_snapshot_sample_count(snap);
	struct tally t = { .first_b_index = SIZE_MAX };
	struct sp_sample s;

	for (i = 0; i < n; i++) {
		enum gen g;

		CHECK_OK(sp_snapshot_sample(snap, i, &s));
		if (s.pid != pid) {
			t.n[GEN_NONE]++;
			continue;
		}
		/* Nothing of pid's can be sampled while it is unused. */
		CHECK(s.timestamp_ns < t_dead || s.timestamp_ns > t_born);
		g = s.timestamp_ns < t_dead ? GEN_A : GEN_B;
		t.n[g]++;
		if (g == GEN_A)
			t.last_a_index = i;
		else if (t.first_b_index == SIZE_MAX)
			t.first_b_index = i;
		check_stack(sp, &s, g, b0, &t);
	}
	fprintf(stderr,
		"samples: A %zu (%zu resolved, %zu in wl_ladder), B %zu "
		"(%zu resolved, %zu in libwlshared), other %zu\n",
		t.n[GEN_A], t.own[GEN_A], t.hit[GEN_A], t.n[GEN_B],
		t.own[GEN_B], t.hit[GEN_B], t.n[GEN_NONE]);
	/*
	 * A user stack always starts in a module of its process: a sample
	 * resolved in no module was unwound with the wrong generation.
	 */
	CHECK_EQ(t.own[GEN_A], t.n[GEN_A]);
	CHECK_EQ(t.own[GEN_B], t.n[GEN_B]);
	CHECK(t.n[GEN_A] > 0 && t.hit[GEN_A] > 0);
	CHECK(t.n[GEN_B] > 0 && t.hit[GEN_B] > 0);
	CHECK(t.last_a_index < t.first_b_index);
}

static void check_spool(const char *path, pid_t pid, uint64_t t_dead,
			uint64_t t_born)
{
	struct sp_snapshot *snap;
	const struct sp_spool *sp;
	uint32_t b0;

	CHECK_OK(sp_snapshot_open(path, NULL, &snap));
	sp = sp_snapshot_spool(snap);
	b0 = first_b_module(sp, pid);
	check_modules(sp, pid, b0, frames_before(sp, b0));
	check_samples(snap, pid, b0, t_dead, t_born);
	sp_snapshot_close(snap);
	unlink(path);
}

static struct sp_recorder *open_recorder(const char *path)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recorder *rec;

	o.threads = test_threads();
	o.sample_hz = 999;
	CHECK_OK(sp_recorder_open(path, &o, &rec));
	return rec;
}

/* Records A, lets it die, reuses its pid for B and records B. */
static void run_reuse(bool poll_death)
{
	uint64_t t_dead, t_born;
	struct sp_recorder *rec;
	pid_t a, b;
	char path[64];
	int r, i;

	snprintf(path, sizeof(path), "/tmp/sp_pidreuse_%d_%d.spool",
		 (int)getpid(), poll_death);
	rec = open_recorder(path);
	a = fork_workload(WL_LADDER_PATH);
	wait_mapped(a, "wl_ladder");
	r = sp_recorder_attach(rec, a, SP_ATTACH_STOP_WHILE_ATTACHING);
	if (r < 0)
		eng_kill_reap(a);
	eng_skip_if_refused(r);
	CHECK_EQ_INT(r, SP_ATTACHED);
	eng_record_for(rec, 300, 20);
	usleep(50000); /* A's last samples wait in the rings when it dies */
	eng_kill_reap(a);
	t_dead = now_ns();
	for (i = 0;
	     poll_death && i < 500 && sp_recorder_active_process_count(rec) > 0;
	     i++)
		CHECK_OK(sp_recorder_poll(rec, 20, NULL));
	if (poll_death) {
		CHECK_OK(sp_recorder_flush(rec));
		CHECK_EQ_INT(sp_recorder_process_is_active(rec, a), 0);
	}
	t_born = now_ns();
	b = spawn_reusing(a);
	wait_mapped(b, "libwlshared.so");
	r = sp_recorder_attach(rec, b, SP_ATTACH_STOP_WHILE_ATTACHING);
	CHECK_EQ_INT(r, SP_ATTACHED); /* a new generation */
	CHECK_EQ_INT(sp_recorder_attach(rec, b, SP_ATTACH_RUNNING),
		     SP_ALREADY_ATTACHED);
	CHECK_EQ_INT(sp_recorder_process_is_active(rec, b), 1);
	CHECK_EQ_INT(sp_recorder_active_process_count(rec), 1);
	eng_record_for(rec, 300, 20);
	CHECK_OK(sp_recorder_finish(rec));
	eng_kill_reap(b);
	sp_recorder_close(rec);
	fprintf(stderr, "%s: pid %d reused\n",
		poll_death ? "death polled" : "behind its back", (int)a);
	check_spool(path, a, t_dead, t_born);
}

int main(void)
{
	run_reuse(true);
	run_reuse(false);
	return T_EXIT_PASS;
}
