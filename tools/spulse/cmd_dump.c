/* SPDX-License-Identifier: MIT */
/* spulse dump: print every record of a spool, definitions then samples. */

/*
 * The public API gives definitions by id, not the interleaved file order,
 * so the dump is grouped: the header, then modules, frames, stack nodes,
 * threads and Python-runtime records (each in id / file order), then the
 * samples in file order. Samples come from a Replay, which decodes them
 * again through a small window, so dumping a huge spool needs memory for
 * the definitions only.
 *
 * Each sample is followed by its stack, leaf first, resolved for the
 * sample's pid (sp_spool_stack_contexts, SPULSE3 §6):
 *
 *   sample index=0 timestamp_ns=1000 timestamp_us=123 pid=7 tid=11 ...
 *     at depth=0 frame=0 mode=user abs_ip=0x1010 module=0 rel_ip=0x110
 *        path="/first"                                  (one line)
 *
 * With --json every record is one JSON object on its own line, with the
 * same keys, a "type" key and the stack as a "frames" array.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "args.h"
#include "spulse.h"

struct dump_opts {
	const char *path;
	uint64_t limit; /* samples to print; UINT64_MAX = all */
	bool json;
	bool definitions;
	bool samples;
};

/* State of one dump: the emitter and the reusable stack buffer. */
struct dump {
	struct spulse_emit emit;
	const struct sp_spool *spool;
	struct sp_frame_context *ctx;
	size_t ctx_cap;
};

void spulse_dump_usage(FILE *f)
{
	fputs("usage: spulse dump [options] FILE\n"
	      "\n"
	      "Print the records of the SPULSE3 spool FILE: the header, then\n"
	      "modules, frames, stack nodes, threads and Python-runtime\n"
	      "records by id, then every sample in file order with its stack\n"
	      "(leaf first) resolved to module ids and file-relative\n"
	      "addresses.\n"
	      "Strings are escaped: \\\\, \\\" and \\xNN for other bytes.\n"
	      "\n"
	      "  --json          one JSON object per record and line\n"
	      "  --samples-only  print only the samples\n"
	      "  --no-samples    print only the header and the definitions\n"
	      "  --limit N       print at most N samples\n"
	      "  -h, --help      show this help\n"
	      "\n"
	      "Exit status: 0 success (also for a recovered cut-off tail),\n"
	      "1 corrupt or unreadable file, 2 usage error.\n",
	      f);
}

/* Handles one option at argv[*i]; returns -1 to go on or an exit status. */
static int parse_option(int argc, char **argv, int *i, struct dump_opts *o)
{
	const char *a = argv[*i];

	if (strcmp(a, "--json") == 0) {
		o->json = true;
	} else if (strcmp(a, "--samples-only") == 0) {
		o->definitions = false;
	} else if (strcmp(a, "--no-samples") == 0) {
		o->samples = false;
	} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
		spulse_dump_usage(stdout);
		return SPULSE_EXIT_OK;
	} else if (strncmp(a, "--limit=", 8) == 0) {
		return spulse_parse_range("dump", "--limit", a + 8, 0,
					  UINT64_MAX, &o->limit);
	} else if (strcmp(a, "--limit") == 0) {
		return spulse_parse_range("dump", "--limit",
					  *i + 1 < argc ? argv[++*i] : NULL, 0,
					  UINT64_MAX, &o->limit);
	} else {
		return spulse_usage_error("dump", "unknown option", a);
	}
	return -1;
}

/* Returns -1 to run, or the exit status to return right away. */
static int parse_args(int argc, char **argv, struct dump_opts *o)
{
	bool dashdash = false;
	int i, status;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (dashdash || a[0] != '-' || a[1] == '\0') {
			if (o->path)
				return spulse_usage_error("dump",
							  "extra argument", a);
			o->path = a;
		} else if (strcmp(a, "--") == 0) {
			dashdash = true;
		} else if ((status = parse_option(argc, argv, &i, o)) >= 0) {
			return status;
		}
	}
	if (!o->definitions && !o->samples)
		return spulse_usage_error(
			"dump",
			"--samples-only and --no-samples exclude each other",
			NULL);
	if (!o->path)
		return spulse_usage_error("dump", "missing FILE", NULL);
	return -1;
}

static const char *mode_name(uint32_t mode)
{
	switch (mode) {
	case SP_FRAME_USER:
		return "user";
	case SP_FRAME_KERNEL:
		return "kernel";
	case SP_FRAME_TRUNCATED:
		return "truncated";
	default:
		return "unknown";
	}
}

/* A u32 id field whose sentinel (SP_NO_MODULE, SP_NEVER, ...) means none. */
static void emit_id(struct spulse_emit *e, const char *key, uint32_t id)
{
	if (id == UINT32_MAX)
		spulse_emit_none(e, key);
	else
		spulse_emit_u64(e, key, id);
}

