#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Exports loaded by the tools people load them into.

Usage: test_viewers.py SPULSE WORKLOAD_DIR CASE. Each case records a real
program with `spulse record` and hands the export to the viewer's own
loading code:

  pprof_go      `go tool pprof -raw` / `-traces` (Debian golang-go): period
                type and period, start time and duration, mapping 1 is the
                main executable, build-ids equal `readelf -n`'s, the
                truncation marker is a named frame, "process" label.
  firefox_cli   @firefox-devtools/profiler-cli (the profiler's processing
                code): every sample counted, CPU time from threadCPUDelta,
                one function per (name, library), thread/process names.
  speedscope    the JSON: one frame per function (CPython's eval loop is
                one frame), a time unit, process names; then speedscope's
                own web app (npm `speedscope`) served on 127.0.0.1 loads
                it in headless Chromium: the page names the profile and
                the flame chart paints coloured pixels.

npm tools are looked up in $SPULSE_JS_TOOLS (default
~/.cache/stackpulse-js, where scripts/install-js-tools puts them).
Exit 0 pass, 1 fail, 77 skip (a tool or Python 3.12 is missing, or the
kernel refused perf_event_open).
"""

import glob
import gzip
import http.server
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
# How a case fails or skips, and main(): tests/cli/clitest.py.
sys.path.insert(0, os.path.join(HERE, "..", "cli"))
from clitest import Failure, Skip, cases, expect  # noqa: E402
import clitest  # noqa: E402

JS = os.environ.get("SPULSE_JS_TOOLS",
                    os.path.expanduser("~/.cache/stackpulse-js"))
PY_LOOP = """
import sys
def leaf(n):
    s = 0
    for i in range(n):
        s += i * i
    return s
