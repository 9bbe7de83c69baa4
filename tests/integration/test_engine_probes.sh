#!/usr/bin/env bash
# The engine library's USDT probe sites are 5-byte NOPs on x86-64 (see
# include/latsplit/engine.h): kernels with optimized uprobes replace the
# int3 trap with a trampoline call there (measured on this machine's bench:
# 8.6-9.0 k req/s with 1-byte NOP sites, 12.3-13.4 k with 5-byte ones).
# Every probe's location must hold 0f 1f 44 00 00. No privileges needed.
source "$(dirname "$0")/lib.sh"
[[ $(uname -m) == x86_64 ]] || { skip "engine_probes.nop5: x86-64 only"; exit 0; }
check_lib() { # LIB MIN-PROBES
  local lib=$1 min=$2 n=0 bad=() l addr bytes locs
  locs=$(readelf -n "$lib" | awk '/Provider: latsplit/ {p = 1} p && /Location:/ {sub(",", "", $2); print $2; p = 0}')
  for l in $locs; do
    n=$((n + 1))
    addr=$(printf '%x' $((l)))
    bytes=$(objdump -d --start-address=$((l)) --stop-address=$((l + 5)) "$lib" |
      awk -v a="$addr:" '$1 == a {print $2, $3, $4, $5, $6}')
    [[ $bytes == "0f 1f 44 00 00" ]] || bad+=("0x$addr: $bytes")
  done
  local name; name=$(basename "$lib")
  if [[ $n -ge $min && ${#bad[@]} -eq 0 ]]; then
    pass "engine_probes.nop5.$name: all $n probe sites are 5-byte NOPs"
  else
    fail "engine_probes.nop5.$name: $n probe sites (want >= $min); not 5-byte NOPs: ${bad[*]:-}"
  fi
}
check_lib "$ROOT/build/liblatsplit-engine.so" 9
if [[ -e $ROOT/build/liblatsplit-cupti.so ]]; then
  check_lib "$ROOT/build/liblatsplit-cupti.so" 3
else
  skip "engine_probes.nop5.liblatsplit-cupti.so: not built (no CUDA toolkit with CUPTI; set CUDA_HOME)"
fi
