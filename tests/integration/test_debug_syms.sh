#!/usr/bin/env bash
# Debug symbols whenever they hold more than the file (issue 28): Debian's
# libc has only .dynsym, so its thread root start_thread was
# "[unknown] (libc.so.6)" even with libc6-dbg installed (the debug file was
# read only for files with no symbols at all). With the debug file found
# by build-id under --debug-dir (default /usr/lib/debug), start_thread is
# named under a worker thread's stacks; with an empty debug dir it is not
# (the difference is the debug file). And flame counts the stacks that did
# not reach a thread's root, with the reason (issue 28's honest truncation).
source "$(dirname "$0")/lib.sh"
require_root debug_syms.named debug_syms.ends
libc=$(ldd /bin/true | awk '/libc.so.6/ {print $3}')
id=$(readelf -n "$libc" 2>/dev/null | awk '/Build ID/ {print $3}')
[[ -n $id && -e /usr/lib/debug/.build-id/${id:0:2}/${id:2}.debug ]] ||
  { skip "debug_syms: no libc debug file for build-id ${id:-?} (libc6-dbg, tools/install-test-deps.sh)"; exit 0; }
cat >"$T/thr.c" <<'C'
#include <pthread.h>
__attribute__((noinline)) double worker_spin(long n)
{ double x = 1; for (long i = 0; i < n; i++) x = x * 1.0000001 + 1e-9; return x; }
static void *worker(void *a) { (void)a; return (void *)(long)(worker_spin(200000000) > 0); }
int main(void) { pthread_t t; void *r; pthread_create(&t, 0, worker, 0); pthread_join(t, &r); return r ? 0 : 1; }
C
cc -O0 -g -fno-omit-frame-pointer -pthread -o "$T/thr" "$T/thr.c"
mkdir -p "$T/empty"
for d in default empty; do
  extra=(); [[ $d == empty ]] && extra=(--debug-dir "$T/empty")
  "$LS" record "${extra[@]}" -F 199 -o "$T/$d.data" -- "$T/thr" 2>/dev/null
  "$LS" flame --kind cpu "$T/$d.data" >"$T/$d.folded" 2>"$T/$d.err"
  eval "total_$d=\$(awk '{s += \$NF} END {print s + 0}' '$T/$d.folded')"
  eval "named_$d=\$(awk '/;start_thread;worker;worker_spin/ {s += \$NF} END {print s + 0}' '$T/$d.folded')"
done
info "default debug dir: $named_default of $total_default samples under start_thread;worker; empty debug dir: $named_empty of $total_empty"
check "debug_syms.named: libc's debug file names start_thread (most samples), and only it does" \
  test "$total_default" -ge 20 -a $((named_default * 10)) -ge $((total_default * 8)) -a "$named_empty" -eq 0
# honest truncation: flame says where the stacks ended. Named by the debug
# file, every one reaches a thread's root; without it they end at a libc
# frame with no symbol, and are counted as stopped short, not passed off
sed 's/^/    /' "$T/default.err" "$T/empty.err"
rooted=$(sed -n "s/^latsplit flame: \([0-9]*\) of $total_default user stacks reached.*/\1/p" "$T/default.err")
nosym=$(sed -n "s/^latsplit flame: [0-9]* of $total_empty user stacks reached.*, \([0-9]*\) at a frame with no symbol.*/\1/p" "$T/empty.err")
check "debug_syms.ends: flame counts where stacks ended: ${rooted:-?} of $total_default at a thread's root with the debug file, ${nosym:-?} of $total_empty at a frame with no symbol without it" \
  test "${rooted:-0}" -ge $((total_default * 9 / 10)) -a "${nosym:-0}" -ge $((total_empty * 9 / 10))
