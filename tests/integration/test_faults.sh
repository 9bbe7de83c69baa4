#!/usr/bin/env bash
# Faults during a recording (reliability issue):
#  - exec: the tracked -p process execs a server mid-recording: its requests
#    are found under the same pid;
#  - forks: the target forks 50 short-lived children: all seen, none left
#    tracked, the capture reads;
#  - disk_full: the capture's filesystem fills (a 256 KiB tmpfs): record stops
#    with one line naming the cause, and the capture so far reads;
#  - two_recorders: two `record`s at once on one port: both captures hold
#    every request.
# (-p exiting, SIGKILL of record and SIGHUP: test_attach.sh, test_hostile.sh.)
source "$(dirname "$0")/lib.sh"
require_root faults.exec faults.forks faults.disk_full faults.two_recorders

# requests_ok FILE: requests with outcome ok in a capture's report
requests_ok() {
  "$LS" report --json "$1" 2>/dev/null |
    python3 -c 'import json,sys; print(sum(1 for r in map(json.loads, sys.stdin) if r.get("outcome") == "ok"))'
}

# --- exec ---
PORT=18471
sh -c "sleep 3; exec '$ENGINE' --port $PORT --bind 127.0.0.1 --ready-file '$T/exec.ready'" &
SP=$!
CLEANUP+=("kill $SP")
"$LS" record -p $SP -d 7 -o "$T/exec.data" 2>"$T/exec.log" &
RP=$!
wait_for_file "$T/exec.ready" 15
"$LOADGEN" --port $PORT -c 2 -n 10 --stream --max-tokens 4 2>/dev/null
wait $RP
kill $SP 2>/dev/null; wait $SP 2>/dev/null
n=$(requests_ok "$T/exec.data")
pid=$("$LS" report --json "$T/exec.data" 2>/dev/null | head -1 | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])' 2>/dev/null)
check "faults.exec: the -p target exec'd a server mid-recording: $n of 10 requests found, served by pid ${pid:-?} (target $SP)" \
  [ "$n" -eq 10 -a "${pid:-0}" = "$SP" ]

# --- forks ---
"$LS" record -o "$T/forks.data" -- sh -c 'i=0; while [ $i -lt 50 ]; do /bin/true; i=$((i + 1)); done; sleep 0.5' \
  >/dev/null 2>"$T/forks.log"; rc=$?
forks=$("$LS" dump --json "$T/forks.data" 2>/dev/null | grep -c '"type":"proc_fork"')
exits=$("$LS" dump --json "$T/forks.data" 2>/dev/null | grep -c '"type":"proc_exit"')
check "faults.forks: 50 short-lived children: record exit $rc, $forks forks and $exits exits captured" \
  [ $rc -eq 0 -a "$forks" -ge 50 -a "$exits" -ge 50 ]

# --- disk_full ---
mkdir -p "$T/small"
if mount -t tmpfs -o size=256k tmpfs "$T/small"; then
  CLEANUP+=("umount -l '$T/small'")
  PORT=18472
  "$LS" record -o "$T/small/cap.data" -F 997 -- "$ENGINE" --port $PORT --bind 127.0.0.1 \
    --ready-file "$T/full.ready" >/dev/null 2>"$T/full.log" &
  RP=$!
  wait_for_file "$T/full.ready" 10
  timeout 20 "$LOADGEN" --port $PORT -c 4 -d 8 --stream --max-tokens 32 >/dev/null 2>&1
  for i in $(seq 100); do kill -0 $RP 2>/dev/null || break; sleep 0.1; done
  kill -INT $RP 2>/dev/null; wait $RP; rc=$?
  "$LS" dump "$T/small/cap.data" >/dev/null 2>"$T/full.dump"; drc=$?
  msg=$(grep -m1 'No space left' "$T/full.log")
  check "faults.disk_full: record exit $rc with '${msg:-no message}'; the capture reads (dump exit $drc: $(head -c 100 "$T/full.dump"))" \
    [ $rc -eq 1 -a -n "$msg" -a $drc -le 1 ]
else
  skip "faults.disk_full: cannot mount a tmpfs here"
fi

# --- two_recorders ---
PORT=18473
"$ENGINE" --port $PORT --bind 127.0.0.1 --ready-file "$T/two.ready" 2>/dev/null &
EP=$!
CLEANUP+=("kill $EP")
wait_for_file "$T/two.ready" 10
"$LS" record --port $PORT -d 6 -o "$T/two-a.data" 2>"$T/two-a.log" &
A=$!
"$LS" record --port $PORT -d 6 -o "$T/two-b.data" 2>"$T/two-b.log" &
B=$!
wait_recording "$T/two-a.log"; wait_recording "$T/two-b.log"
"$LOADGEN" --port $PORT -c 2 -n 20 --stream --max-tokens 4 --no-keepalive 2>/dev/null
wait $A; wait $B
na=$(requests_ok "$T/two-a.data"); nb=$(requests_ok "$T/two-b.data")
check "faults.two_recorders: two recordings of one port at once: $na and $nb of 20 requests" \
  [ "$na" -eq 20 -a "$nb" -eq 20 ]
