/* SPDX-License-Identifier: MIT */
/* Snapshot: files, zstd spools, options, diagnostics and the §8 timeline. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include <stackpulse.h>

#include "check.h"
#include "vectors.h"

static char tmpdir[] = "/tmp/sp-snapshot-XXXXXX";

static const char *write_file(const char *name, const void *data, size_t len)
{
	static char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	CHECK(fd >= 0);
	CHECK_EQ(write(fd, data, len), len);
	close(fd);
	return path;
}

static size_t v5(uint8_t *buf, size_t cap)
{
	return vec_hex(VEC_V5, buf, cap);
}

static void check_file_open(void)
{
	uint8_t buf[256];
	size_t len = v5(buf, sizeof(buf));
	struct sp_snapshot *s = NULL;

	CHECK_OK(sp_snapshot_open(write_file("v5.spool", buf, len), NULL, &s));
	CHECK_EQ(sp_snapshot_sample_count(s), 2);
	CHECK_EQ(sp_snapshot_byte_size(s), len);
	CHECK(!sp_snapshot_is_recovered(s));
	sp_snapshot_close(s);
	CHECK_EQ_INT(sp_snapshot_open("/nonexistent/x.spool", NULL, &s),
		     -ENOENT);
	CHECK_EQ_INT(sp_snapshot_open(tmpdir, NULL, &s), -EINVAL);
	CHECK_EQ_INT(sp_snapshot_open(write_file("empty", "", 0), NULL, &s),
		     SP_ECORRUPT);
	sp_snapshot_close(NULL);
}

/* Compresses @len bytes as two zstd frames (split at @split). */
static size_t zstd2(const uint8_t *in, size_t len, size_t split, uint8_t *out,
		    size_t cap)
{
	size_t a = ZSTD_compress(out, cap, in, split, 3);
	size_t b;

	CHECK(!ZSTD_isError(a));
	b = ZSTD_compress(out + a, cap - a, in + split, len - split, 3);
	CHECK(!ZSTD_isError(b));
	return a + b;
}

static void check_zstd(void)
{
	uint8_t buf[256], z[1024];
	size_t len = v5(buf, sizeof(buf));
	size_t zlen = zstd2(buf, len, 60, z, sizeof(z));
	struct sp_snapshot *s = NULL;
	struct sp_sample smp;

	CHECK_OK(sp_snapshot_open(write_file("v5.zst", z, zlen), NULL, &s));
	CHECK_EQ(sp_snapshot_sample_count(s), 2);
	CHECK_EQ(sp_snapshot_byte_size(s), len);
	CHECK_OK(sp_snapshot_sample(s, 1, &smp));
	CHECK_EQ(smp.timestamp_ns, 900);
	sp_snapshot_close(s);

	/* Only the first frame: a cut-off record inside the prefix. */
	zlen = zstd2(buf, len, 60, z, sizeof(z));
	{
		size_t first = ZSTD_findFrameCompressedSize(z, zlen);

		CHECK(!ZSTD_isError(first));
		CHECK_OK(sp_snapshot_open_buffer(z, first, NULL, &s));
		CHECK(sp_snapshot_is_recovered(s));
		CHECK_EQ(sp_snapshot_byte_size(s), 60);
		CHECK_EQ(sp_spool_module_count(sp_snapshot_spool(s)), 1);
		sp_snapshot_close(s);
	}

	/* The magic followed by garbage is a zstd error, not a crash. */
	memset(z + 4, 0xee, 64);
	CHECK_EQ_INT(sp_snapshot_open_buffer(z, 68, NULL, &s), SP_EZSTD);
}

static int warnings;

static void count_log(void *ctx, enum sp_log_level level, const char *msg)
{
	(void)ctx;
	(void)msg;
	if (level == SP_LOG_WARN)
		warnings++;
}

