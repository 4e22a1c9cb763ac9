#!/usr/bin/env bash
# Regenerates the Go code for the P4Runtime schema under proto/, and for Stratum's
# Tofino device config.
#
# Output lands next to the .proto files:
#   proto/p4/v1/{p4runtime,p4data}.pb.go, proto/p4/v1/p4runtime_grpc.pb.go
#   proto/p4/config/v1/{p4info,p4types}.pb.go
#   proto/stratum/hal/lib/barefoot/bf.pb.go
# google/rpc/*.proto are given to protoc for import resolution only: their Go
# types come from google.golang.org/genproto (see proto/README.md).
#
# The tool versions are pinned so that regeneration is byte-identical; the
# script refuses to run with anything else. Override the tool paths with
# PROTOC, PROTOC_GEN_GO, PROTOC_GEN_GO_GRPC if they are not on PATH/~/go/bin.
set -euo pipefail

readonly WANT_PROTOC="libprotoc 3.21.12"
readonly WANT_GEN_GO="protoc-gen-go v1.36.12"
readonly WANT_GEN_GO_GRPC="protoc-gen-go-grpc 1.6.0"
readonly MODULE="github.com/fastcnp/fastcnp"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/.." && pwd)"

gobin="$(go env GOBIN 2>/dev/null || true)"
if [[ -z "${gobin}" ]]; then
  gobin="$(go env GOPATH 2>/dev/null || echo "${HOME}/go")/bin"
fi

find_tool() { # name, override
  if [[ -n "$2" ]]; then echo "$2"; return; fi
  if [[ -x "${gobin}/$1" ]]; then echo "${gobin}/$1"; return; fi
  command -v "$1" || true
}

protoc_bin="${PROTOC:-$(command -v protoc || true)}"
gen_go="$(find_tool protoc-gen-go "${PROTOC_GEN_GO:-}")"
gen_go_grpc="$(find_tool protoc-gen-go-grpc "${PROTOC_GEN_GO_GRPC:-}")"

fail() { echo "proto/gen.sh: $*" >&2; exit 1; }

check_version() { # tool name, tool path, wanted version line, install hint
  [[ -n "$2" && -x "$2" ]] || fail "$1 not found (looked for '${2:-$1}'); $4"
  local got
  got="$("$2" --version 2>&1 | head -n1)"
  [[ "${got}" == "$3" ]] || fail "$2 reports '${got}', want '$3'; $4"
}

check_version protoc "${protoc_bin}" "${WANT_PROTOC}" \
  "install Debian 12's protobuf-compiler (apt-get install protobuf-compiler)"
check_version protoc-gen-go "${gen_go}" "${WANT_GEN_GO}" \
  "run: go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12"
check_version protoc-gen-go-grpc "${gen_go_grpc}" "${WANT_GEN_GO_GRPC}" \
  "run: go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.0"

# Well-known types (google/protobuf/any.proto) ship with Debian's protoc.
wkt_dir="${PROTOC_INCLUDE:-/usr/include}"
[[ -f "${wkt_dir}/google/protobuf/any.proto" ]] ||
  fail "google/protobuf/any.proto not found under ${wkt_dir}; set PROTOC_INCLUDE"

cd "${root}"
# Only p4 files are generated; relative paths keep the output independent of
# where the checkout lives.
"${protoc_bin}" \
  -I proto -I "${wkt_dir}" \
  --plugin=protoc-gen-go="${gen_go}" \
  --plugin=protoc-gen-go-grpc="${gen_go_grpc}" \
  --go_out=. --go_opt=module="${MODULE}" \
  --go-grpc_out=. --go-grpc_opt=module="${MODULE}" \
  p4/v1/p4runtime.proto p4/v1/p4data.proto \
  p4/config/v1/p4info.proto p4/config/v1/p4types.proto \
  stratum/hal/lib/barefoot/bf.proto

echo "proto/gen.sh: generated Go for p4/v1, p4/config/v1 and stratum/hal/lib/barefoot"
