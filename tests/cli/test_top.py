#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tests of `spulse top`: usage: test_top.py SPULSE REPORT_GEN CASE.

REPORT_GEN writes a finished spool of its own functions (rg_root <-
rg_middle <- rg_leaf, 45 samples; see report_gen.c). The live cases copy
it into a new file in three pieces while `spulse top` follows that file;
a piece may end inside a record, which the tail must pick up later. What
each prefix holds is learnt from `spulse top --once` on the prefix, so the
tests wait for exact counts instead of sleeping. Exit status: 0 pass,
1 fail.
"""

import os
import pty
import re
import signal
import subprocess
import sys
import threading

from clitest import Failure, cases, expect, run_checked
import clitest

HEADER = re.compile(r"^spulse top: .*  samples: (\d+)  last interval: (\d+)")


def run(spulse, *args, rc=0, env=None):
    p = run_checked([spulse, *args], rc=rc, env=env)
    return p.stdout.decode(), p.stderr.decode()


def rows(table):
    """{function: (self, total)} of the rows of one table's text."""
    out = {}
    for line in table:
        f = line.split()
        if len(f) >= 5 and f[0].isdigit() and f[2].isdigit():
            out[f[4]] = (int(f[0]), int(f[2]))
    return out


class Live:
    """A `spulse top` process on a file we append to, read as it prints."""

    def __init__(self, spulse, path, *args):
        self.p = subprocess.Popen([spulse, "top", *args, path],
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True)
        # A hung process must not hang the test: kill it after 60 s.
        self.watchdog = threading.Timer(60, self.p.kill)
        self.watchdog.start()
        self.text = ""

    def header(self):
        """Samples so far in the next refresh's header (waits for it)."""
        for line in self.p.stdout:
            self.text += line
            m = HEADER.match(line)
            if m:
                return int(m.group(1))
        raise Failure(f"output ended: {self.text!r}")

    def finish(self):
        """Exit status, stderr, and the tables: (samples, last, rows)."""
        # Not communicate(): it reads the raw pipe and would lose what the
        # line iteration above has already buffered.
        self.text += self.p.stdout.read()
        err = self.p.stderr.read()
        self.p.wait()
        self.watchdog.cancel()
        tables = []
        for t in self.text.split("\n\n"):
            lines = t.splitlines()
            m = HEADER.match(lines[0]) if lines else None
            expect(m, f"table without a header: {t!r}")
            tables.append((int(m.group(1)), int(m.group(2)),
                           rows(lines[1:])))
        return self.p.returncode, err, tables


