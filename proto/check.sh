#!/usr/bin/env bash
# Checks that the generated Go under proto/ is exactly what the pinned
# generators produce: both trees (p4/v1, p4/config/v1 and Stratum's bf.proto via proto/gen.sh, and
# fastcnp/v1 via proto/fastcnp/gen.sh) are regenerated into a scratch copy of
# proto/ and compared byte for byte with the working tree, in both directions
# (a stale, missing or extra file fails). The working tree is not modified,
# and no git state is needed, so it works the same in a fresh CI clone.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "${scratch}"' EXIT

# Copy everything except generated files, so a generated file that no .proto
# produces any more shows up as "only in" the working tree.
mkdir "${scratch}/proto"
tar -C "${here}" --exclude='*.pb.go' -cf - . | tar -C "${scratch}/proto" -xf -
# The copies of gen.sh resolve their root from their own location, so they
# write into the scratch tree.
bash "${scratch}/proto/gen.sh" >/dev/null
bash "${scratch}/proto/fastcnp/gen.sh" >/dev/null

if ! diff -r "${here}" "${scratch}/proto" >/dev/null; then
  echo "proto/check.sh: generated code is stale; run 'make proto' and commit:" >&2
  diff -rq "${here}" "${scratch}/proto" >&2 || true
  exit 1
fi
echo "proto/check.sh: regenerated p4/v1, p4/config/v1, stratum/hal/lib/barefoot and fastcnp/v1 are byte-identical"
