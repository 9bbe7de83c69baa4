#!/usr/bin/env bash
# Servers we did not write, as production runs them (issue: every byte as
# real servers write it): a Node `http` streaming server (each res.write is a
# writev of size line, data, CRLF), and Debian's nginx in front of the
# vLLM-shaped engine (uvicorn on uvloop + httptools), with a keep-alive
# HTTP/1.1 upstream and with nginx's defaults (HTTP/1.0 upstream, buffering
# on), traced at nginx's port; and nginx -> the engine on a unix socket
# (uvicorn --uds), traced at the engine by -p. Truth: the client's own marks
# (client_accuracy.py): every request found once, ok, exact sums, total and
# TTFT within max(1 ms, 2%) (behind the proxy: found, ok, transport unix,
# exact sums).
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/helpers/nginx_conf.sh"
require_root servers
PY=/usr/bin/python3
ACC=$ROOT/tests/integration/client_accuracy.py

# load NAME PORT: the client's requests, its marks in $T/NAME.lg
load() { # NAME PORT [LOADGEN-ARGS...]: 24 streamed requests on 4 connections
  local name=$1 port=$2; shift 2
  "$LOADGEN" --host 127.0.0.1 --port "$port" --id-prefix "$name-" -o "$T/$name.lg" -c 4 -n 24 --stream \
    --max-tokens 8 --prompt-bytes 600 "$@" 2>/dev/null
}
judge() { # NAME
  "$LS" report --json "$T/$1.data" >"$T/$1.jsonl" 2>"$T/$1.report.err"
  $PY "$ACC" "servers.$1" "$T/$1.jsonl" "$T/$1.lg"
}

# --- Node
if command -v node >/dev/null; then
  start_recording "$T/node.data" "$T/node.ready" -- node "$ROOT/tools/servers/node-stream.js" \
    --port 18461 --ready-file "$T/node.ready" || fail "servers.node: server did not start"
  load node 18461
  # clients that pause after connecting: that pause is theirs, outside the total
  for i in 1 2 3; do
    $PY "$ROOT/tests/integration/clients.py" idle 127.0.0.1 18461 50 "idle-$i" >>"$T/idle.marks"
  done
  stop_recording 0.5
  judge node
  res=$($PY - "$T/node.jsonl" "$T/idle.marks" <<'PY'
import json, sys
rep = {r.get("x_request_id"): r for r in map(json.loads, open(sys.argv[1]))}
bad, out = [], []
for c in map(json.loads, open(sys.argv[2])):
    r = rep.get(c["x_request_id"])
    if not r or r["total_ns"] is None:
        bad.append((c["x_request_id"], "missing"))
        continue
    # the client's own: send to last byte, plus at most its connect call
    # (which holds the handshake and Python's own socket set-up); less how
    # late its marks may be (the send call, the last bytes' arrival stamp)
    lo = c["total_ns"] - c["start_wait_ns"] - c["end_wait_ns"]
    hi = c["connect_ns"] + c["total_ns"]
    idle = r.get("connect_idle_ns") or 0
    out.append(f'{c["x_request_id"]}: total {r["total_ns"]/1e6:.3f} ms vs client '
               f'[{lo/1e6:.3f}, {hi/1e6:.3f}], idle {idle/1e6:.1f} vs {c["idle_ns"]/1e6:.1f} ms')
    tol = max(1e6, 0.02 * hi)
    # its pause ends when its bytes leave: at most its send call's time
    # after its mark
    if (not lo - tol <= r["total_ns"] <= hi + tol
            or not c["idle_ns"] - 1e6 <= idle <= c["idle_ns"] + c["start_wait_ns"] + 1e6):
        bad.append(c["x_request_id"])
print("ok" if not bad and out else f"bad {bad}", "; ".join(out))
PY
)
  check "servers.connect_idle: a client's 50 ms pause after connecting stays out of its first request: $res" \
    [ "${res%% *}" = ok ]
  # A capture too short for the framing: every request is "unparsed" with
  # the reason, its bytes still counted; never "aborted"; and --json says
  # why nothing was split.
  rm -f "$T/node.ready"
  "$LS" record --capture-bytes 40 -o "$T/short.data" -- node "$ROOT/tools/servers/node-stream.js" \
    --port 18461 --ready-file "$T/node.ready" 2>"$T/short.log" &
  RPID=$!
  CLEANUP+=("kill -INT $RPID")
  wait_for_file "$T/node.ready" 10
  load short 18461
  stop_recording 0.5
  "$LS" report --json "$T/short.data" >"$T/short.jsonl" 2>/dev/null
  res=$($PY - "$T/short.jsonl" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
reqs = [r for r in recs if "outcome" in r]
outs = sorted({r["outcome"] for r in reqs})
why = {r.get("unparsed_why", "")[:40] for r in reqs}
moved = sum(1 for r in reqs if r["bytes_out"] > 0)
empty = [r["reason"][:60] for r in recs if r.get("type") == "empty"]
print(len(reqs), ",".join(outs), moved, "|".join(why), "|", *empty)
PY
)
  read -r n outs moved _ <<<"$res"
  check "servers.unparsed: 40-byte capture: $res" \
    [ "${n:-0}" -ge 24 -a "$outs" = unparsed -a "${moved:-0}" -eq "${n:-1}" ]
  check "servers.empty_reason: report --json says why nothing was split" grep -q '"type":"empty","reason":"[0-9]* requests seen, none parsed whole' "$T/short.jsonl"
