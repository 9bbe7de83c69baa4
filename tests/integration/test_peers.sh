#!/usr/bin/env bash
# Cross-check with a peer: libbpf-tools' runqlat, on the same workload at the
# same time (3 spinning threads and one napping thread on this host's CPUs).
# Both read sched_wakeup/sched_switch; windows start and stop a few ms
# apart, so the number of run-queue waits must agree within 10% and the
# share of waits of 1024 us or more within 5 percentage points (runqlat's
# histogram is log2; 1024 us is one of its bucket edges).
source "$(dirname "$0")/lib.sh"
require_root peers.runqlat
RUNQLAT=$(command -v runqlat || echo /usr/sbin/runqlat)
[[ -x $RUNQLAT ]] || { skip "peers.runqlat: runqlat not installed (libbpf-tools; tools/install-deps.sh)"; exit 0; }

"$ROOT/build/runq-load" 3 6 & P=$!
CLEANUP+=("kill $P")
sleep 0.5
"$RUNQLAT" -p $P 3 1 >"$T/runqlat.txt" 2>&1 &
RQ=$!
"$LS" record -o "$T/rq.data" -p $P -d 3 --no-sock -F 0 --no-offcpu 2>/dev/null
wait $RQ
wait $P
read -r n_peer share_peer < <(awk '/->/ {n += $5; if ($1 >= 1024) m += $5} END {printf "%d %.2f\n", n, n ? 100 * m / n : 0}' "$T/runqlat.txt")
line=$("$LS" report "$T/rq.data" | grep "run queue of the tracked threads")
n_ls=$(sed -n 's/.*threads: \([0-9]*\) waits.*/\1/p' <<<"$line")
share_ls=$(sed -n 's/.*, \([0-9.]*\)% >= 1024 us.*/\1/p' <<<"$line")
info "runqlat: $n_peer waits, $share_peer% >= 1024 us; latsplit: $n_ls waits, $share_ls% >= 1024 us"
python3 - "$n_peer" "$share_peer" "${n_ls:-0}" "${share_ls:-0}" <<'PY'
import sys
n_p, s_p, n_l, s_l = map(float, sys.argv[1:])
ok = n_p > 100 and abs(n_l - n_p) <= 0.10 * n_p and abs(s_l - s_p) <= 5
print(("PASS" if ok else "FAIL") + f" peers.runqlat: waits {n_l:.0f} vs {n_p:.0f}, >=1024us {s_l:.1f}% vs {s_p:.1f}%")
PY
