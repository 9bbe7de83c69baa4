#!/usr/bin/env bash
# Where socket I/O is read (record --sock-hooks): the kernel's socket
# tracepoints (record's default where the kernel has them, as here) and the
# raw syscall tracepoints (the default on older kernels, tested on this one
# too). Truth: the client's own marks (client_accuracy.py: every request
# found once, ok, exact sums, total and TTFT within max(1 ms, 2%)), the same
# bytes each way, and a unix socket's connections counted one by one when
# each request has its own (nginx's defaults: a new upstream connection per
# request) although no close is seen at the socket tracepoints; a kept-alive
# connection first seen by a read placed where that read began.
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

# --- a kept-alive connection whose first event in the capture is a read (its
# request arrived before the recording began): at the socket tracepoints the
# read is met as it ends, past its bytes, and the adoption must place the
# stream where the read began, else every later request's first byte lands on
# the next request's arrival (totals clamped to 0). Truth: the server's own
# 2 ms of work in each and the client's timing of requests 1-19 (request 0
# was in the socket before the capture).
AD_PORT=18473
for hooks in socket syscalls; do
  rm -f "$T/ad.ready" "$T/ad.go"
  $PY - $AD_PORT "$T/ad.ready" "$T/ad.go" <<'PY' &
import os, socket, sys, time
port, ready, go = int(sys.argv[1]), sys.argv[2], sys.argv[3]
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", port))
s.listen(1)
open(ready, "w").close()
c, _ = s.accept()
while not os.path.exists(go):
    time.sleep(0.01)
buf = b""
for i in range(20):
    while b"\r\n\r\n" not in buf:
        d = c.recv(4096)
        if not d:
            sys.exit(0)
        buf += d
    buf = buf.split(b"\r\n\r\n", 1)[1]
    time.sleep(0.002)  # the server's work
    c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
while c.recv(4096):  # until the client closes
    pass
PY
  SPID=$!
  wait_for_file "$T/ad.ready" 10
  $PY - $AD_PORT "$T/ad-$hooks.lg" <<'PY' &
import json, socket, sys, time
c = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
out = open(sys.argv[2], "w")
for i in range(20):
    t0 = time.monotonic_ns()
    c.sendall(f"GET /ad HTTP/1.1\r\nHost: x\r\nX-Request-Id: ad-{i}\r\n\r\n".encode())
    got = b""
    while not got.endswith(b"ok"):
        got += c.recv(4096)
    out.write(json.dumps({"x_request_id": f"ad-{i}", "total_ns": time.monotonic_ns() - t0}) + "\n")
    time.sleep(0.003)
time.sleep(0.2)  # the last response's ACK is in the capture
c.close()
PY
  CPID=$!
  sleep 0.3 # request 0 waits in the server's socket, unread
  record_bg "$T/ad-$hooks.data" -p $SPID --sock-hooks $hooks || fail "sock_hooks.adopt_read.$hooks: record did not start"
  touch "$T/ad.go"
  wait $CPID
  wait $SPID
  stop_recording 0.5
  "$LS" report --json "$T/ad-$hooks.data" >"$T/ad-$hooks.jsonl" 2>/dev/null
  off=$($PY - "$T/ad-$hooks.jsonl" "$T/ad-$hooks.lg" <<'PY'
import json, sys
rep = {}
for r in map(json.loads, open(sys.argv[1])):
    if r.get("x_request_id"):
        rep.setdefault(r["x_request_id"], []).append(r)
cli = [j for j in map(json.loads, open(sys.argv[2]))][1:]
off = []
for j in cli:
    rs = rep.get(j["x_request_id"], [])
    t = rs[0]["total_ns"] if len(rs) == 1 and rs[0]["outcome"] == "ok" else None
    # at least the server's 2 ms between its read and its write; at most the
    # client's own time (which also holds its own waits for a CPU)
    if t is None or t < 2_000_000 or t > j["total_ns"] + 1_000_000:
        off.append((j["x_request_id"], t, j["total_ns"]))
print(f"{len(cli) - len(off)} of {len(cli)}" + (f"; off (id, got, client ns): {off[:3]}" if off else ""))
PY
)
  check "sock_hooks.adopt_read.$hooks: requests 1-19 on a connection first seen by a read, each found once, ok, its total at least the server's 2 ms of work and at most the client's + 1 ms: $off" \
    [ "${off%% of*}" = "19" -a "$(echo "$off" | cut -d' ' -f3)" = "19" ]
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
