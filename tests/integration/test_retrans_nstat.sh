#!/usr/bin/env bash
# Under 7% loss toward the client (nftables drop on the client's input hook),
# the retransmitted segments in the capture equal the server namespace's
# TcpRetransSegs delta.
#
# Counting rule: TcpRetransSegs adds tcp_skb_pcount(skb) for every
# retransmitted skb (__tcp_retransmit_skb) and 1 per retransmitted SYN-ACK
# (tcp_rtx_synack). latsplit records tcp_retransmit_skb with segs =
# tcp_skb_pcount and tcp_retransmit_synack with segs = 1; the sums must be
# equal. The server runs in its own namespace, so nothing else moves its
# counters. Allowed slack: 1% (in about one run in ten to fifteen the
# kernel's counter is one segment ahead of the recorded retransmits on 6.18;
# equality is what is seen in most runs). Not a kernel path without the
# tracepoint: a tracefs instance on tcp:tcp_retransmit_skb saw the firing
# latsplit lacks (err=0), and in the runs that agreed, its firings for the
# server's port equalled latsplit's records one for one. The program did
# not run for the missed firings (its bpf_stats run count was short by as
# many) and the kernel counted no recursion miss; every one caught (4) was
# in softirq interrupting the same thread of this machine's PID 1. Why the
# kernel did not run the program there is open (see the session note).
#
# retrans.failed: the same under a 2 Mbit/s tbf on the server's link, whose
# full queue refuses some retransmissions (the kernel counts their segments
# in TcpRetransSegs and again in TcpExtTCPRetransFail). Where the kernel's
# tcp_retransmit_skb tracepoint passes the attempt's result (its BTF
# prototype has the err argument: 6.18 does), a failed attempt is not a
# retransmission: latsplit's segments equal RetransSegs - RetransFail, and
# record's summary counts the failed attempts.
source "$(dirname "$0")/lib.sh"
require_root retrans.nstat retrans.failed

# lab NAME NETLAB-UP-OPTIONS...: a fresh client/server pair of namespaces
lab() {
  export NETLAB_PREFIX=$1$$
  shift
  eval "$("$NETLAB" up "$@")" || { fail "retrans.setup: netlab up failed"; exit 0; }
  CLEANUP+=("NETLAB_PREFIX=$NETLAB_PREFIX $NETLAB down")
}
# serve TAG TOKEN-BYTES REQUESTS: the engine in the server namespace under
# record (capture $T/TAG.data, its log $T/TAG.log; RPID), REQUESTS streamed
# requests from the client namespace, then every FIN/ACK exchange (and its
# retransmits, backing off) finished: no socket left that could still
# retransmit on either side of the caller's nstat read and the recording's end.
serve() {
  "$LS" record -o "$T/$1.data" -- ip netns exec "$SRV_NS" "$ENGINE" --port 8000 \
    --bind "$SRV_IP" --tokens 200 --token-bytes "$2" --ready-file "$T/$1.ready" 2>"$T/$1.log" &
  RPID=$!
  CLEANUP+=("kill $RPID")
  wait_for_file "$T/$1.ready" 10 || { fail "retrans.setup: engine did not start"; cat "$T/$1.log"; exit 0; }
  ip netns exec "$CLI_NS" "$LOADGEN" --host "$SRV_IP" --port 8000 -c 4 -n "$3" --stream --max-tokens 100 \
    --timeout 30 -o "$T/$1.jsonl" 2>"$T/$1.lg"
  info "$(cat "$T/$1.lg")"
  wait_tcp_quiet "$SRV_NS" 40 || info "sockets still open after 40 s: $(ip netns exec "$SRV_NS" ss -Htan | head -3)"
}
# retrans_sum FILE: "events segments synacks" of the capture's tcp_retrans records
retrans_sum() {
  "$LS" dump --json "$1" 2>/dev/null | python3 -c '
import json, sys
segs = n = syn = 0
for l in sys.stdin:
    e = json.loads(l)
    if e["type"] == "tcp_retrans":
        n += 1; segs += e["segs"]; syn += e["kind"] == "synack"
print(n, segs, syn)'
}
within() { python3 -c "import sys; a, b = int(sys.argv[1]), int(sys.argv[2]); sys.exit(0 if b > 0 and abs(a - b) <= max(1, b // 100) else 1)" "$1" "$2"; }
snmp_ext() { ip netns exec "$SRV_NS" nstat -az "$1" | awk -v k="$1" '$1 == k { print $2 }'; }

