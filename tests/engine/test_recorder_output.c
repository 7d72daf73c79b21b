/* SPDX-License-Identifier: MIT */
/* Kernel test: a recording that fails before it starts never touches its path. */

/*
 * Issue 20 item 3 and issue 13 "never clobber": sp_recorder_open() used
 * to truncate the output before checking the options, and a failed
 * attach afterwards left a 10-byte spool where a recording had been.
 * Each case puts a "previous recording" (a sentinel file) at the path and
 * checks what is there afterwards, byte for byte, and that no stray
 * temporary file is left in the directory:
 *   - refused options (rate, stack size, flags): untouched;
 *   - opened, attach to a gone pid, closed: untouched;
 *   - a recording that polls: the new spool at the path, the sentinel at
 *     PATH.old with SP_RECORDER_KEEP_OLD (replaced without it, and the
 *     new file is 0600 whatever the old one was), and a reader that had
 *     the old file open still reads it whole;
 *   - a symlink of ours to a regular file: the link stays, the file it
 *     leads to is replaced the same way (never truncated; its .old kept),
 *     and a recorder closed before its first poll leaves it alone;
 *   - an empty previous file does not push out PATH.old;
 *   - a chdir() between open and publish: published in the directory of
 *     the open;
 *   - /dev/null is written in place (and stays a device); a directory is
 *     -EISDIR, as is a KEEP_OLD publish whose PATH.old is a directory.
 * Exit 77 only when perf_event_open is refused.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stackpulse/recorder.h>
#include <stackpulse/snapshot.h>

#include "check.h"
#include "eng_util.h"
#include "threads_env.h"

static const char sentinel[] = "a previous recording, not to be lost\n";
static char dir[64], path[128], old[160];

static void put(const char *p, const char *data)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	CHECK(fd >= 0);
	CHECK_EQ((size_t)write(fd, data, strlen(data)), strlen(data));
	close(fd);
}

/* Whether @p holds exactly @data. */
static bool holds(const char *p, const char *data)
{
	char buf[256];
	int fd = open(p, O_RDONLY);
	ssize_t n;

	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	return n == (ssize_t)strlen(data) && memcmp(buf, data, (size_t)n) == 0;
}

/* Whether @p is a valid spool (what the recorder wrote). */
static bool is_spool(const char *p)
{
	struct sp_snapshot *snap;

	if (sp_snapshot_open(p, NULL, &snap) != 0)
		return false;
	sp_snapshot_close(snap);
	return true;
}

/* Entries of the test directory, "." and ".." aside. */
static int dir_entries(void)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	CHECK_PTR(d);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") != 0 &&
		     strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

static void reset(void)
{
	unlink(path);
	unlink(old);
	rmdir(old);
	CHECK_EQ_INT(dir_entries(), 0);
	put(path, sentinel);
}

static struct sp_recorder_opts opts(uint32_t flags)
{
	struct sp_recorder_opts o = { .size = sizeof(o) };

	o.threads = test_threads();
	o.sample_hz = 999;
	o.flags = flags;
	return o;
}

/* A pid that existed and is gone (reaped). */
static pid_t gone_pid(void)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(0);
	CHECK(pid > 0);
	waitpid(pid, NULL, 0);
	return pid;
}

static void test_refused_options(void)
{
	struct sp_recorder_opts o = opts(SP_RECORDER_KEEP_OLD);
	struct sp_recorder *rec = NULL;

	reset();
	o.sample_hz = 100000000;
	CHECK_EQ_INT(sp_recorder_open(path, &o, &rec), SP_EFREQ);
	o = opts(SP_RECORDER_KEEP_OLD);
	o.stack_size = 65536;
	CHECK_EQ_INT(sp_recorder_open(path, &o, &rec), -EINVAL);
	o = opts(0x80000000u);
	CHECK_EQ_INT(sp_recorder_open(path, &o, &rec), -EINVAL);
	CHECK(rec == NULL);
	CHECK(holds(path, sentinel));
	CHECK_EQ_INT(dir_entries(), 1);
}

static void test_failed_attach(void)
{
	struct sp_recorder_opts o = opts(SP_RECORDER_KEEP_OLD);
	struct sp_recorder *rec;
	int r;

	reset();
	CHECK_OK(sp_recorder_open(path, &o, &rec));
	r = sp_recorder_attach(rec, gone_pid(), SP_ATTACH_STOP_WHILE_ATTACHING);
	CHECK(r == SP_ETARGETGONE || r == SP_EXITED);
	CHECK(holds(path, sentinel)); /* also while the recorder is open */
	sp_recorder_close(rec);
	CHECK(holds(path, sentinel));
	CHECK_EQ_INT(dir_entries(), 1);
}

