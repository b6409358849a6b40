#!/usr/bin/env bash
# run_gpu.sh -- build and run the GPU benchmark (bench/gpu_bench.cu) on the
# device machine, in one call from the repository root:
#
#   bash bench/run_gpu.sh                 # full run, ~2-4 min (kind nvidia-h200-x2)
#   bash bench/run_gpu.sh --quick         # smoke run, ~1 min
#   bash bench/run_gpu.sh --only nvshmem  # or --only ishmem
#   bash bench/run_gpu.sh --no-shared-probe
#   bash bench/run_gpu.sh -- --ops p,g    # everything after -- goes to gpu_bench
#   bash bench/run_gpu.sh --one-gpu       # the one-GPU side-by-side mode (below); chosen by
#                                         # itself when one GPU is visible (--two-pe: never)
#
# One-GPU side-by-side mode (issue 16; kinds nvidia-h100-x1 and nvidia-h200). NVSHMEM hangs
# with 2 PEs on one GPU, so each library runs ONE PE whose target is itself, through the
# whole API path (on-queue put to self, collectives on a team of one, thread and block
# collectives, reductions 8 B .. 1 MiB), REPEAT times (default 3), the libraries alternating
# (nvshmem, ishmem, then ishmem, nvshmem, ...), all in this one call. Then ishmem alone with 2
# PEs on the GPU (a case NVSHMEM cannot run) REPEAT_2PE times (default 1). With
# ISHMEM_BASE_PREFIX=<an older install> a third build, "ishmem_base", joins the alternation:
# the A/B of a library change inside one call. bench/onegpu_table.py writes
# $OUT/onegpu-table.md: per row the median and range of each library, and the ratio.
# ISHMEM_ALT_ENV="VAR=value ..." adds "ishmem_alt": the current build run with that environment
# (the A/B of a setting, e.g. ISHMEM_QUEUE_KERNEL_MAX=0); NOCHK=1 adds "ishmem_nochk", built with
# -DISHMEM_NO_DEVICE_CHECKS (what the device argument checks cost).
#   ONE_ARGS="..."  gpu_bench arguments of the mode (default: the rows of issue 16, --quick)
#
# What it does:
#  1. records nvidia-smi, nvidia-smi topo -m, nvcc and NVSHMEM versions into $OUT;
#  2. builds gpu_bench against NVSHMEM (the nvidia-nvshmem-cu13 wheel:
#     python3 -c "import nvidia.nvshmem as m; print(m.__path__[0])") with
#     -DBENCH_PEER_NVSHMEM, and against ishmem when a libishmem.so with the CUDA
#     device API is there ($ISHMEM_PREFIX, default build/prefix; skipped if not);
#  3. runs each with 2 PEs in fork mode under `timeout` (PE r on GPU r % ngpus):
#     $OUT/gpu-<lib>.csv (CSV of host_bench.c) and $OUT/gpu-<lib>.log;
#  4. on a machine with 2+ GPUs, also runs NVSHMEM with both PEs on ONE GPU
#     (CUDA_VISIBLE_DEVICES=0) under a short timeout and records whether it
#     hangs ($OUT/gpu-shared-gpu-probe.txt; NVSHMEM 3.4.5 hung there before,
#     see shared/DEVICE-NOTES.md). With only 1 GPU visible the main run is that
#     case: a hang in init is caught by INIT_TIMEOUT and recorded, not waited for;
#  5. python3 bench/compare.py -> $OUT/gpu-table.md and $OUT/gpu-plots/*.png,
#     and prints the rows that DEVICE-NOTES has NVSHMEM baselines for.
#
# Environment:
#   OUT=bench/results        output folder (the device tool provides $OUT)
#   NVSHMEM_HOME=...         NVSHMEM folder (include/, lib/) instead of the wheel's
#   NVCC=...                 nvcc (default: PATH, /usr/local/cuda/bin, the pip wheel)
#   ISHMEM_PREFIX=build/prefix  ishmem install (lib/libishmem.so)
#   RUN_TIMEOUT=240          seconds for one full run (--quick: 90)
#   ISHMEM_TIMEOUT=150       seconds for the ishmem run (--quick: 60)
#   PROBE_TIMEOUT=60         seconds for the shared-GPU probe (a few rows)
#   INIT_TIMEOUT=40          a run whose 2 PEs have not both finished init by
#                            then is a hang: killed and recorded
#   DEADLINE=520             the whole script stays under this many seconds
#   BENCH_MACHINE=<name>     machine column (default <gpu name>-x<ngpus>)
#   REPEAT=N                 two-GPU mode: N rounds, the libraries alternating (default 1);
#                            x2-<lib>-<i>.csv and bench/twogpu_table.py's twogpu-table.md
#   ISHMEM_BIN=, ISHMEM_BASE_BIN=, NVSHMEM_BIN=   gpu_bench binaries built elsewhere (nvcc on
#                            the CPU machine, rpath to the prefix they run with), used as they
#                            are instead of building; ISHMEM_BASE_BIN adds ishmem_base (the A/B)
# Exit status: 0 when every library that was built ran and verified; 1 otherwise.
set -u -o pipefail

