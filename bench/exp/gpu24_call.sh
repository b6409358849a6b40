#!/usr/bin/env bash
# Issue 24, one device call on nvidia-h100-x2 (one PE per GPU): the A/B of a device collective
# change beside NVSHMEM, the sync/reduction probe (bench/exp/sync2_probe.cu), and optionally the
# GPU suite, from a tree copy carried with its builds:
#   here:   build/carry (this tree's libishmem.so, ishmrun, ishmem-info), build/carry-base (the
#           build before, with its include/), build/g24bin/ (gpu_bench_ishmem, gpu_bench_base,
#           sync2_probe: nvcc here, rpath /tmp/g24/{new,base}/lib)
#   device: run(carry=[...the tree copy...], command="bash bench/exp/gpu24_call.sh")
# Environment: STEPS (default "probe ab"; also "suite", "full", "onegpu"), REPEAT (rounds of the
# A/B, default 1), AB_ARGS (gpu_bench arguments of the A/B), SUITE_ONLY (gpu-check.sh's ONLY).
# Output: one archive $OUT/gpu24.tar.gz (the device tool brings back 8 files at most) and the
# tables beside it.
set -u
cd "$(dirname "$0")/../.."
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 # never NVLink multicast
export PATH=$PATH:/usr/local/cuda/bin
# Logs and CSVs go to a scratch folder; only a few files are copied into $OUT as each step
# ends (the device tool brings back 8 files at most), and everything is packed at the end.
O=/tmp/g24out/gpu24
R=${OUT:-build/gpu24-out}
mkdir -p "$O" "$R"
T0=$(date +%s)
t() { echo "[$(($(date +%s) - T0))s] $*" | tee -a "$O/times.txt"; }
B=/tmp/g24
mkdir -p "$B"
STEPS=${STEPS:-probe ab}
{ nvidia-smi -L; nvidia-smi topo -m; } >"$O/machine.txt" 2>&1
scripts/install-prefix.sh "$B/new" build/carry >"$O/install.log" 2>&1 || { t "install new failed"; tail "$O/install.log"; }
if [ -d build/carry-base ]; then
    scripts/install-prefix.sh "$B/base" build/carry-base >>"$O/install.log" 2>&1 || t "install base failed"
    rm -rf "$B/base/include" && cp -r build/carry-base/include "$B/base/include"
fi
t "installed"
has() { [[ " $STEPS " == *" $1 "* ]]; }
if has probe && [ -x build/g24bin/sync2_probe ]; then
    timeout 120 "$B/new/bin/ishmrun" --timeout 110 -n 2 build/g24bin/sync2_probe >"$O/probe.txt" 2>&1
    t "probe: exit $?"
    cat "$O/probe.txt"
fi
if has ab; then
    AB_ARGS=${AB_ARGS:---ops team_sync,broadcast,fcollect,alltoall,sum_reduce,barrier_all --scopes thread,block}
    # shellcheck disable=SC2086
    REPEAT=${REPEAT:-1} ISHMEM_PREFIX=$B/new ISHMEM_BIN=build/g24bin/gpu_bench_ishmem ISHMEM_BASE_BIN=build/g24bin/gpu_bench_base \
        OUT=$O/ab DEADLINE=${AB_DEADLINE:-300} bash bench/run_gpu.sh --no-shared-probe -- $AB_ARGS >"$O/ab.log" 2>&1
    t "ab: exit $?"
    cat "$O/ab/twogpu-table.md" 2>/dev/null | head -120
fi
if has full; then
    # shellcheck disable=SC2086
    REPEAT=${FULL_REPEAT:-3} ISHMEM_PREFIX=$B/new ISHMEM_BIN=build/g24bin/gpu_bench_ishmem \
        OUT=$O/full DEADLINE=${FULL_DEADLINE:-420} bash bench/run_gpu.sh --no-shared-probe -- ${FULL_ARGS:-} >"$O/full.log" 2>&1
    t "full: exit $?"
    cp bench/build/gpu_bench_nvshmem "$B/gpu_bench_nvshmem" 2>/dev/null
    cp "$O/full/twogpu-table.md" "$R/twogpu-table.md" 2>/dev/null
    tar -C "$O/full" -czf "$R/x2.tar.gz" . 2>/dev/null
    grep -E 'exit status|VERIFY' "$O/full.log"
fi
if has suite; then
    mkdir -p target/release && cp build/carry/* target/release/
    NO_DEBUG_RERUN=1 ONLY=${SUITE_ONLY:-} OUT=$O timeout "${SUITE_LIMIT:-300}" scripts/gpu-check.sh >"$O/suite.log" 2>&1
    t "suite: exit $?"
    grep -E 'FAILED|passed' "$O/suite.log"
    cp "$O/suite.log" "$R/suite.log" 2>/dev/null
fi
if has onegpu && [ $((${CALL_LIMIT:-1000} - ($(date +%s) - T0))) -gt 60 ]; then
    ONE_DEADLINE=$((${CALL_LIMIT:-1000} - ($(date +%s) - T0) - 15))
    nb=(); [ -x "$B/gpu_bench_nvshmem" ] && nb=(NVSHMEM_BIN=$B/gpu_bench_nvshmem)
    env "${nb[@]}" CUDA_VISIBLE_DEVICES=0 REPEAT=${ONE_REPEAT:-3} ISHMEM_PREFIX=$B/new ISHMEM_BIN=build/g24bin/gpu_bench_ishmem \
        OUT=$O/one DEADLINE=${ONE_DEADLINE:-200} bash bench/run_gpu.sh --one-gpu >"$O/one.log" 2>&1
    t "onegpu: exit $?"
    cp "$O/one/onegpu-table.md" "$R/onegpu-table.md" 2>/dev/null
    tar -C "$O/one" -czf "$R/one.tar.gz" . 2>/dev/null
fi
[ -f "$O/ab/twogpu-table.md" ] && cp "$O/ab/twogpu-table.md" "$R/ab-table.md"
[ -f "$O/probe.txt" ] && cp "$O/probe.txt" "$R/probe.txt"
t "done"
cp "$O/times.txt" "$R/times.txt" 2>/dev/null
tar -C "$(dirname "$O")" -czf "$R/gpu24.tar.gz" gpu24