else
  skip "servers.node: no nodejs (tools/install-test-deps.sh)"
fi

# --- a server on recvmmsg/sendmmsg: the first message's payload, every
# message's bytes (the response's head, then its body, each a message), read
# at the syscall tracepoints (at the socket ones, which say not which
# message of the call a send or receive is: bytes only, below)
if cc -D_GNU_SOURCE -O1 -o "$T/mmsg_server" "$ROOT/tests/helpers/mmsg_server.c"; then
  start_recording "$T/mmsg.data" "$T/mmsg.ready" --sock-hooks syscalls -- "$T/mmsg_server" 18464 "$T/mmsg.ready" ||
    fail "servers.mmsg: server did not start"
  sizes=()
  for i in 1 2 3; do
    sizes+=("$(curl -s -o /dev/null -w '%{size_header}+%{size_download}' -H "X-Request-Id: mmsg-$i" \
      -d '{"prompt":"x"}' http://127.0.0.1:18464/v1/completions)")
  done
  stop_recording 0.5
  "$LS" report --json "$T/mmsg.data" >"$T/mmsg.jsonl" 2>/dev/null
  got=$(grep -o '"outcome":"[a-z_]*".*"x_request_id":"mmsg-[0-9]".*"bytes_out":[0-9]*' "$T/mmsg.jsonl" |
    sed -E 's/"outcome":"([a-z_]*)".*"x_request_id":"(mmsg-[0-9])".*"bytes_out":([0-9]*)/\2 \1 \3/' | sort)
  want=$(for i in 1 2 3; do echo "mmsg-$i ok $(( ${sizes[i-1]} ))"; done)
  check "servers.mmsg: requests read by recvmmsg, answered by sendmmsg: $(echo $got) (want $(echo $want))" \
    [ "$got" = "$want" ]
  # at the socket tracepoints: no request rebuilt, every connection counted
  # (opaque), none silently gone
  if grep -qa btf_trace_sock_send_length /sys/kernel/btf/vmlinux; then
    rm -f "$T/mmsg.ready"
    start_recording "$T/mmsg_tp.data" "$T/mmsg.ready" --sock-hooks socket -- "$T/mmsg_server" 18464 "$T/mmsg.ready" ||
      fail "servers.mmsg_socket: server did not start"
    for i in 1 2 3; do
      curl -s -o /dev/null -d '{"prompt":"x"}' http://127.0.0.1:18464/v1/completions
    done
    stop_recording 0.5
    line=$("$LS" report "$T/mmsg_tp.data" 2>&1 | grep -m1 'HTTP connections')
    check "servers.mmsg_socket: at the socket tracepoints, mmsg calls' bytes without payload: 3 connections counted opaque ($line)" \
      grep -q '0 requests on 0 HTTP connections (3 opaque' <<<"$line"
  fi
else
  fail "servers.mmsg: cc failed"
fi

# --- nginx in front of the vLLM-shaped engine
if ! command -v nginx >/dev/null || ! $PY -c 'import fastapi, uvicorn, zmq, uvloop, httptools' 2>/dev/null; then
  skip "servers.nginx: nginx-light or the vLLM-shaped engine's Python packages missing (tools/install-test-deps.sh)"
  exit 0
fi
ENG_PORT=18462 NG_PORT=18463
$PY "$ROOT/tools/vllm-shaped/server.py" --port $ENG_PORT --ready-file "$T/eng.ready" \
  --step-us 3000 --truth "$T/eng.truth" >"$T/eng.log" 2>&1 &
CLEANUP+=("kill $!")
wait_for_file "$T/eng.ready" 20 || { fail "servers.nginx: engine did not start"; exit 0; }

