#!/usr/bin/env bash
# Hostile-host finding 8: slow clients cannot deny /metrics. 20 connections
# that send half a request and hold (slowloris) once took every one of the
# endpoint's 16 connections for 10 s, so no scrape got through, and each
# printed a line on record's stderr. Now a scrape during them answers, and
# the server's messages are counted, not printed.
source "$(dirname "$0")/lib.sh"
require_root metrics.slow_clients
MPORT=18437
"$LS" record --port 1 --metrics 127.0.0.1:$MPORT -d 12 -o "$T/m.data" 2>"$T/rec.log" &
RPID=$!
CLEANUP+=("kill -INT $RPID")
wait_recording "$T/rec.log" || { fail "metrics.slow_clients: record did not start"; exit 0; }
/usr/bin/python3 - $MPORT <<'PY' &
import socket, sys, time
held = []
for _ in range(20):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b"GET /metr")
    held.append(s)
time.sleep(8)
PY
SPID=$!
CLEANUP+=("kill $SPID")
sleep 1
code=$(curl -s -o "$T/scrape.txt" -w '%{http_code}' --max-time 5 "http://127.0.0.1:$MPORT/metrics")
wait $SPID
wait $RPID
lines=$(grep -vc '^latsplit record\|^  ' "$T/rec.log")
check "metrics.slow_clients: a scrape during 20 held connections: HTTP $code, $(grep -c '^latsplit_' "$T/scrape.txt") series; stray stderr lines $lines" \
  [ "$code" = 200 -a "$(grep -c '^latsplit_' "$T/scrape.txt")" -gt 0 -a "$lines" -eq 0 ]
