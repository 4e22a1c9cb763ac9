#!/usr/bin/env bash
# Regenerates the Go code of the fastcnpd API (proto/fastcnp/v1/fastcnp.proto):
#   proto/fastcnp/v1/fastcnp.pb.go, proto/fastcnp/v1/fastcnp_grpc.pb.go
#
# Same pinned tools and checks as proto/gen.sh; override the tool paths with
# PROTOC, PROTOC_GEN_GO, PROTOC_GEN_GO_GRPC.
set -euo pipefail

readonly WANT_PROTOC="libprotoc 3.21.12"
readonly WANT_GEN_GO="protoc-gen-go v1.36.12"
readonly WANT_GEN_GO_GRPC="protoc-gen-go-grpc 1.6.0"
readonly MODULE="github.com/fastcnp/fastcnp"

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"

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

fail() { echo "proto/fastcnp/gen.sh: $*" >&2; exit 1; }

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

cd "${root}"
"${protoc_bin}" \
  -I proto \
  --plugin=protoc-gen-go="${gen_go}" \
  --plugin=protoc-gen-go-grpc="${gen_go_grpc}" \
  --go_out=. --go_opt=module="${MODULE}" \
  --go-grpc_out=. --go-grpc_opt=module="${MODULE}" \
  fastcnp/v1/fastcnp.proto

echo "proto/fastcnp/gen.sh: generated Go for fastcnp/v1"
