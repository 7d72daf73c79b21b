#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed inputs of tests/corpus/jitdump/ and tests/corpus/gdbjit/.

    tests/fuzz/make_jit_seeds.py [--cc cc]

jitdump seeds are jitdump files laid out as tools/perf/util/jitdump.h
describes: well-formed ones modelled on what CPython 3.13 -X perf_jit and
node --perf-prof write (code loads, debug info, unwinding info, moves,
reused addresses), and one of each way a file can be cut off or wrong.
gdbjit seeds are models of a target's memory (fuzz_gdbjit.c: 8 bytes of
descriptor offset, then the bytes mapped at 0x10000) holding a descriptor,
an entry list and ELF objects; the object is a small C function compiled
with --cc into a relocatable object whose .text header is given a load
address, as LLVM's JIT does. Files named real-* (captured from the real
producers) and fz-*/regress-* (kept from fuzzing) are not touched.
"""
import argparse
import os
import struct
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, '..', 'corpus')

# CPython 3.13's trampoline unwinding data: .eh_frame (CIE + one FDE,
# pc-relative) then .eh_frame_hdr, as its dump carries them.
PY_EH = bytes.fromhex(
    '1400000000000000017a5200017810011b0c070890010000'
    '140000001c000000d0ffffff0b00000000440e10460e0800')
PY_HDR = bytes.fromhex('011b033bccffffff01000000c0ffffffe8ffffff')
PY_CODE = bytes.fromhex('4883ec08ffd14883c408c3')


def header(pid=4242, flags=0, version=1, size=40, magic=0x4A695444,
           fmt='<'):
    h = struct.pack(fmt + 'IIIIIIQQ', magic, version, size, 62, 0, pid,
                    1000, flags)
    return h + b'\0' * (size - 40)


def rec(rid, ts, body, fmt='<', size=None):
    n = 16 + len(body) if size is None else size
    return struct.pack(fmt + 'IIQ', rid, n, ts) + body


def load(ts, addr, name, code, index, pid=4242, fmt='<'):
    body = struct.pack(fmt + 'IIQQQQ', pid, pid, addr, addr, len(code),
                       index) + name + b'\0' + code
    return rec(0, ts, body, fmt)


def move(ts, old, new, size, index, pid=4242):
    return rec(1, ts, struct.pack('<IIQQQQQ', pid, pid, new, old, new, size,
                                  index))


def debug(ts, addr, entries):
    body = struct.pack('<QQ', addr, len(entries))
    for a, line, fname in entries:
        body += struct.pack('<Qii', a, line, 0) + fname + b'\0'
    return rec(2, ts, body)


def unwind(ts, eh=PY_EH, hdr=PY_HDR):
    data = eh + hdr
    pad = b'\0' * (-len(data) % 8)
    return rec(4, ts, struct.pack('<QQQ', len(data), len(hdr),
                                  len(data) + len(pad)) + data + pad)


def python_like():
    out = header()
    base = 0x7f0000001000
    for i, fn in enumerate([b'py::fib:/tmp/a.py', b'py::main:/tmp/a.py',
                            b'py::<module>:/tmp/a.py']):
        out += unwind(2000 + 10 * i)
        out += load(2001 + 10 * i, base + 0x110 * i, fn, PY_CODE, i + 1)
    return out


def node_like():
    out = header()
    code = b'\x55\x48\x89\xe5' + b'\x90' * 60 + b'\x5d\xc3'
    out += unwind(3000, eh=b'', hdr=bytes.fromhex('011b033b' + '00' * 16))
    out += load(3001, 0x1000, b'Builtin:ArgumentsAdaptorTrampoline', code, 0)
    out += debug(3002, 0x2000, [(0x2040, 1, b'/tmp/x.js'),
                                (0x2050, 2, b'/tmp/x.js'),
                                (0x2060, 3, b'node:internal/util')])
    out += load(3003, 0x2000, b'JS:*leaf /tmp/x.js:1:14', code, 1)
    out += move(3004, 0x2000, 0x3000, len(code), 1)
    # Freed and reused: a later load over the same addresses.
    out += load(3005, 0x2000, b'JS:~other /tmp/x.js:9:1', code, 2)
    out += rec(3, 3006, b'')
    return out


def seeds():
    s = {}
    py = python_like()
    s['python-like.dump'] = py
    s['node-like.dump'] = node_like()
    s['header-only.dump'] = header()
    s['header-long.dump'] = header(size=64)
    s['truncated-record.dump'] = py[:-7]
    s['truncated-header.dump'] = py[:20]
    s['swapped.dump'] = (header(fmt='>', magic=0x4A695444) +
                         load(5, 0x1000, b'swapped', b'\xc3', 1, fmt='>'))
    s['arch-timestamp.dump'] = header(flags=1) + load(5, 0x1000, b'a',
                                                      b'\xc3', 1)
    s['bad-version.dump'] = header(version=2)
    s['bad-flags.dump'] = header(flags=1 << 7)
    s['bad-magic.dump'] = b'XXXX' + header()[4:]
    s['small-record.dump'] = header() + rec(0, 1, b'', size=8)
    s['huge-record.dump'] = header() + rec(0, 1, b'', size=0x7fffffff)
    s['name-no-nul.dump'] = header() + rec(0, 1, struct.pack(
        '<IIQQQQ', 1, 1, 0x1000, 0x1000, 0, 0) + b'noterm')
    s['code-past-end.dump'] = header() + rec(0, 1, struct.pack(
        '<IIQQQQ', 1, 1, 0x1000, 0x1000, 1 << 40, 0) + b'x\0')
    s['debug-count.dump'] = header() + rec(2, 1, struct.pack(
        '<QQ', 0x1000, 1 << 60))
    s['unwind-sizes.dump'] = header() + rec(4, 1, struct.pack(
        '<QQQ', 1 << 50, 1 << 51, 0))
    s['unknown-id.dump'] = header() + rec(77, 1, b'\1\2\3\4') + \
        load(2, 0x1000, b'after-unknown', b'\xc3', 1)
    s['wrapping-code.dump'] = header() + load(1, (1 << 64) - 4, b'wrap',
                                              b'\xc3' * 8, 1)
    return s


# ---- gdbjit ----------------------------------------------------------------

BASE = 0x10000

C_SRC = b'''
extern void callee(void);
int jit_leaf(int n) { int s = 0; for (int i = 0; i < n; i++) s += i * 3; return s; }
void jit_caller(void) { callee(); callee(); }
'''


def compile_object(cc):
    with tempfile.TemporaryDirectory() as d:
        src, obj = os.path.join(d, 'o.c'), os.path.join(d, 'o.o')
        open(src, 'wb').write(C_SRC)
        subprocess.run([cc, '-O2', '-fasynchronous-unwind-tables', '-c',
                        src, '-o', obj], check=True)
        return bytearray(open(obj, 'rb').read())


def set_text_addr(obj, addr):
    """Gives .text a load address (.eh_frame a page below), as RuntimeDyld
    does for GDB."""
    shoff, = struct.unpack_from('<Q', obj, 0x28)
    shnum, shstrndx = struct.unpack_from('<HH', obj, 0x3c)
    str_off, = struct.unpack_from('<Q', obj, shoff + shstrndx * 64 + 24)
    for i in range(shnum):
        sh = shoff + i * 64
        name_off, = struct.unpack_from('<I', obj, sh)
        end = obj.index(b'\0', str_off + name_off)
        if obj[str_off + name_off:end] == b'.text':
            struct.pack_into('<Q', obj, sh + 16, addr)
        if obj[str_off + name_off:end] == b'.eh_frame':
            struct.pack_into('<Q', obj, sh + 16, addr - 0x1000)
    return bytes(obj)


def memory(desc_at, blob):
    return struct.pack('<Q', desc_at) + blob


def gdb_seeds(cc):
    s = {}
    obj = set_text_addr(compile_object(cc), 0x7f1234560000)
    # Layout: descriptor at 0, entries at 0x40.., objects from 0x200.
    def image(entries, desc_version=1):
        blob = bytearray(0x200 + len(obj) * len(entries) + 64)
        first = BASE + 0x40 if entries else 0
        struct.pack_into('<IIQQ', blob, 0, desc_version, 1, first, first)
        for i, nxt in enumerate(entries):
            at = 0x40 + 32 * i
            obj_at = 0x200 + len(obj) * i
            blob[obj_at:obj_at + len(obj)] = obj
            struct.pack_into('<QQQQ', blob, at, nxt, 0, BASE + obj_at,
                             len(obj))
        return bytearray(blob)
    two = image([BASE + 0x60, 0])
    s['two-objects.mem'] = memory(0, bytes(two))
    loop = image([BASE + 0x60, BASE + 0x40])
    s['loop.mem'] = memory(0, bytes(loop))
    unmapped = image([0xdead0000, 0])
    s['unmapped-next.mem'] = memory(0, bytes(unmapped))
    absurd = image([0])
    struct.pack_into('<Q', absurd, 0x40 + 24, 1 << 40)
    s['absurd-size.mem'] = memory(0, bytes(absurd))
    s['bad-version.mem'] = memory(0, bytes(image([0], desc_version=7)))
    # 5,000 entries: past the 4,096-object bound.
    n = 5000
    blob = bytearray(0x40 + 32 * n + len(obj))
    struct.pack_into('<IIQQ', blob, 0, 1, 1, BASE + 0x40, BASE + 0x40)
    obj_at = 0x40 + 32 * n
    blob[obj_at:] = obj
    for i in range(n):
        nxt = BASE + 0x40 + 32 * (i + 1) if i + 1 < n else 0
        struct.pack_into('<QQQQ', blob, 0x40 + 32 * i, nxt, 0,
                         BASE + obj_at, len(obj))
    s['too-many.mem'] = memory(0, bytes(blob))
    return s


def write(target, files):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(d, name), 'wb') as f:
            f.write(data)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--cc', default='cc')
    a = ap.parse_args()
    write('jitdump', seeds())
    write('gdbjit', gdb_seeds(a.cc))


if __name__ == '__main__':
    main()
