#!/usr/bin/env bash
# The live path gives what the file path gives: a capture's records handed to
# the analysis core one at a time, shuffled as a ring buffer interleaves
# CPUs (build/live-replay), must produce the same per-request JSON as
# `latsplit report --json` on the file (verdict record included), byte for byte. On the golden
# fixture, the synthetic flame capture, and a capture recorded here.
source "$(dirname "$0")/lib.sh"
REPLAY=$ROOT/build/live-replay
"$ROOT/build/flame-capture" "$T/synthetic.data" >/dev/null
caps=("$ROOT/tests/golden/mock.data" "$T/synthetic.data")
if [[ $(id -u) -eq 0 ]]; then
  start_recording "$T/rec.data" "$T/ready" -- "$ENGINE" --port 18411 --bind 127.0.0.1 \
    --token-ms 1 --max-batch 3 --ready-file "$T/ready" && {
    "$LOADGEN" --port 18411 -c 6 -n 60 --stream --max-tokens 6 2>/dev/null
    stop_recording 0.3
    caps+=("$T/rec.data")
  }
fi
for c in "${caps[@]}"; do
  name=$(basename "$c")
  "$LS" report --json "$c" >"$T/file.jsonl" 2>/dev/null
  "$REPLAY" "$c" >"$T/live.jsonl" 2>"$T/live.err"
  n=$(grep -vc '"type":"verdict"' "$T/file.jsonl")
  if [[ $n -gt 0 ]] && cmp -s "$T/file.jsonl" "$T/live.jsonl"; then
    pass "live.same_json.$name: $n requests, identical through the live path"
  else
    fail "live.same_json.$name: $n requests by file, $(wc -l <"$T/live.jsonl") live; first difference:"
    diff "$T/file.jsonl" "$T/live.jsonl" | head -4 | cut -c1-300 | sed 's/^/    /'
  fi
done
