#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Checks that the documentation matches the code it describes.

Usage: check_docs.py SOURCE_ROOT CASE [SPULSE]. Exit 0 pass, 1 fail, 77 skip.

  tutorial   the C listings in docs/tutorial.md, taken in order per
             `<!-- example: FILE -->` marker and joined by blank lines, are
             byte for byte the files in examples/ that CI builds and runs
  names      every sp_* / SP_* identifier named in docs/ (except the
             generated reference), man/spulse.1 and examples/ is declared
             in include/ (catches renamed or invented functions)
  links      relative Markdown links in docs/ point at existing files
  man        man/spulse.1 renders without groff warnings and documents
             every subcommand and option of `spulse help CMD`
"""
import glob
import os
import re
import shutil
import subprocess
import sys

MARK = re.compile(r"<!-- example: (\S+) -->\s*\n```c\n(.*?)```", re.S)


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def case_tutorial(root):
    text = read(os.path.join(root, "docs", "tutorial.md"))
    parts = {}
    for m in MARK.finditer(text):
        parts.setdefault(m.group(1), []).append(m.group(2))
    if len(parts) < 2:
        fail("docs/tutorial.md has fewer than two example listings")
    for name, blocks in parts.items():
        want = read(os.path.join(root, name))
        got = "\n".join(blocks)
        if got != want:
            for i, (a, b) in enumerate(zip(got.split("\n"),
                                           want.split("\n"))):
                if a != b:
                    fail("%s: line %d differs from the tutorial:\n"
                         "  file:     %r\n  tutorial: %r" %
                         (name, i + 1, b, a))
            fail("%s: the tutorial's listing has a different length" % name)
        print("%s: %d parts match" % (name, len(blocks)))


def declared_names(root):
    names = set()
    for path in glob.glob(os.path.join(root, "include", "**", "*.h"),
                          recursive=True):
        names.update(re.findall(r"\b(?:sp|SP)_[A-Za-z0-9_]+", read(path)))
    return names


def case_names(root):
    known = declared_names(root)
    files = [p for p in glob.glob(os.path.join(root, "docs", "**", "*.md"),
                                  recursive=True)
             if os.sep + "reference" + os.sep not in p]
    files += glob.glob(os.path.join(root, "examples", "*.c"))
    files += [os.path.join(root, "man", "spulse.1")]
    bad = []
    for path in files:
        text = read(path)
        for n in sorted(set(re.findall(r"\b(?:sp|SP)_[A-Za-z0-9_]+", text))):
            # SP_E* prefixes and wildcard mentions like SP_EXPORT_*.
            if n.endswith("_") or n in known:
                continue
            bad.append("%s: %s" % (os.path.relpath(path, root), n))
    if bad:
        fail("names not declared in include/:\n  " + "\n  ".join(bad))
    print("%d files, all names declared" % len(files))


def case_links(root):
    bad = []
    for path in glob.glob(os.path.join(root, "docs", "**", "*.md"),
                          recursive=True):
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", read(path)):
            if re.match(r"^[a-z]+:", target):
                continue
            if not os.path.exists(os.path.join(os.path.dirname(path),
                                               target)):
                bad.append("%s -> %s" % (os.path.relpath(path, root), target))
    if bad:
        fail("broken links:\n  " + "\n  ".join(bad))
    print("links ok")


def cli_options(spulse):
    """{command: set of options} from `spulse help` and `spulse help CMD`."""
    top = subprocess.run([spulse, "help"], capture_output=True, text=True)
    cmds = re.findall(r"^  (\w+)\s+\S", top.stdout.split("Commands:")[1],
                      re.M)
    out = {}
    # `help` is listed too; its page is the top-level usage.
    for cmd in (c for c in cmds if c != "help"):
        usage = subprocess.run([spulse, "help", cmd], capture_output=True,
                               text=True).stdout
        out[cmd] = set(re.findall(r"(?<![\w-])(--?[A-Za-z][\w-]*)", usage))
    return out


def case_man(root, spulse):
    page = os.path.join(root, "man", "spulse.1")
    if not shutil.which("groff"):
        print("skip: groff is not installed")
        sys.exit(77)
    p = subprocess.run(["groff", "-man", "-Tutf8", "-ww", "-z", page],
                       capture_output=True, text=True)
    if p.returncode != 0 or p.stderr.strip():
        fail("groff warnings:\n" + p.stderr)
    text = read(page)
    # In roff source a '-' is written '\-'.
    plain = text.replace("\\-", "-").replace("\\fB", "").replace("\\fR", "")
    missing = []
    for cmd, opts in sorted(cli_options(spulse).items()):
        if not re.search(r"^\.SS\s+\"?%s\b" % cmd, text, re.M):
            missing.append("subcommand " + cmd)
        for opt in sorted(opts):
            if not re.search(r"(?<![\w-])%s(?![\w-])" % re.escape(opt),
                             plain):
                missing.append("%s %s" % (cmd, opt))
    if missing:
        fail("man/spulse.1 does not document:\n  " + "\n  ".join(missing))
    print("man page ok")


def main():
    root, case = sys.argv[1], sys.argv[2]
    if case == "man":
        case_man(root, sys.argv[3])
    else:
        globals()["case_" + case](root)


if __name__ == "__main__":
    main()
