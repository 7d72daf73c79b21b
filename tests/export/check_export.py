#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Validates an export and prints it as canonical folded lines for test_export.c.
#
# usage: check_export.py speedscope FILE   -> "pid;tid;root;..;leaf COUNT" lines
#        check_export.py svg FILE          -> "TOTAL n", then one frame name a line
# Exit 1 (with a message on stderr) when a structural check fails.
import json
import math
import re
import sys
import xml.etree.ElementTree as ET

NS = '{http://www.w3.org/2000/svg}'


def fail(msg):
    sys.stderr.write('check_export: %s\n' % msg)
    sys.exit(1)


def speedscope(path):
    with open(path, 'rb') as f:
        doc = json.loads(f.read().decode('utf-8'))
    if doc.get('$schema') != 'https://www.speedscope.app/file-format-schema.json':
        fail('bad $schema')
    frames = doc['shared']['frames']
    for fr in frames:
        if not isinstance(fr.get('name'), str):
            fail('frame without a name')
    if not isinstance(doc.get('activeProfileIndex'), int) or \
            not isinstance(doc.get('exporter'), str):
        fail('missing activeProfileIndex or exporter')
    out = {}
    # Weights are counts (unit "none") or counts x the sample interval
    # (microseconds): the gcd of all weights gives the interval back (a
    # profile always has runs of one sample).
    step = 0
    for p in doc['profiles']:
        for w in p['weights']:
            step = math.gcd(step, w)
    keys = [(fr['name'], fr.get('file')) for fr in frames]
    if len(keys) != len(set(keys)):
        fail('a function has several frames')
    for p in doc['profiles']:
        if p['type'] != 'sampled' or p['unit'] not in ('none',
                                                       'microseconds'):
            fail('profile type/unit')
        if len(p['samples']) != len(p['weights']):
            fail('samples/weights length mismatch')
        if sum(p['weights']) != p['endValue'] - p['startValue']:
            fail('weights do not sum to endValue')
        m = re.search(r'pid (-?\d+)\)? thread (-?\d+)$', p['name'])
        if not m:
            fail('profile name %r' % p['name'])
        pid, tid = m.group(1), m.group(2)
        unit = 1 if p['unit'] == 'none' else step
        for stack, w in zip(p['samples'], p['weights']):
            w //= unit
            names = [frames[i]['name'].replace(';', ':') for i in stack]
            key = ';'.join([pid, tid] + names)
            out[key] = out.get(key, 0) + w
    for k in sorted(out):
        sys.stdout.buffer.write(('%s %d\n' % (k, out[k])).encode('utf-8'))


def svg(path):
    root = ET.parse(path).getroot()
    if root.tag != NS + 'svg':
        fail('root is not <svg>')
    total = int(root.get('data-total'))
    names = set()
    frames = [g for g in root.iter(NS + 'g') if 'f' in g.get('class', '').split()]
    for g in frames:
        title = g.find(NS + 'title').text
        names.add(title[:title.rindex(' (')])
        if g.find(NS + 'rect') is None or g.find(NS + 'text') is None:
            fail('frame without rect/text')
    # Each depth's boxes must not overlap and fit within the total.
    rows = {}
    for g in frames:
        rows.setdefault(int(g.get('data-d')), []).append(
            (int(g.get('data-x')), int(g.get('data-w'))))
    for d, spans in rows.items():
        spans.sort()
        end = 0
        for x, w in spans:
            if x < end or x + w > total:
                fail('overlapping boxes at depth %d' % d)
            end = x + w
    if total and rows.get(0) != [(0, total)]:
        fail('root box is not the whole width')
    sys.stdout.buffer.write(('TOTAL %d\n' % total).encode())
    for n in sorted(names):
        sys.stdout.buffer.write((n + '\n').encode('utf-8'))


if __name__ == '__main__':
    {'speedscope': speedscope, 'svg': svg}[sys.argv[1]](sys.argv[2])
