# SPDX-License-Identifier: MIT
# test_jit_python: three nested Python functions, for argv[1] s of CPU time
# (not wall time: on a loaded machine the samples would be too few).
import sys
import time


def leaf(n):
    s = 0
    for i in range(n):
        s = (s * 31 + i) % 1000003
    return s


def middle(n):
    return leaf(n) + 1


def top(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        middle(2000)


top(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
