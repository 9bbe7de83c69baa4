#!/usr/bin/env bash
# What an adversarial user tried (reliability issue, findings 1-3):
#  - output_special: `record -o` naming a device node, a directory, a FIFO
#    or a symlink is refused (exit 2) and leaves the path as it was; before,
#    `-o /dev/null` renamed the host's /dev/null to null.old;
#  - flame_fifo: a capture whose mapping record names a FIFO (or a directory)
#    as the file to symbolize from: flame must neither hang nor open it.
# (Crafted connection ids: tests/unit/test_requests.c.)
source "$(dirname "$0")/lib.sh"
require_root hostile.output_special hostile.flame_fifo

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
