/* SPDX-License-Identifier: MIT */
/* The io_uring sink: round trips, a full disk mid-stream, allocation failure, fallback. */

/*
 * Every recording is also written into a memory sink with the same calls;
 * the file the uring sink leaves must be byte-identical to it (the writer
 * and zstd are deterministic), and Snapshot must read it back.
 *
 *   roundtrip  plain and zstd, with 4 buffers and 16 KiB chunks, so the
 *              pool is recycled hundreds of times; a buffer smaller than
 *              some chunks mixes queued and synchronous writes
 *   fsize      RLIMIT_FSIZE makes writes fail with EFBIG mid-stream: the
 *              error is reported, the file is then a byte prefix of the
 *              reference ending on a chunk boundary (Snapshot: whole
 *              records, not recovered), and after the limit is lifted the
 *              retried call succeeds and the file is complete
 *   alloc      the N-th allocation of open fails, N = 1, 2, ...: -ENOMEM,
 *              nothing leaked (bytes, descriptors, rings)
 *   fd         a caller's descriptor: starts at its position, stays open,
 *              is left at the end of the data; bad descriptors rejected
 *   fallback   a child whose seccomp filter refuses io_uring_setup gets a
 *              working pwrite sink and one logged warning
 *
 * Each case runs with io_uring and with SP_SINK_URING_PWRITE.
 */
#include <dirent.h>
#include <linux/filter.h>
#include <linux/io_uring.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format/reader_common.h"

_Static_assert(sizeof(struct sp_sink_opts) == 48, "struct sp_sink_opts is ABI");
_Static_assert(offsetof(struct sp_sink_opts, flags) == 24,
	       "struct sp_sink_opts is ABI");
_Static_assert(offsetof(struct sp_sink_opts, uring_buf_size) == 40,
	       "struct sp_sink_opts is ABI");

#define CHUNK (16 * 1024)

/* ---- helpers ---- */

static void *slurp(const char *path, size_t *len)
{
	struct stat st;
	void *p;
	int fd = open(path, O_RDONLY);

	CHECK(fd >= 0);
	CHECK_EQ(fstat(fd, &st), 0);
	*len = (size_t)st.st_size;
	p = malloc(*len + 1);
	CHECK_PTR(p);
	CHECK_EQ(read(fd, p, *len), *len);
	close(fd);
	return p;
}

/* Open descriptors, and how many of them are io_uring instances. */
static int count_fds(int *rings)
{
	char path[300], target[64];
	struct dirent *de;
	DIR *d = opendir("/proc/self/fd");
	int n = 0;
	ssize_t len;

	CHECK_PTR(d);
	*rings = 0;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		n++;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", de->d_name);
		len = readlink(path, target, sizeof(target) - 1);
		if (len <= 0)
			continue;
		target[len] = 0;
		*rings += strstr(target, "io_uring") != NULL;
	}
	closedir(d);
	return n - 1; /* the directory itself */
}

/*
 * Whether this process may set up a ring: not disabled by the sysctl,
 * and the system call exists (qemu-user has none: the sink then falls
 * back to pwrite, which the rest of the test still checks).
 */
static int uring_enabled(void)
{
	FILE *f = fopen("/proc/sys/kernel/io_uring_disabled", "r");
	struct io_uring_params p;
	int v = 0;
	long fd;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = 0;
		fclose(f);
	}
	if (v != 0)
		return 0;
	memset(&p, 0, sizeof(p));
	fd = syscall(__NR_io_uring_setup, 1, &p);
	if (fd < 0)
		return 0;
	close((int)fd);
	return 1;
}

static struct sp_writer *writer_on(struct sp_sink *sink, int zstd)
{
	struct sp_writer_opts o = { .size = sizeof(o) };
	struct sp_sink *z;
	struct sp_writer *w;

