#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs the examples on real processes and checks what they print and write.

Usage: test_examples.py BUILD_DIR CASE. Exit 0 pass, 1 fail, 77 skip. A
case skips only when the example reports that perf_event_open was refused
(or, for record_firefox, that this build cannot write Firefox profiles).
"""
import gzip
import json
import os
import re
import signal
import subprocess
import sys
import tempfile

BUSY_LOOP = "while :; do :; done"
COUNT_LOOP = "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done"
# A frame line whose name is a real symbol, not an address-only fallback
# ("<0x...>", "dash+0x1234", "[kernel]+0x...").
SYMBOL_LINE = re.compile(r"^\s+[A-Za-z_][A-Za-z0-9_.@]*(\s|$)", re.M)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(argv, timeout=60):
    print("$ " + " ".join(argv))
    p = subprocess.run(argv, capture_output=True, text=True,
                       errors="replace", timeout=timeout)
    print(p.stdout, end="")
    print(p.stderr, end="", file=sys.stderr)
    if "perf_event_open refused" in p.stderr:
        print("skip: perf_event_open refused on this machine")
        sys.exit(77)
    return p


def expect_exit(p, code):
    if p.returncode != code:
        fail("exit status %d, expected %d" % (p.returncode, code))


def case_usage(bindir, tmp):
    for name in ("read_spool", "record_command", "minimal_profiler",
                 "record_firefox"):
        p = run([os.path.join(bindir, name)])
        expect_exit(p, 2)
        if "usage:" not in p.stderr:
            fail(name + ": no usage line on stderr")
    expect_exit(run([os.path.join(bindir, "minimal_profiler"), "0"]), 2)


def case_read_spool_corrupt(bindir, tmp):
    path = os.path.join(tmp, "bad.spool")
    with open(path, "wb") as f:
        f.write(b"SPULSE2\0\0\0")  # legacy magic (spec V8)
    p = run([os.path.join(bindir, "read_spool"), path])
    expect_exit(p, 1)
    if "corrupt" not in p.stderr:
        fail("no 'corrupt' in the error message")
    expect_exit(run([os.path.join(bindir, "read_spool"),
                     os.path.join(tmp, "missing.spool")]), 1)


def case_tutorial(bindir, tmp):
    spool = os.path.join(tmp, "tutorial.spool")
    p = run([os.path.join(bindir, "record_command"), spool,
             "/bin/sh", "-c", COUNT_LOOP])
    expect_exit(p, 0)
    m = re.search(r"recorded (\d+) samples", p.stdout)
    if not m or int(m.group(1)) == 0:
        fail("record_command recorded no samples")
    if "command exited with status 0" not in p.stdout:
        fail("record_command did not report the command's status")
    p = run([os.path.join(bindir, "read_spool"), spool, "3"])
    expect_exit(p, 0)
    m = re.match(r"(\d+) samples, (\d+) distinct stacks", p.stdout)
    if not m or int(m.group(1)) == 0:
        fail("read_spool found no samples")
    if len(re.findall(r"^  #\d+  \d+ samples", p.stdout, re.M)) == 0:
        fail("read_spool printed no stack")
    if not SYMBOL_LINE.search(p.stdout):
        fail("read_spool printed no symbol name")


def case_minimal_profiler(bindir, tmp):
    target = subprocess.Popen(["/bin/sh", "-c", BUSY_LOOP])
    try:
        p = run([os.path.join(bindir, "minimal_profiler"),
                 str(target.pid), "1", "3"])
    finally:
        target.send_signal(signal.SIGKILL)
        target.wait()
    expect_exit(p, 0)
    m = re.match(r"(\d+) samples, (\d+) distinct stacks", p.stdout)
    if not m or int(m.group(1)) == 0:
        fail("no samples")
    if len(re.findall(r"^\s*\d+\.\d%  \d+ samples$", p.stdout, re.M)) == 0:
        fail("no stack printed")
    if not SYMBOL_LINE.search(p.stdout):
        fail("no symbol name printed")


def case_record_firefox(bindir, tmp):
    out = os.path.join(tmp, "profile.json.gz")
    p = run([os.path.join(bindir, "record_firefox"), out,
             "/bin/sh", "-c", COUNT_LOOP])
    if "cannot write Firefox profiles yet" in p.stderr:
        print("skip: sp_export(SP_EXPORT_FIREFOX) returned -EOPNOTSUPP")
        sys.exit(77)
    expect_exit(p, 0)
    if not os.path.isfile(out + ".spool"):
        fail("the spool was not kept")
    with gzip.open(out, "rt", encoding="utf-8") as f:
        profile = json.load(f)
    if not isinstance(profile, dict):
        fail("the profile is not a JSON object")
    for key in ("meta", "threads"):
        if key not in profile:
            fail("the profile has no '%s'" % key)
    if not profile["threads"]:
        fail("the profile has no thread")


def main():
    bindir, case = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="sp-examples-") as tmp:
        globals()["case_" + case](bindir, tmp)
    print("ok")


if __name__ == "__main__":
    main()
