/* SPDX-License-Identifier: MIT */
/* Recovery sweeps adopt descendants whose FORK record never arrived. */

/*
 * Children mode. The traced parent P has a child C0 from before the
 * attach; later, while the recorder is disabled (disabled events write no
 * side-band records, so the FORK records are lost just as in a ring
 * overflow, while inheritance still happens), P forks C1, which forks C2.
 * After re-enabling, none of them is tracked. A forced recovery sweep
 * must then adopt all three: C1 and C2 with their process state only
 * (they inherited P's events: opening more would sample them twice),
 * parents first; C0 with events of its own (it predates the attach, so
 * nothing was inherited). Afterwards the spool must show C0's samples
 * (only its own events can produce them) and samples of C1 and C2 pinned
 * to modules loaded from /proc. The descendant listing itself is checked
 * through both sources: children files and the /proc/PID/stat scan.
 */
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>

#include <stackpulse.h>

#include "descendants.h"
#include "eng_util.h"
#include "recorder_internal.h"

static volatile unsigned long spin_sink;

static void spin_forever(void)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	for (;;)
		spin_sink++;
}

static void put_pid(int fd, pid_t pid)
{
	if (write(fd, &pid, sizeof(pid)) != sizeof(pid))
		_exit(1);
}

static pid_t get_pid(int fd)
{
	pid_t pid = 0;

	CHECK_EQ(read(fd, &pid, sizeof(pid)), sizeof(pid));
	CHECK(pid > 0);
	return pid;
}

/* P: forks C0 at once, then C1 (which forks C2) on each command byte. */
static void parent_main(int cmd, int out)
{
	char c;
	pid_t c0, c1, c2;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	c0 = fork();
	if (c0 == 0)
		spin_forever();
	put_pid(out, c0);
	while (read(cmd, &c, 1) == 1) {
		c1 = fork();
		if (c1 != 0)
			continue;
		c2 = fork();
		if (c2 == 0)
			spin_forever();
		put_pid(out, getpid());
		put_pid(out, c2);
		spin_forever();
	}
	_exit(0);
}

struct family {
	pid_t p, c0, c1, c2;
	int cmd, out;
};

static void family_start(struct family *f)
{
	int cmd[2], out[2];

	CHECK_OK(pipe(cmd));
	CHECK_OK(pipe(out));
	f->p = fork();
	CHECK(f->p >= 0);
	if (f->p == 0) {
		close(cmd[1]);
		close(out[0]);
		parent_main(cmd[0], out[1]);
	}
	close(cmd[0]);
	close(out[1]);
	f->cmd = cmd[1];
	f->out = out[0];
	f->c0 = get_pid(f->out);
}

static void family_fork(struct family *f)
{
	CHECK_EQ(write(f->cmd, "x", 1), 1);
	f->c1 = get_pid(f->out);
	f->c2 = get_pid(f->out);
}

static void family_end(struct family *f)
{
	kill(f->c2, SIGKILL);
	kill(f->c1, SIGKILL);
	kill(f->c0, SIGKILL);
	eng_kill_reap(f->p);
	close(f->cmd);
	close(f->out);
}

static const struct sp__desc *find(const struct sp__vec *v, pid_t pid)
{
	size_t i;

	for (i = 0; i < v->len; i++)
		if (((struct sp__desc *)sp__vec_at(v, i))->pid == pid)
			return sp__vec_at(v, i);
	return NULL;
}

/* Both sources list exactly C0, C1, C2, each after its parent. */
static void check_listing(const struct family *f, bool scan_stat)
{
	struct sp__mem mem;
	struct sp__vec v;
	const struct sp__desc *d0, *d1, *d2;

	sp__mem_init(&mem, NULL);
	sp__vec_init(&v, sizeof(struct sp__desc));
	CHECK_OK(sp__descendants_list(&mem, f->p, scan_stat, &v));
	CHECK_EQ(v.len, 3);
	d0 = find(&v, f->c0);
	d1 = find(&v, f->c1);
	d2 = find(&v, f->c2);
	CHECK(d0 && d1 && d2);
	CHECK_EQ_INT(d0->ppid, f->p);
	CHECK_EQ_INT(d1->ppid, f->p);
	CHECK_EQ_INT(d2->ppid, f->c1);
	CHECK(d1 < d2); /* parent first */
	v.len = 0;
	CHECK_EQ_INT(sp__descendants_list(&mem, f->c2, scan_stat, &v), 0);
	CHECK_EQ(v.len, 0);
	sp__vec_fini(&v, &mem);
}

