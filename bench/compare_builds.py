#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_record's recorder instructions per sample of several builds, alternating.

    bench/compare_builds.py NAME=BUILD_DIR NAME=BUILD_DIR... [--rounds 3]

Each BUILD_DIR is a configured and built tree (bench/bench_record and
its wl_ladder); the first is the reference that
ratios are taken against. Every round runs each build in turn, the order
reversed every other round. One JSON object per line:

instruction counts, which load does not move: bench_record --no-perf
--rate 999 under valgrind --tool=callgrind, the whole process, at two
workload lengths: net Ir per sample = (Ir(long) - Ir(short)) /
(samples(long) - samples(short)), so start-up work (tables of wl_ladder
and libc, opening the spool) cancels out. The recorder's per-sample work
(drain, order, DWARF unwind, write) is in it; the workload runs natively
(valgrind does not follow children). bench_unwind is not run under
callgrind: valgrind delivers its capture timer's signals only at its own
scheduling points, so its 4000-sample capture takes many minutes there.

Reported, never enforced (bench/ rules): the last lines compare.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

RECORD_SECONDS = (0.5, 2.5)


def lines(out, **match):
    """The JSON lines of @out whose fields equal @match."""
    res = []
    for x in out.splitlines():
        if not x.startswith("{"):
            continue
        o = json.loads(x)
        if all(o.get(k) == v for k, v in match.items()):
            res.append(o)
    return res


def run(cmd, timeout=3600):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        sys.exit(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stderr[-2000:]}")
    return p


def collected(stderr):
    m = re.search(r"Collected : (\d+)", stderr)
    if not m:
        sys.exit(f"no callgrind total: {stderr[-2000:]}")
    return int(m.group(1))


def callgrind(build, tmp):
    out = os.path.join(tmp, "cg.out")
    ir, n = [], []
    for sec in RECORD_SECONDS:
        p = run(["valgrind", "--tool=callgrind",
                 f"--callgrind-out-file={out}",
                 f"{build}/bench/bench_record", "--no-perf", "--rate", "999",
                 "--cpu-seconds", str(sec)])
        o = lines(p.stdout, bench="record", tool="stackpulse")[0]
        ir.append(collected(p.stderr))
        n.append(o["samples"])
    os.unlink(out)
    return {"record_999hz_ir_per_sample_net":
            round((ir[1] - ir[0]) / max(1, n[1] - n[0]), 1),
            "record_samples": n[1], "record_lost": o["lost"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("builds", nargs="+", help="NAME=BUILD_DIR")
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    builds = [tuple(b.split("=", 1)) for b in a.builds]
    kinds = ["callgrind"]
    got = {k: {name: [] for name, _ in builds} for k in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            order = builds if r % 2 == 0 else builds[::-1]
            for kind in kinds:
                for name, d in order:
                    f = callgrind(d, tmp)
                    got[kind][name].append(f)
                    print(json.dumps({"bench": "compare_builds",
                                      "kind": kind, "round": r,
                                      "build": name, **f}), flush=True)
    ref = builds[0][0]
    for kind in kinds:
        for name, _ in builds:
            runs = got[kind][name]
            med, ratio = {}, {}
            for key in runs[0]:
                med[key] = round(statistics.median(x[key] for x in runs), 3)
                ratio[key] = round(statistics.median(
                    x[key] / y[key] for x, y in zip(runs, got[kind][ref])
                    if y[key]), 4)
            print(json.dumps({"bench": "compare_builds", "kind": kind,
                              "build": name, "rounds": a.rounds,
                              "median": med, f"ratio_to_{ref}": ratio}))


if __name__ == "__main__":
    main()
