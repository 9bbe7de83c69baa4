#!/usr/bin/env bash
# Cross-checks with peers from libbpf-tools, on the same workload at the same
# time.
#
# runqlat: 3 spinning threads and one napping thread on this host's CPUs,
# 6 s. Both read sched_wakeup/sched_switch. latsplit records first and
# runqlat starts once it does, so latsplit's window holds runqlat's plus
# runqlat's start-up (~0.35 s): the rates of run-queue waits must agree
# within 10% and the share of waits of 1024 us or more within 5 percentage
# points (runqlat's histogram is log2; 1024 us is one of its bucket edges).
# Either tool's start-up loads the 2 CPUs and lengthens waits inside the
# other's window: the longer window dilutes it.
#
# offcputime: the same workload started by `latsplit record -- CMD`, so
# latsplit sees its whole life, while offcputime traces the whole system
# from before it starts to after it ends. Both time an off-CPU interval from
# the switch-out to the thread's next switch-in and key it by the stack it
# left in. offcputime also counts preemptions (its --state filter compares
# the whole state word, and 6.1+ kernels sleep in TASK_INTERRUPTIBLE |
# TASK_FREEZABLE, so --state 1 matches nothing here); latsplit's off-CPU
# graph is blocking only. So the comparison is by stack: time under
# hrtimer_nanosleep (the napper, and main's usleep) and under futex_wait
# (the joins) must agree within 1% (or 1 ms). latsplit takes a block's kernel
# stack as it ends (--offcpu-kernel-min-us), from the saved stack, which
# leaves out the scheduler's own functions (do_nanosleep, schedule, ...) as
# /proc/PID/stack does: hence their caller.
source "$(dirname "$0")/lib.sh"
require_root peers.runqlat peers.offcputime

LOAD=$ROOT/build/runq-load

check_runqlat() {
  local RUNQLAT
  # Debian 12 names them runqlat, offcputime; Debian 13 adds -libbpf
  RUNQLAT=$(command -v runqlat || command -v runqlat-libbpf || echo /usr/sbin/runqlat)
  [[ -x $RUNQLAT ]] || { skip "peers.runqlat: runqlat not installed (libbpf-tools; tools/install-test-deps.sh)"; return; }
  "$LOAD" 3 11 & P=$!
  CLEANUP+=("kill $P")
  # latsplit first, and runqlat only once it records: latsplit's start-up
  # (BTF, verifier) takes CPU, and inside runqlat's window it lengthened the
  # very waits being compared (runqlat's share of long waits ran 3.5-5.4
  # points above latsplit's when they started together)
  "$LS" record -o "$T/rq.data" -p $P --no-sock -F 0 --no-offcpu 2>"$T/rq.log" &
  R=$!
  CLEANUP+=("kill -INT $R")
  for i in $(seq 100); do grep -q recording "$T/rq.log" && break; sleep 0.05; done
  "$RUNQLAT" -p $P 6 1 >"$T/runqlat.txt" 2>&1
  kill -INT $R
  wait $R
  wait $P
  read -r n_peer share_peer < <(awk '/->/ {n += $5; if ($1 >= 1024) m += $5} END {printf "%d %.2f\n", n, n ? 100 * m / n : 0}' "$T/runqlat.txt")
  "$LS" report "$T/rq.data" >"$T/rq.txt"
  line=$(grep "run queue of the tracked threads" "$T/rq.txt")
  n_ls=$(sed -n 's/.*threads: \([0-9]*\) waits.*/\1/p' <<<"$line")
  share_ls=$(sed -n 's/.*, \([0-9.]*\)% >= 1024 us.*/\1/p' <<<"$line")
  span=$(sed -n 's/.*, \([0-9.]*\) s of events;.*/\1/p' "$T/rq.txt" | head -1)
  info "runqlat: $n_peer waits in 6 s, $share_peer% >= 1024 us; latsplit: $n_ls waits in ${span:-?} s, $share_ls% >= 1024 us"
  python3 - "$n_peer" "$share_peer" "${n_ls:-0}" "${share_ls:-0}" "${span:-0}" <<'PY'
import sys
n_p, s_p, n_l, s_l, span = map(float, sys.argv[1:])
# latsplit's window holds runqlat's 6 s and is a little longer: compare rates
rate_l, rate_p = (n_l / span if span else 0), n_p / 6
ok = n_p > 100 and abs(rate_l - rate_p) <= 0.10 * rate_p and abs(s_l - s_p) <= 5
print(("PASS" if ok else "FAIL") + f" peers.runqlat: waits/s {rate_l:.0f} vs {rate_p:.0f}, "
      f">=1024us {s_l:.1f}% vs {s_p:.1f}%")
PY
}

