#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Fails when a public header is missing from tests/headers/meson.build.

Usage: check_list.py INCLUDE_DIR HEADER...  (HEADER relative to INCLUDE_DIR)

meson cannot glob, so the header list is written out by hand; this test
keeps it complete: every include/stackpulse.h and include/stackpulse/*.h
must be listed, and every listed header must exist.
"""
import os
import sys


def main(argv):
    inc, listed = argv[0], set(argv[1:])
    present = {"stackpulse.h"} if os.path.exists(
        os.path.join(inc, "stackpulse.h")) else set()
    sub = os.path.join(inc, "stackpulse")
    present |= {"stackpulse/" + f for f in os.listdir(sub) if f.endswith(".h")}
    ok = True
    for h in sorted(present - listed):
        print(f"{h}: not in public_headers of tests/headers/meson.build")
        ok = False
    for h in sorted(listed - present):
        print(f"{h}: listed in tests/headers/meson.build but missing")
        ok = False
    print(f"{len(present)} public headers, {len(listed)} listed")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
