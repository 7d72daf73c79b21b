/* SPDX-License-Identifier: MIT */
/* Debug files through a real local debuginfod server (loopback). */
#include "native_test.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

/*
 * Starts Debian's `debuginfod -F` on a free loopback port over a
 * directory holding native_inline_prog (built with -g), strips a copy,
 * and points DEBUGINFOD_URLS at the server: the stripped copy must
 * resolve exactly like the original (names, files, lines, inline
 * frames), and the file must land in STACKPULSE_DEBUGINFOD_CACHE_DIR.
 * After the server is killed, a new symbolizer still resolves from our
 * cache. Skips (77) when the package is missing, the library was built
 * without libdebuginfod, or the server does not serve within 60 s. The
 * server is always killed (atexit). Argument 1: native_inline_prog.
 */

#define ADDRS 1000
#define OUT_MAX 16
#define READY_WAIT_S 60

static pid_t server = -1;
static char tmp[64];

static void cleanup(void)
{
	char cmd[128];
	int rc;

	if (server > 0) {
		kill(server, SIGTERM);
		waitpid(server, NULL, 0);
		server = -1;
	}
	if (tmp[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
		rc = system(cmd);
		(void)rc;
	}
}

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	CHECK(fd >= 0);
	CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

/* Does GET @path answer 200? A raw request: no client-side caching. */
static bool http_ok(int port, const char *path)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	char req[512], resp[64] = { 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0);
	bool ok = false;
	ssize_t n;

	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0)
		return false;
	snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\n\r\n", path);
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    write(fd, req, strlen(req)) == (ssize_t)strlen(req)) {
		n = read(fd, resp, sizeof(resp) - 1);
		ok = n > 12 && strstr(resp, " 200 ") != NULL;
	}
	close(fd);
	return ok;
}

static void start_server(int port, const char *dir)
{
	char portarg[32], db[128], log[128];
	int fd;

	snprintf(portarg, sizeof(portarg), "--port=%d", port);
	snprintf(db, sizeof(db), "%s/db.sqlite", tmp);
	snprintf(log, sizeof(log), "%s/server.log", tmp);
	server = fork();
	CHECK(server >= 0);
	if (server == 0) {
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execlp("debuginfod", "debuginfod", "-F", portarg, "-d", db,
		       "-t", "1", "-g", "0", dir, (char *)NULL);
		_exit(127);
	}
}

static bool wait_ready(int port, const char *id_hex)
{
	struct timespec d = { 0, 200 * 1000 * 1000 };
	char path[256];
	int i, status;

	snprintf(path, sizeof(path), "/buildid/%s/debuginfo", id_hex);
	for (i = 0; i < READY_WAIT_S * 5; i++) {
		if (waitpid(server, &status, WNOHANG) == server) {
			server = -1;
			return false;
		}
		if (http_ok(port, path))
			return true;
		nanosleep(&d, NULL);
	}
	return false;
}

static void check_same(struct sp__native *ref, const char *path,
		       const char *dirs, const uint64_t *addrs)
{
	struct sp_resolved_frame a[OUT_MAX], b[OUT_MAX];
	struct sp__native *native;
	struct sp__mem mem;
	size_t i, lines = 0;
	int na, nb, k;

	sp__mem_init(&mem, NULL);
	native = nt_open(&mem, path, dirs);
	for (i = 0; i < ADDRS; i++) {
		na = sp__native_lookup(ref, addrs[i], 0, a, OUT_MAX);
		nb = sp__native_lookup(native, addrs[i], 0, b, OUT_MAX);
		CHECK_EQ_INT(na, nb);
		for (k = 0; k < na; k++) {
			CHECK(strcmp(a[k].name, b[k].name) == 0);
			CHECK(strcmp(a[k].file ? a[k].file : "",
				     b[k].file ? b[k].file : "") == 0);
			CHECK_EQ(a[k].line, b[k].line);
			lines += b[k].file != NULL;
		}
	}
	CHECK(lines >= ADDRS / 2);
	sp__native_free(native);
}

