#!/usr/bin/env bash
# GPU sources without a GPU:
#  - the CUPTI shim's emit path, driven with hand-built CUPTI records, reaches
#    the capture through USDT with the same times and correlation ids (wrap
#    included), collectives flagged, bad timestamps dropped and counted;
#  - shim records and the mock engine's simulated device share one timeline;
#  - the shim preloaded or injected into a process with no GPU and no driver
#    neither crashes it nor prints more than one line;
#  - the libcuda uprobe fallback attaches to the CUDA toolkit's stub libcuda
#    (its functions return CUDA_ERROR_STUB_LIBRARY at once, so the calls are
#    real and short) and records host-side intervals labelled uprobe.
source "$(dirname "$0")/lib.sh"
require_root gpu.shim
SHIM=$ROOT/build/liblatsplit-cupti.so
EMIT=$ROOT/build/cupti-emit
STUB=${CUDA_HOME:-/usr/local/cuda}/lib64/stubs/libcuda.so
if [[ ! -x $EMIT || ! -e $SHIM ]]; then
  skip "gpu.shim: liblatsplit-cupti.so not built (no CUDA toolkit; set CUDA_HOME)"; exit 0
fi

# shim emit path, and the simulated device on the same timeline
PORT=18585
"$LS" record -o "$T/shim.data" -- sh -c "
  '$ENGINE' --port $PORT --bind 127.0.0.1 --token-ms 1 --h2d-us 100 --ready-file '$T/ready' &
  engine=\$!
  while [ ! -e '$T/ready' ]; do sleep 0.05; done
  '$EMIT' '$SHIM' > '$T/sent.jsonl'
  '$LOADGEN' --port $PORT -c 2 -n 4 --stream --max-tokens 4 2>/dev/null
  kill \$engine; wait \$engine" 2>"$T/rec.log"
"$LS" dump --json "$T/shim.data" >"$T/dump.jsonl"
python3 - "$T/sent.jsonl" "$T/dump.jsonl" <<'PY'
import json, sys
sent = [json.loads(l) for l in open(sys.argv[1])]
recs = [json.loads(l) for l in open(sys.argv[2])][1:]
gpu = [r for r in recs if r["type"] == "gpu"]
cupti = [(r["kind"], r["start_ns"], r["end_ns"], r["correlation"]) for r in gpu if r["source"] == "cupti"]
want = [(s["kind"], s["start_ns"], s["end_ns"], s["correlation"]) for s in sent]
def ok(n, c, d=""): print(("PASS " if c else "FAIL ") + n + (": " + d if d else ""))
ok("gpu.shim_records", sorted(cupti) == sorted(want), f"{len(cupti)} shim records, want {len(want)}")
ok("gpu.shim_correlation_wrap", [c[3] for c in sorted(cupti)][:3] == [4294967294, 4294967295, 0])
nccl = [r for r in gpu if r["source"] == "cupti" and r["name"].startswith("ncclKernel")]
ok("gpu.shim_collective", len(nccl) == 1 and nccl[0]["flags"] & 1)
pg = [r for r in gpu if r["source"] == "cupti" and r["kind"] == "memcpy"]
ok("gpu.shim_pageable", len(pg) == 1 and pg[0]["flags"] & 2 and pg[0]["bytes"] == 123456)
st = [r for r in recs if r["type"] == "gpu_stats"]
ok("gpu.shim_stats", st and st[-1]["records"] == 4 and st[-1]["bad_time"] == 1, f"{st[-1] if st else None}")
sim = [r for r in gpu if r["source"] == "simulated"]
ok("gpu.one_timeline", len(sim) > 0 and len(cupti) > 0, f"{len(sim)} simulated + {len(cupti)} cupti records")
PY

