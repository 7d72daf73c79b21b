#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes the seed inputs of tests/corpus/<target>/ reproducibly.

    tests/fuzz/make_seeds.py [--lib build/src/libstackpulse.so]

Vector seeds come from SPULSE3 §11 (V1..V8 and the R/T/L table), typed in
from the spec. With --lib, a few valid spools are also produced by the
library's own writer (through ctypes), plain and zstd, so the readers'
targets start from realistic files. Writer-target seeds are small command
programs (see fuzz_writer_roundtrip.c for the byte layout). Files named
regress-* are minimized crash inputs, fz-* inputs kept from libFuzzer runs
(coverage-merged); neither is touched here.
"""
import argparse
import ctypes
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, '..', 'corpus')
H = bytes.fromhex('53 50 55 4c 53 45 33 00 00 00')


def hx(s):
    return bytes.fromhex(s)


V2 = hx('53 50 55 4c 53 45 33 00 7b 0a'
        '01 00 0e 80 20 80 40 80 02 01 08 01 00 00 06 2f 66 69 72 73 74'
        '02 00 00 90 02'
        '03 00 ff ff ff ff 0f 00'
        '04 00 0e 0b'
        '05 d0 0f 00 00')
V3 = V2 + hx('02 01 01 90 60  03 01 00 01  05 a0 1f 00 01')
V5 = hx('53 50 55 4c 53 45 33 00 00 00'
        '01 00 0e 80 80 80 02 80 a0 80 02 00 00 00 00 00 00 08'
        '2f 62 69 6e 2f 61 70 70'
        '01 01 01 80 80 80 88 f8 ff ff ff ff 01 80 80 84 88 f8 ff ff ff ff 01'
        '00 00 00 00 00 01 08 5b 6b 65 72 6e 65 6c 5d'
        '06 f4 03 0e 01'
        '02 00 05 00'
        '03 00 ff ff ff ff 0f 00'
        '02 01 01 a3 82 80 02'
        '03 01 00 01'
        '02 02 03 90 80 80 88 f8 ff ff ff ff 01'
        '03 02 01 02'
        '04 00 0e 07'
        '05 d0 0f 00 02'
        '08 00'
        '07 0e'
        '02 03 01 a3 82 80 02'
        '03 03 ff ff ff ff 0f 03'
        '04 01 0e 08'
        '05 c7 01 01 03')
V6_ORIG = hx('53 50 55 4c 53 45 33 00 7b 0a 02 00 01 80 20 03 00 ff ff ff ff'
             '0f 00 04 00 0e 0b 05 d0 0f 00 00'
             '02 01 01 80 40 03 01 ff ff ff ff 0f 01 05 d0 0f 00 01')
V6 = V6_ORIG[:33] + bytes([0x80] * 9 + [0x02]) + V6_ORIG[43:]
R2_MOD = hx('01 00 0e 80 20 80 40 80 02 00 00 00 00 00 01 6d')

VECTORS = {
    'v1-header-only': H,
    'v1b-header-values': hx('53 50 55 4c 53 45 33 00 80 80 f9 c0 c1 c4 82 03'
                            'e8 07'),
    'v2-one-sample': V2,
    'v3-two-samples': V3,
    'v3-cut-66': V3[:-1],
    'v4-forward-ref': hx('53 50 55 4c 53 45 33 00 00 00 03 00 ff ff ff ff'
                         '0f 00'),
    'v4b-frame-id-1': hx('53 50 55 4c 53 45 33 00 00 00 02 01 01 80 20'),
    'v5-kernel-marker-retire': V5,
    'v6-original': V6_ORIG,
    'v6-corrupt-varint': V6,
    'v7-stray-ff': V6_ORIG + b'\xff',
    'v7-stray-05': V6_ORIG + b'\x05',
    'v8-legacy-magic': hx('53 50 55 4c 53 45 32 00 00 00'),
    'r1-user-pid0': H + hx('01 00 00 80 20 80 40 00 00 00 00 00 00 00'),
    'r2a-outside-span': H + R2_MOD + hx('02 00 00 80 22'),
    'r2b-below-offset': H + R2_MOD + hx('02 00 00 80 01'),
    'r2c-last-byte': H + R2_MOD + hx('02 00 00 ff 21'),
    'r2d-missing-module': H + R2_MOD + hx('02 00 02 80 02'),
    'r3-marker-payload': H + hx('02 00 05 01'),
    'r3b-marker': H + hx('02 00 05 00'),
    'r4-no-thread': H + hx('02 00 01 80 20 03 00 ff ff ff ff 0f 00'
                           '05 d0 0f 00 00'),
    'r4b-self-parent': H + hx('02 00 01 80 20 03 00 00 00'),
    'r5-tid0': H + hx('04 00 0e 00'),
    'r5b-tid-2p31': H + hx('04 00 0e 80 80 80 80 08'),
    'r6-negative-first-delta': H + hx('02 00 01 80 20 03 00 ff ff ff ff 0f'
                                      '00 04 00 0e 07 05 01 00 00'),
    'r7-bad-utf8': H + hx('01 00 0e 80 20 80 40 80 02 00 00 00 00 00 01 ff'),
    'r8-retire-missing': H + hx('08 00'),
    'r9-overlong-id': H + hx('02 80 00 01 80 20'),
    't1-tag-only': H + hx('01'),
    't2-nine-80': H + hx('02') + bytes([0x80] * 9),
    't3-ten-80': H + hx('02') + bytes([0x80] * 10),
    'l1-huge-path': H + hx('01 00 0e 80 20 80 40 00 00 00 00 00 00 80 80 80'
                           '80 80 20 2f 78 02 00 01 80 20'),
}

VARINTS = {
    'zero': '00', 'overlong-zero': '80 00', 'max': 'ff ff ff ff ff ff ff ff ff 01',
    'overlong-2p63m1': 'ff ff ff ff ff ff ff ff ff 00',
    'tenth-02': 'ff ff ff ff ff ff ff ff ff 02',
    'tenth-80': '80 80 80 80 80 80 80 80 80 80 00',
    'short': '80 80 80', 'zz-1000': 'd0 0f', 'zz-m100': 'c7 01',
    'zz-2p31': '80 80 80 80 10', 'zz-m2p31': 'ff ff ff ff 0f',
    'mixed': '7f 80 01 ff 7f 80 80 01 00 81 00',
}


def program(*ops):
    """Writer program: chunk byte, id-limit byte, start byte, then ops."""
    return bytes(ops)


WRITER_PROGRAMS = {
    # chunk 16, no id limit, start 5: module, then two samples pinned/unpinned
    'module-pinned-sample': program(
        0, 0, 5,
        0, 0x02, 1, 1, 1, 7, 8, 1, 0, 1,       # user module pid 1 "/bin/app"
        1, 1, 1, 1, 2, 2, 1, 0, 0x10,          # sample: pinned, unpinned
        1, 2, 1, 1, 1, 3, 0,                   # sample: marker only
        6, 0, 8, 9, 2, 3),                     # repeat, other pid/tid
    'kernel-python-retire': program(
        3, 0, 0,
        0, 0x01, 0, 1, 0, 0, 0, 0, 0, 2,       # kernel module "[kernel]"
        0, 0x04, 2, 3, 1, 1, 1, 1, 1, 1,       # user module pid 2
        2, 5, 2, 1,                            # python pid 2 entered
        1, 1, 2, 1, 3, 2, 0, 1, 1, 3, 0,       # kernel+user+marker frames
        4, 1, 3, 2, 5,                         # retire module 1, pid 2, flush
        1, 4, 2, 1, 1, 0, 3),
    'invalid-calls': program(
        1, 0, 0,
        0, 0x00, 1, 1, 0, 0, 0, 0, 0, 4,       # pid 0, bad utf-8: rejected
        1, 1, 0, 1, 1, 0, 1,                   # pid 0: rejected
        1, 0xff, 1, 1, 1, 0, 1,                # ts u64 max: delta out of range
        1, 1, 1, 1, 1, 4, 0,                   # invalid mode
        1, 1, 1, 1, 1, 3, 7,                   # marker with payload
        4, 5, 3, 0, 2, 1, 0, 0),
    'id-limit': program(
        2, 0x81, 0,
        7, 1, 1, 1, 40, 3, 7, 2, 1, 1, 30, 9, 1, 1, 1, 2, 0, 1, 0, 2),
    'deep-stacks': program(
        60, 0, 9,
        7, 1, 1, 1, 63, 0, 7, 2, 1, 2, 63, 1, 6, 0, 7, 3, 2, 2, 10, 5),
}


def write(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), 'wb') as f:
        f.write(data)


# ---- valid spools from the library's writer (ctypes) ----

class Frame(ctypes.Structure):
    _fields_ = [('abs_ip', ctypes.c_uint64), ('file_relative_ip', ctypes.c_uint64),
                ('module_id', ctypes.c_uint32), ('mode', ctypes.c_uint32)]


class Module(ctypes.Structure):
    _fields_ = [('start', ctypes.c_uint64), ('end', ctypes.c_uint64),
                ('file_offset', ctypes.c_uint64), ('inode', ctypes.c_uint64),
                ('inode_generation', ctypes.c_uint64),
                ('dev_major', ctypes.c_uint32), ('dev_minor', ctypes.c_uint32),
                ('pid', ctypes.c_int32), ('is_kernel', ctypes.c_uint32),
                ('path', ctypes.c_char_p), ('path_len', ctypes.c_size_t),
                ('id', ctypes.c_uint32), ('deactivated_at', ctypes.c_uint32)]


class WriterOpts(ctypes.Structure):
    _fields_ = [('size', ctypes.c_size_t), ('allocator', ctypes.c_void_p),
                ('start_timestamp_us', ctypes.c_uint64),
                ('sample_interval_us', ctypes.c_uint64),
                ('chunk_size', ctypes.c_size_t), ('id_limit', ctypes.c_uint32)]


def writer_spool(lib, seed, nsamples, zstd, chunk):
    """A random but valid recording: modules, samples, retirements."""
    rng = random.Random(seed)
    vp = ctypes.c_void_p
    mem, sink, w = vp(), vp(), vp()
    assert lib.sp_sink_new_memory(None, ctypes.byref(mem)) == 0
    sink = vp(mem.value)
    if zstd:
        # NULL options: the default level, 3.
        assert lib.sp_sink_new_zstd(mem, None, ctypes.byref(sink)) == 0
    opts = WriterOpts(ctypes.sizeof(WriterOpts), None, 1700000000000000,
                      1000, chunk, 0)
    assert lib.sp_writer_new(sink, ctypes.byref(opts), ctypes.byref(w)) == 0
    mods = []
    ts = 1000
    for i in range(nsamples):
        r = rng.random()
        if r < 0.05 or not mods:
            kernel = rng.random() < 0.2
            start = 0xffffffff81000000 if kernel else 0x400000 * rng.randint(1, 4)
            path = b'[kernel]' if kernel else b'/usr/lib/lib%d.so' % len(mods)
            m = Module(start, start + 0x10000, 0x1000 * rng.randint(0, 3), 5 + i,
                       0, 8, 1, -1 if kernel else rng.randint(1, 3),
                       int(kernel), path, len(path), 0, 0)
            assert lib.sp_writer_module(w, ctypes.byref(m), None) == 0
            mods.append(m)
        elif r < 0.07:
            lib.sp_writer_deactivate_module(w, rng.randrange(len(mods)))
        elif r < 0.08:
            lib.sp_writer_python_runtime(w, ts, rng.randint(1, 3), True)
        n = rng.randint(1, 12)
        frames = (Frame * n)()
        for j in range(n):
            k = rng.random()
            if j == n - 1 and k < 0.1:
                frames[j] = Frame(0, 0, 0xffffffff, 2)
            elif k < 0.5:
                mi = rng.randrange(len(mods))
                m = mods[mi]
                rel = m.file_offset + rng.randrange(0, 0x10000, 16)
                frames[j] = Frame(m.start + rel - m.file_offset, rel, mi, m.is_kernel)
            else:
                a = 0x400000 + rng.randrange(0, 0x40000, 16)
                frames[j] = Frame(a, a, 0xffffffff, 0)
        ts += rng.randint(-500, 20000)
        err = lib.sp_writer_sample(w, ctypes.c_uint64(ts), rng.randint(1, 3),
                                   rng.randint(1, 5), frames, ctypes.c_size_t(n))
        assert err == 0, err
    assert lib.sp_writer_finish(w) == 0
    data, length = ctypes.c_void_p(), ctypes.c_size_t()
    assert lib.sp_sink_memory_data(mem, ctypes.byref(data), ctypes.byref(length)) == 0
    out = ctypes.string_at(data, length.value)
    lib.sp_writer_free(w)
    return out


def writer_seeds(libpath):
    lib = ctypes.CDLL(libpath)
    lib.sp_writer_sample.argtypes = [ctypes.c_void_p, ctypes.c_uint64,
                                     ctypes.c_int32, ctypes.c_int32,
                                     ctypes.c_void_p, ctypes.c_size_t]
    for name in ('sp_writer_module', 'sp_writer_deactivate_module',
                 'sp_writer_python_runtime', 'sp_writer_finish', 'sp_writer_free'):
        getattr(lib, name).argtypes = None
    lib.sp_writer_deactivate_module.argtypes = [ctypes.c_void_p, ctypes.c_uint32]
    lib.sp_writer_python_runtime.argtypes = [ctypes.c_void_p, ctypes.c_uint64,
                                             ctypes.c_int32, ctypes.c_bool]
    lib.sp_writer_module.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.sp_writer_finish.argtypes = [ctypes.c_void_p]
    lib.sp_writer_free.argtypes = [ctypes.c_void_p]
    lib.sp_sink_new_zstd.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                     ctypes.c_void_p]
    lib.sp_writer_new.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p]
    lib.sp_sink_memory_data.argtypes = [ctypes.c_void_p, ctypes.c_void_p,
                                        ctypes.c_void_p]
    for seed, n, chunk in ((1, 20, 256), (2, 150, 1024), (3, 600, 4096)):
        plain = writer_spool(lib, seed, n, False, chunk)
        z = writer_spool(lib, seed, n, True, chunk)
        for t in ('snapshot', 'replay_tail'):
            write(t, 'writer-%d-plain' % seed, plain)
            write(t, 'writer-%d-zstd' % seed, z)
            write(t, 'writer-%d-zstd-torn' % seed, z[:-3])
        write('decode', 'writer-%d-plain' % seed, plain)
    bomb_seeds(lib)


def zstd_of(lib, data):
    """One zstd frame of @data, from the library's own zstd sink."""
    vp = ctypes.c_void_p
    mem, z = vp(), vp()
    assert lib.sp_sink_new_memory(None, ctypes.byref(mem)) == 0
    # NULL options: the default level, 3.
    assert lib.sp_sink_new_zstd(mem, None, ctypes.byref(z)) == 0
    lib.sp_sink_write.argtypes = [vp, ctypes.c_char_p, ctypes.c_size_t]
    assert lib.sp_sink_write(z, data, len(data)) == 0
    out, length = vp(), ctypes.c_size_t()
    assert lib.sp_sink_memory_data(mem, ctypes.byref(out),
                                   ctypes.byref(length)) == 0
    frame = ctypes.string_at(out, length.value)
    lib.sp_sink_free.argtypes = [vp]
    lib.sp_sink_free(z)
    return frame


