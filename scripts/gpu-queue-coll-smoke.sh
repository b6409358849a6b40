#!/usr/bin/env bash
# The collective _on_queue rows of bench/gpu_bench.cu (ishmem build) with 2 PEs on whatever
# GPUs are visible, --quick: a correctness smoke test of the rows (each row verifies its
# result) on a one-GPU machine, where the timings mean nothing (the two PEs' kernels
# time-slice). Expects scripts/gpu-check.sh to have installed the library (its prefix).
#   device: scripts/gpu-all.sh --no-bench; scripts/gpu-queue-coll-smoke.sh
set -u
cd "$(dirname "$0")/.."
P=${ISHMEM_PREFIX:-build/gpu-check-work/prefix}
NVCC=${NVCC:-nvcc}
# a private directory (mktemp), never a fixed name in the shared temp directory that another
# user could have made first (issue 30)
work=$(mktemp -d "${TMPDIR:-/tmp}/gpu_bench_smoke.XXXXXX") || exit 1
trap 'rm -rf "$work"' EXIT
out=$work/gpu_bench_smoke
"$NVCC" -arch=sm_90 -std=c++17 -Ibench bench/gpu_bench.cu $(PKG_CONFIG_PATH=$P/lib/pkgconfig pkg-config --cflags --libs ishmem) -o "$out" || exit 1
NPES=2 timeout 300 "$out" --quick --max-bytes 262144 \
    --ops broadcast_on_queue,fcollect_on_queue,alltoall_on_queue,sum_reduce_on_queue,team_sync_on_queue
