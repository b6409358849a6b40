#!/bin/sh
# Regenerates src/transport/cuda/host_kernels.ptx from cuda/host_kernels.cu (the kernels the
# host API runs on the GPU heap). The PTX is committed: building libishmem needs no CUDA.
#   scripts/gen-ptx.sh           rewrite the PTX
#   scripts/gen-ptx.sh --check   fail when the committed PTX differs from what nvcc makes now
#                                (skipped, status 0, when no nvcc is found)
# nvcc: $NVCC, else nvcc on PATH, /usr/local/cuda/bin/nvcc, or the pip-installed CUDA 13 of
# build/cuvenv or build/cuda-venv (see the Makefile's cuda-venv target).
set -eu
cd "$(dirname "$0")/.."
SRC=cuda/host_kernels.cu
OUT=src/transport/cuda/host_kernels.ptx
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
# -lineinfo off, no host compilation: the output depends on the source and nvcc's version only.
"$NV" -arch=compute_80 -ptx -O3 "$SRC" -o "$TMP/k.ptx"
# nvcc writes its version and the input path in comments; keep the version, drop the rest.
sed -e '/^\/\/ Compiler Build ID/d' -e '/^\/\/ Based on NVVM/d' "$TMP/k.ptx" > "$TMP/k2.ptx"
if [ "${1:-}" = "--check" ]; then
    if cmp -s "$TMP/k2.ptx" "$OUT"; then echo "gen-ptx: $OUT is current"; exit 0; fi
    echo "gen-ptx: $OUT is stale: run scripts/gen-ptx.sh and commit it" >&2
    diff "$OUT" "$TMP/k2.ptx" | head -20 >&2 || true
    exit 1
fi
cp "$TMP/k2.ptx" "$OUT"
echo "gen-ptx: wrote $OUT with $("$NV" --version | tail -n 1)"