def uvarint(v):
    out = b''
    while True:
        out += bytes([(v & 0x7f) | (0x80 if v > 0x7f else 0)])
        v >>= 7
        if not v:
            return out


PATH_MAX_SPOOL = 1 << 20   # SP_SPOOL_PATH_MAX


def module_claim(claim):
    """A user module record whose path claims @claim bytes (no bytes)."""
    return hx('01 00 0e 80 20 80 40 00 00 00 00 00 00') + uvarint(claim)


def bomb_seeds(lib):
    """Issue 20 item 10: path claims past SP_SPOOL_PATH_MAX, zstd and plain."""
    seeds = {
        # zstd, the bytes are there: corrupt, decided in constant memory
        'zstd-path-over-max': zstd_of(lib, H + module_claim(
            PATH_MAX_SPOOL + 1) + b'a' * (PATH_MAX_SPOOL + 1)),
        # zstd, a 64 MiB claim with 256 KiB behind it: a cut-off tail
        'zstd-path-claim-cut': zstd_of(lib, H + module_claim(64 << 20) +
                                       b'a' * (256 << 10)),
        # plain, a 2 MiB claim in a short file: a cut-off tail (L1)
        'path-over-max-cut': H + module_claim(2 << 20) + b'/x' * 50,
    }
    for name, data in seeds.items():
        for t in ('snapshot', 'replay_tail'):
            write(t, name, data)


