#!/usr/bin/env bash
# Golden outputs: every output format on a fixed capture must stay byte for
# byte what tests/golden/expected/ holds, so a refactor proves it changed
# nothing it should not. Small outputs are kept whole (a failure shows the
# diff); large ones (dump) as a SHA-256. An output that changes on purpose:
# rerun with GOLDEN_UPDATE=1, review `git diff tests/golden`, commit.
# The fixture: tests/golden/mock.data (make-fixture.sh); the synthetic flame
# capture is built by flame-capture at test time. Commands with OUT write
# their file there (timeline, report --html). No privileges needed.
source "$(dirname "$0")/lib.sh"
G=$ROOT/tests/golden
E=$G/expected
cd "$G" || exit 1
"$ROOT/build/flame-capture" "$T/synthetic.data" >/dev/null

# name | command (in tests/golden: the fixture is named relative, as outputs
# show it; the synthetic one only in outputs that do not name it) | whole or sha
cases=(
  "report.txt|$LS report mock.data|whole"
  "report-ttft.txt|$LS report --ttft --top 3 mock.data|whole"
  "report.jsonl|$LS report --json mock.data|whole"
  "report.csv|$LS report --csv mock.data|whole"
  "dump.txt|$LS dump mock.data|sha"
  "dump.jsonl|$LS dump --json mock.data|sha"
  "flame-latency.folded|$LS flame --kind latency mock.data|whole"
  "flame-latency-ttft.folded|$LS flame --kind latency --ttft mock.data|whole"
  "flame-latency.svg|$LS flame --kind latency --svg mock.data|sha"
  "flame-gpu.folded|$LS flame --kind gpu mock.data|whole"
  "flame-cpu.folded|$LS flame --kind cpu mock.data|whole"
  "flame-offcpu.folded|$LS flame --kind offcpu mock.data|whole"
  "flame-offcpu.svg|$LS flame --kind offcpu --svg mock.data|sha"
  "synthetic-report.jsonl|$LS report --json $T/synthetic.data|whole"
  "synthetic-latency.folded|$LS flame --kind latency $T/synthetic.data|whole"
  "synthetic-cpu.folded|$LS flame --kind cpu $T/synthetic.data|whole"
  "synthetic-gpu.folded|$LS flame --kind gpu $T/synthetic.data|whole"
  "timeline.perfetto-trace|$LS timeline -o OUT mock.data|sha"
  "report.html|$LS report --html -o OUT mock.data|sha"
)
for c in "${cases[@]}"; do
  IFS='|' read -r name cmd mode <<<"$c"
  if [[ $cmd == *" OUT "* ]]; then ${cmd/ OUT / $T/$name } >/dev/null 2>&1  # writes a file
  else $cmd >"$T/$name" 2>/dev/null; fi
  if [[ $mode == sha ]]; then
    sha256sum <"$T/$name" | cut -d' ' -f1 >"$T/$name.sha"
    got=$T/$name.sha want=$E/$name.sha
  else
    got=$T/$name want=$E/$name
  fi
  if [[ -n ${GOLDEN_UPDATE:-} ]]; then
    cp "$got" "$want"; info "updated $name"; continue
  fi
  if [[ ! -e $want ]]; then
    fail "golden.$name: no $want (GOLDEN_UPDATE=1 creates it)"
  elif cmp -s "$got" "$want"; then
    pass "golden.$name: byte-identical ($(wc -c <"$T/$name") bytes)"
  else
    fail "golden.$name: differs from tests/golden/expected/$(basename "$want"):"
    diff "$want" "$got" | head -8 | sed 's/^/    /'
  fi
done

# A write that fails is a failure: report, dump and flame to a full disk
# exit 1 and say so (report --json > /dev/full once exited 0)
bad=()
for cmd in "report --json mock.data" "report mock.data" "dump mock.data" "flame --kind latency mock.data"; do
  $LS $cmd >/dev/full 2>"$T/full.err"; rc=$?
  [[ $rc -eq 1 ]] && grep -q "No space left" "$T/full.err" || bad+=("$cmd: rc $rc")
done
if [[ ${#bad[@]} -eq 0 ]]; then pass "golden.write_errors: output to a full disk exits 1 with the reason"
else fail "golden.write_errors: ${bad[*]}"; fi
