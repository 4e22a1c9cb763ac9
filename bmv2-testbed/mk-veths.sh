#!/usr/bin/env bash
# Create (or remove) N hosts for a one-switch BMv2 testbed: network namespaces
# fcnp-h1..fcnp-hN, each with eth0 = one end of a veth pair whose other end,
# swp1..swpN, stays in the root namespace for BMv2 (-i i@swpi).
#
#   sudo bmv2-testbed/mk-veths.sh up N      create hosts 1..N
#   sudo bmv2-testbed/mk-veths.sh down N    remove them
#   bmv2-testbed/mk-veths.sh show N         print the plan (MACs, IPs, BMv2 ports)
#
# Host i: IPv4 10.0.0.i/24 on eth0. ARP is bridged only by l2_forward entries
# (docs/dataplane.md Ingress step 5), which nothing installs here, so every host
# gets static neighbours for the other hosts: their IP -> the MAC of its own port
# swpi (set_nexthop rewrites both MACs on the way). Route entries for the
# switch: ipv4_route 10.0.0.j/32 -> set_nexthop(port j, MAC(swpj), MAC(host j eth0)).
set -euo pipefail

ns_prefix="${FASTCNP_NS_PREFIX:-fcnp-h}"
die() { echo "mk-veths.sh: $*" >&2; exit 2; }
usage() { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

action="${1:-}"; n="${2:-}"
[[ "$action" =~ ^(up|down|show)$ ]] || usage 2
[[ "$n" =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 250)) || die "N must be 1..250"

# Deterministic MACs: hosts 02:fc:00:00:00:ii, switch ports 02:fc:00:00:01:ii.
host_mac() { printf '02:fc:00:00:00:%02x' "$1"; }
swp_mac()  { printf '02:fc:00:00:01:%02x' "$1"; }
host_ip()  { echo "10.0.0.$1"; }

if [[ "$action" == show ]]; then
    printf '%-5s %-10s %-8s %-18s %-12s %-18s\n' host namespace bmv2 host-mac host-ip switch-mac
    for ((i = 1; i <= n; i++)); do
        printf '%-5s %-10s %-8s %-18s %-12s %-18s\n' "h$i" "$ns_prefix$i" "$i@swp$i" "$(host_mac "$i")" "$(host_ip "$i")" "$(swp_mac "$i")"
    done
    exit 0
fi

command -v ip >/dev/null 2>&1 || die "'ip' (iproute2) is not installed: apt-get install iproute2"
[[ $EUID -eq 0 ]] || die "needs root (network namespaces, veths): run with sudo"

if [[ "$action" == down ]]; then
    for ((i = 1; i <= n; i++)); do
        ip link del "swp$i" 2>/dev/null || true
        ip netns del "$ns_prefix$i" 2>/dev/null || true
    done
    echo "mk-veths.sh: removed hosts 1..$n"
    exit 0
fi

have_ethtool=1
command -v ethtool >/dev/null 2>&1 || { have_ethtool=0; echo "mk-veths.sh: ethtool not found (apt-get install ethtool): checksum offloads stay on, so captures may show bad UDP/IP checksums" >&2; }

for ((i = 1; i <= n; i++)); do
    ns="$ns_prefix$i"
    ip netns add "$ns" 2>/dev/null || die "namespace $ns exists: run '$0 down $n' first"
    ip link add "swp$i" type veth peer name "fcnp-h$i-eth0"
    ip link set "fcnp-h$i-eth0" netns "$ns"
    ip -n "$ns" link set "fcnp-h$i-eth0" name eth0
    ip link set "swp$i" address "$(swp_mac "$i")" mtu 9000 up
    ip -n "$ns" link set eth0 address "$(host_mac "$i")" mtu 9000 up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$(host_ip "$i")/24" dev eth0
    # Keep BMv2's ports quiet: no IPv6 (router solicitations, DAD).
    sysctl -q -w "net.ipv6.conf.swp$i.disable_ipv6=1" || true
    ip netns exec "$ns" sysctl -q -w net.ipv6.conf.all.disable_ipv6=1 || true
    if ((have_ethtool)); then
        ethtool -K "swp$i" tx off rx off >/dev/null 2>&1 || true
        ip netns exec "$ns" ethtool -K eth0 tx off rx off >/dev/null 2>&1 || true
    fi
done
for ((i = 1; i <= n; i++)); do
    for ((j = 1; j <= n; j++)); do
        ((i == j)) && continue
        ip -n "$ns_prefix$i" neigh replace "$(host_ip "$j")" lladdr "$(swp_mac "$i")" dev eth0 nud permanent
    done
done
echo "mk-veths.sh: hosts 1..$n up; BMv2 interfaces:" $(for ((i = 1; i <= n; i++)); do printf '%s ' "$i@swp$i"; done)
