#!/bin/sh
# Regenerates the library's PTX from cuda/*.cu: host_kernels (the kernels the host API runs on
# the GPU heap), queue_kernels (the kernels of the _on_queue forms, built on the device API of
# include/ishmem/cuda_impl.cuh), queue_remote_kernels (those of the on-queue RMA forms to PEs of
# other nodes) and coll_kernels (those of the collective _on_queue forms). The
# PTX is committed: building libishmem needs no CUDA.
#   scripts/gen-ptx.sh           rewrite the PTX (needs nvcc)
#   scripts/gen-ptx.sh --check   fail when a committed PTX was not made from the current sources
#                                (needs no nvcc)
#   scripts/gen-ptx.sh --check-text [module...]
#                                regenerate every module with this machine's nvcc and compare
#                                the text with the committed PTX, kernel by kernel (each .entry
#                                and .func); fail naming each kernel that differs, is missing or
#                                is new (scripts/gpu-check.sh and scripts/cuda-compile-check.sh
#                                run it). nvcc must be the committed PTX's release (its header
#                                says which).
# Each PTX starts with `// ishmem-sources-sha256: H`, H the SHA-256 of the sources it was built
# from (the .cu file and the ishmem headers it includes); --check recomputes H. nvcc 13.0 does
# not always schedule a large module the same way (seen on coll_kernels: two instructions swap
# between runs of the same input), so --check-text compiles a module whose text differs up to
# 4 times more and passes when one of the runs gives the committed text.
# nvcc: $NVCC, else nvcc on PATH, /usr/local/cuda/bin/nvcc, or the pip-installed CUDA 13 of
# build/cuvenv or build/cuda-venv (scripts/cuda-compile-check.sh makes build/cuvenv).
set -eu
cd "$(dirname "$0")/.."
find_nvcc() {
    if [ -n "${NVCC:-}" ]; then echo "$NVCC"; return; fi
    if command -v nvcc >/dev/null 2>&1; then command -v nvcc; return; fi
    for c in /usr/local/cuda/bin/nvcc build/cuvenv/lib/python3*/site-packages/nvidia/cu13/bin/nvcc \
             build/cuda-venv/lib/python3*/site-packages/nvidia/cu13/bin/nvcc; do
        if [ -x "$c" ]; then echo "$c"; return; fi
    done
}
# The sources of one module: its .cu and, when it uses the device API, the headers of it.
sources() {
    echo "cuda/$1.cu"
    if grep -q 'ishmem/cuda_impl.cuh' "cuda/$1.cu"; then
        echo include/ishmem/device_state.h include/ishmem/cuda_impl.cuh include/ishmem/cuda_coll.cuh
    fi
}
src_hash() {
    # shellcheck disable=SC2046
    cat $(sources "$1") | sha256sum | cut -d' ' -f1
}
MODULES="host_kernels queue_kernels queue_remote_kernels coll_kernels"
status=0
if [ "${1:-}" = "--check" ]; then
    for name in $MODULES; do
        OUT=src/transport/cuda/$name.ptx
        want=$(src_hash "$name")
        have=$(sed -n '1s|^// ishmem-sources-sha256: ||p' "$OUT")
        if [ "$want" = "$have" ]; then
            echo "gen-ptx: $OUT is current"
        else
            echo "gen-ptx: $OUT is stale (its sources changed): run scripts/gen-ptx.sh and commit it" >&2
            status=1
        fi
    done
    exit $status
fi
NV=$(find_nvcc)
if [ -z "$NV" ]; then
    echo "gen-ptx: no nvcc found (set NVCC=/path/to/nvcc)" >&2
    exit 1
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
# gen NAME OUT: module NAME's PTX as committed, into OUT.
gen() {
    # -lineinfo off, no host compilation.
    "$NV" -arch=compute_80 -ptx -O3 -Iinclude "cuda/$1.cu" -o "$TMP/k.ptx"
    # nvcc writes its version and the input path in comments; keep the version, drop the rest.
    # The names of internal-linkage objects carry 8 hex digits that depend on where the source
    # was compiled (_ZN47_INTERNAL_971a9c83_16_queue_kernels_cu_...): zeros instead (the same
    # length, so the mangled names stay valid), so that every checkout makes the same text.
    {
        echo "// ishmem-sources-sha256: $(src_hash "$1")"
        sed -e '/^\/\/ Compiler Build ID/d' -e '/^\/\/ Based on NVVM/d' \
            -e 's/_INTERNAL_[0-9a-f]\{8\}_/_INTERNAL_00000000_/g' "$TMP/k.ptx"
    } > "$2"
}
# split PTX DIR: one file per kernel (.entry or .func, by name) under DIR, the module's
# preamble (version, target, declarations before the first) in DIR/=preamble.
split() {
    rm -rf "$2"
    mkdir -p "$2"
    awk -v d="$2" '
        BEGIN { f = d "/=preamble" }
        /^(\.visible |\.weak |\.extern )?\.(entry|func)[ \t]/ {
            n = $0
            sub(/^.*\.(entry|func)[ \t]+(\([^)]*\)[ \t]*)?/, "", n)
            sub(/[ \t(].*$/, "", n)
            f = d "/" n
        }
        { print > f }' "$1"
}
if [ "${1:-}" = "--check-text" ]; then
    shift
    if [ $# -gt 0 ]; then MODULES="$*"; fi
    have_rel=$("$NV" --version | sed -n 's/^Cuda compilation tools, \(release [^,]*\).*/\1/p')
    for name in $MODULES; do
        OUT=src/transport/cuda/$name.ptx
        want_rel=$(sed -n 's|^// Cuda compilation tools, \(release [^,]*\).*|\1|p' "$OUT")
        if [ "$want_rel" != "$have_rel" ]; then
            echo "gen-ptx: $OUT was made by nvcc $want_rel, this machine's nvcc ($NV) is $have_rel: its text cannot be compared" >&2
            status=1
            continue
        fi
        same=0
        for try in 1 2 3 4 5; do
            gen "$name" "$TMP/$name.ptx"
            if cmp -s "$TMP/$name.ptx" "$OUT"; then
                same=1
                break
            fi
        done
        if [ "$same" = 1 ]; then
            echo "gen-ptx: $OUT is the text nvcc $have_rel makes of the sources (run $try)"
            continue
        fi
        status=1
        split "$OUT" "$TMP/committed"
        split "$TMP/$name.ptx" "$TMP/fresh"
        for k in $( (ls "$TMP/committed"; ls "$TMP/fresh") | sort -u); do
            if [ ! -e "$TMP/fresh/$k" ]; then
                echo "gen-ptx: $OUT: kernel $k is committed but no longer made from the sources" >&2
            elif [ ! -e "$TMP/committed/$k" ]; then
                echo "gen-ptx: $OUT: kernel $k is made from the sources but not committed" >&2
            elif ! cmp -s "$TMP/committed/$k" "$TMP/fresh/$k"; then
                echo "gen-ptx: $OUT: kernel $k differs from what nvcc makes of the sources (first lines, committed < > fresh):" >&2
                diff "$TMP/committed/$k" "$TMP/fresh/$k" | sed -n '1,6p' | sed 's/^/    /' >&2
            fi
        done
        echo "gen-ptx: $OUT differs from this machine's nvcc output (5 runs): run scripts/gen-ptx.sh and commit it" >&2
    done
    exit $status
fi
for name in $MODULES; do
    OUT=src/transport/cuda/$name.ptx
    gen "$name" "$OUT"
    echo "gen-ptx: wrote $OUT with $("$NV" --version | tail -n 1)"
done
