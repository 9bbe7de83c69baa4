#!/usr/bin/env bash
# TLS through the process's own libssl: the vLLM-shaped server serving HTTPS
# itself on uvloop (uvicorn --ssl-certfile: OpenSSL through memory BIOs, so
# no socket call is under SSL_read/SSL_write), recorded as a new user would.
#  - tls.uvloop: every request a TLS client (tls_client.py, one process per
#    connection, its own marks) sent is found by X-Request-Id, tls true,
#    ok, sums exact, total and TTFT within max(1 ms, 2%) of the client's marks;
#  - tls.secrets: the Authorization header and the prompt the client sent
#    over TLS are in no record of the raw capture, and the plaintext is (its
#    request line), so the check can fail;
#  - tls.record: record names the libssl it attached to;
#  - tls.nginx_h2: nginx `listen ssl http2` (OpenSSL on its sockets: the
#    socket calls happen inside SSL_read/SSL_write) in front of the engine,
#    traced at nginx's port: Node's http2 client over TLS (its own marks) as
#    for uvloop, and `curl --http2` found as an ok h2 stream with its tokens;
#    its Authorization value and prompt in no record (nginx forwards both to
#    the engine in clear HTTP/1.1: that hop is scrubbed too).
source "$(dirname "$0")/lib.sh"
source "$ROOT/tests/helpers/nginx_conf.sh"
require_root tls.uvloop tls.secrets tls.record tls.nginx_h2
PY=/usr/bin/python3
if ! $PY -c 'import fastapi, uvicorn, zmq, uvloop, httptools, ssl' 2>/dev/null || ! command -v openssl >/dev/null; then
  skip "tls: python3-fastapi, -uvicorn, -zmq, -uvloop, -httptools or openssl missing (tools/install-test-deps.sh)"
  exit 0
fi
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$T/key.pem" -out "$T/cert.pem" -days 2 \
  -subj /CN=localhost 2>/dev/null || { fail "tls.setup: openssl could not make a certificate"; exit 0; }
start_recording "$T/tls.data" "$T/ready" -- $PY "$ROOT/tools/vllm-shaped/server.py" --port 18451 \
  --ssl-certfile "$T/cert.pem" --ssl-keyfile "$T/key.pem" --ready-file "$T/ready" \
  --truth "$T/truth" --max-running 4 --step-us 3000 || fail "tls: server did not start"
$PY "$ROOT/tests/integration/tls_client.py" 127.0.0.1:18451 "$T/tls.lg" -c 4 -n 24 --max-tokens 12 \
  --prompt-bytes 300 --header "Authorization: Bearer PLANTEDTLSBEARER0042" 2>/dev/null
stop_recording 0.5
"$LS" report --json "$T/tls.data" >"$T/tls.jsonl" 2>/dev/null
$PY "$ROOT/tests/integration/client_accuracy.py" tls.uvloop "$T/tls.jsonl" "$T/tls.lg"
$PY - "$T/tls.jsonl" <<'PY'
import json, sys
rs = [r for r in map(json.loads, open(sys.argv[1])) if r.get("type") != "verdict"]
bad = [(r["x_request_id"], r["protocol"], r["tls"], r["tokens"]) for r in rs
       if r["protocol"] != "http/1.1" or not r["tls"] or r["tokens"] != 12]
print(("PASS" if rs and not bad else "FAIL") + f" tls.uvloop.fields: {len(rs)} requests, protocol "
      f"http/1.1, tls true, 12 tokens each; bad: {bad[:3]}")
PY
python3 "$ROOT/tests/integration/rawcap.py" "$T/tls.data" >"$T/tls.raw"
leaks=$(grep -aoE 'PLANTED[A-Z0-9]*|xxxxxxxxxxxxxxxx' "$T/tls.raw" | sort | uniq -c | tr '\n' ' ')
plain=$(grep -ac 'POST /v1/completions HTTP/1.1' "$T/tls.raw")
check "tls.secrets: the Authorization value and the prompt in the raw capture: ${leaks:-none}; request lines in plaintext: $plain" \
  [ -z "$leaks" -a "$plain" -gt 0 ]