# ---- fuzz_unwind: records a stack is synthesized from ----
# Header | cfg | param | nrec | trim | drop | abi |, then records
# | map u8 | offset u24 | slack u8 | flags u8 | fill u16 | and patches
# | word u16 | tagged u32 | (see fuzz_unwind.c). Maps: 0 the program,
# 1 libc, 2 ld.so, 3 the vDSO, >= 0xf0 unmapped; offsets are file
# relative, so seeds survive ASLR.

def unwind_rec(m, off, slack=0, flags=0, fill=0):
    return bytes([m]) + off.to_bytes(3, 'little') + bytes([slack, flags]) + \
        fill.to_bytes(2, 'little')


def unwind_seed(rng, nrec, cfg=0, param=0, trim=0, drop=0, abi=0,
                maps=(0, 1, 1, 1, 2), flags=(0,), npatch=0):
    recs = b''.join(unwind_rec(rng.choice(maps), rng.randrange(1 << 24),
                               rng.randrange(8), rng.choice(flags),
                               rng.randrange(1 << 16)) for _ in range(nrec))
    patches = b''.join(rng.randrange(1 << 16).to_bytes(2, 'little') +
                       rng.randrange(1 << 32).to_bytes(4, 'little')
                       for _ in range(npatch))
    return bytes([cfg, param, nrec, trim, drop, abi]) + recs + patches


