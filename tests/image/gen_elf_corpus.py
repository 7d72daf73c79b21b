#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus of the `elf` fuzz target (tests/corpus/elf/).
#
# Each seed is a tiny synthetic 64-bit ELF (header, program headers, notes,
# optionally section headers) shaped like one case of src/image: a PIE
# layout, a shared boundary page, an ambiguous page, 8-aligned notes, a
# build-id only in a section, extended numbering (PN_XNUM), wrapping
# segments, plus a few broken ones. The fuzzer mutates from these, so they
# start it next to every branch of the parser and the bias rules.
#
#   usage: gen_elf_corpus.py OUTDIR
import os
import struct
import sys

PT_LOAD, PT_NOTE = 1, 4
PF_X, PF_W, PF_R = 1, 2, 4
SHT_STRTAB, SHT_NOTE = 3, 7
PN_XNUM = 0xFFFF


def note(name, ntype, desc, align=4):
    name_b = name.encode() + b"\0"
    pad = lambda b: b + b"\0" * ((-len(b)) % align)
    hdr = struct.pack("<III", len(name_b), len(desc), ntype)
    return pad(hdr + name_b) + pad(desc)


def ehdr(phnum, shoff=0, shnum=0, shstrndx=0, cls=2):
    ident = b"\x7fELF" + bytes([cls, 1, 1, 0]) + b"\0" * 8
    return ident + struct.pack("<HHIQQQIHHHHHH", 3, 62, 1, 0,
                               64 if phnum else 0, shoff, 0, 64, 56,
                               phnum, 64, shnum, shstrndx)


def phdr(ptype, flags, off, vaddr, filesz, memsz=None, align=0x1000):
    return struct.pack("<IIQQQQQQ", ptype, flags, off, vaddr, vaddr, filesz,
                       filesz if memsz is None else memsz, align)


def shdr(name, stype, off, size, align=1):
    return struct.pack("<IIQQQQIIQQ", name, stype, 0, 0, off, size, 0, 0,
                       align, 0)


def image(loads, notes=b"", note_align=4, sections=False, xnum=False):
    """Header, phdrs (loads + one PT_NOTE if notes), notes, shdrs."""
    nph = len(loads) + (1 if notes else 0)
    head = 64 + 56 * nph
    note_off = head
    body = notes
    shoff = shnum = shstrndx = 0
    shdrs = b""
    if sections:
        names = b"\0.note\0.shstrtab\0"
        names_off = note_off + len(body)
        body += names
        body += b"\0" * ((-(head + len(body))) % 8)
        shoff = head + len(body)
        shdrs = (shdr(0, 0, 0, nph if xnum else 0) +
                 shdr(1, SHT_NOTE, note_off, len(notes), note_align) +
                 shdr(7, SHT_STRTAB, names_off, len(names)))
        if xnum:  # PN_XNUM: the real count lives in shdr[0].sh_info
            shdrs = (struct.pack("<IIQQQQIIQQ", 0, 0, 0, 0, 0, 0, 0, nph,
                                 0, 0) + shdrs[64:])
        shnum, shstrndx = 3, 2
    phs = b"".join(phdr(*l) for l in loads)
    if notes:
        phs += phdr(PT_NOTE, PF_R, note_off, note_off, len(notes),
                    align=note_align)
    hdr = ehdr(PN_XNUM if xnum else nph, shoff, shnum, shstrndx)
    return hdr + phs + body + shdrs


def main():
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    bid = note("GNU", 3, bytes(range(20)))
    prop = note("GNU", 5, struct.pack("<IIII", 0xC0008002, 4, 1, 0), 8)
    pie = [(PT_LOAD, PF_R, 0, 0, 0x628), (PT_LOAD, PF_R | PF_X, 0x1000,
            0x1000, 0x1B5), (PT_LOAD, PF_R, 0x2000, 0x2000, 0x10C),
           (PT_LOAD, PF_R | PF_W, 0x2DF0, 0x3DF0, 0x228, 0x230)]
    seeds = {
        "pie_layout": image(pie, bid, sections=True),
        "shared_tail": image([(PT_LOAD, PF_R | PF_X, 0x1000, 0x1000, 0x1234),
                              (PT_LOAD, PF_R, 0x2234, 0x3234, 0x100)], bid),
        "ambiguous": image([(PT_LOAD, PF_R, 0, 0, 0x1234),
                            (PT_LOAD, PF_R | PF_W, 0x1234, 0x2234, 0x100)]),
        "notes_align8": image([(PT_LOAD, PF_R | PF_X, 0, 0, 0x100)],
                              prop + note("GNU", 3, bytes(20), 8), 8),
        "xnum": image(pie, bid, sections=True, xnum=True),
        "wrapping": image([(PT_LOAD, PF_R | PF_X, 2**64 - 0x1000, 0, 0x2000),
                           (PT_LOAD, PF_R | PF_X, 0x1000, 2**64 - 0x1000,
                            0x1000, 0x2000)]),
        "empty_load": image([(PT_LOAD, PF_R | PF_X, 0x1000, 0x1000, 0x2000),
                             (PT_LOAD, PF_R | PF_W, 0x2100, 0x9100, 0,
                              0x1000)]),
    }
    # A build-id only in a SHT_NOTE section (no PT_NOTE).
    sec = image([(PT_LOAD, PF_R | PF_X, 0, 0, 0x100)], bid, sections=True)
    eh = bytearray(sec)
    struct.pack_into("<I", eh, 64 + 56, 0)  # the PT_NOTE becomes PT_NULL
    seeds["section_note"] = bytes(eh)
    seeds["truncated_phdrs"] = seeds["pie_layout"][:150]
    seeds["elf32"] = ehdr(0, cls=1) + b"\0" * 64
    bad = bytearray(seeds["shared_tail"])
    struct.pack_into("<I", bad, 64 + 56 * 3 + 4, 0xFFFF)  # n_descsz
    seeds["note_overrun"] = bytes(bad)
    for name, data in seeds.items():
        with open(os.path.join(out, name + ".elf"), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
