#!/usr/bin/env bash
# gpu-check.sh: checks latsplit's GPU path on a real NVIDIA GPU. Self-contained:
# needs the CUDA 13 toolkit (CUDA_HOME, default /usr/local/cuda), PyTorch with
# CUDA, gcc, make; no internet. Run from the repository root:
#
#   tools/gpu-check.sh [OUTDIR]        (default gpu-check-out/)
#
# It builds the CUPTI shim, runs a small PyTorch workload — a tiny transformer
# generating tokens eagerly and with CUDA graphs, plus explicit pinned and
# pageable copies — with the shim injected, and reports:
#   - the shim's kernel count and total kernel time next to torch.profiler's
#     for the same workload; copy counts, bytes and times;
#   - workload throughput with and without the shim, alternated, as a ratio
#     (the shim collecting with LATSPLIT_CUPTI_SUMMARY, i.e. its full cost
#     but for the USDT hand-over; and, when latsplit can record here, again
#     with `latsplit record` attached);
#   - whether `latsplit check` and `latsplit record` work on this host.
# Logs go to OUTDIR; the last thing printed is a short table.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-gpu-check-out}
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
mkdir -p "$OUT"
log() { echo "gpu-check: $*" | tee -a "$OUT/summary.log"; }
: >"$OUT/summary.log"

command -v nvidia-smi >/dev/null && nvidia-smi -L >"$OUT/nvidia-smi.txt" 2>&1
log "GPU: $(head -1 "$OUT/nvidia-smi.txt" 2>/dev/null || echo unknown)"
python3 -c 'import torch; assert torch.cuda.is_available(); print(torch.__version__, torch.version.cuda)' \
  >"$OUT/torch.txt" 2>&1 || { log "PyTorch with CUDA not usable: $(tail -1 "$OUT/torch.txt")"; exit 1; }
log "torch $(cat "$OUT/torch.txt")"

# --- build: the shim needs only gcc and the toolkit; latsplit needs libbpf
mkdir -p build
if gcc -std=gnu11 -O2 -g -Wall -Iinclude -Iuser -I"$CUDA_HOME/include" -fPIC -shared \
     -fvisibility=hidden -o build/liblatsplit-cupti.so user/cupti/shim.c user/cupti/translate.c \
     -L"$CUDA_HOME/lib64" -L"$CUDA_HOME/extras/CUPTI/lib64" -lcupti \
     -Wl,-rpath,"$CUDA_HOME/lib64:$CUDA_HOME/extras/CUPTI/lib64" -lpthread >"$OUT/build-shim.log" 2>&1; then
  log "shim built: build/liblatsplit-cupti.so"
else
  log "shim build FAILED (see $OUT/build-shim.log)"; exit 1
fi
HAVE_LS=0
if make -s build/latsplit build/liblatsplit-engine.so >"$OUT/build-latsplit.log" 2>&1; then HAVE_LS=1; fi
CHECK=no RECORD=no
if [[ $HAVE_LS == 1 ]]; then
  build/latsplit check >"$OUT/check.txt" 2>&1 && CHECK=yes
else
  log "latsplit not built here (see $OUT/build-latsplit.log): record/check skipped"
fi

# --- the workload
cat >"$OUT/workload.py" <<'PY'
import json, os, sys, time
import torch, torch.nn as nn
mode, steps = sys.argv[1], int(sys.argv[2])
torch.manual_seed(0)
dev = "cuda"
class Tiny(nn.Module):
    def __init__(s, d=512, layers=4, vocab=8192):
        super().__init__()
        s.emb = nn.Embedding(vocab, d)
        s.blocks = nn.ModuleList(nn.TransformerEncoderLayer(d, 8, 4 * d, batch_first=True) for _ in range(layers))
        s.out = nn.Linear(d, vocab)
    def forward(s, x):
        h = s.emb(x)
        for b in s.blocks:
            h = b(h)
        return s.out(h[:, -1])
m = Tiny().to(dev).half().eval()
ctx = torch.randint(0, 8192, (8, 64), device=dev)
def step_eager():
    with torch.no_grad():
        return m(ctx).argmax(-1)
graph, static_out = None, None
if mode == "graph":
    s = torch.cuda.Stream(); s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3): step_eager()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        static_out = step_eager()
def step():
    if graph is not None:
        graph.replay(); return static_out
    return step_eager()
pinned = torch.empty(4 << 20, dtype=torch.uint8).pin_memory()
pageable = torch.empty(4 << 20, dtype=torch.uint8)
gbuf = torch.empty(4 << 20, dtype=torch.uint8, device=dev)
def copies():
    gbuf.copy_(pinned, non_blocking=True); gbuf.copy_(pageable); pinned.copy_(gbuf); pageable.copy_(gbuf)
