#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes tests/corpus/cfi_parse/ (fuzz_cfi_parse.c's inputs) reproducibly.

    tests/fuzz/make_cfi_parse_seeds.py [--elf /lib/x86_64-linux-gnu/libc.so.6]

Input layout: | flags u8 | vaddr u64 LE | section bytes | (flags: 1 =
.eh_frame dialect, 2 = other byte order, 4 = 32-bit addresses, 8 =
AArch64). The crafted sections are built from the entry layout of the
DWARF 5 / LSB specifications: a valid CIE and FDEs using every CFA
instruction the interpreter knows, then broken ones: truncated CIE, bad
augmentation, huge advances, remember_state past the stack's bound,
FDEs naming themselves or another FDE as CIE, duplicate and nested FDEs.
With --elf, the first 8 KiB of a real .eh_frame are added too.
"""
import argparse
import os
import struct
import subprocess
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, '..', 'corpus', 'cfi_parse')
VADDR = 0x1000


def uleb(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        out.append(b | (0x80 if v else 0))
        if not v:
            return bytes(out)


def sleb(v):
    out = bytearray()
    while True:
        b = v & 0x7f
        v >>= 7
        done = (v == 0 and not b & 0x40) or (v == -1 and b & 0x40)
        out.append(b | (0 if done else 0x80))
        if done:
            return bytes(out)


def pad4(body):
    return body + b'\0' * (-(len(body) + 4) % 4)


def cie(aug=b'zR', insns=b'', version=1, ra=16, extra=b'\x1b'):
    body = struct.pack('<I', 0) + bytes([version]) + aug + b'\0'
    body += uleb(1) + sleb(-8) + (bytes([ra]) if version == 1 else uleb(ra))
    if aug.startswith(b'z'):
        body += uleb(len(extra)) + extra
    body = pad4(body + insns)
    return struct.pack('<I', len(body)) + body


def fde(sec_len, cie_off, start, size, insns=b'', aug=True):
    """An FDE at offset sec_len; pcrel sdata4 location (CIE 'zR' 0x1b)."""
    ptr_field = sec_len + 4
    loc_field = sec_len + 8
    body = struct.pack('<I', ptr_field - cie_off)
    body += struct.pack('<i', start - (VADDR + loc_field))
    body += struct.pack('<I', size) + (uleb(0) if aug else b'') + insns
    body = pad4(body)
    return struct.pack('<I', len(body)) + body


CIE_INSNS = bytes([0x0c, 7, 8, 0x90, 1])  # def_cfa rsp+8; rip at cfa-8

EVERY = b''.join([
    bytes([0x41, 0x0e, 16, 0x86, 2]),       # advance 1; cfa+16; rbp @-16
    bytes([0x42, 0x0d, 6]),                 # advance 2; cfa reg rbp
    bytes([0x0a, 0x43, 0x0e, 64, 0x83, 3]),  # remember; ...; rbx @-24
    bytes([0x0b, 0x44]),                    # restore_state
    bytes([0x02, 9, 0x2e, 0x10]),           # advance_loc1; args_size
    bytes([0x2f, 12, 2]),                   # negative_offset_extended
    bytes([0x03, 4, 0, 0x06, 12]),          # advance_loc2; restore_ext
    bytes([0x07, 14, 0x08, 15, 0x09, 13, 3]),  # undefined, same, register
    bytes([0x10, 3, 2, 0x77, 8]),           # rbx: expression breg7 8
    bytes([0x16, 12, 3, 0x77, 16, 0x06]),   # r12: val_expression
    bytes([0x04, 8, 0, 0, 0]),              # advance_loc4
    bytes([0x0f, 5, 0x77, 8, 0x06, 0x23, 8]),  # def_cfa_expression
    bytes([0x45, 0xc6]),                    # advance; restore rbp
    bytes([0x11, 6, 0x7e, 0x14, 3, 2, 0x15, 12, 0x7f]),  # *_sf, val_off
    bytes([0x12, 7, 0x7e, 0x46, 0x13, 0x7c, 0x2d]),  # def_cfa_sf, window
    bytes([0x01]) + struct.pack('<i', 0x40),  # set_loc (pcrel sdata4)
    bytes([0xc0 | 16, 0x00, 0x00]),         # restore rip; nops
])


def seed(flags, sec, vaddr=VADDR):
    return bytes([flags]) + struct.pack('<Q', vaddr) + sec


def crafted():
    c = cie(insns=CIE_INSNS)
    n = len(c)
    valid = c + fde(n, 0, 0x2000, 0x100, EVERY)
    n2 = len(valid)
    valid += fde(n2, 0, 0x2100, 0x40, bytes([0x44, 0x0e, 32]))
    yield 'valid', seed(1, valid)
    yield 'valid_debug_frame', seed(0, debug_frame())
    yield 'valid_aarch64', seed(9, valid)
    yield 'valid_be', seed(3, valid)
    yield 'valid_32bit', seed(5, valid)
    yield 'truncated_cie', seed(1, c[:11])
    yield 'truncated_fde', seed(1, valid[:n + 13])
    yield 'bad_version', seed(1, cie(version=2, insns=CIE_INSNS) +
                              fde(n, 0, 0x2000, 0x10))
    bad_aug = cie(aug=b'zRQ', insns=CIE_INSNS, extra=b'\x1b')
    yield 'bad_augmentation', seed(1, bad_aug + fde(len(bad_aug), 0,
                                                    0x2000, 0x10))
    long_aug = bytearray(cie(insns=CIE_INSNS))
    long_aug[15] = 0x7f  # augmentation length past the entry
    yield 'bad_augmentation_len', seed(1, bytes(long_aug) +
                                       fde(n, 0, 0x2000, 0x10))
    huge = bytes([0x04, 0xff, 0xff, 0xff, 0xff, 0x0e, 8, 0x04, 1, 0, 0, 0])
    yield 'huge_advance', seed(1, c + fde(n, 0, 0x2000, 0x100, huge))
    back = bytes([0x44, 0x01]) + struct.pack('<i', -0x10000) + b'\x42'
    yield 'set_loc_backwards', seed(1, c + fde(n, 0, 0x2000, 0x100, back))
    deep = b'\x0a' * 40 + b'\x41' + b'\x0b' * 41 + b'\x41'
    yield 'remember_overflow', seed(1, c + fde(n, 0, 0x2000, 0x100, deep))
    yield 'restore_underflow', seed(1, c + fde(n, 0, 0x2000, 0x10, b'\x0b'))
    # An FDE whose CIE pointer names itself, one naming another FDE.
    selfref = c + struct.pack('<IIiI', 12, 4, 0, 0x10)
    yield 'cyclic_fde', seed(1, selfref + fde(len(selfref), n, 0x2000, 8))
    dup = c + fde(n, 0, 0x2000, 0x40, b'\x48\x0e\x10')
    dup += fde(len(dup), 0, 0x2000, 0x80, b'\x41\x0e\x20')
    dup += fde(len(dup), 0, 0x2010, 0x8, b'\x41\x0e\x30')  # nested
    yield 'duplicate_fdes', seed(1, dup)
    big_reg = bytes([0x05]) + uleb(1 << 30) + uleb(1)
    yield 'huge_register', seed(1, c + fde(n, 0, 0x2000, 0x10, big_reg))
    cie_adv = cie(insns=CIE_INSNS + b'\x41')
    yield 'advance_in_cie', seed(1, cie_adv + fde(len(cie_adv), 0, 0x2000,
                                                  0x10))
    long_expr = bytes([0x0f]) + uleb(200) + b'\x30' * 200
    yield 'long_expression', seed(1, c + fde(n, 0, 0x2000, 0x10, long_expr))
    yield 'zero_terminator', seed(1, c + b'\0\0\0\0' + fde(n + 4, 0,
                                                          0x2000, 0x10))


def debug_frame():
    """A version 4 CIE in 64-bit DWARF and an FDE with absolute addresses."""
    body = struct.pack('<Q', 0xffffffffffffffff) + bytes([4]) + b'\0'
    body += bytes([8, 0]) + uleb(4) + sleb(-8) + uleb(16) + CIE_INSNS
    c = struct.pack('<IQ', 0xffffffff, len(body)) + body
    f = struct.pack('<QQQ', 0, 0x3000, 0x80) + EVERY[:40]
    return c + struct.pack('<IQ', 0xffffffff, len(f)) + f


def real_eh_frame(path):
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, 'eh')
        subprocess.run(['objcopy', '-O', 'binary', '--only-section=.eh_frame',
                        path, out], check=True)
        with open(out, 'rb') as f:
            data = f.read()
        addr = subprocess.run(['readelf', '-SW', path], check=True,
                              capture_output=True, text=True).stdout
    vaddr = 0
    for line in addr.splitlines():
        if ' .eh_frame ' in line:
            vaddr = int(line.split('.eh_frame')[1].split()[1], 16)
    return seed(1, data[:8192], vaddr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--elf')
    args = ap.parse_args()
    os.makedirs(OUT, exist_ok=True)
    seeds = list(crafted())
    if args.elf:
        seeds.append(('real_eh_frame', real_eh_frame(args.elf)))
    for name, data in seeds:
        with open(os.path.join(OUT, name), 'wb') as f:
            f.write(data)
    print(f'{len(seeds)} seeds in {OUT}')


if __name__ == '__main__':
    main()
