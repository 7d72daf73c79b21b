#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Issue 20 (hardening) through the CLI: test_issue20.py SPULSE REPORT_GEN CASE.

REPORT_GEN writes a small spool of its own functions (report_gen.c). Each
case is one defect of the hostile review, checked the way a user meets it.
Device nodes are private mknod copies of /dev/null (1,3) and /dev/full
(1,7) in a temporary directory, so a regression cannot remove the real
ones; the cases that need root (mknod, chown) exit 77 without it.
Exit status: 0 pass, 1 fail, 77 skip.
"""

import os
import re
import stat
import subprocess
import sys

from clitest import Failure, Skip, cases, expect
from clitest import run_checked as run
import clitest


def need_root():
    if os.geteuid() != 0:
        raise Skip("needs root (mknod, chown)")


def mknod(path, minor):
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, minor))


# ---- items 1, 2, 14: export output files ----

def case_export_device(t):
    """Item 1: a character device is written, never unlinked."""
    need_root()
    null = t.dir + "/null"
    mknod(null, 3)
    for fmt in ("pprof", "folded", "firefox", "flamegraph"):
        run([t.spulse, "export", t.spool, "-f", fmt, "-o", null])
        expect(stat.S_ISCHR(os.lstat(null).st_mode),
               f"{fmt}: the device node is gone")


def case_export_full(t):
    """Item 1: ENOSPC is a clear error naming the output; nothing deleted."""
    need_root()
    full = t.dir + "/full"
    mknod(full, 7)
    p = run([t.spulse, "export", t.spool, "-f", "folded", "-o", full], rc=1)
    err = p.stderr.decode()
    expect("No space left on device" in err and "full" in err,
           f"message: {err!r}")
    expect(stat.S_ISCHR(os.lstat(full).st_mode), "the device node is gone")
    expect(os.path.exists(t.spool), "the input is gone")


def case_export_fifo(t):
    """Item 1: a FIFO is written to its reader."""
    fifo = t.dir + "/fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", fifo], stdout=subprocess.PIPE)
    run([t.spulse, "export", t.spool, "-f", "folded", "-o", fifo])
    out = reader.communicate(timeout=30)[0].decode()
    expect("rg_root;rg_middle;rg_leaf 30" in out, f"fifo output: {out!r}")
    expect(stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO is gone")


def case_export_self(t):
    """Item 2: -o naming the input, a hard link or a symlink to it."""
    before = open(t.spool, "rb").read()
    os.link(t.spool, t.dir + "/hard.spool")
    os.symlink(t.spool, t.dir + "/soft.spool")
    for out in (t.spool, t.dir + "/hard.spool", t.dir + "/soft.spool"):
        p = run([t.spulse, "export", t.spool, "-f", "folded", "-o", out],
                rc=2)
        expect(b"input" in p.stderr, f"message: {p.stderr!r}")
        expect(open(t.spool, "rb").read() == before,
               f"-o {out}: the recording changed")
    # Standard output appended to the input is the same file.
    with open(t.spool, "ab") as f:
        run([t.spulse, "export", t.spool, "-f", "folded"], rc=2, stdout=f)
    expect(open(t.spool, "rb").read() == before, "stdout: recording changed")
    run([t.spulse, "check", t.spool])


def case_export_keeps_old(t):
    """Items 1, 14: a failed export leaves the old output; a good one is 0600."""
    out = t.dir + "/old.txt"
    with open(out, "w") as f:
        f.write("previous export\n")
    os.chmod(out, 0o644)
    run([t.spulse, "export", t.dir + "/missing.spool", "-f", "folded",
         "-o", out], rc=1)
    expect(open(out).read() == "previous export\n", "old output lost")
    bad = t.dir + "/bad.spool"
    with open(bad, "wb") as f:
        f.write(open(t.spool, "rb").read()[:20] + b"\xff" * 40)
    run([t.spulse, "export", bad, "-f", "speedscope", "-o", out], rc=1)
    expect(open(out).read() == "previous export\n", "old output lost")
    run([t.spulse, "export", t.spool, "-f", "folded", "-o", out])
    expect("rg_root;rg_middle;rg_leaf 30" in open(out).read(), "new output")
    expect(stat.S_IMODE(os.stat(out).st_mode) == 0o600,
           f"mode {oct(os.stat(out).st_mode)}")
    expect(sorted(os.listdir(t.dir)) == sorted(
        ["report.spool", "old.txt", "bad.spool"]),
        f"left behind: {os.listdir(t.dir)}")


def case_export_planted_link(t):
    """Item 14: a link another user planted in a sticky dir is not followed."""
    need_root()
    shared = t.dir + "/shared"
    os.mkdir(shared)
    os.chmod(shared, 0o1777)
    victim = t.dir + "/victim"
    with open(victim, "w") as f:
        f.write("root's file\n")
    link = shared + "/out.svg"
    os.symlink(victim, link)
    os.lchown(link, 65534, 65534)
    p = run([t.spulse, "export", t.spool, "-f", "flamegraph", "-o", link],
            rc=1)
    expect(b"symbolic links" in p.stderr, f"message: {p.stderr!r}")
    expect(open(victim).read() == "root's file\n", "the victim was written")
    # /dev/stdout is a link of root's in root's /dev: followed.
    p = run([t.spulse, "export", t.spool, "-f", "folded", "-o",
             "/dev/stdout"])
    expect(b"rg_root;rg_middle 10" in p.stdout, f"stdout: {p.stdout!r}")


def case_record_mode(t):
    """Item 14: a spool written by the library is 0600 whatever the umask."""
    out = t.dir + "/fresh.spool"
    old = os.umask(0)
    try:
        subprocess.run([t.gen, out], check=True)
    finally:
        os.umask(old)
    expect(stat.S_IMODE(os.stat(out).st_mode) == 0o600,
           f"mode {oct(os.stat(out).st_mode)}")


# ---- item 4: zstd cut inside the last frame ----

def zstd_frame(data):
    p = subprocess.run(["zstd", "-q", "-c"], input=data,
                       stdout=subprocess.PIPE, check=True)
    return p.stdout


def case_check_zstd_cut(t):
    """Item 4: check reports a cut last frame like a cut plain record."""
    if subprocess.run(["sh", "-c", "command -v zstd"],
                      stdout=subprocess.DEVNULL).returncode:
        raise Skip("no zstd tool")
    plain = open(t.spool, "rb").read()
    # Two frames: the 10-byte header, then every record.
    first, second = zstd_frame(plain[:10]), zstd_frame(plain[10:])
    whole, cut = t.dir + "/whole.zst.spool", t.dir + "/cut.zst.spool"
    with open(whole, "wb") as f:
        f.write(first + second)
    with open(cut, "wb") as f:
        f.write(first + second[:len(second) // 2])
    p = run([t.spulse, "check", "--json", whole])
    expect(b'"truncated":false' in p.stdout and b'"samples":45' in p.stdout,
           f"whole: {p.stdout!r}")
    p = run([t.spulse, "check", "--json", cut])
    expect(b'"truncated":true' in p.stdout, f"cut: {p.stdout!r}")
    expect(b"warning" in p.stderr, f"no warning: {p.stderr!r}")
    p = run([t.spulse, "report", cut])
    expect(b"recovered tail: yes" in p.stdout, f"report: {p.stdout!r}")


# ---- item 13: pids the format allows ----

def uvar(v):
    out = b""
    while True:
        out += bytes([(v & 0x7f) | (0x80 if v > 0x7f else 0)])
        v >>= 7
        if not v:
            return out


def svar(v):
    return uvar((v << 1) ^ (v >> 63) if v >= 0 else ((-v) << 1) - 1)


def spool_of_pids(pids):
    """One unpinned user frame per pid, a sample of each (SPULSE3)."""
    out = b"SPULSE3\0" + uvar(0) + uvar(0)
    for i, pid in enumerate(pids):
        out += b"\x02" + uvar(i) + uvar(1) + uvar(0x401000 + 16 * i)
        out += b"\x03" + uvar(i) + uvar(0xffffffff) + uvar(i)
        out += b"\x04" + uvar(i) + svar(pid) + uvar(pid)
        out += b"\x05" + svar(1000 if i == 0 else 1) + uvar(i) + uvar(i)
    return out


def case_report_big_pid(t):
    """Item 13: a thread at pid >= 0x3fffffff leaves the rest readable."""
    pids = [4242, 0x3fffffff, 0x7fffffff]
    path = t.dir + "/pids.spool"
    with open(path, "wb") as f:
        f.write(spool_of_pids(pids))
    p = run([t.spulse, "check", "--json", path])
    expect(b'"samples":3' in p.stdout, f"check: {p.stdout!r}")
    p = run([t.spulse, "report", "--threads", path])
    for pid in pids:
        expect(f"pid {pid} ".encode() in p.stdout, f"report: {p.stdout!r}")
    p = run([t.spulse, "export", path, "-f", "folded", "--annotate", "pid"])
    for pid in pids:
        expect(f"{pid};".encode() in p.stdout, f"export: {p.stdout!r}")
    run([t.spulse, "export", path, "-f", "pprof", "-o", t.dir + "/p.pb.gz"])


# ---- item 6: files the symbolizer opens from spool data ----

# work() begins with an inlined helper(), so resolving its first bytes
# reads DWARF names that dwz moved to the supplementary file.
WORK_C = b"""
#include <stdio.h>
struct point { int x, y; };
static inline __attribute__((always_inline)) int helper(struct point *p)
{
\tint s = 0;
\tfor (int i = 0; i < p->x; i++)
\t\ts += printf("%d\\n", i * p->y);
\treturn s;
}
__attribute__((noinline)) int work(struct point *p)
{
\treturn helper(p) + 1;
}
int main(void) { struct point p = { 3, 4 }; return work(&p); }
"""


def need_tools(*tools):
    for tool in tools:
        if subprocess.run(["sh", "-c", "command -v " + tool],
                          stdout=subprocess.DEVNULL).returncode:
            raise Skip("no " + tool)


def module_spool(path, module_path, text, work_off):
    """One sample in `work` of a module record for @module_path (pid 77)."""
    vaddr, off, size = text
    start = 0x555555554000 + vaddr
    out = b"SPULSE3\0" + uvar(0) + uvar(0)
    out += (b"\x01" + uvar(0) + svar(77) + uvar(start) + uvar(start + size)
            + uvar(off) + uvar(0) * 4 + b"\x00" + uvar(len(module_path))
            + module_path)
    out += b"\x02" + uvar(0) + uvar(0) + uvar(off + work_off - vaddr + 1)
    out += b"\x03" + uvar(0) + uvar(0xffffffff) + uvar(0)
    out += b"\x04" + uvar(0) + svar(77) + uvar(77)
    out += b"\x05" + svar(1000) + uvar(0) + uvar(0)
    with open(path, "wb") as f:
        f.write(out)


def build_work(t):
    """a1 (stripped, debuglink), a1.debug/a2.debug dwz'd into common.debug.

    Compiled by $SPULSE_TEST_CC (default gcc): a cross build names the
    target's compiler, whose files the objcopy first on its PATH handles.
    """
    cc = os.environ.get("SPULSE_TEST_CC") or "gcc"
    need_tools(cc, "objcopy", "dwz", "readelf", "nm", "eu-addr2line")
    src = t.dir + "/work.c"
    with open(src, "wb") as f:
        f.write(WORK_C)
    d = t.dir
    for n, flag in (("a1", []), ("a2", ["-DSECOND"])):
        subprocess.run([cc, "-O2", "-g", *flag, src, "-o", f"{d}/{n}"],
                       check=True)
        subprocess.run(["objcopy", "--only-keep-debug", f"{d}/{n}",
                        f"{d}/{n}.debug"], check=True)
    subprocess.run(["dwz", "-m", f"{d}/common.debug", "-M",
                    f"{d}/common.debug", f"{d}/a1.debug", f"{d}/a2.debug"],
                   check=True)
    subprocess.run(["objcopy", "--strip-debug",
                    f"--add-gnu-debuglink={d}/a1.debug", f"{d}/a1",
                    f"{d}/app"], check=True)
    lo = subprocess.run(["readelf", "-lW", f"{d}/app"], check=True,
                        stdout=subprocess.PIPE).stdout.decode()
    text = None
    for line in lo.splitlines():
        w = line.split()
        if w and w[0] == "LOAD" and "E" in w[6:-1]:
            text = (int(w[2], 16), int(w[1], 16), int(w[5], 16))
    nm = subprocess.run(["nm", "-S", f"{d}/app"], check=True,
                        stdout=subprocess.PIPE).stdout.decode()
    work, size = [(int(l.split()[0], 16), int(l.split()[1], 16))
                  for l in nm.splitlines() if l.split()[-1] == "work"][0]
    expect(text is not None, f"no text segment: {lo}")
    return text, inlined_pc(f"{d}/a1", work, size)


def inlined_pc(path, start, size):
    """The first address of [start, start + size) in helper's inlined code,
    by eu-addr2line on @path: work's first instruction is helper's on
    x86-64, but its frame record's store on AArch64."""
    p = subprocess.run(["eu-addr2line", "-a", "-i", "-f", "-e", path]
                       + [hex(a) for a in range(start, start + size, 4)],
                       check=True, stdout=subprocess.PIPE).stdout.decode()
    for block in re.split(r"^(?=0x)", p, flags=re.M):
        lines = block.splitlines()
        if len(lines) > 1 and lines[1].startswith("helper inlined"):
            return int(lines[0], 16)
    raise Failure(f"eu-addr2line: no address of work in helper: {p!r}")