static void check_options(void)
{
	uint8_t buf[256];
	size_t len = vec_hex(VEC_V3, buf, sizeof(buf));
	struct sp_logger logger = { .log = count_log };
	struct sp_reader_opts opts = { .size = sizeof(opts),
				       .logger = &logger };
	unsigned char big[sizeof(opts) + 8];
	struct sp_snapshot *s = NULL;

	CHECK_OK(sp_snapshot_open_buffer(buf, len - 1, &opts, &s));
	CHECK(sp_snapshot_is_recovered(s));
	CHECK_EQ(warnings, 1);
	sp_snapshot_close(s);

	/* A larger struct from a newer caller: zero tail accepted. */
	memset(big, 0, sizeof(big));
	opts.logger = NULL;
	opts.size = sizeof(big);
	memcpy(big, &opts, sizeof(opts));
	CHECK_OK(sp_snapshot_open_buffer(
		buf, len, (const struct sp_reader_opts *)(void *)big, &s));
	sp_snapshot_close(s);
	big[sizeof(opts) + 3] = 1;
	CHECK_EQ_INT(sp_snapshot_open_buffer(
			     buf, len,
			     (const struct sp_reader_opts *)(void *)big, &s),
		     -EINVAL);
	opts.size = sizeof(opts);
	opts.flags = 0x80;
	CHECK_EQ_INT(sp_snapshot_open_buffer(buf, len, &opts, &s), -EINVAL);
	opts.size = 0;
	opts.flags = 0;
	CHECK_EQ_INT(sp_snapshot_open_buffer(buf, len, &opts, &s), -EINVAL);
}

static void check_diag(void)
{
	uint8_t buf[128];
	size_t len = vec_hex(VEC_V4B, buf, sizeof(buf));
	struct sp_diag diag;
	struct sp_reader_opts opts = { .size = sizeof(opts), .diag = &diag };
	struct sp_snapshot *s = NULL;

	CHECK_EQ_INT(sp_snapshot_open_buffer(buf, len, &opts, &s), SP_ECORRUPT);
	CHECK_EQ(diag.offset, 10);
	CHECK(strstr(diag.message, "frame id 1 did not match expected 0"));
	len = vec_hex(VEC_V6, buf, sizeof(buf));
	CHECK_EQ_INT(sp_snapshot_open_buffer(buf, len, &opts, &s), SP_ECORRUPT);
	CHECK_EQ(diag.offset, 32);
	CHECK(strstr(diag.message, "varint"));
}

/* §8: first sample in file order is the anchor; earlier samples clamp. */
static void check_timeline(void)
{
	uint8_t buf[256];
	size_t len = v5(buf, sizeof(buf));
	struct sp_snapshot *s = NULL;
	const struct sp_spool *sp;

	CHECK_OK(sp_snapshot_open_buffer(buf, len, NULL, &s));
	sp = sp_snapshot_spool(s);
	/* V5 has no timeline (start 0). */
	CHECK_EQ(sp_spool_timestamp_us(sp, 1000), 0);
	CHECK_EQ(sp_spool_start_timestamp_us(sp), 0);
	sp_snapshot_close(s);

	/* V5 with header start 123: sample at 900 ns clamps to 123. */
	buf[8] = 0x7b;
	CHECK_OK(sp_snapshot_open_buffer(buf, len, NULL, &s));
	sp = sp_snapshot_spool(s);
	CHECK_EQ(sp_spool_timestamp_us(sp, 900), 123);
	CHECK_EQ(sp_spool_timestamp_us(sp, 1000), 123);
	CHECK_EQ(sp_spool_timestamp_us(sp, 2999), 124);
	CHECK_EQ(sp_spool_timestamp_us(sp, UINT64_MAX),
		 123 + (UINT64_MAX - 1000) / 1000);
	sp_snapshot_close(s);
}

static void check_kernel_addresses(void)
{
	uint8_t buf[256];
	size_t len = v5(buf, sizeof(buf));
	struct sp_snapshot *s = NULL;

	CHECK_OK(sp_snapshot_open_buffer(buf, len, NULL, &s));
	CHECK_EQ(sp_spool_kernel_addresses(sp_snapshot_spool(s), NULL, 0), 1);
	sp_snapshot_close(s);
}

int main(void)
{
	CHECK_PTR(mkdtemp(tmpdir));
	check_file_open();
	check_zstd();
	check_options();
	check_diag();
	check_timeline();
	check_kernel_addresses();
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
		CHECK_EQ(system(cmd), 0);
	}
	return T_EXIT_PASS;
}
