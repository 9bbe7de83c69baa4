#!/usr/bin/env bash
# latsplit top, live: against the mock engine, `top -n N` prints snapshots
# whose window holds the scenario's requests (their path, a split, the
# verdict), and under tmux the screen redraws in place and q quits, leaving
# no BPF program of latsplit attached.
source "$(dirname "$0")/lib.sh"
require_root top.snapshots top.tmux
PORT=18431
"$ENGINE" --port $PORT --bind 127.0.0.1 --token-ms 2 --max-batch 4 --ready-file "$T/ready" \
  --truth "$T/truth.jsonl" 2>/dev/null &
EPID=$!
CLEANUP+=("kill $EPID")
wait_for_file "$T/ready" 10 || { fail "top.setup: engine did not start"; exit 0; }

"$LS" top -n 9 -i 1 --port $PORT >"$T/top.txt" 2>"$T/top.err" &
TPID=$!
CLEANUP+=("kill -INT $TPID")
sleep 1.5
"$LOADGEN" --port $PORT -c 4 -d 4 --stream --max-tokens 6 --id-prefix top- -o "$T/lg.jsonl" 2>/dev/null
wait $TPID
rc=$?
n=$(grep -c '^latsplit top:' "$T/top.txt")
last=$(awk '/^latsplit top:/{buf=""} {buf=buf $0 "\n"} END{printf "%s", buf}' "$T/top.txt")
printf '%s' "$last" >"$T/last.txt"
split=$(sed -n 's/.*split so far \([0-9]*\).*/\1/p' "$T/last.txt")
sent=$(wc -l <"$T/lg.jsonl")
info "top: $n snapshots, rc $rc; last: split so far ${split:-?} of $sent sent"
sed 's/^/    | /' "$T/last.txt" | head -30
check "top.snapshots: -n 9 printed 9 snapshots and exited 0" [ "$n" -eq 9 -a "$rc" -eq 0 ]
check "top.requests: the window shows the scenario's requests (split ${split:-0} of $sent, path, verdict)" \
  bash -c "[[ ${split:-0} -ge $((sent / 2)) && ${split:-0} -le $sent ]] && grep -q '/v1/completions' '$T/last.txt' && grep -q 'verdict: .* dominates' '$T/last.txt'"

# under tmux: a terminal; q quits cleanly
if ! command -v tmux >/dev/null; then skip "top.tmux: no tmux"; exit 0; fi
S=latsplit-top-$$
tmux new-session -d -s $S -x 160 -y 50 "$LS top --port $PORT 2>$T/tmux.err; echo \$? >$T/tmux.rc"
CLEANUP+=("tmux kill-session -t $S")
# No fixed sleeps (a slow machine once failed them): the load starts once
# top draws its first screen; the pane is read until a request's split is on
# it (top shows a request once its split is final, seconds after its end);
# a program is freed a moment after the last fd on it closes: polled too.
for _ in $(seq 150); do
  tmux capture-pane -p -t $S 2>/dev/null | grep -q '^latsplit top:' && break
  sleep 0.1
done
"$LOADGEN" --port $PORT -c 2 -d 6 --stream --max-tokens 6 2>/dev/null
for _ in $(seq 100); do
  tmux capture-pane -p -t $S >"$T/pane.txt"
  grep -q '/v1/completions' "$T/pane.txt" && break
  sleep 0.1
done
tmux send-keys -t $S q
wait_for_file "$T/tmux.rc" 20
for _ in $(seq 50); do
  left=$(bpftool prog show 2>/dev/null | grep -c 'name sched_switch_btf\|name sched_switch_raw' || true)
  [[ $left -eq 0 ]] && break
  sleep 0.1
done
info "tmux pane:"; head -12 "$T/pane.txt" | sed 's/^/    | /'
check "top.tmux: redraws in place (one header on screen), shows requests, q exits 0, no BPF program left (${left})" \
  bash -c "[[ \$(grep -c '^latsplit top:' '$T/pane.txt') -eq 1 ]] && grep -q '/v1/completions' '$T/pane.txt' && [[ \$(cat '$T/tmux.rc' 2>/dev/null) == 0 && $left -eq 0 ]]"

# the same live path on the vLLM-shaped engine (API server + engine-core
# process), top starting it as record would
if /usr/bin/python3 -c 'import fastapi, uvicorn, zmq, numpy' 2>/dev/null; then
  VPORT=18436
  rm -f "$T/vready"
  # as many snapshots as it takes (the server's start-up is slow on a busy
  # machine: a fixed count once ended before the load's requests were
  # final); stopped once a snapshot shows them all, or 10 s after the load
  "$LS" top -n 60 -i 1 -- /usr/bin/python3 "$ROOT/tools/vllm-shaped/server.py" --port $VPORT \
    --ready-file "$T/vready" >"$T/vtop.txt" 2>"$T/vtop.err" &
  VPID=$!
  CLEANUP+=("kill -INT $VPID")
  wait_for_file "$T/vready" 20
  "$LOADGEN" --port $VPORT -c 4 -d 3 --stream --max-tokens 8 -o "$T/vlg.jsonl" 2>/dev/null
  vsent=$(wc -l <"$T/vlg.jsonl")
  for _ in $(seq 100); do
    got=$(sed -n 's/.*split so far \([0-9]*\).*/\1/p' "$T/vtop.txt" | tail -1)
    [[ ${got:-0} -ge $vsent ]] && break
    sleep 0.1
  done
  sleep 1.2 # one more whole snapshot
  kill -INT $VPID; wait $VPID
  # the last whole snapshot (the signal may have cut the one being printed)
  awk '/^latsplit top:/{if (buf ~ /verdict:/) done=buf; buf=""} {buf=buf $0 "\n"}
       END{printf "%s", buf ~ /verdict:/ ? buf : done}' "$T/vtop.txt" >"$T/vlast.txt"
  vsplit=$(sed -n 's/.*split so far \([0-9]*\).*/\1/p' "$T/vlast.txt")
  check "top.vllm_shaped: top on the vLLM-shaped engine split ${vsplit:-0} of $vsent requests, verdict shown" \
    bash -c "[[ ${vsplit:-0} -ge $((vsent / 2)) ]] && grep -q 'verdict: .* dominates' '$T/vlast.txt'"
else
  skip "top.vllm_shaped: python3-fastapi/-uvicorn/-zmq/-numpy missing"
fi
