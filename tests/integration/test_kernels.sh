#!/usr/bin/env bash
# Other kernels: Debian 12's 6.1, Debian 13's 6.12 and Debian testing's 7.x
# (each suite's linux-image-amd64, with BTF; unpacked into build/kernels/SUITE
# by tools/install-test-deps.sh, never installed), each booted under qemu with
# a small initramfs (busybox-static, the
# built latsplit, the mock engine, loadgen and their shared libraries). In the
# guest: `latsplit check`, then `record` of the mock engine serving loadgen
# over loopback, then `report`. The one build must load there (CO-RE), attach
# every source that kernel offers, and give exact sums for every request.
# KVM when the CPU offers virtualisation (vmx/svm); else qemu's software
# emulation (TCG), slower, and said so: this VM has /dev/kvm but no vmx flag,
# and qemu -enable-kvm hangs there. Without qemu or the kernel package: SKIP
# with the reason.
# (No 5.15 kernel: neither Debian 12's archive nor anything else reachable
# from here ships one; Ubuntu's archive is not reachable.)
source "$(dirname "$0")/lib.sh"
# KERNEL61_ACCEL=kvm forces the KVM attempt (to exercise the fallback here).
if [[ ${KERNEL61_ACCEL:-} == kvm ]] ||
   { [[ -c /dev/kvm && -w /dev/kvm ]] && grep -qwE 'vmx|svm' /proc/cpuinfo; }; then
  ACCEL=(-enable-kvm -cpu host) ACCEL_NAME=KVM
else
  ACCEL=(-accel tcg,thread=single -cpu max) ACCEL_NAME="software emulation (TCG: no vmx/svm here)"
fi
QEMU=$(command -v qemu-system-x86_64) || { skip "kernels: qemu-system-x86_64 not installed (tools/install-test-deps.sh)"; exit 0; }
BUSYBOX=$(command -v busybox) || { skip "kernels: busybox not installed (busybox-static)"; exit 0; }
[[ $(uname -m) == x86_64 ]] || { skip "kernels: x86-64 only"; exit 0; }

