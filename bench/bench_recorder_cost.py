#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Issue 12's bound in one run: recorder cost per sample and per frame.

    bench/bench_recorder_cost.py [--build build] [--base-lib DIR]
        [--rounds 5] [--seconds 2] [--hz 999] [--cg-seconds 6]
        [--cg-base-seconds 2]
        [--no-callgrind] [--no-perf] [--no-cpu] [--configs A,B,...]

--base-lib is the src/ directory of a build of the base commit (main):
its libstackpulse.so.0 replaces this build's for the "main" runs, through
LD_LIBRARY_PATH, which beats the bench program's RUNPATH; the bench
program itself (build/bench/bench_python) is the same one. Build it with

    git archive 8394eef | tar -x -C /tmp/base && cd /tmp/base &&
    meson setup build --buildtype=debugoptimized &&
    ninja -C build src/libstackpulse.so.0.1.0

What runs, in one invocation (one JSON object per line):

  cpu rounds  --rounds times, the configurations in a rotating order so
              that a change of the machine's load hits all of them:
                python before  py_nested.py, SP_RECORDER_NO_JIT_CODE (the
                               old stacks: the issue's "before")
                python after   the default (the whole Python chain)
                python main    the default with main's library
                native main    wl_recursion (C -O2, DWARF CFI, 40 frames
                native after   deep, no JIT code), main's library / this
                               one: the same stacks, so the bound applies
                               literally
                perf record    `perf record -F HZ --call-graph dwarf -p`
                               on the same Python workload: perf's own
                               CPU per sample in its steady state (see
                               perf_round; perf copies 8 KiB of stack per
                               sample into its file and unwinds nothing
                               until `perf report`), the outside reference
              Recorder figures are bench_python's net ones (the run of the
              same program doing no work subtracted).
  callgrind   instructions in sp_recorder_poll/finish per sample and per
              frame, net of a --cg-base-seconds run, long enough for the
              one-time work to happen in it too
              (bench_python_callgrind.py), for python before/after/main
              and native main/after: exact and
              independent of the load, unlike the CPU figures.
  fixture     not run here; the exact instruction comparison of two
              builds on one replayed capture (native stacks):
                bench_pipeline --quick --save-fixture F     (once)
                valgrind --tool=callgrind \
                    --toggle-collect=sp__pipeline_step \
                    BUILD/bench/bench_pipeline --fixture F --reps 1 \
                    --inline-only --keep-spools D
              per build; callgrind_annotate --inclusive=yes gives the
              per-call costs (sp__recorder_sample, sp__drain_ring), and
              the spools in each D must be byte-identical.
  compare     medians of the per-round ratios, and the callgrind ratios:
              python after/before per sample (the issue's literal bound)
              and per frame, python after/main, native after/main (the
              bound where the stacks are the same), and ours against
              perf's. Reported against the goal 1.10, never enforced.
"""
import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_python_callgrind as cg  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PY_NESTED = os.path.join(HERE, "..", "tests", "runtimes", "py_nested.py")
GOAL = 1.10

# name: (workload, mode, use the base library)
CONFIGS = {
    "python_before": ("python", "before", False),
    "python_after": ("python", "after", False),
    "python_main": ("python", "after", True),
    "native_main": ("native", "after", True),
    "native_after": ("native", "after", False),
}


def emit(obj):
    print(json.dumps(obj), flush=True)


def find_python():
    found = sorted(glob.glob("/root/.pyenv/versions/3.1[2-9]*/bin/python3.1[2-9]"))
    return found[0] if found else None


def recorder_round(bench, name, a):
    workload, mode, base = CONFIGS[name]
    env = dict(os.environ)
    if base:
        env["LD_LIBRARY_PATH"] = a.base_lib
    cmd = [bench, "--workload", workload, "--only", mode, "--rounds", "1",
           "--seconds", str(a.seconds), "--hz", str(a.hz)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env,
                       timeout=600)
    for line in p.stdout.splitlines():
        obj = json.loads(line)
        if obj.get("mode") == mode:
            return {"us_per_sample": obj["recorder_us_per_sample_net"],
                    "us_per_frame": obj["recorder_us_per_frame_net"],
                    "samples": obj["samples"],
                    "frames_per_sample": obj["frames_per_sample"]}
    sys.exit(f"bench_python {name}: {p.stdout} {p.stderr}")


def spawn(argv, env=None):
    return os.posix_spawnp(argv[0], argv, env or os.environ)


def task_ns(pid):
    """CPU time of every thread of @pid so far (schedstat: ns, exact)."""
    total = 0
    for t in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(t) as f:
                total += int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            pass
    return total


def perf_round(python, a, tmp):
    """perf record's own CPU per sample in its steady state.

    perf record's start and exit (reading /proc, the build ids of every
    DSO) cost 0.5 s and more and vary by as much from run to run, far
    more than its work per sample, so no subtraction of a shorter run
    isolates the latter. Instead both processes' CPU time is read (every
    thread's schedstat, in ns) 0.5 s after the start and again just
    before the workload ends, every 50 ms: perf's CPU between the two
    over the samples of that interval, which are the workload's CPU time
    times the rate (cpu-clock)."""
    data = os.path.join(tmp, "perf.data")
    env = dict(os.environ, HOME=tmp)  # no ~/.debug writes
    py = spawn([python, "-X", "perf", PY_NESTED, str(a.seconds), "/dev/null"])
    rec = spawn(["perf", "record", "-q", "-F", str(a.hz), "--call-graph",
                 "dwarf", "-p", str(py), "-o", data], env)
    time.sleep(0.5)
    first = (task_ns(rec), task_ns(py))
    last = first
    while os.waitpid(py, os.WNOHANG) == (0, 0):
        now = (task_ns(rec), task_ns(py))
        if now[1] >= last[1] and now[1]:
            last = now
        time.sleep(0.05)
    _, status, ru = os.wait4(rec, 0)
    if status != 0:
        sys.exit(f"perf record failed: status {status}")
    if os.path.exists(data):
        os.unlink(data)
    samples = (last[1] - first[1]) * 1e-9 * a.hz
    return {"us_per_sample": (last[0] - first[0]) * 1e-3 / samples
            if samples > 0 else 0,
            "samples_steady": round(samples),
            "record_cpu_s": ru.ru_utime + ru.ru_stime}


def have_perf():
    try:
        return subprocess.run(["perf", "--version"], capture_output=True
                              ).returncode == 0
    except OSError:
        return False


def cpu_rounds(a, bench, python, tmp):
    names = [n for n in CONFIGS
             if n in a.configs and (a.base_lib or not CONFIGS[n][2])]
    if python and a.perf:
        names.append("perf")
    if not python:
        names = [n for n in names if not n.startswith("python")]
    per = {n: [] for n in names}
    for k in range(a.rounds):
        order = names[k % len(names):] + names[:k % len(names)]
        for name in order:
            r = (perf_round(python, a, tmp) if name == "perf" else
                 recorder_round(bench, name, a))
            per[name].append(r)
            emit({"bench": "recorder_cost", "metric": "cpu", "config": name,
                  "round": k, **{x: round(v, 4) if isinstance(v, float)
                                 else v for x, v in r.items()}})
    return per


def median_ratio(per, num, den, key):
    if num not in per or den not in per:
        return None
    rs = [x[key] / y[key] for x, y in zip(per[num], per[den]) if y[key] > 0]
    return round(statistics.median(rs), 4) if rs else None


def callgrind(a, bench, python, tmp):
    out = {}
    for name, (workload, mode, base) in CONFIGS.items():
        if name not in a.configs or (base and not a.base_lib) or (
                workload == "python" and not python):
            continue
        lib = a.base_lib if base else None
        ir0, s0, _, f0 = cg.run(bench, mode, a.cg_base_seconds, a.hz, tmp,
                                workload, lib)
        ir, s, trunc, f = cg.run(bench, mode, a.cg_seconds, a.hz, tmp,
                                 workload, lib)
        out[name] = {"ir_per_sample": (ir - ir0) / max(1, s - s0),
                     "ir_per_frame": (ir - ir0) / max(1, f - f0),
                     "frames_per_sample": f / max(1, s)}
        emit({"bench": "recorder_cost", "metric": "callgrind", "config": name,
              "seconds": a.cg_seconds, "samples": s, "truncated_pct": trunc,
              "ir": ir, "ir_fixed": ir0, "samples_fixed": s0,
              **{x: round(v, 2) for x, v in out[name].items()}})
    return out


def ratio(d, num, den, key):
    if num not in d or den not in d or not d[den][key]:
        return None
    return round(d[num][key] / d[den][key], 4)


def compare(label, value, goal=GOAL):
    emit({"bench": "recorder_cost", "mode": "compare", "ratio": label,
          "value": value, "goal_ratio": goal,
          "meets_goal": value is not None and value <= goal})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--build", default="build")
    ap.add_argument("--base-lib", default=None)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=float, default=2)
    ap.add_argument("--hz", type=int, default=999)
    ap.add_argument("--cg-seconds", type=float, default=6)
    ap.add_argument("--cg-base-seconds", type=float, default=2)
    ap.add_argument("--no-callgrind", dest="callgrind", action="store_false")
    ap.add_argument("--no-perf", dest="perf", action="store_false")
    ap.add_argument("--no-cpu", dest="cpu", action="store_false")
    ap.add_argument("--configs", default=",".join(CONFIGS),
                    help="comma-separated subset of " + ",".join(CONFIGS))
    a = ap.parse_args()
    bench = os.path.join(a.build, "bench", "bench_python")
    if a.base_lib and not os.path.exists(
            os.path.join(a.base_lib, "libstackpulse.so.0")):
        sys.exit(f"no libstackpulse.so.0 in {a.base_lib}")
    python = find_python()
    a.perf = a.perf and have_perf() and a.cpu
    a.configs = set(a.configs.split(","))
    if not a.configs <= set(CONFIGS):
        sys.exit(f"--configs: not in {','.join(CONFIGS)}")
    with tempfile.TemporaryDirectory() as tmp:
        cpu = cpu_rounds(a, bench, python, tmp) if a.cpu else {}
        irs = callgrind(a, bench, python, tmp) if a.callgrind else {}
    pairs = (("python_after", "python_before"), ("python_after", "python_main"),
             ("native_after", "native_main"))
    for d, how, key, what in (
            (cpu, median_ratio, "us_per_sample", "cpu_per_sample"),
            (cpu, median_ratio, "us_per_frame", "cpu_per_frame"),
            (irs, ratio, "ir_per_sample", "ir_per_sample"),
            (irs, ratio, "ir_per_frame", "ir_per_frame")):
        for num, den in pairs:
            compare(f"{num}/{den.split('_')[1]}_{what}",
                    how(d, num, den, key))
    # The outside reference: ours (after) against perf record's own cost.
    if "perf" in cpu:
        compare("python_after/perf_record_cpu_per_sample",
                median_ratio(cpu, "python_after", "perf", "us_per_sample"))

if __name__ == "__main__":
    main()