def unwind_seeds():
    rng = random.Random(7)
    seeds = {
        'empty-header': bytes(6),
        'leaf-only': unwind_seed(rng, 1),
        'unmapped-fp-chain': unwind_seed(rng, 30, maps=(0xf0, 0xf5)),
        'vdso-leaf': unwind_seed(rng, 3, maps=(3,)),
        'ld-so': unwind_seed(rng, 24, maps=(2,)),
        'ra-plus': unwind_seed(rng, 40, flags=(0, 0, 4)),
        'no-ra': unwind_seed(rng, 40, flags=(0,) * 12 + (2,)),
        'end-midway': unwind_seed(rng, 50, flags=(0,) * 20 + (1,)),
        'patched': unwind_seed(rng, 60, npatch=24),
        'patched-heavy': unwind_seed(rng, 30, npatch=64),
        'drop-rbp': unwind_seed(rng, 30, cfg=0x10, drop=6),
        'drop-rip': unwind_seed(rng, 10, cfg=0x10, drop=16),
        'drop-rbx': unwind_seed(rng, 40, cfg=0x10, drop=3),
        'abi-none': unwind_seed(rng, 8, cfg=0x20, abi=0),
        'abi-32': unwind_seed(rng, 8, cfg=0x20, abi=1),
        'trim-all': unwind_seed(rng, 2, cfg=0x40, trim=255),
        'long-128': unwind_seed(rng, 128),
        # 0x80: 40 rounds of the records, past the 256 pending saves
        'repeat-deep': unwind_seed(rng, 12, cfg=0x80),
        'repeat-libc': unwind_seed(rng, 9, cfg=0x80, maps=(1,)),
        'repeat-ld': unwind_seed(rng, 7, cfg=0x80, maps=(2,)),
        'repeat-1024': unwind_seed(rng, 30, cfg=0x80, maps=(1, 2)),
        'repeat-small-depth': unwind_seed(rng, 40, cfg=0x8c, param=0x3f),
        'repeat-trim': unwind_seed(rng, 10, cfg=0xc0, trim=77),
    }
    for i in range(12):
        seeds['deep-%d' % i] = unwind_seed(rng, rng.randrange(30, 100))
    for i in range(4):
        seeds['trim-%d' % i] = unwind_seed(rng, 40, cfg=0x40,
                                           trim=rng.randrange(1, 256))
        seeds['small-cap-%d' % i] = unwind_seed(rng, 40, cfg=0x03,
                                                param=rng.randrange(256))
        seeds['small-depth-%d' % i] = unwind_seed(rng, 40, cfg=0x0c,
                                                  param=i << 4 | 15)
        seeds['cap-and-depth-%d' % i] = unwind_seed(
            rng, 40, cfg=0x0f, param=rng.randrange(256))
    for name, data in seeds.items():
        write('unwind', name, data)


