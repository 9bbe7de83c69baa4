#!/usr/bin/env bash
# An engine in a container, traced from the host (DESIGN §11, Containers):
# the vLLM-shaped engine (uvicorn on uvloop, its engine core over ZMQ) runs
# on Debian 13's Python 3.13 from a Debian 13 root (tools/py-chroot.sh), in
# its own mount namespace after pivot_root, its own pid and network
# namespaces, in a cgroup named as Docker's systemd driver names one, with
# the engine-event library inside the root only (no host path has that file).
# `latsplit record -F 99 -- <the container's start>` must: split every
# request, with the engine's events joined (queueing.engine against the
# engine core's own truth: the probes attached to the file the container's
# process mapped), Python frames on >= 80% of the container's CPU samples
# (the interpreter read through the process's own mappings), and name the
# container in the report (JSON and text), with the namespace pid.
source "$(dirname "$0")/lib.sh"
require_root container

CH=$ROOT/build/chroots/trixie-engine
PKGS=python3,python3-uvloop,python3-fastapi,python3-uvicorn,python3-zmq,python3-numpy,python3-httptools
if ! "$ROOT/tools/py-chroot.sh" "$CH" trixie "$PKGS" >"$T/chroot.log" 2>&1; then
  fail "container.root: $(tail -1 "$T/chroot.log")"
  exit 0
fi
CGV2=/sys/fs/cgroup
[[ -f $CGV2/cgroup.procs && $(stat -fc %T $CGV2) == cgroup2fs ]] || CGV2=/sys/fs/cgroup/unified
if [[ $(stat -fc %T $CGV2 2>/dev/null) != cgroup2fs ]]; then
  skip "container: no cgroup v2 hierarchy at /sys/fs/cgroup or /sys/fs/cgroup/unified"
  exit 0
fi

# the engine and its library inside the root, nowhere else
rm -rf "$CH/opt/engine" "$CH/tmp/ready" "$CH/tmp/truth.jsonl"
mkdir -p "$CH/opt/engine" "$CH/usr/local/lib"
cp -r "$ROOT/tools/vllm-shaped" "$ROOT/tools/python" "$CH/opt/engine/"
cp "$ROOT/build/liblatsplit-engine.so" "$CH/usr/local/lib/liblatsplit-engine.so"
# record's default engine paths hold the host's copies only: make sure the
# container's file is another inode than any of them
[[ $(stat -c %i "$CH/usr/local/lib/liblatsplit-engine.so") != $(stat -c %i "$ROOT/build/liblatsplit-engine.so") ]]

ID=$(head -c 64 /dev/urandom | sha256sum | cut -c1-64)
CG=$CGV2/latsplit-test.slice/docker-$ID.scope
mkdir -p "$CG"
CLEANUP+=("rmdir '$CG' '$CGV2/latsplit-test.slice'")

# The container's start: into the cgroup, new namespaces, the root pivoted,
# the engine exec'd as the namespace's pid 1.
cat >"$T/start.sh" <<EOS
echo \$\$ >"$CG/cgroup.procs"
exec unshare --mount --pid --net --fork --kill-child /bin/bash -c '
  set -e
  ip link set lo up
  mount --make-rprivate /
  mount --bind "$CH" "$CH"
  mount -t proc proc "$CH/proc"
  mount --rbind /dev "$CH/dev"
  cd "$CH"
  mkdir -p .oldroot
  pivot_root . .oldroot
  umount -l /.oldroot
  cd /
  exec /usr/bin/python3 /opt/engine/vllm-shaped/server.py --host 127.0.0.1 --port 8000 \
    --truth /tmp/truth.jsonl --ready-file /tmp/ready --max-running 4 --step-us 3000'
EOS
"$LS" record -F 99 -o "$T/ctr.data" -- bash "$T/start.sh" 2>"$T/ctr.data.log" &
RPID=$!
CLEANUP+=("kill -INT $RPID")
if ! wait_for_file "$CH/tmp/ready" 30; then
  fail "container.start: the engine did not start in the container"
  tail -5 "$T/ctr.data.log"
  exit 0
