#!/bin/sh
# Regenerates the library's PTX from cuda/*.cu: host_kernels (the kernels the host API runs on
# the GPU heap), queue_kernels (the kernels of the _on_queue forms, built on the device API
# of include/ishmem/cuda_impl.cuh) and coll_kernels (those of the collective _on_queue forms). The PTX is committed: building libishmem needs no CUDA.
#   scripts/gen-ptx.sh           rewrite the PTX
#   scripts/gen-ptx.sh --check   fail when the committed PTX differs from what nvcc makes now
#                                (skipped, status 0, when no nvcc is found)
# nvcc: $NVCC, else nvcc on PATH, /usr/local/cuda/bin/nvcc, or the pip-installed CUDA 13 of
# build/cuvenv or build/cuda-venv (see the Makefile's cuda-venv target).
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
NV=$(find_nvcc)
if [ -z "$NV" ]; then
    if [ "${1:-}" = "--check" ]; then echo "gen-ptx: no nvcc found; PTX check skipped"; exit 0; fi
    echo "gen-ptx: no nvcc found (set NVCC=/path/to/nvcc)" >&2; exit 1
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
status=0
for name in host_kernels queue_kernels coll_kernels; do
    SRC=cuda/$name.cu
    OUT=src/transport/cuda/$name.ptx
    # -lineinfo off, no host compilation: the output depends on the sources and nvcc's version.
    "$NV" -arch=compute_80 -ptx -O3 -Iinclude "$SRC" -o "$TMP/k.ptx"
    # nvcc writes its version and the input path in comments; keep the version, drop the rest.
    sed -e '/^\/\/ Compiler Build ID/d' -e '/^\/\/ Based on NVVM/d' "$TMP/k.ptx" > "$TMP/k2.ptx"
    if [ "${1:-}" = "--check" ]; then
        if cmp -s "$TMP/k2.ptx" "$OUT"; then
            echo "gen-ptx: $OUT is current"
        else
            echo "gen-ptx: $OUT is stale: run scripts/gen-ptx.sh and commit it" >&2
            diff "$OUT" "$TMP/k2.ptx" | head -20 >&2 || true
            status=1
        fi
    else
        cp "$TMP/k2.ptx" "$OUT"
        echo "gen-ptx: wrote $OUT with $("$NV" --version | tail -n 1)"
    fi
done
exit $status
