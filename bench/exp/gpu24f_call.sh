#!/usr/bin/env bash
# Issue 24 (gpu24f), one device call on nvidia-h100-x1: copy()'s 16-byte tail two words at a time
# only where the group has two words per thread or more (copy_words_u<int4, 4, true>; copy_lone
# and the 8- and 4-byte words as in main) against main at 2db66e1, one GPU, one PE targeting
# itself. Nothing is compiled there: build/gpu24f/ carries
#   bin/gpu_bench_ishmem       gpu_bench built (nvcc 13.0.88, the run_gpu.sh flags) against the
#                              branch gpu24f's include/, rpath /tmp/g24f/new/lib
#   bin/gpu_bench_ishmem_base  the same against main's include/ (2db66e1), rpath /tmp/g24f/base/lib
#   bin/kernel_api             tests/gpu/kernel_api.cu against gpu24f's include/ (its copy sweep)
#   lib/                       libishmem.so, ishmrun, ishmem-info (stripped; main at 2db66e1: the
#                              rows measured here run the header's copy, not the library's PTX)
# Steps as bench/exp/gpu24e_call.sh: kernel_api on one GPU (2 PEs); A: 5 rounds alternating of
# putmem_nbi/getmem_nbi, thread/warp/block, grids 1 and 32, 4 KiB - 1 MiB (--reps 5
# --target-ms 1), CSVs rows-<lib>-<i>.csv; B: the one-GPU table's own arguments (run_gpu.sh
# --one-gpu), 3 rounds alternating, CSVs one-<lib>-<i>.csv. Output: $OUT/gpu24f.tar.gz.
set -u
C=$(cd "$(dirname "$0")" && pwd)
cd "$(dirname "$0")/../.."
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1
export CUDA_VISIBLE_DEVICES=0
O=/tmp/g24fout/gpu24f
R=${OUT:-build/gpu24f-out}
mkdir -p "$O" "$R"
T0=$(date +%s)
t() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$O/times.txt"; }
left() { echo $((${CALL_LIMIT:-270} - ($(date +%s) - T0))); }
pack() { tar -C "$(dirname "$O")" -czf "$R/gpu24f.tar.gz" gpu24f; }
{ date -u; nvidia-smi -L; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv; uptime; } >"$O/machine.txt" 2>&1
for p in new base; do scripts/install-prefix.sh /tmp/g24f/$p "$C/lib" >>"$O/install.log" 2>&1 || t "install $p failed"; done
B=/tmp/g24f/bin && mkdir -p $B && cp "$C"/bin/* $B/ && chmod +x $B/*
t "installed"
timeout -k 5 60 /tmp/g24f/new/bin/ishmrun --timeout 50 -n 2 $B/kernel_api >"$O/kernel_api.log" 2>&1
t "kernel_api (2 PEs, one GPU): exit $?"
tail -3 "$O/kernel_api.log"
pack
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
