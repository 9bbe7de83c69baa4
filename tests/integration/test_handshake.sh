#!/usr/bin/env bash
# A lost SYN-ACK: the client's connect() waits for its SYN retransmit (about
# 1 s) before the request can leave. The client waited that second, so the
# first request's total must include it: latsplit takes the handshake's start
# from the first SYN-ACK (the request sock's snt_synack, read when the kernel
# retransmits it), not from the handshake that finally succeeded.
# Truth: the client's own marks (loadgen takes start before connect()), and
# the SYN-ACK count from the server namespace's nstat.
source "$(dirname "$0")/lib.sh"
require_root handshake

export NETLAB_PREFIX=lsh$$
eval "$("$NETLAB" up)" || { fail "handshake.setup: netlab up failed"; exit 0; }
CLEANUP+=("NETLAB_PREFIX=$NETLAB_PREFIX $NETLAB down")

start_recording "$T/cap.data" "$T/ready" -- ip netns exec "$SRV_NS" "$ENGINE" --port 8000 \
  --bind "$SRV_IP" --token-ms 1 --ready-file "$T/ready" ||
  { fail "handshake.setup: engine did not start"; exit 0; }
# drop every SYN-ACK reaching the client until the first one has been dropped
ip netns exec "$CLI_NS" nft -f - <<'NFT'
table inet lshs {
  chain input {
    type filter hook input priority 0; policy accept;
    tcp flags & (syn | ack) == (syn | ack) counter drop
  }
}
NFT
before=$(snmp_retrans_segs "$SRV_NS")
ip netns exec "$CLI_NS" "$LOADGEN" --host "$SRV_IP" --port 8000 -c 1 -n 2 --stream --max-tokens 4 \
  -o "$T/lg.jsonl" 2>/dev/null &
LG=$!
for _ in $(seq 100); do
  ip netns exec "$CLI_NS" nft list table inet lshs | grep -q 'packets [1-9]' && break
  sleep 0.02
done
ip netns exec "$CLI_NS" nft delete table inet lshs
wait $LG
after=$(snmp_retrans_segs "$SRV_NS")
stop_recording 0.5
"$LS" report --json "$T/cap.data" >"$T/report.jsonl" 2>"$T/report.err"
info "server TcpRetransSegs delta (SYN-ACKs): $((after - before))"
python3 - "$T/report.jsonl" "$T/lg.jsonl" <<'EOF'
import json, sys
rep = {r["x_request_id"]: r for r in map(json.loads, open(sys.argv[1])) if r.get("type") != "verdict"}
cli = [json.loads(l) for l in open(sys.argv[2])]
first = min(cli, key=lambda c: c["id"])
r = rep.get(first["x_request_id"])
print(f"  client: first request {first['total_ns'] / 1e6:.3f} ms (ttft {first['ttft_ns'] / 1e6:.3f} ms); "
      f"latsplit: {r and r['total_ns'] / 1e6:.3f} ms, {r and r['retransmits']} retransmit(s)")
ok = (r is not None and first["total_ns"] > 900e6 and r["retransmits"] >= 1
      and abs(r["total_ns"] - first["total_ns"]) <= max(5e6, 0.02 * first["total_ns"])
      and abs(r["ttft_ns"] - first["ttft_ns"]) <= max(5e6, 0.02 * first["ttft_ns"]))
print(("PASS" if ok else "FAIL") + " handshake.synack_lost: the first request's total and TTFT include"
      " the lost SYN-ACK's second, within max(5 ms, 2%) of the client's")
second = [c for c in cli if c is not first]
r2 = second and rep.get(second[0]["x_request_id"])
ok2 = bool(r2) and r2["retransmits"] == 0 and \
    abs(r2["total_ns"] - second[0]["total_ns"]) <= max(1e6, 0.02 * second[0]["total_ns"])
print(("PASS" if ok2 else "FAIL") + " handshake.keepalive_next: the next request on the connection"
      f" does not carry it ({r2 and r2['total_ns'] / 1e6:.3f} ms vs client"
      f" {second and second[0]['total_ns'] / 1e6:.3f} ms)")
EOF
