#!/usr/bin/env bash
# Runs every test: unit tests (cmocka, ASan+UBSan, no privileges) and
# integration tests (root, real BPF). Ends with "N passed, N failed".
# Integration scripts print one line per check: PASS name | FAIL name: why |
# SKIP name: why.
set -uo pipefail
cd "$(dirname "$0")/.."

passed=0 failed=0 skipped=0
skips=()   # "name: reason" of every skipped check, listed before the last line
fails=()   # every failed check with its reason, listed again before the last line
flaky=()   # checks of a script that failed, then passed when it ran again
unit_only=0
[[ ${1:-} == --unit-only ]] && unit_only=1
log_dir=build/test-logs
mkdir -p "$log_dir"

# bg_run NAME CMD...: CMD in the background, $(nproc) at a time, its output
# into $log_dir/NAME.log and its status into NAME.rc; bg_result NAME (after
# wait) sets out and rc from them. Unit binaries and fuzzers are CPU-only
# and untimed: they run side by side and are read back in order.
bg_run() {
  local name=$1; shift
  { "$@" >"$log_dir/$name.log" 2>&1; echo $? >"$log_dir/$name.rc"; } &
  while (( $(jobs -rp | wc -l) >= $(nproc) )); do wait -n; done
}
bg_result() {
  out=$(cat "$log_dir/$1.log"); rc=$(cat "$log_dir/$1.rc"); rm -f "$log_dir/$1.rc"
}

units=()
for t in build/tests/test_*; do
  [[ -x $t ]] || continue
  units+=("$t")
  bg_run "$(basename "$t")" "$t"
done
wait
for t in ${units[@]+"${units[@]}"}; do
  name=$(basename "$t")
  bg_result "$name"
  ok=$(grep -c '^\[       OK \]' <<<"$out")
  run=$(grep -c '^\[ RUN      \]' <<<"$out")
  sk=$(grep -c '^\[  SKIPPED \]' <<<"$out")
  skipped=$((skipped + sk))
  bad=$((run - ok - sk))   # a test that crashed never prints OK
  if [[ $rc -ne 0 && $bad -eq 0 ]]; then bad=1; fi   # crash or sanitizer abort
  passed=$((passed + ok)); failed=$((failed + bad))
  if [[ $rc -ne 0 ]]; then
    echo "FAIL unit/$name (rc=$rc, log: $log_dir/$name.log)"
    fails+=("unit/$name: rc=$rc, $(grep -m1 -E 'FAILED|ERROR|error' <<<"$out")")
    grep -E 'FAILED|ERROR|error' <<<"$out" | head -20
  else
    echo "PASS unit/$name ($ok tests)"
  fi
done

# Optional parts that were not built are skipped by name, never silently.
if [[ ! -x build/tests/test_cupti ]]; then
  n=$(grep -c 'cmocka_unit_test' tests/unit/test_cupti.c)
  skipped=$((skipped + n))
  skips+=("unit/test_cupti ($n tests): not built (no CUDA toolkit with CUPTI at ${CUDA_HOME:-/usr/local/cuda})")
  echo "SKIP ${skips[-1]}"
fi

# fuzz NAME MAX_LEN SEEDS [ARGS...]: build/fuzz-NAME briefly (make fuzz runs
# it longer), one check, by bg_run (each its own core for FUZZ_SECONDS);
# fuzz_result NAME reads it back.
fuzzed=()
fuzz() {
  local name=$1 max_len=$2 seeds=$3; shift 3
  [[ -x build/fuzz-$name ]] || return 0
  mkdir -p "build/fuzz-$name-corpus"
  fuzzed+=("$name")
  bg_run "fuzz-$name" build/fuzz-$name -max_total_time=${FUZZ_SECONDS:-15} -max_len=$max_len "$@" \
    "build/fuzz-$name-corpus" "$seeds"
}
fuzz_result() {
  local name=$1 out rc runs
  bg_result "fuzz-$name"
  runs=$(grep -o 'Done [0-9]* runs' <<<"$out" | tail -1)
  if [[ $rc -eq 0 ]]; then passed=$((passed + 1)); echo "PASS fuzz/$name ($runs)"
  else failed=$((failed + 1)); fails+=("fuzz/$name: see $log_dir/fuzz-$name.log"); echo "FAIL fuzz/$name (log: $log_dir/fuzz-$name.log)"; grep -m5 -E 'ERROR|SUMMARY' <<<"$out"; fi
}
fuzz http 4096 tests/fuzz/seeds           # the HTTP/1.1 parser
fuzz h2 4096 tests/fuzz/seeds-h2          # the HTTP/2 frame reader and scrubber
fuzz capture 8192 tests/fuzz/capture-seeds -timeout=10 # reader, formatters, analysis core
wait
for f in ${fuzzed[@]+"${fuzzed[@]}"}; do fuzz_result "$f"; done