lab lst --loss-to-client 7
before=$(snmp_retrans_segs "$SRV_NS")
serve cap 400 60
after=$(snmp_retrans_segs "$SRV_NS")
kill -INT $RPID; wait $RPID
sed 's/^/  /' "$T/cap.log"
read -r events segs synacks < <(retrans_sum "$T/cap.data")
delta=$((after - before))
info "nstat TcpRetransSegs delta: $delta; latsplit: $segs segments in $events retransmit events ($synacks SYN-ACK)"
if within "$segs" "$delta"; then
  pass "retrans.nstat: latsplit $segs, nstat $delta"
else
  fail "retrans.nstat: latsplit $segs != nstat $delta"
fi
# The same total, attributed to requests by `report`.
"$LS" report --json "$T/cap.data" 2>/dev/null >"$T/report.jsonl"
per_req=$(python3 -c 'import json,sys; print(sum(r["retransmits"] for r in map(json.loads, open(sys.argv[1])) if r.get("type") != "verdict"))' "$T/report.jsonl")
nreq=$(grep -vc '"type":"verdict"' "$T/report.jsonl")
info "report: $nreq requests, retransmits summed over requests: $per_req"
if [[ $nreq -eq 60 && $per_req -eq $segs ]] && within "$per_req" "$delta"; then
  pass "retrans.per_request: $per_req (all captured: $segs; nstat $delta) over $nreq requests"
else
  fail "retrans.per_request: $per_req != $delta (or $nreq != 60 requests)"
fi

# ---- retrans.failed
NETLAB_PREFIX=$NETLAB_PREFIX "$NETLAB" down
lab lsf --loss-to-client 7 --rate 2mbit
b_segs=$(snmp_retrans_segs "$SRV_NS"); b_fail=$(snmp_ext TcpExtTCPRetransFail)
serve fail 4000 20
segs_d=$(($(snmp_retrans_segs "$SRV_NS") - b_segs)); fail_d=$(($(snmp_ext TcpExtTCPRetransFail) - b_fail))
kill -INT $RPID; wait $RPID
read -r _ segs2 _ < <(retrans_sum "$T/fail.data")
failed=$(sed -n 's/.*not counted as retransmits): \([0-9]*\).*/\1/p' "$T/fail.log")
info "nstat: TcpRetransSegs $segs_d, TcpExtTCPRetransFail $fail_d; latsplit: $segs2 segments, ${failed:-0} failed attempts"
if bpftool btf dump file /sys/kernel/btf/vmlinux 2>/dev/null | grep -A2 "'btf_trace_tcp_retransmit_skb'" |
   grep -q "FUNC_PROTO.*vlen=4"; then
  if [[ $fail_d -eq 0 ]]; then
    skip "retrans.failed: no retransmission failed this run (TcpExtTCPRetransFail 0)"
  elif within "$segs2" $((segs_d - fail_d)) && [[ ${failed:-0} -gt 0 ]]; then
    pass "retrans.failed: latsplit $segs2 = RetransSegs $segs_d - RetransFail $fail_d; ${failed} failed attempts counted"
  else
    fail "retrans.failed: latsplit $segs2 != RetransSegs $segs_d - RetransFail $fail_d (or no failed attempt counted: ${failed:-0})"
  fi
else
  skip "retrans.failed: this kernel's tcp_retransmit_skb tracepoint does not pass the attempt's result"
fi
