#!/usr/bin/env bash
# record -- COMMAND tracks the command and its children (forks and execs),
# not other processes; a capture killed with SIGKILL stays readable; bad
# arguments are usage errors (exit 2) with a one-line message.
source "$(dirname "$0")/lib.sh"
require_root command.children command.sigkill command.usage

( while :; do sleep 0.002; done ) &
BUSY=$!; CLEANUP+=("kill $BUSY")

"$LS" record -o "$T/cmd.data" -- sh -c 'sleep 0.2 & (sleep 0.3; true) & wait; cat /proc/self/stat >/dev/null' \
  2>"$T/rec.log"
check "command.exit0" test $? -eq 0
"$LS" dump --json "$T/cmd.data" >"$T/cmd.jsonl" 2>"$T/dump.err"
python3 - "$T/cmd.jsonl" $BUSY <<'PY'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])][1:]
busy = int(sys.argv[2])
def ok(name, cond, detail=""):
    print(("PASS " if cond else "FAIL ") + name + (": " + detail if detail else ""))
execs = [e for e in recs if e["type"] == "proc_exec"]
names = sorted({e["filename"].rsplit("/", 1)[-1] for e in execs})
ok("command.exec", {"sh", "sleep", "cat"} <= set(names), f"execs: {names}")
forks = [e for e in recs if e["type"] == "proc_fork" and e["child_pid"] == e["child_tid"]]
children = {e["child_pid"] for e in forks}
ok("command.children", len(children) >= 3, f"{len(children)} child processes forked")
sw_pids = {e["pid"] for e in recs if e["type"] == "sched_switch"} | \
          {e["next_pid"] for e in recs if e["type"] == "sched_switch"}
ok("command.children_sched", len(children & sw_pids) >= 3,
   f"{len(children & sw_pids)} children have sched events")
info = {e["pid"] for e in recs if e["type"] == "proc_info"}
ok("command.proc_info", children <= info | {e["pid"] for e in recs if e["type"] == "proc_exit"},
   f"process table has {len(info)} entries")
foreign = [e for e in recs if e["type"] != "sched_switch" and e.get("pid") == busy]
ok("command.untracked", not foreign, f"{len(foreign)} events of untracked pid {busy}")
PY

# SIGKILL mid-capture: readable up to the last whole frame, loss reported.
"$LS" record -o "$T/kill.data" -d 30 2>"$T/kill.log" &
KP=$!
wait_recording "$T/kill.log"
sleep 1.5
kill -KILL $KP; wait $KP 2>/dev/null
"$LS" dump "$T/kill.data" >"$T/kill.txt" 2>"$T/kill.err"
rc=$?
n=$(grep -vc '^#' "$T/kill.txt")
check "command.sigkill_readable" test $rc -eq 0 -a "$n" -gt 0
check "command.sigkill_reported" grep -q "no end-of-capture trailer" "$T/kill.err"
info "after SIGKILL: $n records read; $(cat "$T/kill.err")"

# Usage errors: exit 2 and one line naming the problem.
"$LS" record -d abc 2>"$T/u1"; r1=$?
"$LS" record -p 999999999 2>"$T/u2"; r2=$?
"$LS" frobnicate 2>"$T/u3"; r3=$?
"$LS" dump "$T/nonexistent" 2>"$T/u4"; r4=$?
check "command.usage" test $r1 -eq 2 -a $r2 -eq 2 -a $r3 -eq 2 -a $r4 -eq 1
info "$(cat "$T/u1" "$T/u2" "$T/u3" "$T/u4")"

# An existing capture is kept as .old.
echo old >"$T/keep.data"
"$LS" record -o "$T/keep.data" -d 0.2 2>/dev/null
check "command.keeps_old" grep -q old "$T/keep.data.old"
check "command.mode0600" test "$(stat -c %a "$T/keep.data")" = 600

# check: exit 0 here (root, BTF, raw tracepoints, ring buffer); exit 1 naming
# the privilege problem for an unprivileged user.
"$LS" check >"$T/check.txt"; rc=$?
check "command.check_root" test $rc -eq 0
setpriv --reuid=65534 --regid=65534 --clear-groups "$LS" check >"$T/check2.txt" 2>&1; rc=$?
check "command.check_unprivileged" test $rc -eq 1
grep -q "needs root or CAP_BPF+CAP_PERFMON" "$T/check2.txt" || fail "command.check_message"

# --no-engine: no engine USDT probes attached, and the header says so.
"$LS" record -o "$T/noeng.data" -d 0.2 2>/dev/null
"$LS" record -o "$T/noeng2.data" -d 0.2 --no-engine 2>/dev/null
with=$("$LS" dump "$T/noeng.data" 2>/dev/null | grep "^# sources" | grep -c engine_usdt)
without=$("$LS" dump "$T/noeng2.data" 2>/dev/null | grep "^# sources" | grep -c engine_usdt)
check "command.no_engine" test "$with" -gt 0 -a "$without" -eq 0
