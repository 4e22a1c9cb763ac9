#!/usr/bin/env bash
# Launch BMv2 simple_switch_grpc with the fastcnp program on given interfaces.
#
#   bmv2-testbed/run-switch.sh [options] PORT@IFACE [PORT@IFACE ...]
#
#   --json PATH          BMv2 JSON (default: p4src/build/fastcnp.json, from `make p4`)
#   --no-p4              start without a program; the controller pushes JSON + P4Info
#                        over P4Runtime (SetForwardingPipelineConfig)
#   --device-id N        P4Runtime device_id, non-zero (default 1)
#   --grpc-addr ADDR     P4Runtime server address (default 0.0.0.0:9559)
#   --thrift-port N      Thrift port for simple_switch_CLI / set-queues.sh (default 9090)
#   --cpu-port N         packet-in/out port, must match the program's CPU_PORT (default 255)
#   --priority-queues N  egress queues per port (default 8: the program sets
#                        standard_metadata.priority from the traffic_class table)
#   --log-console        BMv2 packet trace on stdout (slow; for debugging)
#   --log-level LEVEL    trace|debug|info|warn|error|off (with --log-console)
#   --dry-run            print the command instead of running it
#
# Example (after mk-veths.sh up 2):
#   sudo bmv2-testbed/run-switch.sh 1@swp1 2@swp2
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"

json="$root/p4src/build/fastcnp.json"
no_p4=0
device_id=1
grpc_addr="0.0.0.0:9559"
thrift_port=9090
cpu_port=255
priority_queues=8
log_console=0
log_level=""
dry_run=0
ports=()

die() { echo "run-switch.sh: $*" >&2; exit 2; }
usage() { sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

while (($#)); do
    case "$1" in
        --json) json="${2:?--json needs a path}"; shift 2 ;;
        --no-p4) no_p4=1; shift ;;
        --device-id) device_id="${2:?}"; shift 2 ;;
        --grpc-addr) grpc_addr="${2:?}"; shift 2 ;;
        --thrift-port) thrift_port="${2:?}"; shift 2 ;;
        --cpu-port) cpu_port="${2:?}"; shift 2 ;;
        --priority-queues) priority_queues="${2:?}"; shift 2 ;;
        --log-console) log_console=1; shift ;;
        --log-level) log_level="${2:?}"; shift 2 ;;
        --dry-run) dry_run=1; shift ;;
        -h|--help) usage 0 ;;
        *@*) ports+=("$1"); shift ;;
        *) echo "run-switch.sh: unknown argument '$1'" >&2; usage 2 ;;
    esac
done

# --- Tools and inputs -------------------------------------------------------
missing=0
if ! command -v simple_switch_grpc >/dev/null 2>&1; then
    cat >&2 <<'MSG'
run-switch.sh: simple_switch_grpc is not on PATH. It is BMv2 built with
  P4Runtime support (behavioral-model --with-pi, PI, grpc). Get it from:
  - Docker image p4lang/behavioral-model (includes simple_switch_grpc), or
  - Ubuntu packages of the p4lang OBS repository (apt-get install p4lang-bmv2), or
  - https://github.com/p4lang/behavioral-model (build with --with-pi).
MSG
    missing=1
fi
if ((!no_p4)) && [[ ! -s "$json" ]]; then
    echo "run-switch.sh: BMv2 JSON '$json' not found: run 'make p4' (needs p4c) or pass --json / --no-p4" >&2
    missing=1
fi
((${#ports[@]})) || { echo "run-switch.sh: no PORT@IFACE given" >&2; missing=1; }
[[ "$device_id" =~ ^[0-9]+$ && "$device_id" -gt 0 ]] || die "--device-id must be a positive integer (P4Runtime device_id 0 is reserved)"
[[ "$cpu_port" =~ ^[0-9]+$ && "$cpu_port" -gt 0 && "$cpu_port" -lt 512 ]] || die "--cpu-port must be 1..511 (9-bit ports)"
for p in "${ports[@]}"; do
    num="${p%%@*}" iface="${p#*@}"
    [[ "$num" =~ ^[0-9]+$ && "$num" -lt 512 ]] || die "bad port number in '$p' (9-bit ports: 0..511)"
    [[ "$num" != "$cpu_port" ]] || die "port $num is the CPU port"
    if ((!dry_run)) && ! ip link show dev "$iface" >/dev/null 2>&1; then
        echo "run-switch.sh: interface '$iface' does not exist (create it with mk-veths.sh up N)" >&2
        missing=1
    fi
done
if ((!dry_run)) && [[ $EUID -ne 0 ]]; then
    echo "run-switch.sh: BMv2 needs root (raw sockets on the interfaces): run with sudo" >&2
    missing=1
fi
((missing == 0)) || ((dry_run)) || exit 2

# --- Command ----------------------------------------------------------------
cmd=(simple_switch_grpc --device-id "$device_id" --thrift-port "$thrift_port")
for p in "${ports[@]}"; do cmd+=(-i "$p"); done
if ((log_console)); then
    cmd+=(--log-console)
    [[ -z "$log_level" ]] || cmd+=(--log-level "$log_level")
fi
if ((no_p4)); then cmd+=(--no-p4); else cmd+=("$json"); fi
# Target-specific options of simple_switch_grpc come after "--".
cmd+=(-- --grpc-server-addr "$grpc_addr" --cpu-port "$cpu_port" --priority-queues "$priority_queues")

echo "run-switch.sh: ${cmd[*]}"
((dry_run)) && exit 0
exec "${cmd[@]}"
