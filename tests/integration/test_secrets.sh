#!/usr/bin/env bash
# Credentials and users' data never reach a capture (DESIGN.md §5): planted
# values in the Authorization, Cookie, X-Api-Key and Api-Key request headers,
# an environment assignment on record's own command line, a --api-key flag of
# a tracked process, a prompt sentence in request bodies and the completions
# in response bodies (JSON and SSE) must be absent from the decompressed
# capture (rawcap.py, below any latsplit output), while the header lines
# themselves are still there (redacted, so the test sees the path it guards)
# and the requests are still rebuilt, tokens counted (1500-byte tokens: every
# event larger than the captured prefix, as in the demo). With --capture-bodies
# the prompt is kept (the scrubbing is what removed it).
source "$(dirname "$0")/lib.sh"
require_root secrets.capture
PORT=18391
start_recording "$T/cap.data" "$T/ready" -- env OPENAI_API_KEY=sk-PLANTEDENV0001 sh -c "
  python3 -c 'import time; time.sleep(4)' --api-key PLANTEDFLAG0002 &
  exec '$ENGINE' --port $PORT --bind 127.0.0.1 --token-bytes 1500 --ready-file '$T/ready'" ||
  { fail "secrets.setup: engine did not start"; exit 0; }
for i in 1 2 3; do
  stream=$([[ $i -eq 3 ]] && echo ', "stream": true')
  curl -s -o /dev/null -H "Authorization: Bearer sk-PLANTEDBEARER0003" \
    -H "Cookie: session=PLANTEDCOOKIE0004" -H "X-Api-Key: PLANTEDXKEY0005" \
    -H "api-key: PLANTEDAZURE0006" -H "X-Request-Id: sec-$i" \
    -d "{\"prompt\": \"PLANTEDPROMPT0007 the quick brown fox\", \"max_tokens\": 3$stream}" \
    "http://127.0.0.1:$PORT/v1/completions"
done
stop_recording 0.5
python3 "$ROOT/tests/integration/rawcap.py" "$T/cap.data" >"$T/raw"
leaks=$(grep -aoE 'PLANTED[A-Z]*[0-9]*|text_completion' "$T/raw" | sort | uniq -c | tr '\n' ' ')
heads=$(grep -aoi -E '^(authorization|cookie|x-api-key|api-key): \*+' "$T/raw" | wc -l)
"$LS" report --json "$T/cap.data" >"$T/r.jsonl"
found=$(grep -c '"x_request_id":"sec-.*"outcome":"ok"\|"outcome":"ok".*"x_request_id":"sec-' "$T/r.jsonl")
tokens=$(grep '"x_request_id":"sec-3"' "$T/r.jsonl" | grep -o '"tokens":[0-9]*' | cut -d: -f2)
check "secrets.capture: planted secrets and body text in the raw capture: ${leaks:-none}; redacted header lines: $heads; requests rebuilt ok: $found of 3; streamed tokens counted: ${tokens:-?} of 3" \
  [ -z "$leaks" -a "$heads" -ge 12 -a "$found" -eq 3 -a "${tokens:-0}" -ge 3 ]

# The same through vectored I/O at awkward boundaries (iov_server.py): a
# credential cut across recvmsg iovecs, a Set-Cookie value across sendmsg
# iovecs, streamed chunks as uvloop writes them; then events written in
# pieces, each its own chunk (iov-4), and an Ollama-style NDJSON stream
# (iov-5): completions the scrub once kept whole.
rm -f "$T/ready"
start_recording "$T/iov.data" "$T/ready" -- python3 "$ROOT/tests/integration/iov_server.py" \
  127.0.0.1 $PORT "$T/ready" || { fail "secrets.iovecs: server did not start"; exit 0; }
for i in 1 2 3 4 5; do
  stream=$([[ $i -ne 2 ]] && echo ', "stream": true')
  [[ $i -eq 4 ]] && stream+=', "split": true'
  [[ $i -eq 5 ]] && stream=', "ndjson": true'
  curl -s -o /dev/null -H "Authorization: Bearer sk-PLANTEDBEARER0003" \
    -H "Cookie: session=PLANTEDCOOKIE0004" -H "X-Api-Key: PLANTEDXKEY0005" -H "X-Request-Id: iov-$i" \
    -d "{\"prompt\": \"PLANTEDPROMPT0007 the quick brown fox\", \"max_tokens\": 3$stream}" \
    "http://127.0.0.1:$PORT/v1/completions"
done
stop_recording 0.5
python3 "$ROOT/tests/integration/rawcap.py" "$T/iov.data" >"$T/iov.raw"
leaks=$(grep -aoE 'PLANTED[A-Z]*[0-9]*' "$T/iov.raw" | sort | uniq -c | tr '\n' ' ')
"$LS" report --json "$T/iov.data" >"$T/iov.jsonl"
found=$(grep -c '"outcome":"ok".*"x_request_id":"iov-' "$T/iov.jsonl")
tokens=$(grep '"x_request_id":"iov-3"' "$T/iov.jsonl" | grep -o '"tokens":[0-9]*' | cut -d: -f2)
split=$(grep '"x_request_id":"iov-4"' "$T/iov.jsonl" | grep -o '"tokens":[0-9]*' | cut -d: -f2)
pieces=$("$LS" dump "$T/iov.data" | grep -c ' sendmsg .*pieces=\| recvmsg ')
check "secrets.iovecs: across iovecs, planted secrets and body text in the raw capture: ${leaks:-none}; requests rebuilt ok: $found of 5; tokens ${tokens:-?} of 3, of events in pieces ${split:-?} of 3; vectored records $pieces" \
  [ -z "$leaks" -a "$found" -eq 5 -a "${tokens:-0}" -ge 3 -a "${split:-0}" -ge 3 -a "$pieces" -gt 0 ]