	o.start_timestamp_us = 1700000000000000ull;
	o.sample_interval_us = 1000;
	o.chunk_size = CHUNK;
	if (zstd) {
		CHECK_OK(
			sp_sink_new_zstd(sink, SINK_OPTS(.zstd_level = 1), &z));
		sink = z;
	}
	CHECK_OK(sp_writer_new(sink, &o, &w));
	return w;
}

static void check_same_file(const char *a, const char *b)
{
	size_t alen, blen;
	void *pa = slurp(a, &alen), *pb = slurp(b, &blen);

	CHECK_MEM(pa, alen, pb, blen);
	free(pa);
	free(pb);
}

/* ---- round trip ---- */

static void test_roundtrip(uint32_t flags, int zstd, size_t buf_size)
{
	struct sp_sink_opts o = { .size = sizeof(o) };
	const char *path = tmp_path("uring.spool");
	struct recording *rec, *ref;
	struct sp_sink *sink, *mem;
	struct sp_writer *w;
	int rings;

	o.uring_queue_depth = 4;
	o.uring_buf_size = buf_size;
	o.flags = flags | SP_SINK_URING_DATASYNC;
	CHECK_OK(sp_sink_open_uring(path, &o, &sink));
	count_fds(&rings);
	if (uring_enabled())
		CHECK_EQ_INT(rings, (flags & SP_SINK_URING_PWRITE) ? 0 : 1);
	w = writer_on(sink, zstd);
	rec = gen_recording(w, 7, 60000);
	CHECK_OK(sp_writer_flush(w));
	CHECK_OK(sp_writer_finish(w));
	sp_writer_free(w);
	verify_snapshot(path, rec);

	w = mem_writer(zstd, CHUNK, &mem);
	ref = gen_recording(w, 7, 60000);
	CHECK_OK(sp_writer_flush(w));
	finish_to_file(w, mem, tmp_path("ref.spool"));
	CHECK(ref->nsamples == rec->nsamples);
	check_same_file(path, tmp_path("ref.spool"));
	rec_free(rec);
	rec_free(ref);
}

/* ---- full file system (RLIMIT_FSIZE) ---- */

#define FS_SAMPLES 40000

static int feed_sample(struct sp_writer *w, uint64_t i)
{
	struct sp_frame f[8];
	size_t k, depth = 3 + i % 6;

	for (k = 0; k < depth; k++) {
		memset(&f[k], 0, sizeof(f[k]));
		f[k].abs_ip = 0x400000 + ((i * 7 + k * 13) % 5000) * 16;
		f[k].file_relative_ip = f[k].abs_ip;
		f[k].module_id = SP_NO_MODULE;
		f[k].mode = SP_FRAME_USER;
	}
	return sp_writer_sample(w, 1000000 + i * 1000, 100,
				101 + (int32_t)(i % 3), f, depth);
}

/* The reference bytes of the whole feed, and where each chunk ends. */
struct reference {
	unsigned char *data;
	size_t len, cap;
	size_t ends[4096];
	size_t nends;
};

static int ref_write(void *ctx, const void *buf, size_t len)
{
	struct reference *r = ctx;

	if (r->len + len > r->cap) {
		r->cap = (r->len + len) * 2;
		r->data = realloc(r->data, r->cap);
		CHECK_PTR(r->data);
	}
	memcpy(r->data + r->len, buf, len);
	r->len += len;
	CHECK(r->nends < 4096);
	r->ends[r->nends++] = r->len;
	return 0;
}

static const struct sp_sink_ops ref_ops = { .write = ref_write };

static struct reference *feed_reference(int zstd)
{
	struct reference *r = calloc(1, sizeof(*r));
	struct sp_sink *sink;
	struct sp_writer *w;
	uint64_t i;

	CHECK_PTR(r);
	CHECK_OK(sp_sink_new_callback(&ref_ops, r, NULL, &sink));
	w = writer_on(sink, zstd);
	for (i = 0; i < FS_SAMPLES; i++)
		CHECK_OK(feed_sample(w, i));
	CHECK_OK(sp_writer_finish(w));
	sp_writer_free(w);
	return r;
}