for _ in range(5): step()
torch.cuda.synchronize()
prof = os.environ.get("PROFILE") == "1"
if prof:
    from torch.profiler import profile, ProfilerActivity
    p = profile(activities=[ProfilerActivity.CUDA]); p.__enter__()
t0 = time.perf_counter()
for i in range(steps):
    tok = step()
    if i % 50 == 0: copies()
torch.cuda.synchronize()
dt = time.perf_counter() - t0
res = {"mode": mode, "steps": steps, "tokens_per_s": steps * 8 / dt}
if prof:
    p.__exit__(None, None, None)
    ev = [e for e in p.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    k = [e for e in ev if "memcpy" not in e.name.lower() and "memset" not in e.name.lower()]
    res["profiler_kernels"] = len(k)
    res["profiler_kernel_ns"] = int(sum(e.device_time_total for e in k) * 1000)
print(json.dumps(res))
PY

run() { # NAME MODE STEPS [env...]: one workload run, result JSON appended to OUT/NAME.jsonl
  local name=$1 mode=$2 steps=$3; shift 3
  env "$@" python3 "$OUT/workload.py" "$mode" "$steps" >>"$OUT/$name.jsonl" 2>>"$OUT/$name.err"
}
SHIM=$PWD/build/liblatsplit-cupti.so

# counts: the shim and torch.profiler on identical runs
for mode in eager graph; do
  run "prof-$mode" $mode 200 PROFILE=1
  run "shim-$mode" $mode 200 CUDA_INJECTION64_PATH=$SHIM LATSPLIT_CUPTI_SUMMARY=$OUT/shim-$mode.summary.json
done

# overhead: alternate plain / shim (3 rounds each) on the CUDA-graph decode loop
for r in 1 2 3; do
  run base graph 2000
  run withshim graph 2000 CUDA_INJECTION64_PATH=$SHIM LATSPLIT_CUPTI_SUMMARY=$OUT/overhead.summary.json
done

# with the agent attached, when latsplit can record here
if [[ $HAVE_LS == 1 && $CHECK == yes ]]; then
  for r in 1 2 3; do
    run base-rec graph 2000
    build/latsplit record -o "$OUT/rec$r.data" --engine-lib "$SHIM" -- env CUDA_INJECTION64_PATH=$SHIM \
      python3 "$OUT/workload.py" graph 2000 >>"$OUT/withagent.jsonl" 2>>"$OUT/record.log" && RECORD=yes
  done
  build/latsplit dump "$OUT/rec1.data" 2>/dev/null | awk '$4 == "gpu"' | head -3 >"$OUT/rec-sample.txt"
fi

python3 - "$OUT" "$CHECK" "$RECORD" <<'PY'
import json, os, statistics as st, sys
out, check, record = sys.argv[1:4]
def rows(name):
    p = os.path.join(out, name + ".jsonl")
    return [json.loads(l) for l in open(p)] if os.path.exists(p) else []
def summ(name):
    p = os.path.join(out, name + ".summary.json")
    return json.load(open(p)) if os.path.exists(p) else {}
print("\n== gpu-check table")
print(f"{'workload':10s} {'profiler kernels':>17s} {'shim kernels':>13s} {'profiler ms':>12s} {'shim ms':>9s}")
for mode in ("eager", "graph"):
    p = rows("prof-" + mode); s = summ("shim-" + mode)
    pk = p[0].get("profiler_kernels") if p else None
    pn = p[0].get("profiler_kernel_ns", 0) / 1e6 if p else None
    print(f"{mode:10s} {str(pk):>17s} {str(s.get('kernels')):>13s} "
          f"{(f'{pn:.1f}' if pn is not None else '-'):>12s} {s.get('kernel_ns', 0) / 1e6:9.1f}")
s = summ("shim-graph")
print(f"copies (graph run): {s.get('copies')} copies, {s.get('copy_bytes', 0) / 1e6:.1f} MB, "
      f"{s.get('copy_ns', 0) / 1e6:.2f} ms, {s.get('pageable_copies')} pageable; "
      f"dropped: bad_time {s.get('bad_time')}, cupti {s.get('cupti_dropped')}, refused {s.get('refused_buffers')}")
b = [r["tokens_per_s"] for r in rows("base")]; w = [r["tokens_per_s"] for r in rows("withshim")]
if b and w:
    print(f"throughput (CUDA-graph decode, tokens/s, median of {len(b)}): plain {st.median(b):.0f}, "
          f"shim collecting {st.median(w):.0f}, ratio {st.median(w) / st.median(b):.3f}")
b2 = [r["tokens_per_s"] for r in rows("base-rec")]; a = [r["tokens_per_s"] for r in rows("withagent")]
if b2 and a:
    print(f"throughput with latsplit record attached: plain {st.median(b2):.0f}, recorded {st.median(a):.0f}, "
          f"ratio {st.median(a) / st.median(b2):.3f}")
print(f"latsplit check: {check}; latsplit record: {record}")
PY
