/* SPDX-License-Identifier: MIT */
/* Issue 20 items 1, 2, 14: output files never destroy or expose what was there. */

/*
 * What sp_sink_open_file() and sp_sink_open_uring() do with the name they
 * are given (out_file.c):
 *   - a new file is mode 0600 whatever the umask allows;
 *   - an existing regular file is replaced by a new inode: a hard link to
 *     it (another user's file, the spool being read) keeps its bytes;
 *   - a character device is written as it is: flush does not fail (it
 *     was fdatasync's EINVAL), /dev/full reports ENOSPC, and the node is
 *     still there afterwards; a FIFO is written to a reader;
 *   - a symbolic link another user planted in a sticky world-writable
 *     directory is not followed (-ELOOP), also as a link of a chain;
 *     one of our own is, and what it leads to is replaced as if named,
 *     never truncated (a hard link to it keeps the old bytes);
 *   - /proc/self/fd/N (/dev/stdout): a pipe or a memfd written as it is,
 *     a named file replaced where it is;
 *   - replacing another user's file in a sticky directory is refused at
 *     open (-EPERM), not at commit;
 *   - a directory is -EISDIR.
 * Device nodes are private copies made with mknod (1,3 = null, 1,7 =
 * full) in a temporary directory, so a regression can never remove the
 * system's /dev/null; the parts that need root skip without it.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stackpulse/sink.h>

#include "check.h"

static char dir[64];

static const char *at(const char *name)
{
	static char buf[4][128];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, name);
	return buf[k];
}

static void put_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	CHECK(fd >= 0);
	CHECK_EQ(write(fd, text, strlen(text)), strlen(text));
	close(fd);
	CHECK(chmod(path, mode) == 0);
}

static void expect_file(const char *path, const char *text)
{
	char buf[256];
	int fd = open(path, O_RDONLY);
	ssize_t n;

	CHECK(fd >= 0);
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	CHECK(n >= 0);
	buf[n] = '\0';
	if (strcmp(buf, text) != 0) {
		fprintf(stderr, "%s holds \"%s\", expected \"%s\"\n", path, buf,
			text);
		exit(T_EXIT_FAIL);
	}
}

static void write_all(const char *path, const char *text)
{
	struct sp_sink *s;

	CHECK_OK(sp_sink_open_file(path, NULL, &s));
	CHECK_OK(sp_sink_write(s, text, strlen(text)));
	CHECK_OK(sp_sink_flush(s));
	CHECK_OK(sp_sink_finish(s));
	sp_sink_free(s);
}

/* No temporary ".NAME.XXXXXX" file of a sink is left in the directory. */
static void expect_no_temp(void)
{
	struct dirent *e;
	DIR *d = opendir(dir);

	CHECK(d != NULL);
	while ((e = readdir(d)))
		if (e->d_name[0] == '.' && strcmp(e->d_name, ".") &&
		    strcmp(e->d_name, "..")) {
			fprintf(stderr, "left behind: %s\n", e->d_name);
			exit(T_EXIT_FAIL);
		}
	closedir(d);
}

static void test_new_file_mode(void)
{
	struct stat st;
	mode_t old = umask(0);

	write_all(at("new.spool"), "fresh");
	umask(old);
	CHECK(stat(at("new.spool"), &st) == 0);
	CHECK_EQ(st.st_mode & 07777, 0600);
	expect_file(at("new.spool"), "fresh");
}

/* A hard link to the output (or the input being read) keeps its bytes. */
static void test_hard_link_kept(void)
{
	struct stat a, b;

	put_file(at("a"), "OLD", 0644);
	CHECK(link(at("a"), at("b")) == 0);
	write_all(at("a"), "NEW");
	expect_file(at("a"), "NEW");
	expect_file(at("b"), "OLD");
	CHECK(stat(at("a"), &a) == 0 && stat(at("b"), &b) == 0);
	CHECK(a.st_ino != b.st_ino);
	CHECK_EQ(a.st_mode & 07777, 0600);
	CHECK_EQ(b.st_mode & 07777, 0644);
}

