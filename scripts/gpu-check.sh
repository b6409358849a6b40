#!/usr/bin/env bash
# shellcheck disable=SC2016
# GPU check of the CUDA backend, run on a GPU machine from the repository root in one call
# (about 2-4 minutes). Needs no Rust and no network: it installs the library built elsewhere
# (target/release/{libishmem.so,ishmrun,ishmem-info}, carried to the machine) with
# scripts/install-prefix.sh, compiles tests/gpu with nvcc against the install as users do
# (nvcc prog.cu $(pkg-config --cflags --libs ishmem)), runs them with ishmrun and mpirun, and
# prints one line per check and "gpu-check: N passed, M failed" at the end. Logs (and, for a
# failed run, its rerun with ISHMEM_DEBUG=1) go to $OUT/gpu-check/ (default build/gpu-check).
#   scripts/gpu-check.sh            NVCC=..., ARCH=sm_90, NP=2 may be set
#   ONLY=REGEX scripts/gpu-check.sh  builds everything, runs only the checks whose names match
#                                    (e.g. ONLY='fabric' or ONLY='coll_ops|queue_ops|proxy_ops')
#   BUILD_ONLY=REGEX                 compiles only the test programs whose names match (with
#                                    ONLY: a short lease; checks of other programs are 'not built')
#   NO_PTX_TEXT=1                    skips the advisory PTX text comparison (a short lease)
#   NO_DEBUG_RERUN=1                 no ISHMEM_DEBUG=1 rerun of a failed check (a short lease)
#   COLL_LIMIT=S                     seconds for each coll_ops run across nodes (default 300)
set -u
cd "$(dirname "$0")/.." || exit 1
ROOT=$PWD
OUTDIR=${OUT:-$ROOT/build}/gpu-check
B=$ROOT/build/gpu-check-work
PREFIX=$B/prefix
mkdir -p "$OUTDIR" "$B"
LOG=$OUTDIR/summary.log
: >"$LOG"
say() { echo "$*" | tee -a "$LOG"; }
pass=0
fail=0
ok() { pass=$((pass + 1)); say "gpu-check: $1: ok"; }
bad() { fail=$((fail + 1)); say "gpu-check: $1: FAILED ${2:-}"; }

NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
CUDA_HOME=$(dirname "$(dirname "$NVCC")")
if [ -z "${ARCH:-}" ]; then
    cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -n 1 | tr -d ' .')
    ARCH=sm_${cc:-90}
fi
NP=${NP:-2}
{
    echo "== $(date -u) on $(hostname)"
    nvidia-smi 2>&1 | head -n 20
    nvidia-smi topo -m 2>&1 | head -n 10
    "$NVCC" --version | tail -n 2
    echo "ARCH=$ARCH NP=$NP NVCC=$NVCC"
    env | grep -E '^(NVSHMEM|NCCL|CUDA|ISHMEM)_' | sort
} >"$OUTDIR/machine.log" 2>&1

# ---- install ----
if scripts/install-prefix.sh "$PREFIX" >"$OUTDIR/install.log" 2>&1; then ok install; else
    bad install "(see install.log)"
    say "gpu-check: $pass passed, $fail failed"
    exit 1
fi
"$PREFIX/bin/ishmem-info" >"$OUTDIR/ishmem-info.log" 2>&1
if grep -q "device(s) visible" "$OUTDIR/ishmem-info.log"; then ok ishmem-info; else bad ishmem-info "(no CUDA device seen; see ishmem-info.log)"; fi

# ---- the committed PTX is what this nvcc makes ----
if NVCC=$NVCC scripts/gen-ptx.sh --check >"$OUTDIR/ptx-check.log" 2>&1; then ok ptx-current; else bad ptx-current "(see ptx-check.log)"; fi
# ... and its text is what this machine's nvcc makes of the sources, kernel by kernel (issue 26)
if [ -n "${NO_PTX_TEXT:-}" ]; then say "gpu-check: ptx-text: skipped (NO_PTX_TEXT)"
elif NVCC=$NVCC scripts/gen-ptx.sh --check-text >"$OUTDIR/ptx-text.log" 2>&1; then ok ptx-text; else say "gpu-check: ptx-text: WARNING, differs (advisory: nvcc text is not reproducible run to run or across nvcc builds; see ptx-text.log and scripts/cuda-compile-check.sh)"; fi

