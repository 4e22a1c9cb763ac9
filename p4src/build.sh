#!/usr/bin/env bash
# Compile the fastcnp P4 programs with p4c and check that each P4Info p4c emits is
# the committed one.
#
#   bash p4src/build.sh [PROFILE...]      (or: make p4)
#
# Profiles (default: every profile whose compiler is present):
#   v1model   v1model/fastcnp.p4, p4c's BMv2 back end (p4c-bm2-ss)
#             -> p4src/fastcnp.p4info.txtpb
#   tofino    tna/fastcnp.p4 for Tofino 1 (tna), p4c's Tofino back end (p4c-barefoot)
#             -> p4src/tna/fastcnp-tofino.p4info.txtpb
#   tofino2   tna/fastcnp.p4 for Tofino 2 (t2na), p4c-barefoot
#             -> p4src/tna/fastcnp-tofino2.p4info.txtpb
#
# Outputs, in p4src/build/ (v1model) and p4src/build/PROFILE/ (Tofino):
#   fastcnp.json               the BMv2 configuration (v1model)
#   fastcnp.conf, bf-rt.json, pipe/context.json, pipe/tofino.bin ...
#                              p4c-barefoot's output: fastcnpd builds Stratum's
#                              BfPipelineConfig from this directory (docs/tofino.md)
#   fastcnp.p4info.txtpb       the P4Info as p4c emitted it
#   p4c.log                    everything p4c printed
#   p4info.diff                committed P4Info against p4c's, object by object (only
#                              when they differ; cmd/p4infodiff, or diff -u without Go)
#   p4info.order.diff          line-by-line diff when only the order or format differs
#
# Exit status:
#   0  every profile built compiled, and its P4Info equals the committed one
#   1  p4c failed for a profile (see its p4c.log; for tofino/tofino2 the P4Info the
#      front end wrote is still compared and the result printed)
#   3  no compiler for any requested profile (nothing was done)
#   4  compiled, but a P4Info differs from the committed one in some object
#      (p4info.diff): fix the program or the committed P4Info and the docs, never silently
#
# Environment: P4C (default: p4c), P4C_FLAGS (extra flags for every p4c run).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
p4c="${P4C:-p4c}"
readonly EXIT_COMPILE_FAILED=1 EXIT_NO_P4C=3 EXIT_P4INFO_DIFFERS=4

# has_backend PROFILE: whether p4c can compile for the profile. p4c's driver runs
# the back end of --target; it is present when its binary is next to p4c or on PATH.
has_backend() {
    local bin
    command -v "$p4c" >/dev/null 2>&1 || return 1
    case "$1" in
        v1model) bin=p4c-bm2-ss ;;
        tofino|tofino2) bin=p4c-barefoot ;;
    esac
    [[ -x "$(dirname "$(command -v "$p4c")")/$bin" ]] || command -v "$bin" >/dev/null 2>&1
}

no_p4c() {
    cat >&2 <<EOF
p4src/build.sh: no compiler for ${1}: '$p4c' (P4C) with its back end
($2) is not on PATH; the committed P4Info is used as is without it.

How to get p4c:
  - v1model (BMv2 back end, 1.2.5 or later; fastcnp is checked with 1.2.5.16):
      Docker:  docker run --rm -v "\$PWD":/src -w /src/p4src p4lang/p4c p4c --target bmv2 ...
      Ubuntu:  p4lang packages (openSUSE Build Service, home:p4lang): apt-get install p4lang-p4c
      Source:  https://github.com/p4lang/p4c (README "Installing p4c from source")
  - tofino, tofino2 (p4c-barefoot): built from p4lang/p4c's backends/tofino with
      -DENABLE_TOFINO=ON (docs/tofino.md "Compiling"); not packaged.
Then run 'make p4' again, or set P4C=/path/to/p4c.
EOF
}

# compare COMMITTED EMITTED OUTDIR: object by object with cmd/p4infodiff when Go is
# available (an order that differs from p4c's is reported but is no contract
# change), else line by line. Returns 0 (same), EXIT_P4INFO_DIFFERS or
# EXIT_COMPILE_FAILED (could not compare).
compare() {
    local committed="$1" emitted="$2" out="$3" status
    rm -f "$out/p4info.diff" "$out/p4info.order.diff"
    if command -v go >/dev/null 2>&1; then
        set +e
        (cd "$here/.." && go run ./p4src/cmd/p4infodiff "$committed" "$emitted") >"$out/p4info.diff" 2>&1
        status=$?
        set -e
        if ((status == 2)); then
            cat "$out/p4info.diff" >&2
            echo "p4src/build.sh: could not compare the P4Infos (see above)" >&2
            return "$EXIT_COMPILE_FAILED"
        fi
        if ((status != 0)); then
            cat "$out/p4info.diff" >&2
            echo "p4src/build.sh: the P4Info p4c emitted differs from $committed" \
                 "(object by object: $out/p4info.diff). Reconcile the committed P4Info," \
                 "the program and the docs, then run 'go test ./p4src/...'." >&2
            return "$EXIT_P4INFO_DIFFERS"
        fi
        rm -f "$out/p4info.diff"
        if ! diff -u "$committed" "$emitted" >"$out/p4info.order.diff"; then
            echo "p4src/build.sh: same objects, but p4c lists them in another order or format" \
                 "($out/p4info.order.diff): copy p4c's file over the committed one to keep them identical" >&2
        else
            rm -f "$out/p4info.order.diff"
        fi
        echo "p4src/build.sh: P4Info matches the committed ${committed#"$here/"} (object by object)"
        return 0
    fi
    if ! diff -u "$committed" "$emitted" >"$out/p4info.diff"; then
        cat "$out/p4info.diff" >&2
        echo "p4src/build.sh: the P4Info p4c emitted differs from $committed, line by line" \
             "(diff: $out/p4info.diff; with Go installed the comparison is object by object)." >&2
        return "$EXIT_P4INFO_DIFFERS"
    fi
    rm -f "$out/p4info.diff"
    echo "p4src/build.sh: P4Info matches the committed ${committed#"$here/"}"
    return 0
}

