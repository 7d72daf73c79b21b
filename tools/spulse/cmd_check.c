/* SPDX-License-Identifier: MIT */
/* spulse check: validate a spool with a Snapshot and print its counts. */

/*
 * A Snapshot validates every record at open (SPULSE3 §9), so "check" is
 * open + report. The Snapshot does not say whether the input was zstd, or
 * how big the file is on disk, so the file's first four bytes are read
 * here and compared with the zstd frame magic 28 b5 2f fd.
 *
 * Output (stdout): `key: value` lines, or with --json exactly one JSON
 * object on one line:
 *   {"file":..,"valid":true,"samples":N,"modules":N,"frames":N,
 *    "stacks":N,"threads":N,"python_records":N,"truncated":false,
 *    "start_timestamp_us":N,"sample_interval_us":N,"bytes":N,
 *    "decoded_bytes":N,"compressed":false}
 * and on failure {"file":..,"valid":false,"error":"..","code":N,
 * "offset":N|null,"message":".."|null}. The error line on stderr is
 * printed in both modes.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spulse.h"

struct check_opts {
	const char *path;
	bool json;
};

/* What is printed about a valid spool. */
struct check_info {
	uint64_t samples;
	uint64_t python_records;
	uint64_t start_us;
	uint64_t interval_us;
	uint64_t file_bytes;
	uint64_t decoded_bytes;
	uint32_t modules;
	uint32_t frames;
	uint32_t stacks;
	uint32_t threads;
	bool truncated;
	bool compressed;
};

void spulse_check_usage(FILE *f)
{
	fputs("usage: spulse check [--json] FILE\n"
	      "\n"
	      "Validate every record of the SPULSE3 spool FILE (plain or\n"
	      "zstd-compressed) and print the number of samples, modules,\n"
	      "frames, stack nodes, threads and Python-runtime records, the\n"
	      "header values, the size and whether the file was compressed.\n"
	      "\n"
	      "  --json     print one JSON object on one line\n"
	      "  -h, --help show this help\n"
	      "\n"
	      "Exit status: 0 valid (a cut-off tail that was recovered is\n"
	      "valid; a warning goes to stderr and \"truncated\" is true),\n"
	      "1 corrupt or unreadable file, 2 usage error.\n",
	      f);
}

/* Returns -1 to run, or the exit status to return right away. */
static int parse_args(int argc, char **argv, struct check_opts *o)
{
	bool dashdash = false;
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (dashdash || a[0] != '-' || a[1] == '\0') {
			if (o->path)
				return spulse_usage_error("check",
							  "extra argument", a);
			o->path = a;
		} else if (strcmp(a, "--") == 0) {
			dashdash = true;
		} else if (strcmp(a, "--json") == 0) {
			o->json = true;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			spulse_check_usage(stdout);
			return SPULSE_EXIT_OK;
		} else {
			return spulse_usage_error("check", "unknown option", a);
		}
	}
	if (!o->path)
		return spulse_usage_error("check", "missing FILE", NULL);
	return -1;
}

/* Reads the on-disk size and whether the file starts with a zstd frame. */
static int peek_file(const char *path, struct check_info *info)
{
	static const unsigned char zstd_magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };
	unsigned char head[4];
	struct stat st;
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		err = -errno;
		goto out_close;
	}
	n = pread(fd, head, sizeof(head), 0);
	if (n < 0) {
		err = -errno;
		goto out_close;
	}
	info->file_bytes = (uint64_t)st.st_size;
	info->compressed = n == (ssize_t)sizeof(head) &&
			   memcmp(head, zstd_magic, sizeof(head)) == 0;
out_close:
	close(fd);
	return err;
}

static void collect(const struct sp_snapshot *snap, struct check_info *info)
{
	const struct sp_spool *spool = sp_snapshot_spool(snap);

	info->samples = sp_snapshot_sample_count(snap);
	info->python_records = sp_snapshot_python_record_count(snap);
	info->start_us = sp_spool_start_timestamp_us(spool);
	info->interval_us = sp_spool_sample_interval_us(spool);
	info->decoded_bytes = sp_snapshot_byte_size(snap);
	info->modules = sp_spool_module_count(spool);
	info->frames = sp_spool_frame_count(spool);
	info->stacks = sp_spool_stack_count(spool);
	info->threads = sp_spool_thread_count(spool);
	info->truncated = sp_snapshot_is_recovered(snap);
}

