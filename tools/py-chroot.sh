#!/usr/bin/env bash
# tools/py-chroot.sh [DIR [SUITE [PACKAGES]]]: a minimal Debian root for the
# Python-version and container tests. By default Debian testing ("forky")
# with the CPython versions latsplit walks beyond the host's 3.11: 3.13,
# 3.14 (its python3) and 3.15, into build/chroots/forky; the container test
# asks for Debian 13 ("trixie") with the vLLM-shaped engine's packages.
# Built once (1-2 minutes from the Debian mirror, 150-400 MB) and reused
# while it is whole and holds the same packages; nothing is installed on the
# host. Debian testing's Release file may have expired on a mirror
# snapshot: apt inside is told not to check its date.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-$PWD/build/chroots/forky}
SUITE=${2:-forky}
PKGS=${3:-python3,python3.13,python3.15,python3-uvloop}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
[[ $(id -u) -eq 0 ]] || { echo "py-chroot: needs root (debootstrap)" >&2; exit 1; }
if [[ -f $DIR/.latsplit-ready && $(cat "$DIR/.latsplit-ready") == "$SUITE $PKGS" ]]; then
  exit 0
fi
command -v debootstrap >/dev/null || { echo "py-chroot: no debootstrap; run tools/install-test-deps.sh" >&2; exit 1; }
# Debian 12's debootstrap has no script for forky: testing bootstraps as sid does
SCRIPT=/usr/share/debootstrap/scripts/$SUITE
[[ -f $SCRIPT ]] || SCRIPT=/usr/share/debootstrap/scripts/sid
if [[ -d $DIR ]]; then
  if grep -q " $DIR" /proc/mounts; then
    echo "py-chroot: $DIR has mounts on it; unmount them first" >&2; exit 1
  fi
  rm -rf --one-file-system "$DIR"
fi
mkdir -p "$DIR"
log=$DIR.log
echo "py-chroot: debootstrap $SUITE into $DIR (log: $log)" >&2
if ! debootstrap --variant=minbase "$SUITE" "$DIR" "$MIRROR" "$SCRIPT" >"$log" 2>&1; then
  tail -5 "$log" >&2
  echo "py-chroot: debootstrap failed (the mirror $MIRROR unreachable? set MIRROR=...)" >&2
  exit 1
fi
echo 'Acquire::Check-Valid-Until "false";' >"$DIR/etc/apt/apt.conf.d/99latsplit-no-valid-until"
# the packages through apt inside (debootstrap's own resolver does not
# follow virtual packages, e.g. python3-zmq's cffi backend)
cp /etc/resolv.conf "$DIR/etc/resolv.conf"
printf '#!/bin/sh\nexit 101\n' >"$DIR/usr/sbin/policy-rc.d" # no service starts in there
chmod +x "$DIR/usr/sbin/policy-rc.d"
if ! { chroot "$DIR" apt-get update &&
       chroot "$DIR" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
         ${PKGS//,/ } && chroot "$DIR" apt-get clean; } >>"$log" 2>&1; then
  tail -5 "$log" >&2
  echo "py-chroot: apt-get install in $DIR failed (log: $log)" >&2
  exit 1
fi
for p in ${PKGS//,/ }; do
  [[ $p == python3.* ]] || continue
  [[ -x $DIR/usr/bin/$p ]] || { echo "py-chroot: $p missing in $DIR" >&2; exit 1; }
done
echo "$SUITE $PKGS" >"$DIR/.latsplit-ready"