# ---- compile ----
if command -v pkg-config >/dev/null 2>&1; then
    FLAGS=$(PKG_CONFIG_PATH=$PREFIX/lib/pkgconfig pkg-config --cflags --libs ishmem)
else
    FLAGS="-I$PREFIX/include -L$PREFIX/lib -lishmem -Xlinker -rpath=$PREFIX/lib"
fi
# The pip-installed CUDA keeps its libraries in lib/, where nvcc does not look by itself.
if [ -e "$CUDA_HOME/lib/libcudart_static.a" ]; then
    FLAGS="$FLAGS -L$CUDA_HOME/lib"
fi
declare -A built
pending=()
build() { # name, nvcc arguments... (compiled side by side; build_wait collects them)
    local name=$1
    shift
    if [ -n "${BUILD_ONLY:-}" ] && ! echo "$name" | grep -qE "$BUILD_ONLY"; then return 0; fi
    rm -f "$B/build-$name.rc"
    # shellcheck disable=SC2086
    ( "$NVCC" -arch="$ARCH" "$@" >"$OUTDIR/build-$name.log" 2>&1; echo $? >"$B/build-$name.rc" ) &
    pending+=("$name")
}
build_wait() {
    wait
    local name
    for name in "${pending[@]}"; do
        if [ "$(cat "$B/build-$name.rc" 2>/dev/null)" = 0 ]; then
            built[$name]=1
            ok "build $name"
        else
            bad "build $name" "(see build-$name.log)"
        fi
    done
}
# shellcheck disable=SC2086
build host_ops tests/gpu/host_ops.c $FLAGS -lpthread -o "$B/host_ops"
# shellcheck disable=SC2086
build kernel_state tests/gpu/kernel_state.cu $FLAGS -o "$B/kernel_state"
build dstate_module -cubin -I"$PREFIX/include" tests/gpu/modules/dstate_module.cu -o "$B/dstate_module.cubin"
# shellcheck disable=SC2086
build cumodule tests/gpu/cumodule.cu $FLAGS -ldl -o "$B/cumodule"
# shellcheck disable=SC2086
build kernel_api tests/gpu/kernel_api.cu $FLAGS -o "$B/kernel_api"
build proxy_ops tests/gpu/proxy_ops.cu $FLAGS -o "$B/proxy_ops"
# shellcheck disable=SC2086
build queue_ops tests/gpu/queue_ops.cu $FLAGS -o "$B/queue_ops"
# shellcheck disable=SC2086
build coll_ops tests/gpu/coll_ops.cu $FLAGS -o "$B/coll_ops"
# shellcheck disable=SC2086
build ext_ops tests/gpu/ext_ops.cu $FLAGS -o "$B/ext_ops"
# shellcheck disable=SC2086
build multi tests/gpu/multi/main.cu tests/gpu/multi/part.cu $FLAGS -o "$B/multi"
# the CPU suite's negative-test program, for the call-agreement checks on the GPU heap
# shellcheck disable=SC2086
build bad_input -Itests/c tests/c/bad_input.c $FLAGS -lpthread -o "$B/bad_input"
if [ -e examples/hello_gpu.cu ]; then
    # shellcheck disable=SC2086
    build hello_gpu examples/hello_gpu.cu $FLAGS -o "$B/hello_gpu"
fi

build_wait

# ---- run ----
RUN=("$PREFIX/bin/ishmrun" --timeout 90)
MPIRUN=(mpirun --allow-run-as-root -np)
# selected NAME: whether ONLY (a regex, unset: all) selects the check NAME.
selected() { [ -z "${ONLY:-}" ] || echo "$1" | grep -qE "$ONLY"; }
# run NAME PROG -- env/command...: passes when the command exits 0; a failure is rerun once
# with ISHMEM_DEBUG=1. LIMIT (seconds, default 150) bounds each of the two.
run() {
    local name=$1 prog=$2 limit=${LIMIT:-150}
    shift 3
    selected "$name" || return 0
    if [ -z "${built[$prog]:-}" ]; then
        bad "$name" "(not built)"
        return
    fi
    if timeout "$limit" env "$@" >"$OUTDIR/$name.log" 2>&1; then
        ok "$name"
    else
        bad "$name" "(status $?; see $name.log, $name.debug.log)"
        tail -n 15 "$OUTDIR/$name.log" | sed 's/^/    /' | tee -a "$LOG"
        [ -n "${NO_DEBUG_RERUN:-}" ] || timeout "$limit" env ISHMEM_DEBUG=1 "$@" >"$OUTDIR/$name.debug.log" 2>&1
    fi
}
# expect_fail NAME PROG PATTERN -- env/command...: passes when the command fails and prints PATTERN.
expect_fail() {
    local name=$1 prog=$2 pattern=$3
    shift 4
    selected "$name" || return 0
    if [ -z "${built[$prog]:-}" ]; then
        bad "$name" "(not built)"
        return
    fi
    if timeout 150 env "$@" >"$OUTDIR/$name.log" 2>&1; then
        bad "$name" "(exited 0; see $name.log)"
    elif grep -qE "$pattern" "$OUTDIR/$name.log"; then
        ok "$name"
    else
        bad "$name" "(no line matches '$pattern'; see $name.log)"
    fi
}