# The same streams through Debian's nginx (proxy_buffering off): nginx
# re-chunks what it read from the upstream and writes it with writev, two
# events in one chunk or one across two. Recorded on nginx's port.
if command -v nginx >/dev/null; then
  source "$ROOT/tests/helpers/nginx_conf.sh"
  NGP=$((PORT + 1))
  nginx_conf_write "$T/ng" "  server { listen 127.0.0.1:$NGP; location / { proxy_pass http://127.0.0.1:$PORT;
    proxy_http_version 1.1; proxy_buffering off; } }"
  rm -f "$T/ready"
  python3 "$ROOT/tests/integration/iov_server.py" 127.0.0.1 $PORT "$T/ready" &
  UPID=$!
  nginx -c "$T/ng/nginx.conf" -e "$T/ng/error.log" &
  NGPID=$!
  CLEANUP+=("kill $UPID $NGPID")
  wait_for_file "$T/ready" 10
  for i in $(seq 50); do ss -Hltn "sport = :$NGP" | grep -q . && break; sleep 0.1; done
  "$LS" record -o "$T/ng.data" --port $NGP 2>"$T/ng.log" &
  RPID=$!
  for i in $(seq 100); do grep -q recording "$T/ng.log" && break; sleep 0.05; done
  for i in 1 2 3 4 5; do
    stream=$([[ $i -ne 2 ]] && echo ', "stream": true')
    [[ $i -eq 4 ]] && stream+=', "split": true'
    [[ $i -eq 5 ]] && stream=', "ndjson": true'
    curl -s -o /dev/null -H "X-Request-Id: ng-$i" \
      -d "{\"prompt\": \"PLANTEDPROMPT0007 the quick brown fox\", \"max_tokens\": 3$stream}" \
      "http://127.0.0.1:$NGP/v1/completions"
  done
  stop_recording 0.5
  kill $UPID $NGPID; wait $UPID $NGPID 2>/dev/null
  python3 "$ROOT/tests/integration/rawcap.py" "$T/ng.data" >"$T/ng.raw"
  leaks=$(grep -aoE 'PLANTED[A-Z]*[0-9]*' "$T/ng.raw" | sort | uniq -c | tr '\n' ' ')
  "$LS" report --json "$T/ng.data" >"$T/ng.jsonl"
  found=$(grep -c '"outcome":"ok".*"x_request_id":"ng-' "$T/ng.jsonl")
  tokens=$(for i in 1 3 4; do grep "\"x_request_id\":\"ng-$i\"" "$T/ng.jsonl" | grep -o '"tokens":[0-9]*' | cut -d: -f2; done | tr '\n' ' ')
  check "secrets.nginx: through nginx, planted secrets and body text in the raw capture: ${leaks:-none}; requests rebuilt ok: $found of 5; tokens of the 3 streams: ${tokens:-?}(3 each)" \
    [ -z "$leaks" -a "$found" -eq 5 -a "$tokens" = "3 3 3 " ]
else
  skip "secrets.nginx: nginx-light missing (tools/install-test-deps.sh)"
fi

# --capture-bodies keeps them: the scrubbing above is what removed them
rm -f "$T/ready"
"$LS" record -o "$T/bodies.data" --capture-bodies -- "$ENGINE" --port $PORT --bind 127.0.0.1 \
  --ready-file "$T/ready" 2>/dev/null &
RPID=$!
wait_for_file "$T/ready" 10
curl -s -o /dev/null -d '{"prompt": "PLANTEDPROMPT0007 kept", "max_tokens": 2}' "http://127.0.0.1:$PORT/v1/completions"
stop_recording 0.5
python3 "$ROOT/tests/integration/rawcap.py" "$T/bodies.data" >"$T/raw2"
check "secrets.capture_bodies: with --capture-bodies the prompt is kept" grep -aq 'PLANTEDPROMPT0007 kept' "$T/raw2"

# No record carries bytes it did not write: string fields past their NUL and
# variable-size records' padding hold zeros, not what the ring buffer or a
# per-CPU scratch held before (an earlier record's payload, unredacted). A
# 1 MiB ring wraps within the first second here, so reused memory is met;
# DWARF stacks exercise the stack copies' padding.
rm -f "$T/ready"
"$LS" record -o "$T/stale.data" --ringbuf 1 -F 99 --call-graph dwarf -- "$ENGINE" --port $PORT \
  --bind 127.0.0.1 --tokens 4 --ready-file "$T/ready" 2>"$T/stale.log" &
RPID=$!
wait_for_file "$T/ready" 10
"$LOADGEN" --port $PORT -c 4 -d 2 --stream --max-tokens 4 >/dev/null 2>&1
stop_recording 0.5
res=$(cd "$ROOT/tests/integration" && python3 stale_bytes.py <("$ROOT/build/event-fields") "$T/stale.data")
info "$res"
read -r _ nrec _ nchecked _ nstale <<<"$(head -1 <<<"$res")"
check "secrets.stale_bytes: records holding bytes no field wrote: ${nstale:-?} of ${nchecked:-?} checked (${nrec:-?} records)" \
  [ "${nstale:-1}" -eq 0 -a "${nchecked:-0}" -ge 10000 ]
