#!/usr/bin/env bash
# Run the conformance vectors (conformance/vectors) against BMv2 simple_switch_grpc:
# the BMv2 runner of conformance/bmv2 creates its own veth pairs (ports 1..7) and
# network namespace, starts its own simple_switch_grpc, pushes the compiled program
# over P4Runtime and runs every target-neutral vector (docs/conformance.md).
#
#   sudo bmv2-testbed/run-conformance.sh [options] [-- extra go test flags]
#
#   --json PATH          BMv2 JSON (default: $FASTCNP_BMV2_JSON, else p4src/build/fastcnp.json
#                        from `make p4`)
#   --binary PATH        switch binary with simple_switch_grpc's command line
#                        (default: simple_switch_grpc on PATH)
#   --grpc-addr ADDR     P4Runtime address of the switch the runner starts
#                        (default 127.0.0.1:9559; stop other switches using it first)
#   --cli PATH           BMv2's Thrift CLI, through which the runner writes and reads
#                        registers (default: simple_switch_CLI on PATH; 'none': the
#                        vectors that @requires registers are skipped)
#   --thrift-port N      Thrift port for the switch and the CLI (default: theirs, 9090)
#   --run REGEXP         only the vectors whose subtest name matches (go test -run BMv2/REGEXP)
#   --dry-run            print the command instead of running it
#
# Stop a switch started by run-switch.sh first: the runner uses the default Thrift
# port 9090 and gRPC 127.0.0.1:9559. Vectors tagged @go-only or @requires are skipped
# with their reason, but @requires registers runs when the CLI works (the *-preset
# vectors: register presets instead of dequeue timing, docs/conformance.md).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"

json="${FASTCNP_BMV2_JSON:-$root/p4src/build/fastcnp.json}"
binary=""
grpc_addr="127.0.0.1:9559"
run=""
cli=""
thrift_port=""
dry_run=0
extra=()

die() { echo "run-conformance.sh: $*" >&2; exit 2; }
usage() { sed -n '2,25p' "$0" | sed 's/^# \{0,1\}//'; exit "${1:-0}"; }

while (($#)); do
    case "$1" in
        --json) json="${2:?--json needs a path}"; shift 2 ;;
        --binary) binary="${2:?--binary needs a path}"; shift 2 ;;
        --grpc-addr) grpc_addr="${2:?--grpc-addr needs an address}"; shift 2 ;;
        --run) run="${2:?--run needs a regular expression}"; shift 2 ;;
        --cli) cli="${2:?--cli needs a path or none}"; shift 2 ;;
        --thrift-port) thrift_port="${2:?--thrift-port needs a port}"; shift 2 ;;
        --dry-run) dry_run=1; shift ;;
        -h|--help) usage 0 ;;
        --) shift; extra=("$@"); break ;;
        *) echo "run-conformance.sh: unknown argument '$1'" >&2; usage 2 ;;
    esac
done

# --- Tools and inputs -------------------------------------------------------
missing=0
if ! command -v go >/dev/null 2>&1; then
    echo "run-conformance.sh: 'go' is not on PATH: the runner is a Go test (Go 1.26; 'make setup')" >&2
    missing=1
fi
if [[ -n "$binary" ]]; then
    [[ "$binary" == /* ]] || binary="$PWD/$binary"   # go test runs in the package directory
    [[ -x "$binary" ]] || { echo "run-conformance.sh: --binary '$binary' is not an executable file" >&2; missing=1; }
elif ! command -v simple_switch_grpc >/dev/null 2>&1; then
    cat >&2 <<'MSG'
run-conformance.sh: simple_switch_grpc is not on PATH. It is BMv2 built with
  P4Runtime support (behavioral-model --with-pi, PI, grpc). Get it from:
  - Docker image p4lang/behavioral-model (includes simple_switch_grpc), or
  - Ubuntu packages of the p4lang OBS repository (apt-get install p4lang-bmv2), or
  - https://github.com/p4lang/behavioral-model (build with --with-pi).
  (--binary runs the runner against another switch with the same command line.)
MSG
    missing=1
fi
# The Thrift CLI is optional: without it the register vectors are skipped.
if [[ "$cli" != "none" ]]; then
    cli_path="${cli:-simple_switch_CLI}"
    if ! command -v "$cli_path" >/dev/null 2>&1; then
        echo "run-conformance.sh: note: '$cli_path' not found: the vectors that @requires registers will be skipped (--cli PATH)" >&2
    elif ! "$cli_path" --help >/dev/null 2>&1; then
        echo "run-conformance.sh: note: '$cli_path --help' fails (its Python modules, e.g. thrift, missing?): the vectors that @requires registers will be skipped" >&2
    fi
    if [[ -n "$cli" && "$cli" != /* ]] && [[ -e "$cli" ]]; then
        cli="$PWD/$cli"   # go test runs in the package directory
    fi
fi
[[ -z "$thrift_port" || "$thrift_port" =~ ^[0-9]+$ ]] || die "--thrift-port must be a number"
[[ "$json" == /* ]] || json="$PWD/$json"
if [[ ! -s "$json" ]]; then
    echo "run-conformance.sh: BMv2 JSON '$json' not found: run 'make p4' (needs p4c; p4src/build.sh says how to get it) or pass --json" >&2
    missing=1
fi
if ! command -v ip >/dev/null 2>&1; then
    echo "run-conformance.sh: 'ip' (iproute2) is not installed: apt-get install iproute2 (the runner makes veth pairs)" >&2
    missing=1
fi
if ((!dry_run)) && [[ $EUID -ne 0 ]]; then
    echo "run-conformance.sh: needs root (veth pairs, network namespaces, AF_PACKET): run with sudo" >&2
    missing=1
fi
((missing == 0)) || ((dry_run)) || exit 2

# --- Command ----------------------------------------------------------------
pattern="BMv2"
[[ -z "$run" ]] || pattern="BMv2/$run"
cmd=(go test ./conformance/bmv2/ -count=1 -v -run "$pattern" -bmv2 -bmv2-grpc "$grpc_addr")
[[ -z "$binary" ]] || cmd+=(-bmv2-binary "$binary")
[[ -z "$cli" ]] || cmd+=(-bmv2-cli "$cli")
[[ -z "$thrift_port" ]] || cmd+=(-bmv2-thrift-port "$thrift_port")
cmd+=("${extra[@]}")

echo "run-conformance.sh: FASTCNP_BMV2_JSON=$json ${cmd[*]}"
((dry_run)) && exit 0
cd "$root"
FASTCNP_BMV2_JSON="$json" exec "${cmd[@]}"
