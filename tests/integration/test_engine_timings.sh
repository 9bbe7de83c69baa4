#!/usr/bin/env bash
# Timings an engine returns in its responses (issue 27, DESIGN §11): a
# llama.cpp-shaped CPU server (tools/servers/llama-shaped.c: one generation
# slot, FIFO, llama.cpp's "timings" in its last SSE chunk or its JSON), no
# engine events. Truth: the server's own marks (its queue: slot - received)
# and the client's (total, TTFT). Each request is split by the timings
# (engine: timings), its queueing.engine within max(1 ms, 5%) of the queue
# the server measured, the verdict names the queue; the capture keeps the
# timings' numbers and no prompt or completion text. The timings are
# durations, placed from the write that carried the first token (or the
# answer): the server's own marks say how late after the token that write
# returned (a preempted server), which makes the truth the range [queue,
# queue + that lateness].
source "$(dirname "$0")/lib.sh"
require_root engine_timings
PY=/usr/bin/python3
SERVER=$ROOT/build/llama-shaped
[[ -x $SERVER ]] || { fail "engine_timings: $SERVER not built (make)"; exit 0; }
PORT=18495

run() { # NAME LOADGEN-ARGS...
  local name=$1 d=$T/$1; shift
  rm -f "$T/ready"
  start_recording "$d.data" "$T/ready" -- "$SERVER" --port $PORT --slots 1 --prompt-us-per-token 40 \
    --token-us 3000 --truth "$d.truth" --ready-file "$T/ready" ||
    { fail "engine_timings.$name: server did not start"; return 1; }
  "$LOADGEN" --host 127.0.0.1 --port $PORT --id-prefix "$name-" -o "$d.lg" -c 4 -n 24 \
    --max-tokens 8 --prompt-bytes 2000 "$@" 2>/dev/null
  stop_recording 0.5
  "$LS" report --json "$d.data" >"$d.jsonl" 2>"$d.report.err"
  $PY "$ROOT/tests/integration/client_accuracy.py" "engine_timings.$name" "$d.jsonl" "$d.lg"
  $PY - "$d.jsonl" "$d.truth" "$name" <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
truth = {t["x_request_id"]: t for t in map(json.loads, open(sys.argv[2]))}
name = sys.argv[3]
mine = {r["x_request_id"]: r for r in recs if str(r.get("x_request_id", "")).startswith(name + "-")}
v = [r for r in recs if r.get("type") == "verdict"][-1]
src = sum(1 for r in mine.values() if r["sources"]["engine"] == "timings")
usage = sum(1 for r in mine.values() if r.get("usage") == {"prompt_tokens": truth[r["x_request_id"]]["prompt_tokens"], "completion_tokens": 8})
bad, got_sum, want_sum = [], 0, 0
print(f"  {name}: {'id':>18s} {'queueing.engine ms':>18s} {'server queue ms':>16s}")
for x, t in sorted(truth.items()):
    r = mine.get(x)
    want = t["slot"] - t["received"]
    late = t["written"] - (t["first_token"] if t["stream"] else t["last_token"])
    got = r and r["sub"].get("queueing.engine")
    if got is None:
        bad.append((x, None, want))
        continue
    got_sum += got
    want_sum += want
    near = want if got <= want else min(got, want + late)
    if abs(got - near) > max(1e6, 0.05 * want):
        bad.append((x, round(got / 1e6, 3), round(want / 1e6, 3), round(late / 1e6, 3)))
for x in sorted(truth)[:4]:
    r = mine.get(x)
    print(f"  {name}: {x:>18s} {(r['sub'].get('queueing.engine') or 0) / 1e6:18.3f} "
          f"{(truth[x]['slot'] - truth[x]['received']) / 1e6:16.3f}")
def line(ok, check, what):
    print(("PASS" if ok else "FAIL") + f" engine_timings.{name}.{check}: {what}")
line(len(mine) == 24 and src == 24, "source", f"{src} of {len(mine)} requests split by the timings in their responses (engine: timings)")
line(usage == 24, "usage", f"{usage} of 24 records carry the response's usage (prompt tokens as the server counted, 8 completion tokens)")
line(len(truth) == 24 and not bad, "queueing.engine",
     f"{len(truth) - len(bad)}/{len(truth)} within max(1 ms, 5%) of the server's own queue wait"
     + (f"; off (id, got, truth, write lateness ms): {bad[:3]}" if bad else ""))
line(want_sum > 0 and abs(got_sum - want_sum) <= 0.05 * want_sum, "queue_total",
     f"queueing.engine {got_sum / 1e6:.1f} ms in all vs the server's queue {want_sum / 1e6:.1f} ms")
line(v.get("dominant") == "queueing.engine", "verdict",
     f"the verdict names {v.get('dominant')} ({v.get('component')}, share {v.get('share')})")
PY
  # the capture keeps the timings' numbers, not the prompts or completions
  $PY "$ROOT/tests/integration/rawcap.py" "$d.data" >"$d.raw"
  local kept prompts texts
  kept=$(grep -ac '"timings":{"prompt_n":[0-9]*,"prompt_ms":[0-9.]*' "$d.raw")
  prompts=$(grep -ac 'xxxxxxxxxxxxxxxx' "$d.raw")
  texts=$(grep -ac 'tok[0-9]' "$d.raw")
  check "engine_timings.$name.scrubbed: timings kept in $kept records; prompt text in $prompts, completion text in $texts" \
    [ "$kept" -ge 1 -a "$prompts" -eq 0 -a "$texts" -eq 0 ]
}

run stream --stream
run json

# One connection: no queue; the server's time is its own CPU compute (in
# ggml_compute_forward_mul_mat, as llama.cpp's): the verdict names host and
# its advice the model's compute on the CPU (ggml/BLAS frames), not
# tokenisation. Truth: the server does nothing else between a request's
# read and its last token but that loop.
d=$T/cpu
rm -f "$T/ready"
"$LS" record -o "$d.data" -F 199 -- "$SERVER" --port $PORT --slots 1 --truth "$d.truth" \
  --ready-file "$T/ready" 2>"$d.data.log" &
RPID=$!
CLEANUP+=("kill -INT $RPID")
if wait_for_file "$T/ready" 10; then
  "$LOADGEN" --host 127.0.0.1 --port $PORT --id-prefix cpu- -o "$d.lg" -c 1 -n 24 --stream \
    --max-tokens 8 --prompt-bytes 2000 2>/dev/null
  stop_recording 0.5
  "$LS" report --json "$d.data" 2>/dev/null | tail -1 >"$d.verdict"
  "$LS" report "$d.data" >"$d.txt" 2>&1
  res=$($PY -c 'import json,sys; v=json.load(open(sys.argv[1])); c=v.get("cpu_compute") or {}
print(v.get("dominant"), round(100*c.get("share",0),1), c.get("frame","-"), "ggml/BLAS" in v.get("remedy",""))' "$d.verdict")
  read -r dom share frame advice <<<"$res"
  check "engine_timings.cpu_compute: host dominates ($dom); ${share}% of the server's CPU samples in ggml/BLAS frames (most: $frame); the advice names the model's compute ($advice)" \
    [ "$dom" = host -a "${share%.*}" -ge 50 -a "$frame" = ggml_compute_forward_mul_mat -a "$advice" = True ]
  check "engine_timings.cpu_compute.text: the text verdict says it ($(grep -o "the engine's own compute: .*" "$d.txt"))" \
    grep -q "the engine's own compute: .* ggml/BLAS frames (most: ggml_compute_forward_mul_mat)" "$d.txt"
else
  fail "engine_timings.cpu_compute: server did not start"
fi
