#!/usr/bin/env bash
# Faults during a recording (reliability issue):
#  - exec: the tracked -p process execs a server mid-recording: its requests
#    are found under the same pid;
#  - forks: the target forks 50 short-lived children: all seen, none left
#    tracked, the capture reads;
#  - disk_full: the capture's filesystem fills (a 256 KiB tmpfs): record stops
#    with one line naming the cause, and the capture so far reads;
#  - two_recorders: two `record`s at once on one port: both captures hold
#    every request;
#  - pid_reuse: a server exits and another program gets its pid (forced
#    through /proc/sys/kernel/ns_last_pid) and serves the same port: the
#    requests of both are found, each with its own method and path.
# (-p exiting, SIGKILL of record and SIGHUP: test_attach.sh, test_hostile.sh.)
source "$(dirname "$0")/lib.sh"
require_root faults.exec faults.forks faults.disk_full faults.two_recorders faults.pid_reuse

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

# --- pid_reuse ---
PORT=18474
mkdir -p "$T/www"; echo hello >"$T/www/a.txt"
"$LS" record --port $PORT -d 10 -o "$T/reuse.data" 2>"$T/reuse.log" &
RP=$!
wait_recording "$T/reuse.log"
"$ENGINE" --port $PORT --bind 127.0.0.1 --ready-file "$T/reuse.ready" 2>/dev/null &
A=$!
wait_for_file "$T/reuse.ready" 10
"$LOADGEN" --port $PORT -c 1 -n 5 --max-tokens 2 2>/dev/null
kill $A; wait $A 2>/dev/null
B=0
for try in 1 2 3 4 5; do
  echo $((A - 1)) >/proc/sys/kernel/ns_last_pid
  python3 -c "
import http.server, os, sys
os.chdir('$T/www')
class H(http.server.SimpleHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(('127.0.0.1', $PORT), H).serve_forever()" &
  B=$!
  [[ $B -eq $A ]] && break
  kill $B; wait $B 2>/dev/null
done
for i in $(seq 50); do curl -s -o /dev/null "http://127.0.0.1:$PORT/a.txt" && break; sleep 0.1; done
for i in 1 2 3 4; do curl -s -o /dev/null "http://127.0.0.1:$PORT/a.txt"; done
kill $B; wait $B 2>/dev/null
wait $RP
"$LS" report --json "$T/reuse.data" >"$T/reuse.jsonl" 2>/dev/null
got=$(python3 - "$T/reuse.jsonl" "$A" <<'PY'
import json, sys
rs = [r for r in map(json.loads, open(sys.argv[1])) if r.get("type") != "verdict"]
pid = int(sys.argv[2])
post = sum(1 for r in rs if r["pid"] == pid and r["method"] == "POST" and r["outcome"] == "ok")
get = sum(1 for r in rs if r["pid"] == pid and r["method"] == "GET" and r["path"] == "/a.txt" and r["outcome"] == "ok")
print(post, get)
PY
)
check "faults.pid_reuse: pid $A served by the mock engine, then by python3 (pid $B): POST and GET requests found ok: $got (want 5 5)" \
  [ "$B" -eq "$A" -a "$got" = "5 5" ]
