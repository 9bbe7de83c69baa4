#!/usr/bin/env bash
# make test-fresh: the README's two set-up commands on a minimal Debian
# (SUITE, default bookworm: Debian 12; trixie: Debian 13, in build/fresh-trixie).
# Bootstraps `debootstrap --variant=minbase SUITE` into build/fresh/root
# (no make, no compiler, no sudo, no CUDA toolkit: what a new user has),
# clones the committed tree into it, and runs exactly the two lines of the
# README's first sh block in a chroot with /proc, /sys and /dev bound and the
# root bind-mounted onto itself (so `ip netns` can mount there). Passes only
# if both exit 0, the demo prints its exact-sum line for every request, and
# the tests end "N passed, 0 failed". Mounts are removed even on failure.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
[[ $(id -u) -eq 0 ]] || { echo "test-fresh: needs root (debootstrap, chroot, mounts)" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "test-fresh: no debootstrap; run tools/install-test-deps.sh" >&2; exit 1; }

MIRROR=${MIRROR:-http://deb.debian.org/debian}
SUITE=${SUITE:-bookworm}
FRESH=$ROOT/build/fresh
[[ $SUITE == bookworm ]] || FRESH=$ROOT/build/fresh-$SUITE
CHROOT=$FRESH/root
# FRESH_LINES=1: only the README's first line (the build and the demo)
LINES=${FRESH_LINES:-2}

mounted=()
cleanup() {
  local i p
  # processes still running in the chroot (an interrupted run) hold its mounts
  for p in /proc/[0-9]*; do
    [[ $(readlink "$p/root" 2>/dev/null) == "$CHROOT" ]] && kill -9 "${p#/proc/}" 2>/dev/null
  done
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -R -l "${mounted[i]}" 2>/dev/null || true; done
}
trap cleanup EXIT INT TERM
bind() { # SRC DST [--rbind]
  mount "${3:---bind}" "$1" "$2"; mounted+=("$2")
}

step_start=0
step() { step_start=$(date +%s); echo "== test-fresh: $*"; }
took() { echo "   ($(( $(date +%s) - step_start )) s)"; }

# Nothing may be left mounted from an interrupted run before we delete it.
if [[ -d $CHROOT ]]; then
  { grep -o " $CHROOT[^ ]*" /proc/mounts || true; } | sort -r | while read -r m; do umount -l "$m" || true; done
  rm -rf --one-file-system "$CHROOT"
fi
mkdir -p "$FRESH/cache" "$CHROOT"

step "debootstrap --variant=minbase $SUITE"
debootstrap --variant=minbase --cache-dir="$FRESH/cache" "$SUITE" "$CHROOT" "$MIRROR" \
  >"$FRESH/debootstrap.log" 2>&1 || { tail -20 "$FRESH/debootstrap.log"; exit 1; }
took

step "clone the committed tree ($(git rev-parse --short HEAD)) into /root/latsplit"
git clone -q --no-hardlinks "$ROOT" "$CHROOT/root/latsplit"
cp /etc/resolv.conf "$CHROOT/etc/resolv.conf"
# The host's network trust comes along, as its DNS does: extra CAs (an
# egress proxy's; Debian's ca-certificates adds them when it is installed),
# the bundle itself until then, and npm's CA setting. The registry is
# reached over TLS; apt's mirror is not.
if compgen -G "/usr/local/share/ca-certificates/*" >/dev/null; then
  mkdir -p "$CHROOT/usr/local/share/ca-certificates"
  cp -r /usr/local/share/ca-certificates/. "$CHROOT/usr/local/share/ca-certificates/"
fi
if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
  mkdir -p "$CHROOT/etc/ssl/certs"
  cp /etc/ssl/certs/ca-certificates.crt "$CHROOT/etc/ssl/certs/"
fi
[[ -f /etc/npmrc ]] && cp /etc/npmrc "$CHROOT/etc/npmrc"
took

bind "$CHROOT" "$CHROOT"
mount -t proc proc "$CHROOT/proc"; mounted+=("$CHROOT/proc")
bind /sys "$CHROOT/sys" --rbind
bind /dev "$CHROOT/dev" --rbind
mount --make-rslave "$CHROOT/sys"; mount --make-rslave "$CHROOT/dev"
# What the tests download from Debian's archive and npm as fixtures (the
# kernels the qemu test boots, the Python and engine roots, the OTLP
# decoder) is shared with this tree's build/: whichever run comes first
# (CI: this one, in the chroot) fetches them, the others reuse them;
# each is rebuilt when it is not whole, as on any machine. The set-up
# itself (packages, build) is never shared. FRESH_FIXTURES=own: fetch all.
if [[ ${FRESH_FIXTURES:-shared} != own ]]; then
  for d in kernels chroots npm; do
    mkdir -p "$ROOT/build/$d" "$CHROOT/root/latsplit/build/$d"
    bind "$ROOT/build/$d" "$CHROOT/root/latsplit/build/$d"
  done
fi

# The README's set-up: the two lines of its first sh block, comments removed.
mapfile -t setup < <(awk '/^```sh/ {f = 1; next} /^```/ {if (f) exit} f' README.md |
  sed -e 's/#.*//' -e 's/ *$//' | grep .)
[[ ${#setup[@]} -eq 2 ]] || { echo "test-fresh: README's first sh block holds ${#setup[@]} commands, want 2" >&2; exit 1; }

# Node's own CA store knows no egress proxy: the host's extra CA file, when
# it names one that came along
ca_env=()
[[ -n ${NODE_EXTRA_CA_CERTS:-} && -f $CHROOT$NODE_EXTRA_CA_CERTS ]] &&
  ca_env=("NODE_EXTRA_CA_CERTS=$NODE_EXTRA_CA_CERTS")
in_chroot() { # LOG COMMAND
  chroot "$CHROOT" /usr/bin/env -i HOME=/root TERM=dumb LANG=C.UTF-8 \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    ${ca_env[@]+"${ca_env[@]}"} \
    bash -c "cd /root/latsplit && $2" >"$1" 2>&1
}

rc=0
step "README line 1 in the chroot: ${setup[0]}"
if in_chroot "$FRESH/demo.log" "${setup[0]}"; then demo_rc=0; else demo_rc=$?; fi
took
sum_line=$(grep -E '^== every request.*: [0-9]+/[0-9]+ exactly' "$FRESH/demo.log" || true)
echo "   exit $demo_rc; ${sum_line:-no exact-sum line} (log: ${FRESH#$ROOT/}/demo.log)"
frac=$(grep -oE '[0-9]+/[0-9]+ exactly' <<<"$sum_line" || true); frac=${frac% exactly}
if [[ $demo_rc -ne 0 || -z $frac || ${frac%/*} != "${frac#*/}" || ${frac%/*} -eq 0 ]]; then
  tail -20 "$FRESH/demo.log"; rc=1
fi

if [[ $LINES -lt 2 ]]; then
  if [[ $rc -eq 0 ]]; then echo "test-fresh ($SUITE, line 1 only): PASS"; else echo "test-fresh ($SUITE, line 1 only): FAIL"; fi
  exit $rc
fi
step "README line 2 in the chroot: ${setup[1]}"
if in_chroot "$FRESH/test.log" "${setup[1]}"; then test_rc=0; else test_rc=$?; fi
took
last=$(tail -n 1 "$FRESH/test.log")
echo "   exit $test_rc; last line: $last (log: ${FRESH#$ROOT/}/test.log)"
sed -n '/^skipped:$/,$p' "$FRESH/test.log" | sed '$d' | sed 's/^/   /'
if [[ $test_rc -ne 0 ]] || ! grep -qE '^[0-9]+ passed, 0 failed' <<<"$last"; then
  grep -E '^(FAIL|\[.*\] FAIL)' "$FRESH/test.log" | head -20; rc=1
fi

if [[ $rc -eq 0 ]]; then echo "test-fresh ($SUITE): PASS"; else echo "test-fresh ($SUITE): FAIL"; fi
exit $rc
