#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tests of `spulse record`: test_record.py SPULSE WORKLOAD_DIR CASE.

Each CASE records a real process (tests/workloads, or /bin/sh) with
perf_event_open and is one meson test in the 'kernel' suite. The exit
status follows tests/check.h: 0 pass, 1 fail, 77 skip (the kernel refused
perf_event_open, so nothing can be recorded here).
"""

import json
import os
import pty
import random
import re
import shutil
import signal
import subprocess
import sys
import time

from clitest import Failure, Skip, cases, expect
import clitest


class Env:
    def __init__(self, spulse, workloads, tmp):
        self.spulse = spulse
        self.workloads = workloads
        self.tmp = tmp

    def path(self, name):
        return os.path.join(self.tmp, name)

    def workload(self, name):
        return os.path.join(self.workloads, name)

    def run(self, *args, timeout=120):
        proc = subprocess.run([self.spulse, *args], capture_output=True,
                              timeout=timeout)
        err = proc.stderr.decode("utf-8", "replace")
        if proc.returncode != 0 and ("Permission denied" in err or
                                     "Operation not permitted" in err):
            raise Skip(f"perf_event_open refused: {err.strip()}")
        return proc.returncode, proc.stdout.decode("utf-8", "replace"), err

    def samples(self, spool):
        rc, out, err = self.run("check", "--json", spool)
        expect(rc == 0, f"check {spool}: exit {rc}; stderr: {err}")
        obj = json.loads(out.splitlines()[0])
        return obj["samples"], obj


def case_usage(env):
    for args in ([], ["-o", env.path("x")], ["-F", "abc", "--", "true"],
                 ["-p", "1", "--", "true"], ["--"], ["--bogus", "--", "true"],
                 ["-s", "-8", "--", "true"], ["true"]):
        rc, _, err = env.run("record", *args)
        expect(rc == 2, f"record {args}: exit {rc} != 2; stderr: {err}")
        expect("spulse record" in err, f"record {args}: stderr {err!r}")
    rc, out, _ = env.run("record", "--help")
    expect(rc == 0 and "--no-children" in out, f"record --help: {rc} {out!r}")
    rc, out, _ = env.run("help", "record")
    expect(rc == 0 and "-p PID" in out, f"help record: {rc} {out!r}")


def case_ladder(env):
    spool = env.path("ladder.spool")
    rc, out, err = env.run("record", "-o", spool, "--",
                           env.workload("wl_ladder"), "1")
    expect(rc == 0, f"record wl_ladder: exit {rc}; stderr: {err}")
    expect("samples" in err and "lost" in err,
           f"no summary on stderr: {err!r}")
    expect("\r" not in err, f"progress line on a non-TTY stderr: {err!r}")
    n, obj = env.samples(spool)
    expect(n > 0, f"no samples recorded: {obj}")
    expect(obj["threads"] >= 1 and obj["modules"] >= 1, f"defs: {obj}")


def summary_counts(err, label):
    """The name=count pairs of the summary line that starts with label."""
    for line in err.splitlines():
        if line.strip().startswith(label):
            pairs = line.strip()[len(label):].split()
            return {k: int(v) for k, v in (p.split("=") for p in pairs)}
    return {}


def truncated_stacks(err):
    for line in err.splitlines():
        if "truncated stacks" in line:
            return int(line.split(" truncated stacks")[0].split()[-1])
    raise Failure(f"no truncated count in the summary: {err!r}")


def case_max_depth(env):
    """A 2000-frame recursion is cut by the default depth limit and the
    summary says so, reasons adding up; --max-depth 4096 keeps it whole."""
    deep = env.workload("wl_recursion")
    spool = env.path("deep.spool")
    rc, _, err = env.run("record", "-s", "65528", "-o", spool, "--", deep,
                         "1", "2000")
    expect(rc == 0, f"record wl_recursion 1 2000: exit {rc}; stderr: {err}")
    cut = truncated_stacks(err)
    reasons = summary_counts(err, "truncated by:")
    expect(cut >= 50, f"the recursion was not cut: {err!r}")
    expect(sum(reasons.values()) == cut, f"reasons != truncated: {err!r}")
    expect(reasons.get("depth_limit", 0) * 10 >= cut * 9,
           f"not cut by the depth limit: {err!r}")
    rc, _, err = env.run("record", "-s", "65528", "--max-depth", "4096",
                         "-o", spool, "--", deep, "1", "2000")
    expect(rc == 0, f"record --max-depth 4096: exit {rc}; stderr: {err}")
    reasons = summary_counts(err, "truncated by:")
    expect(sum(reasons.values()) == truncated_stacks(err),
           f"reasons != truncated: {err!r}")
    expect(reasons.get("depth_limit", 0) == 0,
           f"--max-depth 4096 still cut by the limit: {err!r}")
    for bad in ("0", "8193", "x"):
        rc, _, err = env.run("record", "--max-depth", bad, "--", "true")
        expect(rc == 2, f"--max-depth {bad}: exit {rc}; {err}")


def case_status(env):
    spool = env.path("status.spool")
    rc, _, err = env.run("record", "-o", spool, "--", "sh", "-c", "exit 3")
    expect(rc == 3, f"record -- sh -c 'exit 3': exit {rc} != 3; {err}")
    rc, _, err = env.run("record", "-o", spool, "--", "sh", "-c",
                         "kill -TERM $$")
    expect(rc == 128 + signal.SIGTERM,
           f"record of a SIGTERMed shell: exit {rc}; {err}")
    env.samples(spool)  # still a valid spool
    rc, _, err = env.run("record", "-o", spool, "--",
                         env.path("does-not-exist"))
    expect(rc == 127, f"record of a missing command: exit {rc}; {err}")


def case_children_zstd(env):
    spool = env.path("children.spool")
    rc, _, err = env.run("record", "--children", "--zstd", "-F", "499",
                         "-o", spool, "--", env.workload("wl_forkexec"), "1")
    expect(rc == 0, f"record --children wl_forkexec: exit {rc}; {err}")
    n, obj = env.samples(spool)
    expect(obj["compressed"] is True, f"--zstd spool not compressed: {obj}")
    expect(n > 0, f"no samples of the exec'd child: {obj}")


def case_pid_duration(env):
    """-p attaches to a running process; --duration ends the recording."""
    spool = env.path("pid.spool")
    target = subprocess.Popen([env.workload("wl_ladder"), "30"])
    try:
        time.sleep(0.2)
        rc, _, err = env.run("record", "-o", spool, "--duration", "1",
                             "-p", str(target.pid))
        expect(rc == 0, f"record -p: exit {rc}; stderr: {err}")
        # Still running (30 s workload): --duration ended the recording,
        # and the stopped-while-attaching target was resumed, not killed.
        expect(target.poll() is None, "the target did not survive")
    finally:
        target.kill()
        target.wait()
    n, obj = env.samples(spool)
    expect(n > 0, f"no samples with -p: {obj}")


def case_sigint(env):
    """SIGINT to spulse alone stops it; the command gets SIGTERM."""
    spool = env.path("sigint.spool")
    proc = subprocess.Popen([env.spulse, "record", "-o", spool, "--",
                             env.workload("wl_ladder"), "30"],
                            stderr=subprocess.PIPE)
    time.sleep(1.0)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    err = err.decode("utf-8", "replace")
    if "Permission denied" in err or "Operation not permitted" in err:
        raise Skip(f"perf_event_open refused: {err.strip()}")
    expect(proc.returncode == 128 + signal.SIGTERM,
           f"exit {proc.returncode} != 143; stderr: {err}")
    n, obj = env.samples(spool)
    expect(n > 0, f"no samples before SIGINT: {obj}")


# A file name that is not UTF-8 (two invalid bytes) and holds a literal
# backslash escape, and how the spool must spell it (utf8.h's escape);
# a name with a newline, which /proc/PID/maps shows as "\012".
BAD_NAME = b"lib\xff\xfe\\x41.so"
BAD_ESCAPED = "lib\\xff\\xfe\\\\x41.so"
NL_NAME = "lib\nnl.so"
# The whole chain, unwound through the odd file's own CFI.
SHARED_CHAIN = "main;wl_shared_entry;wl_shared_middle;wl_shared_leaf"


def module_paths(env, spool):
    rc, out, err = env.run("dump", "--json", "--no-samples", spool)
    expect(rc == 0, f"dump {spool}: exit {rc}; {err}")
    return [r["path"] for r in map(json.loads, out.splitlines())
            if r.get("type") == "module"]


def expect_bad_module(env, spool, what, name=BAD_ESCAPED):
    """The odd module is in @spool under @name, was unwound with its CFI
    and is symbolized from it (after its process exited)."""
    paths = module_paths(env, spool)
    want = os.path.join(env.tmp, name)
    expect(want in paths, f"{what}: no module {want!r} in {paths}")
    rc, out, err = env.run("report", "--folded", spool)
    expect(rc == 0, f"{what}: report exit {rc}; {err}")
    expect(SHARED_CHAIN in out,
           f"{what}: no {SHARED_CHAIN} from the odd file: {out!r}")


def while_running(argv, fn):
    """fn(pid) while the program @argv runs (it is killed afterwards)."""
    target = subprocess.Popen(argv)
    try:
        time.sleep(0.3)
        return fn(target.pid)
    finally:
        target.kill()
        target.wait()


def case_badname(env):
    """A mapped file whose name is not UTF-8 does not end the recording
    (issue 20 item 11): launched, attached with -p, and with -a."""
    lib = os.path.join(os.fsencode(env.tmp), BAD_NAME)
    shutil.copy(env.workload("libwlshared.so"), lib)
    prog = env.workload("wl_dlopen")
    spool = env.path("badname.spool")
    rc, _, err = env.run("record", "-o", spool, "--", prog, "1", lib)
    expect(rc == 0, f"record -- wl_dlopen: exit {rc}; {err}")
    expect_bad_module(env, spool, "record -- CMD")
    def attach_and_system(pid):
        rc, _, err = env.run("record", "-o", spool, "--duration", "1",
                             "-p", str(pid))
        expect(rc == 0, f"record -p: exit {rc}; {err}")
        return env.run("record", "-a", "-o", spool + "-a", "--duration", "1")

    rc, _, err = while_running([prog, "30", lib], attach_and_system)
    expect_bad_module(env, spool, "record -p")
    if rc != 0 and "refused" in err:
        print(f"note: -a skipped: {err.strip()}")
    else:
        expect(rc == 0, f"record -a: exit {rc}; {err}")
        expect_bad_module(env, spool + "-a", "record -a")
    # A newline is valid UTF-8, but /proc/PID/maps spells it "\012": the
    # recorder must read the file by its real name to unwind through it.
    nl = os.path.join(env.tmp, NL_NAME)
    shutil.copy(env.workload("libwlshared.so"), nl)
    rc, _, err = while_running(
        [prog, "30", nl], lambda pid: env.run("record", "-o", spool,
                                              "--duration", "1",
                                              "-p", str(pid)))
    expect(rc == 0, f"record -p (newline): exit {rc}; {err}")
    expect_bad_module(env, spool, "record -p (newline)", NL_NAME)
    return 0


def as_nobody(env):
    """The argv prefix that runs spulse as nobody, or None if impossible."""
    setpriv = "/usr/bin/setpriv"
    if os.geteuid() != 0 or not os.path.exists(setpriv):
        return None
    prefix = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
    probe = subprocess.run(prefix + [env.spulse, "--version"],
                           capture_output=True)
    return prefix if probe.returncode == 0 else None


def case_keep_old(env):
    """A record that fails first never touches FILE; a real one keeps
    FILE.old (issue 20 item 3, issue 13 "never clobber")."""
    spool = env.path("keep.spool")
    rc, _, err = env.run("record", "-o", spool, "--",
                         env.workload("wl_ladder"), "0.3")
    expect(rc == 0, f"first recording: exit {rc}; {err}")
    with open(spool, "rb") as f:
        first = f.read()
    gone = subprocess.Popen(["true"])
    gone.wait()
    failures = [
        ["-s", "65529", "--", "true"],
        ["-F", "99999999", "--", "true"],
        ["-p", str(gone.pid)],
        ["--", env.path("does-not-exist")],
    ]
    for args in failures:
        rc, _, err = env.run("record", "-o", spool, *args)
        expect(rc != 0, f"record {args} succeeded")
        with open(spool, "rb") as f:
            expect(f.read() == first, f"record {args} changed the spool")
        expect(sorted(os.listdir(env.tmp)) == ["keep.spool"],
               f"record {args} left {os.listdir(env.tmp)}")
    nobody = as_nobody(env)
    if nobody:
        # EPERM: nobody may record neither pid 1 nor the whole machine.
        os.chmod(env.tmp, 0o777)
        os.chmod(spool, 0o666)
        for args in (["-p", "1"], ["-a"]):
            proc = subprocess.run(nobody + [env.spulse, "record", "-o", spool,
                                            "--duration", "1", *args],
                                  capture_output=True)
            expect(proc.returncode == 1, f"record {args} as nobody: "
                   f"exit {proc.returncode}; {proc.stderr!r}")
            with open(spool, "rb") as f:
                expect(f.read() == first, f"a refused record {args} "
                       "changed the spool")
    else:
        print("note: EPERM case skipped (needs root and setpriv)")
    rc, _, err = env.run("record", "-o", spool, "--", "true")
    expect(rc == 0, f"second recording: exit {rc}; {err}")
    with open(spool + ".old", "rb") as f:
        expect(f.read() == first, "FILE.old is not the previous recording")
    env.samples(spool)


def proc_state(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def case_attach_kill(env):
    """Killing spulse while it attaches never leaves the target stopped.

    Issue 20 item 5: -p stops the whole target while it opens two events
    per thread and CPU; with 500 threads that takes long enough that a
    kill -9 or a hangup in that window left the target in state T for
    good (2 of 15 kill -9s and 1 of 8 SIGHUPs in the report). Here spulse
    is killed 50 times at a random moment after the stop was seen: mostly
    SIGKILL (the guardian must resume the target), also SIGHUP, SIGTERM and
    SIGINT, which spulse must handle: finish the attach, resume, write the
    spool and exit 0.
    """
    rounds = 50
    target = subprocess.Popen([env.workload("wl_manythreads"), "600", "500"],
                              stdout=subprocess.PIPE)
    rnd = random.Random(os.getpid())
    left, caught = [], 0
    try:
        expect(target.stdout.readline().startswith(b"ready"),
               "wl_manythreads did not start")
        for i in range(rounds):
            sig = (signal.SIGKILL, signal.SIGKILL, signal.SIGKILL,
                   signal.SIGHUP, signal.SIGTERM, signal.SIGINT)[i % 6]
            spool = env.path(f"kill{i}.spool")
            proc = subprocess.Popen([env.spulse, "record", "-o", spool,
                                     "--duration", "30",
                                     "-p", str(target.pid)],
                                    stderr=subprocess.PIPE)
            deadline = time.monotonic() + 60
            while (proc_state(target.pid) != "T" and proc.poll() is None
                   and time.monotonic() < deadline):
                time.sleep(0.001)
            caught += proc_state(target.pid) == "T"
            time.sleep(rnd.uniform(0, 0.4))
            proc.send_signal(sig)
            try:
                _, err = proc.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                _, err = proc.communicate()
                raise Failure(f"round {i}: spulse ignored {sig.name}")
            err = err.decode("utf-8", "replace")
            if "Permission denied" in err or "Operation not permitted" in err:
                raise Skip(f"perf_event_open refused: {err.strip()}")
            if sig != signal.SIGKILL:
                expect(proc.returncode == 0,
                       f"round {i}: {sig.name} during the attach: exit "
                       f"{proc.returncode}; {err}")
                env.samples(spool)
            for _ in range(1000):
                if proc_state(target.pid) != "T":
                    break
                time.sleep(0.01)
            if proc_state(target.pid) == "T":
                left.append(f"round {i} ({sig.name})")
                os.kill(target.pid, signal.SIGCONT)
    finally:
        target.kill()
        target.wait()
    print(f"{len(left)} of {rounds} kills left the target stopped; "
          f"{caught} landed after the stop was seen")
    expect(not left, f"the target stayed stopped after: {', '.join(left)}")
    expect(caught >= rounds // 2,
           f"only {caught} of {rounds} kills came after the stop")


# A command that ignores SIGTERM and SIGINT (issue 20 item 12): the shell
# sets the dispositions (inherited through exec) within a millisecond,
# spins about half a second of CPU (sh and sleep alone start in under one
# sample period, and the spool must have samples to keep), then says so
# in READY; sleep ends by itself, so a hung spulse leaves nothing behind
# for long.
STUBBORN = ("trap '' TERM INT; i=0; while [ $i -lt 200000 ]; "
            "do i=$((i+1)); done; : >\"$0\"; exec sleep 30")


def stubborn_record(env, spool, *extra):
    ready = env.path("ready")
    if os.path.exists(ready):
        os.unlink(ready)
    proc = subprocess.Popen([env.spulse, "record", "-o", spool, *extra, "--",
                             "sh", "-c", STUBBORN, ready],
                            stderr=subprocess.PIPE)
    for _ in range(600):
        if os.path.exists(ready) or proc.poll() is not None:
            break
        time.sleep(0.05)
    return proc


def finish_stubborn(proc, what):
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise Failure(f"{what}: spulse still waits for a command that "
                      "ignores SIGTERM after 60 s")
    err = err.decode("utf-8", "replace")
    if "Permission denied" in err or "Operation not permitted" in err:
        raise Skip(f"perf_event_open refused: {err.strip()}")
    return err


def case_stubborn(env):
    """A command ignoring SIGTERM: bounded wait, then SIGKILL."""
    spool = env.path("stubborn.spool")
    # --duration: SIGTERM is ignored, the grace period ends in SIGKILL.
    proc = stubborn_record(env, spool, "--duration", "2")
    err = finish_stubborn(proc, "--duration 1")
    expect(proc.returncode == 128 + signal.SIGKILL,
           f"--duration: exit {proc.returncode} != 137; stderr: {err}")
    expect("SIGKILL" in err, f"--duration: no word of SIGKILL: {err!r}")
    n, obj = env.samples(spool)
    expect(obj["valid"] and n > 0, f"spool after SIGKILL: {obj}")
    # Ctrl-C, then Ctrl-C again: SIGKILL at once, and a SIGTERM to spulse
    # while it waits escalates the same way (it never ignores either).
    for second in (signal.SIGINT, signal.SIGTERM):
        proc = stubborn_record(env, spool)
        proc.send_signal(signal.SIGINT)
        time.sleep(0.2)
        proc.send_signal(second)
        err = finish_stubborn(proc, f"SIGINT then {second.name}")
        expect(proc.returncode == 128 + signal.SIGKILL,
               f"SIGINT, {second.name}: exit {proc.returncode}; {err}")
        expect("stop requested again" in err,
               f"SIGINT, {second.name}: not escalated at once: {err!r}")
        env.samples(spool)


def case_system(env):
    """-a records every process until --duration; filters and usage."""
    spool = env.path("system.spool")
    target = subprocess.Popen([env.workload("wl_ladder"), "30"])
    try:
        time.sleep(0.2)
        rc, _, err = env.run("record", "-a", "--duration", "1", "-o", spool)
        if rc != 0 and "refused" in err:
            raise Skip(f"system-wide events refused: {err.strip()}")
        expect(rc == 0, f"record -a: exit {rc}; stderr: {err}")
        expect("samples" in err and "lost" in err, f"no summary: {err!r}")
        n, obj = env.samples(spool)
        expect(n > 0 and obj["modules"] > 0, f"record -a: {obj}")
        # --pid with -a is a filter: only the target's thread appears.
        rc, _, err = env.run("record", "-a", "--pid", str(target.pid),
                             "--duration", "1", "-o", spool)
        expect(rc == 0, f"record -a --pid: exit {rc}; stderr: {err}")
        n, obj = env.samples(spool)
        expect(n > 0 and obj["threads"] == 1,
               f"record -a --pid kept other threads: {obj}")
        expect(target.poll() is None, "the target did not survive")
    finally:
        target.kill()
        target.wait()
    # -a with a command: recording ends when it exits, with its status.
    rc, _, err = env.run("record", "-a", "-o", spool, "--", "sh", "-c",
                         "exit 5")
    expect(rc == 5, f"record -a -- sh -c 'exit 5': exit {rc}; {err}")
    for args in (["--comm", "x", "-p", "1"], ["-a", "--comm", ""],
                 ["--cgroup", ""]):
        rc, _, err = env.run("record", *args)
        expect(rc == 2, f"record {args}: exit {rc} != 2; stderr: {err}")
    rc, _, err = env.run("record", "--cgroup", env.path("nope"),
                         "--duration", "1", "-o", spool)
    expect(rc == 1 and "cgroup" in err, f"missing cgroup: {rc} {err!r}")


def dump_header(env, spool):
    rc, out, err = env.run("dump", "--json", spool)
    expect(rc == 0, f"dump {spool}: {err}")
    return json.loads(out.splitlines()[0])


def case_children_default(env):
    """Children are followed unless --no-children; the header is filled."""
    cmd = ["sh", "-c", f"{env.workload('wl_ladder')} 1; true"]
    spool, lone = env.path("kids.spool"), env.path("lone.spool")
    t0 = time.time()
    rc, _, err = env.run("record", "-o", spool, "--", *cmd)
    expect(rc == 0, f"record sh -c: exit {rc}; {err}")
    # The summary names duration, file size and bytes per sample.
    m = re.search(r"duration ([\d.]+) s, file ([\d.]+) (bytes|KiB|MiB), "
                  r"([\d.]+) bytes/sample", err)
    expect(m and float(m.group(1)) > 0.5, f"no size summary: {err!r}")
    rc, _, err = env.run("record", "--no-children", "-o", lone, "--", *cmd)
    expect(rc == 0, f"record --no-children: exit {rc}; {err}")
    kids, _ = env.samples(spool)
    alone, _ = env.samples(lone)
    print(f"sh -c 'wl_ladder 1; true': {kids} samples, "
          f"--no-children {alone}")
    expect(kids > 50 and alone * 4 < kids,
           f"children not followed by default: {kids} vs {alone}")
    hdr = dump_header(env, spool)
    expect(hdr["sample_interval_us"] == 1001, f"interval: {hdr}")
    start = hdr["start_timestamp_us"] / 1e6
    expect(abs(start - t0) < 60, f"start {start} vs now {t0}: {hdr}")
    rc, _, _ = env.run("record", "-F", "250", "-o", lone, "--", "true")
    expect(dump_header(env, lone)["sample_interval_us"] == 4000,
           "interval at 250 Hz")


def case_errors(env):
    """Errors name the value, the limit and the fix."""
    spool = env.path("e.spool")
    rc, _, err = env.run("record", "-F", "99999999", "-o", spool, "--",
                         "true")
    expect(rc == 2 and "rate 99999999 Hz is above the kernel's maximum" in
           err and "kernel.perf_event_max_sample_rate" in err and
           "-F max" in err, f"-F 99999999: {rc} {err!r}")
    rc, _, err = env.run("record", "-s", "100000", "-o", spool, "--", "true")
    expect(rc == 2 and "1..65528" in err, f"-s 100000: {rc} {err!r}")
    pid = 4194303  # above the default pid_max of small machines
    while os.path.exists(f"/proc/{pid}"):
        pid -= 1
    rc, _, err = env.run("record", "-p", str(pid), "-o", spool)
    expect(rc == 1 and f"no process {pid}" in err, f"-p {pid}: {err!r}")
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or not setpriv:
        print("EPERM hints not checked: needs root and setpriv")
        return
    os.chmod(env.tmp, 0o777)
    nobody = [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
              env.spulse, "record", "-o", spool]
    for args, system in ((["-p", "1"], False), (["-a", "--duration", "1"],
                                                 True)):
        p = subprocess.run(nobody + args, capture_output=True, timeout=60)
        err = p.stderr.decode()
        expect(p.returncode == 1 and "perf_event_paranoid" in err and
               "CAP_PERFMON" in err and
               ("-a needs" in err) == system and
               "cannot record into" not in err,
               f"unprivileged {args}: {p.returncode} {err!r}")


def pty_run(argv, env_vars, timeout=60):
    """Runs @argv with stdout and stderr on a pseudo-terminal; its bytes."""
    master, slave = pty.openpty()
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=slave,
                         stderr=slave, env=env_vars)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    p.wait(timeout=timeout)
    return p.returncode, out


def case_term(env):
    """A terminal gets the progress line; TERM=dumb gets no escapes."""
    spool = env.path("t.spool")
    argv = [env.spulse, "record", "-o", spool, "--",
            env.workload("wl_ladder"), "1"]
    rc, out = pty_run(argv, dict(os.environ, TERM="xterm"))
    expect(rc == 0 and b"\x1b[" in out, f"no progress on a tty: {out!r}")
    rc, out = pty_run(argv, dict(os.environ, TERM="dumb"))
    expect(rc == 0 and b"\x1b" not in out and b"samples" in out,
           f"TERM=dumb got escape codes: {out!r}")
    rc, out = pty_run([env.spulse, "top", "--iterations", "2", "--interval",
                       "0.3", "--", env.workload("wl_ladder"), "1"],
                      dict(os.environ, TERM="dumb"))
    expect(rc == 0 and b"\x1b" not in out and out.count(b"spulse top:") == 2,
           f"top with TERM=dumb: {out!r}")
    rc, out = pty_run([env.spulse, "export", spool, "-f", "pprof"],
                      dict(os.environ))
    expect(rc == 2 and b"terminal" in out, f"pprof to a tty: {rc} {out!r}")


def top_rows(text):
    return [line for line in text.splitlines()
            if re.match(r"^\s+\d+ +[\d.]+% +\d+ +[\d.]+%  ", line)]


def case_top_live(env):
    """top -- CMD and top -p PID record live, no FILE and nothing left."""
    before = set(os.listdir(env.tmp))
    tenv = dict(os.environ, TMPDIR=env.tmp)
    p = subprocess.run([env.spulse, "top", "--once", "--top", "50", "--",
                        env.workload("wl_ladder"), "1"],
                       capture_output=True, timeout=60, env=tenv)
    out = p.stdout.decode()
    expect(p.returncode == 0, f"top -- wl_ladder: {p.returncode} {p.stderr}")
    expect(out.count("spulse top: ") == 1 and "wl_ladder" in out and
           re.search(r"samples: (\d{3,})", out), f"top --once: {out}")
    expect(any("wl_" in r for r in top_rows(out)), f"no workload rows: {out}")
    target = subprocess.Popen([env.workload("wl_ladder"), "30"])
    try:
        time.sleep(0.2)
        p = subprocess.run([env.spulse, "top", "--iterations", "2",
                            "--interval", "0.5", "-p", str(target.pid)],
                           capture_output=True, timeout=60, env=tenv)
        out = p.stdout.decode()
        expect(p.returncode == 0, f"top -p: {p.returncode} {p.stderr}")
        expect(out.count(f"spulse top: pid {target.pid}") == 2 and
               top_rows(out), f"top -p: {out}")
        expect(target.poll() is None, "top -p killed its target")
    finally:
        target.kill()
        target.wait()
    expect(set(os.listdir(env.tmp)) == before, "temporary spool left")
    p = subprocess.run([env.spulse, "top", "-p", "4194303"],
                       capture_output=True, timeout=60)
    expect(p.returncode == 1 and b"no process" in p.stderr, p.stderr)


if __name__ == "__main__":
    sys.exit(clitest.main(
        cases(globals()), ["SPULSE", "WORKLOAD_DIR"], "spulse-record-",
        lambda case, args, tmp: case(Env(args[0], args[1], tmp))))
