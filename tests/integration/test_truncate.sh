#!/usr/bin/env bash
# A real capture (the golden fixture) cut and damaged, read by dump, report
# and flame built with ASan+UBSan (and LeakSanitizer for dump and report:
# fuzz/capture checks the flame paths for leaks): at 150 random byte offsets (and every frame
# boundary +-1) and with 100 random byte flips. Every run must end by itself
# (10 s bound), exit 0 or 1 (never a crash or sanitizer abort), and every
# cut or flipped file must say what was lost, in dump and in flame. Fixed seed.
source "$(dirname "$0")/lib.sh"
SAN=$ROOT/build/san/latsplit
CAP=$ROOT/tests/golden/mock.data
[[ -x $SAN ]] || { skip "truncate.asan: build/san/latsplit not built (make test builds it)"; exit 0; }
python3 - "$CAP" "$T" <<'PY'
import random, struct, sys
cap, out = sys.argv[1], sys.argv[2]
data = open(cap, "rb").read()
rnd = random.Random(7)
hs = struct.unpack_from("<I", data, 16)[0]
frames = [i for i in range(hs, len(data) - 4) if data[i:i + 4] == b"FSFR"]
cuts = sorted({rnd.randrange(1, len(data)) for _ in range(150)} |
              {f + d for f in frames for d in (-1, 0, 1) if 0 < f + d < len(data)})
for i, c in enumerate(cuts):
    open(f"{out}/cut{i:04d}", "wb").write(data[:c])
for i in range(100):
    b = bytearray(data)
    for _ in range(rnd.randint(1, 4)):
        b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
    open(f"{out}/flip{i:04d}", "wb").write(bytes(b))
PY
LOSS='lost|trailer|damage|corrupt|CRC|not a latsplit|shorter|unreadable|skipped'
# one_file F: its four readings; what went wrong, a line each, in F.res
# ("bad ...", "silent", "flame_silent"). Files run $(nproc) at a time: the
# sanitizers' start-up is most of each run.
one_file() {
  local f=$1 cmd rc b lsan
  b=$(basename "$f")
  : >"$f.res"
  for cmd in "dump" "report" "flame --kind latency" "flame --kind offcpu"; do
    # LeakSanitizer's exit scan (~30 ms a process here) for dump and report;
    # the flame paths' leaks are fuzz/capture's (it builds both graphs
    # under LeakSanitizer), ASan and UBSan stay on for all four
    lsan=1
    [[ $cmd == flame* ]] && lsan=0
    # shellcheck disable=SC2086
    ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=$lsan \
      timeout 10 "$SAN" $cmd "$f" >"$f.out" 2>"$f.err"; rc=$?
    [[ $rc -eq 0 || $rc -eq 1 ]] || echo "bad $b $cmd: rc $rc $(grep -m1 -E 'ERROR|runtime error' "$f.err")" >>"$f.res"
    # the loss is stated: dump's header comment (its output, either stream)
    [[ $cmd == dump ]] && ! cat "$f.out" "$f.err" | grep -qiE "$LOSS" && echo silent >>"$f.res"
    # flame says what it could not draw, as report does
    [[ $cmd == flame* ]] && ! grep -qiE "$LOSS" "$f.err" && echo flame_silent >>"$f.res"
  done
  rm -f "$f.out" "$f.err"
}
bad=() silent=() flame_silent=()
files=("$T"/cut* "$T"/flip*)
n=${#files[@]}
for f in "${files[@]}"; do
  one_file "$f" &
  while (( $(jobs -rp | wc -l) >= $(nproc) )); do wait -n; done
done
wait
for f in "${files[@]}"; do
  b=$(basename "$f")
  while IFS= read -r l; do
    case $l in
      bad\ *) bad+=("${l#bad }") ;;
      silent) silent+=("$b") ;;
      flame_silent) flame_silent+=("$b") ;;
    esac
  done <"$f.res"
done
check "truncate.asan: $n cut or flipped captures x dump, report, 2 flame kinds under ASan+UBSan: no crash, no hang; ${bad[*]:0:3}" \
  [ ${#bad[@]} -eq 0 ]
check "truncate.stated: every cut or flip is stated as a loss by dump (silent: ${#silent[@]}: ${silent[*]:0:5})" \
  [ ${#silent[@]} -eq 0 ]
check "truncate.flame_stated: and by flame (silent: ${#flame_silent[@]}: ${flame_silent[*]:0:5})" \
  [ ${#flame_silent[@]} -eq 0 ]
