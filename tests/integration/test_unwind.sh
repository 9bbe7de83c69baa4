#!/usr/bin/env bash
# record --call-graph dwarf: user stacks unwound by DWARF CFI. The call tree
# is the program's own (tests/helpers/unwind_target.c):
# main -> work_loop -> hot_path -> spin (CPU), work_loop -> cold_wait ->
# nanosleep (blocks, inside Debian's libc, which has no frame pointers).
#  - built with frame pointers: cold_wait, the caller of the libc wrapper,
#    is in the off-CPU graph with dwarf (the frame-pointer walk loses it);
#  - built -O2 -fomit-frame-pointer: spin under hot_path under work_loop
#    under main in the CPU graph, by DWARF alone;
#  - unwinding figures are printed (stacks/s, frames, stops).
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

for cg in fp dwarf; do
  "$LS" record -F 199 --call-graph $cg -o "$T/fp.$cg.data" -- "$T/fp" 2.5 2>"$T/fp.$cg.log" ||
    { fail "unwind.record.fp.$cg: $(tail -1 "$T/fp.$cg.log")"; continue; }
  "$LS" flame --kind offcpu "$T/fp.$cg.data" >"$T/fp.$cg.off" 2>/dev/null
  read -r hit tot < <(graph_has "$T/fp.$cg.off" work_loop cold_wait)
  info "frame pointers, --call-graph $cg: work_loop;cold_wait in $((hit / 1000000)) of $((tot / 1000000)) ms blocked"
  eval "fp_${cg}_hit=$hit fp_${cg}_tot=$tot"
done
info "e.g. $(sort -t' ' -k2 -n "$T/fp.dwarf.off" | tail -1 | cut -c1-200)"
# the caller of the blocking libc wrapper: present by DWARF (most of the
# blocked time: it sleeps 20 ms a round), absent by frame pointers
check unwind.offcpu_caller_of_libc_wrapper \
  python3 -c "import sys; h, t, fh = map(int, sys.argv[1:]); sys.exit(0 if t and h >= 0.8 * t and fh < 0.1 * t else 1)" \
  "${fp_dwarf_hit:-0}" "${fp_dwarf_tot:-0}" "${fp_fp_hit:-0}"

"$LS" record -F 199 --call-graph dwarf -o "$T/nofp.data" -- "$T/nofp" 2.5 2>"$T/nofp.log" ||
  { fail "unwind.record.nofp: $(tail -1 "$T/nofp.log")"; exit 0; }
"$LS" flame --kind cpu "$T/nofp.data" >"$T/nofp.cpu" 2>/dev/null
read -r hit tot < <(graph_has "$T/nofp.cpu" main work_loop hot_path spin)
info "no frame pointers, dwarf: main;work_loop;hot_path;spin in $hit of $tot samples"
info "e.g. $(sort -t' ' -k2 -n "$T/nofp.cpu" | tail -1 | cut -c1-200)"
check unwind.cpu_without_frame_pointers python3 -c "import sys; h, t = map(int, sys.argv[1:]); sys.exit(0 if t >= 50 and h >= 0.8 * t else 1)" "$hit" "$tot"
grep -E "unwound" "$T/nofp.log" | sed 's/^/  /'
check unwind.figures_printed grep -q "unwound" "$T/nofp.log"
