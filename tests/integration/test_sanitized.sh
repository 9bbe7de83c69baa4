#!/usr/bin/env bash
# The whole agent built with ASan+UBSan (build/san/latsplit): a recording of
# the mock engine under load (sampling, off-CPU stacks, engine events,
# simulated GPU with launch stacks), then every analysis command and
# option over it, over a --no-symbolize recording, and over the capture cut
# in half. Any sanitizer report aborts the command (-fno-sanitize-recover):
# each must exit 0, or 1 where the input is refused, and print no report.
source "$(dirname "$0")/lib.sh"
require_root sanitized
SAN=$ROOT/build/san/latsplit
[[ -x $SAN ]] || { fail "sanitized: $SAN not built (make build/san/latsplit)"; exit 0; }
LIB=$ROOT/build/liblatsplit-engine.so
bad=()

run() { # EXPECTED-RCS ARGS...: runs the sanitized latsplit
  local want=$1 rc; shift
  "$SAN" "$@" >"$T/out" 2>"$T/err"; rc=$?
  if ! grep -qw -- "$rc" <<<"$want" || grep -qE 'Sanitizer|runtime error' "$T/err"; then
    bad+=("latsplit $* (rc $rc): $(grep -m1 -E 'ERROR|runtime error' "$T/err" || tail -1 "$T/err")")
  fi
}

PORT=18911
for mode in symbolized raw; do
  extra=(); [[ $mode == raw ]] && extra=(--no-symbolize)
  rm -f "$T/ready"
  "$SAN" record -o "$T/$mode.data" -F 199 --engine-lib "$LIB" "${extra[@]}" -- \
    "$ENGINE" --port $PORT --bind 127.0.0.1 --token-ms 1 --host-us 500 --ready-file "$T/ready" \
    2>"$T/rec.$mode.log" &
  RPID=$!
  CLEANUP+=("kill -INT $RPID")
  wait_for_file "$T/ready" 20 || { fail "sanitized.$mode: engine did not start"; continue; }
  "$LOADGEN" --port $PORT -c 4 -n 16 --stream --max-tokens 12 >/dev/null 2>&1
  sleep 0.3; kill -INT $RPID; wait $RPID; rc=$?
  if [[ $rc -ne 0 ]] || grep -qE 'Sanitizer|runtime error' "$T/rec.$mode.log"; then
    bad+=("record ($mode, rc $rc): $(grep -m1 -E 'ERROR|runtime error' "$T/rec.$mode.log")")
  fi
done
head -c $(($(stat -c %s "$T/symbolized.data") / 2)) "$T/symbolized.data" >"$T/cut.data"

for f in symbolized raw cut; do
  d=$T/$f.data
  run "0" dump "$d"; run "0" dump --json "$d"
  run "0" report "$d"; run "0" report --json "$d"; run "0" report --csv "$d"; run "0" report --ttft --top 3 "$d"
  for k in latency gpu cpu offcpu; do
    run "0 1" flame --kind $k "$d"; run "0 1" flame --kind $k --svg "$d"
  done
  run "0 1" flame --kind latency --ttft --component host "$d"
  run "0 1" flame --kind latency --request 1 "$d"
done
# hostile-host findings 7 and 12: a stack record claiming 0x20000001
# addresses (n * 8 wrapped in 32 bits), and a capture with no GPU record
# (timeline once sorted a NULL array)
"$ROOT/build/flame-capture" "$T/nips.data" --huge-nips >/dev/null
for k in latency gpu cpu offcpu; do run "0 1" flame --kind $k "$T/nips.data"; done
run "0" timeline "$T/nips.data" -o "$T/nips.pftrace"
"$SAN" record -d 0.5 -p $$ -o "$T/nogpu.data" >/dev/null 2>&1
run "0" timeline "$T/nogpu.data" -o "$T/nogpu.pftrace"
run "0" report --html "$T/nogpu.data" -o "$T/nogpu.html"
for c in record report dump flame check; do run "0" $c --help; done
run "1" report "$T/nonexistent.data"
run "2" flame --kind nonsense "$T/raw.data"
run "0" check

if [[ ${#bad[@]} -eq 0 ]]; then
  pass "sanitized.cli: record (symbolized and raw) and every analysis command under ASan+UBSan, clean"
else
  fail "sanitized.cli: ${#bad[@]} command(s) failed or reported"; printf '    %s\n' "${bad[@]}"
fi
