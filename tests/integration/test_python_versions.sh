#!/usr/bin/env bash
# Python frames of CPython 3.13, 3.14 and 3.15 (Debian testing's own builds,
# in a chroot: tools/py-chroot.sh), walked with the layout each interpreter
# states in its _Py_DebugOffsets: py_workload.py's graphs as test_python_stacks
# checks them on 3.11 (>= 90% of CPU samples with a Python frame, hot_loop at
# its lines under worker's call, nap's off-CPU time under its line), and a pure
# hot loop (py_hot.py) named in >= 90% of its samples. The chroot's paths are
# not the host's: the interpreter is read through the process's own mappings.
source "$(dirname "$0")/lib.sh"
require_root python_versions

CH=$ROOT/build/chroots/forky
if ! "$ROOT/tools/py-chroot.sh" "$CH" >"$T/chroot.log" 2>&1; then
  fail "python_versions.chroot: $(tail -1 "$T/chroot.log")"
  exit 0
fi
mkdir -p "$CH/opt/latsplit-test/helpers"
cp "$ROOT/tests/helpers/py_workload.py" "$ROOT/tests/helpers/py_hot.py" "$CH/opt/latsplit-test/helpers/"
WL=$ROOT/tests/helpers/py_workload.py
line_of() { grep -nF -- "$1" "$WL" | head -1 | cut -d: -f1; }
L_HOT=$(line_of 'x += i * i')
L_FOR=$(line_of 'for i in range(n):')
L_NAP=$(line_of 'time.sleep(0.02)')
L_CALL_HOT=$(line_of 'hot_loop(200000)')

for v in 3.13 3.14 3.15; do
  name=py${v/./}
  "$LS" record -F 199 -o "$T/$name.data" -- chroot "$CH" "python$v" /opt/latsplit-test/helpers/py_workload.py 3 \
    >/dev/null 2>"$T/$name.log" || { fail "python_versions.$name.record: $(tail -1 "$T/$name.log")"; continue; }
  if grep -q 'Python frames are not walked' "$T/$name.log"; then
    fail "python_versions.$name.layout: $(grep 'not walked' "$T/$name.log")"
    continue
  fi
  "$LS" flame --kind cpu "$T/$name.data" >"$T/$name.cpu" 2>/dev/null
  "$LS" flame --kind offcpu "$T/$name.data" >"$T/$name.off" 2>/dev/null
  python3 "$ROOT/tests/integration/py_graphs.py" python_versions "$T/$name.cpu" "$T/$name.off" "$name" \
    "$L_HOT" "$L_FOR" "$L_NAP" 0 "$L_CALL_HOT"

  "$LS" record -F 199 -o "$T/$name-hot.data" -- chroot "$CH" "python$v" /opt/latsplit-test/helpers/py_hot.py 2 \
    >/dev/null 2>"$T/$name-hot.log" || { fail "python_versions.$name.hot: $(tail -1 "$T/$name-hot.log")"; continue; }
  "$LS" flame --kind cpu "$T/$name-hot.data" 2>/dev/null | awk -v name="$name" '
    { w = $NF; total += w; if ($0 ~ /;spin \(helpers\/py_hot\.py:[0-9]+\)/) hit += w }
    END {
      printf "  %s hot loop: spin in %d of %d CPU samples (%.1f%%)\n", name, hit, total, total ? 100 * hit / total : 0
      printf "%s python_versions.%s.hot_loop: >= 90%% of samples name spin\n", (total >= 100 && hit >= 0.9 * total) ? "PASS" : "FAIL", name
    }'
done
