/* SPDX-License-Identifier: MIT */
/* spulse record: sample a command or running processes into a spool. */

/*
 * `spulse record -- CMD ARGS` launches CMD suspended before its execve,
 * attaches with SP_ATTACH_ON_EXEC and lets it run, so the very first
 * instruction is covered; `-p PID` attaches to running processes with
 * SP_ATTACH_STOP_WHILE_ATTACHING. Forked children are followed unless
 * --no-children (perf record and samply do the same: `sh -c "prog"` or
 * `make` would otherwise record the shell and nothing of the work). The
 * spool header gets the wall-clock start and the rate's interval, so
 * timeline viewers show real times and pprof a period. The main loop is
 * sp_recorder_poll() with a short timeout, and between polls it checks
 * the four ways a recording ends: the command exits, every pid exits, a
 * SIGINT, SIGTERM or SIGHUP (the handler only counts it; the signal also
 * makes poll return -EINTR), or --duration. A command still running then
 * (signal or duration) gets SIGTERM, like perf record does, and is reaped
 * within a bounded time: SIGKILL after a grace period or at the next
 * signal. A record that fails before it records leaves -o FILE as it was
 * (the library writes an unnamed file until the first poll); the previous
 * FILE is kept as FILE.old.
 *
 * `-a` records the whole machine instead (a system-mode recorder): every
 * process, or those that pass --pid / --comm / --cgroup. It ends on a
 * signal or after --duration, or when a command given after -- exits (the
 * command then runs unattached: the CPU events already see it).
 *
 * Output: progress on stderr only when stderr is a TTY, the summary on
 * stderr at the end (stdout belongs to the command). The exit status is
 * the command's (128 + signal if it was killed); with -p it is 0; 1 when
 * recording failed, 2 on a usage error, 127 when CMD could not be run.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <stackpulse/launch.h>

#include "args.h"
#include "rec_errors.h"
#include "spulse.h"

#define MAX_PIDS 64
#define MAX_COMMS 64
#define COMM_MAX 64
#define POLL_MS 100
/* Ending a command that ignores SIGTERM (reap_command). */
#define TERM_HINT_MS 500
#define TERM_GRACE_MS 3000
#define KILL_GRACE_MS 2000
#define PROGRESS_NS 500000000ull

struct record_opts {
	const char *out;
	struct sp_recorder_opts rec;
	double duration_s; /* 0: until the targets exit */
	int32_t pids[MAX_PIDS];
	int npids;
	char **cmd;  /* NULL-terminated, or NULL with -p */
	bool system; /* -a (or --cgroup) */
	char comms[MAX_COMMS][COMM_MAX];
	int ncomms;
	const char *cgroup;
	const char *jit_dir; /* NULL: OUT.jit */
	bool no_jit_dir;
	char jit_buf[4096];
};

struct record_state {
	struct sp_recorder *rec;
	struct sp_launch *launch;
	int cmd_status; /* raw wait status, valid when cmd_done */
	bool cmd_done;
	bool system;   /* -a: nothing to attach, no target to outlive */
	bool progress; /* stderr is a terminal that takes escape codes */
	const char *jit_dir;
	bool color;
	uint64_t start_ns, last_progress_ns, last_samples;
	uint64_t end_ns; /* when the recording stopped */
	uint64_t samples;
};

/*
 * SIGINT, SIGTERM and SIGHUP each count one stop request: the first ends
 * the recording, later ones escalate the end of the command (see
 * reap_command). The handler only counts; the three are blocked while it
 * runs, so the count is never torn.
 */
static volatile sig_atomic_t stop_requests;