/* Records a busy child for a few polls, with sp_recorder_opts @flags. */
static void record_child(uint32_t flags)
{
	struct sp_recorder_opts o = opts(flags);
	struct sp_recorder *rec;
	pid_t child = fork();
	int i;

	if (child == 0)
		for (;;)
			;
	CHECK(child > 0);
	CHECK_OK(sp_recorder_open(path, &o, &rec));
	eng_skip_if_refused(sp_recorder_attach(rec, child, SP_ATTACH_RUNNING));
	for (i = 0; i < 5; i++)
		CHECK_OK(sp_recorder_poll(rec, 20, NULL));
	CHECK(is_spool(path)); /* published at the first poll */
	CHECK_OK(sp_recorder_finish(rec));
	sp_recorder_close(rec);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
}

static void test_recording_starts(void)
{
	char buf[sizeof(sentinel)];
	struct stat st;
	int reader;

	reset();
	reader = open(path, O_RDONLY);
	CHECK(reader >= 0);
	record_child(SP_RECORDER_KEEP_OLD);
	CHECK(is_spool(path));
	CHECK(holds(old, sentinel));
	/* Renamed, not truncated: an open reader still has it all. */
	CHECK_EQ((size_t)read(reader, buf, sizeof(buf)), strlen(sentinel));
	close(reader);
	CHECK_EQ_INT(dir_entries(), 2);
	/* Without KEEP_OLD the previous file is replaced, 0600 (was 0644). */
	reset();
	record_child(0);
	CHECK(is_spool(path));
	CHECK_EQ_INT(dir_entries(), 1);
	CHECK_OK(stat(path, &st));
	CHECK_EQ_INT((int)(st.st_mode & 0777), 0600);
	/* An empty previous file does not push an older PATH.old out. */
	reset();
	put(old, sentinel);
	put(path, "");
	record_child(SP_RECORDER_KEEP_OLD);
	CHECK(is_spool(path));
	CHECK(holds(old, sentinel));
}

static void test_symlink(void)
{
	struct sp_recorder_opts o = opts(SP_RECORDER_KEEP_OLD);
	struct sp_recorder *rec;
	char victim[160], victim_old[170];
	struct stat st;

	snprintf(victim, sizeof(victim), "%s/victim", dir);
	snprintf(victim_old, sizeof(victim_old), "%s.old", victim);
	reset();
	unlink(path);
	unlink(old);
	put(victim, sentinel);
	CHECK_OK(symlink(victim, path));
	CHECK_OK(sp_recorder_open(path, &o, &rec));
	sp_recorder_close(rec);
	CHECK(holds(victim, sentinel));
	record_child(SP_RECORDER_KEEP_OLD);
	CHECK_OK(lstat(path, &st));
	CHECK(S_ISLNK(st.st_mode));
	CHECK(is_spool(victim));
	CHECK(holds(victim_old, sentinel));
	CHECK_EQ_INT(access(old, F_OK), -1);
	unlink(path);
	unlink(victim);
	unlink(victim_old);
}

static void test_chdir(void)
{
	struct sp_recorder_opts o = opts(SP_RECORDER_KEEP_OLD);
	struct sp_recorder *rec;
	char rel[] = "rec.spool", here[256];

	reset();
	CHECK_PTR(getcwd(here, sizeof(here)));
	CHECK_OK(chdir(dir));
	CHECK_OK(sp_recorder_open(rel, &o, &rec));
	CHECK_OK(chdir("/"));
	CHECK_OK(sp_recorder_finish(rec));
	sp_recorder_close(rec);
	CHECK_OK(chdir(here));
	CHECK(is_spool(path));
	CHECK(holds(old, sentinel));
	CHECK_EQ_INT(access("/rec.spool", F_OK), -1);
}

static void test_special(void)
{
	struct sp_recorder_opts o = opts(SP_RECORDER_KEEP_OLD);
	struct sp_recorder *rec;
	struct stat st;

	CHECK_OK(sp_recorder_open("/dev/null", &o, &rec));
	CHECK_OK(sp_recorder_finish(rec));
	sp_recorder_close(rec);
	CHECK_OK(stat("/dev/null", &st));
	CHECK(S_ISCHR(st.st_mode));
	CHECK_EQ_INT(access("/dev/null.old", F_OK), -1);
	CHECK_EQ_INT(sp_recorder_open(dir, &o, &rec), -EISDIR);
	reset();
	CHECK_OK(mkdir(old, 0755));
	CHECK_EQ_INT(sp_recorder_open(path, &o, &rec), -EISDIR);
	CHECK(holds(path, sentinel));
	CHECK_OK(rmdir(old));
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/sp_output_%d", (int)getpid());
	snprintf(path, sizeof(path), "%s/rec.spool", dir);
	snprintf(old, sizeof(old), "%s.old", path);
	CHECK_OK(mkdir(dir, 0755));
	test_refused_options();
	test_failed_attach();
	test_recording_starts();
	test_symlink();
	test_chdir();
	test_special();
	unlink(path);
	unlink(old);
	CHECK_OK(rmdir(dir));
	return T_EXIT_PASS;
}
