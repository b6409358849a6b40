#!/usr/bin/env bash
# The whole GPU path in one device call: install the build carried from a machine with cargo,
# run the GPU test suite (scripts/gpu-check.sh), then the GPU benchmark beside NVSHMEM
# (bench/run_gpu.sh). Results go to $OUT (gpu-check/, gpu-*.csv, gpu-table.md, gpu-plots/).
#   here:    make build && mkdir -p build/carry && cp target/release/{libishmem.so,ishmrun,ishmem-info} build/carry/ && strip build/carry/*
#   device:  run(carry=["build/carry"], command="scripts/gpu-all.sh")          (kind nvidia-h200-x2)
#            scripts/gpu-all.sh --no-bench     the suite only (e.g. nvidia-h100-x1: 2 PEs on one GPU)
# Arguments after --no-bench / before are passed to bench/run_gpu.sh (e.g. --quick).
set -u
cd "$(dirname "$0")/.."
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0   # never NVLink multicast on the shared GPUs
CARRY=${CARRY:-build/carry}
bench=1
if [ "${1:-}" = "--no-bench" ]; then bench=0; shift; fi
if [ -d "$CARRY" ]; then
    mkdir -p target/release && cp "$CARRY"/* target/release/
fi
rc=0
scripts/gpu-check.sh || rc=1
if [ "$bench" = 1 ]; then
    bash bench/run_gpu.sh "$@" || rc=1
fi
# The device tool brings back at most 8 files from $OUT: pack everything into one archive,
# and keep the table beside it for a quick look.
if [ -n "${OUT:-}" ] && [ -d "$OUT" ]; then
    tgz=$(mktemp "${TMPDIR:-/tmp}/gpu-all.XXXXXX") && tar -C "$OUT" -czf "$tgz" . && find "$OUT" -mindepth 1 -maxdepth 1 ! -name gpu-table.md -exec rm -rf {} + \
        && mv "$tgz" "$OUT/gpu-all.tar.gz"
fi
exit $rc
