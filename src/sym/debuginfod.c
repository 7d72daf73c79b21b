/* SPDX-License-Identifier: MIT */
/* Debug files from debuginfod servers (libdebuginfod), kept in our cache dir. */
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "atomic.h"
#include "logging.h"
#include "native_internal.h"

/*
 * Used only when DEBUGINFOD_URLS is set and non-empty (the client reads
 * the URLs itself). Files are kept under our cache directory:
 *
 *   STACKPULSE_DEBUGINFOD_CACHE_DIR
 *   > $XDG_CACHE_HOME/stackpulse/debuginfod
 *   > $HOME/.cache/stackpulse/debuginfod
 *   > ${TMPDIR:-/tmp}/stackpulse-debuginfod
 *
 *   <cache>/<hex build-id>.debug
 *
 * libdebuginfod 0.188 has no API to choose its cache directory (only the
 * DEBUGINFOD_CACHE_PATH environment variable, and setenv() is process-
 * global and unsafe next to other threads), so it downloads into its own
 * cache and we hard-link the result into ours (a copy when the two are on
 * different file systems), through a temporary name and rename() so a
 * reader never sees half a file. A hit in our cache needs no client and
 * no network. When our cache is unusable the client's path is returned.
 */

static uint64_t tmp_seq;

/* mkdir -p with mode 0700 for the components we create. */
static int make_dirs(char *path)
{
	char *p;

	for (p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(path, 0700) != 0 && errno != EEXIST) {
			*p = '/';
			return -errno;
		}
		*p = '/';
	}
	if (mkdir(path, 0700) != 0 && errno != EEXIST)
		return -errno;
	return 0;
}

static int cache_dir(char *dir, size_t cap)
{
	const char *v;
	int n;

	if ((v = getenv("STACKPULSE_DEBUGINFOD_CACHE_DIR")) && v[0])
		n = snprintf(dir, cap, "%s", v);
	else if ((v = getenv("XDG_CACHE_HOME")) && v[0])
		n = snprintf(dir, cap, "%s/stackpulse/debuginfod", v);
	else if ((v = getenv("HOME")) && v[0])
		n = snprintf(dir, cap, "%s/.cache/stackpulse/debuginfod", v);
	else
		n = snprintf(dir, cap, "%s/stackpulse-debuginfod",
			     (v = getenv("TMPDIR")) && v[0] ? v : "/tmp");
	if (n < 0 || (size_t)n >= cap)
		return -ENAMETOOLONG;
	return make_dirs(dir);
}

static bool usable_file(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0;
}

static int copy_fd(int in, int out)
{
	char buf[8192];
	ssize_t n, w, off;

	if (lseek(in, 0, SEEK_SET) < 0)
		return -errno;
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		for (off = 0; off < n; off += w) {
			w = write(out, buf + off, (size_t)(n - off));
			if (w < 0 && errno != EINTR)
				return -errno;
			w = w < 0 ? 0 : w;
		}
	}
	return 0;
}

/* Places the downloaded file at @final: hard link, else copy; then rename. */
static int store(const char *client_path, int fd, const char *final)
{
	char tmp[PATH_MAX];
	int out, err = 0, n;

	n = snprintf(tmp, sizeof(tmp), "%s.%d.%llu.tmp", final, (int)getpid(),
		     (unsigned long long)sp__fetch_add_u64(&tmp_seq, 1));
	if (n < 0 || (size_t)n >= sizeof(tmp))
		return -ENAMETOOLONG;
	if (!client_path || link(client_path, tmp) != 0) {
		out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (out < 0)
			return -errno;
		err = copy_fd(fd, out);
		if (close(out) != 0 && err == 0)
			err = -errno;
	}
	if (err == 0 && rename(tmp, final) != 0)
		err = -errno;
	if (err < 0)
		unlink(tmp);
	return err;
}

static void hex(const uint8_t *id, size_t len, char *out)
{
	static const char digits[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < len; i++) {
		out[2 * i] = digits[id[i] >> 4];
		out[2 * i + 1] = digits[id[i] & 15];
	}
	out[2 * len] = '\0';
}

/* Asks the servers; on success *@fd and *@client_path (malloc'd by it). */
static int query(const uint8_t *build_id, size_t len, int *fd,
		 char **client_path)
{
	debuginfod_client *client = debuginfod_begin();

	if (!client)
		return -ENOMEM;
	*fd = debuginfod_find_debuginfo(client, build_id, (int)len,
					client_path);
	debuginfod_end(client);
	return *fd < 0 ? *fd : 0;
}

/* Falls back to the client's own cached copy when ours failed. */
static int use_client_path(const char *client_path, int err, char *path,
			   size_t path_cap, const struct sp_logger *logger)
{
	int n;

	if (!client_path)
		return err;
	sp__log(logger, SP_LOG_INFO, "debuginfod: our cache unusable: %s",
		strerror(-err));
	n = snprintf(path, path_cap, "%s", client_path);
	return n < 0 || (size_t)n >= path_cap ? -ENAMETOOLONG : 0;
}

int sp__debuginfod_find(const uint8_t *build_id, size_t len,
			const struct sp_logger *logger, char *path,
			size_t path_cap)
{
	char dir[PATH_MAX], id[2 * SP_BUILD_ID_MAX + 1];
	const char *urls = getenv("DEBUGINFOD_URLS");
	char *client_path = NULL;
	int cache_err, err, fd, n;

	if (!urls || !urls[0] || len == 0 || len > SP_BUILD_ID_MAX)
		return -ENOENT;
	hex(build_id, len, id);
	cache_err = cache_dir(dir, sizeof(dir));
	if (cache_err == 0) {
		n = snprintf(path, path_cap, "%s/%s.debug", dir, id);
		if (n < 0 || (size_t)n >= path_cap)
			cache_err = -ENAMETOOLONG;
		else if (usable_file(path))
			return 0;
	}
	err = query(build_id, len, &fd, &client_path);
	if (err < 0) {
		sp__log(logger, SP_LOG_DEBUG, "debuginfod: %s: %s", id,
			strerror(-err));
		return err == -ENOMEM ? err : -ENOENT;
	}
	err = cache_err < 0 ? cache_err : store(client_path, fd, path);
	if (err < 0)
		err = use_client_path(client_path, err, path, path_cap, logger);
	close(fd);
	/* The client allocates the path with malloc(); free() is its pair. */
	free(client_path);
	return err;
}