libs=$(grep -o 'TLS plaintext through [^ ]*' "$T/tls.data.log" | head -3 | tr '\n' ' ')
tied=$(grep -o 'TLS plaintext reads and writes: .*' "$T/tls.data.log")
check "tls.record: record names the libssl it attached to (${libs:-none}) and counts what it tied (${tied:-nothing})" \
  [ -n "$libs" -a -n "$tied" ]

# --- nginx terminating TLS with HTTP/2, HTTP/1.1 upstream
if ! command -v nginx >/dev/null || ! command -v node >/dev/null; then
  skip "tls.nginx_h2: nginx-light or nodejs missing (tools/install-test-deps.sh)"; exit 0
fi
ENG_PORT=18452 NG_PORT=18453
$PY "$ROOT/tools/vllm-shaped/server.py" --port $ENG_PORT --ready-file "$T/eng.ready" \
  --step-us 3000 >"$T/eng.log" 2>&1 &
CLEANUP+=("kill $!")
wait_for_file "$T/eng.ready" 20 || { fail "tls.nginx_h2: engine did not start"; exit 0; }
nginx_conf_write "$T/ng" "  upstream engine { server 127.0.0.1:$ENG_PORT; keepalive 8; }
  server {
    listen 127.0.0.1:$NG_PORT ssl http2;
    ssl_certificate $T/cert.pem; ssl_certificate_key $T/key.pem;
    location / { proxy_pass http://engine; proxy_http_version 1.1; proxy_set_header Connection \"\"; proxy_buffering off; }
  }"
nginx_start "$T/ng/nginx.conf" $NG_PORT
record_bg "$T/ng.data" --port $NG_PORT || fail "tls.nginx_h2: record did not start"
node "$ROOT/tests/integration/h2_client.js" "https://127.0.0.1:$NG_PORT" "$T/ng.lg" 4 6 tlsh2- 2>"$T/ng.client.err"
curl -sk --http2 "https://127.0.0.1:$NG_PORT/v1/completions" -H 'X-Request-Id: curl-h2-1' \
  -H 'Authorization: Bearer PLANTEDNGINXBEARER77' \
  -d '{"prompt":"PLANTEDPROMPT0077 over h2","max_tokens":5,"stream":true}' >"$T/curl.out"
stop_recording 0.5
"$LS" report --json "$T/ng.data" >"$T/ng.jsonl" 2>/dev/null
$PY "$ROOT/tests/integration/client_accuracy.py" tls.nginx_h2 "$T/ng.jsonl" "$T/ng.lg"
$PY - "$T/ng.jsonl" "$T/curl.out" <<'PY'
import json, sys
rs = [r for r in map(json.loads, open(sys.argv[1])) if r.get("type") != "verdict"]
bad = [(r["x_request_id"], r["protocol"], r["tls"]) for r in rs if r["protocol"] != "h2" or not r["tls"]]
curl = [r for r in rs if r["x_request_id"] == "curl-h2-1"]
done = "data: [DONE]" in open(sys.argv[2]).read()
ok = rs and not bad and len(curl) == 1 and curl[0]["outcome"] == "ok" and curl[0]["tokens"] == 5 and done
print(("PASS" if ok else "FAIL") + f" tls.nginx_h2.fields: {len(rs)} streams, protocol h2, tls true (bad: {bad[:3]}); "
      f"curl --http2's found once, ok, 5 tokens: {[(r['outcome'], r['tokens']) for r in curl]}, its response whole: {done}")
PY
python3 "$ROOT/tests/integration/rawcap.py" "$T/ng.data" >"$T/ng.raw"
leaks=$(grep -aoE 'PLANTED[A-Z0-9]*' "$T/ng.raw" | sort | uniq -c | tr '\n' ' ')
redacted=$(grep -aci 'authorization: \*' "$T/ng.raw")
check "tls.nginx_h2.secrets: curl's Authorization value and prompt in the raw capture at nginx: ${leaks:-none}; the header forwarded upstream, redacted: $redacted" \
  [ -z "$leaks" -a "$redacted" -ge 1 ]
