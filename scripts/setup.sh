#!/usr/bin/env bash
# Installs everything fastcnp needs on a fresh Debian 12 machine (run as root, or with sudo).
# Idempotent: packages already present are not reinstalled, pinned Go tools are rebuilt only
# when their version differs.
set -euo pipefail

# Debian packages, and what in the repo uses them:
#   ca-certificates     HTTPS to the Go module proxy (go mod download, go install)
#   git, make           `make test` (the gofmt check lists files with `git ls-files`)
#   protobuf-compiler   protoc 3.21.12 for `make proto` / `make proto-check`, proto/wirefacts_test.go
#   libprotobuf-dev     google/protobuf/*.proto under /usr/include, imported by the P4Runtime
#                       protos; only a Recommends of protobuf-compiler, so named here
#   iproute2            ip, tc: network namespaces, veth pairs, qdiscs (internal/netns, testbed,
#                       scripts/demo.sh, cmd/fastcnp-host, bmv2-testbed)
#   iputils-ping        ping in the namespace tests (softswitch, cmd/fastcnp-switch)
#   procps              ps, sysctl (namespace test diagnostics, mininet/fastcnp_mininet.py)
#   ethtool             checksum offloads off on veths (bmv2-testbed/mk-veths.sh)
#   tshark              decodes captures: PFC/MAC control, RoCE, CNPs (wire, softswitch,
#                       host/agent/live tests)
#   mininet             the mininet/ testbed (brings python3)
#   etcd-server         etcd 3.4 for fastcnpd's high availability tests (internal/etcdtest starts its own
#                       members on loopback or in namespaces; controller/daemon, cmd/fastcnpd)
# Not installable from Debian 12 and not needed by `make test`: p4c (`make p4`) and BMv2
# simple_switch_grpc (bmv2-testbed/, conformance/bmv2); see bmv2-testbed/README.md.
DEB_PACKAGES=(ca-certificates git make protobuf-compiler libprotobuf-dev iproute2 iputils-ping
  procps ethtool tshark mininet etcd-server)

# Go tools, pinned so that `make proto` regenerates byte-identical code.
PROTOC_GEN_GO_VERSION=v1.36.12
PROTOC_GEN_GO_GRPC_VERSION=v1.6.0

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  # tshark asks whether non-root users may capture: answer no, without a prompt.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $SUDO debconf-set-selections
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  # Mininet recommends Open vSwitch, which cannot run here: our switch replaces it.
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}"
  # The package enables a system etcd on 127.0.0.1:2379; the tests start their own.
  if [[ " ${missing[*]} " == *" etcd-server "* ]] && [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now etcd >/dev/null 2>&1 || true
  fi
fi

# Go itself is not a Debian 12 package at the version go.mod needs: it comes with the
# machine (/usr/local/go). Say so plainly rather than fail on 'go: command not found'.
if ! command -v go >/dev/null 2>&1; then
  echo "setup: 'go' is not on PATH: install Go 1.26 or later (go.mod) and re-run" >&2
  exit 1
fi

# Where `go install` puts binaries: GOBIN if set, else GOPATH/bin (proto/gen.sh looks
# in the same places).
gobin="$(go env GOBIN)"
[ -n "$gobin" ] || gobin="$(go env GOPATH)/bin"
have_version() { # binary, wanted module version
  [ -x "$gobin/$1" ] && go version -m "$gobin/$1" 2>/dev/null | grep -qE "^[[:space:]]+mod[[:space:]].*[[:space:]]$2([[:space:]]|$)"
}
have_version protoc-gen-go "$PROTOC_GEN_GO_VERSION" ||
  go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
have_version protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION" ||
  go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"

go mod download
echo "setup: done (protoc $(protoc --version | cut -d' ' -f2), $(go version | cut -d' ' -f3))"
