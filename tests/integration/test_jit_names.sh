#!/usr/bin/env bash
# JIT frames named from the runtime's perf map (issue 28): Node run with
# --perf-basic-prof writes /tmp/perf-PID.map; a hot JavaScript function must
# be named in most CPU samples of the default recording, read through the
# process's own root and kept in the capture (report and flame need no
# process afterwards: the run has ended before the names are resolved).
source "$(dirname "$0")/lib.sh"
require_root jit_names.node
command -v node >/dev/null || { skip "jit_names: no node (tools/install-test-deps.sh)"; exit 0; }
cat >"$T/hot.js" <<'JS'
function hotLoop(n) {
  let x = 1;
  for (let i = 0; i < n; i++) x = (x * 1.0000001 + 1e-9) % 1e6;
  return x;
}
const end = Date.now() + 2000;
let s = 0;
while (Date.now() < end) s += hotLoop(1e6);
process.exit(s > 0 ? 0 : 1);
JS
before=$(ls /tmp/perf-*.map 2>/dev/null)
# from $T: V8 writes its isolate log into the working directory
(cd "$T" && "$LS" record -F 199 -o "$T/node.data" -- node --perf-basic-prof "$T/hot.js" 2>"$T/rec.log")
rc=$?
for m in /tmp/perf-*.map; do # the run's own map only
  [[ -e $m ]] && ! grep -qxF "$m" <<<"$before" && rm -f "$m"
done
"$LS" flame --kind cpu "$T/node.data" >"$T/cpu.folded" 2>/dev/null
total=$(awk '{s += $NF} END {print s + 0}' "$T/cpu.folded")
# V8 names it "JS:*hotLoop ..." (Node 20) or "LazyCompile:*hotLoop ..." (Node 18)
named=$(awk '/:[*~^]?hotLoop / {s += $NF} END {print s + 0}' "$T/cpu.folded")
info "node: $total samples, $named with the JavaScript frame hotLoop named (record exit $rc)"
check "jit_names.node: the hot JavaScript function is named in at least half the samples" \
  test "$rc" -eq 0 -a "$total" -ge 50 -a $((named * 2)) -ge "$total"