static void on_stop_signal(int sig)
{
	(void)sig;
	stop_requests = stop_requests + 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void spulse_record_usage(FILE *f)
{
	fputs("usage: spulse record [options] -- COMMAND [ARGS...]\n"
	      "       spulse record [options] -p PID [-p PID...]\n"
	      "       spulse record -a [--pid P,..] [--comm NAME,..]\n"
	      "                     [--cgroup PATH] [options] [-- COMMAND]\n"
	      "\n"
	      "Sample the CPU stacks of COMMAND (from its first instruction)\n"
	      "or of running processes into a SPULSE3 spool. Recording ends\n"
	      "when the command or every PID exits, on Ctrl-C, or after\n"
	      "--duration; then the summary goes to stderr. A command still\n"
	      "running gets SIGTERM, and SIGKILL 3 s later or at Ctrl-C.\n"
	      "With -a every process of the machine is sampled (root or\n"
	      "CAP_PERFMON), until Ctrl-C, --duration or COMMAND's exit.\n"
	      "\n"
	      "  -o FILE          output spool (default spulse.spool); an\n"
	      "                   existing FILE is kept as FILE.old\n"
	      "  -F HZ|max        samples per CPU-second (default 999; max =\n"
	      "                   the kernel's perf_event_max_sample_rate)\n"
	      "  -s BYTES         user stack bytes copied per sample\n"
	      "                   (default 32768, 1 to 65528)\n"
	      "  -k               also record kernel callchains\n"
	      "  --mode MODE      cpu (default: on-CPU time), off-cpu (time\n"
	      "                   threads wait, by the stack they left the\n"
	      "                   CPU with) or wall (both: a thread's total\n"
	      "                   is its wall time)\n"
	      "  --off-cpu-min US with --mode off-cpu/wall: drop waits\n"
	      "                   shorter than US microseconds (counted)\n"
	      "  --max-depth N    user frames per stack before it is cut\n"
	      "                   (default 1024, at most 8192)\n"
	      "  --no-children    do not follow forked child processes\n"
	      "                   (they are followed by default)\n"
	      "  --duration SECS  stop after SECS seconds (0.001 to a year)\n"
	      "  --threads N|auto unwinder threads (0 = everything on one\n"
	      "                   thread; default auto: 0 up to 2 CPUs,\n"
	      "                   else CPUs - 1)\n"
	      "  --zstd           compress the spool\n"
	      "  --jit-dir DIR    keep the perf maps of JIT runtimes (Python\n"
	      "                   -X perf, node --perf-basic-prof) as\n"
	      "                   processes exit, and the names of GDB JIT\n"
	      "                   objects, in DIR (default FILE.jit;\n"
	      "                   report reads it from there)\n"
	      "  --no-jit-dir     do not keep them (perf map names then\n"
	      "                   come from /tmp/perf-PID.map at report\n"
	      "                   time; GDB JIT code stays unnamed)\n"
	      "  --no-jit         read no JIT code, jitdump files or GDB\n"
	      "                   JIT objects (stacks then stop in JIT\n"
	      "                   code without frame pointers)\n"
	      "  -p PID           record a running process (repeatable,\n"
	      "                   or a comma-separated list); --pid PID\n"
	      "                   is the same; with -a: keep only these\n"
	      "  -a               record every process (system-wide)\n"
	      "  --comm NAME      with -a: keep only processes with this\n"
	      "                   command name (repeatable, or a list)\n"
	      "  --cgroup PATH    record the processes of a cgroup v2\n"
	      "                   directory (implies -a)\n"
	      "  -h, --help       show this help\n"
	      "\n"
	      "Progress is shown on a terminal only (not with TERM=dumb;\n"
	      "NO_COLOR is honoured).\n"
	      "\n"
	      "Exit status: the command's (128+N if signal N ended it), 0 with\n"
	      "-p; 1 recording failed, 2 usage error, 127 COMMAND not run.\n",
	      f);
}

/*
 * Numeric options: each returns -1 to go on or a usage-error status that
 * names the allowed range (args.h). A PID is any positive int32; whether
 * it exists is the attach's business.
 */
static int parse_pids(const char *opt, const char *s, struct record_opts *o)
{
	char *copy = strdup(s), *save = NULL, *tok;
	int status = -1, found = 0;
	uint64_t pid;

	if (!copy)
		return spulse_usage_error("record", "out of memory", NULL);
	for (tok = strtok_r(copy, ",", &save); tok && status < 0;
	     tok = strtok_r(NULL, ",", &save)) {
		if (o->npids == MAX_PIDS)
			status = spulse_usage_error(
				"record", "more than 64 PIDs at", tok);
		else
			status = spulse_parse_range("record", opt, tok, 1,
						    INT32_MAX, &pid);
		if (status < 0)
			o->pids[o->npids++] = (int32_t)pid, found++;
	}
	free(copy);
	if (status < 0 && !found)
		status = spulse_value_error("record", opt, s, "PID[,PID...]");
	return status;
}

/* Above the kernel's maximum is refused later (spulse_check_rate). */
static int parse_rate(const char *opt, const char *s, struct record_opts *o)
{
	uint64_t v = 0;

	if (strcmp(s, "max") == 0) {
		o->rec.sample_hz = SP_RATE_MAX;
		return -1;
	}
	if (!spulse_read_uint(s, &v) || !v || v >= SP_RATE_MAX)
		return spulse_value_error(
			"record", opt, s,
			"1 Hz up to kernel.perf_event_max_sample_rate, or max");
	o->rec.sample_hz = (uint32_t)v;
	return -1;
}

static int parse_threads(const char *opt, const char *s, struct record_opts *o)
{
	char allowed[32];
	uint64_t v;

	if (strcmp(s, "auto") == 0) {
		o->rec.threads = SP_THREADS_AUTO;
		return -1;
	}
	snprintf(allowed, sizeof(allowed), "0..%u or auto",
		 SP_RECORDER_THREADS_MAX);
	if (!spulse_read_uint(s, &v) || v > SP_RECORDER_THREADS_MAX)
		return spulse_value_error("record", opt, s, allowed);
	o->rec.threads = (uint32_t)v;
	return -1;
}

/* Rounded up to a multiple of 8 by the library. */
static int parse_stack(const char *opt, const char *s, struct record_opts *o)
{
	uint64_t v;
	int st = spulse_parse_range("record", opt, s, 1, SP_RECORDER_STACK_MAX,
				    &v);

	if (st < 0)
		o->rec.stack_size = (uint32_t)v;
	return st;
}

/* A year at most: seconds * 1e9 stays far below UINT64_MAX ns. */
#define DURATION_MIN_S 0.001
#define DURATION_MAX_S (365.0 * 86400)

static int parse_duration(const char *opt, const char *s, struct record_opts *o)
{
	return spulse_parse_seconds("record", opt, s, DURATION_MIN_S,
				    DURATION_MAX_S, &o->duration_s);
}

/* 0 (the library's default) is not a depth a user asks for. */
static int parse_depth(const char *opt, const char *s, struct record_opts *o)
{
	uint64_t v;
	int st = spulse_parse_range("record", opt, s, 1, SP_DEPTH_MAX, &v);

	if (st < 0)
		o->rec.max_depth = (uint32_t)v;
	return st;
}

static int parse_comms(const char *opt, const char *s, struct record_opts *o)
{
	char *copy = strdup(s), *save = NULL, *tok;
	int status = 0;

	if (!copy)
		return spulse_usage_error("record", "out of memory", NULL);
	for (tok = strtok_r(copy, ",", &save); tok && !status;
	     tok = strtok_r(NULL, ",", &save)) {
		if (o->ncomms == MAX_COMMS || strlen(tok) >= COMM_MAX)
			status = -1;
		else
			strcpy(o->comms[o->ncomms++], tok);
	}
	free(copy);
	if (status || !o->ncomms)
		return spulse_usage_error("record", "bad command name for",
					  opt);
	return -1;
}

static int parse_mode(const char *opt, const char *s, struct record_opts *o)
{
	if (strcmp(s, "cpu") == 0)
		o->rec.mode = SP_PROFILE_CPU;
	else if (strcmp(s, "off-cpu") == 0)
		o->rec.mode = SP_PROFILE_OFF_CPU;
	else if (strcmp(s, "wall") == 0)
		o->rec.mode = SP_PROFILE_WALL;
	else
		return spulse_value_error("record", opt, s,
					  "cpu, off-cpu or wall");
	return -1;
}

static int parse_off_cpu_min(const char *opt, const char *s,
			     struct record_opts *o)
{
	uint64_t v;
	int st = spulse_parse_range("record", opt, s, 0, UINT32_MAX, &v);

	if (st < 0)
		o->rec.off_cpu_min_us = (uint32_t)v;
	return st;
}

static int parse_cgroup(const char *opt, const char *s, struct record_opts *o)
{
	o->cgroup = s;
	o->system = true;
	return *s ? -1 : spulse_usage_error("record", "empty path for", opt);
}

static int parse_output(const char *opt, const char *s, struct record_opts *o)
{
	o->out = s;
	return *s ? -1 : spulse_usage_error("record", "empty path for", opt);
}

static int parse_jit_dir(const char *opt, const char *s, struct record_opts *o)
{
	o->jit_dir = s;
	return *s ? -1 : spulse_usage_error("record", "empty path for", opt);
}

/*
 * Options that take a value: returns 1 if argv[*i] is one (consuming its
 * value), 0 if it is not, or a usage-error exit status.
 */
static int parse_valued(int argc, char **argv, int *i, struct record_opts *o)
{
	static const struct {
		const char *name;
		int (*parse)(const char *opt, const char *s,
			     struct record_opts *o);
	} valued[] = {
		{ "-o", parse_output },
		{ "--jit-dir", parse_jit_dir },
		{ "-F", parse_rate },
		{ "-s", parse_stack },
		{ "-p", parse_pids },
		{ "--pid", parse_pids },
		{ "--comm", parse_comms },
		{ "--cgroup", parse_cgroup },
		{ "--duration", parse_duration },
		{ "--threads", parse_threads },
		{ "--max-depth", parse_depth },
		{ "--mode", parse_mode },
		{ "--off-cpu-min", parse_off_cpu_min },
	};
	const char *a = argv[*i];
	size_t k;
	int st;

	for (k = 0; k < sizeof(valued) / sizeof(valued[0]); k++) {
		if (strcmp(a, valued[k].name) != 0)
			continue;
		if (*i + 1 >= argc)
			return spulse_usage_error("record", "missing value", a);
		st = valued[k].parse(a, argv[++*i], o);
		return st >= 0 ? st : 1;
	}
	return 0;
}

/* One option at argv[*i]; returns -1 to go on or an exit status. */
static int parse_option(int argc, char **argv, int *i, struct record_opts *o)
{
	const char *a = argv[*i];
	int r = parse_valued(argc, argv, i, o);

	if (r != 0)
		return r == 1 ? -1 : r;
	if (strcmp(a, "--no-jit-dir") == 0)
		o->no_jit_dir = true;
	else if (strcmp(a, "-k") == 0)
		o->rec.flags |= SP_RECORDER_KERNEL;
	else if (strcmp(a, "-a") == 0)
		o->system = true;
	else if (strcmp(a, "--children") == 0) /* the default; kept */
		o->rec.flags |= SP_RECORDER_INHERIT_CHILDREN;
	else if (strcmp(a, "--no-children") == 0)
		o->rec.flags &= ~SP_RECORDER_INHERIT_CHILDREN;
	else if (strcmp(a, "--zstd") == 0)
		o->rec.flags |= SP_RECORDER_ZSTD;
	else if (strcmp(a, "--no-jit") == 0)
		o->rec.flags |= SP_RECORDER_NO_JIT_CODE;
	else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
		spulse_record_usage(stdout);
		return SPULSE_EXIT_OK;
	} else
		return spulse_usage_error("record", "unknown option", a);
	return -1;
}