/* The tracked process @pid after the sweep. */
static struct sp__process *adopted(struct sp_recorder *rec, pid_t pid)
{
	struct sp__process *p = sp__procs_find(&rec->procs, pid);

	CHECK(p != NULL);
	CHECK_EQ_INT(p->state, SP__PROC_ALIVE);
	CHECK(p->modules.len > 0); /* from /proc/PID/maps */
	return p;
}

static void check_adopted(struct sp_recorder *rec, const struct family *f)
{
	struct sp__process *p = sp__procs_find(&rec->procs, f->p);
	struct sp__process *c0 = adopted(rec, f->c0);
	struct sp__process *c1 = adopted(rec, f->c1);
	struct sp__process *c2 = adopted(rec, f->c2);

	CHECK(c0->parent == NULL);
	CHECK(c0->events.len > 0);
	CHECK(c1->parent == p);
	CHECK_EQ(c1->events.len, 0);
	CHECK(c2->parent == c1);
	CHECK_EQ(c2->events.len, 0);
}

/* Samples of @pid taken after @t0 with a frame pinned to a module. */
static size_t pinned_samples(const struct sp_snapshot *snap, pid_t pid,
			     uint64_t t0)
{
	const struct sp_spool *defs = sp_snapshot_spool(snap);
	struct sp_frame_context ctx[64];
	struct sp_sample s;
	size_t i, n = 0;
	int depth, j;

	for (i = 0; i < sp_snapshot_sample_count(snap); i++) {
		CHECK_OK(sp_snapshot_sample(snap, i, &s));
		if (s.pid != pid || s.timestamp_ns < t0)
			continue;
		depth = sp_spool_stack_contexts(defs, s.stack, pid, ctx, 64);
		CHECK(depth > 0);
		for (j = 0; j < depth && j < 64; j++)
			if (ctx[j].module_id != SP_NO_MODULE) {
				n++;
				break;
			}
	}
	return n;
}

static void check_spool(const char *path, const struct family *f, uint64_t t0)
{
	struct sp_snapshot *snap;
	size_t n0, n1, n2;

	CHECK_OK(sp_snapshot_open(path, NULL, &snap));
	n0 = pinned_samples(snap, f->c0, 0);
	n1 = pinned_samples(snap, f->c1, t0);
	n2 = pinned_samples(snap, f->c2, t0);
	fprintf(stderr,
		"pinned samples after the sweep: C0 %zu C1 %zu C2 %zu\n", n0,
		n1, n2);
	CHECK(n0 > 0);
	CHECK(n1 > 0);
	CHECK(n2 > 0);
	sp_snapshot_close(snap);
}

int main(void)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recorder *rec;
	struct family f;
	char path[64];
	uint64_t t0;
	int r;

	o.flags = SP_RECORDER_INHERIT_CHILDREN;
	snprintf(path, sizeof(path), "/tmp/sp_desc_%d.spool", (int)getpid());
	CHECK_OK(sp_recorder_open(path, &o, &rec));
	family_start(&f);
	usleep(50000); /* C0 starts clock ticks before the attach */
	r = sp_recorder_attach(rec, f.p, SP_ATTACH_RUNNING);
	if (r < 0)
		family_end(&f);
	eng_skip_if_refused(r);
	CHECK_EQ_INT(r, SP_ATTACHED);
	eng_record_for(rec, 100, 20);

	CHECK_OK(sp_recorder_disable(rec));
	family_fork(&f);
	CHECK_OK(sp_recorder_enable(rec));
	eng_record_for(rec, 200, 20);
	/* The premise: no FORK record, so nobody knows the new children. */
	CHECK(sp__procs_find(&rec->procs, f.c1) == NULL);
	CHECK(sp__procs_find(&rec->procs, f.c2) == NULL);
	CHECK(sp__procs_find(&rec->procs, f.c0) == NULL);
	check_listing(&f, false);
	check_listing(&f, true);

	rec->sweep_pending = true; /* as after a loss batch */
	CHECK_OK(sp_recorder_flush(rec));
	t0 = sp__now_ns();
	check_adopted(rec, &f);
	eng_record_for(rec, 400, 20);
	family_end(&f);
	CHECK_OK(sp_recorder_finish(rec));
	sp_recorder_close(rec);
	check_spool(path, &f, t0);
	unlink(path);
	return T_EXIT_PASS;
}
