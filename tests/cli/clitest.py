# SPDX-License-Identifier: MIT
"""What every CLI test script of tests/cli shares: how a case fails or is
skipped, running a program and checking its exit status, and the main()
that picks the case named on the command line.

A script defines case_NAME(...) functions and ends with

    sys.exit(clitest.main(clitest.cases(globals()), ["SPULSE", ...],
                          "spulse-x-", lambda case, args, tmp: ...))

Exit status as in tests/check.h: 0 pass, 1 fail, 2 usage, 77 skip.
"""
import subprocess
import sys
import tempfile

SKIP = 77


class Failure(Exception):
    pass


class Skip(Exception):
    pass


def expect(cond, what):
    if not cond:
        raise Failure(what)


def run_checked(args, rc=0, timeout=60, stdout=subprocess.PIPE, **kw):
    """Runs @args (stderr captured); fails unless it exits with @rc."""
    p = subprocess.run(args, stdout=stdout, stderr=subprocess.PIPE,
                       timeout=timeout, **kw)
    expect(p.returncode == rc,
           f"{list(args[1:])}: exit {p.returncode} (wanted {rc}), "
           f"stderr {p.stderr!r}")
    return p


def cases(namespace):
    """{NAME: case_NAME} of a script's globals()."""
    return {name[5:]: fn for name, fn in namespace.items()
            if name.startswith("case_")}


def main(table, params, prefix, call):
    """argv is PARAMS... CASE: runs call(case, params, tmp) in a fresh
    temporary directory (prefix @prefix) and returns the exit status (what
    the case returned, else 0; 1 on Failure; 77 on Skip)."""
    args = sys.argv[1:]
    if len(args) != len(params) + 1 or args[-1] not in table:
        print(f"usage: {sys.argv[0]} {' '.join(params)} "
              f"{{{','.join(table)}}}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        try:
            return call(table[args[-1]], args[:-1], tmp) or 0
        except Skip as e:
            print(f"SKIP: {e}", file=sys.stderr)
            return SKIP
        except Failure as e:
            print(f"FAIL: {e}", file=sys.stderr)
            return 1
