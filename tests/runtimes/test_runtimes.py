#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Real runtimes through `spulse record` and `report` (issue 12).

    test_runtimes.py SPULSE RUNTIMES_DIR CASE

Each CASE profiles a program users profile, with the runtime itself, and
checks names and whole stacks against a known-good chain that does not
come from stackpulse:
  python_launch  python3.12 -X perf, launched: names resolve although the
                 process exited before the recording ended, and >= 95 % of
                 the samples in the leaf carry the whole Python chain that
                 sys._current_frames() showed inside the process;
  python_attach  the same attached with -p, exiting during the recording;
  python_reuse   two Python programs that get the same pid one after the
                 other (ns_last_pid, root): each keeps its own names;
  node_launch    node --perf-basic-prof: JS names and the chain up to the
                 top-level function in >= 95 % of the leaf's samples, and
                 perf record -g of the same program as the oracle;
  node_attach    the same attached with -p, exiting during the recording;
  cxx            g++ -O2 without frame pointers: every name is what
                 c++filt prints for its symbol (pprof: with the symbol
                 as system_name), and the hot function's samples reach
                 main;
  rust           the same for plain rustc -O2 builds, legacy and v0
                 mangling.
Exit status per tests/check.h: 0 pass, 1 fail, 77 skip (runtime or perf
permission missing; the reason is printed).
"""

import glob
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time

SKIP = 77
SHARE = 0.95


# The helpers of the `spulse record` tests (tests/cli/test_record.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "cli"))
from test_record import (Env as RecordEnv, Failure, Skip, expect,  # noqa: E402
                         summary_counts)


def python312():
    exe = os.environ.get("STACKPULSE_TEST_PYTHON")
    if exe:
        return exe
    found = sorted(glob.glob("/root/.pyenv/versions/3.12*/bin/python3.12"))
    if found:
        return found[-1]
    exe = shutil.which("python3.12")
    if not exe:
        raise Skip("no python3.12 with -X perf support")
    return exe


def node():
    exe = shutil.which("node")
    if not exe:
        raise Skip("no node")
    return exe


class Env(RecordEnv):
    """test_record's Env; "workloads" is tests/runtimes here."""

    def src(self, name):
        return self.workload(name)

    def record(self, spool, *args):
        rc, _, err = self.run("record", "-o", spool, *args)
        expect(rc == 0, f"record {args}: exit {rc}; stderr: {err}")
        return err

    def folded(self, spool, *extra):
        """[(frames root first, count)] of `report --folded`."""
        rc, out, err = self.run("report", "--folded", *extra, spool)
        expect(rc == 0, f"report {spool}: exit {rc}; stderr: {err}")
        stacks = []
        for line in out.splitlines():
            body, _, count = line.rpartition(" ")
            stacks.append((body.split(";"), int(count)))
        return stacks


def subsequence(frames, names):
    """The frames that are @names, in stack order."""
    return [f for f in frames if f in names]


def chain_share(stacks, leaf, chain, match=lambda f, n: f == n):
    """Samples with a frame @leaf; how many show @chain (root first) as
    the frames that match its names, in order."""
    total = whole = 0
    for frames, count in stacks:
        if not any(match(f, leaf) for f in frames):
            continue
        total += count
        seen = [n for f in frames for n in chain if match(f, n)]
        whole += count if seen[-len(chain):] == chain else 0
    return total, whole


def oracle_chain(path):
    with open(path) as f:
        chains = [line.strip().split(";") for line in f if line.strip()]
    expect(len(chains) == 1, f"sys._current_frames() chains: {chains}")
    return chains[0]


def check_python(env, spool, oracle, prefix="sp"):
    chain = oracle_chain(oracle)
    expect(chain[-1] == f"{prefix}_leaf" and len(chain) == 5,
           f"oracle chain {chain}")
    full = env.folded(spool)
    total, whole = chain_share(full, chain[-1], chain)
    print(f"{prefix}: {whole}/{total} leaf samples with the chain {chain}")
    expect(total >= 100, f"only {total} samples in {chain[-1]}")
    expect(whole >= SHARE * total,
           f"whole chain in {whole} of {total} leaf samples")
    # The Python-only view reads as the Python stack itself.
    py = env.folded(spool, "--python-only")
    exact = sum(c for f, c in py if f[:len(chain)] == chain)
    expect(exact >= SHARE * total,
           f"--python-only: {exact} of {total} samples start {chain}")


def case_python_launch(env):
    py = python312()
    spool, oracle = env.path("py.spool"), env.path("oracle")
    env.record(spool, "--", py, "-X", "perf", env.src("py_nested.py"), "2",
               oracle)
    check_python(env, spool, oracle)


def case_python_attach(env):
    py = python312()
    spool, oracle = env.path("pya.spool"), env.path("oracle")
    proc = subprocess.Popen([py, "-X", "perf", env.src("py_nested.py"), "3",
                             oracle])
    try:
        time.sleep(0.5)
        env.record(spool, "-p", str(proc.pid))
    finally:
        proc.wait(timeout=60)
    expect(not os.path.exists(f"/proc/{proc.pid}/exe"), "target still alive")
    check_python(env, spool, oracle)


