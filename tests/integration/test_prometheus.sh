#!/usr/bin/env bash
# A real Prometheus (Debian's) scrapes `latsplit record --metrics`: started
# on loopback with a temporary config and data dir, stopped after. Its HTTP
# API must return histogram counts that equal what `report --json` computes
# from the capture recorded over the same window: every bucket of request
# duration, TTFT and each component; the outcome counters too.
source "$(dirname "$0")/lib.sh"
require_root prometheus.scrape prometheus.histograms
PROM=$(command -v prometheus || true)
if [[ -z $PROM ]]; then
  skip "prometheus.scrape: Debian's prometheus is not installed (tools/install-test-deps.sh)"; exit 0
fi
PORT=18432 MPORT=18433 PPORT=18434
"$ENGINE" --port $PORT --bind 127.0.0.1 --token-ms 2 --max-batch 4 --ready-file "$T/ready" 2>/dev/null &
EPID=$!
CLEANUP+=("kill $EPID")
wait_for_file "$T/ready" 10 || { fail "prometheus.setup: engine did not start"; exit 0; }
"$LS" record --port $PORT --metrics 127.0.0.1:$MPORT -o "$T/cap.data" 2>"$T/rec.log" &
RPID=$!
CLEANUP+=("kill -INT $RPID")
wait_recording "$T/rec.log" || { fail "prometheus.setup: record did not start"; cat "$T/rec.log"; exit 0; }
cat >"$T/prom.yml" <<YML
global:
  scrape_interval: 1s
scrape_configs:
  - job_name: latsplit
    static_configs:
      - targets: ['127.0.0.1:$MPORT']
YML
"$PROM" --config.file="$T/prom.yml" --storage.tsdb.path="$T/tsdb" \
  --web.listen-address=127.0.0.1:$PPORT >"$T/prom.log" 2>&1 &
PPID_=$!
CLEANUP+=("kill $PPID_")
"$LOADGEN" --port $PORT -c 4 -n 80 --stream --max-tokens 6 -o "$T/lg.jsonl" 2>/dev/null
sent=$(wc -l <"$T/lg.jsonl")
# every request split live (about 4 s after the last), then one more scrape
query() { curl -s --max-time 3 "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1"; }
got=0
for i in $(seq 40); do
  got=$(query 'latsplit_request_duration_seconds_count' | /usr/bin/python3 -c \
    'import json,sys; r=json.load(sys.stdin)["data"]["result"]; print(int(float(r[0]["value"][1])) if r else 0)' 2>/dev/null || echo 0)
  [[ $got -ge $sent ]] && break
  sleep 0.5
done
sleep 2
query '{__name__=~"latsplit_.*"}' >"$T/prom.json"
kill -INT $RPID; wait $RPID
info "$(tail -2 "$T/rec.log" | tr '\n' ' ')"
check "prometheus.scrape: Prometheus scraped latsplit: $got request durations of $sent sent" \
  [ "$got" -eq "$sent" ]
"$LS" report --json "$T/cap.data" >"$T/report.jsonl" 2>/dev/null
/usr/bin/python3 - "$T/prom.json" "$T/report.jsonl" >"$T/cmp.txt" <<'PY'
import json, sys
prom = json.load(open(sys.argv[1]))["data"]["result"]
reqs = [json.loads(l) for l in open(sys.argv[2])]
reqs = [r for r in reqs if r.get("type") != "verdict"]
series = {}
for s in prom:
    m = dict(s["metric"])
    name = m.pop("__name__")
    for k in ("job", "instance"):
        m.pop(k, None)
    series[(name, tuple(sorted(m.items())))] = float(s["value"][1])
def want_hist(name, labels, vals):
    bad = []
    les = sorted({dict(l)["le"] for (n, l) in series if n == name + "_bucket"
                  and all(dict(l).get(k) == v for k, v in labels)}, key=lambda x: float(x))
    if not les:
        return [f"{name}{labels}: no buckets"]
    for le in les:
        edge = float(le)
        want = sum(1 for v in vals if v / 1e9 <= edge)
        key = (name + "_bucket", tuple(sorted(labels + [("le", le)])))
        got = series.get(key)
        if got != want:
            bad.append(f"{name}{dict(labels)} le={le}: prometheus {got}, report {want}")
    got = series.get((name + "_count", tuple(sorted(labels))))
    if got != len(vals):
        bad.append(f"{name}{dict(labels)} count: prometheus {got}, report {len(vals)}")
    return bad
split = [r for r in reqs if r["total_ns"] is not None]
bad = want_hist("latsplit_request_duration_seconds", [], [r["total_ns"] for r in split])
bad += want_hist("latsplit_time_to_first_token_seconds", [], [r["ttft_ns"] for r in split if r["ttft_ns"] is not None])
nparts = 0
for r0 in split[:1]:
    for sub in r0["sub"]:
        comp = sub.split(".")[0]
        vals = [r["sub"][sub] for r in split if r["sub"].get(sub) is not None]
        bad += want_hist("latsplit_request_component_seconds", [("component", comp), ("sub", sub)], vals)
        nparts += 1
    for comp in ("host", "other"):
        vals = [r["components"][comp] for r in split if r["components"].get(comp) is not None]
        bad += want_hist("latsplit_request_component_seconds", [("component", comp), ("sub", comp)], vals)
        nparts += 1
outc = {}
for r in reqs:
    outc[r["outcome"]] = outc.get(r["outcome"], 0) + 1
for o, n in outc.items():
    got = series.get(("latsplit_requests_total", (("outcome", o),)))
    if got != n:
        bad.append(f"requests_total{{outcome={o}}}: prometheus {got}, report {n}")
print(f"{len(split)} requests split; {nparts} component series and 2 more histograms compared bucket by bucket")
for b in bad[:10]:
    print("MISMATCH", b)
PY
sed 's/^/    /' "$T/cmp.txt"
check "prometheus.histograms: every bucket Prometheus stored equals report's count from the capture" \
  bash -c "! grep -q MISMATCH '$T/cmp.txt' && grep -q 'requests split' '$T/cmp.txt'"
