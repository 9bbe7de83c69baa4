#!/usr/bin/env bash
# netlab: a client/server pair of network namespaces joined by veth, with
# optional loss and bandwidth limits, for latsplit's tests and demo.
#
#   tools/netlab.sh up [--loss-to-client PCT] [--loss-to-server PCT]
#                      [--rate RATE]                   create (replacing any)
#   tools/netlab.sh down                                 remove (idempotent)
#   tools/netlab.sh env                                  print the names/addresses
#
# Loss is real loss: nftables drops on the *receiving* side's input hook
# (numgen random), so the sender's TCP sees the segment vanish. Drops on the
# sender's output hook would be re-queued locally, not lost. Bandwidth toward
# the client is a tc tbf on the server's veth. Each namespace has its own SNMP
# counters (ip netns exec NS cat /proc/net/snmp): exact ground truth.
# NETLAB_PREFIX (default "lsl") names the pair, so parallel labs don't clash.
set -euo pipefail

P=${NETLAB_PREFIX:-lsl}
SRV_NS=$P-srv
CLI_NS=$P-cli
SRV_IF=$P-vs
CLI_IF=$P-vc
SRV_IP=${NETLAB_SRV_IP:-10.203.0.1}
CLI_IP=${NETLAB_CLI_IP:-10.203.0.2}

die() { echo "netlab: $*" >&2; exit 1; }

print_env() {
  echo "SRV_NS=$SRV_NS CLI_NS=$CLI_NS SRV_IP=$SRV_IP CLI_IP=$CLI_IP"
}

down() {
  ip netns del "$SRV_NS" 2>/dev/null || true
  ip netns del "$CLI_NS" 2>/dev/null || true
  ip link del "$SRV_IF" 2>/dev/null || true
}

# drop_input NS PCT: drop PCT% of TCP segments arriving in NS.
drop_input() {
  local ns=$1 pct=$2
  ip netns exec "$ns" nft -f - <<NFT
table inet netlab {
  chain input {
    type filter hook input priority 0; policy accept;
    meta l4proto tcp numgen random mod 100 < $pct counter drop
  }
}
NFT
}

up() {
  local loss_cli=0 loss_srv=0 rate=""
  while [[ $# -gt 0 ]]; do
    case $1 in
      --loss-to-client) loss_cli=$2; shift 2 ;;
      --loss-to-server) loss_srv=$2; shift 2 ;;
      --rate) rate=$2; shift 2 ;;
      *) die "unknown option '$1' (see the header of $0)" ;;
    esac
  done
  [[ $loss_cli =~ ^[0-9]+$ && $loss_cli -le 100 ]] || die "--loss-to-client wants 0..100"
  [[ $loss_srv =~ ^[0-9]+$ && $loss_srv -le 100 ]] || die "--loss-to-server wants 0..100"
  [[ $(id -u) -eq 0 ]] || die "needs root (network namespaces): run with sudo"
  command -v nft >/dev/null || die "nft not found: run tools/install-deps.sh"
  down
  trap 'down; die "setup failed; cleaned up"' ERR
  ip netns add "$SRV_NS"
  ip netns add "$CLI_NS"
  ip link add "$SRV_IF" type veth peer name "$CLI_IF"
  ip link set "$SRV_IF" netns "$SRV_NS"
  ip link set "$CLI_IF" netns "$CLI_NS"
  ip -n "$SRV_NS" addr add "$SRV_IP/24" dev "$SRV_IF"
  ip -n "$CLI_NS" addr add "$CLI_IP/24" dev "$CLI_IF"
  for ns in "$SRV_NS" "$CLI_NS"; do
    ip -n "$ns" link set lo up
  done
  ip -n "$SRV_NS" link set "$SRV_IF" up
  ip -n "$CLI_NS" link set "$CLI_IF" up
  # veth offloads would hand TCP 64 KB super-segments; real NICs on a
  # lossy path see MTU-sized segments, so loss and rate act per packet.
  for pair in "$SRV_NS $SRV_IF" "$CLI_NS $CLI_IF"; do
    set -- $pair
    ip netns exec "$1" ethtool -K "$2" tso off gso off gro off >/dev/null 2>&1 || true
  done
  [[ $loss_cli -gt 0 ]] && drop_input "$CLI_NS" "$loss_cli"
  [[ $loss_srv -gt 0 ]] && drop_input "$SRV_NS" "$loss_srv"
  if [[ -n $rate ]]; then
    ip netns exec "$SRV_NS" tc qdisc add dev "$SRV_IF" root tbf rate "$rate" burst 16kb latency 400ms
  fi
  trap - ERR
  print_env
}

case ${1:-} in
  up) shift; up "$@" ;;
  down) down ;;
  env) print_env ;;
  *) echo "usage: $0 up [--loss-to-client PCT] [--loss-to-server PCT] [--rate RATE] | down | env" >&2; exit 2 ;;
esac