/* Returns -1 to run, or the exit status to return right away. */
static int parse_args(int argc, char **argv, struct record_opts *o)
{
	int i, r;

	o->out = "spulse.spool";
	o->rec.size = sizeof(o->rec);
	o->rec.threads = SP_THREADS_AUTO;
	/* Never clobber a recording: the previous one becomes FILE.old. */
	o->rec.flags = SP_RECORDER_INHERIT_CHILDREN | SP_RECORDER_KEEP_OLD;
	for (i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--") == 0) {
			o->cmd = &argv[i + 1];
			break;
		}
		if (argv[i][0] != '-')
			return spulse_usage_error(
				"record", "put the command after --", argv[i]);
		r = parse_option(argc, argv, &i, o);
		if (r >= 0)
			return r;
	}
	if (o->cmd && !o->cmd[0])
		return spulse_usage_error("record", "missing COMMAND after --",
					  NULL);
	if (o->ncomms && !o->system)
		return spulse_usage_error("record", "--comm needs -a", NULL);
	if (!o->no_jit_dir && !o->jit_dir) {
		if (spulse_jit_dir(o->out, o->jit_buf, sizeof(o->jit_buf)))
			return spulse_usage_error("record", "path too long",
						  o->out);
		o->jit_dir = o->jit_buf;
	}
	o->rec.jit_dir = o->no_jit_dir ? NULL : o->jit_dir;
	if (o->system)
		/* pids filter; a command is optional */
		return spulse_check_rate("record", o->rec.sample_hz);
	if (!o->cmd == !o->npids)
		return spulse_usage_error(
			"record", "give either -p PID or -- COMMAND", NULL);
	return spulse_check_rate("record", o->rec.sample_hz);
}

