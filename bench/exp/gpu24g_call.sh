#!/usr/bin/env bash
# Issue 24 (lead, end of session): the one-GPU A/B that settles "the one-GPU table does not get
# worse": gpu_bench built against 202949b's include/ (the session's start, before gpu24d's
# copy() change and gpu23d's ring) and against main's include/ (06e4455), both linking main's
# stripped libishmem (one PE targeting itself: no proxy ring in any row; the on-queue rows run
# the library's PTX, the same on both sides). Nothing is compiled there: build/gpu24g/ carries
#   bin/gpu_bench_ishmem_base  nvcc 13.0.88 -O2 -std=c++17 -arch=sm_90 -lineinfo, 202949b include/,
#                              rpath /tmp/g24g/base/lib
#   bin/gpu_bench_ishmem       the same against main's include/, rpath /tmp/g24g/new/lib
#   lib/                       libishmem.so, ishmrun, ishmem-info (stripped, main)
# Steps as bench/exp/gpu24f_call.sh: A: 5 rounds alternating of putmem_nbi/getmem_nbi,
# thread/warp/block, grids 1 and 32, 4 KiB - 1 MiB; B: the one-GPU table's own arguments
# (run_gpu.sh --one-gpu), 3 rounds alternating. Output: $OUT/gpu24g.tar.gz.
set -u
C=$(cd "$(dirname "$0")/../../build/gpu24g" && pwd)
cd "$(dirname "$0")/../.."
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export CUDA_VISIBLE_DEVICES=0
O=/tmp/g24gout/gpu24g
R=${OUT:-build/gpu24g-out}
mkdir -p "$O" "$R"
T0=$(date +%s)
t() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$O/times.txt"; }
left() { echo $((${CALL_LIMIT:-170} - ($(date +%s) - T0))); }
pack() { tar -C "$(dirname "$O")" -czf "$R/gpu24g.tar.gz" gpu24g; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; uptime; } >"$O/machine.txt" 2>&1
for p in new base; do scripts/install-prefix.sh /tmp/g24g/$p "$C/lib" >>"$O/install.log" 2>&1 || t "install $p failed"; done
B=/tmp/g24g/bin && mkdir -p $B && cp "$C"/bin/* $B/ && chmod +x $B/*
t "installed"
run() { # run LIB CSV ARGS...
    local lib=$1 csv=$2; shift 2
    NPES=1 BENCH_MACHINE=NVIDIA_H100_80GB_HBM3-x1 timeout -k 5 40 "$B/gpu_bench_$lib" "$@" >"$csv" 2>"${csv%.csv}.log"
    t "$lib $(basename "$csv"): exit $? rows $(($(wc -l <"$csv") - 1))"
}
mkdir -p "$O/rows" "$O/one"
A=(--ops putmem_nbi,getmem_nbi --scopes thread,warp,block --grids 1,32 --reps 5 --target-ms 1 --max-bytes 1048576)
for i in 1 2 3 4 5; do
    libs=(ishmem_base ishmem); [ $((i % 2)) = 0 ] && libs=(ishmem ishmem_base)
    for l in "${libs[@]}"; do run "$l" "$O/rows/rows-$l-$i.csv" "${A[@]}"; done
    pack
done
Q=(--quick --scopes thread,block --grids 32 --max-bytes 16777216 --coll-sizes 8,64,4096,32768,1048576
   --ops putmem_nbi,getmem_nbi,p,putmem_quiet,g,fetch_add,compare_swap,put_signal,barrier_all,putmem_on_queue,putmem_on_queue_lat,putmem_on_queue_pipelined,barrier_all_on_queue,putmem_blocking,broadcast,fcollect,alltoall,sum_reduce,team_sync,broadcast_on_queue,fcollect_on_queue,alltoall_on_queue,sum_reduce_on_queue,team_sync_on_queue)
for i in 1 2 3; do
    [ "$(left)" -gt 40 ] || { t "B: stopped before round $i (time)"; break; }
    libs=(ishmem_base ishmem); [ $((i % 2)) = 0 ] && libs=(ishmem ishmem_base)
    for l in "${libs[@]}"; do run "$l" "$O/one/one-$l-$i.csv" "${Q[@]}"; done
    pack
done
t "done"
pack
