#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tests of `spulse report`: usage: test_report.py SPULSE REPORT_GEN CASE.

REPORT_GEN writes a spool whose frames are real functions of its own
executable (see report_gen.c for the exact samples); the report must name
them from the binary's symbol table. Exit status: 0 pass, 1 fail.
"""

import subprocess
import sys

from clitest import cases, expect, run_checked
import clitest


def run(spulse, *args, rc=0):
    return run_checked([spulse, *args], rc=rc).stdout.decode()


def case_text(spulse, spool):
    out = run(spulse, "report", spool)
    expect("samples: 45" in out, f"sample count: {out}")
    lines = out.splitlines()
    self_at = lines.index("top functions by self samples:")
    top = lines[self_at + 2].split()
    # rg_leaf is the leaf of 35 samples: 77.78% self.
    expect(top[0] == "35" and top[4] == "rg_leaf",
           f"top self row: {lines[self_at + 2]!r}")
    total_at = lines.index("top functions by total samples:")
    rows = [l.split() for l in lines[total_at + 2:total_at + 6]]
    by_name = {r[4]: int(r[2]) for r in rows if len(r) > 4}
    expect(by_name.get("rg_middle") == 45, f"total of rg_middle: {rows}")
    expect(by_name.get("rg_root") == 40, f"total of rg_root: {rows}")
    expect("truncated stacks: 5 samples" in out, f"truncated: {out}")
    expect("elf 9" in out, f"origin mix: {out}")
    expect("recovered tail: no" in out, out)


def case_hot(spulse, spool):
    # Same function chain at two leaf addresses (report_gen ... split):
    # one hot stack of 30 + 6 samples, not two.
    subprocess.run([sys.argv[2], spool, "split"], check=True)
    out = run(spulse, "report", spool)
    lines = out.splitlines()
    hot_at = lines.index("hot stacks:")
    expect(lines[hot_at + 1].split()[:2] == ["#1", "36"],
           f"merged hot stack: {lines[hot_at + 1]!r}")
    expect(lines[hot_at + 2].split()[0] == "rg_leaf", out)


def case_threads(spulse, spool):
    out = run(spulse, "report", "--threads", "--top", "2", spool)
    expect("pid 4242 tid 4242: 35 samples" in out, out)
    expect("pid 4242 tid 4243: 10 samples" in out, out)
    expect("top self: rg_middle 10" in out, out)
    out = run(spulse, "report", "--pid", "7", spool)
    expect("samples: 0" in out, f"--pid filter: {out}")


def case_folded(spulse, spool):
    out = run(spulse, "report", "--folded", spool)
    got = dict(l.rsplit(" ", 1) for l in out.splitlines())
    want = {"rg_root;rg_middle;rg_leaf": "30", "rg_root;rg_middle": "10",
            "<stack truncated>;rg_middle;rg_leaf": "5"}
    expect(got == want, f"folded: {got}")


def case_tree(spulse, spool):
    out = run(spulse, "report", "--tree", spool).splitlines()
    rows = [(l[:18].split(), l[18:]) for l in out[1:]]
    flat = [(int(c[0]), name.strip().split()[0], len(name) - len(name.lstrip()))
            for c, name in rows]
    expect(flat[0][:2] == (40, "rg_root"), f"tree root: {out}")
    expect(flat[1][:2] == (40, "rg_middle") and flat[1][2] > flat[0][2],
           f"tree child: {out}")
    expect(flat[2][:2] == (30, "rg_leaf"), f"tree leaf: {out}")
    expect(any(f[:2] == (5, "<stack") for f in flat), f"marker: {out}")


def case_usage(spulse, spool):
    run(spulse, "report", rc=2)
    run(spulse, "report", "--top", "0", spool, rc=2)
    run(spulse, "report", "--folded", "--tree", spool, rc=2)
    run(spulse, "report", spool + ".missing", rc=1)
    out = run(spulse, "report", "--help")
    expect("--folded" in out, out)


def run_case(case, args, tmp):
    spulse, report_gen = args
    spool = tmp + "/report.spool"
    subprocess.run([report_gen, spool], check=True)
    case(spulse, spool)


if __name__ == "__main__":
    sys.exit(clitest.main(cases(globals()), ["SPULSE", "REPORT_GEN"],
                          "spulse-report-", run_case))
