#!/usr/bin/env bash
# The raw_tp fallback: kernels where tp_btf programs do not load get raw_tp
# programs over the same handlers, which read every kernel field with CO-RE
# probe reads where the tp_btf ones load it through BTF pointers. Every
# kernel we test loads tp_btf, so LATSPLIT_FORCE_RAW_TP=1 makes record take
# the fallback here: the programs must pass the verifier, the capture must
# say how it was made, and the requests must come out whole, with marks that
# agree with the client's own.
source "$(dirname "$0")/lib.sh"
require_root raw_tp.sources raw_tp.missing raw_tp.requests raw_tp.fields raw_tp.client_ttft

PORT=18187
"$ENGINE" --port $PORT --bind 127.0.0.1 --token-ms 1 --max-batch 4 --ready-file "$T/ready" &
EPID=$!; CLEANUP+=("kill $EPID")
wait_for_file "$T/ready" 5 || { fail "raw_tp.setup: mock-engine did not start"; exit 0; }

LATSPLIT_FORCE_RAW_TP=1 "$LS" record -o "$T/cap.data" -p $EPID 2>"$T/rec.log" &
RPID=$!
wait_recording "$T/rec.log"
"$LOADGEN" --port $PORT -c 4 -n 100 --stream --max-tokens 8 -o "$T/lg.jsonl" 2>"$T/lg.log"
sleep 0.3
kill -INT $RPID; wait $RPID; rc=$?
sed 's/^/  /' "$T/rec.log"
[[ $rc -eq 0 ]] || { fail "raw_tp.requests: record exited $rc"; exit 0; }
"$LS" report --json "$T/cap.data" >"$T/rep.jsonl" 2>"$T/rep.err"
"$LS" dump --json "$T/cap.data" >"$T/dump.jsonl" 2>"$T/dump.err"

python3 - "$T/rep.jsonl" "$T/dump.jsonl" "$T/lg.jsonl" "$T/rec.log" $EPID "$ROOT/tests/integration" <<'PY'
import json, sys
rep, dump, lg, reclog, epid = sys.argv[1:6]
sys.path.insert(0, sys.argv[6])
from client_marks import waits
epid = int(epid)
def res(n, c, d): print(("PASS " if c else "FAIL ") + n + ": " + d)
log = open(reclog).read()
ev = [json.loads(l) for l in open(dump)]
hdr, recs = ev[0], ev[1:]
src = hdr.get("sources", "")
res("raw_tp.sources", "via:raw_tp" in src and "via:tp_btf" not in src and "sock_io" in src
    and "tcp_probe" in src, f"capture sources: {src}")
res("raw_tp.missing", "time asleep inside socket writes" in log,
    "record names what the fallback cannot measure")
rs = [json.loads(l) for l in open(rep)]
rs = [r for r in rs if r.get("type") != "verdict"]
ok = [r for r in rs if r["outcome"] == "ok"]
exact = [r for r in ok if r["total_ns"] is not None and
         sum(v for v in r["components"].values() if v is not None) == r["total_ns"]]
client = [json.loads(l) for l in open(lg)]
good = [c for c in client if c.get("status") == 200 and not c.get("error")]
res("raw_tp.requests", len(good) == 100 and len(ok) == len(good) and len(exact) == len(ok),
    f"{len(ok)} ok of {len(good)} the client completed, {len(exact)} split exactly")
# fields the fallback reads by probe reads: names, sequence numbers, RTT
sw = [e for e in recs if e["type"] == "sched_switch" and e["next_pid"] == epid]
named = [e for e in sw if e["next_comm"]]
# (a data segment's probe is mostly carried by the read that took its bytes)
pr = [(e["srtt_us"], e["seq"], e["ack_seq"], e["flags"]) for e in recs
      if e["type"] == "tcp_probe" and e["data_len"] > 0]
pr += [(e["arrive_srtt_us"], e["seq"], e["arrive_ack"], e["arrive_flags"]) for e in recs
       if e["type"] == "sock_io" and e.get("arrive_ns") and e["arrive_len"] > 0]
sane = [p for p in pr if p[0] > 0 and p[1] and p[2] and p[3] & 0x10]
res("raw_tp.fields", sw and len(named) == len(sw) and pr and len(sane) == len(pr),
    f"{len(named)}/{len(sw)} switches to the engine named; {len(sane)}/{len(pr)} data segments' "
    "probes (own records or carried by reads) with srtt, seq, ack and the ACK flag")
# the split's first-token mark against the client's own (loopback: the
# client sees it after the server wrote it, within scheduling noise, and
# later by its own waits: for a CPU until its send returned and until its
# first-token mark, and a new connection's connect(): client_marks)
by_id = {c["x_request_id"]: c for c in good}
pairs = [(by_id[r["x_request_id"]], r) for r in ok if r.get("x_request_id") in by_id and r.get("ttft_ns")]
diffs = [c["ttft_ns"] - r["ttft_ns"] for c, r in pairs]
bad = [(r["x_request_id"], round(d / 1e6, 3), round(waits(c, "ttft_ns") / 1e6, 3))
       for d, (c, r) in zip(diffs, pairs)
       if not (-100_000 <= d <= max(2_000_000, 0.2 * r["ttft_ns"]) + waits(c, "ttft_ns"))]
res("raw_tp.client_ttft", diffs and len(diffs) == len(ok) and not bad,
    f"{len(diffs)} requests matched; client minus latsplit TTFT median "
    f"{sorted(diffs)[len(diffs) // 2] / 1e6 if diffs else 0:.3f} ms, {len(bad)} outside "
    f"[-0.1 ms, max(2 ms, 20%) + the client's waits] (id, ms, waits ms): {bad[:3]}")
PY
