#!/usr/bin/env bash
# HTTP requests over loopback, one capture: keep-alive, pipelining, a new
# connection per request, garbage, half a request, a reset mid-stream, and
# loadgen's client-side times against latsplit's server-side ones.
source "$(dirname "$0")/lib.sh"
require_root http.keepalive http.pipeline http.bad_input http.client_view

PORT=18282
start_recording "$T/cap.data" "$T/ready" -- "$ENGINE" --port $PORT --bind 127.0.0.1 \
  --token-ms 1 --delay-ms 3 --ready-file "$T/ready" || { fail "http.setup: engine did not start"; exit 0; }
"$LOADGEN" --port $PORT -c 1 -n 10 --stream --id-prefix ka- -o "$T/ka.jsonl" 2>/dev/null
python3 "$ROOT/tests/integration/clients.py" pipeline 127.0.0.1 $PORT >/dev/null
python3 "$ROOT/tests/integration/clients.py" garbage 127.0.0.1 $PORT
python3 "$ROOT/tests/integration/clients.py" half 127.0.0.1 $PORT
python3 "$ROOT/tests/integration/clients.py" reset 127.0.0.1 $PORT
"$LOADGEN" --port $PORT -c 2 -n 6 --no-keepalive --id-prefix nk- -o "$T/nk.jsonl" 2>/dev/null
stop_recording 0.5
"$LS" report --json "$T/cap.data" >"$T/report.jsonl" 2>"$T/report.err"
check "http.report_exit0" test $? -eq 0
"$LS" report "$T/cap.data" >"$T/report.txt" 2>&1
sed -n '1,6p' "$T/report.txt" | sed 's/^/  /'

python3 - "$T/report.jsonl" "$T/ka.jsonl" "$T/nk.jsonl" "$ROOT/tests/integration" <<'PY'
import json, sys, collections
reqs = [r for r in map(json.loads, open(sys.argv[1])) if r.get("type") != "verdict"]
def ok(name, cond, detail=""):
    print(("PASS " if cond else "FAIL ") + name + (": " + detail if detail else ""))
by_conn = collections.defaultdict(list)
for r in reqs:
    by_conn[r["conn_id"]].append(r)
for v in by_conn.values():
    v.sort(key=lambda r: r["id"])

ka = [r for r in reqs if (r["x_request_id"] or "").startswith("ka-")]
ok("http.keepalive", len(ka) == 10 and len({r["conn_id"] for r in ka}) == 1
   and all(r["status"] == 200 and r["outcome"] == "ok" and r["tokens"] == 16
           and r["path"] == "/v1/completions" for r in ka),
   f"{len(ka)} requests on {len({r['conn_id'] for r in ka})} connection(s)")
ok("http.components_sum", all(r["components"]["network"] ==
   r["sub"]["network.connect"] + r["sub"]["network.upload"] + r["sub"]["network.send_blocked"]
   + r["sub"]["network.drain"] for r in ka))

pipe = [v for v in by_conn.values() if any(r["path"] == "/nope" for r in v)]
want = [("GET", "/health", 200), ("POST", "/v1/completions", 200),
        ("POST", "/v1/chat/completions", 200), ("GET", "/nope", 404)]
got = [(r["method"], r["path"], r["status"]) for r in pipe[0]] if pipe else []
ok("http.pipeline", got == want, f"{got}")
if pipe:
    ok("http.pipeline_tokens", pipe[0][2]["tokens"] == 3 and pipe[0][2]["streaming"],
       f"chat stream tokens={pipe[0][2]['tokens']}")

nk = [r for r in reqs if (r["x_request_id"] or "").startswith("nk-")]
ok("http.new_connections", len(nk) == 6 and len({r["conn_id"] for r in nk}) == 6
   and all(r["outcome"] == "ok" for r in nk), f"{len(nk)} requests")

aborted = [r for r in reqs if r["outcome"] == "aborted"]
ok("http.half_request", len(aborted) == 1 and aborted[0]["method"] is None,
   f"{[(r['method'], r['outcome']) for r in aborted]}")
resets = [r for r in reqs if r["outcome"] == "reset"]
ok("http.reset_midstream", len(resets) == 1 and resets[0]["tokens"] > 0 and resets[0]["resets"] > 0,
   f"{[(r['path'], r['tokens'], r['resets']) for r in resets]}")
ok("http.no_bogus", len(reqs) == 10 + 4 + 6 + 1 + 1, f"{len(reqs)} requests in all")

# Client side (loadgen, same clock) vs server side: the client's view
# contains the server's, give or take a network one-way delay each end,
# and the client's own waits: before its request reached the server (its
# CPU wait until the send returned; on a new connection, connect()'s time:
# a loaded host may process the SYN any time before connect() returns),
# and for a CPU before its first-token and end marks (first_wait_ns,
# end_wait_ns).
sys.path.insert(0, sys.argv[4])
from client_marks import waits
SLACK = 2_000_000
lg = {j["x_request_id"]: j for f in sys.argv[2:4] for j in map(json.loads, open(f))}
bad = []
for r in ka + nk:
    c = lg.get(r["x_request_id"])
    srtt = r["srtt_max_us"] * 1000
    if not c:
        bad.append((r["x_request_id"], "missing")); continue
    for k in ("total_ns", "ttft_ns"):
        late = waits(c, k)
        if not (c[k] + SLACK >= r[k] and c[k] <= r[k] + srtt + late + SLACK):
            bad.append((r["x_request_id"], k, c[k], r[k], srtt, late))
ok("http.client_view", not bad, f"{len(ka) + len(nk)} requests within srtt + the client's waits + 2 ms (id, quantity, client, latsplit, srtt, waits); bad: {bad[:3]}")
PY
grep -q "1 opaque" "$T/report.txt" && pass "http.garbage_opaque" || fail "http.garbage_opaque: $(sed -n 4p "$T/report.txt")"