static void install_handlers(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, SIGINT);
	sigaddset(&sa.sa_mask, SIGTERM);
	sigaddset(&sa.sa_mask, SIGHUP);
	/*
	 * No SA_RESTART: the signal must interrupt the poll. SIGHUP (the
	 * terminal went away) ends the recording like Ctrl-C, so the spool
	 * is finished and an attach in progress completes and resumes its
	 * target instead of dying half-way.
	 */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
}

static void record_error(const char *what, const char *arg, int err)
{
	fprintf(stderr, "spulse record: %s", what);
	if (arg) {
		fputs(" ", stderr);
		spulse_put_text(stderr, arg, strlen(arg), false);
	}
	fprintf(stderr, ": %s\n", sp_strerror(err));
}

/* Each -p PID must name a live process: "no process N" before we start. */
static int check_pids(const struct record_opts *o)
{
	int i, st;

	for (i = 0; i < o->npids; i++)
		if ((st = spulse_check_pid("record", o->pids[i])) >= 0)
			return st;
	return -1;
}

/* Launch the command suspended, attach on exec, let it exec. */
static int start_command(struct record_state *st, char **cmd)
{
	int err = sp_launch_suspended(cmd[0], cmd, NULL, &st->launch);

	if (err < 0) {
		record_error("cannot start", cmd[0], err);
		return err == -ENOENT || err == -EACCES ? 127 :
							  SPULSE_EXIT_DATA;
	}
	/* With -a the CPU events see the command: no attach. */
	err = 0;
	if (!st->system)
		err = sp_recorder_attach(st->rec, sp_launch_pid(st->launch),
					 SP_ATTACH_ON_EXEC);
	if (err < 0) {
		record_error("cannot attach to", cmd[0], err);
		return SPULSE_EXIT_DATA;
	}
	err = sp_launch_resume(st->launch);
	if (err < 0) {
		record_error("cannot run", cmd[0], err);
		return 127;
	}
	return -1;
}

