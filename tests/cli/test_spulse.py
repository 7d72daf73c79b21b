#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tests of the spulse CLI: usage: test_spulse.py SPULSE_BINARY CASE.

The spool files are the golden vectors of spec/SPULSE3.md section 11,
written here as bytes into a fresh temporary directory. Each CASE is one
meson test; the exit status follows tests/check.h: 0 pass, 1 fail, 77 skip.
"""

import json
import os
import re
import shutil
import subprocess
import sys

from clitest import cases, expect
import clitest

H = "53 50 55 4c 53 45 33 00"  # "SPULSE3\0"

V1 = H + " 00 00"
V1B = H + " 80 80 f9 c0 c1 c4 82 03 e8 07"
V2 = (H + " 7b 0a"
      " 01 00 0e 80 20 80 40 80 02 01 08 01 00 00 06 2f 66 69 72 73 74"
      " 02 00 00 90 02"
      " 03 00 ff ff ff ff 0f 00"
      " 04 00 0e 0b"
      " 05 d0 0f 00 00")
V3 = V2 + " 02 01 01 90 60 03 01 00 01 05 a0 1f 00 01"
V4 = H + " 00 00 03 00 ff ff ff ff 0f 00"
V4B = H + " 00 00 02 01 01 80 20"
V5 = (H + " 00 00"
      " 01 00 0e 80 80 80 02 80 a0 80 02 00 00 00 00 00 00 08"
      " 2f 62 69 6e 2f 61 70 70"
      " 01 01 01 80 80 80 88 f8 ff ff ff ff 01 80 80 84 88 f8 ff ff ff ff 01"
      " 00 00 00 00 00 01 08 5b 6b 65 72 6e 65 6c 5d"
      " 06 f4 03 0e 01"
      " 02 00 05 00"
      " 03 00 ff ff ff ff 0f 00"
      " 02 01 01 a3 82 80 02"
      " 03 01 00 01"
      " 02 02 03 90 80 80 88 f8 ff ff ff ff 01"
      " 03 02 01 02"
      " 04 00 0e 07"
      " 05 d0 0f 00 02"
      " 08 00"
      " 07 0e"
      " 02 03 01 a3 82 80 02"
      " 03 03 ff ff ff ff 0f 03"
      " 04 01 0e 08"
      " 05 c7 01 01 03")
V6_PREFIX = (H + " 7b 0a 02 00 01 80 20 03 00 ff ff ff ff 0f 00 04 00 0e 0b"
             " 05 d0 0f 00 00")
V6 = V6_PREFIX + " 02 80 80 80 80 80 80 80 80 80 02 0f 01 05 d0 0f 00 01"
V6_ORIGINAL = V6_PREFIX + " 02 01 01 80 40 03 01 ff ff ff ff 0f 01 05 d0 0f 00 01"
V8 = "53 50 55 4c 53 45 32 00 00 00"

# A module path with a quote, a backslash, control bytes, DEL and UTF-8.
WEIRD_PATH = b'/t"q\\b\x01\n\x1f\x7f\xc3\xa9'
WEIRD_FILE_NAME = 'we"ird\\na\x01me.spool'


def unhex(text):
    return bytes.fromhex(text.replace(" ", "").replace("\n", ""))


def varint(value):
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def weird_spool():
    """V2 with the module path replaced by WEIRD_PATH."""
    module = unhex("01 00 0e 80 20 80 40 80 02 01 08 01 00 00")
    rest = unhex("02 00 00 90 02 03 00 ff ff ff ff 0f 00 04 00 0e 0b 05 d0 0f 00 00")
    return (unhex(H + " 7b 0a") + module + varint(len(WEIRD_PATH)) +
            WEIRD_PATH + rest)


def big_spool(samples):
    """V2 followed by many samples of the same stack (delta +1 ns)."""
    return unhex(V2) + unhex("05 02 00 00") * samples


class Env:
    def __init__(self, spulse, tmp):
        self.spulse = spulse
        self.tmp = tmp

    def write(self, name, data):
        path = os.path.join(self.tmp, name)
        with open(path, "wb") as f:
            f.write(unhex(data) if isinstance(data, str) else data)
        return path

    def run(self, *args):
        proc = subprocess.run([self.spulse, *args], capture_output=True)
        return (proc.returncode, proc.stdout.decode("utf-8", "replace"),
                proc.stderr.decode("utf-8", "replace"))

    def run_ok(self, *args):
        rc, out, err = self.run(*args)
        expect(rc == 0, f"spulse {' '.join(args)}: exit {rc}, stderr: {err}")
        return out, err

    def check_json(self, path, want_rc=0):
        rc, out, err = self.run("check", "--json", path)
        expect(rc == want_rc,
               f"check {path}: exit {rc} != {want_rc}; stderr: {err}")
        lines = out.splitlines()
        expect(len(lines) == 1, f"check --json printed {len(lines)} lines: {out!r}")
        return json.loads(lines[0]), err


COUNT_KEYS = ("samples", "modules", "frames", "stacks", "threads",
              "python_records")


def expect_counts(obj, want, label):
    got = {k: obj.get(k) for k in want}
    expect(got == want, f"{label}: counts {got} != {want}")
    for k in COUNT_KEYS:
        expect(isinstance(obj.get(k), int) and not isinstance(obj.get(k), bool),
               f"{label}: key {k} missing or not a number: {obj}")
    expect(isinstance(obj.get("truncated"), bool),
           f"{label}: truncated is not a JSON boolean: {obj}")


def counts(samples, modules, frames, stacks, threads, python_records,
           truncated=False):
    return dict(samples=samples, modules=modules, frames=frames,
                stacks=stacks, threads=threads,
                python_records=python_records, truncated=truncated)


def case_usage(env):
    v2 = env.write("v2.spool", V2)
    usage_errors = [
        (), ("frobnicate",), ("check",), ("check", "--bogus", v2),
        ("check", v2, v2), ("dump",), ("dump", "--limit"),
        ("dump", "--limit", "abc", v2), ("dump", "--limit=-1", v2),
        ("dump", "--samples-only", "--no-samples", v2), ("help", "nope"),
        ("dump", "-x", v2),
    ]
    for args in usage_errors:
        rc, out, err = env.run(*args)
        expect(rc == 2, f"spulse {args}: exit {rc}, want 2 (usage)")
        expect(out == "", f"spulse {args}: usage error wrote to stdout: {out!r}")
        expect(err.strip() != "", f"spulse {args}: no message on stderr")
    for args in (("--help",), ("-h",), ("help",), ("help", "check"),
                 ("help", "dump"), ("check", "--help"), ("dump", "--help")):
        out, err = env.run_ok(*args)
        expect("usage: spulse" in out, f"spulse {args}: no usage on stdout")
        expect(err == "", f"spulse {args}: stderr not empty: {err!r}")
    # The top-level help names every command, and each has its own help.
    out, _ = env.run_ok("--help")
    for cmd in ("check", "dump", "export", "record", "report", "top",
                "help"):
        expect(re.search(rf"^  {cmd} ", out, re.M),
               f"spulse --help does not name {cmd}: {out!r}")
        if cmd != "help":
            env.run_ok("help", cmd)
    out, _ = env.run_ok("--version")
    expect(out.startswith("spulse ") and out.strip().split()[-1][0].isdigit(),
           f"--version printed {out!r}")
    # Options may follow FILE, and "--" ends the options.
    env.run_ok("check", v2, "--json")
    env.run_ok("check", "--", v2)


def case_numeric(env):
    """Every numeric option: range, finiteness, exit 2 naming the range.

    Issue 20 item 8: `record --duration inf` or `1e19` overflowed the
    seconds-to-nanoseconds conversion and `-s 65529` failed with exit 1.
    A value the parser accepts would start a recording (or a report), so
    each of these must be refused before anything runs.
    """
    v2 = env.write("v2.spool", V2)
    out = os.path.join(env.tmp, "never.spool")
    rec = ("record", "-o", out)
    int32 = "2147483647"
    table = [
        (rec + ("-s", "65529", "--", "true"), "1..65528"),
        (rec + ("-s", "0", "--", "true"), "1..65528"),
        (rec + ("-s", "-8", "--", "true"), "1..65528"),
        (rec + ("-s", "99999999999999999999", "--", "true"), "1..65528"),
        (rec + ("-F", "0", "--", "true"), "or max"),
        (rec + ("-F", "4294967295", "--", "true"), "or max"),
        (rec + ("-F", "-1", "--", "true"), "or max"),
        (rec + ("--threads", "65", "--", "true"), "0..64 or auto"),
        (rec + ("--threads", "-1", "--", "true"), "0..64 or auto"),
        (rec + ("-p", "0"), "1.." + int32),
        (rec + ("-p", "2147483648"), "1.." + int32),
        (rec + ("-p", "1,-2"), "1.." + int32),
        (("report", "--top", "0", v2), "1.." + int32),
        (("report", "--top", "4294967297", v2), "1.." + int32),
        (("report", "--pid", "-1", v2), "0.." + int32),
        (("top", "--top", " 5", "--once", v2), "1.." + int32),
        (("top", "--iterations", "0", v2), "1.." + int32),
        (("top", "--pid", "+3", "--once", v2), "0.." + int32),
        (("export", "-f", "folded", "--pid", "0", v2), "1.." + int32),
        (("dump", "--limit", "-1", v2), "0..18446744073709551615"),
        (("dump", "--limit=18446744073709551616", v2),
         "0..18446744073709551615"),
    ]
    for secs in ("inf", "-inf", "nan", "1e19", "1e308", "-1", "0", "1e-30",
                 "0x", ""):
        table.append((rec + ("--duration", secs, "--", "true"),
                      "0.001..31536000 seconds"))
        table.append((("top", "--interval", secs, "--once", v2),
                      "0.001..86400 seconds"))
    for args, allowed in table:
        rc, _, err = env.run(*args)
        expect(rc == 2, f"spulse {args}: exit {rc} != 2; stderr: {err}")
        expect("(allowed: " in err and allowed + ")" in err,
               f"spulse {args}: the range is not named: {err!r}")
        expect("runtime error" not in err, f"spulse {args}: UB: {err!r}")
    # Above the kernel's maximum: named with the sysctl and -F max.
    rc, _, err = env.run(*rec, "-F", "99999999", "--", "true")
    expect(rc == 2 and "kernel.perf_event_max_sample_rate" in err and
           "-F max" in err, f"-F 99999999: exit {rc}; {err!r}")
    expect(not os.path.exists(out), "a refused record created its output")
    # The ends of each range are accepted.
    env.run_ok("dump", "--limit", "18446744073709551615", v2)
    env.run_ok("report", "--top", int32, "--pid", int32, v2)
    env.run_ok("top", "--once", "--interval", "86400", "--top", int32, v2)


def case_check_valid(env):
    table = [
        ("v1", V1, counts(0, 0, 0, 0, 0, 0)),
        ("v1b", V1B, counts(0, 0, 0, 0, 0, 0)),
        ("v2", V2, counts(1, 1, 1, 1, 1, 0)),
        ("v3", V3, counts(2, 1, 2, 2, 1, 0)),
        ("v5", V5, counts(2, 2, 4, 4, 2, 1)),
    ]
    for name, data, want in table:
        obj, err = env.check_json(env.write(name + ".spool", data))
        expect_counts(obj, want, name)
        expect(obj.get("valid") is True, f"{name}: valid is not true: {obj}")
        expect(obj.get("compressed") is False, f"{name}: compressed: {obj}")
        expect(obj.get("bytes") == len(unhex(data)), f"{name}: bytes: {obj}")
        expect(err == "", f"{name}: unexpected stderr {err!r}")
    obj, _ = env.check_json(env.write("v1b.spool", V1B))
    expect(obj.get("start_timestamp_us") == 1700000000000000 and
           obj.get("sample_interval_us") == 1000, f"v1b header: {obj}")
    obj, _ = env.check_json(env.write("v2.spool", V2))
    expect(obj.get("start_timestamp_us") == 123 and
           obj.get("sample_interval_us") == 10, f"v2 header: {obj}")


def case_check_truncated(env):
    cut = unhex(V3)[:66]
    obj, err = env.check_json(env.write("v3cut.spool", cut))
    expect_counts(obj, counts(1, 1, 2, 2, 1, 0, truncated=True), "v3-66")
    expect("warning" in err, f"v3-66: no warning on stderr: {err!r}")
    obj, err = env.check_json(env.write("v7-05.spool", V6_ORIGINAL + " 05"))
    expect_counts(obj, counts(2, 0, 2, 2, 1, 0, truncated=True), "v7-05")
    expect("warning" in err, f"v7-05: no warning on stderr: {err!r}")
    obj, err = env.check_json(env.write("v6orig.spool", V6_ORIGINAL))
    expect_counts(obj, counts(2, 0, 2, 2, 1, 0), "v6-original")
    out, err = env.run_ok("check", env.write("v3cut.spool", cut))
    expect("truncated: yes" in out.splitlines(), f"text check: {out!r}")


def case_check_corrupt(env):
    table = [("v4", V4), ("v4b", V4B), ("v6", V6),
             ("v7ff", V6_ORIGINAL + " ff"), ("v8", V8),
             ("short", H[:11]), ("empty", b"")]
    for name, data in table:
        path = env.write(name + ".spool", data)
        obj, err = env.check_json(path, want_rc=1)
        expect(obj.get("valid") is False and isinstance(obj.get("error"), str),
               f"{name}: failure object {obj}")
        expect(err.startswith("spulse: " + path + ": "),
               f"{name}: stderr {err!r}")
        rc, out, err2 = env.run("check", path)
        expect(rc == 1 and out == "", f"{name}: text mode exit {rc} out {out!r}")
        expect(err2 == err, f"{name}: stderr differs between text and JSON")
    # SPULSE3 §4: the stray ff is a complete, unknown tag at offset 50.
    path = env.write("v7ff.spool", V6_ORIGINAL + " ff")
    obj, err = env.check_json(path, want_rc=1)
    expect(obj.get("code") == -4000, f"v7ff: code {obj}")
    expect(f"{path}: corrupt spool data at offset 50: " in err,
           f"v7ff: stderr {err!r}")
    expect(obj.get("offset") == 50, f"v7ff: offset {obj}")
    expect("255" in (obj.get("message") or ""), f"v7ff: message {obj}")
    obj, err = env.check_json(env.write("v6.spool", V6), want_rc=1)
    expect(obj.get("offset") in (32, 33), f"v6: offset {obj}")
    # A file that cannot be opened is a data error (1), not usage (2).
    missing = os.path.join(env.tmp, "no-such.spool")
    obj, err = env.check_json(missing, want_rc=1)
    expect(obj.get("valid") is False, f"missing file: {obj}")
    expect("No such file" in err, f"missing file: stderr {err!r}")
    rc, _, _ = env.run("dump", missing)
    expect(rc == 1, f"dump of a missing file: exit {rc}")
    rc, out, err = env.run("dump", env.write("v6.spool", V6))
    expect(rc == 1 and "corrupt spool data" in err, f"dump v6: {rc} {err!r}")


def case_check_text(env):
    out, _ = env.run_ok("check", env.write("v5.spool", V5))
    lines = out.splitlines()
    for want in ("status: valid", "samples: 2", "modules: 2", "frames: 4",
                 "stacks: 4", "threads: 2", "python_records: 1",
                 "truncated: no", "bytes: 156"):
        expect(want in lines, f"check text output lacks {want!r}: {out!r}")


V5_DUMP_LINES = [
    'module id=0 pid=7 start=0x400000 end=0x401000 file_offset=0x0 inode=0'
    ' dev_major=0 dev_minor=0 generation=0 kernel=no deactivated_at=3'
    ' path="/bin/app"',
    'module id=1 pid=-1 start=0xffffffff81000000 end=0xffffffff81010000'
    ' file_offset=0x0 inode=0 dev_major=0 dev_minor=0 generation=0'
    ' kernel=yes deactivated_at=none path="[kernel]"',
    'python index=0 timestamp_ns=500 pid=7 is_python_runtime=yes',
    'frame id=0 mode=truncated module=none rel_ip=0x0 abs_ip=0x0',
    'frame id=1 mode=user module=none rel_ip=0x400123 abs_ip=0x400123',
    'frame id=2 mode=kernel module=none rel_ip=0xffffffff81000010'
    ' abs_ip=0xffffffff81000010',
    'stack id=0 parent=none frame=0 depth=1',
    'stack id=2 parent=1 frame=2 depth=3',
    'thread id=1 pid=7 tid=8',
    'sample index=0 timestamp_ns=1000 timestamp_us=none pid=7 tid=7'
    ' thread=0 stack=2 depth=3',
    '  at depth=0 frame=2 mode=kernel abs_ip=0xffffffff81000010 module=1'
    ' rel_ip=0x10 path="[kernel]"',
    '  at depth=1 frame=1 mode=user abs_ip=0x400123 module=0 rel_ip=0x123'
    ' path="/bin/app"',
    '  at depth=2 frame=0 mode=truncated abs_ip=0x0 module=none rel_ip=none',
    'sample index=1 timestamp_ns=900 timestamp_us=none pid=7 tid=8'
    ' thread=1 stack=3 depth=1',
    '  at depth=0 frame=3 mode=user abs_ip=0x400123 module=none rel_ip=none',
]


def case_dump_v5(env):
    path = env.write("v5.spool", V5)
    out, err = env.run_ok("dump", path)
    lines = out.splitlines()
    for want in V5_DUMP_LINES:
        expect(want in lines, f"dump V5 lacks line {want!r}:\n{out}")
    expect(lines[0].startswith("header ") and "samples=2" in lines[0],
           f"dump V5 first line: {lines[0]!r}")
    expect(sum(1 for l in lines if l.startswith("sample ")) == 2,
           "dump V5: sample count")
    kinds = [l.split()[0] for l in lines if not l.startswith(" ")]
    expect(kinds == sorted(kinds, key=["header", "module", "frame", "stack",
                                       "thread", "python", "sample"].index),
           f"dump V5: record groups out of order: {kinds}")
    out, _ = env.run_ok("dump", "--limit", "1", path)
    expect(sum(1 for l in out.splitlines() if l.startswith("sample ")) == 1,
           "--limit 1")
    out, _ = env.run_ok("dump", "--limit=0", path)
    expect("sample " not in out and "module id=1" in out, "--limit=0")
    out, _ = env.run_ok("dump", "--samples-only", path)
    expect(out.splitlines()[0].startswith("sample index=0"),
           f"--samples-only: {out!r}")
    expect(all(l.startswith(("sample ", "  at ")) for l in out.splitlines()),
           f"--samples-only printed other records: {out!r}")
    out, _ = env.run_ok("dump", "--no-samples", path)
    expect("sample " not in out and "  at " not in out and
           "thread id=0 pid=7 tid=7" in out, f"--no-samples: {out!r}")


def case_dump_v2(env):
    out, _ = env.run_ok("dump", env.write("v2.spool", V2))
    lines = out.splitlines()
    for want in (
            'header start_timestamp_us=123 sample_interval_us=10 samples=1'
            ' modules=1 frames=1 stacks=1 threads=1 python_records=0'
            ' truncated=no',
            'module id=0 pid=7 start=0x1000 end=0x2000 file_offset=0x100'
            ' inode=1 dev_major=8 dev_minor=1 generation=0 kernel=no'
            ' deactivated_at=none path="/first"',
            'frame id=0 mode=user module=0 rel_ip=0x110 abs_ip=0x1010',
            'sample index=0 timestamp_ns=1000 timestamp_us=123 pid=7 tid=11'
            ' thread=0 stack=0 depth=1',
            '  at depth=0 frame=0 mode=user abs_ip=0x1010 module=0'
            ' rel_ip=0x110 path="/first"'):
        expect(want in lines, f"dump V2 lacks {want!r}:\n{out}")
    out, err = env.run_ok("dump", env.write("v3.spool", V3))
    expect("sample index=1 timestamp_ns=3000 timestamp_us=125 pid=7 tid=11"
           " thread=0 stack=1 depth=2" in out.splitlines(), f"dump V3: {out}")
    out, err = env.run_ok("dump", env.write("v3cut.spool", unhex(V3)[:66]))
    expect("warning" in err and "sample index=1" not in out
           and "truncated=yes" in out, f"dump V3-66: {out} {err}")


def case_dump_json(env):
    out, _ = env.run_ok("dump", "--json", env.write("v5.spool", V5))
    records = [json.loads(line) for line in out.splitlines()]
    types = [r["type"] for r in records]
    expect(types == ["header"] + ["module"] * 2 + ["frame"] * 4 +
           ["stack"] * 4 + ["thread"] * 2 + ["python"] + ["sample"] * 2,
           f"dump --json record types: {types}")
    header = records[0]
    expect_counts(header, counts(2, 2, 4, 4, 2, 1), "dump --json header")
    kernel = records[2]
    expect(kernel["path"] == "[kernel]" and kernel["kernel"] is True and
           kernel["pid"] == -1 and kernel["deactivated_at"] is None,
           f"kernel module: {kernel}")
    expect(records[1]["deactivated_at"] == 3, f"module 0: {records[1]}")
    sample = records[-2]
    expect(sample["timestamp_ns"] == 1000 and sample["timestamp_us"] is None
           and sample["depth"] == 3, f"sample 0: {sample}")
    frames = [(f["frame"], f["module"], f["rel_ip"], f.get("path"))
              for f in sample["frames"]]
    expect(frames == [(2, 1, "0x10", "[kernel]"), (1, 0, "0x123", "/bin/app"),
                      (0, None, None, None)], f"sample 0 frames: {frames}")
    last = records[-1]
    expect(last["timestamp_ns"] == 900 and last["frames"][0]["module"] is None,
           f"sample 1: {last}")


def case_zstd(env):
    zstd = shutil.which("zstd")
    if not zstd:
        print("SKIP: the zstd command is not installed")
        return 77
    plain = env.write("v5.spool", V5)
    packed = plain + ".zst"
    subprocess.run([zstd, "-q", "-f", plain, "-o", packed], check=True)
    with open(packed, "rb") as f:
        expect(f.read(4) == unhex("28 b5 2f fd"), "zstd output magic")
    obj, err = env.check_json(packed)
    expect_counts(obj, counts(2, 2, 4, 4, 2, 1), "v5.zst")
    expect(obj.get("compressed") is True, f"v5.zst not compressed: {obj}")
    expect(obj.get("decoded_bytes") == 156 and
           obj.get("bytes") == os.path.getsize(packed), f"v5.zst sizes: {obj}")
    dump_plain, _ = env.run_ok("dump", plain)
    dump_packed, _ = env.run_ok("dump", packed)
    expect(dump_plain == dump_packed, "dump differs for the zstd copy")
    cut = env.write("v3cut.spool", unhex(V3)[:66])
    subprocess.run([zstd, "-q", "-f", cut, "-o", cut + ".zst"], check=True)
    obj, _ = env.check_json(cut + ".zst")
    expect_counts(obj, counts(1, 1, 2, 2, 1, 0, truncated=True), "v3-66.zst")
    return 0


def case_escape(env):
    path = env.write("weird.spool", weird_spool())
    obj, _ = env.check_json(path)
    expect_counts(obj, counts(1, 1, 1, 1, 1, 0), "weird path spool")
    out, _ = env.run_ok("dump", "--json", "--no-samples", path)
    module = [json.loads(l) for l in out.splitlines()][1]
    expect(module["type"] == "module" and
           module["path"] == WEIRD_PATH.decode("utf-8"),
           f"JSON path {module.get('path')!r} != {WEIRD_PATH!r}")
    expect("\\u0001" in out and '\\"' in out and "\\\\" in out and
           "\\n" in out and "\x01" not in out and "\x7f" not in out,
           f"JSON escapes: {out!r}")
    out, _ = env.run_ok("dump", "--samples-only", path)
    want = 'path="/t\\"q\\\\b\\x01\\x0a\\x1f\\x7f\\xc3\\xa9"'
    expect(out.splitlines()[1].endswith(want), f"text escape: {out!r}")
    # The file name itself is escaped as well.
    odd = env.write(WEIRD_FILE_NAME, V2)
    obj, _ = env.check_json(odd)
    expect(obj.get("file") == odd, f"file name in JSON: {obj.get('file')!r}")
    os.unlink(odd)
    obj, err = env.check_json(odd, want_rc=1)
    expect(obj.get("file") == odd and "\x01" not in err and "\\x01" in err,
           f"missing odd file: {obj} {err!r}")


def case_sigpipe(env):
    path = env.write("big.spool", big_spool(200000))
    proc = subprocess.Popen([env.spulse, "dump", path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    head = proc.stdout.read(4096)
    proc.stdout.close()  # like `| head`: the reader goes away
    err = proc.stderr.read()
    rc = proc.wait()
    expect(head.startswith(b"header "), f"dump head: {head[:40]!r}")
    expect(rc == 0, f"dump into a closed pipe: exit {rc} (-13 = SIGPIPE)")
    expect(err == b"", f"dump into a closed pipe: stderr {err!r}")
    out, _ = env.run_ok("dump", "--samples-only", "--limit", "3", path)
    expect(len(out.splitlines()) == 6, f"--limit 3 on a big file: {out!r}")
    if os.path.exists("/dev/full"):
        with open("/dev/full", "wb") as full:
            rc = subprocess.run([env.spulse, "dump", path], stdout=full,
                                stderr=subprocess.PIPE)
        expect(rc.returncode == 1 and b"No space" in rc.stderr,
               f"dump to /dev/full: exit {rc.returncode} {rc.stderr!r}")


if __name__ == "__main__":
    sys.exit(clitest.main(cases(globals()), ["SPULSE"], "spulse-test-",
                          lambda case, args, tmp: case(Env(args[0], tmp))))
