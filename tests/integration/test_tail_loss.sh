#!/usr/bin/env bash
# A response's last segment lost once and sent again after an RTO (the
# client's kernel drops it on input: nftables matches its payload, the
# 16-byte tail tail_server.py sends by itself; the first match on each
# connection only: its retransmission passes). The client waited for the retransmission: the request's
# total must hold it (delivery after the last transmission of the last
# byte, retransmissions included), within max(1 ms, 2%) of the client's own
# send-to-last-byte (client_accuracy.py); nstat in the server's namespace
# counts the retransmission.
source "$(dirname "$0")/lib.sh"
require_root tail_loss
PY=/usr/bin/python3
export NETLAB_PREFIX=lst$$
eval "$("$NETLAB" up)" || { fail "tail_loss.setup: netlab up failed"; exit 0; }
CLEANUP+=("NETLAB_PREFIX=$NETLAB_PREFIX $NETLAB down")
# payload after a 32-byte TCP header (timestamps on): "TAILTAILTAILTAIL"
ip netns exec "$CLI_NS" nft -f - <<NFT || { fail "tail_loss.setup: nft"; exit 0; }
table inet lstail {
  set dropped { type ipv4_addr . inet_service; }
  chain input {
    type filter hook input priority 0;
    tcp sport 18471 @th,256,128 0x5441494c5441494c5441494c5441494c ip daddr . tcp dport != @dropped add @dropped { ip daddr . tcp dport } counter drop
  }
}
NFT
start_recording "$T/tail.data" "$T/ready" -- ip netns exec "$SRV_NS" $PY \
  "$ROOT/tests/integration/tail_server.py" "$SRV_IP" 18471 "$T/ready" ||
  { fail "tail_loss: server did not start"; exit 0; }
ip netns exec "$SRV_NS" nstat -n >/dev/null
ip netns exec "$CLI_NS" "$LOADGEN" --host "$SRV_IP" --port 18471 --id-prefix tail- -o "$T/tail.lg" \
  -c 1 -n 4 --max-tokens 4 >/dev/null 2>&1
# and a connection that closes after its response: the lost tail is then
# followed by the FIN (the ACK of the retransmission comes after close)
ip netns exec "$CLI_NS" "$LOADGEN" --host "$SRV_IP" --port 18471 --id-prefix tailclose- -o "$T/tail2.lg" \
  -c 1 -n 4 --max-tokens 4 --no-keepalive >/dev/null 2>&1
cat "$T/tail2.lg" >>"$T/tail.lg"
rtx=$(ip netns exec "$SRV_NS" nstat -az TcpRetransSegs | awk '/TcpRetransSegs/ {print $2}')
dropped=$(ip netns exec "$CLI_NS" nft list table inet lstail | grep -o 'packets [0-9]*' | awk '{print $2}')
stop_recording 0.5
"$LS" report --json "$T/tail.data" >"$T/tail.jsonl" 2>/dev/null
info "tail segments dropped: ${dropped:-?}; server TcpRetransSegs: ${rtx:-?}"
slow=$($PY -c 'import json,sys; print(max(json.loads(l)["total_ns"] for l in open(sys.argv[1])) // 1000000)' "$T/tail.lg")
check "tail_loss.dropped: the first tail of each of 5 connections dropped ($dropped), retransmitted ($rtx; client's slowest request ${slow} ms)" \
  [ "${dropped:-0}" -eq 5 -a "${rtx:-0}" -ge 5 -a "${slow:-0}" -ge 150 ]
$PY "$ROOT/tests/integration/client_accuracy.py" tail_loss "$T/tail.jsonl" "$T/tail.lg"