check_offcputime() {
  local OFFCPU
  OFFCPU=$(command -v offcputime || command -v offcputime-libbpf || echo /usr/sbin/offcputime)
  [[ -x $OFFCPU ]] || { skip "peers.offcputime: offcputime not installed (libbpf-tools; tools/install-test-deps.sh)"; return; }
  # The peer itself sometimes reports nothing at all under hrtimer_nanosleep in a
  # full make test run (seen in 2 of 4 runs; never run alone): then both run
  # once more, and that is said. A mismatch where the peer did see the
  # sleeps is a failure at once.
  local attempt
  for attempt in 1 2; do
    offcputime_once "$OFFCPU" "$attempt" && break
  done
}

offcputime_once() { # OFFCPU ATTEMPT: 0 = verdict printed, 3 = peer saw nothing, try again
  local OFFCPU=$1 attempt=$2 rc
  "$OFFCPU" --stack-storage-size 16384 60 >"$T/offcputime.txt" 2>"$T/offcputime.err" &
  OC=$!
  CLEANUP+=("kill $OC")
  sleep 1.5
  # kernel stacks taken as each block ends (the naps are 1 ms: all of them
  # qualify), checked against the peer that takes them as each block begins
  "$LS" record -o "$T/off.data" -F 0 --no-sock --offcpu-kernel-min-us 500 -- "$LOAD" 3 2 >/dev/null 2>&1
  kill -INT $OC
  wait $OC
  "$LS" flame --kind offcpu "$T/off.data" >"$T/off.folded" 2>"$T/flame.err"
  python3 - "$T/offcputime.txt" "$T/off.folded" "$attempt" <<'PY'
import sys
KEYS = ("hrtimer_nanosleep", "futex_wait")
def peer(path):  # offcputime: frames, "- comm (tid)", then microseconds
    out, frames, comm = dict.fromkeys(KEYS, 0.0), [], None
    for line in open(path):
        s = line.strip()
        if not s:
            frames, comm = [], None
        elif s.startswith("-"):
            comm = s[1:].strip().rsplit(" (", 1)[0]
        elif s.isdigit() and comm is not None:
            if comm == "runq-load":
                for k in KEYS:
                    out[k] += int(s) if k in frames else 0
            frames = []
        else:
            frames.append(s)
    return out
def ours(path):  # folded: "comm (pid);frames... ns"
    out = dict.fromkeys(KEYS, 0.0)
    for line in open(path):
        stack, w = line.rsplit(" ", 1)
        if not stack.startswith("runq-load ("):
            continue
        fr = [f[:-4] if f.endswith("_[k]") else f for f in stack.split(";")]
        for k in KEYS:
            out[k] += int(w) / 1000 if k in fr else 0
    return out
p, o = peer(sys.argv[1]), ours(sys.argv[2])
if p["hrtimer_nanosleep"] == 0 and sys.argv[3] == "1":
    print(f"  offcputime reported no time under hrtimer_nanosleep (latsplit: "
          f"{o['hrtimer_nanosleep'] / 1000:.3f} ms): running both once more")
    sys.exit(3)
bad = [k for k in KEYS if abs(o[k] - p[k]) > max(1000, 0.01 * p[k])]
ok = not bad and p["hrtimer_nanosleep"] > 1e6
desc = ", ".join(f"{k} {o[k] / 1000:.3f} vs {p[k] / 1000:.3f} ms" for k in KEYS)
print(("PASS" if ok else "FAIL") + f" peers.offcputime: off-CPU under {desc} (latsplit vs offcputime)")
if not ok:  # what the peer saw, for the next person to read
    txt = open(sys.argv[1]).read()
    print(f"  offcputime: {len(txt)} bytes, {txt.count('- runq-load')} runq-load stacks, "
          f"{txt.count('hrtimer_nanosleep')} hrtimer_nanosleep frames; first runq-load stack:")
    i = txt.find("- runq-load")
    print("   " + txt[max(0, txt.rfind(chr(10) + chr(10), 0, i)):i + 40].replace(chr(10), " | ")[:600])
PY
  rc=$?
  [[ -s $T/offcputime.err ]] && sed 's/^/  offcputime stderr: /' "$T/offcputime.err" | sort | uniq -c | head -5
  [[ $rc -ne 3 ]]
}

check_runqlat
check_offcputime