static void dump_header(struct dump *d, struct sp_replay *r)
{
	struct spulse_emit *e = &d->emit;

	spulse_emit_begin(e, "header");
	spulse_emit_u64(e, "start_timestamp_us",
			sp_spool_start_timestamp_us(d->spool));
	spulse_emit_u64(e, "sample_interval_us",
			sp_spool_sample_interval_us(d->spool));
	spulse_emit_u64(e, "samples", sp_replay_sample_count(r));
	spulse_emit_u64(e, "modules", sp_spool_module_count(d->spool));
	spulse_emit_u64(e, "frames", sp_spool_frame_count(d->spool));
	spulse_emit_u64(e, "stacks", sp_spool_stack_count(d->spool));
	spulse_emit_u64(e, "threads", sp_spool_thread_count(d->spool));
	spulse_emit_u64(e, "python_records", sp_replay_python_record_count(r));
	spulse_emit_bool(e, "truncated", sp_replay_is_recovered(r));
	spulse_emit_end(e);
}

static void dump_module(struct spulse_emit *e, const struct sp_module *m)
{
	spulse_emit_begin(e, "module");
	spulse_emit_u64(e, "id", m->id);
	spulse_emit_i64(e, "pid", m->pid);
	spulse_emit_hex(e, "start", m->start);
	spulse_emit_hex(e, "end", m->end);
	spulse_emit_hex(e, "file_offset", m->file_offset);
	spulse_emit_u64(e, "inode", m->inode);
	spulse_emit_u64(e, "dev_major", m->dev_major);
	spulse_emit_u64(e, "dev_minor", m->dev_minor);
	spulse_emit_u64(e, "generation", m->inode_generation);
	spulse_emit_bool(e, "kernel", m->is_kernel != 0);
	emit_id(e, "deactivated_at", m->deactivated_at);
	spulse_emit_str(e, "path", m->path ? m->path : "", m->path_len);
	spulse_emit_end(e);
}

static int dump_modules(struct dump *d)
{
	uint32_t i, n = sp_spool_module_count(d->spool);
	struct sp_module m;
	int err;

	for (i = 0; i < n && !spulse_out_failed(); i++) {
		err = sp_spool_module(d->spool, i, &m);
		if (err < 0)
			return err;
		dump_module(&d->emit, &m);
	}
	return 0;
}

static int dump_frames(struct dump *d)
{
	uint32_t i, n = sp_spool_frame_count(d->spool);
	struct spulse_emit *e = &d->emit;
	struct sp_frame f;
	int err;

	for (i = 0; i < n && !spulse_out_failed(); i++) {
		err = sp_spool_frame(d->spool, i, &f);
		if (err < 0)
			return err;
		spulse_emit_begin(e, "frame");
		spulse_emit_u64(e, "id", i);
		spulse_emit_word(e, "mode", mode_name(f.mode));
		emit_id(e, "module", f.module_id);
		spulse_emit_hex(e, "rel_ip", f.file_relative_ip);
		spulse_emit_hex(e, "abs_ip", f.abs_ip);
		spulse_emit_end(e);
	}
	return 0;
}

static int dump_stacks(struct dump *d)
{
	uint32_t i, n = sp_spool_stack_count(d->spool);
	struct spulse_emit *e = &d->emit;
	struct sp_stack_node s;
	int err;

	for (i = 0; i < n && !spulse_out_failed(); i++) {
		err = sp_spool_stack_node(d->spool, i, &s);
		if (err < 0)
			return err;
		spulse_emit_begin(e, "stack");
		spulse_emit_u64(e, "id", i);
		emit_id(e, "parent", s.parent);
		spulse_emit_u64(e, "frame", s.frame);
		spulse_emit_u64(e, "depth", s.depth);
		spulse_emit_end(e);
	}
	return 0;
}

static int dump_threads(struct dump *d)
{
	uint32_t i, n = sp_spool_thread_count(d->spool);
	struct spulse_emit *e = &d->emit;
	struct sp_thread t;
	int err;

	for (i = 0; i < n && !spulse_out_failed(); i++) {
		err = sp_spool_thread(d->spool, i, &t);
		if (err < 0)
			return err;
		spulse_emit_begin(e, "thread");
		spulse_emit_u64(e, "id", i);
		spulse_emit_i64(e, "pid", t.pid);
		spulse_emit_i64(e, "tid", t.tid);
		spulse_emit_end(e);
	}
	return 0;
}

static int dump_python(struct dump *d, const struct sp_replay *r)
{
	size_t i, n = sp_replay_python_record_count(r);
	struct spulse_emit *e = &d->emit;
	struct sp_python_record p;
	int err;

	for (i = 0; i < n && !spulse_out_failed(); i++) {
		err = sp_replay_python_record(r, i, &p);
		if (err < 0)
			return err;
		spulse_emit_begin(e, "python");
		spulse_emit_u64(e, "index", i);
		spulse_emit_u64(e, "timestamp_ns", p.timestamp_ns);
		spulse_emit_i64(e, "pid", p.pid);
		spulse_emit_bool(e, "is_python_runtime",
				 p.is_python_runtime != 0);
		spulse_emit_end(e);
	}
	return 0;
}