static int attach_pids(struct record_state *st, const struct record_opts *o)
{
	char buf[16];
	int i, err;

	/* A stop request ends the attaching too (each attach completes). */
	for (i = 0; i < o->npids && !stop_requests; i++) {
		err = sp_recorder_attach(st->rec, o->pids[i],
					 SP_ATTACH_STOP_WHILE_ATTACHING);
		snprintf(buf, sizeof(buf), "%d", (int)o->pids[i]);
		if (err == SP_EXITED || err == SP_ETARGETGONE) {
			fprintf(stderr, "spulse record: no process %s\n", buf);
			return SPULSE_EXIT_DATA;
		}
		if (err < 0) {
			record_error("cannot attach to pid", buf, err);
			if (spulse_is_permission(err))
				spulse_permission_hint("record", false);
			return SPULSE_EXIT_DATA;
		}
	}
	return -1;
}

/* The live line: "spulse record: 12345 samples, 999/s, 0 lost". */
static void show_progress(struct record_state *st, uint64_t now)
{
	struct sp_recording_summary sum = { .size = sizeof(sum) };
	double dt = (double)(now - st->last_progress_ns) * 1e-9;

	sp_recorder_summary(st->rec, &sum);
	fprintf(stderr,
		"\r\033[K%sspulse record:%s %" PRIu64
		" samples, %.0f/s, %" PRIu64 " lost, %.1f s",
		st->color ? "\033[1m" : "", st->color ? "\033[0m" : "",
		sum.samples,
		dt > 0 ? (double)(sum.samples - st->last_samples) / dt : 0.0,
		sum.lost_events, (double)(now - st->start_ns) * 1e-9);
	st->last_samples = sum.samples;
	st->last_progress_ns = now;
}

/* Whether the targets are gone (reaps the command when it exits). */
static bool targets_done(struct record_state *st)
{
	if (st->launch) {
		if (!st->cmd_done &&
		    sp_launch_try_wait(st->launch, &st->cmd_status) == 1)
			st->cmd_done = true;
		return st->cmd_done;
	}
	if (st->system)
		return false; /* until a signal or --duration */
	return sp_recorder_active_process_count(st->rec) <= 0;
}

/* Poll until a stop condition; returns 0 or the first poll error. */
static int record_loop(struct record_state *st, const struct record_opts *o)
{
	uint64_t deadline =
		o->duration_s > 0 ?
			st->start_ns + (uint64_t)(o->duration_s * 1e9) :
			UINT64_MAX;
	int err = 0;

	while (!stop_requests && !targets_done(st)) {
		uint64_t now = now_ns();

		if (now >= deadline)
			break;
		err = sp_recorder_poll(st->rec, POLL_MS, NULL);
		if (err == -EINTR)
			err = 0;
		if (err < 0)
			break;
		if (st->progress && now - st->last_progress_ns >= PROGRESS_NS)
			show_progress(st, now);
	}
	if (st->progress)
		fputs("\r\033[K", stderr);
	st->end_ns = now_ns();
	return err;
}

/*
 * Waits up to @ms for the command to exit, or until a stop request beyond
 * @seen arrives; true once it is reaped. The 10 ms naps end early on a
 * signal (no SA_RESTART).
 */
