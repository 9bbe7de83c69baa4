#!/usr/bin/env bash
# The engine's lifecycle events through its event ring (engine.h): the mock
# engine (liblatsplit-engine.so) writes them in its own memory and record
# reads them with process_vm_readv.
#  - exit: `record -- mock-engine --max-requests 40`: the engine exits right
#    after its last response; its last events are still read (it waits for
#    the reader at exit); every request's scheduled event carries the time
#    the engine's own truth log gives (between its mark and the call's
#    return), and record counts nothing lost;
#  - exit_wait: the same, with record stopped (SIGSTOP) from before the
#    last request until 250 ms after it: the engine, exiting meanwhile, waits
#    for record to read its last events (the wait is what keeps them: without
#    it they are gone with the process, counted as such);
#  - attach: `record -p` while the engine is serving: the ring is met by its
#    once-a-second probe and read back; every request that began after the
#    recording started and ended 50 ms before it did (99% of them) is joined
#    by its events, and none is lost.
# Truth: the mock engine's --truth log and loadgen's own log.
source "$(dirname "$0")/lib.sh"
require_root engine_ring.exit engine_ring.exit_wait engine_ring.attach

# ring_line LOG: record's summary line of the rings
ring_line() { grep -o "engine events read from the engines' rings: .*" "$1"; }

# --- exit
rm -f "$T/ready"
start_recording "$T/exit.data" "$T/ready" -- "$ENGINE" --port 18471 --bind 127.0.0.1 --token-ms 1 \
  --max-requests 40 --truth "$T/exit.truth" --ready-file "$T/ready" ||
  fail "engine_ring.exit: engine did not start"
"$LOADGEN" --port 18471 -c 4 -n 40 --stream --max-tokens 4 --id-prefix x- -o "$T/exit.lg" 2>/dev/null
wait "$RPID" # the command exited: record stops by itself
"$LS" dump --json "$T/exit.data" >"$T/exit.dump"
"$LS" report --json "$T/exit.data" >"$T/exit.jsonl"
python3 - "$T/exit.dump" "$T/exit.truth" "$T/exit.jsonl" "$(ring_line "$T/exit.data.log")" <<'PY'
import json, sys
ev = [e for e in map(json.loads, open(sys.argv[1])) if e.get("type") == "engine"]
truth = [t for t in map(json.loads, open(sys.argv[2])) if "x_request_id" in t]
rep = [r for r in map(json.loads, open(sys.argv[3])) if r.get("type") != "verdict"]
line = sys.argv[4]
# the engine's request id is its own: its scheduled event against its truth
sched = {e["req"]: e["ts"] for e in ev if e["event"] == "scheduled"}
off = [(t["req"], sched.get(t["req"]), t["t_sched"], t["t_sched_hi"]) for t in truth
       if not (sched.get(t["req"]) and t["t_sched"] <= sched[t["req"]] <= t["t_sched_hi"])]
fin = sum(1 for e in ev if e["event"] == "finished")
joined = sum(1 for r in rep if r["sources"]["engine"] == "events")
ok = len(truth) == 40 and not off and fin == 40 and joined == 40 and ": 200; lost (overwritten before read): 0; rings whose process ended or exec'd first: 0" in line
print(("PASS" if ok else "FAIL") + f" engine_ring.exit: {len(ev)} engine events for {len(truth)} requests"
      f" the engine logged, {fin} finished (the last ones written just before it exited), {joined}"
      f" joined by events; scheduled events outside the engine's own [mark, return]: {off[:4]};"
      f" record: {line}")
PY

# --- exit_wait
rm -f "$T/ready"
start_recording "$T/wait.data" "$T/ready" -- "$ENGINE" --port 18473 --bind 127.0.0.1 --token-ms 1 \
  --max-requests 10 --ready-file "$T/ready" ||
  fail "engine_ring.exit_wait: engine did not start"
"$LOADGEN" --port 18473 -c 1 -n 9 --stream --max-tokens 4 --id-prefix w- 2>/dev/null
sleep 0.1 # record has read the first 9 requests' events (it reads every 10 ms)
kill -STOP "$RPID"
"$LOADGEN" --port 18473 -c 1 -n 1 --stream --max-tokens 4 --id-prefix z- 2>/dev/null
sleep 0.25 # the engine exits meanwhile, waiting at most 500 ms for the reader
kill -CONT "$RPID"
wait "$RPID"
python3 - "$(ring_line "$T/wait.data.log")" <<'PY'
import sys
line = sys.argv[1]
ok = ": 50; lost (overwritten before read): 0; rings whose process ended or exec'd first: 0" in line
print(("PASS" if ok else "FAIL") + f" engine_ring.exit_wait: record stopped across the engine's last"
      f" request and exit; 50 events expected, none missing; record: {line}")
PY

# --- attach
"$ENGINE" --port 18472 --bind 127.0.0.1 --token-ms 1 --ready-file "$T/ready2" &
EPID=$!; CLEANUP+=("kill $EPID")
wait_for_file "$T/ready2" 5 || fail "engine_ring.attach: engine did not start"
"$LOADGEN" --port 18472 -c 4 -d 5 --stream --max-tokens 4 --id-prefix a- -o "$T/att.lg" 2>/dev/null &
LPID=$!
sleep 1
"$LS" record -p $EPID -d 2 -o "$T/att.data" 2>"$T/att.log"
wait $LPID
"$LS" report --json "$T/att.data" >"$T/att.jsonl"
python3 - "$T/att.jsonl" "$(ring_line "$T/att.log")" <<'PY'
import json, re, sys
rep = [r for r in map(json.loads, open(sys.argv[1])) if r.get("type") != "verdict" and r["outcome"] == "ok"]
line = sys.argv[2]
# the capture's last requests end before their engine's finished event (as
# with the USDT probes): those ending in its last 50 ms are left out
last = max(r["start_ns"] + r["total_ns"] for r in rep)
rep = [r for r in rep if r["start_ns"] + r["total_ns"] < last - 50_000_000]
none = [r["x_request_id"] for r in rep if r["sources"]["engine"] != "events"]
m = re.search(r"rings: (\d+); lost \(overwritten before read\): (\d+)", line)
# (the USDT probes' recorder left 5 of 1342 unjoined here: the join's own
# misses under this load, not the events')
ok = len(rep) >= 100 and len(none) <= 0.01 * len(rep) and m and int(m.group(1)) >= 4 * len(rep) \
    and m.group(2) == "0"
print(("PASS" if ok else "FAIL") + f" engine_ring.attach: {len(rep)} whole requests recorded after attach,"
      f" {len(none)} not joined by events (at most 1%): {none[:5]}; record: {line}")
PY