static void test_uring_new_file(void)
{
	struct sp_sink *s;
	struct stat st;

	put_file(at("u"), "OLD-OLD-OLD", 0644);
	CHECK(link(at("u"), at("u2")) == 0);
	CHECK_OK(sp_sink_open_uring(at("u"), NULL, &s));
	CHECK_OK(sp_sink_write(s, "uring", 5));
	CHECK_OK(sp_sink_flush(s));
	CHECK_OK(sp_sink_finish(s));
	sp_sink_free(s);
	expect_file(at("u"), "uring");
	expect_file(at("u2"), "OLD-OLD-OLD");
	CHECK(stat(at("u"), &st) == 0);
	CHECK_EQ(st.st_mode & 07777, 0600);
}

static void test_char_devices(void)
{
	struct sp_sink *s;
	struct stat st;

	if (mknod(at("null"), S_IFCHR | 0666, makedev(1, 3)) < 0 ||
	    mknod(at("full"), S_IFCHR | 0666, makedev(1, 7)) < 0) {
		fprintf(stderr,
			"no mknod (needs root): device cases skipped\n");
		return;
	}
	write_all(at("null"), "to /dev/null");
	CHECK(lstat(at("null"), &st) == 0 && S_ISCHR(st.st_mode));

	CHECK_OK(sp_sink_open_file(at("full"), NULL, &s));
	CHECK_EQ_INT(sp_sink_write(s, "x", 1), -ENOSPC);
	sp_sink_free(s);
	CHECK(lstat(at("full"), &st) == 0 && S_ISCHR(st.st_mode));

	/* The threaded recorder's sink: datasync skipped on a device too. */
	{
		struct sp_sink_opts o = {
			.size = sizeof(o),
			.flags = SP_SINK_URING_DATASYNC,
		};

		CHECK_OK(sp_sink_open_uring(at("null"), &o, &s));
		CHECK_OK(sp_sink_write(s, "abc", 3));
		CHECK_OK(sp_sink_flush(s));
		sp_sink_free(s);
		CHECK(lstat(at("null"), &st) == 0 && S_ISCHR(st.st_mode));
	}
}

static void test_fifo(void)
{
	char buf[64];
	int p[2], status;
	ssize_t n;
	pid_t child;
	struct stat st;

	CHECK(mkfifo(at("fifo"), 0600) == 0);
	CHECK(pipe(p) == 0);
	child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		int fd = open(at("fifo"), O_RDONLY);

		n = fd < 0 ? -1 : read(fd, buf, sizeof(buf));
		if (n > 0)
			(void)!write(p[1], buf, (size_t)n);
		_exit(n > 0 ? 0 : 1);
	}
	close(p[1]);
	write_all(at("fifo"), "through a pipe");
	n = read(p[0], buf, sizeof(buf) - 1);
	CHECK(n > 0);
	buf[n] = '\0';
	CHECK(strcmp(buf, "through a pipe") == 0);
	CHECK(waitpid(child, &status, 0) == child && status == 0);
	close(p[0]);
	CHECK(lstat(at("fifo"), &st) == 0 && S_ISFIFO(st.st_mode));
}

static void expect_link(const char *path)
{
	struct stat st;

	CHECK(lstat(path, &st) == 0 && S_ISLNK(st.st_mode));
}

