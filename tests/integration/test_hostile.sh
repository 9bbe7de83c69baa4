#!/usr/bin/env bash
# What an adversarial user tried (reliability issue, findings 1-3):
#  - output_special: `record -o` naming a device node, a directory, a FIFO
#    or a symlink is refused (exit 2) and leaves the path as it was; before,
#    `-o /dev/null` renamed the host's /dev/null to null.old;
#  - flame_fifo: a capture whose mapping record names a FIFO (or a directory)
#    as the file to symbolize from: flame must neither hang nor open it.
# (Crafted connection ids: tests/unit/test_requests.c.)
source "$(dirname "$0")/lib.sh"
require_root hostile.output_special hostile.flame_fifo hostile.output_other hostile.odd_request_line

mknod "$T/null" c 1 3
mkdir "$T/dir"
mkfifo "$T/fifo"
ln -s "$T/null" "$T/link"
bad=()
for p in null dir fifo link; do
  before=$(stat -c '%F %i' "$T/$p")
  timeout 20 "$LS" record -o "$T/$p" -d 0.1 --port 1 >/dev/null 2>"$T/$p.err"; rc=$?
  after=$(stat -c '%F %i' "$T/$p")
  [[ $rc -eq 2 && $before == "$after" && ! -e $T/$p.old ]] && grep -q "not a regular file" "$T/$p.err" ||
    bad+=("$p: rc $rc, $before -> $after$( [[ -e $T/$p.old ]] && echo ', .old made')")