# load safety: preload and injection into processes without CUDA
out=$(LD_PRELOAD=$SHIM /bin/true 2>&1); rc=$?
check "gpu.preload_safe" test $rc -eq 0 -a -z "$out"
out=$(CUDA_INJECTION64_PATH=$SHIM python3 -c 'print("ok")' 2>&1); rc=$?
check "gpu.injection_no_cuda" test $rc -eq 0 -a "$out" = ok
# InitializeInjection itself, where CUPTI has no driver: one line, no crash
cat >"$T/inject.c" <<'C'
#include <dlfcn.h>
#include <stdio.h>
int main(int c, char **v) { void *h = dlopen(v[1], RTLD_NOW); int (*f)(void) = h ? dlsym(h, "InitializeInjection") : 0; return f ? (f(), 0) : 3; }
C
cc -o "$T/inject" "$T/inject.c" -ldl
"$T/inject" "$SHIM" 2>"$T/inject.err"; rc=$?
lines=$(wc -l <"$T/inject.err")
check "gpu.init_without_driver" test $rc -eq 0 -a "$lines" -le 1
info "InitializeInjection without a driver: rc=$rc, stderr: $(cat "$T/inject.err")"

# libcuda uprobe fallback on the toolkit's stub
if [[ -e $STUB ]]; then
  cat >"$T/custub.c" <<'C'
#include <dlfcn.h>
#include <stddef.h>
#include <unistd.h>
int main(int c, char **v) {
	void *h = dlopen(v[1], RTLD_NOW);
	int (*cp)(unsigned long long, const void *, size_t) = dlsym(h, "cuMemcpyHtoD_v2");
	int (*dh)(void *, unsigned long long, size_t) = dlsym(h, "cuMemcpyDtoH_v2");
	int (*sy)(void *) = dlsym(h, "cuStreamSynchronize");
	char buf[64];
	for (int i = 0; i < 3; i++) { cp(0, buf, 4096); dh(buf, 0, 8192); sy(0); usleep(5000); }
	return 0;
}
C
  cc -o "$T/custub" "$T/custub.c" -ldl
  "$LS" record -o "$T/up.data" --cuda-lib "$STUB" -- "$T/custub" "$STUB" 2>/dev/null
  "$LS" dump --json "$T/up.data" | python3 -c '
import json, sys
g = [json.loads(l) for l in sys.stdin]
g = [r for r in g if r["type"] == "gpu" and r["source"] == "uprobe"]
h2d = [r for r in g if r["copy"] == "h2d" and r["bytes"] == 4096]
d2h = [r for r in g if r["copy"] == "d2h" and r["bytes"] == 8192]
sy = [r for r in g if r["kind"] == "sync"]
ok = len(h2d) == 3 and len(d2h) == 3 and len(sy) == 3 and all(r["end_ns"] >= r["start_ns"] for r in g)
print(("PASS" if ok else "FAIL") + f" gpu.uprobe_stub: {len(h2d)} H2D, {len(d2h)} D2H, {len(sy)} sync intervals from the stub libcuda")'
else
  skip "gpu.uprobe_stub: no stub libcuda at $STUB"
fi

# flame graphs of the shim + simulated capture: GPU time by kernel, and the
# latency split as an SVG that parses as XML
"$LS" flame --kind gpu "$T/shim.data" >"$T/gpu.folded"
check "gpu.flame_gpu" grep -q ";gemm_kernel 1000000$" "$T/gpu.folded"
"$LS" flame --kind latency --svg -o "$T/lat.svg" "$T/shim.data"
python3 -c 'import sys, xml.dom.minidom as m; d = m.parse(sys.argv[1]); t = [x.firstChild.data for x in d.getElementsByTagName("title")]; sys.exit(0 if any(s.startswith("compute.kernel") for s in t) else 1)' "$T/lat.svg"
check "gpu.flame_latency_svg" test $? -eq 0
"$LS" flame --kind cpu --no-such-flag "$T/shim.data" 2>"$T/cpu.err"; rc=$?
check "gpu.flame_usage_error" test $rc -eq 2
