/* SPDX-License-Identifier: MIT */
/* Kernel test: a PC outside every module makes the recorder re-read maps. */

/*
 * The child maps a file holding `jmp .` (EB FE) executable while the
 * recorder is disabled: disabled events emit no MMAP2, so the recorder
 * never hears of the mapping. Once enabled, the child spins inside it;
 * those samples' PC is outside every known module, which must trigger a
 * /proc/PID/maps reconcile: the file must show up as a module of the
 * child and samples must be pinned to it.
 */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>

#include <stackpulse/snapshot.h>

#include "eng_util.h"
#include "threads_env.h"

static char spool_path[64], code_path[64];

static void child_run(int gate, int ack)
{
	void (*fn)(void);
	void *p;
	char c;
	int fd;

	if (read(gate, &c, 1) != 1)
		_exit(2);
	fd = open(code_path, O_RDONLY);
	p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (fd < 0 || p == MAP_FAILED)
		_exit(3);
	if (write(ack, "m", 1) != 1)
		_exit(4);
	memcpy(&fn, &p, sizeof(fn));
	fn(); /* spins forever */
	_exit(5);
}

static void write_code(void)
{
	static unsigned char page[4096] = { 0xeb, 0xfe };
	int fd = open(code_path, O_WRONLY | O_CREAT | O_TRUNC, 0755);

	CHECK(fd >= 0);
	CHECK(write(fd, page, sizeof(page)) == (ssize_t)sizeof(page));
	close(fd);
}

/* The id of the module of @pid whose path is @path, or UINT32_MAX. */
static uint32_t find_module(const struct sp_spool *sp, pid_t pid,
			    const char *path)
{
	struct sp_module m;
	uint32_t i;

	for (i = 0; i < sp_spool_module_count(sp); i++) {
		CHECK_OK(sp_spool_module(sp, i, &m));
		if (m.pid == pid && m.path_len == strlen(path) &&
		    memcmp(m.path, path, m.path_len) == 0)
			return i;
	}
	return UINT32_MAX;
}

static void check_spool(pid_t pid)
{
	struct sp_snapshot *snap;
	const struct sp_spool *sp;
	struct sp_sample s;
	struct sp_frame f;
	uint32_t ids[8];
	size_t i, n, pinned = 0;
	uint32_t id;

	CHECK_OK(sp_snapshot_open(spool_path, NULL, &snap));
	sp = sp_snapshot_spool(snap);
	id = find_module(sp, pid, code_path);
	CHECK(id != UINT32_MAX);
	n = sp_snapshot_sample_count(snap);
	for (i = 0; i < n; i++) {
		CHECK_OK(sp_snapshot_sample(snap, i, &s));
		if (sp_spool_stack_frames(sp, s.stack, ids, 8) > 0 &&
		    sp_spool_frame(sp, ids[0], &f) == 0 && f.module_id == id)
			pinned++;
	}
	fprintf(stderr, "samples %zu pinned to the new code %zu\n", n, pinned);
	CHECK(pinned > 0);
	sp_snapshot_close(snap);
}

int main(void)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };
	struct sp_recorder *rec;
	int gate[2], ack[2], r;
	char c;
	pid_t pid;

	o.threads = test_threads();
	snprintf(spool_path, sizeof(spool_path), "/tmp/sp_uncov_%d.spool",
		 (int)getpid());
	snprintf(code_path, sizeof(code_path), "/tmp/sp_uncov_%d.code",
		 (int)getpid());
	write_code();
	CHECK(pipe(gate) == 0 && pipe(ack) == 0);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		child_run(gate[0], ack[1]);
	o.sample_hz = 999;
	CHECK_OK(sp_recorder_open(spool_path, &o, &rec));
	r = sp_recorder_attach(rec, pid, SP_ATTACH_RUNNING);
	if (r < 0)
		eng_kill_reap(pid);
	eng_skip_if_refused(r);
	CHECK_EQ_INT(r, SP_ATTACHED);
	CHECK_OK(sp_recorder_disable(rec));
	CHECK(write(gate[1], "g", 1) == 1);
	CHECK(read(ack[0], &c, 1) == 1); /* mapped, unseen */
	CHECK_OK(sp_recorder_enable(rec));
	eng_record_for(rec, 400, 20);
	eng_kill_reap(pid);
	CHECK_OK(sp_recorder_finish(rec));
	sp_recorder_close(rec);
	check_spool(pid);
	unlink(spool_path);
	unlink(code_path);
	return T_EXIT_PASS;
}
