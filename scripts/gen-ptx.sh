#!/bin/sh
# Regenerates the library's PTX from cuda/*.cu: host_kernels (the kernels the host API runs on
# the GPU heap), queue_kernels (the kernels of the _on_queue forms, built on the device API of
# include/ishmem/cuda_impl.cuh), queue_remote_kernels (those of the on-queue RMA forms to PEs of
# other nodes) and coll_kernels (those of the collective _on_queue forms). The
# PTX is committed: building libishmem needs no CUDA.
#   scripts/gen-ptx.sh           rewrite the PTX (needs nvcc)
#   scripts/gen-ptx.sh --check   fail when a committed PTX was not made from the current sources
#                                (needs no nvcc)
# Each PTX starts with `// ishmem-sources-sha256: H`, H the SHA-256 of the sources it was built
# from (the .cu file and the ishmem headers it includes); --check recomputes H. Comparing the
# PTX text itself would not work: nvcc 13.0 does not schedule a large module the same way on
# every run (seen on coll_kernels: two instructions swap between runs of the same input).
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
for name in $MODULES; do
    OUT=src/transport/cuda/$name.ptx
    # -lineinfo off, no host compilation.
    "$NV" -arch=compute_80 -ptx -O3 -Iinclude "cuda/$name.cu" -o "$TMP/k.ptx"
    # nvcc writes its version and the input path in comments; keep the version, drop the rest.
    {
        echo "// ishmem-sources-sha256: $(src_hash "$name")"
        sed -e '/^\/\/ Compiler Build ID/d' -e '/^\/\/ Based on NVVM/d' "$TMP/k.ptx"
    } > "$OUT"
    echo "gen-ptx: wrote $OUT with $("$NV" --version | tail -n 1)"
done