static int dump_definitions(struct dump *d, struct sp_replay *r)
{
	int err;

	dump_header(d, r);
	err = dump_modules(d);
	if (err >= 0)
		err = dump_frames(d);
	if (err >= 0)
		err = dump_stacks(d);
	if (err >= 0)
		err = dump_threads(d);
	if (err >= 0)
		err = dump_python(d, r);
	return err;
}

/* Resolves @stack into d->ctx, growing it to the full depth; returns depth. */
static int load_stack(struct dump *d, const struct sp_sample *s)
{
	struct sp_frame_context *grown;
	int depth;

	depth = sp_spool_stack_contexts(d->spool, s->stack, s->pid, d->ctx,
					d->ctx_cap);
	if (depth < 0 || (size_t)depth <= d->ctx_cap)
		return depth;
	grown = realloc(d->ctx, (size_t)depth * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	d->ctx = grown;
	d->ctx_cap = (size_t)depth;
	return sp_spool_stack_contexts(d->spool, s->stack, s->pid, d->ctx,
				       d->ctx_cap);
}

static void dump_context(struct dump *d, size_t depth,
			 const struct sp_frame_context *c)
{
	struct spulse_emit *e = &d->emit;
	struct sp_module m;

	spulse_emit_item_begin(e, "at");
	spulse_emit_u64(e, "depth", depth);
	spulse_emit_u64(e, "frame", c->frame_id);
	spulse_emit_word(e, "mode", mode_name(c->frame.mode));
	spulse_emit_hex(e, "abs_ip", c->frame.abs_ip);
	if (c->module_id != SP_NO_MODULE &&
	    sp_spool_module(d->spool, c->module_id, &m) == 0) {
		spulse_emit_u64(e, "module", c->module_id);
		spulse_emit_hex(e, "rel_ip", c->file_relative_ip);
		spulse_emit_str(e, "path", m.path ? m.path : "", m.path_len);
	} else {
		spulse_emit_none(e, "module");
		spulse_emit_none(e, "rel_ip");
	}
	spulse_emit_item_end(e);
}

static int dump_sample(struct dump *d, uint64_t index,
		       const struct sp_sample *s)
{
	struct spulse_emit *e = &d->emit;
	int depth, i;

	depth = load_stack(d, s);
	if (depth < 0)
		return depth;
	spulse_emit_begin(e, "sample");
	spulse_emit_u64(e, "index", index);
	spulse_emit_u64(e, "timestamp_ns", s->timestamp_ns);
	/* SPULSE3 §8: no timeline without a start timestamp. */
	if (sp_spool_start_timestamp_us(d->spool))
		spulse_emit_u64(e, "timestamp_us",
				sp_spool_timestamp_us(d->spool,
						      s->timestamp_ns));
	else
		spulse_emit_none(e, "timestamp_us");
	spulse_emit_i64(e, "pid", s->pid);
	spulse_emit_i64(e, "tid", s->tid);
	spulse_emit_u64(e, "thread", s->thread);
	spulse_emit_u64(e, "stack", s->stack);
	spulse_emit_u64(e, "depth", (uint64_t)depth);
	spulse_emit_list_begin(e, "frames");
	for (i = 0; i < depth; i++)
		dump_context(d, (size_t)i, &d->ctx[i]);
	spulse_emit_list_end(e);
	spulse_emit_end(e);
	return 0;
}

static int dump_samples(struct dump *d, struct sp_replay *r, uint64_t limit)
{
	struct sp_sample s;
	uint64_t i;
	int err;

	err = sp_replay_rewind(r);
	for (i = 0; err >= 0 && i < limit && !spulse_out_failed(); i++) {
		err = sp_replay_next(r, &s);
		if (err <= 0)
			break;
		err = dump_sample(d, i, &s);
	}
	return err < 0 ? err : 0;
}

int spulse_cmd_dump(int argc, char **argv)
{
	struct dump_opts o = { .limit = UINT64_MAX,
			       .definitions = true,
			       .samples = true };
	struct sp_diag diag = { 0 };
	struct sp_reader_opts ropts = { .size = sizeof(ropts), .diag = &diag };
	struct dump d = { .emit = { .f = stdout } };
	struct sp_replay *r;
	int err;

	err = parse_args(argc, argv, &o);
	if (err >= 0)
		return err;
	d.emit.json = o.json;
	err = sp_replay_open(o.path, &ropts, &r);
	if (err < 0) {
		spulse_report_error(o.path, err, &diag);
		return SPULSE_EXIT_DATA;
	}
	if (sp_replay_is_recovered(r))
		spulse_report_recovered(o.path);
	d.spool = sp_replay_spool(r);
	err = o.definitions ? dump_definitions(&d, r) : 0;
	if (err >= 0 && o.samples)
		err = dump_samples(&d, r, o.limit);
	if (err < 0)
		spulse_report_error(o.path, err, NULL);
	free(d.ctx);
	sp_replay_close(r);
	return err < 0 ? SPULSE_EXIT_DATA : SPULSE_EXIT_OK;
}