# nginx_conf NAME LOCATION-BODY
nginx_conf() {
  nginx_conf_write "$T/ng-$1" "  upstream engine { server 127.0.0.1:$ENG_PORT; keepalive 8; }
  server {
    listen 127.0.0.1:$NG_PORT;
    location / { $2 }
  }"
}
nginx_run() { # NAME [CONF-NAME [RECORD-ARGS...]]: traced at nginx's port (and RECORD-ARGS)
  local name=$1 conf=${2:-$1}
  shift $(( $# < 2 ? $# : 2 ))
  nginx_start "$T/ng-$conf/nginx.conf" $NG_PORT
  record_bg "$T/$name.data" --port $NG_PORT "$@" || fail "servers.$name: record did not start"
  load "$name" $NG_PORT
  if [[ -n ${METRICS_PORT:-} ]]; then # the live /metrics, once every split is final
    sleep 3
    curl -s "http://127.0.0.1:$METRICS_PORT/metrics" >"$T/$name.metrics"
  fi
  stop_recording 0.5
  kill $NG; wait $NG 2>/dev/null
  judge "$name"
}
nginx_conf nginx_keepalive 'proxy_pass http://engine; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off;'
nginx_run nginx_keepalive
nginx_conf nginx_defaults "proxy_pass http://127.0.0.1:$ENG_PORT;"
nginx_run nginx_defaults
# traced at nginx, its connections to the engine are upstream, not opaque
for n in nginx_keepalive nginx_defaults; do
  "$LS" report "$T/$n.data" >"$T/$n.txt" 2>&1
  up=$(grep -o '[0-9]* upstream connections: the tracked process sent' "$T/$n.txt" | cut -d' ' -f1)
  opaque=$(grep -o '([0-9]* opaque' "$T/$n.txt" | tr -d '(' | cut -d' ' -f1)
  # the prompts (600 x's) nginx forwards are bodies: scrubbed on that hop too
  python3 "$ROOT/tests/integration/rawcap.py" "$T/$n.data" >"$T/$n.raw"
  prompts=$(grep -ac 'xxxxxxxxxxxxxxxx' "$T/$n.raw")
  check "servers.$n.upstream: nginx's connections to the engine named upstream: ${up:-0}; opaque: ${opaque:-?}; prompts in the raw capture: $prompts" \
    [ "${up:-0}" -ge 1 -a "${opaque:-1}" -eq 0 -a "$prompts" -eq 0 ]
done

# A proxy and the engine both traced (DESIGN §11, hops): one record per
# client request, at the proxy's port, with the engine's split inside it and
# the proxy's own time as network.proxy. Truth: the client's own marks
# (found once, ok, exact sums, total and TTFT within max(1 ms, 2%)).
# hops_check NAME HELD: every record names its hops and network.proxy, the
# verdict counts each request once; HELD 1: the proxy held the stream (most
# of the TTFT in network.proxy, and the verdict says so), 0: it did not.
hops_check() {
  "$LS" report "$T/$1.data" >"$T/$1.txt" 2>&1
  res=$($PY - "$T/$1.jsonl" "$1-" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
mine = [r for r in recs if str(r.get("x_request_id", "")).startswith(sys.argv[2])]
hops = sum(1 for r in mine if [h["role"] for h in r.get("hops", [])] == ["proxy", "server"]
           and r["sub"].get("network.proxy") is not None)
comms = sorted({h["comm"] for r in mine for h in r.get("hops", [])})
inner = len({r["hops"][1]["server"] for r in mine if len(r.get("hops", [])) == 2})
v = [r for r in recs if r.get("type") == "verdict"][-1]
others = sum(1 for r in recs if "outcome" in r) - len(mine)
print(len(mine), hops, others, v.get("requests"), v.get("proxied", 0),
      round(100 * v.get("proxy_ttft_share", 0), 1), ",".join(comms), inner)
PY
)
  read -r mine hops others vreq proxied share comms inner <<<"$res"
  check "servers.$1.one_record: $mine records for 24 client requests, $hops with hops [proxy, server] and network.proxy ($comms), $others others; the verdict counts $vreq, $proxied across the proxy; $inner server(s) behind it" \
    [ "${mine:-0}" -eq 24 -a "${hops:-0}" -eq 24 -a "${others:-1}" -eq 0 -a "${vreq:-0}" -eq 24 -a "${proxied:-0}" -eq 24 -a "${inner:-0}" -eq "${3:-1}" ]
  local held
  held=$(grep -c 'the proxy held the stream' "$T/$1.txt")
  if [[ $2 == 1 ]]; then
    check "servers.$1.held: the proxy held $share% of the TTFT (network.proxy), and the verdict says so ($held)" \
      [ "${share%.*}" -ge 50 -a "$held" -eq 1 ]
  else
    check "servers.$1.not_held: $share% of the TTFT in the proxy (tokens passed on as they came), the verdict names no holding ($held)" \
      [ "${share%.*}" -lt 50 -a "$held" -eq 0 ]
  fi
}
# nginx passes tokens on as the engine writes them, with buffering off and
# also with its defaults (buffering on: its event pipe still writes each
# upstream read on to a client that keeps up: 3% of the TTFT measured here)
for n in nginx_keepalive nginx_defaults; do
  METRICS_PORT=18468 nginx_run "$n.hops" "$n" --port $ENG_PORT --metrics 127.0.0.1:18468
  hops_check "$n.hops" 0
  # the live Prometheus counters count each client request once
  reqs=$(awk '/^latsplit_requests_total\{/ { s += $2 } END { print s + 0 }' "$T/$n.hops.metrics")
  durs=$(awk '/^latsplit_request_duration_seconds_count/ { print $2 }' "$T/$n.hops.metrics")
  check "servers.$n.hops.metrics: /metrics counts $reqs requests, $durs durations for 24 client requests" \
    [ "$reqs" -eq 24 -a "${durs:-0}" -eq 24 ]
  # the engine's hop inside the record, against the engine's own truth
  # (queueing.engine, its front end) and the client's marks
  $PY "$ROOT/tests/integration/vllm_accuracy.py" "servers.$n.hops.engine" "$T/$n.hops.jsonl" \
    "$T/eng.truth" "$T/$n.hops.lg"
done
# nginx sends an id of its own (X-Request-Id $request_id): the hops pair by
# nginx's upstream connection (the engine's peer) and the client connection
# nginx passed its response on to. Truth: nginx's own log of both ids.
nginx_conf nginx_ownid "proxy_pass http://engine; proxy_http_version 1.1; proxy_set_header Connection \"\"; proxy_buffering off; proxy_set_header X-Request-Id \$request_id; access_log $T/ng-nginx_ownid/ids.log ids;"
sed -i 's|^  access_log off;|  access_log off; log_format ids "$http_x_request_id $request_id";|' "$T/ng-nginx_ownid/nginx.conf"
nginx_run nginx_ownid.hops nginx_ownid --port $ENG_PORT
hops_check nginx_ownid.hops 0
res=$($PY - "$T/nginx_ownid.hops.jsonl" "$T/ng-nginx_ownid/ids.log" <<'PY'
import json, sys
truth = dict(l.split() for l in open(sys.argv[2]) if len(l.split()) == 2)
got = {r["x_request_id"]: r["hops"][1]["x_request_id"] for r in map(json.loads, open(sys.argv[1]))
       if len(r.get("hops", [])) == 2}
right = sum(1 for k, v in got.items() if truth.get(k) == v)
print(right, len(got), len(truth))
PY
)
read -r right joined logged <<<"$res"
check "servers.nginx_ownid.hops.pairs: $right of $joined joined records carry the engine request nginx's log names for that client request ($logged logged)" \
  [ "${right:-0}" -eq 24 -a "${joined:-0}" -eq 24 ]
# two replicas behind nginx, round robin, all three traced: each record
# names the replica that served it
ENG2_PORT=18466
$PY "$ROOT/tools/vllm-shaped/server.py" --port $ENG2_PORT --ready-file "$T/eng2.ready" \
  --step-us 3000 >"$T/eng2.log" 2>&1 &
CLEANUP+=("kill $!")
if wait_for_file "$T/eng2.ready" 20; then
  nginx_conf nginx_replicas 'proxy_pass http://replicas; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off;'
  sed -i "s|^  server {|  upstream replicas { server 127.0.0.1:$ENG_PORT; server 127.0.0.1:$ENG2_PORT; keepalive 8; }\n  server {|" "$T/ng-nginx_replicas/nginx.conf"
  nginx_run nginx_replicas.hops nginx_replicas --port $ENG_PORT --port $ENG2_PORT
  hops_check nginx_replicas.hops 0 2
else
  fail "servers.nginx_replicas: the second engine did not start"
fi
# a gateway that reads the whole response before answering (tools/servers/
# buffer-proxy.js): the client gets every token at the end. 24 tokens: the
# held decode (23 steps of 3 ms) is well over half the client's TTFT (with
# 8 it was 50-62%, and a loaded host's slower prefill took it under half)
if command -v node >/dev/null; then
  node "$ROOT/tools/servers/buffer-proxy.js" --port 18465 --upstream 127.0.0.1:$ENG_PORT \
    --ready-file "$T/bp.ready" & CLEANUP+=("kill $!")
  wait_for_file "$T/bp.ready" 10 || fail "servers.buffer_proxy: proxy did not start"
  record_bg "$T/buffer_proxy.data" --port 18465 --port $ENG_PORT ||
    fail "servers.buffer_proxy: record did not start"
  load buffer_proxy 18465 --max-tokens 24
  stop_recording 0.5
  judge buffer_proxy
  hops_check buffer_proxy 1
fi

# traced at the engine alone behind nginx over TCP: X-Forwarded-For is a
# header any client can write, believed only from a trusted proxy
# (report --trusted-proxy CIDR); then the per-client table names the real
# client (DESIGN §11)
nginx_conf nginx_xff 'proxy_pass http://engine; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off; proxy_set_header X-Forwarded-For "198.51.100.7, $remote_addr";'
nginx_start "$T/ng-nginx_xff/nginx.conf" $NG_PORT
record_bg "$T/nginx_xff.data" --port $ENG_PORT || fail "servers.nginx_xff: record did not start"
load nginx_xff $NG_PORT
stop_recording 0.5
kill $NG; wait $NG 2>/dev/null
"$LS" report --json "$T/nginx_xff.data" >"$T/nginx_xff.untrusted.jsonl" 2>/dev/null
"$LS" report --json --trusted-proxy 127.0.0.0/8 "$T/nginx_xff.data" >"$T/nginx_xff.jsonl" 2>/dev/null
"$LS" report --trusted-proxy 127.0.0.1 "$T/nginx_xff.data" >"$T/nginx_xff.txt" 2>&1
untrusted=$(grep -c '"forwarded_for":"198.51.100.7"' "$T/nginx_xff.untrusted.jsonl")
trusted=$(grep -c '"forwarded_for":"198.51.100.7"' "$T/nginx_xff.jsonl")
row=$(grep -E '^  198\.51\.100\.7 \(forwarded\) +24 ' "$T/nginx_xff.txt" | wc -l)
check "servers.trusted_proxy: X-Forwarded-For from nginx (127.0.0.1) believed in $trusted of 24 requests with --trusted-proxy 127.0.0.0/8, $untrusted without; per-client row of the forwarded client: $row" \
  [ "$trusted" -eq 24 -a "$untrusted" -eq 0 -a "$row" -eq 1 ]
"$LS" report --trusted-proxy 10.0.0.0/99 "$T/nginx_xff.data" >/dev/null 2>"$T/bad_cidr.err"
check "servers.trusted_proxy.bad: a bad CIDR is a one-line usage error ($(head -c 120 "$T/bad_cidr.err"))" \
  [ "$(wc -l <"$T/bad_cidr.err")" -eq 1 ]

# nginx -> engine over a unix socket, traced at the engine alone (-p); the
# workers (user nobody) must reach the socket in $T
chmod 0755 "$T"
start_uds_engine "$T/eng.sock" "$T/uds.ready" "$T/uds-eng.log" ||
  { fail "servers.nginx_unix: engine did not start"; exit 0; }
nginx_conf nginx_unix 'proxy_pass http://engine_uds; proxy_http_version 1.1; proxy_set_header Connection ""; proxy_buffering off; proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;'
sed -i "s|^  server {|  upstream engine_uds { server unix:$T/eng.sock; keepalive 8; }\n  server {|" "$T/ng-nginx_unix/nginx.conf"
nginx_start "$T/ng-nginx_unix/nginx.conf" $NG_PORT
record_bg "$T/nginx_unix.data" -p $UPID || fail "servers.nginx_unix: record did not start"
load nginx_unix $NG_PORT
stop_recording 0.5
"$LS" report --json "$T/nginx_unix.data" >"$T/nginx_unix.jsonl" 2>/dev/null
$PY "$ACC" servers.nginx_unix "$T/nginx_unix.jsonl" "$T/nginx_unix.lg" --inner unix
# behind the proxy, the request names the client nginx served
xff=$(grep -c '"forwarded_for":"127.0.0.1"' "$T/nginx_unix.jsonl")
check "servers.forwarded_for: $xff of 24 requests at the engine name nginx's client (X-Forwarded-For 127.0.0.1)" \
  [ "$xff" -eq 24 ]