def speedscope_frames(t, spool):
    out = t.dir + "/s.json"
    run([t.spulse, "export", spool, "-f", "speedscope", "-o", out],
        timeout=30)
    import json
    return json.load(open(out))["shared"]["frames"]


def firefox_frames(t, spool):
    """(function, inlined with a line, source file's base name) per frame:
    speedscope has no lines, the Firefox profile has the call-site line."""
    out = t.dir + "/f.json.gz"
    run([t.spulse, "export", spool, "-f", "firefox", "-o", out], timeout=30)
    import gzip
    import json
    d = json.load(gzip.open(out))
    strings = d["shared"]["stringArray"]
    files = d["shared"]["sources"]["filename"]
    frames = []
    for th in d["threads"]:
        ft, fn = th["frameTable"], th["funcTable"]
        for i in range(ft["length"]):
            f = ft["func"][i]
            src = fn["source"][f]
            name = strings[files[src]] if src is not None else ""
            frames.append((strings[fn["name"][f]],
                           ft["inlineDepth"][i] > 0 and (ft["line"][i] or 0) > 0,
                           os.path.basename(name)))
    return frames


def case_sym_dwz(t):
    """Item 6: a dwz file found safely still gives lines; a FIFO never hangs."""
    text, work = build_work(t)
    spool = t.dir + "/app.spool"
    module_spool(spool, (t.dir + "/app").encode(), text, work)
    frames = firefox_frames(t, spool)
    expect(any(f == ("helper", True, "work.c") for f in frames),
           f"dwz: no inlined helper with file:line: {frames}")
    # The supplementary file replaced by a FIFO: names from .symtab.
    os.rename(t.dir + "/common.debug", t.dir + "/common.real")
    os.mkfifo(t.dir + "/common.debug")
    try:
        frames = speedscope_frames(t, spool)
    except subprocess.TimeoutExpired:
        raise Failure("export blocked on the FIFO named by .gnu_debugaltlink")
    expect(any(f["name"] == "work" for f in frames), f"fifo: {frames}")