run host_ops.ishmrun host_ops -- "${RUN[@]}" -n "$NP" "$B/host_ops"
run host_ops.samegpu host_ops -- CUDA_VISIBLE_DEVICES=0 "${RUN[@]}" -n 2 "$B/host_ops"
run host_ops.4pe host_ops -- ISHMEM_SYMMETRIC_SIZE=256M "${RUN[@]}" -n 4 "$B/host_ops"
run host_ops.mpirun host_ops -- "${MPIRUN[@]}" "$NP" "$B/host_ops"
run host_ops.1pe host_ops -- "$B/host_ops"
run host_ops.cpu host_ops -- ISHMEM_GPU=0 EXPECT_GPU=0 "${RUN[@]}" -n "$NP" "$B/host_ops"
# Fabric mode (issue 10): the host API on the GPU heap between 2 pretend nodes over
# tcp;ofi_rxm on loopback; the other node's GPU heap is reached through its staging mailbox
# (ISHMEM_INFO=1 prints the provider, its FI_HMEM support and the heap path in the log).
FAB=(ISHMEM_NODE_SPLIT=2 FI_TCP_IFACE=lo "ISHMEM_OFI_PROVIDER=tcp;ofi_rxm")
# With 2 or more GPUs the runs across pretend nodes put one PE on each GPU, as users run
# (issue 23): ISHMEM_GPU_DEVICE = rank modulo the GPU count, from ishmrun's or mpirun's rank
# (each PE is local rank 0 of its pretend node, so by default all would take GPU 0); 2 PEs on
# one GPU stay covered by the .samegpu runs. One GPU: every run shares it.
NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
PERGPU=()
if [ "${NGPU:-0}" -ge 2 ]; then
    printf '%s\n' '#!/bin/sh' 'r=${ISHMRUN_RANK:-${OMPI_COMM_WORLD_RANK:-${PMIX_RANK:-0}}}' \
        "export ISHMEM_GPU_DEVICE=\$((r % $NGPU))" 'exec "$@"' >"$B/pergpu.sh"
    chmod +x "$B/pergpu.sh"
    PERGPU=("$B/pergpu.sh")
    say "gpu-check: across pretend nodes: one PE per GPU ($NGPU GPUs, ISHMEM_GPU_DEVICE = rank % $NGPU), and 2 PEs on GPU 0 (.samegpu)"
