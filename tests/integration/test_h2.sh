#!/usr/bin/env bash
# HTTP/2 and gRPC streams, cleartext (DESIGN.md §11): each stream is a
# request, header blocks decoded with libnghttp2's HPACK inflater.
#  - grpc: a python3-grpcio server-streaming service (how Triton and
#    TensorRT-LLM stream tokens; raw-bytes handlers), 4 client threads on
#    one channel (one connection, streams interleaved), the client logging
#    its own marks;
#  - node: Node's http2 server streaming SSE (h2c, prior knowledge) to
#    Node's http2 client, 4 concurrent streams on one session;
#  - secrets: gRPC metadata `authorization` (raw, not Huffman: a control
#    field of the same shape is found in the capture), the prompt in the
#    request message and the streamed tokens never reach the capture, and
#    the RPCs are still rebuilt;
#  - flow_control: a client that stops reading a stream (its WINDOW_UPDATEs
#    stop) holds the server's stream: that time is network.send_blocked,
#    at most the client's own pause, none on streams it did not pause;
#  - midflight: a Node http2 session met mid-flight: every stream partial
#    (no HPACK state), none split, and the report says why.
# Truth: the clients' own marks (client_accuracy.py): every request found
# once, ok, exact sums, total and TTFT within max(1 ms, 2%).
source "$(dirname "$0")/lib.sh"
require_root h2.grpc h2.node h2.secrets h2.capture_bodies h2.midflight h2.flow_control
PY=/usr/bin/python3
ACC=$ROOT/tests/integration/client_accuracy.py

# --- gRPC
if $PY -c 'import grpc' 2>/dev/null; then
  start_recording "$T/grpc.data" "$T/grpc.ready" -- $PY "$ROOT/tools/servers/grpc-stream.py" \
    --port 18481 --ready-file "$T/grpc.ready" || fail "h2.grpc: server did not start"
  $PY "$ROOT/tests/integration/grpc_client.py" 127.0.0.1:18481 "$T/grpc.lg" -c 4 -n 8 \
    --prompt "PLANTEDPROMPT0009 the quick brown fox" \
    --meta "authorization=Bearer PLANTEDH2BEARER}}}}}}}}}}}}}}}}}}}}" \
    --meta "x-plant-control=PLANTCONTROL}}}}}}}}}}}}}}}}}}}}" 2>"$T/grpc.client.err"
  stop_recording 0.5
  "$LS" report --json "$T/grpc.data" >"$T/grpc.jsonl"
  # the Python gRPC client's marks: ~1 in 60 calls 1-4 ms late of its own
  # (GIL and core-thread handoffs no schedstat ties to a call): one allowed
  $PY "$ACC" h2.grpc "$T/grpc.jsonl" "$T/grpc.lg" --allow 1
  $PY - "$T/grpc.jsonl" <<'PY'
import json, sys
rs = [r for r in map(json.loads, open(sys.argv[1])) if r.get("type") != "verdict"]
bad = [(r["x_request_id"], r["protocol"], r["grpc_status"], r["tokens"], r["path"]) for r in rs
       if r["protocol"] != "grpc" or r["grpc_status"] != 0
       or r["tokens"] != (1 if r["x_request_id"].startswith("warm-") else 8)
       or r["path"] != "/llm.Generate/Stream" or r["tls"]]
streams = len({(r["conn_id"], r["stream"]) for r in rs})
conns = len({r["conn_id"] for r in rs})
ok = rs and not bad and streams == len(rs)
print(("PASS" if ok else "FAIL") + f" h2.grpc.fields: {len(rs)} RPCs on {conns} connection(s) as "
      f"{streams} streams, protocol grpc, grpc_status 0, 8 tokens each (1 a warm-up), the route as path; "
      f"bad: {bad[:3]}")
PY
  python3 "$ROOT/tests/integration/rawcap.py" "$T/grpc.data" >"$T/grpc.raw"
  leaks=$(grep -aoE 'PLANTED[A-Z0-9]*|token 00' "$T/grpc.raw" | sort | uniq -c | tr '\n' ' ')
  control=$(grep -ac 'PLANTCONTROL' "$T/grpc.raw")
  check "h2.secrets: gRPC authorization, prompt and tokens in the raw capture: ${leaks:-none}; the raw control field found: $control" \
    [ -z "$leaks" -a "$control" -gt 0 ]
  # --capture-bodies keeps the messages: the scrubbing above is what removed them
  "$LS" record -o "$T/bodies.data" --capture-bodies -- $PY "$ROOT/tools/servers/grpc-stream.py" \
    --port 18484 --ready-file "$T/bodies.ready" 2>/dev/null &
  RPID=$!
  CLEANUP+=("kill -INT $RPID")
  wait_for_file "$T/bodies.ready" 10
  $PY "$ROOT/tests/integration/grpc_client.py" 127.0.0.1:18484 "$T/bodies.lg" -c 1 -n 1 \
    --prompt "PLANTEDPROMPT0009 kept" 2>/dev/null
  stop_recording 0.5
  python3 "$ROOT/tests/integration/rawcap.py" "$T/bodies.data" >"$T/bodies.raw"
  check "h2.capture_bodies: with --capture-bodies the gRPC request message (its prompt) is kept" \
    grep -aq "PLANTEDPROMPT0009 kept" "$T/bodies.raw"