# build PROFILE: compile one profile and compare its P4Info.
build() {
    local profile="$1" out src committed
    local -a args
    case "$profile" in
        v1model)
            out="$here/build"
            src=v1model/fastcnp.p4
            committed="$here/fastcnp.p4info.txtpb"
            args=(--target bmv2 --arch v1model --std p4-16)
            ;;
        tofino|tofino2)
            out="$here/build/$profile"
            src=tna/fastcnp.p4
            committed="$here/tna/fastcnp-$profile.p4info.txtpb"
            if [[ "$profile" == tofino ]]; then
                args=(--target tofino --arch tna)
            else
                args=(--target tofino2 --arch t2na)
            fi
            # The P4Info Stratum and fastcnpd read: P4Runtime's standard externs.
            args+=(--std p4-16 -g --p4runtime-force-std-externs)
            ;;
    esac
    mkdir -p "$out"
    echo "p4src/build.sh: $profile: $("$p4c" --version 2>&1 | head -n 1)"
    # p4c resolves the program's relative #includes from the source file's
    # directory; run it from p4src so that messages name p4src paths.
    # The log is written beside the output directory and moved in afterwards:
    # p4c-barefoot's driver empties its -o directory when it starts.
    local log="$here/build/.p4c-$profile.log" status=0
    # shellcheck disable=SC2086 # P4C_FLAGS is a list of flags
    (cd "$here" && "$p4c" "${args[@]}" -o "$out" \
        --p4runtime-files "$out/fastcnp.p4info.txtpb" \
        ${P4C_FLAGS:-} "$src") >"$log" 2>&1 || status=$?
    mkdir -p "$out"
    mv "$log" "$out/p4c.log"
    if ((status != 0)); then
        cat "$out/p4c.log" >&2
        echo "p4src/build.sh: $profile: p4c failed with status $status (log: $out/p4c.log)" >&2
        # p4c-barefoot writes the P4Info in its front end, before a back-end
        # failure: compare it anyway (the exit status stays the compile's).
        if [[ "$profile" != v1model && -s "$out/fastcnp.p4info.txtpb" ]]; then
            compare "$committed" "$out/fastcnp.p4info.txtpb" "$out" || true
        fi
        return "$EXIT_COMPILE_FAILED"
    fi
    cat "$out/p4c.log"
    if [[ "$profile" == v1model && ! -s "$out/fastcnp.json" ]]; then
        echo "p4src/build.sh: p4c succeeded but $out/fastcnp.json is missing" >&2
        return "$EXIT_COMPILE_FAILED"
    fi
    echo "p4src/build.sh: $profile: wrote $out"
    compare "$committed" "$out/fastcnp.p4info.txtpb" "$out"
}

profiles=("$@")
explicit=1
if ((${#profiles[@]} == 0)); then
    profiles=(v1model tofino tofino2)
    explicit=0
fi
built=0
worst=0
for profile in "${profiles[@]}"; do
    case "$profile" in
        v1model|tofino|tofino2) ;;
        *) echo "p4src/build.sh: unknown profile '$profile' (v1model, tofino, tofino2)" >&2; exit 2 ;;
    esac
    if ! has_backend "$profile"; then
        backend=p4c-bm2-ss
        [[ "$profile" == v1model ]] || backend=p4c-barefoot
        if ((explicit)); then
            no_p4c "$profile" "$backend"
            worst=$EXIT_NO_P4C
        else
            echo "p4src/build.sh: $profile: skipped ($backend not found next to '$p4c' or on PATH)"
        fi
        continue
    fi
    built=$((built + 1))
    set +e
    build "$profile"
    status=$?
    set -e
    if ((status != 0 && (worst == 0 || worst == EXIT_NO_P4C || status == EXIT_COMPILE_FAILED))); then
        worst=$status
    fi
done
if ((built == 0 && worst == 0)); then
    no_p4c "any profile" "p4c-bm2-ss or p4c-barefoot"
    exit "$EXIT_NO_P4C"
fi
exit "$worst"