static bool wait_command(struct record_state *st, int ms, sig_atomic_t seen)
{
	struct timespec nap = { 0, 10000000 };
	int waited;

	for (waited = 0; waited < ms && stop_requests == seen; waited += 10) {
		if (sp_launch_try_wait(st->launch, &st->cmd_status) == 1)
			return st->cmd_done = true;
		nanosleep(&nap, NULL);
	}
	st->cmd_done = sp_launch_try_wait(st->launch, &st->cmd_status) == 1;
	return st->cmd_done;
}

/* "spulse record: CMD (pid N) MSG" */
static void command_note(const struct record_state *st, const char *cmd,
			 const char *msg)
{
	fputs("spulse record: ", stderr);
	spulse_put_text(stderr, cmd, strlen(cmd), false);
	fprintf(stderr, " (pid %d) %s\n", (int)sp_launch_pid(st->launch), msg);
}

/*
 * A command still running after the recording stopped gets SIGTERM, like
 * perf record sends it, but a command that ignores SIGTERM must not keep
 * spulse waiting forever: after TERM_GRACE_MS, or at once on a further
 * Ctrl-C/SIGTERM, it gets SIGKILL; if even that is not reaped within
 * KILL_GRACE_MS (a process stuck in the kernel), or on one more signal,
 * spulse stops waiting and exits (status 1: the command's is unknown).
 * @seen: stop requests already acted on (the one that ended the loop).
 */
static void reap_command(struct record_state *st, const char *cmd,
			 sig_atomic_t seen)
{
	pid_t pid;

	if (!st->launch || st->cmd_done)
		return;
	if (sp_launch_try_wait(st->launch, &st->cmd_status) == 1) {
		st->cmd_done = true;
		return;
	}
	pid = (pid_t)sp_launch_pid(st->launch);
	kill(pid, SIGTERM);
	if (wait_command(st, TERM_HINT_MS, seen))
		return;
	if (stop_requests == seen) {
		command_note(st, cmd,
			     "ignores SIGTERM so far; "
			     "Ctrl-C again to kill it");
		if (wait_command(st, TERM_GRACE_MS - TERM_HINT_MS, seen))
			return;
	}
	command_note(st, cmd,
		     stop_requests != seen ?
			     "gets SIGKILL (stop requested again)" :
			     "did not exit after SIGTERM: sending SIGKILL");
	kill(pid, SIGKILL);
	seen = stop_requests;
	if (!wait_command(st, KILL_GRACE_MS, seen))
		command_note(st, cmd,
			     "did not exit after SIGKILL; "
			     "not waiting for it any longer");
}

static void print_counts(const char *label, const char *const *names,
			 const uint64_t *v, size_t n)
{
	bool any = false;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!v[i])
			continue;
		fprintf(stderr, "%s %s=%" PRIu64, any ? "" : label, names[i],
			v[i]);
		any = true;
	}
	if (any)
		fputc('\n', stderr);
}

/*
 * The counters that say where off-CPU or wall time may be short or
 * long (docs/explanation/off-cpu.md), the non-zero ones; throttling in
 * any mode.
 */
static void print_accounting(const struct sp_recording_summary *s)
{
	static const char *const names[] = {
		"switch_in_unmatched", "spans_cut_at_exit", "spans_open_at_end",
		"late_records",	       "wall_clipped_ns",   "wall_unsampled_ns",
		"wall_oversampled_ns", "throttle_events"
	};
	const uint64_t v[] = { s->switch_in_unmatched, s->spans_cut_at_exit,
			       s->spans_open_at_end,   s->late_records,
			       s->wall_clipped_ns,     s->wall_unsampled_ns,
			       s->wall_oversampled_ns, s->throttle_events };

	print_counts("  accounting:", names, v, sizeof(v) / sizeof(v[0]));
}

/* "  2.01 s, 1.2 MiB, 412.3 bytes/sample" (file size after finishing). */
static void print_size(const struct record_state *st, const char *out,
		       uint64_t samples)
{
	static const char *const units[] = { "bytes", "KiB", "MiB", "GiB",
					     "TiB" };
	double secs = (double)(st->end_ns - st->start_ns) * 1e-9, size;
	struct stat sb;
	size_t u = 0;

	fprintf(stderr, "  duration %.2f s", secs);
	if (stat(out, &sb) == 0 && S_ISREG(sb.st_mode)) {
		for (size = (double)sb.st_size; size >= 1024 && u < 4; u++)
			size /= 1024;
		fprintf(stderr, u ? ", file %.1f %s" : ", file %.0f %s", size,
			units[u]);
		if (samples)
			fprintf(stderr, ", %.1f bytes/sample",
				(double)sb.st_size / (double)samples);
	}
	fputc('\n', stderr);
}

