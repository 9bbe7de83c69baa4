#!/usr/bin/env bash
# OTLP span export (issue 23), decoded by the OpenTelemetry project's own
# code (npm @opentelemetry/otlp-transformer's generated protobuf root, in
# tests/helpers/otlp_receiver.js). The mock engine serves loadgen's requests
# and ten more from a client that sends its own W3C traceparent and
# X-Request-Id (the truth the joins are checked against):
# - live: `record --otlp` exports each request as it ends;
# - offline: `report --otlp` on the capture, to a receiver that answers the
#   first two POSTs 503 (the exporter must retry, and lose nothing).
# Each time: one SERVER span per request report --json lists; the client's
# trace id and parent span id on the ten; latsplit.<component>_ns equal to
# report's and summing exactly to the span's duration; the phase children
# inside the parent, contiguous, never overlapping; gen_ai.request.id.
source "$(dirname "$0")/lib.sh"
require_root otlp.live otlp.offline otlp.retry
ROOTJS=$ROOT/build/npm/node_modules/@opentelemetry/otlp-transformer/build/src/generated/root.js
command -v node >/dev/null || { skip "otlp: no node (tools/install-test-deps.sh)"; exit 0; }
[[ -e $ROOTJS ]] || { skip "otlp: no $ROOTJS (tools/install-test-deps.sh)"; exit 0; }
PORT=18451 OPORT=18452 OPORT2=18453

receiver() { # PORT OUT READY [FAIL_FIRST]
  node "$ROOT/tests/helpers/otlp_receiver.js" "$ROOTJS" "$1" "$2" "$3" "${4:-0}" >"$2.log" 2>&1 &
  echo $!
}
RX1=$(receiver $OPORT "$T/live.jsonl" "$T/rx1.ready")
CLEANUP+=("kill $RX1")
wait_for_file "$T/rx1.ready" 10 || { fail "otlp.setup: the receiver did not start"; cat "$T/live.jsonl.log"; exit 0; }
"$ENGINE" --port $PORT --bind 127.0.0.1 --token-ms 2 --max-batch 4 --ready-file "$T/ready" 2>/dev/null &
EPID=$!
CLEANUP+=("kill $EPID")
wait_for_file "$T/ready" 10 || { fail "otlp.setup: engine did not start"; exit 0; }
"$LS" record --port $PORT --otlp "http://127.0.0.1:$OPORT" -o "$T/cap.data" 2>"$T/rec.log" &
RPID=$!
CLEANUP+=("kill -INT $RPID")
wait_recording "$T/rec.log" || { fail "otlp.setup: record did not start"; cat "$T/rec.log"; exit 0; }
"$LOADGEN" --port $PORT -c 4 -n 40 --stream --max-tokens 6 --id-prefix lg- 2>/dev/null
# ten requests carrying the client's own trace context
/usr/bin/python3 - "$PORT" "$T/sent.jsonl" <<'PY'
import http.client, json, os, sys
port, out = int(sys.argv[1]), open(sys.argv[2], "w")
for i in range(10):
    trace, parent = os.urandom(16).hex(), os.urandom(8).hex()
    tp, xrid = f"00-{trace}-{parent}-01", f"tp-{i}"
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    body = json.dumps({"model": "mock", "max_tokens": 4, "stream": True, "prompt": "hi"})
    c.request("POST", "/v1/completions", body,
              {"Content-Type": "application/json", "traceparent": tp, "X-Request-Id": xrid})
    r = c.getresponse(); r.read(); c.close()
    out.write(json.dumps({"trace": trace, "parent": parent, "xrid": xrid, "status": r.status}) + "\n")
PY
sleep 0.5
kill -INT $RPID; wait $RPID
grep 'OTLP:' "$T/rec.log" | sed 's/^/    /'
kill $RX1; wait $RX1 2>/dev/null
"$LS" report --json "$T/cap.data" >"$T/report.jsonl" 2>/dev/null

RX2=$(receiver $OPORT2 "$T/offline.jsonl" "$T/rx2.ready" 2)
CLEANUP+=("kill $RX2")
wait_for_file "$T/rx2.ready" 10 || { fail "otlp.setup: the second receiver did not start"; exit 0; }
"$LS" report --otlp "http://127.0.0.1:$OPORT2" "$T/cap.data" >/dev/null 2>"$T/rep.log"; rrc=$?
grep 'OTLP:' "$T/rep.log" | sed 's/^/    /'
kill $RX2; wait $RX2 2>/dev/null

