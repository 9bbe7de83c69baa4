#!/usr/bin/env bash
# Where socket I/O is read (record --sock-hooks): the kernel's socket
# tracepoints (record's default where the kernel has them, as here) and the
# raw syscall tracepoints (the default on older kernels, tested on this one
# too). Truth: the client's own marks (client_accuracy.py: every request
# found once, ok, exact sums, total and TTFT within max(1 ms, 2%)), the same
# bytes each way, and a unix socket's connections counted one by one when
# each request has its own (nginx's defaults: a new upstream connection per
# request) although no close is seen at the socket tracepoints.
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/helpers/nginx_conf.sh"
require_root sock_hooks
PY=/usr/bin/python3
ACC=$ROOT/tests/integration/client_accuracy.py

# --- a bad value: one line naming the values, exit 2
"$LS" record --sock-hooks kprobes -o "$T/bad.data" -- true 2>"$T/bad.err"; rc=$?
check "sock_hooks.usage: --sock-hooks kprobes exits 2 (got $rc) with one line ($(head -c 100 "$T/bad.err"))" \
  [ "$rc" -eq 2 -a "$(wc -l <"$T/bad.err")" -eq 1 ]
if ! grep -qa btf_trace_sock_send_length /sys/kernel/btf/vmlinux; then
  skip "sock_hooks: this kernel has no socket tracepoints (Linux >= 6.3): test_kernels covers its syscall hooks"
  exit 0
fi

# --- the mock engine, streamed, each way
PORT=18471
for hooks in socket syscalls; do
  rm -f "$T/ready"
  start_recording "$T/$hooks.data" "$T/ready" --sock-hooks $hooks -- "$ENGINE" --port $PORT \
    --ready-file "$T/ready" --max-batch 4 --token-ms 1 --host-us 200 ||
    { fail "sock_hooks.$hooks: engine did not start"; continue; }
  "$LOADGEN" --host 127.0.0.1 --port $PORT --id-prefix "$hooks-" -o "$T/$hooks.lg" -c 4 -n 24 --stream \
    --max-tokens 8 --prompt-bytes 600 2>/dev/null
  stop_recording 0.5
  "$LS" report --json "$T/$hooks.data" >"$T/$hooks.jsonl" 2>/dev/null
  "$LS" report "$T/$hooks.data" >"$T/$hooks.txt" 2>&1
  $PY "$ACC" "sock_hooks.$hooks" "$T/$hooks.jsonl" "$T/$hooks.lg"
  want=no; [[ $hooks == socket ]] && want=yes
  got=no; grep -q 'sock_io:socket_tp' "$T/$hooks.txt" && got=yes
  check "sock_hooks.$hooks.sources: the capture says socket I/O came from the socket tracepoints: $got (want $want)" \
    [ "$got" = "$want" ]
done
# each request's bytes, either way, as the client counted them (its bytes
# sent are the request's bytes in, its bytes received the response's out)
for hooks in socket syscalls; do
  off=$($PY - "$T/$hooks.jsonl" "$T/$hooks.lg" <<'PY'
import json, sys
rep = {r["x_request_id"]: r for r in map(json.loads, open(sys.argv[1])) if r.get("x_request_id")}
cli = [j for j in map(json.loads, open(sys.argv[2])) if not j.get("error")]
off = [f'{j["x_request_id"]}: in {rep.get(j["x_request_id"], {}).get("bytes_in")}/{j["bytes_out"]} '
       f'out {rep.get(j["x_request_id"], {}).get("bytes_out")}/{j["bytes_in"]}'
       for j in cli if (rep.get(j["x_request_id"], {}).get("bytes_in"),
                        rep.get(j["x_request_id"], {}).get("bytes_out")) != (j["bytes_out"], j["bytes_in"])]
print(f"{len(cli) - len(off)} of {len(cli)}" + ("; off (got/client): " + ", ".join(off[:4]) if off else ""))
PY
)
  check "sock_hooks.$hooks.bytes: each request's bytes in and out as the client sent and received them: $off" \
    [ "${off%% of*}" = "24" -a "$(echo "$off" | cut -d' ' -f3)" = "24" ]
done

# --- nginx -> the vLLM-shaped engine on a unix socket, nginx's defaults (a
# new connection per request), traced at the engine by -p, each way
if ! command -v nginx >/dev/null || ! $PY -c 'import fastapi, uvicorn, zmq, uvloop, httptools' 2>/dev/null; then
  skip "sock_hooks.unix: nginx-light or the vLLM-shaped engine's Python packages missing (tools/install-test-deps.sh)"
  exit 0
fi
NG_PORT=18472
chmod 0755 "$T"
start_uds_engine "$T/eng.sock" "$T/uds.ready" "$T/uds-eng.log" ||
  { fail "sock_hooks.unix: engine did not start"; exit 0; }
nginx_conf_write "$T/ng" "  server {
    listen 127.0.0.1:$NG_PORT;
    location / { proxy_pass http://unix:$T/eng.sock; proxy_buffering off; }
  }"
nginx_start "$T/ng/nginx.conf" $NG_PORT
for hooks in socket syscalls; do
  record_bg "$T/unix-$hooks.data" -p $UPID --sock-hooks $hooks || fail "sock_hooks.unix.$hooks: record did not start"
  # one connection at a time: a closed socket's address is soon another's
  "$LOADGEN" --host 127.0.0.1 --port $NG_PORT --id-prefix "u$hooks-" -o "$T/unix-$hooks.lg" -c 1 -n 24 \
    --stream --max-tokens 8 --prompt-bytes 600 2>/dev/null
  stop_recording 0.5
  "$LS" report --json "$T/unix-$hooks.data" >"$T/unix-$hooks.jsonl" 2>/dev/null
  "$LS" report "$T/unix-$hooks.data" >"$T/unix-$hooks.txt" 2>&1
  $PY "$ACC" "sock_hooks.unix.$hooks" "$T/unix-$hooks.jsonl" "$T/unix-$hooks.lg" --inner unix
  conns=$(sed -n 's/.* requests on \([0-9]*\) HTTP connections.*/\1/p' "$T/unix-$hooks.txt")
  check "sock_hooks.unix.$hooks.conns: 24 requests, each on its own unix connection: ${conns:-?} connections" \
    [ "${conns:-0}" -eq 24 ]
done