REUSE = r"""
import os, sys
py, prog, secs, tmp = sys.argv[1:5]
def run(prefix, want):
    for _ in range(400):
        if want:
            with open('/proc/sys/kernel/ns_last_pid', 'w') as f:
                f.write(str(want - 1))
        pid = os.fork()
        if pid == 0:
            if want and os.getpid() != want:
                os._exit(3)
            os.execv(py, [py, '-X', 'perf', prog, secs,
                          os.path.join(tmp, prefix), prefix])
        _, status = os.waitpid(pid, 0)
        if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0:
            return pid
    sys.exit('pid not reused')
first = run('aa', 0)
second = run('bb', first)
print(first, second)
"""


def case_python_reuse(env):
    py = python312()
    if os.geteuid() != 0 or not os.access("/proc/sys/kernel/ns_last_pid",
                                          os.W_OK):
        raise Skip("pid reuse needs root (ns_last_pid)")
    spool = env.path("reuse.spool")
    launcher = env.path("launcher.py")
    with open(launcher, "w") as f:
        f.write(REUSE)
    env.record(spool, "--", py, launcher, py,
               env.src("py_nested.py"), "1.5", env.tmp)
    for prefix in ("aa", "bb"):
        check_python(env, spool, env.path(prefix), prefix)
    # No sample mixes the two programs' names.
    for frames, _ in env.folded(spool):
        names = {f[:3] for f in frames}
        expect(not ({"aa_", "bb_"} <= names), f"mixed stack {frames}")


def js_match(frame, name):
    """A V8 perf-map name such as 'JS:*jsLeaf /path/x.js:9:16'."""
    if not frame.startswith("JS:"):
        return False
    return frame[3:].lstrip("*~^+").split(" ")[0] == name


JS_CHAIN = ["jsMain", "jsOuter", "jsMiddle", "jsLeaf"]
NODE_FLAGS = ["--perf-basic-prof", "--interpreted-frames-native-stack"]


def check_node(env, spool, err):
    stacks = env.folded(spool)
    total, whole = chain_share(stacks, "jsLeaf", JS_CHAIN, js_match)
    print(f"node: {whole}/{total} leaf samples with the chain {JS_CHAIN}")
    expect(total >= 100, f"only {total} samples in jsLeaf")
    expect(whole >= SHARE * total,
           f"whole JS chain in {whole} of {total} leaf samples")
    # V8's JIT code has no CFI: its frames are frame-pointer steps, and
    # the summary counts them (jsMiddle, jsOuter, jsMain under each leaf).
    steps = summary_counts(err, "frame-pointer steps:")
    print(f"node: frame-pointer steps {steps}")
    expect(steps.get("no_module_unwind_data", 0) >= 3 * whole,
           f"JIT frames not counted as frame-pointer steps: {steps}")


def perf_chain_share(env, cmd):
    """perf record -g of @cmd: (leaf samples, those with the chain)."""
    perf = shutil.which("perf")
    if not perf:
        return None
    data = env.path("perf.data")
    rec = subprocess.run([perf, "record", "-q", "-g", "-o", data, "--",
                          *cmd], capture_output=True, timeout=180)
    if rec.returncode != 0:
        return None
    out = subprocess.run([perf, "script", "-i", data, "-F", "ip,sym"],
                         capture_output=True, timeout=180).stdout.decode(
                             "utf-8", "replace")
    total = whole = 0
    for block in out.split("\n\n"):
        syms = []
        for line in block.strip().splitlines():
            parts = line.split(None, 1)
            syms.append(parts[1].rsplit(" (", 1)[0] if len(parts) > 1 else "")
        syms.reverse()  # root first
        if not any(js_match(s, "jsLeaf") for s in syms):
            continue
        total += 1
        seen = [n for s in syms for n in JS_CHAIN if js_match(s, n)]
        whole += seen[-len(JS_CHAIN):] == JS_CHAIN
    return total, whole


def case_node_launch(env):
    js = node()
    spool = env.path("node.spool")
    cmd = [js, *NODE_FLAGS, env.src("js_nested.js"), "2"]
    err = env.record(spool, "--", *cmd)
    check_node(env, spool, err)
    oracle = perf_chain_share(env, cmd)
    if oracle:
        print(f"perf -g: {oracle[1]}/{oracle[0]} leaf samples with the chain")
        expect(oracle[0] >= 100 and oracle[1] >= SHARE * oracle[0],
               f"perf -g oracle disagrees: {oracle}")


def case_node_attach(env):
    js = node()
    spool = env.path("nodea.spool")
    proc = subprocess.Popen([js, *NODE_FLAGS, env.src("js_nested.js"), "3"],
                            stdout=subprocess.DEVNULL)
    try:
        time.sleep(0.7)
        err = env.record(spool, "-p", str(proc.pid))
    finally:
        proc.wait(timeout=60)
    expect(not os.path.exists(f"/proc/{proc.pid}/exe"), "target still alive")
    check_node(env, spool, err)


