#!/usr/bin/env bash
# User stacks through code without frame pointers (issue 28), by default
# (unwound in the kernel by tables from .eh_frame) and with --call-graph
# dwarf (stack copies unwound while recording), against frame pointers
# only. The call tree is the program's own (tests/helpers/unwind_target.c):
# main -> work_loop -> hot_path -> spin (CPU), work_loop -> cold_wait ->
# nanosleep (blocks, inside Debian's libc, which has no frame pointers).
#  - built with frame pointers: cold_wait, the caller of the libc wrapper,
#    is in the off-CPU graph by default and with dwarf (the frame-pointer
#    walk loses it);
#  - built -O2 -fomit-frame-pointer: spin under hot_path under work_loop
#    under main in the CPU graph, by default and with dwarf;
#  - a C++ thread pool built -O2 -fomit-frame-pointer
#    (tests/helpers/cxx_pool.cc): by default >= 90% of its CPU samples reach
#    the thread's root through its named, demangled chain;
#  - unwinding figures are printed (stacks, frames, stops, tables).
source "$(dirname "$0")/lib.sh"
require_root unwind

gcc -O2 -fno-omit-frame-pointer -o "$T/fp" "$ROOT/tests/helpers/unwind_target.c" &&
  gcc -O2 -fomit-frame-pointer -o "$T/nofp" "$ROOT/tests/helpers/unwind_target.c" ||
  { fail "unwind.build: gcc failed"; exit 0; }

# graph_has FILE FRAME... : weight of the stacks holding FRAMEs in that order
# (adjacent: FRAME i+1 right under FRAME i), out of the total
graph_has() {
  python3 - "$@" <<'EOF'
import sys
path, want = sys.argv[1], sys.argv[2:]
tot = hit = 0
for l in open(path):
    stack, _, w = l.rstrip("\n").rpartition(" ")
    fr, w = stack.split(";"), int(w)
    tot += w
    if any(fr[i:i + len(want)] == want for i in range(len(fr))):
        hit += w
print(hit, tot)
EOF
}

for cg in fp default dwarf; do
  opt=(--call-graph $cg); [[ $cg == default ]] && opt=()
  "$LS" record -F 199 "${opt[@]}" -o "$T/fp.$cg.data" -- "$T/fp" 2.5 2>"$T/fp.$cg.log" ||
    { fail "unwind.record.fp.$cg: $(tail -1 "$T/fp.$cg.log")"; continue; }
  "$LS" flame --kind offcpu "$T/fp.$cg.data" >"$T/fp.$cg.off" 2>/dev/null
  read -r hit tot < <(graph_has "$T/fp.$cg.off" work_loop cold_wait)
  info "built with frame pointers, call graph $cg: work_loop;cold_wait in $((hit / 1000000)) of $((tot / 1000000)) ms blocked"
  eval "fp_${cg}_hit=$hit fp_${cg}_tot=$tot"
done
info "e.g. $(sort -t' ' -k2 -n "$T/fp.dwarf.off" | tail -1 | cut -c1-200)"
# the caller of the blocking libc wrapper: present by default and by DWARF
# (most of the blocked time: it sleeps 20 ms a round), absent by frame
# pointers only
for cg in default dwarf; do
  eval "hit=\${fp_${cg}_hit:-0} tot=\${fp_${cg}_tot:-0}"
  check unwind.offcpu_caller_of_libc_wrapper.$cg \
    python3 -c "import sys; h, t, fh = map(int, sys.argv[1:]); sys.exit(0 if t and h >= 0.8 * t and fh < 0.1 * t else 1)" \
    "$hit" "$tot" "${fp_fp_hit:-0}"
done

for cg in default dwarf; do
  opt=(--call-graph $cg); [[ $cg == default ]] && opt=()
  "$LS" record -F 199 "${opt[@]}" -o "$T/nofp.$cg.data" -- "$T/nofp" 2.5 2>"$T/nofp.$cg.log" ||
    { fail "unwind.record.nofp.$cg: $(tail -1 "$T/nofp.$cg.log")"; continue; }
  "$LS" flame --kind cpu "$T/nofp.$cg.data" >"$T/nofp.$cg.cpu" 2>/dev/null
  read -r hit tot < <(graph_has "$T/nofp.$cg.cpu" main work_loop hot_path spin)
  info "no frame pointers, call graph $cg: main;work_loop;hot_path;spin in $hit of $tot samples"
  info "e.g. $(sort -t' ' -k2 -n "$T/nofp.$cg.cpu" | tail -1 | cut -c1-200)"
  check unwind.cpu_without_frame_pointers.$cg python3 -c "import sys; h, t = map(int, sys.argv[1:]); sys.exit(0 if t >= 50 and h >= 0.8 * t else 1)" "$hit" "$tot"
  grep -E "unwound" "$T/nofp.$cg.log" | sed 's/^/  /'
done
check unwind.figures_printed grep -q "unwound in the kernel by table" "$T/nofp.default.log"
check unwind.figures_printed.dwarf grep -q "unwound by DWARF" "$T/nofp.dwarf.log"

# a C++ thread pool without frame pointers, by default: its samples reach
# the thread's root (start_thread, clone3) through the named chain
if command -v g++ >/dev/null && g++ -O2 -fomit-frame-pointer -o "$T/pool" "$ROOT/tests/helpers/cxx_pool.cc" -lpthread; then
  "$LS" record -F 199 -o "$T/pool.data" -- "$T/pool" 600 2>"$T/pool.log" ||
    fail "unwind.record.pool: $(tail -1 "$T/pool.log")"
  "$LS" flame --kind cpu "$T/pool.data" >"$T/pool.cpu" 2>"$T/pool.err"
  # from the thread's root (clone3, then start_thread) through
  # worker_loop (frames between them and it, or it and the task, vary with
  # the compiler: libstdc++'s trampoline, run_task where it is no tail call)
  # to the task's adjacent chain stage_a;stage_b;stage_c;spin
  read -r chain root tot < <(python3 - "$T/pool.cpu" <<'PY'
import sys
want = ["pool::stage_a(long)", "pool::stage_b(long)", "pool::stage_c(long)", "pool::Kernel<double>::spin(long)"]
chain = root = tot = 0
for l in open(sys.argv[1]):
    stack, _, w = l.rstrip("\n").rpartition(" ")
    fr, w = stack.split(";")[1:], int(w)
    tot += w
    # libc's clone3 and start_thread, named by libc6-dbg's symbols, else
    # libc frames without a name (.dynsym has neither)
    libc = "[unknown] (libc.so.6)"
    rooted = (len(fr) > 1 and ("clone" in fr[0] or fr[0] == libc) and fr[1] in ("start_thread", libc))
    root += w if rooted else 0
    if rooted and "pool::ThreadPool::worker_loop()" in fr and any(fr[i:i + 4] == want for i in range(len(fr))):
        chain += w
print(chain, root, tot)
PY
)
  info "C++ pool, no frame pointers, default: $chain of $tot samples through worker_loop..spin, $root of them from clone3;start_thread"
  info "e.g. $(sort -t' ' -k2 -n "$T/pool.cpu" | tail -1 | cut -c1-300)"
  sed 's/^/  /' "$T/pool.err"; grep -E "unwound" "$T/pool.log" | sed 's/^/  /'
  check unwind.cxx_pool_reaches_root python3 -c "import sys; c, r, t = map(int, sys.argv[1:]); sys.exit(0 if t >= 200 and c >= 0.9 * t and r >= 0.9 * t else 1)" "$chain" "$root" "$tot"
else
  skip "unwind.cxx_pool: no g++ (tools/install-test-deps.sh)"
fi
