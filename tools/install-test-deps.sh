#!/usr/bin/env bash
# Installs what latsplit's tests use beyond building and running it
# (tools/install-deps.sh): cmocka and the fuzzers' runtime, the servers and
# clients the integration tests run as real parts (nginx, Node, uvicorn on
# uvloop, Prometheus, Chromium, protoc, tmux, libbpf-tools), npm's
# @opentelemetry/otlp-transformer (the OTLP test's decoder, into build/npm),
# and qemu with Debian 12's, 13's and testing's kernels for the kernel test. `make test` runs it; idempotent and
# quiet when everything is there.
#
# On the host it installs no kernel and leaves no service running or
# enabled: Debian's kernel package is downloaded and unpacked into
# build/kernels/ (never into /boot: the default boot kernel of a GPU host
# must not change), and the packages that ship a service (prometheus, which
# would listen unauthenticated on 0.0.0.0:9090, and nginx on :80) are
# installed with service starts refused (policy-rc.d) and their units
# disabled.
set -euo pipefail
cd "$(dirname "$0")/.."

# the fuzzers' runtime comes with the clang that install-deps installed:
# clang 14 on Debian 12, 19 on Debian 13
CLANG_MAJOR=$(clang --version 2>/dev/null | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)
PKGS=(
  libcmocka-dev "libclang-rt-${CLANG_MAJOR:-14}-dev" libbpf-tools curl time git debootstrap
  qemu-system-x86 busybox-static cpio tmux
  python3-fastapi python3-uvicorn python3-zmq python3-numpy python3-uvloop python3-httptools python3-grpcio
  python3-protobuf
  nginx-light apache2-utils nodejs prometheus chromium protobuf-compiler g++ openssl
)
command -v npm >/dev/null || PKGS+=(npm) # a machine's own npm will do
# libc's debug file (test_debug_syms): must match the installed libc6 to
# the version, so asked for on its own and never fatal (the test skips)
DBG=libc6-dbg
SERVICES=(prometheus nginx)
# the OpenTelemetry project's OTLP decoder (protobufjs, generated from the
# same opentelemetry-proto files), pinned: later versions dropped the
# generated request decoder
OTLP_NPM=@opentelemetry/otlp-transformer@0.208.0
OTLP_ROOT=build/npm/node_modules/@opentelemetry/otlp-transformer/build/src/generated/root.js

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
KDIR=build/kernels
# the kernels the qemu test boots: Debian 12's 6.1, Debian 13's 6.12 and
# Debian testing's (7.x), each the suite's linux-image-amd64
KSUITES=(bookworm trixie forky)
need_kernel=0
# a suite's kernel image: /boot/vmlinuz-VER, or /usr/lib/modules/VER/vmlinuz (Debian 14)
kimage() { ls "$KDIR/$1"/boot/vmlinuz-* "$KDIR/$1"/usr/lib/modules/*/vmlinuz 2>/dev/null | head -1; }
for k in "${KSUITES[@]}"; do
  [[ -n $(kimage "$k") ]] || need_kernel=1
done
need_npm=0
[[ -e $OTLP_ROOT ]] || need_npm=1
need_dbg=0
dpkg-query -W -f='${Status}' "$DBG" 2>/dev/null | grep -q "install ok installed" || need_dbg=1
[[ ${#missing[@]} -eq 0 && $need_kernel -eq 0 && $need_npm -eq 0 && $need_dbg -eq 0 ]] && exit 0

if [[ $(id -u) -ne 0 ]]; then
  echo "install-test-deps: missing: ${missing[*]:-} (kernels for the qemu test needed: $need_kernel); rerun as root" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "install-test-deps: installing ${missing[*]}" >&2
  # no service of these packages starts now ...
  policy=/usr/sbin/policy-rc.d
  had_policy=0
  [[ -e $policy ]] && had_policy=1
  [[ $had_policy -eq 1 ]] || { printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod 755 "$policy"; }
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || rc=$?
  [[ $had_policy -eq 1 ]] || rm -f "$policy"
  [[ ${rc:-0} -eq 0 ]] || exit "$rc"
  # ... nor at the next boot
  for s in "${SERVICES[@]}"; do
    if command -v systemctl >/dev/null; then
      systemctl disable "$s" >/dev/null 2>&1 || true
    elif command -v deb-systemd-helper >/dev/null; then
      deb-systemd-helper disable "$s.service" >/dev/null 2>&1 || true
    fi
  done
fi
if [[ $need_dbg -eq 1 ]]; then
  apt-get install -y -qq --no-install-recommends "$DBG" >/dev/null 2>&1 ||
    echo "install-test-deps: $DBG not installed (no version matching libc6 here): test_debug_syms will skip" >&2
fi
# fetch_kernel SUITE: that suite's kernel package, downloaded through an apt
# state of its own (the host's sources and caches untouched) and unpacked
# into build/kernels/SUITE, never installed
fetch_kernel() {
  local suite=$1 a=$PWD/$KDIR/apt-$1 pkg
  rm -rf "$a" "$KDIR/$suite"
  mkdir -p "$a/state/lists/partial" "$a/cache/archives/partial" "$a/dl"
  : >"$a/status" # nothing installed, as far as this apt knows
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${MIRROR:-http://deb.debian.org/debian} $suite main" \
    >"$a/sources.list"
  local apt=(-o Dir::Etc::SourceList="$a/sources.list" -o Dir::Etc::SourceParts=/dev/null
             -o Dir::State="$a/state" -o Dir::State::status="$a/status" -o Dir::Cache="$a/cache"
             -o Acquire::Check-Valid-Until=false -o APT::Get::List-Cleanup=0)
  apt-get "${apt[@]}" update >/dev/null 2>&1 ||
    { echo "install-test-deps: apt-get update for $suite failed" >&2; return 1; }
  pkg=$(apt-cache "${apt[@]}" depends linux-image-amd64 2>/dev/null |
        awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
  [[ -n $pkg ]] || { echo "install-test-deps: no linux-image-N.* behind $suite's linux-image-amd64" >&2; return 1; }
  # from Debian 14 the image package is a shell: the kernel is in linux-binary-*
  local pkgs=("$pkg") deb
  pkgs+=($(apt-cache "${apt[@]}" depends "$pkg" 2>/dev/null | awk '/Depends: linux-binary-/ {print $2}'))
  echo "install-test-deps: unpacking $suite's ${pkgs[*]} into $KDIR/$suite (not installed)" >&2
  (cd "$a/dl" && apt-get "${apt[@]}" download "${pkgs[@]}" >/dev/null 2>&1) ||
    { echo "install-test-deps: apt-get download ${pkgs[*]} ($suite) failed" >&2; return 1; }
  for deb in "$a"/dl/*.deb; do dpkg -x "$deb" "$KDIR/$suite"; done
  rm -rf "$a"
}
if [[ $need_kernel -eq 1 ]]; then
  rm -rf "$KDIR/6.1" # where the 6.1 kernel went before
  for k in "${KSUITES[@]}"; do
    [[ -n $(kimage "$k") ]] || fetch_kernel "$k" || exit 1
  done
fi
if [[ $need_npm -eq 1 ]]; then
  echo "install-test-deps: npm install $OTLP_NPM into build/npm" >&2
  mkdir -p build/npm
  npm install --prefix build/npm --no-audit --no-fund --loglevel=error "$OTLP_NPM" >/dev/null ||
    { echo "install-test-deps: npm install $OTLP_NPM failed" >&2; exit 1; }
fi
