#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""bench_unwind and bench_record of several builds, alternating.

    bench/compare_builds.py NAME=BUILD_DIR NAME=BUILD_DIR... [--rounds 3]
                            [--kinds native,callgrind]

Each BUILD_DIR is a configured and built tree (bench/bench_unwind,
bench/bench_record and its wl_ladder); the first is the reference that
ratios are taken against. Every round runs each build in turn, the order
reversed every other round, so drift in the machine's load falls on all
builds alike. One JSON object per line, of two kinds:

native: the benchmarks as they run, thread CPU time on this machine.
bench_unwind's ns per frame in each of its three orders (varied,
same_sample_x8, stacks_in_cache; each its own median of 7 runs), with
its speedup over libdw on the same frames in the same run (libdw is the
same in every build, so this ratio is the one a busy machine moves
least), and its libc CFI table build time (best of 5); bench_record
--no-perf --rate 999 --cpu-seconds 2: the recorder's net CPU
microseconds per sample. bench_unwind's corpus is each build's own
samples of itself, so frames per sample can differ a little between
builds; per-frame figures are what compares.

callgrind: instruction counts, which load does not move: bench_record --no-perf
--rate 999 under valgrind --tool=callgrind, the whole process, at two
workload lengths: net Ir per sample = (Ir(long) - Ir(short)) /
(samples(long) - samples(short)), so start-up work (tables of wl_ladder
and libc, opening the spool) cancels out. The recorder's per-sample work
(drain, order, DWARF unwind, write) is in it; the workload runs natively
(valgrind does not follow children). Of the longer run also: the
inclusive instructions per call of the unwinder's entry: its
own work per sample (its CFI tables are built before, when a mapping is
first seen). bench_unwind is not run under
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
# What the recorder calls to unwind a sample: sp__unwinder_unwind_jit
# since the JIT work (with the process's JIT index; sp_unwinder_unwind
# calls it too), before it sp_unwinder_unwind. One call a sample.
UNWIND_ENTRIES = ("sp_unwinder_unwind", "sp__unwinder_unwind_jit")


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


def inclusive(path, fns):
    """(calls, inclusive Ir) of the most called of the functions @fns in
    callgrind output @path (one may call the other: never summed), each
    the sums over its call sites (a "calls=" line is followed by the
    position and the inclusive cost of those calls)."""
    names, got, want, target = {}, {fn: [0, 0] for fn in fns}, None, None
    with open(path) as f:
        for line in f:
            m = re.match(r"(c?)fn=\((\d+)\)(?: (.*))?", line.rstrip("\n"))
            if m:
                # fn= and cfn= name functions from one table of ids.
                if m.group(3) is not None:
                    names[m.group(2)] = m.group(3)
                if m.group(1):
                    target = names.get(m.group(2))
            elif line.startswith("calls="):
                want = got.get(target)
                if want:
                    want[0] += int(line.split()[0][6:])
            elif want:
                want[1] += int(line.split()[-1])
                want = None
    return tuple(max(got.values(), key=lambda x: x[0]))


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
    calls, unwind_ir = inclusive(out, UNWIND_ENTRIES)
    os.unlink(out)
    return {"record_999hz_ir_per_sample_net":
            round((ir[1] - ir[0]) / max(1, n[1] - n[0]), 1),
            "unwind_ir_per_call": round(unwind_ir / max(1, calls), 1),
            "unwind_calls": calls,
            "record_samples": n[1], "record_lost": o["lost"]}


def native(build, tmp):
    p = run([f"{build}/bench/bench_unwind"])
    f = {}
    for o in lines(p.stdout, bench="unwind"):
        f["unwind_ns_per_frame_" + o["mode"]] = o["ns_per_frame"]
        f["unwind_speedup_vs_libdw_" + o["mode"]] = o["speedup"]
    for o in lines(p.stdout, bench="table", object="libc"):
        f["table_libc_build_ms"] = o["build_ms"]
    p = run([f"{build}/bench/bench_record", "--no-perf", "--rate", "999",
             "--cpu-seconds", "2"])
    o = lines(p.stdout, bench="record", tool="stackpulse")[0]
    f["record_999hz_us_per_sample_net"] = o["recorder_us_per_sample_net"]
    f["record_samples"] = o["samples"]
    return f


KINDS = {"native": native, "callgrind": callgrind}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("builds", nargs="+", help="NAME=BUILD_DIR")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--kinds", default="native,callgrind",
                    help="comma-separated: " + ",".join(KINDS))
    a = ap.parse_args()
    builds = [tuple(b.split("=", 1)) for b in a.builds]
    kinds = a.kinds.split(",")
    for kind in kinds:
        if kind not in KINDS:
            ap.error(f"unknown kind {kind!r}")
    got = {k: {name: [] for name, _ in builds} for k in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            order = builds if r % 2 == 0 else builds[::-1]
            for kind in kinds:
                for name, d in order:
                    f = KINDS[kind](d, tmp)
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
                within = [x[key] / y[key]
                          for x, y in zip(runs, got[kind][ref]) if y[key]]
                ratio[key] = (round(statistics.median(within), 4)
                              if within else None)
            print(json.dumps({"bench": "compare_builds", "kind": kind,
                              "build": name, "rounds": a.rounds,
                              "median": med, f"ratio_to_{ref}": ratio}))


if __name__ == "__main__":
    main()