static bool is_chunk_end(const struct reference *r, size_t len)
{
	size_t i;

	for (i = 0; i < r->nends; i++)
		if (r->ends[i] == len)
			return true;
	return false;
}

/* After a reported failure the file is a whole-record prefix of @ref. */
static void check_prefix(const char *path, const struct reference *ref,
			 rlim_t limit)
{
	struct sp_snapshot *s;
	struct sp_sample smp;
	size_t len, i, n;
	void *got = slurp(path, &len);

	CHECK(len <= limit);
	CHECK(len > 0 && len < ref->len);
	CHECK(is_chunk_end(ref, len));
	CHECK_MEM(got, len, ref->data, len);
	free(got);
	CHECK_OK(sp_snapshot_open(path, NULL, &s));
	CHECK(!sp_snapshot_is_recovered(s));
	n = sp_snapshot_sample_count(s);
	CHECK(n > 0 && n < FS_SAMPLES);
	for (i = 0; i < n; i++) {
		CHECK_OK(sp_snapshot_sample(s, i, &smp));
		CHECK_EQ(smp.timestamp_ns, 1000000 + i * 1000);
		CHECK_EQ_INT(smp.tid, 101 + (int32_t)(i % 3));
	}
	sp_snapshot_close(s);
}

static void test_fsize(uint32_t flags, int zstd)
{
	struct sp_sink_opts o = { .size = sizeof(o) };
	const char *path = tmp_path("fsize.spool");
	struct rlimit saved, rl;
	struct sp_writer *w;
	struct sp_sink *sink;
	struct reference *ref = feed_reference(zstd);
	size_t len;
	void *got;
	uint64_t i;
	int err = 0, failures = 0;

	CHECK_EQ(getrlimit(RLIMIT_FSIZE, &saved), 0);
	rl = saved;
	rl.rlim_cur = ref->len / 3 + 1234;
	o.uring_buf_count = 4;
	o.uring_buf_size = 32 * 1024;
	o.flags = flags;
	CHECK_OK(sp_sink_open_uring(path, &o, &sink));
	w = writer_on(sink, zstd);
	CHECK_EQ(setrlimit(RLIMIT_FSIZE, &rl), 0);
	for (i = 0; i < FS_SAMPLES; i++) {
		err = feed_sample(w, i);
		if (err == 0)
			continue;
		/* The failed call wrote nothing: it is retried below. */
		CHECK_EQ_INT(err, -EFBIG);
		CHECK_EQ_INT(failures, 0);
		failures++;
		check_prefix(path, ref, rl.rlim_cur);
		/* Still full: reported again, nothing lost. */
		CHECK_EQ_INT(sp_writer_flush(w), -EFBIG);
		check_prefix(path, ref, rl.rlim_cur);
		CHECK_EQ(setrlimit(RLIMIT_FSIZE, &saved), 0);
		CHECK_OK(feed_sample(w, i));
	}
	CHECK_EQ_INT(failures, 1);
	CHECK_OK(sp_writer_finish(w));
	sp_writer_free(w);
	got = slurp(path, &len);
	CHECK_MEM(got, len, ref->data, ref->len);
	free(got);
	free(ref->data);
	free(ref);
}

/* ---- allocation failure at open ---- */

struct failing {
	size_t live;
	unsigned calls;
	unsigned fail_at;
	bool failed;
};

static void *fail_alloc(void *ctx, size_t size, size_t align)
{
	struct failing *f = ctx;
	void *p = NULL;

	if (++f->calls == f->fail_at) {
		f->failed = true;
		return NULL;
	}
	if (posix_memalign(&p, align < sizeof(void *) ? sizeof(void *) : align,
			   size))
		return NULL;
	f->live += size;
	return p;
}

