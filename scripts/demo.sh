#!/usr/bin/env bash
# make demo: spec 06 S1 (victim flow under PFC) on network namespaces with the Go
# software switch, run twice -- mode ecn (classic DCQCN marking) then mode fastcnp --
# with a side-by-side table (per-flow throughput against its max-min fair share, PAUSE
# frames, CNPs, ECN marks, drops) and PNG plots (rate per flow and queues over time).
#
#   sudo make demo                      # or: sudo bash scripts/demo.sh
#   TOPO=testbed/topologies/s2-incast.json sudo -E bash scripts/demo.sh
#
# Environment: TOPO (topology file), MODES (default ecn,fastcnp), OUT (results folder,
# default results/demo-<UTC timestamp>), DURATION (Go duration, overrides the topology's).
# Needs: root, Go (make setup), iproute2. Takes about 35 s on 2 cores (build included);
# the switches, agents and fastcnpd run at niceness -10 (the runner's -nice).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

if [[ $EUID -ne 0 ]]; then
    echo "demo: needs root (it creates network namespaces and veth pairs): run 'sudo make demo'" >&2
    exit 1
fi
for tool in go ip; do
    if ! command -v "$tool" >/dev/null 2>&1; then
        echo "demo: '$tool' is not on PATH: run 'make setup' first" >&2
        exit 1
    fi
done

topo="${TOPO:-testbed/topologies/s1-victim.json}"
modes="${MODES:-ecn,fastcnp}"
out="${OUT:-results/demo-$(date -u +%Y%m%d-%H%M%S)}"
bindir="$root/bin"
mkdir -p "$bindir" "$out"

echo "demo: building fastcnp-switch, fastcnp-host, fastcnpd and the testbed runner into bin/"
pkgs=(./cmd/fastcnp-switch ./cmd/fastcnp-host ./testbed/cmd/fastcnp-testbed)
if [[ -f cmd/fastcnpd/main.go ]]; then
    pkgs+=(./cmd/fastcnpd)
else
    echo "demo: cmd/fastcnpd is not there: the runner uses the controller in-process (controller/daemon)"
    rm -f "$bindir/fastcnpd"
fi
go build -o "$bindir/" "${pkgs[@]}"

args=(-topo "$topo" -modes "$modes" -bin "$bindir" -out "$out" -log-level warn)
if [[ -n "${DURATION:-}" ]]; then
    args+=(-duration "$DURATION")
fi
echo "demo: $bindir/fastcnp-testbed ${args[*]}"
"$bindir/fastcnp-testbed" "${args[@]}"
echo "demo: done; per-mode logs, switch configs and raw host statistics are under $out/<mode>/"
