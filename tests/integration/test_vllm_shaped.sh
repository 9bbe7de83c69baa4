#!/usr/bin/env bash
# The split on a vLLM-shaped server (tools/vllm-shaped: FastAPI/uvicorn API
# process + ZMQ engine-core process, Debian's Python), recorded as a new user
# would (`latsplit record -- python3 server.py`), on loopback and over
# netlab with loss: each request's queueing.engine, frontend_ns, total and
# TTFT against the engine's, the server's and the client's own marks (see
# vllm_accuracy.py). Prints the error tables.
source "$(dirname "$0")/lib.sh"
require_root vllm
PY=/usr/bin/python3
if ! $PY -c 'import fastapi, uvicorn, zmq, numpy, uvloop, httptools' 2>/dev/null; then
  skip "vllm: python3-fastapi, -uvicorn, -zmq, -numpy, -uvloop, -httptools missing (tools/install-test-deps.sh)"; exit 0
fi
SERVER=$ROOT/tools/vllm-shaped/server.py
PORT=18441
run() { # NAME [--netlab] -- LOADGEN ARGS   (SERVER_ARGS: extra server flags)
  local name=$1 host=127.0.0.1 ns_srv=() ns_cli=(); shift
  if [[ $1 == --netlab ]]; then
    shift; host=$SRV_IP; ns_srv=(ip netns exec "$SRV_NS"); ns_cli=(ip netns exec "$CLI_NS")
  fi
  shift
  local d=$T/$name
  rm -f "$T/ready"
  start_recording "$d.data" "$T/ready" -- "${ns_srv[@]}" $PY "$SERVER" --host "$host" --port $PORT \
    --truth "$d.truth" --ready-file "$T/ready" --max-running 4 --step-us 3000 ${SERVER_ARGS:-} ||
    { fail "vllm.$name: server did not start"; cat "$d.data.log"; return; }
  "${ns_cli[@]}" "$LOADGEN" --host "$host" --port $PORT --id-prefix "$name-" -o "$d.lg" "$@" 2>/dev/null
  stop_recording 0.5
  "$LS" report --json "$d.data" >"$d.jsonl" 2>/dev/null
  $PY "$ROOT/tests/integration/vllm_accuracy.py" "$name" "$d.jsonl" "$d.truth" "$d.lg"
}
# uvloop + httptools, as vLLM runs it (the server's default): every streamed
# response ends in one writev of several iovecs
run loopback -- -c 6 -n 48 --stream --max-tokens 12 --prompt-bytes 2000
# the pure-Python variant: asyncio + h11
SERVER_ARGS="--loop asyncio --http h11" run asyncio_h11 -- -c 4 -n 24 --stream --max-tokens 12 --prompt-bytes 2000
export NETLAB_PREFIX=lsv$$
eval "$("$NETLAB" up --loss-to-client 5 --rate 50mbit)" || { fail "vllm.setup: netlab up failed"; exit 0; }
CLEANUP+=("NETLAB_PREFIX=$NETLAB_PREFIX $NETLAB down")
run lossy --netlab -- -c 4 -n 24 --stream --max-tokens 12 --prompt-bytes 2000