T0=$(date +%s)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BENCH="$ROOT/bench"
BUILD="$BENCH/build"
OUT=${OUT:-$BENCH/results}
QUICK=()
ONLY=""
PROBE=1
ONE=""
EXTRA=()
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) QUICK=(--quick) ;;
        --only) ONLY=$2; shift ;;
        --only=*) ONLY=${1#--only=} ;;
        --no-shared-probe) PROBE=0 ;;
        --one-gpu) ONE=1 ;;
        --two-pe) ONE=0 ;;
        --) shift; EXTRA=("$@"); break ;;
        -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d'; exit 0 ;;
        *) echo "run_gpu.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done
if [ ${#QUICK[@]} -gt 0 ]; then
    RUN_TIMEOUT=${RUN_TIMEOUT:-90}; ISHMEM_TIMEOUT=${ISHMEM_TIMEOUT:-60}; PROBE=0
else
    RUN_TIMEOUT=${RUN_TIMEOUT:-240}; ISHMEM_TIMEOUT=${ISHMEM_TIMEOUT:-150}
fi
PROBE_TIMEOUT=${PROBE_TIMEOUT:-60}
INIT_TIMEOUT=${INIT_TIMEOUT:-40}
DEADLINE=${DEADLINE:-520}
mkdir -p "$OUT" "$BUILD"
OUT=$(cd "$OUT" && pwd)

note() { echo "run_gpu.sh: $*" >&2; }
rows() { grep -vc '^lib,' "$1" 2>/dev/null || true; } # CSV rows, header left out
warn() { echo "run_gpu.sh: WARNING: $*" >&2; }
# seconds left before DEADLINE, minus a margin for compare.py
left() { echo $((DEADLINE - ($(date +%s) - T0) - 20)); }
cap() { # cap SECONDS: min(SECONDS, time left)
    local l; l=$(left)
    [ "$l" -lt "$1" ] && echo "$l" || echo "$1"
}

# NVSHMEM on these machines (shared/DEVICE-NOTES.md): no NVLS/multicast, no
# remote transport. gpu_bench sets them too when unset.
export NVSHMEM_DISABLE_NVLS=1 NCCL_NVLS_ENABLE=0 NVSHMEM_REMOTE_TRANSPORT=none
export TORCH_SYMM_MEM_DISABLE_MULTICAST=1

# ---------------------------------------------------------------- machine
{
    echo "# date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "# git: $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
    nvidia-smi 2>&1 || echo "nvidia-smi failed"
} >"$OUT/nvidia-smi.txt"
nvidia-smi topo -m >"$OUT/nvidia-smi-topo.txt" 2>&1 || echo "nvidia-smi topo -m failed" >>"$OUT/nvidia-smi-topo.txt"
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ' || true)
[ -n "${CUDA_VISIBLE_DEVICES:-}" ] && NGPU=$(echo "$CUDA_VISIBLE_DEVICES" | tr ',' '\n' | grep -c .)
note "GPUs visible: $NGPU"
[ -z "$ONE" ] && { [ "$NGPU" -lt 2 ] && ONE=1 || ONE=0; }

# ---------------------------------------------------------------- toolchain
PY=${PYTHON:-}
if [ -z "$PY" ]; then
    for cand in python3 /usr/bin/python3; do
        if command -v "$cand" >/dev/null && "$cand" -c 'import matplotlib' 2>/dev/null; then
            PY=$cand; break
        fi
    done
    PY=${PY:-python3}
fi
NV=${NVSHMEM_HOME:-}
if [ -z "$NV" ]; then
    for cand in "$PY" python3 /usr/bin/python3; do
        NV=$("$cand" -c "import nvidia.nvshmem as m; print(list(m.__path__)[0])" 2>/dev/null) && [ -n "$NV" ] && break
        NV=""
    done
fi
NVCC=${NVCC:-}
if [ -z "$NVCC" ]; then
    if command -v nvcc >/dev/null; then NVCC=$(command -v nvcc)
    elif [ -x /usr/local/cuda/bin/nvcc ]; then NVCC=/usr/local/cuda/bin/nvcc
    else
        d=$("$PY" -c "import nvidia.cu13 as m; print(list(m.__path__)[0])" 2>/dev/null || true)
        [ -n "$d" ] && [ -x "$d/bin/nvcc" ] && NVCC="$d/bin/nvcc"
    fi
fi
[ -n "$NVCC" ] || { warn "no nvcc found"; exit 1; }
CUDA_LIB=$(cd "$(dirname "$NVCC")/.." && pwd)/lib
NVCCFLAGS=(-O2 -std=c++17 -arch=sm_90 -Xcompiler "-Wall,-Wextra" -lineinfo)
[ -d "$CUDA_LIB" ] && NVCCFLAGS+=(-L"$CUDA_LIB")  # pip-wheel nvcc keeps cudart in ../lib
{
    echo "nvcc: $NVCC"; "$NVCC" --version
    echo "NVSHMEM: ${NV:-not found}"
    [ -n "$NV" ] && grep -h 'define NVSHMEM_VENDOR_.*_VERSION' "$NV"/include/non_abi/nvshmem_version.h 2>/dev/null
    echo "python: $PY"
    env | grep -E '^(NVSHMEM_|NCCL_|CUDA_VISIBLE|ISHMEM_)' | sort
} >"$OUT/gpu-env.txt" 2>&1

# ---------------------------------------------------------------- build
libs=()
status=0
rm -f "$BUILD/gpu_bench_nvshmem" "$BUILD/gpu_bench_ishmem" "$BUILD/gpu_bench_ishmem_base" # never run a stale binary
if [ -n "${NVSHMEM_BIN:-}" ] && { [ -z "$ONLY" ] || [ "$ONLY" = nvshmem ]; }; then
    # built by an earlier run_gpu.sh of the same call (saves its ~30 s build)
    cp "$NVSHMEM_BIN" "$BUILD/gpu_bench_nvshmem" && libs+=(nvshmem) && note "nvshmem: prebuilt $NVSHMEM_BIN"
elif [ -z "$ONLY" ] || [ "$ONLY" = nvshmem ]; then
    if [ -z "$NV" ] || [ ! -f "$NV/lib/libnvshmem_device.a" ]; then
        warn "NVSHMEM not found (pip install nvidia-nvshmem-cu13==3.4.5, or set NVSHMEM_HOME)"; status=1
    else
        note "building gpu_bench against NVSHMEM in $NV"
        if "$NVCC" "${NVCCFLAGS[@]}" -rdc=true -DBENCH_PEER_NVSHMEM -I"$BENCH" -I"$NV/include" \
            "$BENCH/gpu_bench.cu" -o "$BUILD/gpu_bench_nvshmem" \
            -L"$NV/lib" -lnvshmem_device -l:libnvshmem_host.so.3 -Xlinker -rpath,"$NV/lib" \
            >"$OUT/build-nvshmem.log" 2>&1; then
            libs+=(nvshmem)
        else
            warn "NVSHMEM build failed:"; tail -20 "$OUT/build-nvshmem.log" >&2; status=1
        fi
    fi
fi
ISHMEM_PREFIX=${ISHMEM_PREFIX:-$ROOT/build/prefix}
if [ -n "${ISHMEM_BIN:-}" ] && { [ -z "$ONLY" ] || [ "$ONLY" = ishmem ]; }; then
    # built elsewhere (nvcc on the CPU machine; its rpath names the prefix it runs with)
    cp "$ISHMEM_BIN" "$BUILD/gpu_bench_ishmem" && libs+=(ishmem) && note "ishmem: prebuilt $ISHMEM_BIN"
elif [ -z "$ONLY" ] || [ "$ONLY" = ishmem ]; then
    so="$ISHMEM_PREFIX/lib/libishmem.so"
    inc="$ISHMEM_PREFIX/include"
    [ -f "$inc/ishmem/cuda_device.cuh" ] || inc="$ROOT/include"
    if [ ! -f "$so" ]; then
        note "no $so: ishmem GPU rows skipped (build it on the CPU machine and carry build/prefix)"
        [ "$ONLY" = ishmem ] && status=1
    elif ! nm -D "$so" 2>/dev/null | grep -c ' T ishmemx_cuda_register_binder' >/dev/null; then
        note "$so has no CUDA device support (ishmemx_cuda_register_binder): ishmem GPU rows skipped"
        [ "$ONLY" = ishmem ] && status=1
    else
        ver=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || true)
        build_ishmem() {
            "$NVCC" "${NVCCFLAGS[@]}" "$@" -DBENCH_VERSION_SUFFIX="\"${ver:+-g$ver}\"" -I"$inc" \
                "$BENCH/gpu_bench.cu" -o "${BIN_OUT:-$BUILD/gpu_bench_ishmem}" \
                -L"$ISHMEM_PREFIX/lib" -lishmem -Xlinker -rpath,"$ISHMEM_PREFIX/lib"
        }
        note "building gpu_bench against ishmem in $ISHMEM_PREFIX (headers $inc)"
        grep -q 'define ISHMEM_HAVE_DEVICE_COLLECTIVES' "$inc/ishmem/cuda_device.cuh" 2>/dev/null ||
            warn "$inc/ishmem/cuda_device.cuh has no device collectives: ishmem collective rows left out"
        # full build first; then without the collective rows, without the queue
        # rows, without both (each fallback is a warning: rows are missing)
        : >"$OUT/build-ishmem.log"
        built=0
        for flags in "" "-DBENCH_NO_COLL" "-DBENCH_NO_QUEUE" "-DBENCH_NO_QUEUE -DBENCH_NO_COLL"; do
            echo "== build_ishmem $flags" >>"$OUT/build-ishmem.log"
            # shellcheck disable=SC2086
            if build_ishmem $flags >>"$OUT/build-ishmem.log" 2>&1; then
                [ -n "$flags" ] && warn "ishmem built only with $flags (rows left out; see $OUT/build-ishmem.log)"
                libs+=(ishmem); built=1; break
            fi
        done
        if [ $built = 0 ]; then
            warn "ishmem build failed:"; tail -20 "$OUT/build-ishmem.log" >&2
            [ "$ONLY" = ishmem ] && status=1
        fi
    fi
fi

# the A/B base: gpu_bench built against an older install (its own headers: the device API is
# header-only), run beside the current one in the one-GPU mode
if [ -n "${ISHMEM_BASE_BIN:-}" ]; then
    cp "$ISHMEM_BASE_BIN" "$BUILD/gpu_bench_ishmem_base" && libs+=(ishmem_base) && note "ishmem_base: prebuilt $ISHMEM_BASE_BIN"
elif [ -n "${ISHMEM_BASE_PREFIX:-}" ] && [ -f "$ISHMEM_BASE_PREFIX/lib/libishmem.so" ]; then
    note "building gpu_bench against the base install $ISHMEM_BASE_PREFIX"
    if "$NVCC" "${NVCCFLAGS[@]}" -DBENCH_VERSION_SUFFIX="\"-base\"" -I"$ISHMEM_BASE_PREFIX/include" \
        "$BENCH/gpu_bench.cu" -o "$BUILD/gpu_bench_ishmem_base" \
        -L"$ISHMEM_BASE_PREFIX/lib" -lishmem -Xlinker -rpath,"$ISHMEM_BASE_PREFIX/lib" >"$OUT/build-ishmem-base.log" 2>&1; then
        libs+=(ishmem_base)
    else
        warn "base build failed:"; tail -20 "$OUT/build-ishmem-base.log" >&2; status=1
    fi
fi

# the current build with the device argument checks compiled out (-DISHMEM_NO_DEVICE_CHECKS,
# NOCHK=1): what the checks cost per call, in the one-GPU mode
if [ -n "${NOCHK:-}" ] && [[ " ${libs[*]} " == *" ishmem "* ]]; then
    if BIN_OUT=$BUILD/gpu_bench_ishmem_nochk build_ishmem -DISHMEM_NO_DEVICE_CHECKS >"$OUT/build-ishmem-nochk.log" 2>&1; then
        libs+=(ishmem_nochk)
    else
        warn "the -DISHMEM_NO_DEVICE_CHECKS build failed"; tail -5 "$OUT/build-ishmem-nochk.log" >&2
    fi
fi

# a variant of the current build run with extra environment (ISHMEM_ALT_ENV="A=1 B=2"), in the
# one-GPU mode: the A/B of a setting
if [ -n "${ISHMEM_ALT_ENV:-}" ] && [[ " ${libs[*]} " == *" ishmem "* ]]; then
    libs+=(ishmem_alt)
    note "ishmem_alt: the ishmem build with $ISHMEM_ALT_ENV"
fi

# ---------------------------------------------------------------- run
# run_one LIB TIMEOUT CSV LOG: runs gpu_bench_LIB with "${RUN_ENV[@]}" in its
# environment and "${RUN_ARGS[@]}" as arguments, under `timeout`; an init
# that has not finished on both PEs after INIT_TIMEOUT seconds is a hang and
# is killed at once. Sets RC (exit status; 124 = timed out) and HUNG (1/0).
run_one() {
    local lib=$1 t=$2 csv=$3 log=$4 t1 pid n waited=0 bin=${RUN_BIN:-$1}
    t=$(cap "$t"); HUNG=0
    if [ "$t" -lt 10 ]; then warn "no time left for $lib"; RC=124; return; fi
    note "$lib: ${RUN_ENV[*]} gpu_bench ${RUN_ARGS[*]} (timeout ${t}s) -> $csv"
    t1=$(date +%s)
    env "${RUN_ENV[@]}" timeout -k 5 "$t" "$BUILD/gpu_bench_$bin" "${RUN_ARGS[@]}" >"$csv" 2>"$log" &
    pid=$!
    while kill -0 "$pid" 2>/dev/null; do
        n=$(grep -c 'initialised in' "$log" 2>/dev/null); [ "${n:-0}" -ge "${RUN_NPES:-2}" ] && break
        if [ "$waited" -ge "$INIT_TIMEOUT" ]; then
            note "$lib: the PEs did not finish init within ${INIT_TIMEOUT}s: hang, killing it"
            HUNG=1; kill -TERM "$pid" 2>/dev/null; break
        fi
        sleep 1; waited=$((waited + 1))
    done
    wait "$pid"; RC=$?
    [ "$RC" = 124 ] || [ "$RC" = 137 ] && HUNG=1
    note "$lib: exit status $RC after $(( $(date +%s) - t1 ))s; $(rows "$csv") rows"
}
hang_note() { # hang_note FILE WHAT LOG: describes the last run_one
    {
        if [ "$HUNG" = 1 ]; then
            echo "HANG: $1 did not finish (init limit ${INIT_TIMEOUT}s, run limit as set; killed, exit status $RC)."
        else
            echo "$1: exit status $RC."
        fi
        echo "last lines of $2:"
        tail -5 "$2"
    }
}

csvs=()
if [ "$ONE" = 1 ]; then
    # ------------------------------------------------ the one-GPU side-by-side mode
    REPEAT=${REPEAT:-3}; REPEAT_2PE=${REPEAT_2PE:-1}
    if [ -n "${ONE_ARGS:-}" ]; then read -r -a OA <<<"$ONE_ARGS"; else
        OA=(--quick --scopes thread,block --grids 32 --max-bytes 16777216 --coll-sizes 8,64,4096,32768,1048576
            --ops putmem_nbi,getmem_nbi,p,putmem_quiet,g,fetch_add,compare_swap,put_signal,barrier_all,putmem_on_queue,putmem_on_queue_lat,putmem_on_queue_pipelined,barrier_all_on_queue,putmem_blocking,broadcast,fcollect,alltoall,sum_reduce,team_sync,broadcast_on_queue,fcollect_on_queue,alltoall_on_queue,sum_reduce_on_queue,team_sync_on_queue)
    fi
    KIND=${BENCH_MACHINE:-$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 | tr ' ' '_')-x1}
    onecsvs=()
    for i in $(seq 1 "$REPEAT"); do
        order=("${libs[@]}")
        # alternate: odd rounds in build order, even rounds reversed
        if [ $((i % 2)) = 0 ]; then mapfile -t order < <(printf '%s\n' "${libs[@]}" | tac); fi
        for lib in "${order[@]}"; do
            csv="$OUT/one-$lib-$i.csv"; log="$OUT/one-$lib-$i.log"
            RUN_ENV=(NPES=1 BENCH_MACHINE="$KIND"); RUN_ARGS=("${OA[@]}" "${EXTRA[@]}"); RUN_NPES=1; RUN_BIN=$lib
            if [ "$lib" = ishmem_alt ]; then read -r -a alt <<<"$ISHMEM_ALT_ENV"; RUN_ENV+=("${alt[@]}"); RUN_BIN=ishmem; fi
            run_one "$lib" "$ISHMEM_TIMEOUT" "$csv" "$log"
            if grep -q 'VERIFY FAILED' "$log" || [ "$RC" != 0 ]; then
                warn "$lib (1 PE, round $i) failed, exit status $RC:"; grep 'VERIFY FAILED' "$log" | head -3 >&2; tail -3 "$log" >&2
                status=1
            fi
            [ "$(wc -l <"$csv")" -gt 1 ] && onecsvs+=("$csv")
        done
    done
    for lib in "${libs[@]}"; do
        # NVSHMEM hangs with 2 PEs on one GPU (DEVICE-NOTES); ishmem_alt/_nochk: A/Bs of 1 PE
        case $lib in nvshmem|ishmem_alt|ishmem_nochk) continue ;; esac
        for i in $(seq 1 "$REPEAT_2PE"); do
            csv="$OUT/two-$lib-$i.csv"; log="$OUT/two-$lib-$i.log"
            RUN_ENV=(NPES=2 BENCH_MACHINE="$KIND"); RUN_ARGS=("${OA[@]}" "${EXTRA[@]}"); RUN_NPES=2; RUN_BIN=$lib
            if [ "$lib" = ishmem_alt ]; then read -r -a alt <<<"$ISHMEM_ALT_ENV"; RUN_ENV+=("${alt[@]}"); RUN_BIN=ishmem; fi
            run_one "$lib" "$ISHMEM_TIMEOUT" "$csv" "$log"
            if grep -q 'VERIFY FAILED' "$log" || [ "$RC" != 0 ]; then
                warn "$lib (2 PEs on one GPU, round $i) failed, exit status $RC"; tail -3 "$log" >&2; status=1
            fi
            [ "$(wc -l <"$csv")" -gt 1 ] && onecsvs+=("$csv")
        done
    done
    unset RUN_NPES RUN_BIN
    if [ ${#onecsvs[@]} -gt 0 ]; then
        "$PY" "$BENCH/onegpu_table.py" --kind "$KIND" --command "bench/run_gpu.sh --one-gpu (REPEAT=$REPEAT)" \
            --out "$OUT/onegpu-table.md" "${onecsvs[@]}" 2>"$OUT/onegpu-table.log" && cat "$OUT/onegpu-table.md" ||
            { warn "onegpu_table.py failed:"; tail -5 "$OUT/onegpu-table.log" >&2; status=1; }
    fi
    note "done in $(( $(date +%s) - T0 ))s; outputs in $OUT (exit status $status)"
    exit $status
fi
# REPEAT rounds (default 1), the libraries alternating (odd rounds in build order, even rounds
# reversed; ishmem_base, from ISHMEM_BASE_PREFIX, joins them: the A/B of a change on two GPUs).
# Round 1 writes gpu-<lib>.csv/.log (compare.py's table); every round also x2-<lib>-<i>.csv,
# which bench/twogpu_table.py turns into $OUT/twogpu-table.md (median [min-max] per library).
REPEAT2=${REPEAT:-1}
x2csvs=()
for i in $(seq 1 "$REPEAT2"); do
    order=("${libs[@]}")
    if [ $((i % 2)) = 0 ]; then mapfile -t order < <(printf '%s\n' "${libs[@]}" | tac); fi
    for lib in "${order[@]}"; do
        case $lib in ishmem_alt|ishmem_nochk) continue ;; esac
        if [ "$i" = 1 ]; then csv="$OUT/gpu-$lib.csv"; log="$OUT/gpu-$lib.log"; else
            csv="$OUT/x2-$lib-$i.csv"; log="$OUT/x2-$lib-$i.log"; fi
        to=$RUN_TIMEOUT; [ "${lib%_base}" = ishmem ] && to=$ISHMEM_TIMEOUT
        # with one GPU both PEs share it: NVSHMEM 3.4.5 hung in init there
        # (DEVICE-NOTES); the init watchdog records that instead of waiting
        [ "$NGPU" -lt 2 ] && note "$lib: only $NGPU GPU visible: both PEs share it"
        RUN_ENV=(); RUN_ARGS=("${QUICK[@]}" "${EXTRA[@]}"); RUN_BIN=$lib
        run_one "$lib" "$to" "$csv" "$log"
        if grep -q 'VERIFY FAILED' "$log"; then
            warn "$lib: verification failed:"; grep 'VERIFY FAILED' "$log" | head -5 >&2; status=1
        fi
        if [ "$RC" != 0 ]; then
            hang_note "$lib, 2 PEs on $NGPU GPU(s)" "$log" | tee "$OUT/gpu-$lib-failure.txt" >&2
            status=1
        fi
        if [ "$(wc -l <"$csv")" -gt 1 ]; then
            [ "$i" = 1 ] && [ "$lib" != ishmem_base ] && csvs+=("$csv")
            x="$OUT/x2-$lib-$i.csv"; [ "$csv" = "$x" ] || cp "$csv" "$x"
            x2csvs+=("$x")
        fi
    done
done
unset RUN_BIN
if [ "$REPEAT2" -gt 1 ] || [[ " ${libs[*]} " == *" ishmem_base "* ]]; then
    [ ${#x2csvs[@]} -gt 0 ] && { "$PY" "$BENCH/twogpu_table.py" --kind "${BENCH_MACHINE:-$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1 | tr ' ' '_')-x$NGPU}" \
        --command "bench/run_gpu.sh (REPEAT=$REPEAT2) ${EXTRA[*]}" --out "$OUT/twogpu-table.md" "${x2csvs[@]}" 2>"$OUT/twogpu-table.log" ||
        { warn "twogpu_table.py failed:"; tail -5 "$OUT/twogpu-table.log" >&2; status=1; }; }
fi

# both PEs on one GPU (a case where ishmem should do better than NVSHMEM):
# short run of a few rows; the result (or the hang) is recorded, not fatal
if [ $PROBE = 1 ] && [ "$NGPU" -ge 2 ] && [[ " ${libs[*]} " == *" nvshmem "* ]]; then
    log="$OUT/gpu-shared-gpu-probe.log"
    RUN_ENV=(CUDA_VISIBLE_DEVICES=0 BENCH_MACHINE=shared-gpu0)
    RUN_ARGS=(--quick --ops "putmem_nbi,p,put_signal,barrier_all" --scopes block --grids 32)
    run_one nvshmem "$PROBE_TIMEOUT" "$OUT/gpu-shared-gpu-probe.csv" "$log"
    hang_note "NVSHMEM, 2 PEs on 1 GPU (CUDA_VISIBLE_DEVICES=0)" "$log" \
        | tee "$OUT/gpu-shared-gpu-probe.txt" >&2
fi

# ---------------------------------------------------------------- compare
if [ ${#csvs[@]} -gt 0 ]; then
    if "$PY" "$BENCH/compare.py" --out "$OUT/gpu-table.md" --plots "$OUT/gpu-plots" "${csvs[@]}" \
        >/dev/null 2>"$OUT/compare.log"; then
        note "wrote $OUT/gpu-table.md and $OUT/gpu-plots/"
    else
        warn "compare.py failed:"; tail -5 "$OUT/compare.log" >&2
    fi
    # rows with NVSHMEM 3.4.5 baselines in shared/DEVICE-NOTES.md (nvidia-h200-x2)
    echo
    echo "sanity check against DEVICE-NOTES (NVSHMEM 3.4.5, nvidia-h200-x2):"
    awk -F, '
        BEGIN {
            b["block|putmem_nbi_32x1024|268435456"] = "361 GB/s"
            b["queue|putmem_on_queue|268435456"] = "395 GB/s"
            b["block|getmem_nbi_32x1024|268435456"] = "365 GB/s"
            b["thread|putmem_quiet|8"] = "1.41 us"
            b["thread|p|4"] = "1.04 us"
            b["thread|fetch_add|8"] = "0.86 us"
            b["thread|put_signal|8"] = "4.10 us"
            b["thread|barrier_all|0"] = "2.50 us"
            b["queue|barrier_all_on_queue|0"] = "4.2-4.7 us"
            b["host|putmem_blocking|8"] = "6.9-8.2 us"
            printf "  %-8s %-7s %-26s %10s %12s %s\n", "lib", "scope", "op", "bytes", "measured", "baseline"
        }
        $1 != "lib" { k = $5 "|" $4 "|" $7; if (k in b)
            printf "  %-8s %-7s %-26s %10s %8.4g %-4s %s\n", $1, $5, $4, $7, $9, $10, b[k] }
    ' "${csvs[@]}"
    echo
    for c in "${csvs[@]}"; do echo "$c: $(rows "$c") rows"; done
fi
note "done in $(( $(date +%s) - T0 ))s; outputs in $OUT (exit status $status)"
exit $status
