#!/usr/bin/env bash
# An emulated cluster on one machine: HOSTS network namespaces joined by a bridge, each behind
# its own veth (optionally rate-limited both ways with `tc … tbf`), and Open MPI's TCP transport
# only, so that every byte between ranks crosses a link that can be measured, slowed or cut.
#
#   scripts/cluster.sh up [-n HOSTS] [--rate RATE]     make the hosts (idempotent: remakes them)
#   scripts/cluster.sh down                            remove everything this script made
#   scripts/cluster.sh counters                        bytes each host sent and received
#   scripts/cluster.sh cut HOST | mend HOST            take a host's link down, or up again
#   scripts/cluster.sh run [-n HOSTS] [--rate RATE] [--private DIR] [--timeout S]
#                          [--counters FILE] [--keep] -- PROGRAM [ARGS…]
#       makes the hosts, runs `mpirun -n HOSTS PROGRAM ARGS…` from host 1 with one rank a host,
#       and removes the hosts when it ends, however it ends (a trap). Exits with mpirun's status
#       (124 when --timeout ran out, as timeout(1)).
#
# Host N is the namespace `pc-hN` (also its host name) at 10.99.0.N/24, a private test network that exists only
# inside this machine; its link is the veth pair `pc-vN` (this side, where its counters are read)
# and `eth0` (inside the host). RATE is tc's (`100mbit`, `1gbit`); it is applied on both ends
# of every veth, so it holds each way. `--private DIR` gives every host but host 1 an empty
# DIR of its own (a tmpfs in the host's own mount namespace), so that only rank 0 sees the
# input and the output, as on a cluster without a shared file system. `--counters FILE` writes
# `HOST RX_BYTES TX_BYTES` for every host's link after the run (as seen from the bridge: RX is
# what the host sent).
#
# A host whose link is cut is given up in seconds: each host's namespace retransmits 5 times
# (net.ipv4.tcp_retries2, about 13 s, instead of Linux's 15 and about 15 minutes) and mpirun
# runs with Open MPI's daemon keepalive at 5 s + 5 × 1 s (instead of 300 s + 9 × 20 s), so that
# a job aborted by paracrypt's watchdog ends even when a host cannot be told.
#
# Needs root (network namespaces), iproute2 and Open MPI. `up`, `down` and `run` on one machine
# take turns (a lock), since they share the names above; `counters`, `cut` and `mend` act on a
# running cluster at once. The launch agent Open MPI uses
# instead of ssh is written to a temporary directory: it maps a host's address to
# `ip netns exec pc-hN` and runs the rest of its command there.
set -euo pipefail

PREFIX=pc
NET=10.99.0
BRIDGE=${PREFIX}-br
LOCK=/run/paracrypt-cluster.lock

die() {
  echo "cluster.sh: $*" >&2
  exit 2
}

[ "$(id -u)" -eq 0 ] || die "needs root: it creates network namespaces, veths and a bridge (run it as root, e.g. with sudo)"
command -v ip >/dev/null || die "needs iproute2 (the ip command)"

hosts_made() {
  ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}-h[0-9]+$" | sort -V || true
}

down() {
  local ns
  for ns in $(hosts_made); do
    ip netns del "$ns" 2>/dev/null || true
  done
  # A veth dies with its namespace's end; remove any left on this side all the same.
  local link
  for link in $(ip -o link show 2>/dev/null | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E "^${PREFIX}-v[0-9]+$" || true); do
    ip link del "$link" 2>/dev/null || true
  done
  ip link del "$BRIDGE" 2>/dev/null || true
}

# up HOSTS RATE
up() {
  local hosts=$1 rate=$2 n
  [[ "$hosts" =~ ^[0-9]+$ ]] && [ "$hosts" -ge 1 ] && [ "$hosts" -le 200 ] ||
    die "-n takes a number of hosts from 1 to 200, not '$hosts'"
  down
  ip link add "$BRIDGE" type bridge
  ip link set "$BRIDGE" up
  for n in $(seq 1 "$hosts"); do
    local ns=${PREFIX}-h$n veth=${PREFIX}-v$n
    ip netns add "$ns"
    ip link add "$veth" type veth peer name eth0 netns "$ns"
    ip link set "$veth" master "$BRIDGE"
    ip link set "$veth" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$NET.$n/24" dev eth0
    ip -n "$ns" link set eth0 up
    # A host that cannot be reached is given up in seconds, not Linux's ~15 minutes of
    # retransmissions (tcp_retries2 15): 5 retries from a 200 ms timeout, about 13 s.
    # (/proc/sys/net is the writer's namespace's; no need for procps' sysctl.)
    ip netns exec "$ns" sh -c 'echo 5 >/proc/sys/net/ipv4/tcp_retries2'
    if [ -n "$rate" ]; then
      # tbf shapes what leaves an interface: on both ends, so the link is RATE each way.
      tc qdisc add dev "$veth" root tbf rate "$rate" burst 256kb latency 100ms
      ip netns exec "$ns" tc qdisc add dev eth0 root tbf rate "$rate" burst 256kb latency 100ms
    fi
  done
}