def pieces(spulse, spool, tmp):
    """Three pieces of @spool and the samples visible after each prefix."""
    data = open(spool, "rb").read()
    cuts = [len(data) // 3, 2 * len(data) // 3, len(data)]
    counts = []
    for i, cut in enumerate(cuts):
        prefix = f"{tmp}/prefix{i}.spool"
        with open(prefix, "wb") as f:
            f.write(data[:cut])
        out, _ = run(spulse, "top", "--once", prefix)
        counts.append(int(HEADER.match(out).group(1)))
    expect(counts[0] < counts[1] < counts[2] == 45,
           f"the pieces do not split the samples: {counts}")
    return [data[a:b] for a, b in zip([0] + cuts, cuts)], counts


def append(path, piece):
    with open(path, "ab") as f:
        f.write(piece)


def case_live(spulse, spool, tmp):
    chunks, counts = pieces(spulse, spool, tmp)
    path = tmp + "/live.spool"
    # Started before the file exists: top waits for it.
    top = Live(spulse, path, "--interval", "0.1")
    seen = []
    for k, chunk in enumerate(chunks):
        append(path, chunk)
        while not seen or seen[-1] != counts[k]:
            seen.append(top.header())
            expect(seen[-1] <= counts[k], f"counts {seen}, want {counts}")
    expect(seen == sorted(seen) and seen[0] < 45,
           f"sample counts did not grow: {seen}")
    top.p.send_signal(signal.SIGTERM)
    rc, err, tables = top.finish()
    expect(rc == 0 and err == "", f"SIGTERM: exit {rc}, stderr {err!r}")
    expect(len(tables) >= 3 and tables[-1][0] == 45, f"tables: {tables}")
    last = tables[-1][2]
    expect(last.get("rg_leaf") == (35, 35), f"rg_leaf: {last}")
    expect(last.get("rg_middle") == (10, 45), f"rg_middle: {last}")


def case_iterations(spulse, spool, tmp):
    chunks, counts = pieces(spulse, spool, tmp)
    path = tmp + "/live.spool"
    append(path, chunks[0])
    top = Live(spulse, path, "--iterations", "3", "--interval", "0.2")
    for chunk in chunks[1:]:
        top.header()  # that refresh has drained: now the file grows
        append(path, chunk)
    rc, err, tables = top.finish()
    expect(rc == 0 and err == "", f"exit {rc}, stderr {err!r}")
    expect(len(tables) == 3, f"{len(tables)} tables: {tables}")
    got = [t[0] for t in tables]
    expect(got[0] == counts[0], f"counts {got}, prefixes {counts}")
    expect(got == sorted(got) and all(g in counts for g in got),
           f"counts {got}, prefixes {counts}")
    expect(sum(t[1] for t in tables) == got[-1],
           f"last-interval counts do not add up: {tables}")
    names = tables[-1][2]
    expect("rg_middle" in names and "rg_leaf" in names,
           f"function names: {tables[-1]}")
    expect("\033" not in top.text, "escape codes without a TTY")


def report_top(spulse, spool, table, *args):
    out, _ = run(spulse, "report", *args, spool)
    lines = out.splitlines()
    at = lines.index(f"top functions by {table} samples:")
    f = lines[at + 2].split()
    return f[4], int(f[0]), int(f[2])


def case_once(spulse, spool, tmp):
    for table in ("self", "total"):
        out, _ = run(spulse, "top", "--once", "--" + table, spool)
        lines = out.splitlines()
        expect(HEADER.match(lines[0]).group(1) == "45", out)
        f = lines[2].split()
        got = (f[4], int(f[0]), int(f[2]))
        want = report_top(spulse, spool, table)
        expect(got == want, f"--{table}: top {got}, report {want}")
    out, _ = run(spulse, "top", "--once", "--top", "1", spool)
    expect(len(out.splitlines()) == 3, f"--top 1: {out}")
    out, _ = run(spulse, "top", "--once", "--pid", "7", spool)
    expect(HEADER.match(out).group(1) == "0" and len(out.splitlines()) == 2,
           f"--pid filter: {out}")


def case_tty(spulse, spool, tmp):
    for no_color in (False, True):
        env = dict(os.environ)
        env.pop("NO_COLOR", None)
        if no_color:
            env["NO_COLOR"] = "1"
        master, slave = pty.openpty()
        p = subprocess.Popen([spulse, "top", "--iterations", "1", spool],
                             stdout=slave, stderr=subprocess.PIPE, env=env)
        os.close(slave)
        out = b""
        while True:
            try:
                data = os.read(master, 4096)
            except OSError:  # EIO: the pty's last writer is gone
                break
            if not data:
                break
            out += data
        os.close(master)
        expect(p.wait(timeout=60) == 0, f"tty run: exit {p.returncode}")
        expect(out.startswith(b"\033[H\033[2J"), f"no screen clear: {out!r}")
        expect((b"\033[1m" in out) != no_color, f"bold: {out!r}")
        expect(b"rg_leaf" in out, f"rows: {out!r}")


def case_missing(spulse, spool, tmp):
    _, err = run(spulse, "top", "--once", tmp + "/never.spool", rc=1)
    expect("never.spool" in err, err)


def case_corrupt(spulse, spool, tmp):
    bad = tmp + "/bad.spool"
    with open(bad, "wb") as f:
        f.write(b"NOTSPULS" + bytes(64))
    _, err = run(spulse, "top", "--once", bad, rc=1)
    expect("corrupt" in err, err)
    with open(bad, "wb") as f:
        f.write(open(spool, "rb").read() + b"\x7f\x7f\x7f\x7f")
    _, err = run(spulse, "top", "--iterations", "2", bad, rc=1)
    expect("corrupt" in err, err)


def case_usage(spulse, spool, tmp):
    run(spulse, "top", rc=2)
    for bad in (["--interval", "0"], ["--interval", "x"], ["--top", "0"],
                ["--iterations", "0"], ["--pid", "-1"], ["--bogus"],
                [spool], ["--interval"]):
        run(spulse, "top", *bad, spool, rc=2)
    out, _ = run(spulse, "top", "--help")
    expect("--iterations" in out and "--once" in out, out)
    out, _ = run(spulse, "help")
    expect(re.search(r"^  top ", out, re.M), out)


def run_case(case, args, tmp):
    spulse, report_gen = args
    spool = tmp + "/report.spool"
    subprocess.run([report_gen, spool], check=True)
    case(spulse, spool, tmp)


if __name__ == "__main__":
    sys.exit(clitest.main(cases(globals()), ["SPULSE", "REPORT_GEN"],
                          "spulse-top-", run_case))