static void fail_free(void *ctx, void *ptr, size_t size)
{
	struct failing *f = ctx;

	CHECK(f->live >= size);
	f->live -= size;
	free(ptr);
}

static void test_alloc(uint32_t flags)
{
	struct sp_sink_opts o = { .size = sizeof(o), .flags = flags };
	const char *path = tmp_path("alloc.spool");
	struct failing f = { 0 };
	struct sp_allocator a = { fail_alloc, fail_free, &f };
	struct sp_sink *sink;
	int fds, rings, fds_now, rings_now, err;
	unsigned n;
	char buf[1000];

	memset(buf, 'x', sizeof(buf));
	o.allocator = &a;
	fds = count_fds(&rings);
	for (n = 1;; n++) {
		f = (struct failing){ .fail_at = n };
		err = sp_sink_open_uring(path, &o, &sink);
		if (err) {
			CHECK_EQ_INT(err, -ENOMEM);
			CHECK(f.failed);
			CHECK_EQ(f.live, 0);
			fds_now = count_fds(&rings_now);
			CHECK_EQ_INT(fds_now, fds);
			CHECK_EQ_INT(rings_now, rings);
			continue;
		}
		CHECK_OK(sp_sink_write(sink, buf, sizeof(buf)));
		CHECK_OK(sp_sink_finish(sink));
		sp_sink_free(sink);
		CHECK_EQ(f.live, 0);
		if (!f.failed)
			break;
	}
	CHECK(n > 1);
	fds_now = count_fds(&rings_now);
	CHECK_EQ_INT(fds_now, fds);
	CHECK_EQ_INT(rings_now, rings);
}

/* ---- a caller's descriptor ---- */

static void test_fd(uint32_t flags)
{
	struct sp_sink_opts o = { .size = sizeof(o), .flags = flags };
	const char *path = tmp_path("fd.bin");
	static char data[300000];
	struct sp_sink *sink;
	size_t len, i;
	char *got;
	int fd, p[2];

	for (i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 31 + i / 1000);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, "PREFIX", 6), 6);
	CHECK_OK(sp_sink_new_uring_fd(fd, &o, &sink));
	/* Odd sizes, one bigger than a default buffer. */
	CHECK_OK(sp_sink_write(sink, data, 1000));
	CHECK_OK(sp_sink_write(sink, data + 1000, 150000));
	CHECK_OK(sp_sink_write(sink, data + 151000, sizeof(data) - 151000));
	CHECK_OK(sp_sink_finish(sink));
	CHECK_EQ_INT(sp_sink_write(sink, data, 1), -EPIPE);
	sp_sink_free(sink);
	CHECK_EQ(lseek(fd, 0, SEEK_CUR), 6 + sizeof(data));
	CHECK(fcntl(fd, F_GETFD) >= 0); /* still open */
	close(fd);
	got = slurp(path, &len);
	CHECK_EQ(len, 6 + sizeof(data));
	CHECK_MEM(got, 6, "PREFIX", 6);
	CHECK_MEM(got + 6, len - 6, data, sizeof(data));
	free(got);

	CHECK_EQ(pipe(p), 0);
	CHECK_EQ_INT(sp_sink_new_uring_fd(p[1], &o, &sink), -ESPIPE);
	close(p[0]);
	close(p[1]);
	fd = open(path, O_WRONLY | O_APPEND);
	CHECK(fd >= 0);
	CHECK_EQ_INT(sp_sink_new_uring_fd(fd, &o, &sink), -EINVAL);
	close(fd);
}