def cxxfilt(names):
    """c++filt's output for each of @names (one call)."""
    exe = shutil.which("c++filt")
    if not exe:
        raise Skip("no c++filt")
    out = subprocess.run([exe], input="\n".join(names) + "\n",
                         capture_output=True, text=True, timeout=60).stdout
    return out.splitlines()


def frame_names(stacks):
    return {f for frames, _ in stacks for f in frames}


def check_demangled(env, spool, hot, main, at_least):
    """Every name equals c++filt of its symbol (@at_least of them were
    mangled); @hot's samples reach @main."""
    raw = frame_names(env.folded(spool, "--no-demangle"))
    shown = frame_names(env.folded(spool))
    raw = sorted(raw)
    want = dict(zip(raw, cxxfilt(raw)))
    mangled = {m: d for m, d in want.items() if m != d}
    print(f"{len(mangled)} mangled names, e.g. "
          f"{next(iter(mangled.items()), None)}")
    expect(len(mangled) >= at_least, f"few mangled names: {sorted(mangled)}")
    for m, d in mangled.items():
        expect(d in shown, f"{m}: c++filt says {d!r}, not in the report")
        expect(m not in shown, f"{m} left mangled")
    left = [n for n, d in zip(sorted(shown), cxxfilt(sorted(shown)))
            if n != d]
    expect(not left, f"names c++filt would still change: {left[:5]}")
    # pprof: the demangled name is the function's name, the symbol its
    # system_name, so both are in the profile's string table.
    pb = env.path("p.pb.gz")
    rc, _, err = env.run("export", spool, "--format", "pprof", "-o", pb)
    expect(rc == 0, f"export pprof: exit {rc}; stderr: {err}")
    with gzip.open(pb) as f:
        table = f.read()
    for m, d in mangled.items():
        expect(m.encode() in table and d.encode() in table,
               f"pprof lacks {m!r} or {d!r}")
    stacks = env.folded(spool)
    total = sum(c for f, c in stacks if any(hot(x) for x in f))
    whole = sum(c for f, c in stacks
                if any(hot(x) for x in f) and any(main(x) for x in f))
    print(f"{whole}/{total} samples in the hot function reach main")
    expect(total >= 200, f"only {total} samples in the hot function")
    expect(whole >= SHARE * total, f"{whole} of {total} reach main")


def build(cmd, what):
    try:
        subprocess.run(cmd, check=True, capture_output=True, timeout=300)
    except FileNotFoundError:
        raise Skip(f"no compiler for {what}")
    except subprocess.CalledProcessError as e:
        raise Failure(f"building {what}: {e.stderr.decode(errors='replace')}")


def case_cxx(env):
    cxx = shutil.which("g++")
    if not cxx:
        raise Skip("no g++")
    exe = env.path("cxx_nested")
    build([cxx, "-O2", "-fomit-frame-pointer", "-g", "-o", exe,
           env.src("cxx_nested.cpp")], "C++")
    spool = env.path("cxx.spool")
    env.record(spool, "--", exe, "2")
    check_demangled(env, spool,
                    lambda n: "Heavy<long, 64>::spin(" in n,
                    lambda n: n == "main", 2)


def case_rust(env):
    rustc = shutil.which("rustc")
    if not rustc:
        raise Skip("no rustc")
    for mangling in ("legacy", "v0"):
        exe = env.path("rs_" + mangling)
        # Legacy is rustc's default (asking for it needs -Z flags).
        flags = [] if mangling == "legacy" else [
            "-C", "symbol-mangling-version=" + mangling]
        build([rustc, "-C", "opt-level=2", "-C", "force-frame-pointers=no",
               "-C", "debuginfo=1", *flags, "-o", exe,
               env.src("rs_nested.rs")], "Rust")
        spool = env.path(mangling + ".spool")
        env.record(spool, "--", exe, "2")
        check_demangled(env, spool,
                        lambda n: "Heavy<" in n and "spin" in n,
                        lambda n: n.startswith("rs_nested::main") or
                        n.startswith("rs_nested[") and "::main" in n, 4)


CASES = {name[5:]: fn for name, fn in globals().items()
         if name.startswith("case_")}


def main():
    if len(sys.argv) != 4 or sys.argv[3] not in CASES:
        print(__doc__, file=sys.stderr)
        return 2
    spulse, runtimes = (os.path.abspath(a) for a in sys.argv[1:3])
    case = sys.argv[3]
    with tempfile.TemporaryDirectory(prefix="sp_rt_") as tmp:
        # Node writes isolate-*-v8.log files into its working directory.
        os.chdir(tmp)
        try:
            CASES[case](Env(spulse, runtimes, tmp))
        except Skip as e:
            print(f"skip: {e}")
            return SKIP
        except Failure as e:
            print(f"FAIL: {e}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
