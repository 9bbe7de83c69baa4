#!/usr/bin/env bash
# record -p ENGINE while loadgen drives mock-engine over loopback: the capture
# holds sched events of the engine and TCP state changes of its connections,
# and nothing of an untracked busy process.
source "$(dirname "$0")/lib.sh"
require_root loopback.sched loopback.tcp loopback.untracked loopback.proc_info

PORT=18181
"$ENGINE" --port $PORT --bind 127.0.0.1 --token-ms 1 --ready-file "$T/ready" &
EPID=$!; CLEANUP+=("kill $EPID")
wait_for_file "$T/ready" 5 || { fail "loopback.setup: mock-engine did not start"; exit 0; }
# An untracked process that context-switches a lot.
( while :; do sleep 0.001; done ) &
BUSY=$!; CLEANUP+=("kill $BUSY")

"$LS" record -o "$T/cap.data" -d 3 -p $EPID 2>"$T/rec.log" &
RPID=$!
wait_recording "$T/rec.log"
"$LOADGEN" --port $PORT -c 4 -n 200 --stream -o "$T/lg.jsonl" 2>"$T/lg.log"
wait $RPID; rc=$?
check "loopback.record_exit0" test $rc -eq 0
cat "$T/rec.log" | sed 's/^/  /'
"$LS" dump --json "$T/cap.data" >"$T/dump.jsonl" 2>"$T/dump.err"
check "loopback.dump_exit0" test $? -eq 0

python3 - "$T/dump.jsonl" $EPID $BUSY $PORT <<'PY'
import json, sys
path, epid, busy, port = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
ev = [json.loads(l) for l in open(path)]
hdr, recs = ev[0], ev[1:]
def ok(name, cond, detail=""):
    print(("PASS " if cond else "FAIL ") + name + (": " + detail if detail else ""))
sw = [e for e in recs if e["type"] == "sched_switch" and (e["pid"] == epid or e["next_pid"] == epid)]
ok("loopback.sched", len(sw) > 100, f"{len(sw)} sched_switch events of the engine")
# a wakeup is its own record, or rides in the switch that runs the woken
# thread (ABI 7, tp_btf: "woken_ns")
wk = [e for e in recs if e["type"] == "sched_wakeup" and e["pid"] == epid]
fw = [e for e in sw if e["next_pid"] == epid and e.get("woken_ns")]
ok("loopback.wakeup", len(wk) + len(fw) > 10,
   f"{len(wk)} wakeups of engine threads as records, {len(fw)} carried by the switch that ran them")
# a folded wakeup ends the block its thread's last switch-out began: it
# lies between that blocking switch-out and the switch-in carrying it (a
# wakeup kept from before the block would lie earlier). Its waker may be
# 0/0: the idle task, a timer or an interrupt.
last_out, bad, checked = {}, [], 0
for e in sw:  # dump's time order
    if e.get("woken_ns") and e["next_pid"] == epid:
        out = last_out.get(e["next_tid"])
        if out and out["prev_state"] != 0:
            checked += 1
            if not (out["ts"] <= e["ts"] - e["woken_ns"] <= e["ts"] and "waker_tid" in e):
                bad.append((out["ts"], e["ts"] - e["woken_ns"], e["ts"]))
    if e["pid"] == epid:
        last_out[e["tid"]] = e
ok("loopback.wakeup_fold", checked > 10 and not bad,
   f"{len(bad)} of {checked} folded wakeups after a blocking switch-out outside [switch-out, switch-in]: {bad[:2]}")
st = [e for e in recs if e["type"] == "tcp_state" and e["local"].endswith(f":{port}")]
est = {e["conn"] for e in st if e["new"] == "ESTABLISHED"}
ok("loopback.tcp", len(est) >= 4, f"{len(est)} server connections reached ESTABLISHED")
closed = {e["conn"] for e in st if e["new"] == "CLOSE"}
ok("loopback.tcp_close", est <= closed, f"{len(est & closed)}/{len(est)} seen closing")
# A switch between the busy process and the engine concerns the engine.
foreign = [e for e in recs if (e.get("pid") == busy or e.get("next_pid") == busy)
           and epid not in (e.get("pid"), e.get("next_pid"))]
ok("loopback.untracked", not foreign, f"{len(foreign)} events of untracked pid {busy}")
pi = [e for e in recs if e["type"] == "proc_info" and e["pid"] == epid]
ok("loopback.proc_info", pi and "mock-engine" in pi[0]["exe"], pi[0]["exe"] if pi else "none")
ok("loopback.header", hdr["type"] == "header" and "sched" in hdr["sources"], hdr["sources"])
st = [e for e in recs if e["type"] == "stats"]
ok("loopback.trailer", len(st) == 1 and st[0]["ringbuf_drops"] == 0,
   f"stats={st[0] if st else None}")
ts = [e["ts"] for e in recs]
ok("loopback.time_order", ts == sorted(ts), "dump output in timestamp order")
PY
