/* SPDX-License-Identifier: MIT */
/* spulse top: what the table code (cmd_top.c) and live recording (top_live.c) share. */
#ifndef SPULSE_TOP_H
#define SPULSE_TOP_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include <stackpulse.h>

#include "funcs.h"

struct top_opts {
	const char *path;  /* FILE, or NULL for a live recording */
	const char *label; /* what the header names: FILE, "pid N", COMMAND */
	char **cmd;	   /* live: NULL-terminated COMMAND, or NULL with -p */
	double interval;
	unsigned top;
	unsigned long iterations; /* 0 = until a signal */
	bool total, once, has_pid, no_demangle;
	int32_t pid;
	uint32_t sample_hz; /* live: -F (0 = default) */
};

struct top {
	struct spulse_funcs fn; /* copied names; mark: last sample serial */
	const struct sp_resolved_frame **fr;
	size_t fr_cap;
	uint64_t samples, last; /* all so far, and since the last refresh */
	bool tty, color;
	unsigned long refreshes;
	int64_t last_ns; /* time of the last refresh */
};

/* Set by SIGINT/SIGTERM (the handler installed by spulse_cmd_top). */
extern volatile sig_atomic_t spulse_top_stop;

/* Prepares @t for output on stdout (terminal or not, colour). */
void spulse_top_init(struct top *t, const struct top_opts *o);
void spulse_top_fini(struct top *t);

/*
 * spulse_top_drain polls @tail until nothing more is visible, updating
 * @sym before resolving each batch, and counts the new samples (those of
 * o->pid with has_pid). Returns 0 or a negative error.
 */
int spulse_top_drain(struct top *t, struct sp_tail *tail,
		     struct sp_symbolizer *sym, const struct top_opts *o);

/* spulse_top_refresh prints one table of the counts so far. */
int spulse_top_refresh(struct top *t, const struct top_opts *o);

/* Monotonic nanoseconds. */
int64_t spulse_top_now_ns(void);

/*
 * spulse_top_live records o->cmd or o->pid into a temporary spool and
 * shows its table while it runs (top_live.c). Returns an exit status.
 */
int spulse_top_live(const struct top_opts *o);

#endif /* SPULSE_TOP_H */
