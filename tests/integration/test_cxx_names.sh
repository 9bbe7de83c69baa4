#!/usr/bin/env bash
# C++ names as people read them (issue 28's demangling): a C++ program whose
# hot path is a named chain in a namespace, a class and a template, recorded
# with the default sampling; the CPU flame graph (folded and SVG) and the
# Perfetto timeline's stacks show "pool::Worker<...>::spin(long)", never the
# mangled "_ZN4pool...". Symbolized while recording and, with
# --no-symbolize, by flame from the mapping records.
source "$(dirname "$0")/lib.sh"
require_root cxx_names.folded cxx_names.offline
command -v g++ >/dev/null || { skip "cxx_names: no g++ (tools/install-test-deps.sh)"; exit 0; }
cat >"$T/pool.cc" <<'CC'
#include <cstdlib>
namespace pool {
template <typename T> struct Worker {
	__attribute__((noinline)) T spin(long n)
	{ T x = 1; for (long i = 0; i < n; i++) x = x * (T)1.0000001 + (T)1e-9; return x; }
};
__attribute__((noinline)) double run_batch(long n) { Worker<double> w; return w.spin(n); }
}
int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 150000000;
	return pool::run_batch(n) > 0 ? 0 : 1;
}
CC
# -O0: every frame keeps its pointer, leaves too (gcc drops a leaf's frame
# at -O1 even with -fno-omit-frame-pointer, and the default walk is frame
# pointers: that is issue 28's unwinding; this test is about names)
g++ -O0 -g -fno-omit-frame-pointer -o "$T/pool" "$T/pool.cc"
for mode in folded offline; do
  extra=(); [[ $mode == offline ]] && extra=(--no-symbolize)
  "$LS" record "${extra[@]}" -F 199 -o "$T/$mode.data" -- "$T/pool" 2>"$T/$mode.log"
  "$LS" flame --kind cpu "$T/$mode.data" >"$T/$mode.folded" 2>/dev/null
  total=$(awk '{s += $NF} END {print s + 0}' "$T/$mode.folded")
  named=$(awk '/pool::run_batch\(long\);pool::Worker<double>::spin\(long\)/ {s += $NF} END {print s + 0}' "$T/$mode.folded")
  mangled=$(grep -c '_ZN4pool' "$T/$mode.folded")
  info "$mode: $total samples, $named under pool::run_batch(long);pool::Worker<double>::spin(long), $mangled mangled lines"
  check "cxx_names.$mode: the chain is demangled in most samples, no mangled name" \
    test "$total" -ge 20 -a $((named * 10)) -ge $((total * 7)) -a "$mangled" -eq 0
done
"$LS" flame --kind cpu --svg -o "$T/cpu.svg" "$T/folded.data" 2>/dev/null
check "cxx_names.svg: the SVG's titles are demangled" \
  bash -c "grep -q 'pool::Worker&lt;double&gt;::spin(long)' '$T/cpu.svg' && ! grep -q '_ZN4pool' '$T/cpu.svg'"
