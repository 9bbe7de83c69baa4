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

# Symbolized elsewhere: recorded with --no-symbolize, the capture keeps the
# process's mappings with build-ids, and flame symbolizes from them. Then the
# binary is rebuilt (another build-id) and stripped: the old capture must not
# take names from the new file; with the old debug file under --debug-dir
# (found by build-id, as on an analysis machine) the names come back.
"$LS" record -o "$T/raw.data" --no-symbolize -- "$T/hot" 2>/dev/null
bid=$(readelf -n "$T/hot" | awk '/Build ID/ {print $3}')
maps=$("$LS" dump "$T/raw.data" | grep -c "mapping .*build_id=$bid $T/hot$")
syms=$("$LS" dump "$T/raw.data" | grep -c " sym ")
hot_raw=$("$LS" flame --kind cpu "$T/raw.data" | awk '/;hot_loop( |;)/ {s += $NF} END {print s + 0}')
info "--no-symbolize: $maps mapping record(s) of hot with build-id $bid, $syms symbols; hot_loop from mappings: $hot_raw samples"
check "profile.offline_symbolize" test "$maps" -ge 1 -a "$syms" -eq 0 -a "$hot_raw" -ge 8
mkdir -p "$T/dbg/.build-id/${bid:0:2}"
objcopy --only-keep-debug "$T/hot" "$T/dbg/.build-id/${bid:0:2}/${bid:2}.debug"
cc -O1 -g -fno-omit-frame-pointer -fno-optimize-sibling-calls -o "$T/hot" "$T/hot.c" \
  -Wl,--build-id=0x0123456789abcdef0123456789abcdef01234567 && strip "$T/hot"
hot_other=$("$LS" flame --kind cpu --debug-dir /nonexistent "$T/raw.data" | awk '/;hot_loop( |;)/ {s += $NF} END {print s + 0}')
hot_dbg=$("$LS" flame --kind cpu --debug-dir "$T/dbg" "$T/raw.data" | awk '/;hot_loop( |;)/ {s += $NF} END {print s + 0}')
info "binary replaced: hot_loop $hot_other samples without its debug file, $hot_dbg with it (by build-id)"
check "profile.offline_build_id" test "$hot_other" -eq 0 -a "$hot_dbg" -eq "$hot_raw"

# The latency flame graph expands host time with the engine's samples taken at
# instants the split called host, and its total is still the sum of every
# request's components. Sampled at 499 Hz: the default 49 Hz left 2-5 host
# stacks in this short run, and once none.
PORT=18787
start_recording "$T/eng.data" "$T/ready" -F 499 -- "$ENGINE" --port $PORT --bind 127.0.0.1 --token-ms 1 \
  --host-us 3000 --ready-file "$T/ready" || { fail "profile.latency: engine did not start"; exit 0; }
"$LOADGEN" --port $PORT -c 4 -n 12 --stream --max-tokens 20 2>/dev/null
stop_recording 0.3
flame_total=$("$LS" flame --kind latency "$T/eng.data" | awk '{s += $NF} END {printf "%.0f", s}')
split_total=$("$LS" report --json "$T/eng.data" | python3 -c 'import json, sys; print(sum(sum(v for v in r["components"].values() if v is not None) for r in map(json.loads, sys.stdin) if r.get("type") != "verdict"))')
host_frames=$("$LS" flame --kind latency "$T/eng.data" | grep -c "^latency;host;mock-engine")
info "latency flame total $flame_total ns, components summed $split_total ns, $host_frames host stacks"
check "profile.latency_flame" test "$flame_total" = "$split_total" -a "$host_frames" -gt 0

# GPU time by launch stack: the mock engine launches every simulated kernel
# and copy from its engine thread (engine_main) through latsplit_gpu_launch.
read -r gpu_all gpu_engine < <("$LS" flame --kind gpu "$T/eng.data" |
  awk '{s += $NF} /;engine_main;latsplit_gpu_launch;/ {e += $NF} END {printf "%.0f %.0f\n", s, e}')
info "gpu flame: $gpu_engine of $gpu_all ns under engine_main;latsplit_gpu_launch"
check "profile.gpu_launch_stacks" test "${gpu_all:-0}" -gt 0 -a "$gpu_engine" = "$gpu_all"

# A stack map too small for the run: the stacks it could not hold are
# counted in the capture and shown by report and flame, never lost silently.
"$LS" record -o "$T/small.data" --stack-entries 4 -F 499 --no-sock -- "$ROOT/build/runq-load" 3 1 \
  >/dev/null 2>"$T/small.log"
lost=$("$LS" report "$T/small.data" | sed -n 's/.*stacks not captured: \([0-9]*\);.*/\1/p')
"$LS" flame --kind cpu "$T/small.data" >/dev/null 2>"$T/small.flame.log"
info "stack map of 4 entries: ${lost:-?} stacks not captured (record: $(grep -c 'stacks not captured' "$T/small.log") warning)"
check "profile.stack_map_overflow" test "${lost:-0}" -gt 0 -a -s "$T/small.flame.log"