def middle(n):
    return leaf(n) + leaf(n // 2)
def deep(d, n):
    return middle(n) if d == 0 else deep(d - 1, n)
total = 0
for k in range(60):
    total += deep(40, 20000)
print(total % 7)
"""


def run(argv, timeout=120, env=None):
    p = subprocess.run(argv, capture_output=True, timeout=timeout, env=env)
    return (p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"))


def record(spulse, spool, cmd, *opts):
    rc, _, err = run([spulse, "record", "-o", spool, *opts, "--", *cmd])
    if rc != 0 and ("Permission denied" in err or
                    "Operation not permitted" in err):
        raise Skip("perf_event_open refused: " + err.strip())
    expect(rc == 0, f"record {cmd}: exit {rc}: {err}")
    rc, out, err = run([spulse, "check", "--json", spool])
    expect(rc == 0, f"check: {err}")
    return json.loads(out.splitlines()[0])["samples"]


def export(spulse, spool, fmt, out):
    rc, _, err = run([spulse, "export", spool, "-f", fmt, "-o", out])
    expect(rc == 0, f"export -f {fmt}: exit {rc}: {err}")


def python312():
    found = sorted(glob.glob("/root/.pyenv/versions/3.1[2-9]*/bin/"
                             "python3.1[2-9]"))
    if not found:
        raise Skip("no Python 3.12+ interpreter (-X perf)")
    return found[0]


def record_python(spulse, tmp, fmt, out_name):
    """Records PY_LOOP under python3.12 -X perf; exports it as @fmt."""
    python = python312()
    script = os.path.join(tmp, "loop.py")
    with open(script, "w") as f:
        f.write(PY_LOOP)
    spool = os.path.join(tmp, "py.spool")
    n = record(spulse, spool, [python, "-X", "perf", script])
    out = os.path.join(tmp, out_name)
    export(spulse, spool, fmt, out)
    return n, out


def build_id(path):
    rc, out, _ = run(["readelf", "-n", path])
    m = re.search(r"Build ID: ([0-9a-f]+)", out)
    return m.group(1) if rc == 0 and m else ""


# ---- pprof ----

def case_pprof_go(spulse, workloads, tmp):
    go = shutil.which("go")
    if not go:
        raise Skip("no go (apt-get install golang-go)")
    exe = os.path.abspath(os.path.join(workloads, "wl_recursion"))
    spool = os.path.join(tmp, "recursion.spool")
    # A small stack copy makes deep stacks end in the truncation marker.
    n = record(spulse, spool, [exe, "1"], "-s", "512")
    pb = os.path.join(tmp, "recursion.pb.gz")
    export(spulse, spool, "pprof", pb)
    env = dict(os.environ, HOME=tmp, PPROF_TMPDIR=tmp,
               GOCACHE=os.path.join(tmp, "gocache"))
    rc, raw, err = run([go, "tool", "pprof", "-raw", pb], env=env)
    expect(rc == 0, f"go tool pprof -raw: exit {rc}: {err}")
    expect("PeriodType: cpu nanoseconds" in raw, "no cpu/nanoseconds period")
    m = re.search(r"^Period: (\d+)", raw, re.M)
    expect(m and int(m.group(1)) == 1001000,
           f"period {m and m.group(1)}, expected 1001000 ns at 999 Hz")
    expect(re.search(r"^Time: 20\d\d-", raw, re.M), "no start time")
    m = re.search(r"^Duration: ([\d.]+)", raw, re.M)
    expect(m and float(m.group(1)) > 0, "no duration")
    expect("samples/count cpu/nanoseconds" in raw, "sample types")
    maps = re.findall(r"^(\d+): 0x\S+ (\S+) ?([0-9a-f]*)", raw.split(
        "\nMappings\n", 1)[-1], re.M)
    expect(maps and maps[0][0] == "1" and maps[0][1] == exe,
           f"mapping 1 is {maps[:1]}, not {exe}")
    for _, path, bid in maps:
        want = build_id(path) if os.path.exists(path) else ""
        expect(bid == want, f"{path}: build-id {bid!r}, readelf {want!r}")
    expect(maps[0][2], "the executable has no build-id")
    expect("process:[wl_recursion]" in raw, "no process label")
    rc, traces, err = run([go, "tool", "pprof", "-traces", pb], env=env)
    expect(rc == 0, f"go tool pprof -traces: {err}")
    truncated = traces.count("[stack truncated]")
    print(f"pprof: {n} samples, {len(maps)} mappings, "
          f"{truncated} traces end truncated")
    expect(truncated > 0, "no named truncation frame in the traces")


# ---- Firefox ----

def profiler_cli():
    js = os.path.join(JS, "node_modules", "@firefox-devtools",
                      "profiler-cli", "dist", "profiler-cli.js")
    node = shutil.which("node")
    if not node or not os.path.exists(js):
        raise Skip(f"no profiler-cli under {JS} (scripts/install-js-tools)")
    return [node, js]


def pq(cli, env, *args):
    rc, out, err = run(cli + list(args), timeout=60, env=env)
    expect(rc == 0, f"profiler-cli {args}: exit {rc}: {out} {err}")
    return out


def case_firefox_cli(spulse, workloads, tmp):
    cli = profiler_cli()
    n, prof = record_python(spulse, tmp, "firefox", "py.json.gz")
    with gzip.open(prof) as f:
        doc = json.load(f)
    th = doc["threads"][0]
    expect(th["samples"]["length"] == n, "samples in the file")
    expect(doc["meta"]["profilingEndTime"] > th["samples"]["time"][-1],
           "the last sample is not inside the profiling range")
    expect("threadCPUDelta" in th["samples"], "no threadCPUDelta column")
    env = dict(os.environ, PROFILER_CLI_SESSION_DIR=os.path.join(tmp, "pq"))
    # Its daemon may need longer than the 500 ms `load` waits for it on a
    # busy machine; it keeps starting, and then answers commands.
    rc, out, err = run(cli + ["load", prof], timeout=60, env=env)
    try:
        for _ in range(120):
            rc, info, err = run(cli + ["profile", "info"], timeout=60,
                                env=env)
            if rc == 0:
                break
            time.sleep(0.5)
        expect(rc == 0, f"profiler-cli never loaded the file: {out} {err}")
        samples = json.loads(pq(cli, env, "thread", "samples", "--json"))
        funcs = json.loads(pq(cli, env, "thread", "functions", "--json",
                              "--limit", "100000"))
    finally:
        run(cli + ["stop", "--all"], env=env)
    total = samples["categoryBreakdown"]["totalSamples"]
    expect(total == n, f"profiler counts {total} samples of {n}")
    m = re.search(r"\[pid \d+\][^\n]* - ([\d.]+)ms", info)
    expect(m and float(m.group(1)) > 0, f"no CPU time: {info}")
    expect(re.search(r"p-0: python3\.1\d", info), f"process name: {info}")
    expect("thread " in info, f"thread name: {info}")
    seen = {}
    for fn in funcs["functions"]:
        key = (fn["name"], fn.get("library"))
        seen[key] = seen.get(key, 0) + 1
    dup = {k: v for k, v in seen.items() if v > 1}
    evals = [k for k in seen if k[0] == "_PyEval_EvalFrameDefault"]
    print(f"firefox: {n} samples, {len(seen)} functions, CPU {m.group(1)} ms")
    expect(not dup, f"functions split in several: {list(dup)[:5]}")
    expect(len(evals) == 1, f"eval loop functions: {evals}")


# ---- speedscope ----

class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def serve(root):
    handler = lambda *a, **k: Quiet(*a, directory=root, **k)  # noqa: E731
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    return httpd


def case_speedscope(spulse, workloads, tmp):
    n, ss = record_python(spulse, tmp, "speedscope", "py.speedscope.json")
    with open(ss) as f:
        doc = json.load(f)
    frames = doc["shared"]["frames"]
    keys = [(fr["name"], fr.get("file")) for fr in frames]
    evals = [k for k in keys if k[0] == "_PyEval_EvalFrameDefault"]
    p0 = doc["profiles"][0]
    print(f"speedscope: {n} samples, {len(frames)} frames, "
          f"eval loop frames {len(evals)}, unit {p0['unit']}")
    expect(len(keys) == len(set(keys)), "a function has several frames")
    expect(len(evals) == 1, f"eval loop frames: {evals}")
    expect(p0["unit"] == "microseconds" and
           p0["endValue"] == sum(p0["weights"]), "unit / weights")
    expect(sum(p["weights"] and 1 for p in doc["profiles"]) >= 1, "empty")
    expect(re.match(r"python3\.1\d \(pid \d+\) thread \d+$", p0["name"]),
           f"profile name {p0['name']!r}")
    app = os.path.join(JS, "node_modules", "speedscope", "dist", "release")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not os.path.exists(os.path.join(app, "index.html")) or not browser:
        raise Skip("JSON checked; no speedscope app under "
                   f"{JS} or no chromium for the load check")
    root = os.path.join(tmp, "www")
    shutil.copytree(app, root)
    shutil.copy(ss, os.path.join(root, "p.json"))
    httpd = serve(root)
    try:
        base = f"http://127.0.0.1:{httpd.server_address[1]}"
        url = f"{base}/index.html#profileURL={base}/p.json"
        png = os.path.join(tmp, "shot.png")
        common = [browser, "--headless", "--no-sandbox", "--disable-gpu",
                  "--hide-scrollbars", "--user-data-dir=" +
                  os.path.join(tmp, "chrome"), "--window-size=1200,800",
                  "--virtual-time-budget=15000"]
        rc, dom, err = run(common + ["--dump-dom", url], timeout=120)
        expect(rc == 0, f"chromium --dump-dom: {err[-400:]}")
        run(common + ["--screenshot=" + png, url], timeout=120)
    finally:
        httpd.shutdown()
    sys.path.insert(0, HERE)
    from svg_screenshot import coloured_pixels
    with open(png, "rb") as f:
        pixels = coloured_pixels(f.read())
    print(f"speedscope app: {pixels} coloured pixels")
    expect(p0["name"] in dom.replace("&nbsp;", " "),
           "the app does not show the profile's name")
    expect(pixels > 20000, "the app drew no flame chart")


if __name__ == "__main__":
    sys.exit(clitest.main(cases(globals()), ["SPULSE", "WORKLOAD_DIR"],
                          "sp-viewers-",
                          lambda case, args, tmp: case(*args, tmp)))