fi
run host_ops.fabric.2pe host_ops -- "${FAB[@]}" ISHMEM_INFO=1 ISHMEM_GPU=1 "${RUN[@]}" -n 2 "${PERGPU[@]}" "$B/host_ops"
run host_ops.fabric.samegpu host_ops -- "${FAB[@]}" ISHMEM_GPU=1 CUDA_VISIBLE_DEVICES=0 "${RUN[@]}" -n 2 "$B/host_ops"
run host_ops.fabric.4pe host_ops -- "${FAB[@]}" ISHMEM_GPU=1 ISHMEM_SYMMETRIC_SIZE=256M "${RUN[@]}" -n 4 "${PERGPU[@]}" "$B/host_ops"
run host_ops.fabric.mpirun host_ops -- "${FAB[@]}" ISHMEM_GPU=1 "${MPIRUN[@]}" 2 "${PERGPU[@]}" "$B/host_ops"
# The proxy ring (issue 13): kernels reach the PEs of the other pretend node through it; with
# 4 PEs as 2 nodes of 2, a kernel reaches its node peer directly and the other node by proxy.
run proxy_ops.1node proxy_ops -- ISHMEM_GPU=1 "${RUN[@]}" -n 2 "$B/proxy_ops"
run proxy_ops.fabric.2pe proxy_ops -- "${FAB[@]}" ISHMEM_GPU=1 "${RUN[@]}" -n 2 "${PERGPU[@]}" "$B/proxy_ops"
[ "${#PERGPU[@]}" -gt 0 ] && run proxy_ops.fabric.samegpu proxy_ops -- "${FAB[@]}" ISHMEM_GPU=1 CUDA_VISIBLE_DEVICES=0 "${RUN[@]}" -n 2 "$B/proxy_ops"
run proxy_ops.fabric.4pe proxy_ops -- "${FAB[@]}" ISHMEM_GPU=1 ISHMEM_SYMMETRIC_SIZE=256M "${RUN[@]}" -n 4 "${PERGPU[@]}" "$B/proxy_ops"
run proxy_ops.fabric.mpirun proxy_ops -- "${FAB[@]}" ISHMEM_GPU=1 "${MPIRUN[@]}" 2 "${PERGPU[@]}" "$B/proxy_ops"
run proxy_ops.fabric.mpirun4 proxy_ops -- "${FAB[@]}" ISHMEM_GPU=1 ISHMEM_SYMMETRIC_SIZE=256M "${MPIRUN[@]}" 4 "${PERGPU[@]}" "$B/proxy_ops"
# Collectives across nodes (issue 13): device collectives and team syncs of a team with a PE
# on another node go through the proxy ring (the host collective runs them); queue collectives
# of such teams take the one-kernel path at every size (the copy-engine and whole-GPU paths
# map peer heaps: forced on for every size in the .copyengines run, where the teams across
# nodes must still bypass them). 2 nodes of 1 PE and 2 nodes of 2 PEs (world and the strided
# team {1, 3} span both; coll_ops' forms: host, thread, block, warp, queue).
# On by default since issue 23: coll_ops.fabric.2pe hung on every machine (2026-11-25 on
# nvidia-h100-x1, 2026-11-26 on nvidia-h100-x2 one PE per GPU) in the first
# sync_all_on_queue after a team_sync_on_queue: the queue kernels' module was loaded at its
# first use, and cuModuleLoadData waits for every running kernel (the team sync, waiting for the
# proxy) while holding the driver's context lock, which the proxy's copies need. The library's
# modules now load at init. The 2-PE run traces each call with its time (COLL_OPS_TRACE=1).
CL=${COLL_LIMIT:-300}
RUN_LONG=("$PREFIX/bin/ishmrun" --timeout $((CL - 20)))
LIMIT=$CL run coll_ops.fabric.2pe coll_ops -- "${FAB[@]}" ISHMEM_GPU=1 COLL_OPS_TRACE=1 "${RUN_LONG[@]}" -n 2 "${PERGPU[@]}" "$B/coll_ops"
[ "${#PERGPU[@]}" -gt 0 ] && LIMIT=$CL run coll_ops.fabric.samegpu coll_ops -- "${FAB[@]}" ISHMEM_GPU=1 CUDA_VISIBLE_DEVICES=0 \
    "${RUN_LONG[@]}" -n 2 "$B/coll_ops"
LIMIT=$CL run coll_ops.fabric.4pe coll_ops -- "${FAB[@]}" ISHMEM_GPU=1 ISHMEM_SYMMETRIC_SIZE=256M "${RUN_LONG[@]}" -n 4 "${PERGPU[@]}" "$B/coll_ops"
LIMIT=$CL run coll_ops.fabric.mpirun coll_ops -- "${FAB[@]}" ISHMEM_GPU=1 "${MPIRUN[@]}" 2 "${PERGPU[@]}" "$B/coll_ops"
LIMIT=$CL run coll_ops.fabric.copyengines coll_ops -- "${FAB[@]}" ISHMEM_GPU=1 ISHMEM_QUEUE_KERNEL_MAX=0 \
    ISHMEM_QUEUE_REDUCE_SPLIT_MIN=0 "${RUN_LONG[@]}" -n 2 "${PERGPU[@]}" "$B/coll_ops"
