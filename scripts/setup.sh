#!/usr/bin/env bash
# Installs everything fastcnp needs on a fresh Debian 12 machine (run as root, or with sudo).
# Idempotent: packages already present are not reinstalled, pinned Go tools are rebuilt only
# when their version differs.
set -euo pipefail

# Debian packages: protoc for `make proto`, iproute2 for network namespaces and veth pairs,
# tshark to check captures (PFC, RoCE), Mininet + scapy for the mininet/ testbed.
DEB_PACKAGES=(protobuf-compiler iproute2 tshark mininet python3-scapy iputils-ping ethtool)

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
fi

gobin="$(go env GOPATH)/bin"
have_version() { # binary, wanted version
  [ -x "$gobin/$1" ] && go version -m "$gobin/$1" 2>/dev/null | grep -q "mod.*$2"
}
have_version protoc-gen-go "$PROTOC_GEN_GO_VERSION" ||
  go install "google.golang.org/protobuf/cmd/protoc-gen-go@$PROTOC_GEN_GO_VERSION"
have_version protoc-gen-go-grpc "$PROTOC_GEN_GO_GRPC_VERSION" ||
  go install "google.golang.org/grpc/cmd/protoc-gen-go-grpc@$PROTOC_GEN_GO_GRPC_VERSION"

go mod download
echo "setup: done (protoc $(protoc --version | cut -d' ' -f2), $(go version | cut -d' ' -f3))"