counters() {
  local ns n
  for ns in $(hosts_made); do
    n=${ns#"${PREFIX}"-h}
    echo "$ns $(cat "/sys/class/net/${PREFIX}-v$n/statistics/rx_bytes") $(cat "/sys/class/net/${PREFIX}-v$n/statistics/tx_bytes")"
  done
}

link_of() {
  [[ "${1:-}" =~ ^[0-9]+$ ]] || die "name a host by its number (1 for ${PREFIX}-h1)"
  ip link show "${PREFIX}-v$1" >/dev/null 2>&1 || die "no host $1 (is the cluster up?)"
  echo "${PREFIX}-v$1"
}

run() {
  local hosts=3 rate="" private="" limit=600 counters_file="" keep=0
  while [ $# -gt 0 ]; do
    case "$1" in
      -n) hosts=${2:?-n needs a number}; shift 2 ;;
      --rate) rate=${2:?--rate needs a rate}; shift 2 ;;
      --private) private=${2:?--private needs a directory}; shift 2 ;;
      --timeout) limit=${2:?--timeout needs seconds}; shift 2 ;;
      --counters) counters_file=${2:?--counters needs a file}; shift 2 ;;
      --keep) keep=1; shift ;;
      --) shift; break ;;
      *) die "run: unknown option '$1' (the command follows --)" ;;
    esac
  done
  [ $# -gt 0 ] || die "run: no command (give it after --)"
  command -v mpirun >/dev/null || die "needs Open MPI's mpirun (Debian: openmpi-bin)"
  if [ -n "$private" ]; then
    [ -d "$private" ] || die "--private: '$private' is not a directory"
    private=$(cd "$private" && pwd -P)
  fi

  local tmp
  tmp=$(mktemp -d /tmp/paracrypt-cluster.XXXXXX)
  # shellcheck disable=SC2064 # expand now: the trap must clean this run's directory
  trap "[ $keep -eq 1 ] || down; rm -rf '$tmp'" EXIT
  trap 'exit 130' INT
  trap 'exit 143' TERM
  up "$hosts" "$rate"

  local n
  for n in $(seq 1 "$hosts"); do echo "$NET.$n slots=1"; done >"$tmp/hostfile"
  # Open MPI runs `AGENT HOST COMMAND…` where it would run `ssh HOST COMMAND…`: COMMAND is a
  # shell command line (it sets PATH and starts orted).
  cat >"$tmp/agent" <<EOF
#!/bin/sh
# Open MPI's launch agent for the emulated cluster: runs COMMAND in host HOST's namespace.
host=\$1; shift
case "\$host" in
  $NET.*) ns=${PREFIX}-h\${host#$NET.} ;;
  *) echo "cluster agent: unknown host \$host" >&2; exit 255 ;;
esac
# The host's own name (a UTS namespace) and, with --private, a mount namespace of its own
# where DIR is an empty tmpfs.
exec ip netns exec "\$ns" unshare --uts --mount --propagation private sh -c '
  hostname "\$0" && { [ -z "\$1" ] || mount -t tmpfs paracrypt-private "\$1"; } && exec sh -c "\$2"
' "\$ns" '$private' "\$*"
EOF
  chmod +x "$tmp/agent"

  local status=0
  timeout -k 10 "$limit" ip netns exec "${PREFIX}-h1" unshare --uts \
    sh -c 'hostname "$0" && exec "$@"' "${PREFIX}-h1" \
    mpirun --allow-run-as-root --hostfile "$tmp/hostfile" -n "$hosts" --map-by node \
    --mca plm_rsh_agent "$tmp/agent" --mca plm_rsh_no_tree_spawn 1 \
    --mca btl tcp,self --mca btl_tcp_if_include "$NET.0/24" \
    --mca oob_tcp_if_include "$NET.0/24" \
    --mca oob_tcp_keepalive_time 5 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 5 \
    "$@" || status=$?
  if [ -n "$counters_file" ]; then counters >"$counters_file"; fi
  return "$status"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
  up | down | run)
    exec 9>"$LOCK"
    flock 9
    ;;
esac
case "$cmd" in
  up)
    hosts=3 rate=""
    while [ $# -gt 0 ]; do
      case "$1" in
        -n) hosts=${2:?-n needs a number}; shift 2 ;;
        --rate) rate=${2:?--rate needs a rate}; shift 2 ;;
        *) die "up: unknown option '$1'" ;;
      esac
    done
    up "$hosts" "$rate"
    ;;
  down) down ;;
  counters) counters ;;
  cut) ip link set "$(link_of "${1:-}")" down ;;
  mend) ip link set "$(link_of "${1:-}")" up ;;
  run) run "$@" ;;
  *) die "usage: cluster.sh up|down|counters|cut HOST|mend HOST|run [options] -- PROGRAM [ARGS…]" ;;
esac