else
  skip "h2.grpc: python3-grpcio is not installed (tools/install-test-deps.sh)"
  skip "h2.secrets: python3-grpcio is not installed (tools/install-test-deps.sh)"
  skip "h2.capture_bodies: python3-grpcio is not installed (tools/install-test-deps.sh)"
fi

# --- Node http2, SSE
if command -v node >/dev/null; then
  start_recording "$T/node.data" "$T/node.ready" -- node "$ROOT/tools/servers/node-h2.js" \
    --port 18482 --ready-file "$T/node.ready" || fail "h2.node: server did not start"
  node "$ROOT/tests/integration/h2_client.js" 18482 "$T/node.lg" 4 6 2>"$T/node.client.err"
  stop_recording 0.5
  "$LS" report --json "$T/node.data" >"$T/node.jsonl"
  $PY "$ACC" h2.node "$T/node.jsonl" "$T/node.lg"
  n=$(grep -c '"protocol":"h2c".*"tokens":8,' "$T/node.jsonl")
  check "h2.node.fields: ${n:-0} of 36 streams (12 of them the client's unlogged warm-ups) h2c with 8 tokens ([DONE] not one)" \
    [ "${n:-0}" -eq 36 ]
else
  skip "h2.node: node is not installed (tools/install-test-deps.sh)"
fi

# --- flow control: the client stops reading a stream for 100 ms after its
# first data; 16 KB tokens spend the server's window (65535, and Node's 16 KB
# read buffer) and the stream waits for the client's WINDOW_UPDATE: that wait
# is network.send_blocked, never more than the client's pause, and none on
# the streams it did not pause; totals still the client's
if command -v node >/dev/null; then
  start_recording "$T/fc.data" "$T/fc.ready" -- node "$ROOT/tools/servers/node-h2.js" \
    --port 18485 --ready-file "$T/fc.ready" --token-bytes 16000 || fail "h2.flow_control: server did not start"
  H2_PAUSE_MS=100 node "$ROOT/tests/integration/h2_client.js" 18485 "$T/fc.lg" 1 6 fc- 2>"$T/fc.client.err"
  stop_recording 0.5
  "$LS" report --json "$T/fc.data" >"$T/fc.jsonl"
  $PY "$ACC" h2.flow_control "$T/fc.jsonl" "$T/fc.lg"
  $PY - "$T/fc.jsonl" "$T/fc.lg" <<'PY'
import json, sys
rep = {r["x_request_id"]: r for r in map(json.loads, open(sys.argv[1])) if r.get("x_request_id")}
rows, bad = [], []
for c in map(json.loads, open(sys.argv[2])):
    r = rep.get(c["x_request_id"])
    b = (r["sub"].get("network.send_blocked") or 0) if r else None
    p = c.get("paused_ns", 0)
    rows.append((c["x_request_id"], round(p / 1e6, 1), b and round(b / 1e6, 1)))
    if b is None or (p and not 0 < b <= p + 1e6) or (not p and b):
        bad.append(rows[-1])
paused = sum(1 for x in rows if x[1])
print(("PASS" if rows and paused and not bad else "FAIL") + f" h2.flow_control.send_blocked: "
      f"(id, client paused ms, send_blocked ms) {rows}; off: {bad}")
PY
else
  skip "h2.flow_control: node is not installed (tools/install-test-deps.sh)"
fi

# --- mid-flight: a Node http2 session that began before the capture
if command -v node >/dev/null; then
  rm -f "$T/mid.ready"
  node "$ROOT/tools/servers/node-h2.js" --port 18483 --ready-file "$T/mid.ready" & SPID=$!
  CLEANUP+=("kill $SPID")
  wait_for_file "$T/mid.ready" 10
  # more requests than the capture can see (~125 ms each): the session
  # outlives record's start-up however long a loaded host makes it (40 were
  # all done before it once: 0 streams); stopped once the capture is
  node "$ROOT/tests/integration/h2_client.js" 18483 "$T/mid.lg" 2 400 mid- 2>/dev/null & CPID=$!
  sleep 1.5
  "$LS" record --port 18483 -d 2 -o "$T/mid.data" 2>"$T/mid.log"
  kill $CPID 2>/dev/null; wait $CPID 2>/dev/null
  "$LS" report --json "$T/mid.data" >"$T/mid.jsonl"
  "$LS" report "$T/mid.data" >"$T/mid.txt"
  res=$($PY - "$T/mid.jsonl" <<'PY'
import json, sys
rs = [r for r in map(json.loads, open(sys.argv[1])) if r.get("type") in (None, "request")]
partial = [r for r in rs if r["outcome"] == "partial" and r["protocol"] == "h2c" and r["stream"]]
split = [r["id"] for r in rs if r["total_ns"] is not None]
print(len(rs), len(partial), len(split))
PY
)
  read -r n part split <<<"$res"
  said=$(grep -c 'HTTP/2 connections met mid-flight: their streams are partial' "$T/mid.txt")
  check "h2.midflight: a session met mid-flight: $part of $n streams partial h2c, $split split (want none); the report says why: $said" \
    [ "${n:-0}" -ge 10 -a "$part" -eq "$n" -a "$split" -eq 0 -a "$said" -eq 1 ]
else
  skip "h2.midflight: node is not installed (tools/install-test-deps.sh)"
fi
