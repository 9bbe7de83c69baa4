#!/usr/bin/env bash
# Accuracy of the split against the mock engine's ground truth, in five
# scenarios, each with engine events and again without them (T_sched then
# inferred from the GPU timeline): overload (queueing.engine), lossy link
# (network), transfer-heavy, compute-heavy, CPU contention (queueing.cpu).
# Prints the per-scenario error table; see accuracy.py for the rules.
source "$(dirname "$0")/lib.sh"
require_root accuracy

PORT=18484
# scenario NAME EXPECT MODE [--netlab] ENGINE_ARGS... -- LOADGEN_ARGS...
scenario() {
  local name=$1 expect=$2 mode=$3 extra=; shift 3
  [[ $name == contention ]] && extra=STARVED
  local eargs=() largs=() host=127.0.0.1 ns_srv=() ns_cli=()
  if [[ $1 == --netlab ]]; then
    shift; host=$SRV_IP; ns_srv=(ip netns exec "$SRV_NS"); ns_cli=(ip netns exec "$CLI_NS")
    extra=NO_CPU_CHECK
  fi
  while [[ $1 != -- ]]; do eargs+=("$1"); shift; done; shift
  largs=("$@")
  [[ $mode == inferred ]] && eargs+=(--no-engine-events)
  local d=$T/$name.$mode
  rm -f "$T/ready"
  start_recording "$d.data" "$T/ready" -- "${ns_srv[@]}" "$ENGINE" --port $PORT --bind "$host" \
    --truth "$d.truth" --ready-file "$T/ready" "${eargs[@]}" || { fail "accuracy.$name.$mode: engine did not start"; return; }
  "${ns_cli[@]}" "$LOADGEN" --host "$host" --port $PORT --id-prefix "$name-" -o "$d.lg" "${largs[@]}" 2>/dev/null
  stop_recording 0.5
  "$LS" report --json "$d.data" >"$d.jsonl" 2>/dev/null
  "$LS" report "$d.data" >"$d.txt" 2>&1
  python3 "$ROOT/tests/integration/accuracy.py" "$name" "$mode" "$d.jsonl" "$d.truth" "$d.txt" "$expect" $extra
}

for mode in events inferred; do
  scenario overload queueing.engine $mode --max-batch 2 --token-ms 3 --host-us 200 \
    -- -c 8 -n 24 --stream --max-tokens 12
  scenario transfer transfer $mode --max-batch 8 --token-ms 0.5 --h2d-us 3000 --d2h-us 2000 --host-us 200 \
    -- -c 4 -n 16 --stream --max-tokens 10
  scenario compute compute $mode --max-batch 8 --token-ms 4 --prefill-us-per-token 20 --host-us 200 \
    -- -c 4 -n 16 --stream --max-tokens 10 --prompt-bytes 8000
  # CPU contention: 6 busy processes (not tracked) on 2 cores; the engine
  # burns 2 ms of CPU per step and mostly waits for a CPU.
  for i in 1 2 3 4 5 6; do ( while :; do :; done ) & CLEANUP+=("kill $!"); HOGS+=($!); done
  scenario contention queueing.cpu $mode --max-batch 8 --token-ms 0.3 --host-us 2000 \
    -- -c 4 -n 12 --stream --max-tokens 8
  kill "${HOGS[@]}" 2>/dev/null; HOGS=()
done

export NETLAB_PREFIX=lsa$$
eval "$("$NETLAB" up --loss-to-client 8 --rate 20mbit)" || { fail "accuracy.setup: netlab up failed"; exit 0; }
CLEANUP+=("NETLAB_PREFIX=$NETLAB_PREFIX $NETLAB down")
for mode in events inferred; do
  # large non-streaming responses over a lossy, 20 Mbit/s link: the engine
  # is quick, the bytes are slow
  scenario lossy network $mode --netlab --max-batch 8 --token-ms 0.2 --host-us 100 --token-bytes 4000 \
    -- -c 4 -n 12 --max-tokens 100
done
