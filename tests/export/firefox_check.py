#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Checks a Firefox Profiler processed profile (v58) and prints its stacks.
#
# Usage: firefox_check.py PROFILE.json
# Validates the fields stackpulse promises and the profiler needs to load
# the file (meta.version and the processed version, tables present,
# parallel columns of equal length, every index in range: samples.stack,
# stackTable, frameTable, funcTable, resourceTable and the shared
# stringArray; no JS frames, a grey default category, sorted sample
# times) and prints one line per distinct (tid, stack), weights counted:
#   COUNT HEX
# where HEX is the UTF-8 of "tid\x1fname\x1f...\x1fname", names root first.
# Exit 0 = valid, 1 = invalid (the reason on stderr).
import json
import sys
from collections import Counter


def fail(msg):
    print("firefox_check: " + msg, file=sys.stderr)
    sys.exit(1)


def table(obj, name, columns):
    t = obj.get(name)
    if not isinstance(t, dict) or not isinstance(t.get("length"), int):
        fail(f"{name}: missing or without length")
    for c in columns:
        if not isinstance(t.get(c), list) or len(t[c]) != t["length"]:
            fail(f"{name}.{c}: missing or length != {t['length']}")
    return t


def check_meta(p):
    meta = p.get("meta")
    if not isinstance(meta, dict):
        fail("no meta")
    for k in ("interval", "startTime", "version", "preprocessedProfileVersion",
              "product", "categories", "markerSchema", "processType"):
        if k not in meta:
            fail(f"meta.{k} missing")
    if meta["preprocessedProfileVersion"] != 58:
        fail("preprocessedProfileVersion is not 58")
    if not isinstance(meta["version"], int) or meta["version"] < 1:
        fail("meta.version is not a positive integer")
    if not isinstance(meta["startTime"], (int, float)) or not isinstance(
            meta["interval"], (int, float)) or meta["interval"] <= 0:
        fail("meta.startTime / meta.interval are not numbers")
    cats = meta["categories"]
    names = [c["name"] for c in cats]
    for want in ("Python", "Native", "Kernel", "Other"):
        if want not in names:
            fail(f"category {want} missing")
    if not any(c["color"] == "grey" for c in cats):
        fail("no grey default category")
    for c in cats:
        if not c["subcategories"] or c["subcategories"][0] != "Other":
            fail(f"category {c['name']}: subcategory 0 is not Other")
    return cats


def check_shared(p):
    shared = p.get("shared")
    if not isinstance(shared, dict) or not isinstance(
            shared.get("stringArray"), list):
        fail("shared.stringArray missing")
    src = table(shared, "sources", ["uuid", "filename"])
    if any(not isinstance(x, str) for x in shared["stringArray"]):
        fail("shared.stringArray holds a non-string")
    n = len(shared["stringArray"])
    if any(not 0 <= f < n for f in src["filename"]):
        fail("sources.filename out of range")
    return shared["stringArray"], src["length"]


def check_thread(th, cats, strings, nsources, nlibs):
    for k in ("processType", "name", "isMainThread", "pid", "tid",
              "registerTime", "pausedRanges", "processStartupTime"):
        if k not in th:
            fail(f"thread.{k} missing")
    if not isinstance(th["pid"], str):
        fail("thread.pid is not a string (v47+)")
    table(th, "markers", ["data", "name", "startTime", "endTime", "phase",
                          "category"])
    table(th, "nativeSymbols", ["libIndex", "address", "name",
                                "functionSize"])
    samples = table(th, "samples", ["stack", "time"])
    stacks = table(th, "stackTable", ["frame", "prefix"])
    frames = table(th, "frameTable", ["address", "inlineDepth", "category",
                                      "subcategory", "func", "nativeSymbol",
                                      "innerWindowID", "line", "column"])
    funcs = table(th, "funcTable", ["name", "isJS", "relevantForJS",
                                    "resource", "source", "lineNumber",
                                    "columnNumber"])
    res = table(th, "resourceTable", ["lib", "name", "host", "type"])
    if samples.get("weightType") != "samples" or "weight" not in samples:
        fail("samples.weight/weightType")
    w = samples["weight"]
    if w is not None and (not isinstance(w, list) or len(w) !=
                          samples["length"] or any(
                              not isinstance(x, int) or x < 0 for x in w)):
        fail("samples.weight is neither null nor one count per sample")
    if any(s is not None and not 0 <= s < stacks["length"]
           for s in samples["stack"]):
        fail("samples.stack out of range")
    if any(samples["time"][i] > samples["time"][i + 1]
           for i in range(len(samples["time"]) - 1)):
        fail("sample times not sorted")
    for i in range(stacks["length"]):
        pre = stacks["prefix"][i]
        if pre is not None and not 0 <= pre < i:
            fail("stackTable.prefix must point to an earlier stack")
        if not 0 <= stacks["frame"][i] < frames["length"]:
            fail("stackTable.frame out of range")
    for i in range(frames["length"]):
        c = frames["category"][i]
        if not 0 <= c < len(cats) or not 0 <= frames["subcategory"][i] < len(
                cats[c]["subcategories"]):
            fail("frameTable.category/subcategory out of range")
        if not 0 <= frames["func"][i] < funcs["length"]:
            fail("frameTable.func out of range")
        ns = frames["nativeSymbol"][i]
        if ns is not None and not 0 <= ns < th["nativeSymbols"]["length"]:
            fail("frameTable.nativeSymbol out of range")
        if not isinstance(frames["address"][i], int):
            fail("frameTable.address is not an integer")
    for i in range(funcs["length"]):
        if funcs["isJS"][i] or funcs["relevantForJS"][i]:
            fail("a frame is marked as JavaScript")
        if not 0 <= funcs["name"][i] < len(strings):
            fail("funcTable.name out of range")
        r, s = funcs["resource"][i], funcs["source"][i]
        if r != -1 and not 0 <= r < res["length"]:
            fail("funcTable.resource out of range")
        if s is not None and not 0 <= s < nsources:
            fail("funcTable.source out of range")
    if any(not 0 <= lib < nlibs for lib in res["lib"]):
        fail("resourceTable.lib out of range")
    if any(not 0 <= n < len(strings) for n in res["name"]):
        fail("resourceTable.name out of range")
    return samples, stacks, frames, funcs


def stack_names(idx, stacks, frames, funcs, strings):
    names = []
    while idx is not None:
        f = stacks["frame"][idx]
        names.append(strings[funcs["name"][frames["func"][f]]])
        idx = stacks["prefix"][idx]
    return names[::-1]


def main():
    with open(sys.argv[1], "rb") as f:
        p = json.loads(f.read().decode("utf-8"))
    cats = check_meta(p)
    strings, nsources = check_shared(p)
    if not isinstance(p.get("libs"), list) or not isinstance(
            p.get("threads"), list):
        fail("libs / threads missing")
    counts = Counter()
    for th in p["threads"]:
        samples, stacks, frames, funcs = check_thread(
            th, cats, strings, nsources, len(p["libs"]))
        weights = samples["weight"] or [1] * samples["length"]
        for s, w in zip(samples["stack"], weights):
            names = stack_names(s, stacks, frames, funcs, strings)
            key = "\x1f".join([str(th["tid"])] + names)
            counts[key] += w
    for key, n in sorted(counts.items()):
        print(n, key.encode("utf-8").hex())


if __name__ == "__main__":
    main()