R=$T/initramfs
mkdir -p "$R"/{bin,dev,proc,sys,tmp,opt/ls,etc}
cp "$BUSYBOX" "$R/bin/busybox"
for f in latsplit mock-engine loadgen liblatsplit-engine.so; do cp "$ROOT/build/$f" "$R/opt/ls/"; done
# every shared library they need, at the path the loader looks for it
for lib in $(for f in "$R"/opt/ls/*; do ldd "$f" 2>/dev/null; done |
             awk '{for (i = 1; i <= NF; i++) if ($i ~ /^\//) print $i}' | sort -u); do
  mkdir -p "$R$(dirname "$lib")"
  cp -L "$lib" "$R$lib"
done
cat >"$R/init" <<'EOF'
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t bpf bpf /sys/fs/bpf 2>/dev/null; mount -t tmpfs tmp /tmp
ip link set lo up
if grep -q ls_ksyms /proc/cmdline; then # the kernel's symbols, for vcpu_names
  echo "=== ksyms"; grep ' [tT] ' /proc/kallsyms | gzip -1 | base64; echo "=== ksyms end"; poweroff -f
fi
echo "=== uname $(uname -r) clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
/opt/ls/latsplit check; echo "=== check_rc=$?"
cd /tmp
/opt/ls/latsplit record -o /tmp/c.data -- /opt/ls/mock-engine --port 8000 --bind 127.0.0.1 \
  --token-ms 1 --max-batch 4 --h2d-us 100 --host-us 100 --ready-file /tmp/ready 2>/tmp/rec.log &
rec=$!
i=0; while [ ! -e /tmp/ready ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
/opt/ls/loadgen --port 8000 -c 4 -n 40 --stream --max-tokens 8 -o /tmp/lg.jsonl 2>/dev/null
sleep 0.5; kill -INT $rec; wait $rec; echo "=== record_rc=$?"
cat /tmp/rec.log
/opt/ls/latsplit report /tmp/c.data | head -6
/opt/ls/latsplit record --sock-hooks socket -d 0.2 -o /tmp/s.data -- true 2>/tmp/sh.err >/dev/null
echo "=== sock_hooks_socket rc=$? $(grep -m1 -- --sock-hooks /tmp/sh.err)"
echo "=== json"
/opt/ls/latsplit report --json /tmp/c.data
echo "=== end"
poweroff -f
EOF
chmod +x "$R/init"
INITRD=$T/initrd.gz
(cd "$R" && find . | cpio -o -H newc 2>/dev/null | gzip -1) >"$INITRD"

# boot: qemu in the background, watched. The guest must print its uname within
# BOOT_S (a KVM that is offered but hangs under nested virtualisation, as on
# some CI hosts, never does) and finish within RUN_S; a KVM boot that misses
# its deadline, or dies first, is retried once under software emulation.
# vcpu_dump: where each vCPU of a guest that did not finish is, through
# qemu's monitor: its RIP and the kernel addresses on its stack (raw; named
# by vcpu_names from the guest's own /proc/kallsyms: Debian's System.map is a
# placeholder). A guest that hangs in the kernel (a soft lockup) says where,
# in a log that keeps only the failure lines.
vcpu_dump() {
  python3 - "$T/monitor.sock" <<'PY'
import re, socket, sys, time
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.settimeout(5)
def cmd(c):
    s.sendall((c + "\n").encode()); out = b""; t = time.time() + 5
    while time.time() < t:
        try: out += s.recv(65536)
        except socket.timeout: break
        if out.rstrip().endswith(b"(qemu)"): break
    return out.decode("latin-1")
cmd("")
for cpu in range(2):
    cmd(f"cpu {cpu}")
    regs = cmd("info registers")
    rip = re.search(r"RIP=([0-9a-f]+)", regs); rsp = re.search(r"RSP=([0-9a-f]+)", regs)
    vals = [rip.group(1)] if rip else []
    if rsp:
        vals += [v for v in re.findall(r"0x([0-9a-f]{16})", cmd(f"x /256gx 0x{rsp.group(1)}"))
                 if v.startswith("ffffffff8")]
    print(f"vcpu {cpu}: " + " ".join(vals))
PY
}
# vcpu_names VCPUS KSYMS: each raw line as function+offset, most recent first
vcpu_names() {
  python3 - "$1" "$2" <<'PY'
import bisect, sys
syms = []
for line in open(sys.argv[2]):
    f = line.split()
    if len(f) >= 3 and f[1] in "tT": syms.append((int(f[0], 16), f[2]))
syms.sort(); addrs = [a for a, _ in syms]
def name(v):
    i = bisect.bisect_right(addrs, v) - 1
    return f"{syms[i][1]}+{v - syms[i][0]:#x}" if i >= 0 and v - syms[i][0] < 0x4000 else None
for line in open(sys.argv[1]):
    head, _, vals = line.partition(": ")
    names = [n for n in (name(int(v, 16)) for v in vals.split()) if n]
    print(f"{head}: " + (" <- ".join(names[:20]) or "no kernel text on its stack"))
PY
}
boot() { # ACCEL_NAME ARGS...
  local name=$1; shift
  local boot_s=${BOOT_S:-120} run_s=${RUN_S:-420} t0 pid
  : >"$T/console.log"
  t0=$(date +%s)
  "$QEMU" "$@" -m 1024 -smp 2 -kernel "$KERNEL" -initrd "$INITRD" \
    -append "console=ttyS0 quiet panic=-1 mitigations=off nokaslr tsc=reliable${APPEND_EXTRA:+ $APPEND_EXTRA}" -nographic -no-reboot \
    -monitor "unix:$T/monitor.sock,server=on,wait=off" \
    >"$T/console.log" 2>&1 </dev/null 3>&- &
  pid=$!
  stage=booting
  while kill -0 $pid 2>/dev/null; do
    took=$(( $(date +%s) - t0 ))
    if grep -aq '=== uname' "$T/console.log"; then stage=running; fi
    if { [[ $stage == booting ]] && (( took > boot_s )); } || (( took > run_s )); then
      vcpu_dump >"$T/vcpus.txt" 2>&1
      kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null
      qrc=timeout; stage="$stage: killed after ${took} s under $name"
      return 1
    fi
    sleep 1
  done
  wait $pid; qrc=$?
  took=$(( $(date +%s) - t0 ))
  stage="$stage: qemu exit $qrc after ${took} s under $name"
  return 0
}
# run_kernel SUITE NAME: boots build/kernels/SUITE's kernel and checks it
run_kernel() {
  local suite=$1
  NAME=$2
  KERNEL=$(ls "$ROOT"/build/kernels/$suite/boot/vmlinuz-* "$ROOT"/build/kernels/$suite/usr/lib/modules/*/vmlinuz \
           2>/dev/null | sort -V | tail -1)
  if [[ -z $KERNEL ]]; then
    skip "$NAME: no kernel image in build/kernels/$suite (tools/install-test-deps.sh)"
    return
  fi