# queue_ops across nodes: the typed RMA families on the queue within the node; putmem/getmem
# (device, pinned and pageable host buffers), put_signal with a wait on the queue, iput and ibget
# on the queue to a PE of the other node (proxy kernels of cuda/queue_remote_kernels.cu); and
# barrier_all/sync_all_on_queue over every node (device puts through the proxy before them must
# have landed).
run queue_ops.fabric.2pe queue_ops -- "${FAB[@]}" ISHMEM_GPU=1 "${RUN[@]}" -n 2 "${PERGPU[@]}" "$B/queue_ops"
[ "${#PERGPU[@]}" -gt 0 ] && run queue_ops.fabric.samegpu queue_ops -- "${FAB[@]}" ISHMEM_GPU=1 CUDA_VISIBLE_DEVICES=0 "${RUN[@]}" -n 2 "$B/queue_ops"
run queue_ops.fabric.4pe queue_ops -- "${FAB[@]}" ISHMEM_GPU=1 ISHMEM_SYMMETRIC_SIZE=256M "${RUN[@]}" -n 4 "${PERGPU[@]}" "$B/queue_ops"
run queue_ops.fabric.mpirun queue_ops -- "${FAB[@]}" ISHMEM_GPU=1 "${MPIRUN[@]}" 2 "${PERGPU[@]}" "$B/queue_ops"
run host_ops.novisible host_ops -- CUDA_VISIBLE_DEVICES= EXPECT_GPU=0 "${RUN[@]}" -n "$NP" "$B/host_ops"
run kernel_state.ishmrun kernel_state -- "${RUN[@]}" -n "$NP" "$B/kernel_state"
run kernel_state.samegpu kernel_state -- CUDA_VISIBLE_DEVICES=0 "${RUN[@]}" -n 2 "$B/kernel_state"
run cumodule.ishmrun cumodule -- "${RUN[@]}" -n "$NP" "$B/cumodule" "$B/dstate_module.cubin"
run kernel_api.ishmrun kernel_api -- "${RUN[@]}" -n "$NP" "$B/kernel_api"
run kernel_api.samegpu kernel_api -- CUDA_VISIBLE_DEVICES=0 "${RUN[@]}" -n 2 "$B/kernel_api"
run queue_ops.ishmrun queue_ops -- "${RUN[@]}" -n "$NP" "$B/queue_ops"
run queue_ops.samegpu queue_ops -- CUDA_VISIBLE_DEVICES=0 "${RUN[@]}" -n 2 "$B/queue_ops"
run coll_ops.ishmrun coll_ops -- "${RUN[@]}" -n "$NP" "$B/coll_ops"
run coll_ops.samegpu coll_ops -- CUDA_VISIBLE_DEVICES=0 "${RUN[@]}" -n 2 "$B/coll_ops"
run coll_ops.4pe coll_ops -- ISHMEM_SYMMETRIC_SIZE=256M "${RUN[@]}" -n 4 "$B/coll_ops"
run coll_ops.3pe coll_ops -- ISHMEM_SYMMETRIC_SIZE=256M "${RUN[@]}" -n 3 "$B/coll_ops"
run coll_ops.mpirun coll_ops -- "${MPIRUN[@]}" "$NP" "$B/coll_ops"
# every block to the copy engines and every queue reduction over the whole GPU; then the
# large reductions in one block
run coll_ops.copyengines coll_ops -- ISHMEM_QUEUE_KERNEL_MAX=0 ISHMEMI_QUEUE_GRID_COPY_MAX=0 ISHMEM_QUEUE_REDUCE_SPLIT_MIN=0 "${RUN[@]}" -n "$NP" "$B/coll_ops"
# the grid copy kernel between the team syncs of the large data collectives (issue 24), at every size
run coll_ops.gridcopy coll_ops -- ISHMEM_QUEUE_KERNEL_MAX=0 "${RUN[@]}" -n "$NP" "$B/coll_ops"
run coll_ops.oneblock coll_ops -- ISHMEM_QUEUE_REDUCE_SPLIT_MIN=1T "${RUN[@]}" -n "$NP" "$B/coll_ops"
# ishmemx_print / timestamp / nop in kernels (issue 12); an ERROR message traps the kernel
run ext_ops.ishmrun ext_ops -- "${RUN[@]}" -n "$NP" "$B/ext_ops"
run ext_ops.debug ext_ops -- ISHMEM_DEBUG=1 EXPECT_DEBUG=1 "${RUN[@]}" -n "$NP" "$B/ext_ops"
expect_fail ext_ops.error ext_ops "^\\[PE 1\\] ERROR: the device is on fire$" -- "${RUN[@]}" -n 2 "$B/ext_ops" error
run multi.ishmrun multi -- "${RUN[@]}" -n "$NP" "$B/multi"
run multi.samegpu multi -- CUDA_VISIBLE_DEVICES=0 "${RUN[@]}" -n 2 "$B/multi"
run multi.mpirun multi -- "${MPIRUN[@]}" "$NP" "$B/multi"
if [ -n "${built[queue_ops]:-}" ] && selected queue_ops.coverage; then
    # Every exported _on_queue name must be referenced by queue_ops or coll_ops (they call and check each).
    grep '_on_queue$' "$PREFIX/share/doc/ishmem/abi/symbols.txt" | sort -u >"$B/queue_syms.txt"
    # queue_ops covers RMA, signal, sync and ordering; coll_ops the collectives.
    { nm -u "$B/queue_ops"; [ -e "$B/coll_ops" ] && nm -u "$B/coll_ops"; } | awk '{print $2}' | grep '_on_queue$' | sort -u >"$B/queue_refs.txt"
    comm -23 "$B/queue_syms.txt" "$B/queue_refs.txt" >"$OUTDIR/queue_coverage.log"
    if [ ! -s "$OUTDIR/queue_coverage.log" ] && [ -s "$B/queue_syms.txt" ]; then
        ok "queue_ops.coverage"
    else
        bad "queue_ops.coverage" "(see queue_coverage.log)"
    fi
