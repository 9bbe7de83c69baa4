#!/usr/bin/env bash
# make bench: prints figures, never fails on speed.
#  1. capture writer/reader throughput on synthetic records;
#  2. overhead of `latsplit record` on the loopback workload: loadgen
#     requests/s without and with recording, alternated in one run.
set -uo pipefail
cd "$(dirname "$0")/../.."
B=build
echo "== capture throughput"
$B/bench-capture 2000000

echo
echo "== record overhead on loopback (mock-engine + loadgen, small streaming requests, keep-alive)"
if [[ $(id -u) -ne 0 ]]; then echo "skipped: needs root"; exit 0; fi
T=$(mktemp -d); PORT=18555
$B/mock-engine --port $PORT --bind 127.0.0.1 --tokens 4 --ready-file $T/ready & EPID=$!
trap 'kill $EPID 2>/dev/null; rm -rf $T' EXIT
for i in $(seq 50); do [[ -e $T/ready ]] && break; sleep 0.1; done
run_load() { $B/loadgen --port $PORT -c 8 -d 3 --stream --max-tokens 4 2>&1 | sed -n 's/.*(\([0-9.]*\) req\/s).*/\1/p'; }
declare -a base rec
for round in 1 2 3; do
  base+=("$(run_load)")
  rm -f $T/cap.data
  $B/latsplit record -o $T/cap.data -p $EPID 2>$T/rec.log & RP=$!
  for i in $(seq 100); do grep -q recording $T/rec.log && break; sleep 0.05; done
  rec+=("$(run_load)")
  kill -INT $RP; wait $RP
  events=$(sed -n 's/.* \([0-9]*\) events written.*/\1/p' $T/rec.log)
  bpe=$(sed -n 's/.*, \([0-9.]*\) bytes\/event/\1/p' $T/rec.log)
  printf "round %d: untraced %8.1f req/s   recorded %8.1f req/s   (%s events, %s B/event on disk)\n" \
    $round "${base[-1]}" "${rec[-1]}" "$events" "$bpe"
done
python3 - "${base[@]}" "${rec[@]}" <<'PY'
import sys, statistics as s
v = list(map(float, sys.argv[1:])); b, r = v[:3], v[3:]
print(f"median: untraced {s.median(b):.1f} req/s, recorded {s.median(r):.1f} req/s, "
      f"ratio {s.median(r)/s.median(b):.3f} (1.0 = no overhead)")
PY