/* "  JIT code: jitdump_files=1 ..." with the counters that are not 0. */
static void print_jit(const struct record_state *st)
{
	static const char *const names[] = {
		"jitdump_files",  "jitdump_records", "jitdump_unwind",
		"jitdump_errors", "gdb_processes",   "gdb_checks",
		"gdb_walks",	  "gdb_objects",     "gdb_removed",
		"gdb_bytes",	  "gdb_list_errors", "gdb_bad_objects",
		"retries",	  "retries_better",  "regenerations",
		"names",	  "names_lost",
	};
	struct sp_jit_stats js = { .size = sizeof(js) };
	uint64_t v[sizeof(names) / sizeof(names[0])];

	if (sp_recorder_jit_stats(st->rec, &js))
		return;
	/* The counters follow @size in the struct, in this order. */
	memcpy(v, &js.jitdump_files, sizeof(v));
	print_counts("  JIT code:", names, v, sizeof(names) / sizeof(names[0]));
}

static void print_summary(const struct record_state *st, const char *out)
{
	static const char *const errs[SP_SAMPLE_ERR_COUNT] = {
		"register_capture",    "stack_read",
		"stack_truncated",     "did_not_advance",
		"return_address_null", "moved_backwards",
		"integer_overflow",    "user_registers_missing",
		"depth_limit"
	};
	/* enum sp_unwind_fallback, without the SP_FALLBACK_ prefix. */
	static const char *const fbs[SP_FALLBACK_COUNT] = {
		"no_module",
		"no_module_unwind_data",
		"eh_frame_hdr_lookup",
		"dwarf_cfi_index_lookup",
		"dwarf_fde_read",
		"dwarf_unwind_info",
		"dwarf_sp_moved_backwards",
		"dwarf_did_not_advance",
		"dwarf_no_cfa",
		"dwarf_no_return_address",
		"dwarf_no_frame_pointer",
		"other_unwind_format"
	};
	struct sp_recording_summary s = { .size = sizeof(s) };
	uint64_t other[SP_SAMPLE_ERR_COUNT];
	size_t i;

	sp_recorder_summary(st->rec, &s);
	fprintf(stderr,
		"spulse record: wrote %s: %" PRIu64 " samples (%" PRIu64
		" sample events), %" PRIu64 " lost, %" PRIu64
		" truncated stacks, kernel callchains %s\n",
		out, s.samples, s.sample_events, s.lost_events,
		s.truncated_frame_markers, s.kernel_enabled ? "on" : "off");
	if (s.missing_pid_samples + s.missing_tid_samples + s.idle_tid_samples +
	    s.missing_timestamp_samples + s.empty_stack_samples)
		fprintf(stderr,
			"  skipped: missing pid %" PRIu64
			", missing tid %" PRIu64 ", idle %" PRIu64
			", no timestamp %" PRIu64 ", empty stack %" PRIu64 "\n",
			s.missing_pid_samples, s.missing_tid_samples,
			s.idle_tid_samples, s.missing_timestamp_samples,
			s.empty_stack_samples);
	/* One reason per truncated stack; then errors of skipped samples. */
	print_counts("  truncated by:", errs, s.truncation_reasons,
		     SP_SAMPLE_ERR_COUNT);
	for (i = 0; i < SP_SAMPLE_ERR_COUNT; i++)
		other[i] = s.errors[i] - s.truncation_reasons[i];
	print_counts("  samples not unwound:", errs, other,
		     SP_SAMPLE_ERR_COUNT);
	/* Steps taken by frame pointer for want of CFI (JIT code such as
	 * V8's, binaries without unwind tables), by reason. */
	print_counts("  frame-pointer steps:", fbs, s.fallbacks,
		     SP_FALLBACK_COUNT);
	if (s.switch_events || s.samples_synthesized || s.switch_lost)
		fprintf(stderr,
			"  off-CPU: %" PRIu64 " switch records, %" PRIu64
			" waits -> %" PRIu64 " samples, %" PRIu64
			" below threshold, %" PRIu64 " cut at a loss, %" PRIu64
			" inconsistent\n",
			s.switch_events, s.off_cpu_spans, s.samples_synthesized,
			s.blocks_below_threshold, s.switch_lost,
			s.switch_anomalies);
	print_accounting(&s);
	print_jit(st);
	print_size(st, out, s.samples);
	if (s.jit_maps_kept || s.jit_maps_failed)
		fprintf(stderr,
			"  JIT perf maps kept in %s: %" PRIu64
			" (failed: %" PRIu64 ")\n",
			st->jit_dir, s.jit_maps_kept, s.jit_maps_failed);
}