# JIT trampoline templates (fuzz_jit_table.c): code bytes of a target.
JIT_TEMPLATES = {
    'cpython312': '48 83 ec 08 ff d1 48 83 c4 08 c3',
    'cpython-fp': '55 48 89 e5 ff d1 5d c3',
    'leave': 'f3 0f 1e fa 55 48 89 e5 48 83 ec 20 41 ff d3 c9 c3',
    'saves': '53 41 54 48 81 ec 00 01 00 00 e8 00 00 00 00 48 81 c4 00 01 00 00'
             ' 41 5c 5b c3',
    'tail-jump': '48 83 ec 08 ff d0 48 83 c4 08 ff e0',
    'padded': '48 83 ec 08 ff d1 48 83 c4 08 c3 90 90 90 90 90',
    'no-call': '48 83 ec 08 48 83 c4 08 c3',
    'unbalanced': '48 83 ec 08 ff d1 c3',
    'cut': '48 83 ec 08 ff',
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--lib', help='path to libstackpulse.so for writer spools')
    args = ap.parse_args()
    for name, data in VECTORS.items():
        for t in ('decode', 'snapshot', 'replay_tail'):
            write(t, name, data)
        # Without the header: fuzz_decode puts the default one in front.
        if data.startswith(H) and len(data) > len(H):
            write('decode', name + '-body', data[len(H):])
    for name, s in VARINTS.items():
        write('varint', name, hx(s))
    for name, data in WRITER_PROGRAMS.items():
        write('writer_roundtrip', name, data)
    rng = random.Random(42)
    for i in range(8):
        write('writer_roundtrip', 'random-%d' % i,
              bytes(rng.randrange(256) for _ in range(rng.randint(16, 400))))
    unwind_seeds()
    for name, s in JIT_TEMPLATES.items():
        write('jit_table', name, hx(s))
    # A whole CPython 3.12 arena: 64 KiB of 11-byte copies, zeros after.
    tpl = hx(JIT_TEMPLATES['cpython312'])
    arena = tpl * (65536 // len(tpl))
    write('jit_table', 'arena-cpython312', arena + bytes(65536 - len(arena)))
    if args.lib:
        writer_seeds(args.lib)


if __name__ == '__main__':
    main()