def case_sym_fifo_module(t):
    """Item 6: a module path naming a FIFO or a device never blocks."""
    text, work = (0x1000, 0x1000, 0x1000), 0x1100
    fifo = t.dir + "/lib.so"
    os.mkfifo(fifo)
    for path in (fifo, "/dev/zero", "/dev/tty"):
        spool = t.dir + "/fifo.spool"
        module_spool(spool, path.encode(), text, work)
        for cmd in (["report", spool],
                    ["export", spool, "-f", "folded"]):
            try:
                p = run([t.spulse, *cmd], timeout=30)
            except subprocess.TimeoutExpired:
                raise Failure(f"{cmd[0]} blocked opening {path}")
            name = os.path.basename(path).encode() + b"+0x"
            expect(name in p.stdout, f"{cmd[0]} {path}: {p.stdout!r}")


# ---- item 15: control bytes in every text output ----

EVIL = b"evil\x1b]0;owned\x07\x1b[2J\r\x7f\xc2\x9b31m\x9b\xff.end"


def terminal_safe(data):
    """No C0 (but LF), DEL, C1 or invalid UTF-8 in @data."""
    text = data.decode("utf-8", errors="replace")
    if "\ufffd" in text:
        return False
    return not any(c != "\n" and (ord(c) < 0x20 or 0x7f <= ord(c) <= 0x9f)
                   for c in text)


