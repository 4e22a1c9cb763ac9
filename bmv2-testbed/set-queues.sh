#!/usr/bin/env bash
# Set BMv2 egress queue rate and depth per port and priority, over Thrift
# (simple_switch_CLI: set_queue_rate / set_queue_depth). P4Runtime has no
# queue API; BMv2 counts queue depth in packets and rate in packets per second.
#
#   bmv2-testbed/set-queues.sh [options]
#
#   --thrift-port N        simple_switch Thrift port (default 9090)
#   --ports "1 2 ..."      egress ports (required)
#   --priorities "0 .. 7"  priority queues to set (default: all 8, 0..7)
#   --rate-pps N           queue service rate, packets/s
#   --rate-mbps N          ... or Mb/s, converted with --pkt-bytes
#   --depth-pkts N         queue depth, packets
#   --depth-bytes N        ... or bytes, converted with --pkt-bytes (rounded up)
#   --pkt-bytes N          packet size for the conversions (default 1078: a 1024-byte
#                          RoCEv2 payload + Eth/IPv4/UDP/BTH/ICRC)
#   --dry-run              print the CLI commands only
#
# Example: 100 Mb/s and a 200 KB queue on ports 1-3, all priorities:
#   bmv2-testbed/set-queues.sh --ports "1 2 3" --rate-mbps 100 --depth-bytes 200000
#
# The data plane's thresholds (Qth, RED Kmin/Kmax) are bytes and count the
# program's own port_queue_bytes, not BMv2's queue: size the BMv2 queue so that
# it holds at least Qth bytes, or BMv2 drops before fastcnp reacts.
set -euo pipefail

thrift_port=9090
ports=""
priorities="0 1 2 3 4 5 6 7"
rate_pps="" rate_mbps="" depth_pkts="" depth_bytes=""
pkt_bytes=1078
dry_run=0

usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }
die() { echo "set-queues.sh: $*" >&2; exit 2; }
isnum() { [[ "$1" =~ ^[0-9]+$ ]]; }

while (($#)); do
    case "$1" in
        --thrift-port) thrift_port="${2:?}"; shift 2 ;;
        --ports) ports="${2:?}"; shift 2 ;;
        --priorities) priorities="${2:?}"; shift 2 ;;
        --rate-pps) rate_pps="${2:?}"; shift 2 ;;
        --rate-mbps) rate_mbps="${2:?}"; shift 2 ;;
        --depth-pkts) depth_pkts="${2:?}"; shift 2 ;;
        --depth-bytes) depth_bytes="${2:?}"; shift 2 ;;
        --pkt-bytes) pkt_bytes="${2:?}"; shift 2 ;;
        --dry-run) dry_run=1; shift ;;
        -h|--help) usage 0 ;;
        *) echo "set-queues.sh: unknown argument '$1'" >&2; usage 2 ;;
    esac
done

[[ -n "$ports" ]] || die "--ports is required"
isnum "$pkt_bytes" && ((pkt_bytes > 0)) || die "--pkt-bytes must be a positive integer"
if [[ -n "$rate_mbps" ]]; then
    isnum "$rate_mbps" || die "--rate-mbps must be an integer"
    rate_pps=$(( (rate_mbps * 1000000 / 8 + pkt_bytes - 1) / pkt_bytes ))
fi
if [[ -n "$depth_bytes" ]]; then
    isnum "$depth_bytes" || die "--depth-bytes must be an integer"
    depth_pkts=$(( (depth_bytes + pkt_bytes - 1) / pkt_bytes ))
fi
[[ -n "$rate_pps$depth_pkts" ]] || die "nothing to set: give --rate-pps/--rate-mbps and/or --depth-pkts/--depth-bytes"
[[ -z "$rate_pps" ]] || isnum "$rate_pps" || die "--rate-pps must be an integer"
[[ -z "$depth_pkts" ]] || isnum "$depth_pkts" || die "--depth-pkts must be an integer"

commands=""
for port in $ports; do
    isnum "$port" || die "bad port '$port'"
    for prio in $priorities; do
        isnum "$prio" && ((prio < 8)) || die "bad priority '$prio' (0..7)"
        [[ -z "$rate_pps" ]]   || commands+="set_queue_rate $rate_pps $port $prio"$'\n'
        [[ -z "$depth_pkts" ]] || commands+="set_queue_depth $depth_pkts $port $prio"$'\n'
    done
done

if ((dry_run)); then
    printf '%s' "$commands"
    exit 0
fi
if ! command -v simple_switch_CLI >/dev/null 2>&1; then
    cat >&2 <<'MSG'
set-queues.sh: simple_switch_CLI is not on PATH. It ships with BMv2
  (behavioral-model: tools/runtime_CLI.py, installed as simple_switch_CLI;
  needs Python 3 with the thrift module). Docker image p4lang/behavioral-model
  and the p4lang OBS package p4lang-bmv2 include it.
MSG
    exit 2
fi
echo "set-queues.sh: rate ${rate_pps:-unchanged} pkt/s, depth ${depth_pkts:-unchanged} pkts on ports [$ports] priorities [$priorities]"
out="$(printf '%s' "$commands" | simple_switch_CLI --thrift-port "$thrift_port" 2>&1)" || {
    echo "$out" >&2; die "simple_switch_CLI failed (is the switch up on Thrift port $thrift_port?)"; }
if grep -qiE 'error|invalid|exception' <<<"$out"; then
    echo "$out" >&2
    die "simple_switch_CLI reported an error"
fi
echo "set-queues.sh: done"