boot "$ACCEL_NAME" "${ACCEL[@]}"
if [[ $ACCEL_NAME == KVM ]] && ! grep -aq '=== uname' "$T/console.log"; then
  info "guest: KVM boot gave no output ($stage); retrying under software emulation"
  ACCEL_NAME="software emulation (TCG, after KVM gave nothing)"
  boot "$ACCEL_NAME" -accel tcg,thread=single -cpu max
fi
tr -d '\r' <"$T/console.log" >"$T/console.txt"
cp "$T/console.txt" "$T/console-$NAME.txt"
info "guest: $(grep -ao '=== uname [^ ]*' "$T/console.txt" | cut -d' ' -f3) $stage"
# the failure lines say how far the guest got, for a CI log that keeps only them
last=$(grep -av '^\s*$' "$T/console.txt" | tail -1 | tr -cd '[:print:]' | cut -c1-160)
WHERE="guest $stage; last console line: ${last:-none}"
# a guest that did not finish: its last lines, for the log
[[ $qrc == timeout ]] && grep -av '^\s*$' "$T/console.txt" | tail -15 | tr -cd '[:print:]\n' | sed 's/^/  guest console: /'
# a guest that hung: where its vCPUs were, named from its own kallsyms
# (one more boot, that prints them and powers off)
if [[ $qrc == timeout && -s $T/vcpus.txt ]]; then
  APPEND_EXTRA=ls_ksyms BOOT_S=300 RUN_S=300 boot "$ACCEL_NAME" "${ACCEL[@]}"
  tr -d '\r' <"$T/console.log" | awk '/=== ksyms end$/ {on = 0} on; /=== ksyms$/ {on = 1}' |
    base64 -d 2>/dev/null | gunzip >"$T/kallsyms.txt" 2>/dev/null
  vcpu_names "$T/vcpus.txt" "$T/kallsyms.txt" >"$T/vcpus-named.txt" 2>&1
  sed 's/^/  guest /' "$T/vcpus-named.txt"
  WHERE="$WHERE; $(head -c 700 "$T/vcpus-named.txt" | tr '\n' ' ')"
fi
grep -a "probe runs the kernel skipped" "$T/console.txt" | sed 's/^ */  guest report: /'
info "guest check: ok: $(grep -aE '^  ok ' "$T/console.txt" | awk '{print $2}' | tr '\n' ' ')"
grep -aE '^  missing' "$T/console.txt" | sed 's/^/  guest /'
grep -q '^=== check_rc=0' "$T/console.txt"; crc=$?
if [[ $crc -eq 0 ]]; then pass "$NAME.check: latsplit check passes the minimum on ${KERNEL#$ROOT/build/kernels/}"
else fail "$NAME.check: latsplit check passes the minimum on ${KERNEL#$ROOT/build/kernels/} ($WHERE)"; fi
sed -n '/^=== json$/,/^=== end$/p' "$T/console.txt" | grep '^{' >"$T/guest.jsonl"
python3 - "$T/guest.jsonl" "$T/console.txt" "$NAME" "$WHERE" <<'PY'
import json, sys
NAME = sys.argv[3]
allrs = list(map(json.loads, open(sys.argv[1])))
rs = [r for r in allrs if r.get("type") != "verdict"]
verdict = next((r for r in allrs if r.get("type") == "verdict"), {})
con = open(sys.argv[2]).read()
ok = [r for r in rs if r["outcome"] == "ok"]
exact = [r for r in ok if r["total_ns"] is not None and
         sum(v for v in r["components"].values() if v is not None) == r["total_ns"]]