fi
# the engine core maps the library as it starts; record finds it within a
# second or two (its schedule of looks at a new process's mappings)
for _ in $(seq 100); do grep -q 'engine probes in' "$T/ctr.data.log" && break; sleep 0.1; done
SPID=$(pgrep -f '^/usr/bin/python3 /opt/engine/vllm-shaped/server.py' | head -1)
info "engine in the container: host pid $SPID, $(grep NSpid /proc/$SPID/status | tr '\t' ' ')"
nsenter --net=/proc/$SPID/ns/net "$LOADGEN" --host 127.0.0.1 --port 8000 --id-prefix ctr- \
  -o "$T/ctr.lg" -c 4 -n 24 --stream --max-tokens 12 --prompt-bytes 2000 2>"$T/lg.err"
stop_recording 0.5
cp "$CH/tmp/truth.jsonl" "$T/ctr.truth"
grep -E 'engine probes in|TLS plaintext' "$T/ctr.data.log" | sed 's/^/  /'

"$LS" report --json "$T/ctr.data" >"$T/ctr.jsonl" 2>/dev/null
"$LS" report "$T/ctr.data" >"$T/ctr.txt" 2>/dev/null
/usr/bin/python3 "$ROOT/tests/integration/vllm_accuracy.py" container "$T/ctr.jsonl" "$T/ctr.truth" "$T/ctr.lg" |
  sed 's/ vllm\.container\./ container./'

# every request names the container, with the engine's pid in its namespace
/usr/bin/python3 - "$T/ctr.jsonl" "$ID" <<'PY'
import json, sys
reqs = [r for r in map(json.loads, open(sys.argv[1])) if r.get("type") not in ("verdict", "empty")]
want = "docker " + sys.argv[2][:12]
named = [r for r in reqs if (r.get("container") or {}).get("name") == want
         and r["container"].get("id") == sys.argv[2] and r["container"].get("ns_pid") == 1]
events = [r for r in reqs if r["sources"]["engine"] == "events"]
print(f"  {len(reqs)} requests; {len(named)} name container {want!r} with ns_pid 1; "
      f"{len(events)} joined by engine events")
print(("PASS" if reqs and len(named) == len(reqs) else "FAIL") + " container.named_json")
print(("PASS" if reqs and len(events) == len(reqs) else "FAIL") + " container.engine_events")
PY
grep -E "^  container docker ${ID:0:12}: 24 of 24 requests \(pid [0-9]+, 1 in its own namespace\)" "$T/ctr.txt" >/dev/null &&
  pass container.named_text || { fail "container.named_text"; grep -i container "$T/ctr.txt" | head -3; }
# the same text report by the ASan+UBSan build: its per-container rows once
# leaked their quantiles (LeakSanitizer reports at exit)
SAN=$ROOT/build/san/latsplit
if [[ -x $SAN ]]; then
  "$SAN" report "$T/ctr.data" >/dev/null 2>"$T/ctr.san" && ! grep -qE 'Sanitizer|runtime error' "$T/ctr.san" &&
    pass container.report_sanitized ||
    { fail "container.report_sanitized"; grep -m3 -E 'ERROR|runtime error|#[0-9] ' "$T/ctr.san"; }
else
  skip "container.report_sanitized: build/san/latsplit not built (make test builds it)"
fi

# Python frames on the container's CPU samples
"$LS" flame --kind cpu "$T/ctr.data" 2>/dev/null | awk '
  /^python3 / { w = $NF; total += w; if ($0 ~ /\.py:[0-9]+\)/) py += w }
  END {
    printf "  %d CPU samples of the container'"'"'s python3 processes, %d with a Python frame (%.1f%%)\n", total, py, total ? 100 * py / total : 0
    printf "%s container.python_frames: >= 80%% of samples carry a Python frame\n", (total >= 50 && py >= 0.8 * total) ? "PASS" : "FAIL"
  }'
