/* SPDX-License-Identifier: MIT */
/* spulse top -p PID / -- COMMAND: record live and show the table while it runs. */

/*
 * The recording goes to a temporary spool (mkstemp in $TMPDIR or /tmp,
 * mode 0600), which is unlinked as soon as the recorder's own Tail has
 * it open: nothing is left behind even if we are killed, and the Tail
 * (SP_READER_OWNS_FILE) discards what it consumed, so a long session
 * costs no disk. sp_recorder_run_command() / sp_recorder_run_pid() own
 * the timing loop; its tick drains the Tail and redraws every interval,
 * and stops the run on SIGINT/SIGTERM or after --iterations. When the
 * target ends by itself, the recorder is finished and a last table of
 * everything is printed (with --once the only one).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rec_errors.h"
#include "spulse.h"
#include "top.h"

struct live {
	const struct top_opts *o;
	struct top t;
	struct sp_tail *tail;
	struct sp_symbolizer *sym;
	int64_t next_ns; /* next refresh */
};

/* The run's tick: every interval drain and redraw; > 0 stops the run. */
static int tick(void *ctx, struct sp_recorder *rec)
{
	struct live *lv = ctx;
	int err;

	(void)rec;
	if (spulse_top_stop || spulse_out_failed())
		return 1;
	if (lv->o->once || spulse_top_now_ns() < lv->next_ns)
		return 0;
	err = spulse_top_drain(&lv->t, lv->tail, lv->sym, lv->o);
	if (!err)
		err = spulse_top_refresh(&lv->t, lv->o);
	if (err)
		return err;
	lv->next_ns = spulse_top_now_ns() + (int64_t)(lv->o->interval * 1e9);
	return lv->o->iterations && lv->t.refreshes >= lv->o->iterations;
}

/* A new empty temporary file; returns 0 and its path in @path. */
static int temp_spool(char *path, size_t size)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	if (!dir || !*dir)
		dir = "/tmp";
	if ((size_t)snprintf(path, size, "%s/spulse-top-XXXXXX", dir) >= size)
		return -ENAMETOOLONG;
	fd = mkstemp(path);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int open_recording(struct live *lv, struct sp_recorder **rec)
{
	struct sp_recorder_opts ro = { .size = sizeof(ro) };
	struct sp_symbolizer_opts so = { .size = sizeof(so) };
	char path[4096];
	int err = temp_spool(path, sizeof(path));

	if (err) {
		fprintf(stderr,
			"spulse top: cannot create a temporary file: "
			"%s\n",
			sp_strerror(err));
		return err;
	}
	ro.sample_hz = lv->o->sample_hz;
	ro.flags = SP_RECORDER_INHERIT_CHILDREN;
	ro.threads = SP_THREADS_AUTO;
	err = sp_recorder_open(path, &ro, rec);
	if (!err)
		err = sp_recorder_tail(*rec, &lv->tail);
	unlink(path); /* both hold it open */
	if (lv->o->no_demangle)
		so.flags |= SP_SYMBOLIZER_NO_DEMANGLE;
	if (!err)
		err = sp_symbolizer_new(sp_tail_spool(lv->tail), &so, &lv->sym);
	if (err)
		fprintf(stderr, "spulse top: cannot record: %s\n",
			sp_strerror(err));
	return err;
}

static void run_error(const struct top_opts *o, int err)
{
	if (o->cmd) {
		fputs("spulse top: recording ", stderr);
		spulse_put_text(stderr, o->cmd[0], strlen(o->cmd[0]), false);
		fprintf(stderr, " failed: %s\n", sp_strerror(err));
	} else if (err == SP_ETARGETGONE) {
		fprintf(stderr, "spulse top: no process %d\n", (int)o->pid);
	} else {
		fprintf(stderr, "spulse top: recording pid %d failed: %s\n",
			(int)o->pid, sp_strerror(err));
	}
	if (spulse_is_permission(err))
		spulse_permission_hint("top", false);
}

int spulse_top_live(const struct top_opts *o)
{
	struct sp_record_run_opts ropts = { .size = sizeof(ropts) };
	struct sp_record_run_result res = { .size = sizeof(res) };
	struct sp_recorder *rec = NULL;
	struct live lv = { .o = o };
	int err, ferr;

	if (o->has_pid && spulse_check_pid("top", o->pid) >= 0)
		return SPULSE_EXIT_DATA;
	spulse_top_init(&lv.t, o);
	err = open_recording(&lv, &rec);
	if (!err) {
		ropts.tick = tick;
		ropts.ctx = &lv;
		lv.next_ns = spulse_top_now_ns() + (int64_t)(o->interval * 1e9);
		err = o->cmd ? sp_recorder_run_command(rec, o->cmd, NULL,
						       &ropts, &res) :
			       sp_recorder_run_pid(rec, o->pid, &ropts, &res);
		if (err < 0)
			run_error(o, err);
		ferr = sp_recorder_finish(rec);
		if (!err)
			err = ferr;
	}
	/* The target ended by itself: one last table of everything. */
	if (!err && res.end == SP_RECORD_RUN_EXITED && !spulse_out_failed()) {
		err = spulse_top_drain(&lv.t, lv.tail, lv.sym, o);
		if (!err)
			err = spulse_top_refresh(&lv.t, o);
	}
	sp_symbolizer_free(lv.sym);
	sp_tail_close(lv.tail);
	sp_recorder_close(rec);
	spulse_top_fini(&lv.t);
	return err < 0 ? SPULSE_EXIT_DATA : SPULSE_EXIT_OK;
}