def res(n, c, d): print(("PASS " if c else "FAIL ") + n + ": " + d)
# Requests lost to program runs the kernel skipped (faultable syscall
# tracepoints on 7.x: a preempted run of sys_enter meets another task's
# syscall) are allowed only where the report says so: nothing lost silently.
import re
sk = re.search(r"probe runs the kernel skipped: (\d+)", con)
skips = int(sk.group(1)) if sk else 0
if skips or verdict.get("probe_skips"):
    res(NAME + ".skips_json", verdict.get("probe_skips") == skips,
        f"the JSON verdict's probe_skips {verdict.get('probe_skips')} is the text's {skips}")
res(NAME + ".requests", len(ok) == 40 or (skips > 0 and len(ok) >= 20),
    f"{len(ok)} of 40 loadgen requests rebuilt ok in the guest" +
    (f"; the report says the kernel skipped {skips} program runs" if skips else "") +
    ("" if ok else f" ({sys.argv[4]})"))
res(NAME + ".sums", ok and len(exact) == len(ok), f"{len(exact)}/{len(ok)} split exactly")
line = next((l for l in con.splitlines() if "sources:" in l), "")
want = ["sched", "tcp_probe", "sock_io", "engine_usdt", "cpu_samples", "offcpu_stacks"]
miss = [w for w in want if w not in line]
unavailable = [l for l in con.splitlines() if "not available on this kernel" in l]
res(NAME + ".sources", not miss and not unavailable,
    f"attached there: {line.split('sources:')[-1].strip()}; missing {miss}; {unavailable}")
# socket I/O at the socket tracepoints where the kernel has them (>= 6.3),
# else at the syscall ones; --sock-hooks socket there: a one-line error
rel = re.search(r"=== uname (\d+)\.(\d+)", con)
has = rel is not None and (int(rel.group(1)), int(rel.group(2))) >= (6, 3)
sh = re.search(r"=== sock_hooks_socket rc=(\d+) ?(.*)", con)
tp = "sock_io:socket_tp" in line
ok_sh = sh is not None and (int(sh.group(1)) == 0 if has else
                            int(sh.group(1)) != 0 and "Linux >= 6.3" in sh.group(2))
res(NAME + ".sock_hooks", tp == has and ok_sh,
    f"socket tracepoints expected {has}, used by default {tp}; --sock-hooks socket: " +
    (f"rc {sh.group(1)} {sh.group(2)[:100]}" if sh else "did not run"))
PY
}
# KERNELS="SUITE:NAME ..." picks some. On Debian testing's 7.2 the syscall
# tracepoints are faultable and the socket ones run preemptible: their
# programs can be preempted, and the kernel skips a program's run on a CPU
# where its previous run was preempted (its recursion check). record
# attaches backups there from the start; runs still skipped are counted by
# the report ("probe runs the kernel skipped") and may cost requests under
# qemu's emulation; 6.1 and 6.12 rebuild 40 of 40.
# The guests boot side by side (under TCG each qemu is one thread), each with
# its own scratch dir (console, monitor socket); their lines print in order.
KERNELS=${KERNELS:-bookworm:kernel61 trixie:kernel612 forky:kernel7}
for k in $KERNELS; do
  mkdir -p "$T/${k#*:}"
  (T=$T/${k#*:}; run_kernel "${k%%:*}" "${k#*:}") >"$T/${k#*:}.out" 2>&1 &
done
wait
for k in $KERNELS; do cat "$T/${k#*:}.out"; done