def case_control_bytes(t):
    """Item 15: a JIT name full of control bytes never reaches the terminal."""
    pid = 4194300 + os.getpid() % 3
    if os.path.exists(f"/proc/{pid}"):
        raise Skip(f"pid {pid} is in use")
    pmap = f"/tmp/perf-{pid}.map"
    spool = t.dir + "/evil.spool"
    with open(pmap, "wb") as f:
        f.write(b"401000 100 " + EVIL + b"\n402000 100 caller\n")
    try:
        out = b"SPULSE3\0" + uvar(0) + uvar(0)
        out += b"\x02" + uvar(0) + uvar(1) + uvar(0x402010)
        out += b"\x02" + uvar(1) + uvar(1) + uvar(0x401010)
        out += b"\x03" + uvar(0) + uvar(0xffffffff) + uvar(0)
        out += b"\x03" + uvar(1) + uvar(0) + uvar(1)
        out += b"\x04" + uvar(0) + svar(pid) + uvar(pid)
        out += b"\x05" + svar(1000) + uvar(0) + uvar(1)
        with open(spool, "wb") as f:
            f.write(out)
        svg = t.dir + "/evil.svg"
        runs = [["report", spool], ["report", "--threads", spool],
                ["report", "--folded", spool], ["report", "--tree", spool],
                ["top", "--once", spool],
                ["export", spool, "-f", "folded"],
                ["export", spool, "-f", "folded", "--annotate", "kind"],
                ["export", spool, "-f", "flamegraph", "-o", svg],
                ["export", spool, "-f", "speedscope"]]
        for cmd in runs:
            p = run([t.spulse, *cmd])
            data = open(svg, "rb").read() if "-o" in cmd else p.stdout
            expect(b"evil" in data, f"{cmd}: the frame is missing: {data!r}")
            expect(terminal_safe(data), f"{cmd}: raw control bytes: {data!r}")
            expect(terminal_safe(p.stderr), f"{cmd}: stderr {p.stderr!r}")
        p = run([t.spulse, "export", spool, "-f", "folded"])
        expect(b"evil\\x1b]0:owned\\x07" in p.stdout,
               f"folded escapes: {p.stdout!r}")
    finally:
        os.unlink(pmap)


class Env:
    pass


def run_case(case, args, tmp):
    t = Env()
    t.spulse, t.gen, t.dir = args[0], args[1], tmp
    t.spool = tmp + "/report.spool"
    subprocess.run([t.gen, t.spool], check=True)
    case(t)


if __name__ == "__main__":
    sys.exit(clitest.main(cases(globals()), ["SPULSE", "REPORT_GEN"],
                          "spulse-issue20-", run_case))