done
check "hostile.output_special: -o refuses a device, a directory, a FIFO and a symlink, leaving them; ${bad[*]:-}" \
  [ ${#bad[@]} -eq 0 ]

bad=()
for p in fifo dir; do
  "$ROOT/build/flame-capture" "$T/map-$p.data" --mapping "$T/$p"
  start=$(date +%s%N)
  timeout 20 "$LS" flame --kind cpu "$T/map-$p.data" >"$T/flame-$p.txt" 2>&1; rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  [[ $rc -eq 0 ]] && grep -q 'unknown' "$T/flame-$p.txt" || bad+=("$p: rc $rc after $ms ms")
done
check "hostile.flame_fifo: flame symbolizing from a FIFO or a directory neither hangs nor fails; ${bad[*]:-}" \
  [ ${#bad[@]} -eq 0 ]

# Findings 6-8: exit status and durations, signals, silent surprises.
rcs=()
"$LS" record -o "$T/st1.data" -- false >/dev/null 2>&1; rcs+=("false:$?")
"$LS" record -o "$T/st2.data" -- sh -c 'exit 3' >/dev/null 2>&1; rcs+=("exit3:$?")
"$LS" record -o "$T/st3.data" -- /nonexistent >/dev/null 2>&1; rcs+=("nonexistent:$?")
check "hostile.exit_status: record passes the command's status on (${rcs[*]}; want false:1 exit3:3 nonexistent:127)" \
  [ "${rcs[*]}" = "false:1 exit3:3 nonexistent:127" ]

bad=()
R="record -o $T/bad.data"
for args in "$R -d inf" "$R -d 1e300" "$R -d nan" "$R -d -1" "$R --port ," "$R -p ," \
            "$R --port 70000" "$R --port 0" "$R -p 0" "$R -p abc" "$R --ringbuf 3" "$R -z 0" \
            "$R -F 20000" "$R --capture-bytes 5000" "$R --stack-entries 0" \
            "$R --debug-dir /nonexistent" "$R --engine-lib /etc/passwd" "$R --cuda-lib /etc/passwd" \
            "report --top x $ROOT/tests/golden/mock.data" "report --json --csv $ROOT/tests/golden/mock.data" \
            "flame --kind bogus $ROOT/tests/golden/mock.data"; do
  # shellcheck disable=SC2086
  timeout 10 "$LS" $args >/dev/null 2>"$T/bad.err"; rc=$?
  [[ $rc -eq 2 && $(wc -l <"$T/bad.err") -eq 1 ]] || bad+=("'$args': rc $rc, $(head -c 120 "$T/bad.err")")
done
check "hostile.bad_values: each refused with exit 2 and one line; ${bad[*]:-}" [ ${#bad[@]} -eq 0 ]

wait_released
links_before=$(bpftool link show 2>/dev/null | grep -c '^[0-9]')
progs_before=$(bpftool prog show 2>/dev/null | grep -c '^[0-9]')
"$LS" record -o "$T/hup.data" -- sleep 30 >/dev/null 2>&1 &
rp=$!
sleep 4
child=$(pgrep -P $rp sleep)
kill -HUP $rp; wait $rp; rc=$?
"$LS" dump "$T/hup.data" >"$T/hup.dump" 2>&1
grep -q 'no end-of-capture trailer' "$T/hup.dump"; notrailer=$?
sleep 0.5
good=1
[[ $rc -eq 0 && $notrailer -ne 0 && -n $child ]] && ! kill -0 "$child" 2>/dev/null && good=0
check "hostile.sighup: SIGHUP stops record cleanly (exit $rc, trailer written, command $child ended)" [ $good -eq 0 ]

# A clean stop hands its perf-event uprobes (Debian 12's libbpf: no
# uprobe_multi) to a "latsplit-detach" helper that releases them after record
# exits: it must hold nothing else (the capture, a --metrics port, whose next
# record binds at once), and leave no uprobe behind.
port=$((18600 + RANDOM % 300))
"$LS" record -o "$T/rel.data" --metrics 127.0.0.1:$port -- sleep 0.01 >/dev/null 2>&1; rc1=$?
helper=$(pgrep -x latsplit-detach | head -1)
held=$( [[ -n $helper ]] && ls -l "/proc/$helper/fd" 2>/dev/null | grep -c -e 'rel.data' -e 'socket:' )
"$LS" record -o "$T/rel2.data" --metrics 127.0.0.1:$port -- sleep 0.01 >/dev/null 2>"$T/rel2.err"; rc2=$?
wait_released; gone=$?
left=$(bpftool perf list 2>/dev/null | grep -c -e liblatsplit -e libssl)
check "hostile.released: after record exits, its helper (${helper:-none}) holds ${held:-0} files or sockets, the --metrics port binds again (exit $rc1, $rc2), and once it ends $left uprobes are left" \
  [ "$rc1" -eq 0 -a "$rc2" -eq 0 -a "${held:-0}" -eq 0 -a "$gone" -eq 0 -a "$left" -eq 0 ]

# (killed after the first stack checkpoint, 5 s in: its stacks must survive)
"$LS" record -o "$T/kill.data" -- sh -c 'sleep 1; sleep 30' >/dev/null 2>&1 &
rp=$!
sleep 7
child=$(pgrep -P $rp sh)
links_during=$(bpftool link show 2>/dev/null | grep -c '^[0-9]')
kill -KILL $rp; wait $rp 2>/dev/null
# the kernel tears the recorder's BPF objects down as it exits (seconds)
for i in $(seq 100); do kill -0 "$child" 2>/dev/null || break; sleep 0.1; done
wait_released
links_after=$(bpftool link show 2>/dev/null | grep -c '^[0-9]')
progs_after=$(bpftool prog show 2>/dev/null | grep -c '^[0-9]')
"$LS" report "$T/kill.data" >/dev/null 2>&1; rrc=$?
"$LS" dump --json "$T/kill.data" >"$T/kill.jsonl" 2>/dev/null
nstk=$(grep -c '"type":"stack"' "$T/kill.jsonl"); nsym=$(grep -c '"type":"sym"' "$T/kill.jsonl")
check "hostile.sigkill_stacks: a SIGKILLed recording keeps its checkpointed stacks ($nstk) and symbols ($nsym)" \
  [ "$nstk" -ge 1 -a "$nsym" -ge 1 ]
good=1
[[ -n $child ]] && ! kill -0 "$child" 2>/dev/null && [[ $links_after -eq $links_before && $links_during -gt $links_before && $progs_after -eq $progs_before && $rrc -eq 0 ]] && good=0
check "hostile.sigkill: after SIGKILL the command $child is gone, BPF links $links_before -> $links_during while recording -> $links_after, programs $progs_before -> $progs_after, the partial capture reads (report exit $rrc)" \
  [ $good -eq 0 ]

"$LS" record -o "$T/same.data" -d 6 --port 1 >/dev/null 2>"$T/same1.err" &
r1=$!
sleep 4
"$LS" record -o "$T/same.data" -d 1 --port 1 >/dev/null 2>"$T/same2.err"
wait $r1
check "hostile.same_output: the first of two recorders on one -o says its data is now in .old" \
  grep -q "was replaced while recording.*same.data.old" "$T/same1.err"

# hostile-host finding 9: the other commands' -o (flame, timeline, report
# --html) once followed symlinks and truncated their targets, hung on a
# FIFO, and made 0644 files that hold request paths
G=$ROOT/tests/golden/mock.data
echo keep >"$T/victim"
ln -s "$T/victim" "$T/olink"
mkfifo "$T/ofifo"
bad=()
for cmd in "flame --kind latency --svg $G" "timeline $G" "report --html $G"; do
  for o in olink ofifo; do
    timeout 20 "$LS" $cmd -o "$T/$o" >/dev/null 2>"$T/o.err"; rc=$?
    [[ $rc -eq 1 ]] && grep -q "name a new or regular file" "$T/o.err" || bad+=("${cmd%% *} -o $o: rc $rc")
  done
  rm -f "$T/new.out"
  "$LS" $cmd -o "$T/new.out" >/dev/null 2>&1
  [[ $(stat -c %a "$T/new.out" 2>/dev/null) == 600 ]] || bad+=("${cmd%% *}: mode $(stat -c %a "$T/new.out" 2>/dev/null)")
done
[[ $(cat "$T/victim") == keep ]] || bad+=("the symlink's target was written")
check "hostile.output_other: flame, timeline and report --html refuse a symlink and a FIFO, leave the target, write 0600 ${bad[*]:-}" \
  [ ${#bad[@]} -eq 0 ]

# hostile-host finding 6: SIGINT during record's start-up (loading BPF), to
# a background job (started with SIGINT ignored, as in `make demo`): once
# lost, so record ran on and its caller waited forever. Now it stops, and
# the command it was to start never runs.
"$LS" record -o "$T/early.data" -- sh -c "touch '$T/early.ran'; sleep 30" 2>"$T/early.log" &
EPID=$!
sleep 0.2
kill -INT $EPID
start=$(date +%s%N)
for _ in $(seq 150); do kill -0 $EPID 2>/dev/null || break; sleep 0.1; done
alive=$(kill -0 $EPID 2>/dev/null && echo yes || echo no)
kill -KILL $EPID 2>/dev/null
wait $EPID 2>/dev/null
ms=$(( ($(date +%s%N) - start) / 1000000 ))
check "hostile.early_int: SIGINT during start-up stops record (still running: $alive, after $ms ms), the command never ran ($([[ -e $T/early.ran ]] && echo ran || echo not run))" \
  [ "$alive" = no -a ! -e "$T/early.ran" ]

# hostile-host: a request line with raw non-ASCII bytes, and one longer than
# --capture-bytes, were not recognised: their heads were starred and the
# requests went opaque (a client could stay out of the analysis). Now the
# first is rebuilt, the second is counted as unparsed with its bytes.
rm -f "$T/ready"
start_recording "$T/odd.data" "$T/ready" -- "$ENGINE" --port 18283 --bind 127.0.0.1 --token-ms 1 \
  --ready-file "$T/ready" || fail "hostile.odd_request_line: engine did not start"
python3 "$ROOT/tests/integration/clients.py" odd 127.0.0.1 18283
stop_recording 0.5
"$LS" report --json "$T/odd.data" >"$T/odd.jsonl" 2>/dev/null
res=$(python3 - "$T/odd.jsonl" <<'PY'
import json, sys
rs = [r for r in map(json.loads, open(sys.argv[1])) if "outcome" in r]
na = [r for r in rs if r.get("x_request_id") == "nonascii"]
long_ = [r for r in rs if r["bytes_in"] >= 3000]
print(f'{na[0]["outcome"] if na else "missing"} {na[0]["path"] if na else "-"} '
      f'{long_[0]["outcome"] if long_ else "missing"} {long_[0]["bytes_in"] if long_ else 0}')
PY
)
read -r na_out na_path long_out long_in <<<"$res"
check "hostile.odd_request_line: non-ASCII target: $na_out ($na_path); 3 KB request line: $long_out, $long_in bytes" \
  [ "$na_out" = ok -a "$long_out" = unparsed ]
