/* SPDX-License-Identifier: MIT */
/* Issue 20 item 6: files named by spool data open without blocking, regular, bounded. */

/*
 * sp__file_open_data() is how the symbolizer (and the recorder's image
 * cache) opens module paths, debug files, dwz files and perf maps:
 *   - a FIFO returns at once with -EINVAL (open(2) of a FIFO for reading
 *     blocks until a writer comes: the open runs in a child under alarm()
 *     so a regression fails instead of hanging);
 *   - a device or a directory is -EINVAL;
 *   - a file larger than the bound is -EFBIG, one at the bound opens;
 *   - a symbolic link is followed, except with SP__FILE_NOFOLLOW (-ELOOP);
 *   - the image opens (sp__image_open_path, sp__image_cache_get) take the
 *     same path: a FIFO where a module was is -EINVAL, promptly.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "file_open.h"
#include "image.h"

static char dir[64];

static const char *at(const char *name)
{
	static char buf[4][128];
	static int k;

	k = (k + 1) % 4;
	snprintf(buf[k], sizeof(buf[k]), "%s/%s", dir, name);
	return buf[k];
}

static int open_code(const char *path, uint32_t flags, uint64_t max)
{
	struct stat st;
	int fd = sp__file_open_data(path, flags, max, &st);

	if (fd >= 0) {
		CHECK(S_ISREG(st.st_mode));
		close(fd);
		return 0;
	}
	return fd;
}

/* Runs the FIFO opens in a child: a blocking open is killed by SIGALRM. */
static void test_fifo(void)
{
	struct sp__mem mem;
	struct sp__image *img;
	pid_t child;
	int status;

	CHECK(mkfifo(at("fifo"), 0600) == 0);
	child = fork();
	CHECK(child >= 0);
	if (child == 0) {
		alarm(10);
		sp__mem_init(&mem, NULL);
		if (open_code(at("fifo"), 0, 0) != -EINVAL ||
		    open_code(at("fifo"), SP__FILE_NOFOLLOW, 0) != -EINVAL ||
		    sp__image_open_path(&mem, at("fifo"), &img) != -EINVAL)
			_exit(1);
		_exit(0);
	}
	CHECK(waitpid(child, &status, 0) == child);
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "opening a FIFO blocked (signal %d)\n",
			WTERMSIG(status));
		exit(T_EXIT_FAIL);
	}
	CHECK_EQ_INT(WEXITSTATUS(status), 0);
}

int main(void)
{
	int fd;

	snprintf(dir, sizeof(dir), "/tmp/sp_issue20_open_XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	test_fifo();

	CHECK_EQ_INT(open_code("/dev/null", 0, 0), -EINVAL);
	CHECK_EQ_INT(open_code(dir, 0, 0), -EINVAL);
	CHECK_EQ_INT(open_code(at("missing"), 0, 0), -ENOENT);

	fd = open(at("file"), O_WRONLY | O_CREAT, 0600);
	CHECK(fd >= 0 && ftruncate(fd, 4096) == 0);
	close(fd);
	CHECK_EQ_INT(open_code(at("file"), 0, 4096), 0);
	CHECK_EQ_INT(open_code(at("file"), 0, 4095), -EFBIG);
	CHECK_EQ_INT(open_code(at("file"), 0, 0), 0);

	CHECK(symlink(at("file"), at("link")) == 0);
	CHECK_EQ_INT(open_code(at("link"), 0, 0), 0);
	CHECK_EQ_INT(open_code(at("link"), SP__FILE_NOFOLLOW, 0), -ELOOP);

	unlink(at("link"));
	unlink(at("file"));
	unlink(at("fifo"));
	CHECK(rmdir(dir) == 0);
	return T_EXIT_PASS;
}
