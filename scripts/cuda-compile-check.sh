#!/usr/bin/env bash
# Compiles and links every CUDA program of the repository against the installed library, with
# nvcc from PyPI wheels pinned to the GPU machines' CUDA 13.0, exactly as users do:
#   nvcc prog.cu $(pkg-config --cflags --libs ishmem)
# It runs nothing (CI has no GPU); scripts/gpu-check.sh runs them on a GPU machine. Then the
# committed PTX against this nvcc's text (scripts/gen-ptx.sh --check-text).
# Usage: scripts/cuda-compile-check.sh [PREFIX]     (default build/prefix, made by make install)
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX=${1:-$PWD/build/prefix}
VENV=${CUDA_VENV:-$PWD/build/cuvenv}
PINS="nvidia-cuda-nvcc==13.0.88 nvidia-nvvm==13.0.88 nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85 nvidia-cuda-crt==13.0.88"
if ! command -v nvcc >/dev/null 2>&1; then
    [ -x "$VENV/bin/pip" ] || python3 -m venv "$VENV"
    # shellcheck disable=SC2086
    "$VENV/bin/pip" install -q $PINS
    CU=$(echo "$VENV"/lib/python3*/site-packages/nvidia/cu13)
    export PATH="$CU/bin:$PATH"
    EXTRA=(-L"$CU/lib")
else
    EXTRA=()
fi
nvcc --version | tail -n 2
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
out=build/cuda-check
mkdir -p "$out"
pass=0
fail=0
for f in examples/*.cu tests/gpu/*.cu; do
    [ -e "$f" ] || continue
    exe="$out/$(basename "$f" .cu)"
    # shellcheck disable=SC2046
    if nvcc -std=c++17 -arch=sm_90 -Xcompiler -Wall,-Wextra "$f" $(pkg-config --cflags --libs ishmem) "${EXTRA[@]}" -o "$exe"; then
        pass=$((pass + 1))
    else
        echo "cuda-compile-check: FAILED to build $f" >&2
        fail=$((fail + 1))
    fi
done
# A program made of several .cu files, one plain line, no -rdc.
# shellcheck disable=SC2046
if nvcc -std=c++17 -arch=sm_90 -Xcompiler -Wall,-Wextra tests/gpu/multi/main.cu tests/gpu/multi/part.cu $(pkg-config --cflags --libs ishmem) "${EXTRA[@]}" -o "$out/multi"; then
    pass=$((pass + 1))
else
    echo "cuda-compile-check: FAILED to build tests/gpu/multi" >&2
    fail=$((fail + 1))
fi
# A kernel module loaded at run time (cubin), as tests/gpu/cumodule.cu loads it.
for f in tests/gpu/modules/*.cu; do
    [ -e "$f" ] || continue
    if nvcc -std=c++17 -arch=sm_90 -cubin -I"$PREFIX/include" "$f" -o "$out/$(basename "$f" .cu).cubin"; then
        pass=$((pass + 1))
    else
        echo "cuda-compile-check: FAILED to build $f" >&2
        fail=$((fail + 1))
    fi
done
# The benchmark source, against ishmem's headers (its NVSHMEM variant is built on the GPU machine).
if [ -e bench/gpu_bench.cu ]; then
    # shellcheck disable=SC2046
    if nvcc -std=c++17 -arch=sm_90 bench/gpu_bench.cu $(pkg-config --cflags --libs ishmem) "${EXTRA[@]}" -o "$out/gpu_bench"; then
        pass=$((pass + 1))
    else
        echo "cuda-compile-check: FAILED to build bench/gpu_bench.cu" >&2
        fail=$((fail + 1))
    fi
fi
# The standalone probes (CUDA only, no ishmem): ring placement (run by
# scripts/gpu-proxy-bench.sh), memory and scope (run by scripts/gpu-latency.sh).
for f in bench/exp/ring_probe.cu bench/exp/scope_probe.cu; do
    if nvcc -std=c++17 -arch=sm_90 -O2 -Xcompiler -Wall,-Wextra "$f" "${EXTRA[@]}" -o "$out/$(basename "$f" .cu)"; then
        pass=$((pass + 1))
    else
        echo "cuda-compile-check: FAILED to build $f" >&2
        fail=$((fail + 1))
    fi
done
# The committed PTX (src/transport/cuda/*.ptx) compared, kernel by kernel, with the text this
# nvcc makes of the sources (issue 26; a differing kernel is named). Advisory only: nvcc 13.0
# does not number registers the same way from run to run and the device machine's nvcc build
# makes other parameter lists, so the text differs without any source change (seen 2026-11-27:
# rc 1 in 2 of 3 runs with the pinned wheel). The source-hash check (`make check-generated`)
# is the one that fails CI.
if NVCC=$(command -v nvcc) scripts/gen-ptx.sh --check-text; then
    echo "cuda-compile-check: committed PTX text matches this nvcc"
else
    echo "cuda-compile-check: WARNING: the committed PTX text differs from this nvcc's (advisory, see above)" >&2
fi
echo "cuda-compile-check: $pass passed, $fail failed"
[ "$fail" = 0 ]
