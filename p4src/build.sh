#!/usr/bin/env bash
# Compile the fastcnp v1model program with p4c (BMv2 back end) and check that
# the P4Info p4c emits is the committed one (p4src/fastcnp.p4info.txtpb).
#
#   bash p4src/build.sh          (or: make p4)
#
# Outputs, in p4src/build/:
#   fastcnp.json               the BMv2 configuration (simple_switch_grpc --json / P4Runtime push)
#   fastcnp.p4info.txtpb       the P4Info as p4c emitted it
#   p4c.log                    everything p4c printed
#   p4info.diff                committed P4Info against p4c's, object by object (only when
#                              they differ; cmd/p4infodiff, or diff -u without Go)
#   p4info.order.diff          line-by-line diff when only the order or format differs
#
# Exit status:
#   0  compiled, and p4c's P4Info equals the committed one
#   1  p4c failed (see build/p4c.log)
#   3  p4c is not installed (nothing was done)
#   4  compiled, but p4c's P4Info differs from the committed one in some object (build/p4info.diff):
#      fix the program or the committed P4Info and docs/dataplane.md, never silently
#
# Environment: P4C (default: p4c), P4C_FLAGS (extra flags for p4c).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="$here/build"
p4c="${P4C:-p4c}"
readonly EXIT_COMPILE_FAILED=1 EXIT_NO_P4C=3 EXIT_P4INFO_DIFFERS=4

if ! command -v "$p4c" >/dev/null 2>&1; then
    cat >&2 <<EOF
p4src/build.sh: '$p4c' is not on PATH: the P4 compiler is needed to build the
BMv2 JSON (the committed P4Info is used as is without it).

How to get p4c (1.2.5 or later; what fastcnp is checked with: 1.2.5.16):
  - Docker (from the repository root):
             docker run --rm -v "\$PWD":/src -w /src/p4src p4lang/p4c \\
               p4c --target bmv2 --arch v1model -o build \\
                   --p4runtime-files build/fastcnp.p4info.txtpb v1model/fastcnp.p4
  - Ubuntu:  p4lang packages from the openSUSE Build Service repository
             (https://build.opensuse.org/project/show/home:p4lang), then
             apt-get install p4lang-p4c   (p4lang-bmv2 for simple_switch_grpc)
  - Source:  https://github.com/p4lang/p4c (README "Installing p4c from source")
Then run 'make p4' again, or set P4C=/path/to/p4c.
EOF
    exit "$EXIT_NO_P4C"
fi

mkdir -p "$build"
echo "p4src/build.sh: $("$p4c" --version 2>&1 | head -n 1)"

# p4c resolves the program's relative #includes ("../include/...") from the
# source file's directory; run it from p4src so that messages name p4src paths.
cd "$here"
# shellcheck disable=SC2086 # P4C_FLAGS is a list of flags
if ! "$p4c" --target bmv2 --arch v1model --std p4-16 \
        -o "$build" \
        --p4runtime-files "$build/fastcnp.p4info.txtpb" \
        ${P4C_FLAGS:-} \
        v1model/fastcnp.p4 >"$build/p4c.log" 2>&1; then
    cat "$build/p4c.log" >&2
    echo "p4src/build.sh: p4c failed (log: $build/p4c.log)" >&2
    exit "$EXIT_COMPILE_FAILED"
fi
cat "$build/p4c.log"
if [[ ! -s "$build/fastcnp.json" ]]; then
    echo "p4src/build.sh: p4c succeeded but $build/fastcnp.json is missing" >&2
    exit "$EXIT_COMPILE_FAILED"
fi
echo "p4src/build.sh: wrote $build/fastcnp.json and $build/fastcnp.p4info.txtpb"

# Compare the P4Infos: object by object with cmd/p4infodiff when Go is available
# (an object order that differs from p4c's is reported but is no contract change),
# else line by line.
rm -f "$build/p4info.diff" "$build/p4info.order.diff"
if command -v go >/dev/null 2>&1; then
    set +e
    (cd "$here/.." && go run ./p4src/cmd/p4infodiff "$here/fastcnp.p4info.txtpb" "$build/fastcnp.p4info.txtpb") \
        >"$build/p4info.diff" 2>&1
    status=$?
    set -e
    if ((status == 2)); then
        cat "$build/p4info.diff" >&2
        echo "p4src/build.sh: could not compare the P4Infos (see above)" >&2
        exit "$EXIT_COMPILE_FAILED"
    fi
    if ((status != 0)); then
        cat "$build/p4info.diff" >&2
        echo "p4src/build.sh: the P4Info p4c emitted differs from the committed one" \
             "(object by object: $build/p4info.diff). Reconcile p4src/fastcnp.p4info.txtpb," \
             "the program and docs/dataplane.md, then run 'go test ./p4src/...'." >&2
        exit "$EXIT_P4INFO_DIFFERS"
    fi
    rm -f "$build/p4info.diff"
    if ! diff -u "$here/fastcnp.p4info.txtpb" "$build/fastcnp.p4info.txtpb" >"$build/p4info.order.diff"; then
        echo "p4src/build.sh: same objects, but p4c lists them in another order or format" \
             "($build/p4info.order.diff): copy p4c's file over the committed one to keep them identical" >&2
    else
        rm -f "$build/p4info.order.diff"
    fi
    echo "p4src/build.sh: P4Info matches the committed p4src/fastcnp.p4info.txtpb (object by object)"
    exit 0
fi
if ! diff -u "$here/fastcnp.p4info.txtpb" "$build/fastcnp.p4info.txtpb" >"$build/p4info.diff"; then
    cat "$build/p4info.diff" >&2
    echo "p4src/build.sh: the P4Info p4c emitted differs from the committed one, line by line" \
         "(diff: $build/p4info.diff; with Go installed the comparison is object by object)." \
         "Reconcile p4src/fastcnp.p4info.txtpb, the program and docs/dataplane.md, then run 'go test ./p4src/...'." >&2
    exit "$EXIT_P4INFO_DIFFERS"
fi
rm -f "$build/p4info.diff"
echo "p4src/build.sh: P4Info matches the committed p4src/fastcnp.p4info.txtpb"
