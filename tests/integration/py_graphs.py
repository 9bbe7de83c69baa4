#!/usr/bin/env python3
"""py_graphs.py PREFIX CPU.folded OFFCPU.folded NAME L_HOT L_FOR L_NAP L_MM L_CALL:
checks py_workload.py's CPU and off-CPU graphs (flame --kind cpu/offcpu
output): >= 90% of CPU samples carry a Python frame, hot_loop at its own
lines under worker's call; nap blocked under its line with native frames
below it; with numpy in NAME, matmul with native frames under it. The
lines are the workload's own (found in its source by the caller)."""
import re, sys
prefix = sys.argv[1]
cpu, off, name = sys.argv[2], sys.argv[3], sys.argv[4]
l_hot, l_for, l_nap, l_mm, l_call = sys.argv[5:10]
f = "helpers/py_workload.py"
def load(p):
    out = []
    for l in open(p):
        stack, _, w = l.rstrip("\n").rpartition(" ")
        out.append((stack.split(";"), int(w)))
    return out
c, o = load(cpu), load(off)
pyframe = re.compile(r" \(.+\.py(:\d+)?\)$")
total = sum(w for _, w in c)
withpy = sum(w for s, w in c if any(pyframe.search(x) for x in s))
hot = sum(w for s, w in c if any(x in (f"hot_loop ({f}:{l_hot})", f"hot_loop ({f}:{l_for})") for x in s)
          and f"worker ({f}:{l_call})" in s)
print(f"  {name}: {total} CPU samples, {withpy} with Python frames ({100 * withpy / max(total, 1):.1f}%); "
      f"{hot} in hot_loop called from worker:{l_call}")
def show(lst, pat):
    for s, w in sorted(lst, key=lambda x: -x[1]):
        if any(pat in x for x in s):
            return ";".join(s)[:240]
    return "(none)"
print("  e.g. " + show(c, "hot_loop"))
ok = total >= 50 and withpy >= 0.9 * total and hot >= 0.3 * total
print(("PASS" if ok else "FAIL") + f" {prefix}.{name}.cpu: >= 90% of samples carry a Python frame, "
      f"hot_loop at its own lines under its caller")
nap = [(s, w) for s, w in o if f"nap ({f}:{l_nap})" in s]
nap_ok = nap and all(s.index(f"nap ({f}:{l_nap})") < len(s) - 1 and
                     not pyframe.search(s[s.index(f"nap ({f}:{l_nap})") + 1]) for s, _ in nap)
nap_ns = sum(w for _, w in nap)
print("  e.g. " + show(o, "nap ("))
print(("PASS" if nap_ok and nap_ns > 0.3e9 else "FAIL") + f" {prefix}.{name}.offcpu: nap "
      f"(line {l_nap}) blocked {nap_ns / 1e9:.2f} s, native frames under it")
if "numpy" in name:
    mm = [(s, w) for s, w in c if f"matmul ({f}:{l_mm})" in s]
    native = sum(w for s, w in mm if s.index(f"matmul ({f}:{l_mm})") < len(s) - 1)
    print(("PASS" if native > 0 else "FAIL") + f" {prefix}.{name}.native_under_python: "
          f"{native} samples of matmul (line {l_mm}) with native frames under it")