/* fs.protected_symlinks in user space: whose link, in which directory. */
static void test_symlinks(void)
{
	char shared[128], link_path[160], chain[160];
	struct sp_sink *s;
	struct stat st;

	/* Our own link: the file it leads to is replaced, the link stays. */
	put_file(at("victim"), "SECRET", 0644);
	CHECK(symlink("victim", at("mine")) == 0);
	CHECK(link(at("victim"), at("victim2")) == 0);
	write_all(at("mine"), "through my own link");
	expect_link(at("mine"));
	expect_file(at("victim"), "through my own link");
	/* Replaced, not emptied and rewritten: its hard link keeps it. */
	expect_file(at("victim2"), "SECRET");
	CHECK(unlink(at("victim2")) == 0);
	CHECK(stat(at("victim"), &st) == 0);
	CHECK_EQ(st.st_mode & 07777, 0600);

	/* Followed or not, a link never truncates what it leads to. */
	put_file(at("victim"), "KEPT", 0600);
	CHECK_OK(sp_sink_open_file_atomic(at("mine"), NULL, &s));
	CHECK_OK(sp_sink_write(s, "half", 4));
	expect_file(at("victim"), "KEPT");
	sp_sink_free(s);
	expect_file(at("victim"), "KEPT");
	expect_link(at("mine"));

	put_file(at("victim"), "SECRET", 0600);
	snprintf(shared, sizeof(shared), "%s/tmp", dir);
	CHECK(mkdir(shared, 0777) == 0 && chmod(shared, 01777) == 0);
	snprintf(link_path, sizeof(link_path), "%s/planted", shared);
	CHECK(symlink(at("victim"), link_path) == 0);
	/* Our link to another user's: every link of a chain is judged. */
	snprintf(chain, sizeof(chain), "%s", at("chain"));
	CHECK(symlink(link_path, chain) == 0);
	if (geteuid() != 0 || lchown(link_path, 65534, 65534) < 0) {
		fprintf(stderr, "not root: planted-link case skipped\n");
	} else {
		CHECK_EQ_INT(sp_sink_open_file(link_path, NULL, &s), -ELOOP);
		CHECK_EQ_INT(sp_sink_open_uring(link_path, NULL, &s), -ELOOP);
		CHECK_EQ_INT(sp_sink_open_file(chain, NULL, &s), -ELOOP);
		expect_file(at("victim"), "SECRET");
		expect_link(link_path);
	}
	CHECK(unlink(chain) == 0);
	CHECK(unlink(link_path) == 0 && rmdir(shared) == 0);
	CHECK_EQ_INT(sp_sink_open_file(dir, NULL, &s), -EISDIR);
}

/*
 * /dev/stdout and /dev/fd/N: a descriptor's file. A pipe is written as
 * it is; a named regular file is replaced where it is (a shell's `>`);
 * a memfd (no name) is written in place, emptied first.
 */
static void test_proc_fd_links(void)
{
	char name[64], buf[64];
	int p[2], fd;
	ssize_t n;

	CHECK(pipe(p) == 0);
	snprintf(name, sizeof(name), "/proc/self/fd/%d", p[1]);
	write_all(name, "piped");
	n = read(p[0], buf, sizeof(buf) - 1);
	CHECK(n == 5 && memcmp(buf, "piped", 5) == 0);
	close(p[0]);
	close(p[1]);

	put_file(at("redirected"), "BEFORE", 0644);
	fd = open(at("redirected"), O_WRONLY);
	CHECK(fd >= 0);
	snprintf(name, sizeof(name), "/proc/self/fd/%d", fd);
	write_all(name, "after");
	close(fd);
	expect_file(at("redirected"), "after");

	fd = memfd_create("sp_out", 0);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, "0123456789", 10), 10);
	snprintf(name, sizeof(name), "/proc/self/fd/%d", fd);
	write_all(name, "memfd");
	n = pread(fd, buf, sizeof(buf), 0);
	CHECK(n == 5 && memcmp(buf, "memfd", 5) == 0);
	close(fd);
}

/*
 * A rename the sticky bit forbids is refused at open, not at commit: a
 * user's export (or recording) over another user's file in a shared
 * /tmp-like directory fails before any work, and the file is intact.
 */
static void test_sticky(void)
{
	char shared[64], victim[96];
	int status;
	pid_t child;

	if (geteuid() != 0) {
		fprintf(stderr, "not root: sticky-bit case skipped\n");
		return;
	}
	snprintf(shared, sizeof(shared), "/tmp/sp_issue20_sticky_XXXXXX");
	CHECK(mkdtemp(shared) != NULL);
	CHECK(chmod(shared, 01777) == 0);
	snprintf(victim, sizeof(victim), "%s/root.spool", shared);
	put_file(victim, "ROOT", 0644);
	child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		struct sp_sink *s;

		if (setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(3);
		_exit(sp_sink_open_file_atomic(victim, NULL, &s) == -EPERM ? 0 :
									     1);
	}
	CHECK(waitpid(child, &status, 0) == child);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	expect_file(victim, "ROOT");
	CHECK(unlink(victim) == 0 && rmdir(shared) == 0);
}

int main(void)
{
	snprintf(dir, sizeof(dir), "/tmp/sp_issue20_out_XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	test_new_file_mode();
	test_hard_link_kept();
	test_uring_new_file();
	test_char_devices();
	test_fifo();
	test_symlinks();
	test_proc_fd_links();
	test_sticky();
	expect_no_temp();
	{
		char cmd[128];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		CHECK(system(cmd) == 0);
	}
	return T_EXIT_PASS;
}
