#!/usr/bin/env bash
# make demo: record the bundled workload over a lossy link and show what
# latsplit captured. Builds on the netlab namespaces; cleans up namespaces and
# processes even when interrupted. Leaves the capture in demo-out/.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $(id -u) -eq 0 ]] || { echo "demo: needs root (BPF, network namespaces): sudo make demo" >&2; exit 1; }
OUT=demo-out
mkdir -p "$OUT"
export NETLAB_PREFIX=lsdemo
RPID=""
cleanup() {
  [[ -n $RPID ]] && kill -INT "$RPID" 2>/dev/null && wait "$RPID" 2>/dev/null
  tools/netlab.sh down
}
trap cleanup EXIT INT TERM

echo "== 1. network: server and client namespaces, 3% loss toward the client"
eval "$(tools/netlab.sh up --loss-to-client 3)"
echo "   $SRV_NS ($SRV_IP) <-> $CLI_NS ($CLI_IP)"

echo "== 2. record: latsplit starts mock-engine (25 ms prefill, 5 ms/token) and traces it"
rm -f "$OUT/ready"
build/latsplit record -o "$OUT/latsplit.data" -- ip netns exec "$SRV_NS" build/mock-engine \
  --bind "$SRV_IP" --port 8000 --delay-ms 25 --token-ms 5 --token-bytes 200 \
  --ready-file "$OUT/ready" 2>"$OUT/record.log" &
RPID=$!
for i in $(seq 100); do [[ -e $OUT/ready ]] && break; sleep 0.1; done

echo "== 3. load: 8 streaming clients, 200 requests of 32 tokens"
ip netns exec "$CLI_NS" build/loadgen --host "$SRV_IP" --port 8000 -c 8 -n 200 --stream \
  --max-tokens 32 --prompt-bytes 2000 -o "$OUT/loadgen.jsonl"
sleep 1
kill -INT $RPID; wait $RPID || true; RPID=""
cat "$OUT/record.log"

echo "== 4. the latency split so far (build/latsplit report $OUT/latsplit.data)"
build/latsplit report "$OUT/latsplit.data" | tee "$OUT/report.txt"
build/latsplit report --json "$OUT/latsplit.data" >"$OUT/requests.jsonl"
build/latsplit dump "$OUT/latsplit.data" >"$OUT/dump.txt"
retrans=$(awk '$4 == "tcp_retrans"' "$OUT/dump.txt" | wc -l)
echo "== $retrans retransmit events on the server (3% loss toward the client)"
echo "   network and socket queueing are measured now; engine queueing, transfer and compute"
echo "   arrive with the engine-event and GPU sources."
echo "   files: $OUT/latsplit.data (capture) $OUT/requests.jsonl (one JSON record per request)"
echo "          $OUT/report.txt $OUT/dump.txt (every event) $OUT/loadgen.jsonl (client-side times)"
