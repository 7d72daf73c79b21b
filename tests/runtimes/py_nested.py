# SPDX-License-Identifier: MIT
"""CPU-bound nested Python functions for the runtime tests (issue 12).

    python3.12 -X perf py_nested.py SECONDS ORACLE_FILE [PREFIX]

sp_root -> sp_outer -> sp_middle -> sp_leaf spin for SECONDS of CPU time
(so that the sample count does not depend on the machine's load). A watcher
thread samples the main thread's frames with sys._current_frames(), the
interpreter's own view of its stack, and writes the chains it saw while
the main thread was in the leaf to ORACLE_FILE (one ';'-joined line each,
root first): the known-good chain the recorder's stacks are checked
against. PREFIX renames the functions (pid-reuse case: two programs).
"""
import sys
import threading
import time

SECONDS = float(sys.argv[1])
ORACLE = sys.argv[2]
PREFIX = sys.argv[3] if len(sys.argv) > 3 else "sp"
END = time.process_time() + SECONDS


def spin(n):
    s = 0
    for i in range(n):
        s = (s * 31 + i) % 1000003
    return s


SRC = f"""
def {PREFIX}_leaf(n):
    return spin(n)
def {PREFIX}_middle(n):
    return {PREFIX}_leaf(n) + 1
def {PREFIX}_outer(n):
    t = 0
    while time.process_time() < END:
        t += {PREFIX}_middle(n)
    return t
def {PREFIX}_root():
    return {PREFIX}_outer(20000)
"""
exec(SRC)


def watch(main_id, seen):
    while time.process_time() < END:
        f = sys._current_frames().get(main_id)
        chain = []
        while f is not None:
            chain.append(f.f_code.co_name)
            f = f.f_back
        chain.reverse()
        # The leaf's callee (spin) is a plain helper: cut it off.
        if f"{PREFIX}_leaf" in chain:
            seen.add(";".join(chain[:chain.index(f"{PREFIX}_leaf") + 1]))
        time.sleep(0.05)


seen = set()
w = threading.Thread(target=watch, args=(threading.get_ident(), seen))
w.start()
globals()[f"{PREFIX}_root"]()
w.join()
with open(ORACLE, "w") as out:
    for chain in sorted(seen):
        out.write(chain + "\n")
