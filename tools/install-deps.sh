#!/usr/bin/env bash
# Installs the Debian/Ubuntu packages that building and running latsplit
# need: compilers, libbpf and bpftool, libelf/libdw/zlib, libmicrohttpd,
# protobuf-c (compiler and library) and libcurl for OTLP export, json-c for
# OTLP/HTTP JSON received, and
# what `make demo` uses (nftables, iproute2 and ethtool for its network
# namespaces, python3). What only the tests use is
# tools/install-test-deps.sh, which `make test` runs. Idempotent: when
# everything is there it checks and exits quietly. Runnable directly on a
# bare box (needs only bash and apt): the README's set-up lines start with
# it, since minimal images have no make or gcc.
set -euo pipefail

PKGS=(
  make gcc clang llvm libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev pkg-config
  systemtap-sdt-dev libmicrohttpd-dev libprotobuf-c-dev protobuf-c-compiler libcurl4-openssl-dev libnghttp2-dev
  libjson-c-dev
  nftables iproute2 ethtool python3 binutils procps
)

missing=()
for p in "${PKGS[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

# Ubuntu ships bpftool inside linux-tools; accept any working bpftool.
if [[ " ${missing[*]} " == *" bpftool "* ]] && command -v bpftool >/dev/null &&
   bpftool version >/dev/null 2>&1; then
  missing=("${missing[@]/bpftool}")
fi

want=()
for p in "${missing[@]}"; do [[ -n "$p" ]] && want+=("$p"); done
[[ ${#want[@]} -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  echo "install-deps: missing packages: ${want[*]}; rerun as root (sudo $0)" >&2
  exit 1
fi
echo "install-deps: installing ${want[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends "${want[@]}" >/dev/null
