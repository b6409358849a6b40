#!/usr/bin/env bash
# Issue 24 (gpu24d), one device call on nvidia-h100-x2 (one PE per GPU): the device
# putmem_nbi/getmem_nbi rows of thread and warp scope, profiled and A/B'd, plus a timeline of
# the large on-queue collectives. Everything is built on the CPU machine and carried in
# build/gpu24d/ (nothing is compiled here):
#   bin/gpu_bench_{nvshmem,base,nochk,lean}   gpu_bench against NVSHMEM 3.8.0 (rpath
#       /tmp/nv38/nvshmem/lib), against main's headers (base), the same with
#       -DISHMEM_NO_DEVICE_CHECKS (nochk), and against the branch's headers (lean); rpath
#       /tmp/g24d/new/lib
#   lib/ (libishmem.so, ishmrun, ishmem-info, stripped; bin/ and lib/ packed as bins.tar.xz),
#       nv38-run.tar.xz (NVSHMEM 3.8.0's host
#       library and unique-id bootstrap)
# Steps (STEPS, default "ab ncu nsys"):
#   ab    REPEAT rounds (default 3) of the four builds alternating, ops putmem_nbi,getmem_nbi,
#         scopes thread,warp,block, grids 1,32,132, 4 KiB - 1 MiB; CSVs x2-<lib>-<round>.csv
#         (lib: nvshmem, ishmem = lean, ishmem_base, ishmem_nochk) and twogpu-table.md
#   test  kernel_api (tests/gpu) built against the branch's headers, 2 PEs
#   ncu   Nsight Compute (WarpStateStats, InstructionStats, SchedulerStats) of the k_bw kernels
#         (thread and warp scope putmem_nbi, grid 32, 4-16 KiB) of base and nvshmem
#   nsys  Nsight Systems CUDA trace of broadcast_on_queue and sum_reduce_on_queue at 256 KiB
#         and 1 MiB, base and nvshmem: the kernels on the stream, their durations and the gaps
# Output: one archive $OUT/gpu24d.tar.gz.
set -u
# Run from the repository root: bash build/gpu24d/gpu24d_call.sh (the script travels in the carry,
# beside the branch's include/ishmem/cuda_impl.cuh and tests/gpu/kernel_api.cu).
cd "$(dirname "$0")/../.."
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_REMOTE_TRANSPORT=none # never NVLink multicast
export PATH=$PATH:/usr/local/cuda/bin
C=build/gpu24d
O=/tmp/g24dout/gpu24d
R=${OUT:-build/gpu24d-out}
mkdir -p "$O" "$R"
T0=$(date +%s)
t() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$O/times.txt"; }
STEPS=${STEPS:-test ab ncu nsys}
has() { [[ " $STEPS " == *" $1 "* ]]; }
pack() { cp "$O/times.txt" "$R/times.txt" 2>/dev/null; tar -C "$(dirname "$O")" -czf "$R/gpu24d.tar.gz" gpu24d; } # after each step: a call cut by its limit keeps what it had
{ nvidia-smi -L; nvidia-smi topo -m; which ncu nsys; } >"$O/machine.txt" 2>&1
mkdir -p /tmp/g24d/c && tar -xJf "$C/bins.tar.xz" -C /tmp/g24d/c # bin/ and lib/ (the carry's 64 MiB)
scripts/install-prefix.sh /tmp/g24d/new /tmp/g24d/c/lib >"$O/install.log" 2>&1 || { t "install failed"; tail "$O/install.log"; }
mkdir -p /tmp/nv38 && tar -xJf "$C/nv38-run.tar.xz" -C /tmp/nv38 || t "nv38 unpack failed"
B=/tmp/g24d/bin
mkdir -p "$B" && cp /tmp/g24d/c/bin/gpu_bench_* "$B/" && chmod +x "$B"/gpu_bench_*
t "installed"
if has test; then
    # the copy sweep of kernel_api.cu (device put/get at every alignment) with the branch's headers
    rm -rf /tmp/g24d/inc-lean && cp -r include /tmp/g24d/inc-lean && cp "$C/cuda_impl.cuh" /tmp/g24d/inc-lean/ishmem/
    nvcc -arch=sm_90 "$C/kernel_api.cu" -Itests/gpu -I/tmp/g24d/inc-lean -L/tmp/g24d/new/lib -lishmem \
        -Xlinker -rpath=/tmp/g24d/new/lib -o /tmp/g24d/kernel_api >"$O/test-build.log" 2>&1 || t "kernel_api build failed"
    timeout -k 5 60 /tmp/g24d/new/bin/ishmrun --timeout 50 -n 2 /tmp/g24d/kernel_api >"$O/test.log" 2>&1
    t "kernel_api: exit $?"
    tail -5 "$O/test.log"
    pack
