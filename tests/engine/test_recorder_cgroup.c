/* SPDX-License-Identifier: MIT */
/* cgroup recording: only the cgroup's processes reach the spool. */

/*
 * A fresh cgroup v2 directory gets one workload; another runs outside it.
 * A recorder bound to the cgroup must sample the member (stacks reaching
 * main) and hold neither samples nor modules of anything else. Skips when
 * no cgroup2 hierarchy is mounted or it cannot be written (no delegation,
 * read-only); the directory is removed on every path the test controls.
 */
#include <fcntl.h>
#include <sys/stat.h>

#include "sys_util.h"
#include "workload_paths.h"

static char cg_dir[1200];

/* The first cgroup2 mount point from /proc/self/mountinfo, or skip. */
static void cgroup2_root(char *out, size_t cap)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[4096], mnt[1024], fstype[64];

	CHECK(f != NULL);
	while (fgets(line, sizeof(line), f)) {
		const char *dash = strstr(line, " - ");

		if (!dash || sscanf(dash, " - %63s", fstype) != 1 ||
		    strcmp(fstype, "cgroup2") != 0 ||
		    sscanf(line, "%*s %*s %*s %*s %1023s", mnt) != 1)
			continue;
		fclose(f);
		snprintf(out, cap, "%s", mnt);
		return;
	}
	fclose(f);
	fprintf(stderr, "skip: no cgroup2 hierarchy is mounted\n");
	exit(T_EXIT_SKIP);
}

static int write_pid(const char *dir, pid_t pid)
{
	char path[1300], buf[32];
	int fd, n, err = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%d\n", (int)pid);
	if (write(fd, buf, (size_t)n) != n)
		err = -errno;
	close(fd);
	return err;
}

static void cleanup(void)
{
	if (cg_dir[0])
		rmdir(cg_dir);
}

static void make_cgroup(pid_t member, pid_t *pids)
{
	char root[1024];
	int err;

	cgroup2_root(root, sizeof(root));
	snprintf(cg_dir, sizeof(cg_dir), "%s/sp-test-%d", root, (int)getpid());
	err = mkdir(cg_dir, 0755) ? -errno : write_pid(cg_dir, member);
	if (err) {
		fprintf(stderr, "skip: cannot use a cgroup under %s: %s\n",
			root, strerror(-err));
		kill(pids[0], SIGKILL);
		kill(pids[1], SIGKILL);
		waitpid(pids[0], NULL, 0);
		waitpid(pids[1], NULL, 0);
		cleanup();
		exit(T_EXIT_SKIP);
	}
	atexit(cleanup);
}

int main(void)
{
	struct sp_system_opts so = { .size = sizeof(so) };
	struct sp_recorder *rec;
	struct rec_run run;
	pid_t pids[2];

	rec_require_perf(false);
	pids[0] = sys_spawn(WL_LADDER_PATH, "4");
	pids[1] = sys_spawn(WL_RECURSION_PATH, "4");
	make_cgroup(pids[0], pids);
	sys_sleep_ms(200);
	so.cgroup_path = cg_dir;
	rec = sys_open(&run, &so);
	sys_poll_until_exit(rec, pids, 2);
	sys_finish(rec, &run);
	sys_check_main(&run, pids[0], WL_LADDER_PATH, 95);
	CHECK_EQ(sys_count(&run, pids[1]), 0);
	CHECK_EQ(sys_count(&run, (int32_t)getpid()), 0);
	CHECK(sys_only(&run, &pids[0], 1));
	rec_run_close(&run);
	return T_EXIT_PASS;
}
