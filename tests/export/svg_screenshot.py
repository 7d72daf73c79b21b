#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Optional suite: headless Chromium draws the golden flame graphs; frames must show.
#
# Usage: svg_screenshot.py GOLDEN_DIR
# Screenshots golden/basic.{flamegraph,icicle}.svg and golden/empty.flamegraph.svg
# (test_golden.c guarantees they are exactly what the exporter writes) and
# counts "frame" pixels: strongly coloured ones (max - min channel > 60),
# which the background, the text and the grey truncation marker are not.
# The basic graphs must paint thousands of them and far more than the empty
# graph, whose only coloured pixels are its Search button. A blank page, a
# script error that hides the frames or an SVG the browser rejects fails.
# Exit 77 (skip) when no chromium is installed; no pixel library is needed
# (the PNG is decoded with zlib here).
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def unfilter(raw, width, height, bpp):
    stride = width * bpp
    rows, prev, pos = [], bytearray(stride), 0
    for _ in range(height):
        ftype, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b, c = prev[i], prev[i - bpp] if i >= bpp else 0
            line[i] = (line[i] + (0, a, b, (a + b) // 2, paeth(a, b, c))[ftype]) & 0xff
        rows.append(line)
        prev = line
    return rows


def coloured_pixels(png):
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG")
    pos, idat, hdr = 8, b"", None
    while pos < len(png):
        n, kind = struct.unpack(">I4s", png[pos:pos + 8])
        body = png[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            hdr = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    width, height, depth, ctype, _, _, interlace = hdr
    if depth != 8 or ctype not in (2, 6) or interlace:
        raise ValueError(f"unsupported PNG (depth {depth}, type {ctype})")
    bpp = 4 if ctype == 6 else 3
    count = 0
    for row in unfilter(zlib.decompress(idat), width, height, bpp):
        for x in range(0, len(row), bpp):
            r, g, b = row[x], row[x + 1], row[x + 2]
            if max(r, g, b) - min(r, g, b) > 60:
                count += 1
    return count


def shot(browser, svg, tmp):
    out = os.path.join(tmp, os.path.basename(svg) + ".png")
    subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                    "--hide-scrollbars", "--user-data-dir=" + tmp,
                    "--window-size=1200,300", "--screenshot=" + out,
                    "file://" + os.path.abspath(svg)],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   timeout=120, check=True)
    with open(out, "rb") as f:
        return coloured_pixels(f.read())


def main():
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    if not browser:
        print("chromium not installed: skipped")
        sys.exit(77)
    golden = sys.argv[1]
    with tempfile.TemporaryDirectory(prefix="sp-svgshot-") as tmp:
        empty = shot(browser, os.path.join(golden, "empty.flamegraph.svg"), tmp)
        for name in ("basic.flamegraph.svg", "basic.icicle.svg"):
            n = shot(browser, os.path.join(golden, name), tmp)
            print(f"{name}: {n} frame pixels (empty graph: {empty})")
            if n < 5000 or n < 10 * max(empty, 1):
                print(f"{name}: the frames are not drawn", file=sys.stderr)
                sys.exit(1)


if __name__ == "__main__":
    main()