fi
if [ -e examples/hello_gpu.cu ]; then
    run hello_gpu.ishmrun hello_gpu -- "${RUN[@]}" -n "$NP" "$B/hello_gpu"
fi
# Leaving the job on the GPU backend (issue 14): every PE returns from main without
# ishmem_finalize (finalized at exit, status 0, no error), and ishmem_global_exit.
run exit.implicit_finalize bad_input -- ISHMEM_GPU=1 "${RUN[@]}" -n 2 "$B/bad_input" implicit_finalize
run exit.global_exit0 bad_input -- ISHMEM_GPU=1 "${RUN[@]}" -n 2 "$B/bad_input" global_exit0
expect_fail exit.global_exit bad_input "^ishmrun: PE 1 \\(pid [0-9]+\\) exited with status 5 \\(it called ishmem_global_exit\\(5\\): the other PEs end with it\\)$" -- \
    ISHMEM_GPU=1 "${RUN[@]}" -n 2 "$B/bad_input" global_exit
expect_fail gpu_required.none host_ops "ISHMEM_GPU=1 but no GPU can be used" -- \
    CUDA_VISIBLE_DEVICES= ISHMEM_GPU=1 "${RUN[@]}" -n 2 "$B/host_ops"
expect_fail mixed_backends host_ops "every PE must use the same backend" -- \
    "${RUN[@]}" -n 2 sh -c 'if [ "$ISHMRUN_RANK" = 1 ]; then export ISHMEM_GPU=0; fi; exec "$0"' "$B/host_ops"

# Collective calls that differ between PEs, on the GPU heap: the neighbour check of the
# synchronized algorithms, and a barrier against an fcollect (a hang without the long-wait check).
expect_fail coll_mismatch.sync bad_input "ERROR: ishmem_(int|long)_sum_reduce: collective call [0-9]+ on team 0 differs between PEs" -- \
    ISHMEM_GPU=1 "${RUN[@]}" -n 2 "$B/bad_input" coll_mismatch_sync
expect_fail coll_mismatch.barrier bad_input "ERROR: ishmem_(barrier_all|int_fcollect): collective call [0-9]+ on team 0 differs between PEs" -- \
    ISHMEM_GPU=1 "${RUN[@]}" -n 2 "$B/bad_input" coll_mismatch_barrier

say "gpu-check: $pass passed, $fail failed"
# The device tool brings back at most 8 files from $OUT: pack the logs into one archive there.
if [ -n "${OUT:-}" ]; then
    tar -C "$OUTDIR/.." -czf "$OUT/gpu-check-logs.tar.gz" gpu-check && rm -rf "$OUTDIR"
fi
[ "$fail" = 0 ]
