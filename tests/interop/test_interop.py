#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Interop with the original writer: usage: test_interop.py SPULSE DATA CASE.

DATA is tests/interop/rust-0.5.1: spools written by the Rust stackpulse
0.5.1 writer and, beside each, what its reader decoded (MANIFEST.md).
CASE is a spool's name without ".spool". For an r* spool, `spulse dump
--json` must equal the original reader's JSON byte for byte. The e* spools
are where 0.5.1 is more lenient than the 0.10 rules we follow: e01-e03 must
be refused as corrupt with the reason, e04 must differ from 0.5.1's dump
only in the kernel module's pid (-1, not the stored 5). Files over about
1 MB are stored zstd-compressed and unpacked with the zstd command. Exit
status follows tests/check.h: 0 pass, 1 fail, 77 skip.
"""

import os
import shutil
import subprocess
import sys
import tempfile

# e01-e03: the reason the 0.10 rules give for refusing each spool.
REFUSED = {
    "e01_tid_above_i32": "thread id 4294967301 out of range",
    "e02_user_module_pid0": "invalid process id 0",
    "e03_thread_pid0": "invalid process id 0",
}


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def unpack(path, tmp):
    """The bytes of PATH, or of PATH.zst unpacked into TMP."""
    if os.path.exists(path):
        return path
    packed = path + ".zst"
    if not os.path.exists(packed):
        fail(f"missing reference file {path}(.zst)")
    zstd = shutil.which("zstd")
    if not zstd:
        print("SKIP: the zstd command is not installed "
              "(scripts/install-deps installs it)")
        sys.exit(77)
    out = os.path.join(tmp, os.path.basename(path))
    subprocess.run([zstd, "-dqf", packed, "-o", out], check=True)
    return out


def first_difference(got, want):
    got_lines, want_lines = got.split(b"\n"), want.split(b"\n")
    for i, (g, w) in enumerate(zip(got_lines, want_lines)):
        if g != w:
            return f"line {i + 1}:\n  got:  {g[:300]!r}\n  want: {w[:300]!r}"
    return (f"{len(got_lines)} lines against {len(want_lines)}; "
            f"{len(got)} bytes against {len(want)}")


def main():
    if len(sys.argv) != 4:
        fail("usage: test_interop.py SPULSE DATA CASE")
    spulse, data, case = sys.argv[1:]
    with tempfile.TemporaryDirectory(prefix="sp-interop-") as tmp:
        spool = unpack(os.path.join(data, "spools", case + ".spool"), tmp)
        ref = unpack(os.path.join(data, "json", case + ".spool.rust.jsonl"),
                     tmp)
        with open(ref, "rb") as f:
            want = f.read()
        run = subprocess.run([spulse, "dump", "--json", spool],
                             capture_output=True, timeout=300)
        err = run.stderr.decode(errors="replace")
        if case in REFUSED:
            if run.returncode != 1 or run.stdout:
                fail(f"{case}: exit {run.returncode}, {len(run.stdout)} "
                     f"bytes out; a 0.10 reader refuses it: {err}")
            if "corrupt spool data" not in err or REFUSED[case] not in err:
                fail(f"{case}: reason not given: {err!r}")
            print(f"PASS: {case} refused: {err.strip()}")
            return
        if run.returncode != 0:
            fail(f"{case}: exit {run.returncode}: {err}")
        if case == "e04_kernel_module_pid5":
            lines = want.split(b"\n")
            kernel = b'{"type":"module","id":0,"pid":5,'
            if not lines[1].startswith(kernel):
                fail(f"{case}: reference line 2 is not the kernel module")
            lines[1] = lines[1].replace(b'"pid":5,', b'"pid":-1,', 1)
            want = b"\n".join(lines)
        if run.stdout != want:
            fail(f"{case}: dump --json differs from the original reader's: "
                 + first_difference(run.stdout, want))
        print(f"PASS: {case}: {len(want)} bytes of JSON equal to the "
              "original reader's")


if __name__ == "__main__":
    main()
