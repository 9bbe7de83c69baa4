# Shared helpers for integration tests. Source it; it sets LS (the binary),
# a scratch dir $T removed at exit, and pass/fail/skip printers.
set -uo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
LS=${LS:-$ROOT/build/latsplit}
ENGINE=$ROOT/build/mock-engine
LOADGEN=$ROOT/build/loadgen
NETLAB=$ROOT/tools/netlab.sh
T=$(mktemp -d /tmp/latsplit-test.XXXXXX)
[[ -n ${KEEP_T:-} ]] && echo "  scratch: $T"
CLEANUP=()

pass() { echo "PASS $*"; }
fail() { echo "FAIL $*"; }
skip() { echo "SKIP $*"; }
info() { echo "  $*"; }

# check NAME CONDITION-COMMAND... : PASS/FAIL on the command's status.
check() {
  local name=$1; shift
  if "$@"; then pass "$name"; else fail "$name"; fi
}

on_exit() {
  local i
  for ((i = ${#CLEANUP[@]} - 1; i >= 0; i--)); do eval "${CLEANUP[i]}" >/dev/null 2>&1 || true; done
  [[ -n ${KEEP_T:-} ]] || rm -rf "$T"
}
trap on_exit EXIT

# require_root NAME...: prints SKIP for each name and exits when not root.
require_root() {
  if [[ $(id -u) -ne 0 ]]; then
    for n in "$@"; do skip "$n: needs root (real BPF); run make test with sudo"; done
    exit 0
  fi
}

wait_for_file() { # PATH TIMEOUT_S
  local i
  for ((i = 0; i < $2 * 20; i++)); do [[ -e $1 ]] && return 0; sleep 0.05; done
  return 1
}

# wait_released: until no "latsplit-detach" helper (an exited record's
# perf-event uprobes, released in the background) is left; 10 s at most.
wait_released() {
  local i
  for ((i = 0; i < 200; i++)); do pgrep -x latsplit-detach >/dev/null || return 0; sleep 0.05; done
  return 1
}

# wait_recording LOGFILE: until latsplit record says it is recording.
wait_recording() {
  local i
  for ((i = 0; i < 200; i++)); do grep -q 'recording' "$1" 2>/dev/null && return 0; sleep 0.05; done
  return 1
}

# record_bg OUT ARGS...: latsplit record -o OUT ARGS in the background
# (RPID set, its log OUT.log), until it says it is recording; 1 if it never
# does. stop_recording ends it.
record_bg() {
  local out=$1; shift
  "$LS" record "$@" -o "$out" 2>"$out.log" &
  RPID=$!
  CLEANUP+=("kill -INT $RPID")
  wait_recording "$out.log"
}

# start_uds_engine SOCK READY LOG: the vLLM-shaped engine (3 ms steps) on unix
# socket SOCK, its output in LOG, UPID its pid (killed at exit); fails when it
# is not ready within 20 s.
start_uds_engine() {
  /usr/bin/python3 "$ROOT/tools/vllm-shaped/server.py" --uds "$1" --ready-file "$2" \
    --step-us 3000 >"$3" 2>&1 &
  UPID=$!
  CLEANUP+=("kill $UPID")
  wait_for_file "$2" 20
}

# nginx_start CONF PORT: Debian's nginx on CONF (its error log beside it),
# NG its pid (killed at exit), until PORT listens.
nginx_start() {
  nginx -c "$1" -e "$(dirname "$1")/error.log" &
  NG=$!
  CLEANUP+=("kill $NG")
  for _ in $(seq 50); do ss -Hltn "sport = :$2" | grep -q . && break; sleep 0.1; done
}

# snmp_retrans_segs [NS]: Tcp RetransSegs from /proc/net/snmp (of NS).
snmp_retrans_segs() {
  local cmd=(cat /proc/net/snmp)
  [[ -n ${1:-} ]] && cmd=(ip netns exec "$1" cat /proc/net/snmp)
  "${cmd[@]}" | awk '/^Tcp:/ { if (!h) { for (i = 1; i <= NF; i++) col[$i] = i; h = 1 } else print $col["RetransSegs"] }'
}

# start_recording OUT READY [RECORD-OPTION...] -- CMD...: latsplit record -o OUT
# RECORD-OPTION... -- CMD (RPID set); waits until CMD creates READY.
# stop_recording ends it.
start_recording() {
  local out=$1 ready=$2 opts=(); shift 2
  while (($#)) && [[ $1 != -- ]]; do opts+=("$1"); shift; done
  shift
  "$LS" record -o "$out" "${opts[@]}" -- "$@" 2>"$out.log" &
  RPID=$!
  CLEANUP+=("kill -INT $RPID")
  wait_for_file "$ready" 10
}
stop_recording() { sleep "${1:-0.5}"; kill -INT "$RPID"; wait "$RPID"; }

# wait_tcp_quiet NS [TIMEOUT_S]: until NS has no TCP socket but listeners and
# TIME_WAIT (nothing left that could still retransmit).
wait_tcp_quiet() {
  local i
  for ((i = 0; i < ${2:-30} * 10; i++)); do
    ip netns exec "$1" ss -Htan 2>/dev/null | grep -vE '^(LISTEN|TIME-WAIT)' >/dev/null || return 0
    sleep 0.1
  done
  return 1
}
