#!/usr/bin/env bash
# Folded output of a synthetic capture (tests/helpers/flame_capture.c, whose
# comment derives every number below), checked line by line: CPU samples,
# off-CPU time, and the latency graph, where host time goes only to samples
# taken at instants the split called host (the sample during the GPU kernel
# is compute time and must not appear), and other time to the blocked span
# overlapping the instants called other. No privileges needed.
source "$(dirname "$0")/lib.sh"

"$ROOT/build/flame-capture" "$T/syn.data" || { fail "flame.synthetic: helper failed"; exit 0; }

expect() { # NAME EXPECTED-TEXT LATSPLIT-FLAME-ARGS...  (stdout; stderr: no warning)
  local name=$1 want=$2 got; shift 2
  got=$("$LS" flame "$@" "$T/syn.data" 2>"$T/$name.err")
  grep -i warning "$T/$name.err" >>/dev/stderr && got+=$'\n'"(a warning on stderr)"
  if [[ $got == "$want" ]]; then
    pass "flame.synthetic.$name"
  else
    fail "flame.synthetic.$name: got:"; sed 's/^/    /' <<<"$got"; echo "  want:"; sed 's/^/    /' <<<"$want"
  fi
}

expect cpu "eng (100);gpu_wait_fn 1
eng (100);host_fn_a 1
eng (100);host_fn_b 1" --kind cpu

expect offcpu "eng (100);wait_fn 4000000" --kind offcpu
# the synthetic stacks are one frame each: counted as stopped short, not
# passed off as whole
check "flame.synthetic.ends: cpu says its 3 one-frame stacks stopped short" \
  grep -q "^latsplit flame: 0 of 3 user stacks reached a thread's root.*3 stopped short" "$T/cpu.err"

# network: the handshake (0.2 ms, est - srtt to est) is network.connect; the
# request's single segment arrives 0.5 ms after est: the client's own pause
# (connect_idle_ns), outside the total; its upload is then 0
expect latency "latency;compute;compute.kernel 2000000
latency;host;eng (100);host_fn_a 3000000
latency;host;eng (100);host_fn_b 3000000
latency;network;network.connect 200000
latency;network;network.drain 200000
latency;other;eng (100);wait_fn 4100000
latency;queueing;queueing.engine 900000
latency;queueing;queueing.socket 500000" --kind latency

# TTFT window [2, 12.501]: host 1 + 3 + 0.501 ms over the two samples
expect latency_ttft "latency;compute;compute.kernel 2000000
latency;host;eng (100);host_fn_a 2250500
latency;host;eng (100);host_fn_b 2250500
latency;network;network.connect 200000
latency;other;eng (100);wait_fn 4100000
latency;queueing;queueing.engine 900000
latency;queueing;queueing.socket 500000" --kind latency --ttft

expect component "latency;host;eng (100);host_fn_a 3000000
latency;host;eng (100);host_fn_b 3000000" --kind latency --component host

# GPU time under the CPU stack that launched it (joined by correlation id)
expect gpu "gpu;eng (100);launch_fn;gemm 2000000" --kind gpu
