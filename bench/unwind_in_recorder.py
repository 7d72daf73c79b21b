#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Unwinder cost per frame inside `spulse record`, from a profile of it.

bench_unwind times the unwinder on a corpus; this measures it where it
runs: `perf record` (cpu-clock) samples `spulse record -F HZ` while it
records a workload, and the profile samples that land in the unwinder's
functions, times the profiling period, divided by the frames the spool
holds, give its CPU time per frame. One JSON line per workload.

usage: unwind_in_recorder.py BUILD_DIR [--seconds S] [--hz HZ]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

UNWINDER = ("sp_unwinder_unwind", "region_enter", "cursor_flush",
            "sp__arch_step", "sp__cfi_table_search", "sp__cfi_expr_eval",
            "resolve")
PROFILE_HZ = 20000


def spool_frames(spulse, spool):
    """Samples and frames (stack depth summed over samples) of a spool."""
    out = subprocess.run([spulse, "dump", "--json", spool], check=True,
                         capture_output=True, text=True).stdout
    depth, samples, frames = {}, 0, 0
    for line in out.splitlines():
        rec = json.loads(line)
        if rec["type"] == "stack":
            depth[rec["id"]] = rec["depth"]
        elif rec["type"] == "sample":
            samples += 1
            frames += depth.get(rec.get("stack"), 0)
    return samples, frames


def unwinder_samples(data):
    """Profile samples of the spulse process in the unwinder's functions."""
    out = subprocess.run(["perf", "report", "-i", data, "--comm", "spulse",
                          "--no-children", "--stdio", "--sort", "sym",
                          "-F", "sample,sym"], check=True,
                         capture_output=True, text=True).stdout
    n = 0
    for line in out.splitlines():
        f = line.split()
        if len(f) >= 3 and f[0].isdigit() and \
                any(k in " ".join(f[2:]) for k in UNWINDER):
            n += int(f[0])
    return n


def measure(build, workload, seconds, hz, tmp):
    spulse = os.path.join(build, "tools/spulse/spulse")
    spool, data = os.path.join(tmp, "w.spool"), os.path.join(tmp, "p.data")
    subprocess.run(["perf", "record", "-q", "-e", "cpu-clock", "-F",
                    str(PROFILE_HZ), "-o", data, "--", spulse, "record",
                    "-F", str(hz), "-o", spool, "--duration", str(seconds),
                    "--", os.path.join(build, "tests/workloads", workload)],
                   check=True, capture_output=True)
    samples, frames = spool_frames(spulse, spool)
    hits = unwinder_samples(data)
    return {"bench": "unwind_in_recorder", "workload": workload, "hz": hz,
            "samples": samples, "frames": frames,
            "frames_per_sample": round(frames / max(samples, 1), 1),
            "profile_samples_in_unwinder": hits,
            "ns_per_frame": round(hits * 1e9 / PROFILE_HZ / max(frames, 1),
                                  1),
            "target_ns_per_frame": 30}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--seconds", type=int, default=4)
    ap.add_argument("--hz", type=int, default=20000)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for w in ("wl_recursion", "wl_ladder"):
            print(json.dumps(measure(a.build, w, a.seconds, a.hz, tmp)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
