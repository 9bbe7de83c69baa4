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
#  - tls.record: record names the libssl it attached to.
source "$(dirname "$0")/lib.sh"
require_root tls.uvloop tls.secrets tls.record
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