static int exit_status(const struct record_state *st)
{
	if (!st->launch)
		return SPULSE_EXIT_OK;
	if (!st->cmd_done)
		return SPULSE_EXIT_DATA;
	if (WIFSIGNALED(st->cmd_status))
		return 128 + WTERMSIG(st->cmd_status);
	return WEXITSTATUS(st->cmd_status);
}

static int open_system(struct record_state *st, struct record_opts *o)
{
	struct sp_system_opts so = { .size = sizeof(so) };
	struct sp_recorder_opts ro;
	const char *comms[MAX_COMMS];
	int i;

	for (i = 0; i < o->ncomms; i++)
		comms[i] = o->comms[i];
	so.pids = o->pids;
	so.npids = (size_t)o->npids;
	so.comms = comms;
	so.ncomms = (size_t)o->ncomms;
	so.cgroup_path = o->cgroup;
	so.flags = SP_SYSTEM_EXCLUDE_SELF;
	o->rec.flags &= ~SP_RECORDER_INHERIT_CHILDREN; /* CPU-wide events */
	st->system = true;
	/* Say which path is wrong: the library's -ENOENT could be either. */
	if (o->cgroup && access(o->cgroup, F_OK) != 0) {
		record_error("no such cgroup", o->cgroup, -errno);
		return 1;
	}
	ro = o->rec;
	ro.system = &so;
	return sp_recorder_open(o->out, &ro, &st->rec);
}

static uint64_t wall_clock_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int start_targets(struct record_state *st, struct record_opts *o)
{
	int err = check_pids(o);

	if (err >= 0)
		return err;
	/* The interval is derived from the rate by the library. */
	o->rec.start_timestamp_us = wall_clock_us();
	err = o->system ? open_system(st, o) :
			  sp_recorder_open(o->out, &o->rec, &st->rec);
	if (err > 0)
		return SPULSE_EXIT_DATA; /* already reported */
	if (err == SP_EFREQ) {
		/* The limit changed since the options were checked. */
		err = spulse_check_rate("record", o->rec.sample_hz);
		return err >= 0 ? err : SPULSE_EXIT_USAGE;
	}
	if (err < 0 && o->system && spulse_is_permission(err)) {
		record_error("cannot record system-wide", NULL, err);
		spulse_permission_hint("record", true);
		return SPULSE_EXIT_DATA;
	}
	if (err < 0) {
		record_error("cannot record into", o->out, err);
		/* The library refuses /tmp and a foreign directory for it. */
		if (o->rec.jit_dir && (err == -EEXIST || err == -EINVAL))
			fprintf(stderr,
				"  (or the JIT side directory %s: it must be "
				"one spulse made, or new, and not /tmp; see "
				"--jit-dir)\n",
				o->rec.jit_dir);
		return SPULSE_EXIT_DATA;
	}
	st->progress = spulse_term_escapes(STDERR_FILENO);
	st->color = st->progress && spulse_term_color(STDERR_FILENO);
	st->start_ns = st->last_progress_ns = now_ns();
	if (o->cmd)
		return start_command(st, o->cmd);
	return o->system ? -1 : attach_pids(st, o);
}

int spulse_cmd_record(int argc, char **argv)
{
	struct record_opts o = { 0 };
	struct record_state st = { 0 };
	int status = parse_args(argc, argv, &o);
	sig_atomic_t seen;
	int err;

	if (status >= 0)
		return status;
	st.jit_dir = o.rec.jit_dir;
	install_handlers();
	status = start_targets(&st, &o);
	err = status < 0 ? record_loop(&st, &o) : 0;
	/*
	 * The first stop request is the one that ended the loop; a second
	 * one that arrived before the loop noticed the first (a quick double
	 * Ctrl-C) still counts as "again".
	 */
	seen = stop_requests ? 1 : 0;
	if (err < 0)
		record_error("recording failed", NULL, err);
	if (st.rec && status < 0) {
		int ferr = sp_recorder_finish(st.rec);

		if (ferr < 0 && !err)
			record_error("cannot finish", o.out, err = ferr);
		print_summary(&st, o.out);
	}
	reap_command(&st, o.cmd ? o.cmd[0] : "", seen);
	sp_recorder_close(st.rec);
	sp_launch_free(st.launch);
	if (status >= 0)
		return status;
	return err < 0 ? SPULSE_EXIT_DATA : exit_status(&st);
}