static void print_json(const char *path, const struct check_info *info)
{
	fputs("{\"file\":", stdout);
	spulse_put_json(stdout, path, strlen(path));
	printf(",\"valid\":true,\"samples\":%" PRIu64 ",\"modules\":%" PRIu32
	       ",\"frames\":%" PRIu32 ",\"stacks\":%" PRIu32
	       ",\"threads\":%" PRIu32 ",\"python_records\":%" PRIu64
	       ",\"truncated\":%s",
	       info->samples, info->modules, info->frames, info->stacks,
	       info->threads, info->python_records,
	       info->truncated ? "true" : "false");
	printf(",\"start_timestamp_us\":%" PRIu64
	       ",\"sample_interval_us\":%" PRIu64 ",\"bytes\":%" PRIu64
	       ",\"decoded_bytes\":%" PRIu64 ",\"compressed\":%s}\n",
	       info->start_us, info->interval_us, info->file_bytes,
	       info->decoded_bytes, info->compressed ? "true" : "false");
}

static void print_text(const char *path, const struct check_info *info)
{
	fputs("file: ", stdout);
	spulse_put_text(stdout, path, strlen(path), false);
	printf("\nstatus: valid\n"
	       "format: SPULSE3%s\n"
	       "bytes: %" PRIu64 "\n"
	       "decoded_bytes: %" PRIu64 "\n"
	       "start_timestamp_us: %" PRIu64 "%s\n"
	       "sample_interval_us: %" PRIu64 "%s\n",
	       info->compressed ? ", zstd-compressed" : "", info->file_bytes,
	       info->decoded_bytes, info->start_us,
	       info->start_us ? "" : " (none)", info->interval_us,
	       info->interval_us ? "" : " (none)");
	printf("samples: %" PRIu64 "\nmodules: %" PRIu32 "\nframes: %" PRIu32
	       "\nstacks: %" PRIu32 "\nthreads: %" PRIu32
	       "\npython_records: %" PRIu64 "\ntruncated: %s\n",
	       info->samples, info->modules, info->frames, info->stacks,
	       info->threads, info->python_records,
	       info->truncated ? "yes" : "no");
}

static void print_failure_json(const char *path, int err,
			       const struct sp_diag *diag)
{
	fputs("{\"file\":", stdout);
	spulse_put_json(stdout, path, strlen(path));
	fputs(",\"valid\":false,\"error\":", stdout);
	spulse_put_json(stdout, sp_strerror(err), strlen(sp_strerror(err)));
	printf(",\"code\":%d", err);
	if (diag->message[0]) {
		printf(",\"offset\":%" PRIu64 ",\"message\":", diag->offset);
		spulse_put_json(stdout, diag->message,
				strnlen(diag->message, sizeof(diag->message)));
		fputs("}\n", stdout);
	} else {
		fputs(",\"offset\":null,\"message\":null}\n", stdout);
	}
}

static int fail(const struct check_opts *o, int err, const struct sp_diag *diag)
{
	spulse_report_error(o->path, err, diag);
	if (o->json)
		print_failure_json(o->path, err, diag);
	return SPULSE_EXIT_DATA;
}

int spulse_cmd_check(int argc, char **argv)
{
	struct sp_diag diag = { 0 };
	struct sp_reader_opts ropts = { .size = sizeof(ropts), .diag = &diag };
	struct check_opts o = { 0 };
	struct check_info info = { 0 };
	struct sp_snapshot *snap;
	int err;

	err = parse_args(argc, argv, &o);
	if (err >= 0)
		return err;
	err = sp_snapshot_open(o.path, &ropts, &snap);
	if (err < 0)
		return fail(&o, err, &diag);
	collect(snap, &info);
	sp_snapshot_close(snap);
	/* The file can vanish between the two opens; report that too. */
	memset(&diag, 0, sizeof(diag));
	err = peek_file(o.path, &info);
	if (err < 0)
		return fail(&o, err, &diag);
	if (info.truncated)
		spulse_report_recovered(o.path);
	if (o.json)
		print_json(o.path, &info);
	else
		print_text(o.path, &info);
	return SPULSE_EXIT_OK;
}