fi
run() { # run LIB CSV ARGS...: one gpu_bench run (fork mode, 2 PEs, one per GPU)
    local lib=$1 csv=$2
    shift 2
    timeout -k 5 "${RUN_LIMIT:-60}" "$B/gpu_bench_$lib" "$@" >"$csv" 2>"${csv%.csv}.log"
    echo "$lib $(basename "$csv"): exit $? rows $(($(wc -l <"$csv") - 1))" | tee -a "$O/times.txt"
}
if has ab; then
    mkdir -p "$O/ab"
    ARGS=(--ops putmem_nbi,getmem_nbi --scopes thread,warp,block --grids 1,32,132 --reps 5 --max-bytes 1048576)
    order=(nvshmem base lean)
    for i in $(seq 1 "${REPEAT:-3}"); do
        libs=("${order[@]}")
        [ $((i % 2)) = 0 ] && libs=(lean base nvshmem)
        for l in "${libs[@]}"; do
            n=$l; [ "$l" = lean ] && n=ishmem; [ "$l" = base ] && n=ishmem_base; [ "$l" = nochk ] && n=ishmem_nochk
            run "$l" "$O/ab/x2-$n-$i.csv" "${ARGS[@]}"
        done
    done
    python3 bench/twogpu_table.py --out "$O/ab/twogpu-table.md" "$O"/ab/x2-*.csv >"$O/ab/table.log" 2>&1
    t "ab done"
    cp "$O/ab/twogpu-table.md" "$R/ab-table.md" 2>/dev/null
    pack
fi
if has ncu && command -v ncu >/dev/null; then
    mkdir -p "$O/ncu"
    for l in base nvshmem; do
        for sc in thread warp; do
            timeout -k 5 60 ncu --target-processes all -k regex:k_bw --launch-count 2 \
                --section WarpStateStats --section InstructionStats --section SchedulerStats --section LaunchStats \
                "$B/gpu_bench_$l" --ops putmem_nbi --scopes "$sc" --grids 32 --reps 1 --max-bytes 16384 \
                >"$O/ncu/$l-$sc.txt" 2>&1
            t "ncu $l $sc: exit $?"
        done
    done
    pack
fi
if has nsys && command -v nsys >/dev/null; then
    mkdir -p "$O/nsys"
    for l in base nvshmem; do
        timeout -k 5 60 nsys profile -t cuda --force-overwrite true -o "$O/nsys/$l" \
            "$B/gpu_bench_$l" --ops broadcast_on_queue,sum_reduce_on_queue,team_sync_on_queue --scopes queue --coll-sizes 8,262144,1048576 --reps 3 \
            >"$O/nsys/$l-run.txt" 2>&1
        t "nsys $l: exit $?"
        for f in "$O/nsys/$l"*.nsys-rep; do
            [ -f "$f" ] || continue
            nsys stats -q -r cuda_gpu_trace -f csv -o "${f%.nsys-rep}" "$f" >/dev/null 2>&1
            rm -f "$f" "${f%.nsys-rep}.sqlite"
        done
    done
    t "nsys done"
fi
t "done"
pack
