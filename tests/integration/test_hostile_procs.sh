#!/usr/bin/env bash
# A hostile process cannot hurt the recorder (issue: hostile host, findings
# 2 and 3; finding 1, the memory budget, is tests/unit/test_pyrecord.c):
#  - fifo_root: a Python process in its own mount namespace replaces the
#    directory of its interpreter binary with a tmpfs holding a FIFO of the
#    same name. The detector once open()ed /proc/PID/root<path>, blocked on
#    the FIFO and ignored -d; now it opens the mapping itself
#    (/proc/PID/map_files), never anything but a regular file: record -d 2
#    ends on time.
#  - namesake: a program run in its own mount namespace with another
#    program bind-mounted over its path (beta at alpha's path). The
#    symbolizer once named it from the host's file of that name
#    (alpha_hot_loop while beta ran); now from the mapped inode: beta.
source "$(dirname "$0")/lib.sh"
require_root hostile.fifo_root hostile.namesake
PY311=/usr/bin/python3.11 # Debian's: the interpreter is the binary itself (no libpython mapped)

if [[ ! -x $PY311 ]]; then
  skip "hostile.fifo_root: no python3.11 (Debian 12's python3)"
else
  mkdir -p "$T/py"
  cp "$PY311" "$T/py/python3.11"
  unshare -m --propagation private sh -c "
    '$T/py/python3.11' -c 'import time
t = time.time() + 8
while time.time() < t: sum(range(1000))' &
    echo \$! > '$T/py.pid'
    sleep 0.5
    mount -t tmpfs none '$T/py' && mkfifo '$T/py/python3.11'
    wait" &
  CLEANUP+=("kill $! 2>/dev/null")
  wait_for_file "$T/py.pid" 5
  sleep 1.5 # the FIFO is in place
  pid=$(cat "$T/py.pid")
  info "pid $pid: $(ls -l "/proc/$pid/root$T/py/python3.11" 2>&1)"
  start=$(date +%s%N)
  timeout 30 "$LS" record -d 2 -p "$pid" -o "$T/fifo.data" >/dev/null 2>"$T/fifo.log"; rc=$?
  ms=$(( ($(date +%s%N) - start) / 1000000 ))
  kill "$pid" 2>/dev/null
  check "hostile.fifo_root: record -d 2 on a process whose interpreter path is now a FIFO: exit $rc after $ms ms" \
    [ "$rc" -eq 0 -a "$ms" -lt 8000 ]
fi

cat >"$T/alpha.c" <<'C'
#include <time.h>
volatile unsigned long sink;
__attribute__((noinline)) void alpha_hot_loop(void) { for (unsigned long i = 0; i < 1000000; i++) sink += i; }
int main(void) { time_t end = time(0) + 6; while (time(0) < end) alpha_hot_loop(); return 0; }
C
sed 's/alpha/beta/g' "$T/alpha.c" >"$T/beta.c"
mkdir -p "$T/bin"
cc -O1 -fno-omit-frame-pointer -o "$T/bin/prog" "$T/alpha.c" && cc -O1 -fno-omit-frame-pointer -o "$T/beta" "$T/beta.c" ||
  { fail "hostile.namesake: cc failed"; exit 0; }
unshare -m --propagation private sh -c "mount --bind '$T/beta' '$T/bin/prog' && exec '$T/bin/prog'" &
npid=$!
CLEANUP+=("kill $npid 2>/dev/null")
sleep 0.5
"$LS" record -d 2 -F 199 -p "$npid" -o "$T/ns.data" >/dev/null 2>"$T/ns.log"
"$LS" flame --kind cpu "$T/ns.data" >"$T/ns.folded" 2>/dev/null
beta=$(grep -c beta_hot_loop "$T/ns.folded"); alpha=$(grep -c alpha_hot_loop "$T/ns.folded")
check "hostile.namesake: beta at alpha's path in its own mount namespace: stacks naming beta_hot_loop $beta, alpha_hot_loop $alpha" \
  [ "$beta" -gt 0 -a "$alpha" -eq 0 ]
