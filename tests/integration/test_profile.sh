#!/usr/bin/env bash
# Stacks: a program with a known hot function and a known blocking function,
# recorded with the default sampling (49 Hz) and off-CPU stacks: the CPU flame
# graph has the hot function on top of most samples, the off-CPU graph the
# blocking function with the time it slept, all symbolized from the capture.
source "$(dirname "$0")/lib.sh"
require_root profile.cpu profile.offcpu
cat >"$T/hot.c" <<'C'
#include <time.h>
#include <sys/syscall.h>
__attribute__((noinline)) double hot_loop(double x)
{ for (long i = 0; i < 400000000; i++) x = x * 1.0000001 + 1e-9; return x; }
/* The syscall made here, not in libc: Debian's libc has no frame pointers,
 * so a frame-pointer unwind from inside it would skip this function. */
__attribute__((noinline)) int blocking_wait(void)
{
	struct timespec ts = {0, 300000000};
	long ret;
	__asm__ volatile("syscall" : "=a"(ret) : "0"(SYS_nanosleep), "D"(&ts), "S"(0) : "rcx", "r11", "memory");
	return ret == 0;
}
int main(void) { double x = hot_loop(1); int n = blocking_wait(); n += blocking_wait(); return x > 0 && n == 2 ? 0 : 1; }
C
cc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -o "$T/hot" "$T/hot.c"
"$LS" record -o "$T/p.data" -- "$T/hot" 2>"$T/rec.log"
check "profile.record" test $? -eq 0
"$LS" flame --kind cpu "$T/p.data" >"$T/cpu.folded"
total=$(awk '{s += $NF} END {print s + 0}' "$T/cpu.folded")
hot=$(awk '/;hot_loop( |;)/ {s += $NF} END {print s + 0}' "$T/cpu.folded")
info "cpu samples: $total, in hot_loop: $hot"
check "profile.cpu" test "$total" -ge 10 -a $((hot * 10)) -ge $((total * 8))
"$LS" flame --kind offcpu "$T/p.data" >"$T/off.folded"
slept=$(awk '/;blocking_wait;/ {s += $NF} END {printf "%d", s / 1e6}' "$T/off.folded")
info "off-CPU in blocking_wait: $slept ms (slept 600 ms)"
check "profile.offcpu" test "$slept" -ge 570 -a "$slept" -le 700
"$LS" flame --kind cpu --svg -o "$T/cpu.svg" "$T/p.data"
python3 -c 'import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); sys.exit(0 if any("hot_loop" in (t.firstChild.data or "") for t in d.getElementsByTagName("title")) else 1)' "$T/cpu.svg"
check "profile.svg" test $? -eq 0
