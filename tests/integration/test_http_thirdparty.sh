#!/usr/bin/env bash
# A server and client we did not write: python3's http.server (HTTP/1.1,
# keep-alive) and curl reusing one connection for several requests,
# including HEAD and a 404. Counts, methods, paths and statuses must match.
source "$(dirname "$0")/lib.sh"
require_root thirdparty.requests
command -v curl >/dev/null || { skip "thirdparty.requests: curl not installed (tools/install-test-deps.sh)"; exit 0; }

PORT=18383
mkdir -p "$T/www"; echo hello >"$T/www/a.txt"; head -c 200000 /dev/zero >"$T/www/big.bin"
cat >"$T/server.py" <<PY
import http.server, os, sys
os.chdir("$T/www")
class H(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", $PORT), H)
open("$T/ready", "w").close()
srv.serve_forever()
PY
start_recording "$T/cap.data" "$T/ready" -- python3 "$T/server.py" || { fail "thirdparty.setup: server did not start"; exit 0; }
U=http://127.0.0.1:$PORT
for round in 1 2; do
  curl -s -o /dev/null "$U/a.txt" -o /dev/null "$U/missing" -o /dev/null "$U/big.bin" \
    -o /dev/null "$U/a.txt?x=$round"
  curl -s -I -o /dev/null "$U/a.txt"
done
stop_recording 0.5
"$LS" report --json "$T/cap.data" >"$T/r.jsonl" 2>"$T/r.err"
python3 - "$T/r.jsonl" $PORT <<'PY'
import json, sys, collections
rs = sorted([r for r in map(json.loads, open(sys.argv[1])) if r.get("type") != "verdict"], key=lambda r: r["id"])
conns = collections.defaultdict(list)
for r in rs:
    conns[r["conn_id"]].append((r["method"], r["path"], r["status"], r["outcome"]))
got = sorted(conns.values(), key=lambda v: (len(v), v))
# http.server answers errors with "Connection: close", so curl carries on
# over a new connection after the 404: three connections per round.
want = sorted([[("GET", "/a.txt", 200, "ok"), ("GET", "/missing", 404, "ok")] for n in (1, 2)] +
              [[("GET", "/big.bin", 200, "ok"), ("GET", f"/a.txt?x={n}", 200, "ok")] for n in (1, 2)] +
              [[("HEAD", "/a.txt", 200, "ok")]] * 2, key=lambda v: (len(v), v))
ok = got == want
print(("PASS" if ok else "FAIL") + f" thirdparty.requests: {len(rs)} requests on {len(conns)} connections"
      + ("" if ok else f": got {got}"))
big = [r for r in rs if r["path"] == "/big.bin"]
print(("PASS" if big and all(r["bytes_out"] > 200000 for r in big) else "FAIL") +
      f" thirdparty.bytes: /big.bin bytes_out {[r['bytes_out'] for r in big]}")
PY