check_spans() { # NAME SPANS.jsonl
  /usr/bin/python3 - "$T/report.jsonl" "$2" "$T/sent.jsonl" "$1" <<'PY'
import json, sys
reqs = [r for r in map(json.loads, open(sys.argv[1])) if "outcome" in r and r["total_ns"] is not None]
spans = [json.loads(l) for l in open(sys.argv[2])]
sent = {s["xrid"]: s for s in map(json.loads, open(sys.argv[3]))}
name = sys.argv[4]
server = [s for s in spans if s["kind"] == 2]
kids = {}
for s in spans:
    if s["kind"] == 1:
        kids.setdefault(s["parent_span_id"], []).append(s)
bad = []
by_xrid = {s["attributes"].get("gen_ai.request.id"): s for s in server}
if len(server) != len(reqs):
    bad.append(f"{len(server)} server spans for {len(reqs)} split requests")
comps = ["network", "queueing", "transfer", "compute", "host", "other"]
joined = 0
for r in reqs:
    s = by_xrid.get(r["x_request_id"])
    if not s:
        bad.append(f"request {r['x_request_id']}: no span"); continue
    a, dur = s["attributes"], int(s["end"]) - int(s["start"])
    got = {c: int(a[f"latsplit.{c}_ns"]) for c in comps if f"latsplit.{c}_ns" in a}
    want = {c: v for c, v in r["components"].items() if v is not None}
    if got != want:
        bad.append(f"{r['x_request_id']}: components {got} != report's {want}")
    if sum(got.values()) != dur or dur != r["total_ns"]:
        bad.append(f"{r['x_request_id']}: components sum {sum(got.values())}, span {dur}, total {r['total_ns']}")
    if s["name"] != "POST /v1/completions" or a.get("http.response.status_code") != "200":
        bad.append(f"{r['x_request_id']}: name {s['name']!r}, status {a.get('http.response.status_code')}")
    tp = sent.get(r["x_request_id"])
    if tp:
        if s["trace_id"] != tp["trace"] or s["parent_span_id"] != tp["parent"]:
            bad.append(f"{r['x_request_id']}: trace {s['trace_id']}/{s['parent_span_id']}, client sent {tp['trace']}/{tp['parent']}")
        else:
            joined += 1
    elif s["parent_span_id"]:
        bad.append(f"{r['x_request_id']}: a parent without a traceparent")
    ch = sorted(kids.get(s["span_id"], []), key=lambda c: int(c["start"]))
    if not ch:
        bad.append(f"{r['x_request_id']}: no phase children"); continue
    t = int(s["start"])
    for c in ch:
        b, e = int(c["start"]), int(c["end"])
        if b != t or e <= b or c["trace_id"] != s["trace_id"]:
            bad.append(f"{r['x_request_id']}: child {c['name']} [{b},{e}] not contiguous at {t}"); break
        t = e
    if t != int(s["end"]):
        bad.append(f"{r['x_request_id']}: children end at {t}, the span at {s['end']}")
ok = not bad and joined == len(sent) == 10
print(f"{name}: {len(server)} server spans, {sum(len(v) for v in kids.values())} phase children "
      f"for {len(reqs)} requests; {joined} of {len(sent)} joined to the client's traceparent")
for b in bad[:6]:
    print("  " + b)
print("OK" if ok else "BAD")
PY
}
check_spans live "$T/live.jsonl" >"$T/live.txt"; sed 's/^/    /' "$T/live.txt"
check "otlp.live: record --otlp sent one span per request with the client's trace context, components exact, phases tiling the span" \
  grep -qx OK "$T/live.txt"
check_spans offline "$T/offline.jsonl" >"$T/offline.txt"; sed 's/^/    /' "$T/offline.txt"
check "otlp.offline: report --otlp the same from the capture" grep -qx OK "$T/offline.txt"
check "otlp.retry: two 503s were retried (report exit $rrc), nothing dropped" \
  bash -c "[[ $rrc -eq 0 ]] && grep -q '(2 retries).*dropped: 0 queue full, 0 refused' '$T/rep.log'"
# an endpoint that is not there: report says so and fails
"$LS" report --otlp "http://127.0.0.1:9" "$T/cap.data" >/dev/null 2>"$T/down.log"; drc=$?
check "otlp.down: an unreachable endpoint fails the export in one line (exit $drc)" \
  bash -c "[[ $drc -eq 1 ]] && grep -q 'OTLP export failed, no span delivered' '$T/down.log'"
