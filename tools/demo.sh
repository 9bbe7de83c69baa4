#!/usr/bin/env bash
# make demo: the bundled workload with every cause injected at once, recorded
# and split. Network namespaces joined by veth with 3% loss toward the client
# (network), a mock engine with a small batch (engine queueing), simulated
# H2D/D2H copies (transfer) and prefill/decode kernels (compute), 8 streaming
# clients. Cleans up namespaces and processes even when interrupted; leaves
# the capture, the report and one JSON record per request in demo-out/.
# VLLM=1 (make demo VLLM=1): the vLLM-shaped Python engine instead of the mock.
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

rm -f "$OUT/ready" "$OUT/truth.jsonl"
if [[ -n ${VLLM:-} ]]; then
  echo "== 2. record: latsplit starts the vLLM-shaped engine (FastAPI/uvicorn API server +"
  echo "   ZMQ engine-core process, tools/vllm-shaped) and traces both; no GPU data"
  echo "   engine: 4 running sequences, 3 ms CPU steps, 20 us per prompt token"
  build/latsplit record -o "$OUT/latsplit.data" -- ip netns exec "$SRV_NS" /usr/bin/python3 \
    tools/vllm-shaped/server.py --host "$SRV_IP" --port 8000 --max-running 4 --step-us 3000 \
    --truth "$OUT/truth.jsonl" --ready-file "$OUT/ready" 2>"$OUT/record.log" &
else
  echo "== 2. record: latsplit starts the mock engine (simulated GPU) and traces it"
  echo "   engine: batch of 4, 0.3 ms host work, 1.5 ms H2D + 0.8 ms D2H, 3 ms decode"
  echo "   + 10 us per prompt token per step"
  build/latsplit record -o "$OUT/latsplit.data" -- ip netns exec "$SRV_NS" build/mock-engine \
    --bind "$SRV_IP" --port 8000 --max-batch 4 --host-us 300 --h2d-us 1500 --d2h-us 800 \
    --token-ms 3 --prefill-us-per-token 10 --token-bytes 1500 \
    --truth "$OUT/truth.jsonl" --ready-file "$OUT/ready" 2>"$OUT/record.log" &
fi
RPID=$!
for i in $(seq 300); do [[ -e $OUT/ready ]] && break; sleep 0.1; done

echo "== 3. load: 8 streaming clients, 48 requests of 32 tokens, 2 KB prompts"
ip netns exec "$CLI_NS" build/loadgen --host "$SRV_IP" --port 8000 -c 8 -n 48 --stream \
  --max-tokens 32 --prompt-bytes 2000 -o "$OUT/loadgen.jsonl"
sleep 1
kill -INT $RPID; wait $RPID || true; RPID=""
cat "$OUT/record.log"

echo "== 4. the split (build/latsplit report $OUT/latsplit.data)"
build/latsplit report "$OUT/latsplit.data" | tee "$OUT/report.txt"
build/latsplit report --json "$OUT/latsplit.data" >"$OUT/requests.jsonl"
python3 - "$OUT/requests.jsonl" <<'PY'
import json, sys
rs = [r for r in map(json.loads, open(sys.argv[1])) if r.get("type") != "verdict"]
done = [r for r in rs if r["total_ns"] is not None]
exact = [r for r in done if sum(v for v in r["components"].values() if v is not None) == r["total_ns"]]
print(f"== every request's network + queueing + transfer + compute + host + other == its latency: "
      f"{len(exact)}/{len(done)} exactly (integer ns)")
PY
build/latsplit flame --kind latency --svg -o "$OUT/latency.svg" "$OUT/latsplit.data"
build/latsplit flame --kind gpu --svg -o "$OUT/gpu.svg" "$OUT/latsplit.data"
build/latsplit flame --kind cpu --svg -o "$OUT/cpu.svg" "$OUT/latsplit.data"
build/latsplit flame --kind offcpu --svg -o "$OUT/offcpu.svg" "$OUT/latsplit.data"
build/latsplit report --html -o "$OUT/report.html" "$OUT/latsplit.data" 2>/dev/null
build/latsplit timeline -o "$OUT/trace.perfetto-trace" "$OUT/latsplit.data" 2>/dev/null
echo "   pictures: $OUT/report.html (open in a browser: verdict, waterfall, flame graphs)"
echo "             $OUT/trace.perfetto-trace (open at https://ui.perfetto.dev: every request, thread, GPU stream)"
echo "   files: $OUT/latsplit.data (capture) $OUT/requests.jsonl (one JSON record per request)"
echo "          $OUT/latency.svg (the split as a flame graph) $OUT/gpu.svg (GPU time by kernel)"
echo "          $OUT/cpu.svg $OUT/offcpu.svg (where the engine's CPU time and waiting went)"
echo "          $OUT/report.txt $OUT/loadgen.jsonl (client side) $OUT/truth.jsonl (engine ground truth)"
