#!/usr/bin/env bash
# Python frames in the CPU and off-CPU graphs of Debian's unmodified
# python3.11 (built without frame pointers), walked from the interpreter's
# own state: the workload's functions by name, file and line (the lines are
# found in the workload's source, not taken from latsplit), with their
# callers; numpy's native code under its Python caller; a second Python
# thread; a process that was already running when record attached.
source "$(dirname "$0")/lib.sh"
require_root python_stacks

PY=/usr/bin/python3
WL=$ROOT/tests/helpers/py_workload.py
ver=$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)
if [[ $ver != 3.11 ]]; then
  skip "python_stacks: $PY is Python ${ver:-missing}; this test expects Debian 12's 3.11 (3.13-3.15: test_python_versions)"
  exit 0
fi
# numpy's BLAS on one thread: its compute is then the Python thread's own
export OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1

# line_of TEXT: the workload's line holding TEXT (the truth for frame lines)
line_of() { grep -nF -- "$1" "$WL" | head -1 | cut -d: -f1; }
L_HOT=$(line_of 'x += i * i')
L_FOR=$(line_of 'for i in range(n):')
L_NAP=$(line_of 'time.sleep(0.02)')
L_MM=$(line_of 'return a @ a')
L_CALL_HOT=$(line_of 'hot_loop(200000)')

check_graphs() { # NAME CAPTURE
  local name=$1 cap=$2
  "$LS" flame --kind cpu "$cap" >"$T/$name.cpu" 2>"$T/$name.cpu.err"
  "$LS" flame --kind offcpu "$cap" >"$T/$name.off" 2>"$T/$name.off.err"
  python3 "$ROOT/tests/integration/py_graphs.py" python_stacks "$T/$name.cpu" "$T/$name.off" "$name" \
    "$L_HOT" "$L_FOR" "$L_NAP" "$L_MM" "$L_CALL_HOT"
}

# 1. started by record, with numpy
"$LS" record -F 199 -o "$T/run.data" -- "$PY" "$WL" 4 --numpy >"$T/run.out" 2>"$T/run.log" ||
  { fail "python_stacks.record: $(tail -1 "$T/run.log")"; exit 0; }
check_graphs numpy "$T/run.data"

# 2. attached to a running interpreter, its work in a second thread
"$PY" "$WL" 6 --thread >"$T/wl.out" 2>&1 &
WPID=$!
CLEANUP+=("kill $WPID")
wait_for_file_text() { for _ in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.05; done; return 1; }
wait_for_file_text "$T/wl.out" ready || { fail "python_stacks.attach: workload did not start"; exit 0; }
sleep 0.5
timeout -s INT 3 "$LS" record -F 199 -p "$WPID" -o "$T/attach.data" 2>"$T/attach.log"
check_graphs attach_thread "$T/attach.data"
others=$("$LS" dump --json "$T/attach.data" 2>/dev/null | python3 -c '
import json, sys
main = int(sys.argv[1])
print(len({e["tid"] for e in map(json.loads, sys.stdin)
           if e["type"] == "pystack" and e["kind"] == "sample" and e["tid"] != main}))' "$WPID")
info "attach: Python stacks sampled in $others thread(s) other than the main one"
check python_stacks.second_thread [ "${others:-0}" -ge 1 ]

# 3. GPU launch stacks: a Python program launching (simulated) kernels
GL=$ROOT/tests/helpers/py_gpu_launch.py
L_LAUNCH=$(grep -nF 'lib.latsplit_gpu_launch(corr)' "$GL" | cut -d: -f1)
L_STEP=$(grep -nF '    launch_kernel(corr)' "$GL" | cut -d: -f1)
"$LS" record -o "$T/gpu.data" -- "$PY" "$GL" "$ROOT/build/liblatsplit-engine.so" 2 >/dev/null 2>"$T/gpu.log" ||
  { fail "python_stacks.gpu_launch: $(tail -1 "$T/gpu.log")"; exit 0; }
"$LS" flame --kind gpu "$T/gpu.data" >"$T/gpu.folded" 2>/dev/null
read -r hit tot < <(python3 - "$T/gpu.folded" "step (helpers/py_gpu_launch.py:$L_STEP)" \
  "launch_kernel (helpers/py_gpu_launch.py:$L_LAUNCH)" <<'PY'
import sys
hit = tot = 0
for l in open(sys.argv[1]):
    stack, _, w = l.rstrip("\n").rpartition(" ")
    fr = stack.split(";")
    tot += int(w)
    if any(fr[i:i + 2] == sys.argv[2:4] for i in range(len(fr))):
        hit += int(w)
print(hit, tot)
PY
)
info "GPU time launched from step;launch_kernel (lines $L_STEP, $L_LAUNCH): $((hit / 1000000)) of $((tot / 1000000)) ms (simulated device)"
info "e.g. $(sort -t' ' -k2 -n "$T/gpu.folded" | tail -1 | cut -c1-200)"
check python_stacks.gpu_launch python3 -c "import sys; h, t = map(int, sys.argv[1:]); sys.exit(0 if t and h >= 0.9 * t else 1)" "$hit" "$tot"
