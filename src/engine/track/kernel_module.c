/* SPDX-License-Identifier: MIT */
/* The kernel text module: kernel callchain frames pinned to one module. */

/*
 * A spool keeps kernel frames apart from user ones by mode; pinning them
 * to a kernel module (pid -1, SPULSE3 §5.1) also records where the
 * running kernel's text was, which is what an offline reader needs to
 * undo KASLR against a System.map (features §1.5: perf's kernel MMAP
 * record `[kernel.kallsyms]_text`). The kernel never sends us that
 * record (perf synthesizes it in user space), so the range comes from
 * /proc/kallsyms: _text (or _stext, whichever is lower) up to _etext.
 *
 * The module's file offset is its start, as perf's record has pgoff =
 * _text: a pinned frame's file-relative ip is then its absolute address,
 * the same number an unpinned kernel frame carries, and symbolizers that
 * look kernel frames up by absolute address see no difference.
 *
 * kallsyms is ~120k lines and _etext sits near the end of the core
 * symbols; the scan costs tens of ms of kernel time, so the recorder does
 * it once when the first events open, not on the sample path. Frames of
 * loadable modules and BPF programs lie outside the range and stay
 * unpinned.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <stackpulse/writer.h>

#include "kernel_module.h"
#include "logging.h"
#include "process.h"

#define CHUNK (64u << 10)

/** struct range_scan is what the line scan has found so far. */
struct range_scan {
	uint64_t text;
	uint64_t etext;
};

static bool name_is(const char *name, size_t len, const char *want)
{
	return len == strlen(want) && memcmp(name, want, len) == 0;
}

/*
 * One "ADDR TYPE NAME[\t[MOD]]" line. Module symbols (a tab after the
 * name) are skipped: only core kernel text bounds the module.
 */
static void scan_line(struct range_scan *sc, const char *line, size_t len)
{
	const char *sp1 = memchr(line, ' ', len), *name, *tab;
	char *end;
	uint64_t addr;
	size_t nlen;

	if (!sp1 || (size_t)(sp1 - line) + 3 > len || sp1[2] != ' ')
		return;
	addr = strtoull(line, &end, 16);
	if (end != sp1 || addr == 0)
		return;
	name = sp1 + 3;
	nlen = len - (size_t)(name - line);
	tab = memchr(name, '\t', nlen);
	if (tab)
		return;
	if (name_is(name, nlen, "_text") || name_is(name, nlen, "_stext")) {
		if (!sc->text || addr < sc->text)
			sc->text = addr;
	} else if (name_is(name, nlen, "_etext") && addr > sc->etext) {
		sc->etext = addr;
	}
}

/* Scans the complete lines of @buf; returns the bytes consumed. */
static size_t scan_lines(struct range_scan *sc, const char *buf, size_t len)
{
	const char *p = buf, *nl;

	while ((nl = memchr(p, '\n', len - (size_t)(p - buf))) != NULL) {
		scan_line(sc, p, (size_t)(nl - p));
		p = nl + 1;
	}
	return (size_t)(p - buf);
}

/* Reads @fd through @buf until both bounds are known or the file ends. */
static int scan_fd(int fd, char *buf, struct range_scan *sc)
{
	size_t have = 0, used;
	ssize_t n;

	while (!sc->text || !sc->etext) {
		n = read(fd, buf + have, CHUNK - have);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		have += (size_t)n;
		used = scan_lines(sc, buf, have);
		if (used == 0 && have == CHUNK)
			used = have; /* an absurd line: drop it */
		memmove(buf, buf + used, have - used);
		have -= used;
	}
	if (have && (!sc->text || !sc->etext))
		scan_line(sc, buf, have); /* a last line without newline */
	return 0;
}

int sp__kmod_read_range(const struct sp__mem *mem, const char *path,
			uint64_t *start, uint64_t *end)
{
	struct range_scan sc = { 0, 0 };
	char *buf = sp__mem_alloc(mem, CHUNK);
	int fd, err;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		err = -errno;
		goto free_buf;
	}
	err = scan_fd(fd, buf, &sc);
	close(fd);
	if (!err && (!sc.text || sc.etext <= sc.text))
		err = -ENOENT;
	if (!err) {
		*start = sc.text;
		*end = sc.etext;
	}
free_buf:
	sp__mem_free(mem, buf, CHUNK);
	return err;
}

int sp__kmod_open(struct sp__kmod *k, struct sp__procs *procs, bool kernel)
{
	struct sp_module m;
	int err;

	if (k->tried || !kernel)
		return 0;
	k->tried = true;
	err = sp__kmod_read_range(procs->mem, SP__KALLSYMS, &k->start, &k->end);
	if (err) {
		sp__log(procs->logger, SP_LOG_DEBUG,
			"no kernel text range from %s (%d): kernel frames "
			"stay unpinned",
			SP__KALLSYMS, err);
		return 0;
	}
	memset(&m, 0, sizeof(m));
	m.start = k->start;
	m.end = k->end;
	m.file_offset = k->start;
	m.pid = -1;
	m.is_kernel = 1;
	m.path = SP__KMOD_PATH;
	m.path_len = strlen(SP__KMOD_PATH);
	/*
	 * Registered lazily (a replay opens no event) this runs while
	 * threaded mode may have samples dispatched but not written: they
	 * go first, as every other module record waits for them.
	 */
	err = sp__procs_sync(procs);
	if (!err)
		err = sp_writer_module(procs->writer, &m, &k->id);
	k->ok = err == 0;
	return err;
}

void sp__kmod_frame(struct sp__kmod *k, struct sp__procs *procs, bool kernel,
		    uint64_t ip, struct sp_frame *f)
{
	if (!k->tried && sp__kmod_open(k, procs, kernel))
		sp__log(procs->logger, SP_LOG_WARN,
			"kernel module record not written");
	f->abs_ip = ip;
	f->file_relative_ip = ip; /* file offset == start: see above */
	f->module_id = k->ok && ip >= k->start && ip < k->end ? k->id :
								SP_NO_MODULE;
	f->mode = SP_FRAME_KERNEL;
}
