#!/usr/bin/env bash
# Issue 24 (gpu24d): the table of record and the one-GPU A/B, in two device calls on
# nvidia-h100-x2 run back to back (the second finds the machine warm). The carry's 64 MiB do not
# hold NVSHMEM 3.8.0's host library and two libishmem builds at once, so:
#   CALL=table   (carry build/gpu24d: bins-table.tar.xz = bin/gpu_bench_{ishmem,nvshmem},
#                lib-new/; nv38-run.tar.xz = NVSHMEM 3.8.0's host library and uid bootstrap)
#       two GPUs, one PE per GPU: bench/run_gpu.sh REPEAT=3 (ishmem and NVSHMEM 3.8.0
#       alternating) --grids 1,32,132 --reps 5 --max-bytes 268435456; then one GPU
#       (CUDA_VISIBLE_DEVICES=0, 1 PE) ishmem beside NVSHMEM 3.8.0, 3 rounds; then Nsight Compute's
#       kernel durations of ishmem's broadcast_on_queue and sum_reduce_on_queue at 256 KiB and
#       1 MiB (the three kernels each puts on the stream).
#   CALL=ab      (carry build/gpu24d-ab: bins-ab.tar.xz = bin/gpu_bench_{ishmem,ishmem_base},
#                lib-new/, lib-base/ (main at 202949b))
#       one GPU: the final build against main-at-session-start, 3 rounds alternating
#       (bench/run_gpu.sh --one-gpu --only ishmem with ISHMEM_BASE_BIN); then the GPU suite's
#       queue_ops and coll_ops checks with the final library (its PTX changed).
# The gpu_bench binaries are built on the CPU machine (nvcc 13.0): ishmem against the branch's
# include/, rpath /tmp/g24d/new/lib; ishmem_base against main 202949b's include/, rpath
# /tmp/g24d/base/lib; nvshmem against NVSHMEM 3.8.0, rpath /tmp/nv38/nvshmem/lib.
# Run from the repository root: CALL=table bash build/gpu24d/gpu24d_final.sh, then
# CALL=ab bash build/gpu24d-ab/gpu24d_final.sh
# SUITE_S: seconds kept for the suite after the A/B (default 80); NO_SUITE=1 skips it (run_gpu.sh
# needs at least 30 s of its DEADLINE per run: with too small a DEADLINE it runs nothing).
# Output: $OUT/gpu24d-$CALL.tar.gz, packed again after every step.
set -u
C=$(cd "$(dirname "$0")" && pwd) # the carried folder (build/gpu24d or build/gpu24d-ab)
cd "$(dirname "$0")/../.."
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_REMOTE_TRANSPORT=none # never NVLink multicast
export PATH=$PATH:/usr/local/cuda/bin
CALL=${CALL:?CALL=table or CALL=ab}
O=/tmp/g24dout/$CALL
R=${OUT:-build/gpu24d-out}
mkdir -p "$O" "$R"
T0=$(date +%s)
t() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$O/times.txt"; }
left() { echo $((${CALL_LIMIT:-250} - ($(date +%s) - T0))); } # seconds this call has left
pack() { cp "$O/times.txt" "$R/times-$CALL.txt" 2>/dev/null; tar -C "$(dirname "$O")" -czf "$R/gpu24d-$CALL.tar.gz" "$CALL"; }
{ date -u; nvidia-smi -L; nvidia-smi topo -m; } >"$O/machine.txt" 2>&1
X=/tmp/g24d/c
rm -rf "$X" && mkdir -p "$X" && tar -xJf "$C/bins-$CALL.tar.xz" -C "$X"
scripts/install-prefix.sh /tmp/g24d/new "$X/lib-new" >"$O/install.log" 2>&1 || t "install new failed"
[ -d "$X/lib-base" ] && { scripts/install-prefix.sh /tmp/g24d/base "$X/lib-base" >>"$O/install.log" 2>&1 || t "install base failed"; }
[ -f "$C/nv38-run.tar.xz" ] && { mkdir -p /tmp/nv38 && tar -xJf "$C/nv38-run.tar.xz" -C /tmp/nv38 || t "nv38 unpack failed"; }
chmod +x "$X"/bin/*
t "installed"
if [ "$CALL" = table ]; then
    REPEAT=3 ISHMEM_PREFIX=/tmp/g24d/new ISHMEM_BIN=$X/bin/gpu_bench_ishmem NVSHMEM_BIN=$X/bin/gpu_bench_nvshmem \
        OUT=$O/x2 DEADLINE=$(($(left) - 100)) bash bench/run_gpu.sh --no-shared-probe -- --grids 1,32,132 --reps 5 \
        --max-bytes 268435456 >"$O/x2.log" 2>&1
    t "two GPUs: exit $?"
    grep -E 'exit status|VERIFY' "$O/x2.log"
    pack
    CUDA_VISIBLE_DEVICES=0 REPEAT=3 REPEAT_2PE=0 ISHMEM_PREFIX=/tmp/g24d/new ISHMEM_BIN=$X/bin/gpu_bench_ishmem \
        NVSHMEM_BIN=$X/bin/gpu_bench_nvshmem OUT=$O/one DEADLINE=$(($(left) - 30)) bash bench/run_gpu.sh --one-gpu >"$O/one.log" 2>&1
    t "one GPU: exit $?"
    grep -E 'exit status|VERIFY' "$O/one.log"
    pack
    if [ "$(left)" -gt 30 ] && command -v ncu >/dev/null; then
        mkdir -p "$O/ncu"
        for l in ishmem; do
            timeout -k 5 $(($(left) - 5)) ncu --target-processes all --metrics gpu__time_duration.sum \
                "$X/bin/gpu_bench_$l" --ops broadcast_on_queue,sum_reduce_on_queue --scopes queue \
                --coll-sizes 262144,1048576 --reps 1 >"$O/ncu/$l-onqueue.txt" 2>&1
            t "ncu $l: exit $?"
        done
    fi
else
    CUDA_VISIBLE_DEVICES=0 REPEAT=3 REPEAT_2PE=0 ISHMEM_PREFIX=/tmp/g24d/new ISHMEM_BIN=$X/bin/gpu_bench_ishmem \
        ISHMEM_BASE_BIN=$X/bin/gpu_bench_ishmem_base OUT=$O/one-ab DEADLINE=$(($(left) - ${SUITE_S:-80})) \
        bash bench/run_gpu.sh --one-gpu --only ishmem >"$O/one-ab.log" 2>&1
    t "one GPU A/B: exit $?"
    grep -E 'exit status|VERIFY' "$O/one-ab.log"
    pack
    if [ -z "${NO_SUITE:-}" ] && [ "$(left)" -gt 60 ]; then
        mkdir -p target/release && cp "$X"/lib-new/* target/release/
        NO_PTX_TEXT=1 NO_DEBUG_RERUN=1 BUILD_ONLY='queue_ops|coll_ops' ONLY='^(queue_ops|coll_ops)\.(ishmrun|samegpu|gridcopy|copyengines|oneblock)$' \
            OUT=$O timeout "$(($(left) - 10))" scripts/gpu-check.sh >"$O/suite.log" 2>&1
        t "suite: exit $?"
        grep -E 'FAILED|passed' "$O/suite.log"
    fi
fi
t "done"
pack
