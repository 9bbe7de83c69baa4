#!/usr/bin/env bash
# Pictures: `latsplit timeline` writes a Perfetto trace that Debian's protoc
# decodes (--decode_raw) and whose structure holds (perfetto_check.py:
# descriptors before events, begins and ends paired, monotonic timestamps,
# MONOTONIC clock with a BOOTTIME/MONOTONIC snapshot); `report --html` writes
# one page that headless Chromium renders with no console error, showing
# the verdict and one waterfall bar per split request. A screenshot is left
# in build/report.png for a person to look at. On the golden fixture (a
# mock-engine capture with a simulated GPU); no privileges needed.
source "$(dirname "$0")/lib.sh"
CAP=$ROOT/tests/golden/mock.data
"$LS" timeline -o "$T/trace.perfetto-trace" "$CAP" 2>"$T/tl.err"
if command -v protoc >/dev/null; then
  check "pictures.protoc: protoc --decode_raw parses the trace ($(stat -c %s "$T/trace.perfetto-trace") bytes)" \
    bash -c "protoc --decode_raw <'$T/trace.perfetto-trace' >'$T/raw.txt'"
else
  skip "pictures.protoc: no protoc (protobuf-compiler, tools/install-test-deps.sh)"
fi
nreq=$("$LS" report --json "$CAP" 2>/dev/null | /usr/bin/python3 -c \
  'import json,sys; print(sum(1 for l in sys.stdin for r in [json.loads(l)] if r.get("type")!="verdict" and r["total_ns"] is not None))')
/usr/bin/python3 "$ROOT/tests/integration/perfetto_check.py" "$T/trace.perfetto-trace" "$nreq"

"$LS" report --html -o "$T/report.html" "$CAP" 2>"$T/html.err"
CHROME=$(command -v chromium || command -v chromium-browser || true)
if [[ -z $CHROME ]]; then skip "pictures.chromium: no chromium (tools/install-test-deps.sh)"; exit 0; fi
CH=(timeout 120 "$CHROME" --headless=new --no-sandbox --disable-gpu --hide-scrollbars
    --user-data-dir="$T/chrome" --virtual-time-budget=5000)
"${CH[@]}" --enable-logging=stderr --v=0 --dump-dom "file://$T/report.html" >"$T/dom.html" 2>"$T/chrome.err"
rows=$(grep -o 'class="row"' "$T/dom.html" | wc -l)
errors=$(grep ':CONSOLE' "$T/chrome.err" | grep -ciE 'uncaught|error|warning' || true)
verdict=$(grep -o 'id="verdict">[^<]*' "$T/dom.html" | cut -d'>' -f2)
info "chromium: $rows waterfall rows for $nreq split requests; verdict: $verdict; console errors: $errors"
grep ':CONSOLE' "$T/chrome.err" | head -3 | sed 's/^/    /'
check "pictures.html: headless Chromium renders the page: no console error, the verdict, one bar per request" \
  bash -c "[[ $errors -eq 0 && $rows -eq $nreq && '$verdict' == verdict:* ]]"
mkdir -p "$ROOT/build"
"${CH[@]}" --window-size=1400,1800 --screenshot="$ROOT/build/report.png" "file://$T/report.html" \
  >/dev/null 2>&1
check "pictures.screenshot: build/report.png for a person to look at" test -s "$ROOT/build/report.png"
