#!/usr/bin/env bash
# An engine nobody patched that serves one request at a time
# (tools/servers/node-slot.js: a FIFO in front of one slot, as a llama.cpp
# engine with one slot behind a Node front end): no engine events, no GPU.
# The time requests wait for the slot must be queueing (queueing.app, from
# the stream itself: DESIGN §11), not host: against the server's own truth
# (its FIFO's read, slot and done times: waiting from the read until the job
# before it freed the slot), the summed queueing.app is within 20% of the
# summed queue wait, each request's within max(2 ms, 10%), sums exact,
# and the verdict names queueing. A concurrent server (node-stream.js, every
# stream at once) must get none: its streams overlap.
source "$(dirname "$0")/lib.sh"
require_root app_queue
command -v node >/dev/null || { skip "app_queue: no node (tools/install-test-deps.sh)"; exit 0; }
PORT=18471

start_recording "$T/slot.data" "$T/ready" -- node "$ROOT/tools/servers/node-slot.js" --port $PORT \
  --prefill-ms 8 --token-ms 4 --truth "$T/slot.truth" --ready-file "$T/ready" ||
  { fail "app_queue.start: the server did not start"; exit 0; }
"$LOADGEN" --port $PORT -c 4 -n 24 --stream --max-tokens 8 --id-prefix slot- -o "$T/slot.lg" 2>/dev/null
stop_recording 0.5
"$LS" report --json "$T/slot.data" >"$T/slot.jsonl" 2>/dev/null
"$LS" report "$T/slot.data" >"$T/slot.txt" 2>/dev/null

/usr/bin/python3 - "$T/slot.jsonl" "$T/slot.truth" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
reqs = {r["x_request_id"]: r for r in recs if r.get("type") not in ("verdict", "empty") and r.get("x_request_id")}
verdict = next((r for r in recs if r.get("type") == "verdict"), {})
truth = {t["x_request_id"]: t for t in map(json.loads, open(sys.argv[2]))}
both = [k for k in truth if k in reqs]
def ok(c, name, what): print(("PASS" if c else "FAIL") + f" app_queue.{name}: {what}")
ok(len(both) == 24, "matched", f"{len(both)} of 24 requests in report and truth")
# waiting behind other requests: from the read until the job before it in
# the FIFO freed the slot (the first request's own start-up is not a wait)
order = sorted(truth.values(), key=lambda t: int(t["slot"]))
prev_done = {t["x_request_id"]: int(order[i - 1]["done"]) if i else 0 for i, t in enumerate(order)}
wait = {k: max(0, min(int(truth[k]["slot"]), prev_done[k]) - int(truth[k]["read"])) for k in both}
raw = sum(int(truth[k]["slot"]) - int(truth[k]["read"]) for k in both)
app = {k: reqs[k]["sub"].get("queueing.app") or 0 for k in both}
host = sum(reqs[k]["components"]["host"] or 0 for k in both)
sw, sa = sum(wait.values()), sum(app.values())
print(f"  queue wait (server's truth) {sw / 1e6:.1f} ms in all (read to slot: {raw / 1e6:.1f} ms); "
      f"queueing.app {sa / 1e6:.1f} ms; "
      f"host {host / 1e6:.1f} ms; engine source {set(reqs[k]['sources']['engine'] for k in both)}")
ok(sw > 0 and abs(sa - sw) <= 0.2 * sw, "total", f"summed queueing.app within 20% of the summed queue wait")
bad = [(k, app[k] / 1e6, wait[k] / 1e6) for k in both if abs(app[k] - wait[k]) > max(2e6, 0.1 * wait[k])]
ok(not bad, "per_request", f"{len(both) - len(bad)}/{len(both)} within max(2 ms, 10%) {bad[:3]}")
sums = [k for k in both if sum(v for v in reqs[k]["components"].values() if v is not None) == reqs[k]["total_ns"]]
ok(len(sums) == len(both), "sums", f"components sum exactly for {len(sums)}/{len(both)}")
ok(verdict.get("dominant") == "queueing.app" and verdict.get("component") == "queueing", "verdict",
   f"the verdict names {verdict.get('dominant')} ({verdict.get('component')}, {verdict.get('share')})")
PY
grep -m1 -E 'queueing.app' "$T/slot.txt" | sed 's/^/  text: /'

# a concurrent server: no application queue
start_recording "$T/conc.data" "$T/ready2" -- node "$ROOT/tools/servers/node-stream.js" --port $PORT \
  --step-ms 4 --ready-file "$T/ready2" || { fail "app_queue.concurrent: the server did not start"; exit 0; }
"$LOADGEN" --port $PORT -c 4 -n 24 --stream --max-tokens 8 --id-prefix conc- -o "$T/conc.lg" 2>/dev/null
stop_recording 0.5
n=$("$LS" report --json "$T/conc.data" 2>/dev/null | grep -c '"queueing.app"')
check app_queue.concurrent_none test "$n" -eq 0
