#!/usr/bin/env bash
# tools/py-chroot.sh [DIR]: a minimal Debian testing ("forky") root with the
# CPython versions latsplit walks beyond the host's 3.11: 3.13, 3.14 (its
# python3) and 3.15, with uvloop (for 3.14), for the Python-version and
# container tests. Built once into build/chroots/forky (about 150 MB,
# 2-4 minutes from the Debian mirror) and reused while it is whole; nothing
# is installed on the host. Debian testing's Release file may have expired
# on a mirror snapshot: apt inside is told not to check its date.
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${1:-$PWD/build/chroots/forky}
MIRROR=${MIRROR:-http://deb.debian.org/debian}
PKGS=python3,python3.13,python3.15,python3-uvloop
[[ $(id -u) -eq 0 ]] || { echo "py-chroot: needs root (debootstrap)" >&2; exit 1; }
if [[ -f $DIR/.latsplit-ready && $(cat "$DIR/.latsplit-ready") == "$PKGS" ]]; then
  exit 0
fi
command -v debootstrap >/dev/null || { echo "py-chroot: no debootstrap; run tools/install-test-deps.sh" >&2; exit 1; }
SCRIPT=/usr/share/debootstrap/scripts/sid # forky has no script of its own in Debian 12's debootstrap
[[ -f /usr/share/debootstrap/scripts/forky ]] && SCRIPT=/usr/share/debootstrap/scripts/forky
if [[ -d $DIR ]]; then
  if grep -q " $DIR" /proc/mounts; then
    echo "py-chroot: $DIR has mounts on it; unmount them first" >&2; exit 1
  fi
  rm -rf --one-file-system "$DIR"
fi
mkdir -p "$DIR"
log=$DIR.log
echo "py-chroot: debootstrap forky into $DIR (log: $log)" >&2
if ! debootstrap --variant=minbase --include="$PKGS" forky "$DIR" "$MIRROR" "$SCRIPT" >"$log" 2>&1; then
  tail -5 "$log" >&2
  echo "py-chroot: debootstrap failed (the mirror $MIRROR unreachable? set MIRROR=...)" >&2
  exit 1
fi
echo 'Acquire::Check-Valid-Until "false";' >"$DIR/etc/apt/apt.conf.d/99latsplit-no-valid-until"
for v in 3.13 3.14 3.15; do
  [[ -x $DIR/usr/bin/python$v ]] || { echo "py-chroot: python$v missing in $DIR" >&2; exit 1; }
done
echo "$PKGS" >"$DIR/.latsplit-ready"