static void hex_id(const char *path, char *out)
{
	const struct sp__image_id *id;
	struct sp__image *img;
	struct sp__mem mem;
	size_t i;

	sp__mem_init(&mem, NULL);
	CHECK_OK(sp__image_open_path(&mem, path, &img));
	id = sp__image_identity(img);
	CHECK(id->build_id_len > 0);
	for (i = 0; i < id->build_id_len; i++)
		sprintf(out + 2 * i, "%02x", id->build_id[i]);
	sp__image_unref(img);
}

int main(int argc, char **argv)
{
	char cmd[2048], id[2 * SP_BUILD_ID_MAX + 1], url[64], path[256];
	char stripped[128], cached[256], probe[PATH_MAX];
	struct nt_range r[256];
	struct sp__native *ref;
	uint64_t addrs[ADDRS];
	struct sp__mem mem;
	int port;

	if (argc < 2)
		return T_EXIT_FAIL;
	if (!nt_have_tool("debuginfod") || !nt_have_tool("strip")) {
		printf("SKIP: debuginfod (apt-get install debuginfod) or strip "
		       "missing\n");
		return T_EXIT_SKIP;
	}
	sp__mem_init(&mem, NULL);
	snprintf(tmp, sizeof(tmp), "/tmp/test_native_dinfod_XXXXXX");
	CHECK(mkdtemp(tmp) != NULL);
	atexit(cleanup);
	/* Both caches inside the temp dir: nothing lands in $HOME. */
	snprintf(path, sizeof(path), "%s/client-cache", tmp);
	setenv("DEBUGINFOD_CACHE_PATH", path, 1);
	snprintf(path, sizeof(path), "%s/ours", tmp);
	setenv("STACKPULSE_DEBUGINFOD_CACHE_DIR", path, 1);
	setenv("DEBUGINFOD_URLS", "http://127.0.0.1:1", 1);
	if (sp__debuginfod_find((const uint8_t *)"\1\2", 2, NULL, probe,
				sizeof(probe)) == -EOPNOTSUPP) {
		printf("SKIP: built without libdebuginfod\n");
		return T_EXIT_SKIP;
	}
	snprintf(stripped, sizeof(stripped), "%s/prog.stripped", tmp);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/srv && cp '%s' %s/srv/prog && "
		 "strip --strip-all -o %s '%s'",
		 tmp, argv[1], tmp, stripped, argv[1]);
	CHECK(system(cmd) == 0);
	hex_id(argv[1], id);
	port = free_port();
	snprintf(path, sizeof(path), "%s/srv", tmp);
	start_server(port, path);
	if (!wait_ready(port, id)) {
		printf("SKIP: debuginfod did not serve %s within %d s "
		       "(see %s/server.log)\n",
		       id, READY_WAIT_S, tmp);
		return T_EXIT_SKIP;
	}
	snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
	setenv("DEBUGINFOD_URLS", url, 1);
	snprintf(cached, sizeof(cached), "%s/ours/%s.debug", tmp, id);
	snprintf(path, sizeof(path), "%s/no-debug-dir", tmp);

	nt_pick(r, nt_func_ranges(argv[1], r, 256, 0), 5, addrs, ADDRS);
	ref = nt_open(&mem, argv[1], NULL);
	check_same(ref, stripped, path, addrs);
	CHECK(access(cached, R_OK) == 0);
	printf("resolved through debuginfod on port %d, cached in %s\n", port,
	       cached);
	/* Server gone: the next symbolizer is served from our cache. */
	kill(server, SIGTERM);
	waitpid(server, NULL, 0);
	server = -1;
	check_same(ref, stripped, path, addrs);
	printf("resolved again from the cache with the server stopped\n");
	sp__native_free(ref);
	return T_EXIT_PASS;
}