static void test_bad_opts(void)
{
	struct sp_sink_opts o = { .size = sizeof(o) };
	struct sp_sink *sink;
	int fd = open(tmp_path("bad.bin"), O_WRONLY | O_CREAT, 0644);

	CHECK(fd >= 0);
	CHECK_EQ_INT(sp_sink_new_uring_fd(-1, NULL, &sink), -EINVAL);
	o.flags = 0x80;
	CHECK_EQ_INT(sp_sink_new_uring_fd(fd, &o, &sink), -EINVAL);
	o.flags = 0x100;
	CHECK_EQ_INT(sp_sink_new_uring_fd(fd, &o, &sink), -EINVAL);
	o.flags = 0;
	o.uring_queue_depth = 5000;
	CHECK_EQ_INT(sp_sink_new_uring_fd(fd, &o, &sink), -EINVAL);
	o.uring_queue_depth = 0;
	o.size = 4;
	CHECK_EQ_INT(sp_sink_new_uring_fd(fd, &o, &sink), -EINVAL);
	CHECK_EQ_INT(sp_sink_open_uring(NULL, NULL, &sink), -EINVAL);
	CHECK_EQ_INT(sp_sink_open_uring("/nonexistent/dir/x", NULL, &sink),
		     -ENOENT);
	close(fd);
}

/* ---- fallback when the kernel refuses io_uring ---- */

struct log_seen {
	int warnings;
	char last[256];
};

static void log_cb(void *ctx, enum sp_log_level level, const char *msg)
{
	struct log_seen *seen = ctx;

	if (level <= SP_LOG_WARN)
		seen->warnings++;
	snprintf(seen->last, sizeof(seen->last), "%s", msg);
}

static int deny_io_uring(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = 4, .filter = filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

static void fallback_child(void)
{
	struct log_seen seen = { 0 };
	struct sp_logger logger = { log_cb, &seen, SP_LOG_WARN };
	struct sp_sink_opts o = { .size = sizeof(o), .logger = &logger };
	const char *path = tmp_path("fallback.spool");
	struct recording *rec;
	struct sp_writer *w;
	struct sp_sink *sink;
	int rings;

	if (deny_io_uring())
		exit(T_EXIT_SKIP);
	CHECK_OK(sp_sink_open_uring(path, &o, &sink));
	CHECK_EQ_INT(seen.warnings, 1);
	CHECK(strstr(seen.last, "io_uring unavailable") != NULL);
	count_fds(&rings);
	CHECK_EQ_INT(rings, 0);
	w = writer_on(sink, 0);
	rec = gen_recording(w, 3, 5000);
	CHECK_OK(sp_writer_finish(w));
	sp_writer_free(w);
	verify_snapshot(path, rec);
	rec_free(rec);
	exit(T_EXIT_PASS);
}

static int test_fallback(void)
{
	int status;
	pid_t pid;

	fflush(NULL);
	pid = fork();
	CHECK(pid >= 0);
	if (pid == 0)
		fallback_child();
	CHECK_EQ(waitpid(pid, &status, 0), pid);
	CHECK(WIFEXITED(status));
	if (WEXITSTATUS(status) == T_EXIT_SKIP)
		return 0;
	CHECK_EQ_INT(WEXITSTATUS(status), T_EXIT_PASS);
	return 1;
}

int main(void)
{
	static const uint32_t modes[] = { 0, SP_SINK_URING_PWRITE };
	size_t m;
	int ran_fallback;

	/* A write beyond RLIMIT_FSIZE must fail with EFBIG, not kill us. */
	signal(SIGXFSZ, SIG_IGN);
	test_bad_opts();
	for (m = 0; m < 2; m++) {
		test_roundtrip(modes[m], 0, 0);
		test_roundtrip(modes[m], 1, 0);
		test_roundtrip(modes[m], 0, 12 * 1024);
		test_fsize(modes[m], 0);
		test_fsize(modes[m], 1);
		test_alloc(modes[m]);
		test_fd(modes[m]);
	}
	/* Last: the child's exit also removes the temporary directory. */
	ran_fallback = test_fallback();
	printf("uring sink: ok (io_uring %s, fallback test %s)\n",
	       uring_enabled() ? "enabled" : "disabled",
	       ran_fallback ? "ran" : "skipped");
	return T_EXIT_PASS;
}
