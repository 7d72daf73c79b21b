#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""wrap.py OUT PROGRAM WRAPPER...: writes OUT, an executable sh script that
runs PROGRAM under WRAPPER (a cross build's exe_wrapper, e.g. qemu-user)
with its arguments, for the test scripts that exec a program by path."""
import os
import shlex
import sys

out, program, wrapper = sys.argv[1], sys.argv[2], sys.argv[3:]
with open(out, "w", encoding="utf-8") as f:
    f.write("#!/bin/sh\nexec %s %s \"$@\"\n"
            % (" ".join(shlex.quote(w) for w in wrapper),
               shlex.quote(program)))
os.chmod(out, 0o755)
