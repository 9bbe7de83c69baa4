#!/usr/bin/env bash
# Network marks against known causes, across a veth pair limited to 8 Mbit/s:
#  - queue: the server sleeps 30 ms before reading each request
#    (--read-delay-ms) and logs when its sleep began and when it had read the
#    request (--truth): queueing.socket must lie between that sleep's length
#    less 2 ms (the request may arrive just after the sleep began) and the
#    time from its connection's accept to the read plus 2 ms (it may arrive
#    before the connection's thread starts its sleep: 2.08 ms before, once),
#    or, where longer, from the client's own start of the request (2.6 ms
#    before accept, once).
#    An overshooting sleep, or a woken thread waiting for a CPU (8.8 ms seen
#    once on this 2-CPU VM), is real queueing and in the truth;
#  - drain: a 300 KB response written at once into a 4 MB send buffer;
#    network.drain must be within 10% of what tbf's rate predicts;
#  - send-blocked: the same response into a 16 KB send buffer: the write
#    blocks; send_blocked + drain must again match the rate, and at least a
#    quarter of it must be send_blocked.
# Prediction: segments of 1448 payload bytes cost 1514 bytes on the wire
# (TCP with timestamps 32, IP 20, Ethernet 14); tbf sends its 16 KB burst at
# once and the rest at 1,000,000 bytes/s. Tolerance 10%: the final ACK's
# trip, timer slack and tbf's token granularity are well inside it.
source "$(dirname "$0")/lib.sh"
require_root netlab.queue netlab.drain netlab.send_blocked

export NETLAB_PREFIX=lsh$$
eval "$("$NETLAB" up --rate 8mbit)" || { fail "netlab.setup: netlab up failed"; exit 0; }
CLEANUP+=("NETLAB_PREFIX=$NETLAB_PREFIX $NETLAB down")

# run NAME ENGINE_ARGS... -- LOADGEN_ARGS...
run() {
  local name=$1; shift
  local eargs=() largs=()
  while [[ $1 != -- ]]; do eargs+=("$1"); shift; done; shift
  largs=("$@")
  rm -f "$T/ready"
  start_recording "$T/$name.data" "$T/ready" -- ip netns exec "$SRV_NS" "$ENGINE" --port 8000 \
    --bind "$SRV_IP" --ready-file "$T/ready" "${eargs[@]}" || { fail "netlab.$name: engine did not start"; return 1; }
  ip netns exec "$CLI_NS" "$LOADGEN" --host "$SRV_IP" --port 8000 -o "$T/$name.lg" "${largs[@]}" 2>/dev/null
  stop_recording 0.3
  "$LS" report --json "$T/$name.data" >"$T/$name.jsonl"
}

run queue --read-delay-ms 30 --truth "$T/queue.truth" -- -c 1 -n 8 --no-keepalive --max-tokens 4 \
  --id-prefix q-
python3 - "$T/queue.jsonl" "$T/queue.truth" "$T/queue.lg" <<'PY'
import json, sys
rs = [r for r in map(json.loads, open(sys.argv[1])) if r.get("type") != "verdict"]
truth = {t["x_request_id"]: t for t in map(json.loads, open(sys.argv[2])) if "x_request_id" in t}
client = {c["x_request_id"]: c for c in map(json.loads, open(sys.argv[3]))}
rows, bad = [], []
for r in rs:
    t = truth.get(r["x_request_id"])
    q = r["sub"]["queueing.socket"]
    if not t or not t["t_delay"][0] or q is None:
        bad.append((r["x_request_id"], q, "no truth"))
        continue
    lo = (t["t_delay"][1] - t["t_delay"][0] - 2_000_000) / 1e6
    hi = (t["t_read"] - min(t["t_delay"][0], t["t_accepted"] or t["t_delay"][0]) + 2_000_000) / 1e6
    # the request cannot have waited longer than since the client began it
    # (its own mark, the same clock): where accept came more than 2 ms after
    # the bytes (seen: 2.6 ms, a fresh connection's first request), that
    # bound holds and the one above does not
    c = client.get(r["x_request_id"])
    if c and c["start_ns"]:
        hi = max(hi, (t["t_read"] - c["start_ns"]) / 1e6)
    rows.append(f"{q / 1e6:.2f} in {lo:.2f}..{hi:.2f}")
    if not lo <= q / 1e6 <= hi:
        bad.append((r["x_request_id"], q / 1e6, lo, hi))
print(("PASS" if len(rs) == 8 and not bad else "FAIL") +
      f" netlab.queue: queueing.socket against the engine's sleep for 8 requests (ms): {rows}; off: {bad}")
PY

# check_rate MODE FILE: drain (drain alone ~ prediction, nothing blocked) or
# blocked (send_blocked + drain ~ prediction, mostly blocked).
check_rate() {
  python3 - "$1" "$2" <<'PY'
import json, sys, math
mode, path = sys.argv[1], sys.argv[2]
def predict(n):  # seconds to send n payload bytes at 8 Mbit/s after a 16 KB burst
    wire = n + math.ceil(n / 1448) * 66
    return max(wire - 16384, 0) / 1e6
rs = [r for r in map(json.loads, open(path)) if r.get("type") != "verdict"]
out = []
for r in rs:
    p = predict(r["bytes_out"]); d = r["sub"]["network.drain"] / 1e9; b = r["sub"]["network.send_blocked"] / 1e9
    # How much of the transmission the write spends blocked depends on how
    # much the kernel queues past SO_SNDBUF (skb overhead, the first
    # window), which varies per connection: a quarter at least.
    good = abs(d - p) <= 0.1 * p if mode == "drain" else abs(b + d - p) <= 0.1 * p and b > 0.25 * p
    out.append((round(d * 1e3, 1), round(b * 1e3, 1), round(p * 1e3, 1), good))
name = "netlab.drain" if mode == "drain" else "netlab.send_blocked"
print(("PASS" if len(rs) == 3 and all(o[3] for o in out) else "FAIL") +
      f" {name}: (drain ms, send_blocked ms, predicted ms) " + str([o[:3] for o in out]))
PY
}

run drain --sndbuf 4194304 --token-bytes 1000 -- -c 1 -n 3 --max-tokens 300
check_rate drain "$T/drain.jsonl"
run blocked --sndbuf 16384 --token-bytes 1000 -- -c 1 -n 3 --max-tokens 300
check_rate blocked "$T/blocked.jsonl"