if [[ $unit_only -eq 0 ]]; then
  for t in tests/integration/test_*.sh; do
    name=$(basename "$t" .sh)
    start=$(date +%s)
    out=$(bash "$t" 2>&1); rc=$?
    echo "$out" > "$log_dir/$name.log"
    p=$(grep -c '^PASS ' <<<"$out"); f=$(grep -c '^FAIL ' <<<"$out"); s=$(grep -c '^SKIP ' <<<"$out")
    # A script that failed runs once more (LS_TEST_RERUN=0: never). The
    # timing checks compare against marks a loaded 2-CPU host can delay;
    # a failure that comes back is a failure, one that does not is listed
    # (with its first run's reasons and log) before the verdict, never hidden.
    if [[ ($f -gt 0 || $rc -ne 0) && ${LS_TEST_RERUN:-1} != 0 ]]; then
      cp "$log_dir/$name.log" "$log_dir/$name.first.log"
      first=$(grep '^FAIL ' <<<"$out" | head -3 | cut -c1-300)
      [[ -n $first ]] || first="FAIL exited $rc without a verdict"
      echo "  ($name failed; running it once more: first run's log $log_dir/$name.first.log)"
      grep -E '^FAIL ' <<<"$out" | sed "s|^|[$name, first run] |"
      out=$(bash "$t" 2>&1); rc=$?
      echo "$out" > "$log_dir/$name.log"
      p=$(grep -c '^PASS ' <<<"$out"); f=$(grep -c '^FAIL ' <<<"$out"); s=$(grep -c '^SKIP ' <<<"$out")
      if [[ $f -eq 0 && $rc -eq 0 ]]; then
        while IFS= read -r l; do flaky+=("$name: ${l#FAIL }"); done <<<"$first"
      fi
    fi
    if [[ $rc -ne 0 && $f -eq 0 ]]; then
      f=1; echo "FAIL integration/$name: exited $rc without a verdict (log: $log_dir/$name.log)"
      fails+=("$name: exited $rc without a verdict")
      tail -5 <<<"$out"
    fi
    passed=$((passed + p)); failed=$((failed + f)); skipped=$((skipped + s))
    while IFS= read -r l; do skips+=("$name: ${l#SKIP }"); done < <(grep '^SKIP ' <<<"$out")
    while IFS= read -r l; do fails+=("$name: ${l#FAIL }"); done < <(grep '^FAIL ' <<<"$out")
    grep -E '^(PASS|FAIL|SKIP|  )' <<<"$out" | sed "s|^|[$name] |"
    echo "  ($name: $(( $(date +%s) - start )) s)"
  done
fi

# The failures again, next to the verdict: a log cut to its tail still names them.
if [[ ${#fails[@]} -gt 0 ]]; then
  echo "failed:"
  for s in "${fails[@]}"; do echo "  ${s:0:600}"; done
fi
if [[ ${#flaky[@]} -gt 0 ]]; then
  echo "flaky (failed, then the whole script passed when it ran again; first run's log: $log_dir/NAME.first.log):"
  for s in "${flaky[@]}"; do echo "  ${s:0:600}"; done
fi
if [[ $skipped -gt 0 ]]; then
  echo "skipped:"
  for s in "${skips[@]}"; do echo "  $s"; done
  echo "$passed passed, $failed failed, $skipped skipped"
else
  echo "$passed passed, $failed failed"
fi
[[ $failed -eq 0 ]]
