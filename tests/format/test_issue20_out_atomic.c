/* SPDX-License-Identifier: MIT */
/* Issue 20 items 1, 2: an atomic output file appears whole at finish, or not at all. */

/*
 * sp_sink_open_file_atomic() is what `spulse export -o` writes through:
 *   - until sp_sink_finish() the old file is untouched (an export that
 *     reads it, even through a hard link, still sees the recording);
 *   - freed without finishing, the new file (unnamed until then, not
 *     even a temporary directory entry) is gone and the old
 *     file is byte for byte what it was (nothing is unlinked that the
 *     sink did not create);
 *   - finished, the name leads to the new bytes, mode 0600, while a
 *     descriptor opened on the old file still reads the old bytes.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <stackpulse/sink.h>

#include "check.h"

static char dir[64];
static char path[128];

static void put_file(const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	CHECK(fd >= 0);
	CHECK_EQ((size_t)write(fd, text, strlen(text)), strlen(text));
	close(fd);
}

static void expect_fd(int fd, const char *text)
{
	char buf[64];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);

	CHECK(n >= 0);
	buf[n] = '\0';
	if (strcmp(buf, text) != 0) {
		fprintf(stderr, "read \"%s\", expected \"%s\"\n", buf, text);
		exit(T_EXIT_FAIL);
	}
}

static void expect_path(const char *text)
{
	int fd = open(path, O_RDONLY);

	CHECK(fd >= 0);
	expect_fd(fd, text);
	close(fd);
}

static int entries(void)
{
	struct dirent *e;
	DIR *d = opendir(dir);
	int n = 0;

	CHECK(d != NULL);
	while ((e = readdir(d)))
		n += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	closedir(d);
	return n;
}

int main(void)
{
	struct sp_sink *s;
	struct stat st;
	int old_fd;

	snprintf(dir, sizeof(dir), "/tmp/sp_issue20_atomic_XXXXXX");
	CHECK(mkdtemp(dir) != NULL);
	snprintf(path, sizeof(path), "%s/out.svg", dir);

	/* Abandoned: nothing changes, nothing is left. */
	put_file("OLD");
	CHECK_OK(sp_sink_open_file_atomic(path, NULL, &s));
	CHECK_EQ_INT(entries(), 1); /* the new file is unnamed (O_TMPFILE) */
	CHECK_OK(sp_sink_write(s, "NEW", 3));
	CHECK_OK(sp_sink_flush(s));
	expect_path("OLD");
	sp_sink_free(s);
	expect_path("OLD");
	CHECK_EQ_INT(entries(), 1);

	/* Finished: the new bytes under the name, the old inode intact. */
	old_fd = open(path, O_RDONLY);
	CHECK(old_fd >= 0);
	CHECK_OK(sp_sink_open_file_atomic(path, NULL, &s));
	CHECK_OK(sp_sink_write(s, "NEW", 3));
	CHECK_OK(sp_sink_finish(s));
	CHECK_OK(sp_sink_finish(s)); /* again: 0, nothing more happens */
	sp_sink_free(s);
	expect_path("NEW");
	expect_fd(old_fd, "OLD");
	close(old_fd);
	CHECK(stat(path, &st) == 0);
	CHECK_EQ(st.st_mode & 07777, 0600);
	CHECK_EQ_INT(entries(), 1);

	/* A missing file never appears when the writer gives up. */
	CHECK(unlink(path) == 0);
	CHECK_OK(sp_sink_open_file_atomic(path, NULL, &s));
	CHECK_OK(sp_sink_write(s, "partial", 7));
	sp_sink_free(s);
	CHECK(access(path, F_OK) < 0 && errno == ENOENT);
	CHECK_EQ_INT(entries(), 0);

	CHECK_EQ_INT(sp_sink_open_file_atomic(NULL, NULL, &s), -EINVAL);
	CHECK_EQ_INT(sp_sink_open_file_atomic("/nonexistent-dir/x", NULL, &s),
		     -ENOENT);
	CHECK(rmdir(dir) == 0);
	return T_EXIT_PASS;
}
